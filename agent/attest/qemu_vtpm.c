/* The qemu-vtpm issuer (spec §2, OID 1.3.9900.5.1): a TPM2_Quote of every allocated PCR bank
 * under the RSA attestation key, with qualifying data H(H(user data || nonce)), the PCR
 * values, the firmware event log verbatim, as the JSON that Go's encoding/json makes of
 * vtpm.AttestationDocument (field order, snake_case tags inside, numbers for algorithms,
 * string keys sorted as strings, standard padded base64, InstanceInfo and TeeAttestation
 * null). It refuses to attest once PCR 15 is no longer zero (spec §5.3). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bearssl.h>

#include "attest.h"
#include "base/base.h"
#include "tpm/tpm.h"

#define EVENT_LOG_MAX (128 * 1024)

struct jout {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put(struct jout *j, const char *s)
{
	size_t n = strlen(s);

	if (j->err || n > j->cap - j->len) {
		j->err = -ENOBUFS;
		return;
	}
	memcpy(j->p + j->len, s, n);
	j->len += n;
}

/* A JSON string of base64 (standard, padded): Go's encoding of a []byte. */
static void put_b64(struct jout *j, const uint8_t *b, size_t n)
{
	size_t need = base64_encoded_len(n) + 3;

	if (j->err || need > j->cap - j->len) {
		j->err = -ENOBUFS;
		return;
	}
	j->p[j->len++] = '"';
	base64_encode(BASE64_STD, b, n, (char *)j->p + j->len, j->cap - j->len);
	j->len += base64_encoded_len(n);
	j->p[j->len++] = '"';
}

/* Go's encoding/json sorts map keys as strings: "0" "1" "10" ... "19" "2" "20" ... */
static void pcr_key_order(uint32_t mask, int order[TPM_PCRS], int *n)
{
	char keys[TPM_PCRS][4];

	*n = 0;
	for (int i = 0; i < TPM_PCRS; i++)
		if (mask & (1u << i)) {
			snprintf(keys[*n], sizeof keys[0], "%d", i);
			order[(*n)++] = i;
		}
	for (int a = 1; a < *n; a++)
		for (int b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
			char k[4];
			int o = order[b];

			memcpy(k, keys[b], 4);
			memcpy(keys[b], keys[b - 1], 4);
			memcpy(keys[b - 1], k, 4);
			order[b] = order[b - 1];
			order[b - 1] = o;
		}
}

static void put_quote(struct jout *j, const struct tpm_quote *q)
{
	int order[TPM_PCRS], n;
	char buf[32];

	put(j, "{\"quote\":");
	put_b64(j, q->attest, q->attest_len);
	put(j, ",\"raw_sig\":");
	put_b64(j, q->sig, q->sig_len);
	snprintf(buf, sizeof buf, ",\"pcrs\":{\"hash\":%u,\"pcrs\":{", q->alg);
	put(j, buf);
	pcr_key_order(q->pcrs, order, &n);
	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, "%s\"%d\":", i ? "," : "", order[i]);
		put(j, buf);
		put_b64(j, q->values[order[i]], q->digest_len);
	}
	put(j, "}}}");
}

int qemu_vtpm_document(const uint8_t *ak_pub, size_t ak_len, const struct tpm_quote *quotes,
		       size_t n_quotes, const uint8_t *event_log, size_t ev_len,
		       const uint8_t user_data[ATLS_USER_DATA_LEN], uint8_t *doc, size_t cap,
		       size_t *ret_len)
{
	struct jout j = {.p = doc, .cap = cap};

	put(&j, "{\"Attestation\":{\"ak_pub\":");
	put_b64(&j, ak_pub, ak_len);
	put(&j, ",\"quotes\":[");
	for (size_t i = 0; i < n_quotes; i++) {
		if (i)
			put(&j, ",");
		put_quote(&j, &quotes[i]);
	}
	put(&j, "]");
	if (ev_len) { /* omitempty */
		put(&j, ",\"event_log\":");
		put_b64(&j, event_log, ev_len);
	}
	put(&j, ",\"TeeAttestation\":null},\"InstanceInfo\":null,\"UserData\":");
	put_b64(&j, user_data, ATLS_USER_DATA_LEN);
	put(&j, "}");
	if (j.err)
		return j.err;
	*ret_len = j.len;
	return 0;
}

