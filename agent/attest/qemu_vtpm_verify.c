/* The qemu-vtpm validator: the vTPM core (vtpm_verify.c) with the AK taken on trust as QEMU
 * does and no checks of its own. qemu_vtpm_validate/qemu_vtpm_validator of attest.h are thin
 * wrappers of the core. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attest.h"
#include "base/base.h"
#include "vtpm.h"

extern const struct vtpm_variant vtpm_qemu_vtpm;

const struct vtpm_check vtpm_check_qemu_vtpm = {
    .name = "qemu-vtpm",
    .enforced = "4,8,9,11,12,13,15",
};

int qemu_vtpm_validate(const uint8_t *doc, size_t len, const uint8_t *nonce, size_t nonce_len,
		       const struct measurements *m, uint8_t *user_data, size_t cap,
		       size_t *user_data_len, char *err, size_t errlen)
{
	struct vtpm_policy *p = calloc(1, sizeof *p);
	int r;

	if (!p)
		return -ENOMEM;
	p->variant = &vtpm_qemu_vtpm;
	p->check = &vtpm_check_qemu_vtpm;
	if (m)
		p->m = *m;
	r = vtpm_validate(p, doc, len, nonce, nonce_len, user_data, cap, user_data_len, err,
			  errlen);
	free(p);
	return r;
}

static int validate(void *ctx, const uint8_t *doc, size_t len, const uint8_t *nonce,
		    size_t nonce_len, uint8_t ret_user_data[ATLS_USER_DATA_LEN], char *err,
		    size_t errlen)
{
	uint8_t ud[64];
	size_t n;
	int r = qemu_vtpm_validate(doc, len, nonce, nonce_len, ctx, ud, sizeof ud, &n, err, errlen);

	if (r < 0)
		return r;
	if (n != ATLS_USER_DATA_LEN)
		return errbuf_set(err, errlen, "qemu-vtpm: user data is %zu bytes, want 32", n);
	memcpy(ret_user_data, ud, n);
	return 0;
}

void qemu_vtpm_validator(struct atls_validator *v, const struct measurements *m)
{
	memset(v, 0, sizeof *v);
	memcpy(v->oid, vtpm_qemu_vtpm.oid, vtpm_qemu_vtpm.oid_len);
	v->oid_len = vtpm_qemu_vtpm.oid_len;
	v->validate = validate;
	v->ctx = (void *)m;
}
