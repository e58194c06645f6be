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
/* BearSSL's hash for a TPM_ALG_ID (SHA-1/256/384/512), or NULL. */
const br_hash_class *eventlog_hash(uint16_t alg);

#endif