void qemu_vtpm_tpm_nonce(const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
			 size_t nonce_len, uint8_t out[32])
{
	br_sha256_context h;
	uint8_t extra[32];

	br_sha256_init(&h);
	br_sha256_update(&h, user_data, ATLS_USER_DATA_LEN);
	br_sha256_update(&h, nonce, nonce_len);
	br_sha256_out(&h, extra);
	br_sha256_init(&h); /* H(instanceInfo || extraData), instanceInfo empty on QEMU */
	br_sha256_update(&h, extra, sizeof extra);
	br_sha256_out(&h, out);
}

/* The event log, or nothing when the file is missing (no firmware log, e.g. on swtpm). */
static int read_event_log(const char *path, uint8_t **ret, size_t *len)
{
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	uint8_t *b;
	size_t n = 0;

	*ret = NULL;
	*len = 0;
	if (fd < 0)
		return path && errno != ENOENT ? log_err(-errno, "attest: %s", path) : 0;
	b = malloc(EVENT_LOG_MAX);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, b + n, EVENT_LOG_MAX - n);

		if (r < 0) {
			r = -errno;
			close(fd);
			free(b);
			return log_err((int)r, "attest: %s", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == EVENT_LOG_MAX) {
			close(fd);
			free(b);
			return log_err(-EFBIG, "attest: %s: larger than %d KiB", path,
				       EVENT_LOG_MAX / 1024);
		}
	}
	close(fd);
	*ret = b;
	*len = n;
	return 0;
}

static int issue(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		 size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		 size_t errlen)
{
	const struct qemu_vtpm *cfg = ctx;
	struct tpm *t = NULL;
	struct tpm_bank banks[TPM_BANKS_MAX];
	struct tpm_quote *quotes = NULL;
	uint8_t ak[TPM_PUBLIC_MAX], qdata[32], *ev = NULL;
	static const uint8_t zero[32];
	size_t ak_len, n_banks, ev_len;
	int r, have_sha256 = 0;

	r = tpm_open(&cfg->tcti, &t, err, errlen);
	if (r < 0)
		return r;
	qemu_vtpm_tpm_nonce(user_data, nonce, nonce_len, qdata);
	if ((r = tpm_ak(t, ak, sizeof ak, &ak_len)) < 0 ||
	    (r = tpm_banks(t, banks, TPM_BANKS_MAX, &n_banks)) < 0) {
		errbuf_set(err, errlen, "qemu-vtpm: TPM attestation key or PCR banks unavailable");
		goto out;
	}
	quotes = calloc(n_banks ? n_banks : 1, sizeof *quotes);
	if (!quotes) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_banks; i++) {
		r = tpm_quote(t, banks[i].alg, banks[i].pcrs, qdata, sizeof qdata, &quotes[i]);
		if (r < 0) {
			errbuf_set(err, errlen, "qemu-vtpm: quote of bank 0x%04x failed",
				   banks[i].alg);
			goto out;
		}
		if (banks[i].alg != TPM_ALG_SHA256)
			continue;
		have_sha256 = 1;
		/* The node lock (§5.3): after marking this boot must never attest again. */
		if (!(banks[i].pcrs & (1u << 15)) || memcmp(quotes[i].values[15], zero, 32)) {
			r = errbuf_set(err, errlen,
				       "qemu-vtpm: PCR 15 is not zero: this node is already "
				       "marked and must not attest again before a reboot");
			goto out;
		}
	}
	if (!have_sha256) {
		r = errbuf_set(err, errlen, "qemu-vtpm: the TPM has no SHA-256 PCR bank");
		goto out;
	}
	r = read_event_log(cfg->event_log, &ev, &ev_len);
	if (r < 0) {
		errbuf_set(err, errlen, "qemu-vtpm: cannot read the event log");
		goto out;
	}
	r = qemu_vtpm_document(ak, ak_len, quotes, n_banks, ev, ev_len, user_data, doc, cap,
			       ret_len);
	if (r < 0)
		errbuf_set(err, errlen, "qemu-vtpm: document larger than %zu bytes", cap);
out:
	free(ev);
	free(quotes);
	tpm_close(t);
	return r;
}

void qemu_vtpm_issuer(struct atls_issuer *is, struct qemu_vtpm *cfg)
{
	static const uint8_t oid[] = {0x2b, 0xcd, 0x2c, 0x05, 0x01}; /* 1.3.9900.5.1 */

	memset(is, 0, sizeof *is);
	memcpy(is->oid, oid, sizeof oid);
	is->oid_len = sizeof oid;
	is->issue = issue;
	is->ctx = cfg;
}
