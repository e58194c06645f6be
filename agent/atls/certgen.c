/* Making aTLS certificates: a fresh P-256 key, its SPKI and user data (SHA-256 of the SPKI),
 * the self-signed certificate of spec §1.4 with the attestation extension, and the nonce DN
 * of §1.3, written with the base layer's DER writer. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <bearssl.h>

#include "atls.h"
#include "base/base.h"
#include "base/der.h"
#include "conn_internal.h"

static const uint8_t oid_ecdsa_sha256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t oid_cn[] = {0x55, 0x04, 0x03};

/* Name = SEQUENCE { SET { SEQUENCE { OID 2.5.4.3, PrintableString value } } } */
static void put_cn_name(struct der_out *d, const char *value, size_t n)
{
	size_t seq = der_begin(d), set, atv;

	set = der_begin(d);
	atv = der_begin(d);
	der_put_tlv(d, 0x06, oid_cn, sizeof oid_cn);
	der_put_tlv(d, 0x13, value, n);
	der_end(d, atv, 0x30);
	der_end(d, set, 0x31);
	der_end(d, seq, 0x30);
}

static void put_sigalg(struct der_out *d)
{
	size_t s = der_begin(d);

	der_put_tlv(d, 0x06, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256);
	der_end(d, s, 0x30);
}

void atls_key_user_data(const struct p256_key *k, uint8_t out[ATLS_USER_DATA_LEN])
{
	br_sha256_context h;

	br_sha256_init(&h);
	br_sha256_update(&h, k->spki, sizeof k->spki);
	br_sha256_out(&h, out);
}

/* ---- the certificate (§1.4) ---- */

int atls_cert_build(struct p256_key *k, time_t now, const uint8_t *oid, size_t oid_len,
		    const uint8_t *doc, size_t doc_len, uint8_t *out, size_t cap, size_t *ret_len)
{
	struct der_out d = {.p = out, .cap = cap};
	uint8_t serial[16], hv[32], sig[80];
	size_t cert, tbs, s, tbs_len, siglen;
	br_sha256_context h;
	int r;

	r = random_bytes(serial, sizeof serial);
	if (r < 0)
		return r;
	/* Positive and minimal with the top byte in 0x40..0x7f (Go rejects other forms). */
	serial[0] = (uint8_t)(0x40 | (serial[0] & 0x3f));

	cert = der_begin(&d);
	tbs = der_begin(&d);
	s = der_begin(&d);
	der_put_tlv(&d, 0x02, "\x02", 1); /* v3 */
	der_end(&d, s, 0xa0);
	der_put_uint(&d, serial, sizeof serial);
	put_sigalg(&d);
	put_cn_name(&d, "Constellation", 13);
	s = der_begin(&d);
	der_put_time(&d, now - 2 * 3600);
	der_put_time(&d, now + 2 * 3600);
	der_end(&d, s, 0x30);
	put_cn_name(&d, "Constellation", 13);
	der_put_raw(&d, k->spki, sizeof k->spki);
	if (oid) {
		size_t exts = der_begin(&d), seq = der_begin(&d), ext = der_begin(&d);

		der_put_tlv(&d, 0x06, oid, oid_len);
		/* not critical: the BOOLEAN is left out (DER omits the default FALSE) */
		der_put_tlv(&d, 0x04, doc, doc_len);
		der_end(&d, ext, 0x30);
		der_end(&d, seq, 0x30);
		der_end(&d, exts, 0xa3);
	}
	der_end(&d, tbs, 0x30);
	if (d.err)
		return d.err;
	tbs_len = d.len - tbs;
	br_sha256_init(&h);
	br_sha256_update(&h, out + tbs, tbs_len);
	br_sha256_out(&h, hv);
	siglen = p256_sign_presigned(k, &br_sha256_vtable, hv, sig + 1, sizeof sig - 1);
	if (siglen == 0)
		return -EIO;
	put_sigalg(&d);
	sig[0] = 0; /* BIT STRING: no unused bits */
	der_put_tlv(&d, 0x03, sig, siglen + 1);
	der_end(&d, cert, 0x30);
	if (d.err)
		return d.err;
	*ret_len = d.len;
	return 0;
}

/* ---- the nonce DN (§1.3) ---- */

int atls_nonce_dn_build(const uint8_t *nonce, size_t len, uint8_t *out, size_t cap, size_t *ret_len)
{
	char b64[BASE64_ENCODED_LEN(ATLS_NONCE_LEN) + 1];
	struct der_out d = {.p = out, .cap = cap};

	if (len != ATLS_NONCE_LEN)
		return -EINVAL;
	base64_encode(BASE64_STD, nonce, len, b64, sizeof b64);
	put_cn_name(&d, b64, strlen(b64));
	if (d.err)
		return d.err;
	*ret_len = d.len;
	return 0;
}
