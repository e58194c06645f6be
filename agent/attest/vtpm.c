/* The vTPM issuer every TPM-based variant shares (vtpm.h, spec §2): a TPM2_Quote of every
 * allocated PCR bank under the variant's attestation key, with qualifying data
 * tpmNonce = H(instanceInfo || H(user data || nonce)), the PCR values, the firmware event log
 * verbatim, as the JSON that Go's encoding/json makes of vtpm.AttestationDocument (field
 * order, snake_case tags inside, numbers for algorithms, string keys sorted as strings,
 * standard padded base64, TeeAttestation null, InstanceInfo null when the variant has none,
 * as Go writes a nil []byte). It refuses to attest once PCR 15 is no longer zero (spec
 * §5.3). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bearssl.h>

#include "attest.h"
#include "vtpm.h"
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

int vtpm_document(const uint8_t *ak_pub, size_t ak_len, const struct tpm_quote *quotes,
		  size_t n_quotes, const uint8_t *event_log, size_t ev_len,
		  const uint8_t *instance_info, size_t ii_len,
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
	put(&j, ",\"TeeAttestation\":null},\"InstanceInfo\":");
	if (instance_info) /* a nil []byte is null, an empty one "" */
		put_b64(&j, instance_info, ii_len);
	else
		put(&j, "null");
	put(&j, ",\"UserData\":");
	put_b64(&j, user_data, ATLS_USER_DATA_LEN);
	put(&j, "}");
	if (j.err)
		return j.err;
	*ret_len = j.len;
	return 0;
}

void vtpm_extra_data(const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		     size_t nonce_len, uint8_t out[32])
{
	br_sha256_context h;

	br_sha256_init(&h);
	br_sha256_update(&h, user_data, ATLS_USER_DATA_LEN);
	br_sha256_update(&h, nonce, nonce_len);
	br_sha256_out(&h, out);
}

void vtpm_tpm_nonce(const uint8_t *instance_info, size_t ii_len, const uint8_t extra[32],
		    uint8_t out[32])
{
	br_sha256_context h;

	br_sha256_init(&h);
	br_sha256_update(&h, instance_info, ii_len);
	br_sha256_update(&h, extra, 32);
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

static const enum tpm_ak_source ak_source[] = {
    [VTPM_AK_OWNER] = TPM_AK_SRC_OWNER,
    [VTPM_AK_HCL] = TPM_AK_SRC_HCL,
    [VTPM_AK_GCE] = TPM_AK_SRC_GCE,
};

int vtpm_issue(const struct vtpm_env *env, const uint8_t user_data[ATLS_USER_DATA_LEN],
	       const uint8_t *nonce, size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len,
	       char *err, size_t errlen)
{
	const struct vtpm_variant *v = env->variant;
	struct tpm *t = NULL;
	struct tpm_bank banks[TPM_BANKS_MAX];
	struct tpm_quote *quotes = NULL;
	struct vtpm_issue in = {.env = env};
	uint8_t ak[TPM_PUBLIC_MAX], qdata[32], *ev = NULL, *ii = NULL;
	static const uint8_t zero[32];
	char why[200] = "";
	size_t ak_len, n_banks, ev_len, ii_len = 0;
	int r, have_sha256 = 0;

	if (v->ak <= VTPM_AK_NONE || v->ak > VTPM_AK_GCE)
		return errbuf_set(err, errlen, "%s: no TPM attestation key kind", v->name);
	r = tpm_open(&env->tcti, &t, err, errlen);
	if (r < 0)
		return r;
	if ((r = tpm_ak_select(t, ak_source[v->ak], ak, sizeof ak, &ak_len, why, sizeof why)) < 0) {
		errbuf_set(err, errlen, "%s: %s", v->name, why);
		goto out;
	}
	if ((r = tpm_banks(t, banks, TPM_BANKS_MAX, &n_banks)) < 0) {
		errbuf_set(err, errlen, "%s: TPM PCR banks unavailable", v->name);
		goto out;
	}
	vtpm_extra_data(user_data, nonce, nonce_len, in.extra);
	if (v->instance_info) {
		ii = malloc(VTPM_INSTANCE_INFO_MAX);
		if (!ii) {
			r = -ENOMEM;
			goto out;
		}
		in.tpm = t;
		in.ak_pub = ak;
		in.ak_len = ak_len;
		r = v->instance_info(&in, ii, VTPM_INSTANCE_INFO_MAX, &ii_len, why, sizeof why);
		if (r < 0) {
			errbuf_set(err, errlen, "%s: instance info: %s", v->name, why);
			goto out;
		}
	}
	vtpm_tpm_nonce(ii, ii_len, in.extra, qdata);
	quotes = calloc(n_banks ? n_banks : 1, sizeof *quotes);
	if (!quotes) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_banks; i++) {
		r = tpm_quote(t, banks[i].alg, banks[i].pcrs, qdata, sizeof qdata, &quotes[i]);
		if (r < 0) {
			errbuf_set(err, errlen, "%s: quote of bank 0x%04x failed", v->name,
				   banks[i].alg);
			goto out;
		}
		if (banks[i].alg != TPM_ALG_SHA256)
			continue;
		have_sha256 = 1;
		/* The node lock (§5.3): after marking this boot must never attest again. */
		if (!(banks[i].pcrs & (1u << 15)) || memcmp(quotes[i].values[15], zero, 32)) {
			r = errbuf_set(err, errlen,
				       "%s: PCR 15 is not zero: this node is already "
				       "marked and must not attest again before a reboot",
				       v->name);
			goto out;
		}
	}
	if (!have_sha256) {
		r = errbuf_set(err, errlen, "%s: the TPM has no SHA-256 PCR bank", v->name);
		goto out;
	}
	r = read_event_log(env->event_log, &ev, &ev_len);
	if (r < 0) {
		errbuf_set(err, errlen, "%s: cannot read the event log", v->name);
		goto out;
	}
	r = vtpm_document(ak, ak_len, quotes, n_banks, ev, ev_len, ii, ii_len, user_data, doc, cap,
			  ret_len);
	if (r < 0)
		errbuf_set(err, errlen, "%s: document larger than %zu bytes", v->name, cap);
out:
	free(ii);
	free(ev);
	free(quotes);
	tpm_close(t);
	return r;
}

static int issue(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		 size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		 size_t errlen)
{
	return vtpm_issue(ctx, user_data, nonce, nonce_len, doc, cap, ret_len, err, errlen);
}

void vtpm_issuer(struct atls_issuer *is, const struct vtpm_env *env)
{
	memset(is, 0, sizeof *is);
	memcpy(is->oid, env->variant->oid, env->variant->oid_len);
	is->oid_len = env->variant->oid_len;
	is->issue = issue;
	is->ctx = (void *)env;
}

void vtpm_env_default(struct vtpm_env *env, const struct vtpm_variant *v)
{
	memset(env, 0, sizeof *env);
	env->variant = v;
	tcti_spec_parse(TCTI_DEFAULT, &env->tcti, NULL, 0);
	env->event_log = QEMU_VTPM_EVENT_LOG;
	env->imds = "http://169.254.169.254";
	env->sev_guest = "/dev/sev-guest";
	env->tsm_report = "/sys/kernel/config/tsm/report";
}
