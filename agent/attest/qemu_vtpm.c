/* qemu-vtpm (spec §2, OID 1.3.9900.5.1): the vTPM core (vtpm.c) with the owner-hierarchy AK
 * and no InstanceInfo. The qemu_vtpm_* functions of attest.h are thin wrappers of the core. */
#include <string.h>

#include "attest.h"
#include "vtpm.h"

const struct vtpm_variant vtpm_qemu_vtpm = {
    .name = "qemu-vtpm",
    .oid = {0x2b, 0xcd, 0x2c, 0x05, 0x01}, /* 1.3.9900.5.1 */
    .oid_len = 5,
    .ak = VTPM_AK_OWNER,
};

int qemu_vtpm_document(const uint8_t *ak_pub, size_t ak_len, const struct tpm_quote *quotes,
		       size_t n_quotes, const uint8_t *event_log, size_t ev_len,
		       const uint8_t user_data[ATLS_USER_DATA_LEN], uint8_t *doc, size_t cap,
		       size_t *ret_len)
{
	return vtpm_document(ak_pub, ak_len, quotes, n_quotes, event_log, ev_len, NULL, 0,
			     user_data, doc, cap, ret_len);
}

void qemu_vtpm_tpm_nonce(const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
			 size_t nonce_len, uint8_t out[32])
{
	uint8_t extra[32];

	vtpm_extra_data(user_data, nonce, nonce_len, extra);
	vtpm_tpm_nonce(NULL, 0, extra, out);
}

static int issue(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		 size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		 size_t errlen)
{
	const struct qemu_vtpm *cfg = ctx;
	struct vtpm_env env;

	vtpm_env_default(&env, &vtpm_qemu_vtpm);
	env.tcti = cfg->tcti;
	env.event_log = cfg->event_log;
	return vtpm_issue(&env, user_data, nonce, nonce_len, doc, cap, ret_len, err, errlen);
}

void qemu_vtpm_issuer(struct atls_issuer *is, struct qemu_vtpm *cfg)
{
	memset(is, 0, sizeof *is);
	memcpy(is->oid, vtpm_qemu_vtpm.oid, vtpm_qemu_vtpm.oid_len);
	is->oid_len = vtpm_qemu_vtpm.oid_len;
	is->issue = issue;
	is->ctx = cfg;
}
