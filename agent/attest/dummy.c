/* The dummy attestation variant (1.3.9900.1.1): a JSON document that binds the TLS key's
 * hash to the peer's nonce with no hardware behind it. Tests use it in place of qemu-vtpm,
 * and the Go interop peer speaks the same format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attest.h"
#include "base/base.h"

#define DUMMY_OID                            \
	{                                    \
		0x2b, 0xcd, 0x2c, 0x01, 0x01 \
	}

static int dummy_issue(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		       size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		       size_t errlen)
{
	char ud[BASE64_ENCODED_LEN(ATLS_USER_DATA_LEN) + 1];
	char nb[BASE64_ENCODED_LEN(DUMMY_FIELD_MAX) + 1];
	int n;

	(void)ctx;
	if (nonce_len > DUMMY_FIELD_MAX)
		return errbuf_set(err, errlen, "dummy: nonce of %zu bytes is too long", nonce_len);
	base64_encode(BASE64_STD, user_data, ATLS_USER_DATA_LEN, ud, sizeof ud);
	base64_encode(BASE64_STD, nonce, nonce_len, nb, sizeof nb);
	n = snprintf((char *)doc, cap, "{\"UserData\":\"%s\",\"Nonce\":\"%s\"}", ud, nb);
	if (n < 0 || (size_t)n >= cap) {
		errbuf_set(err, errlen, "dummy: document does not fit in %zu bytes", cap);
		return -ENOBUFS;
	}
	*ret_len = (size_t)n;
	return 0;
}

/* Reads "KEY":"<base64>" at *p, advancing past it. */
static int read_field(const char **p, const char *end, const char *key, uint8_t *out,
		      size_t *out_len)
{
	size_t klen = strlen(key);
	const char *q = *p, *close;

	if ((size_t)(end - q) < klen + 5 || q[0] != '"' || memcmp(q + 1, key, klen) ||
	    memcmp(q + 1 + klen, "\":\"", 3))
		return -EINVAL;
	q += klen + 4;
	close = memchr(q, '"', (size_t)(end - q));
	if (!close)
		return -EINVAL;
	if (base64_decode(BASE64_STD, q, (size_t)(close - q), out, DUMMY_FIELD_MAX, out_len) < 0)
		return -EINVAL;
	*p = close + 1;
	return 0;
}

int attest_dummy_parse(const uint8_t *doc, size_t len, uint8_t *user_data, size_t *user_data_len,
		       uint8_t *nonce, size_t *nonce_len, char *err, size_t errlen)
{
	const char *p = (const char *)doc, *end = p + len;
	uint8_t ud[DUMMY_FIELD_MAX], nb[DUMMY_FIELD_MAX];
	size_t udl, nbl;

	if (len > DUMMY_DOC_MAX)
		return errbuf_set(err, errlen, "dummy: document of %zu bytes is too long", len);
	if (len < 2 || p[0] != '{' || end[-1] != '}')
		return errbuf_set(err, errlen, "dummy: document is not a JSON object");
	p++;
	if (read_field(&p, end, "UserData", ud, &udl) < 0)
		return errbuf_set(err, errlen, "dummy: bad or missing UserData");
	if (p >= end || *p++ != ',')
		return errbuf_set(err, errlen, "dummy: expected ',' after UserData");
	if (read_field(&p, end, "Nonce", nb, &nbl) < 0)
		return errbuf_set(err, errlen, "dummy: bad or missing Nonce");
	if (p != end - 1)
		return errbuf_set(err, errlen, "dummy: trailing data after Nonce");
	memcpy(user_data, ud, udl);
	*user_data_len = udl;
	memcpy(nonce, nb, nbl);
	*nonce_len = nbl;
	return 0;
}

static int dummy_validate(void *ctx, const uint8_t *doc, size_t len, const uint8_t *nonce,
			  size_t nonce_len, uint8_t ret_user_data[ATLS_USER_DATA_LEN], char *err,
			  size_t errlen)
{
	uint8_t ud[DUMMY_FIELD_MAX], nb[DUMMY_FIELD_MAX];
	size_t udl, nbl;
	int r;

	(void)ctx;
	r = attest_dummy_parse(doc, len, ud, &udl, nb, &nbl, err, errlen);
	if (r < 0)
		return r;
	if (nbl != nonce_len || memcmp(nb, nonce, nonce_len))
		return errbuf_set(err, errlen, "dummy: document is for another nonce");
	if (udl != ATLS_USER_DATA_LEN)
		return errbuf_set(err, errlen, "dummy: user data is %zu bytes, want %d", udl,
				  ATLS_USER_DATA_LEN);
	memcpy(ret_user_data, ud, ATLS_USER_DATA_LEN);
	return 0;
}

const struct atls_issuer attest_dummy_issuer = {
    .oid = DUMMY_OID,
    .oid_len = 5,
    .issue = dummy_issue,
};

const struct atls_validator attest_dummy_validator = {
    .oid = DUMMY_OID,
    .oid_len = 5,
    .validate = dummy_validate,
};
