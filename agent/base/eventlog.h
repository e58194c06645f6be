/* The TCG PC Client crypto-agile event log: replay of one bank (eventlog.c). */
#ifndef CONSTEL_BASE_EVENTLOG_H
#define CONSTEL_BASE_EVENTLOG_H

#include <stddef.h>
#include <stdint.h>

#include <bearssl.h>

#define EVENTLOG_PCRS	    24
#define EVENTLOG_DIGEST_MAX 64

struct eventlog_pcrs {
	uint16_t alg;
	size_t digest_len;
	uint32_t extended; /* bit i: the log extends PCR i */
	int events;
	uint8_t value[EVENTLOG_PCRS][EVENTLOG_DIGEST_MAX];
};

/* Replays the log for bank alg (a TPM_ALG_ID). -EINVAL with one line in err for a log that
 * does not parse or has no digests for the bank. */
int eventlog_replay(const uint8_t *log, size_t len, uint16_t alg, struct eventlog_pcrs *out,
		    char *err, size_t errlen);
/* eventlog_replay that also calls fn for every event in order with its digest of bank alg
 * (as the log claims it) and its data; fn returning < 0 stops the walk with -EINVAL. */
typedef int (*eventlog_fn)(void *ctx, uint32_t pcr, uint32_t type, const uint8_t *digest,
			   size_t digest_len, const uint8_t *data, size_t data_len);
int eventlog_walk(const uint8_t *log, size_t len, uint16_t alg, struct eventlog_pcrs *out,
		  eventlog_fn fn, void *ctx, char *err, size_t errlen);
/* BearSSL's hash for a TPM_ALG_ID (SHA-1/256/384/512), or NULL. */
const br_hash_class *eventlog_hash(uint16_t alg);

#endif
