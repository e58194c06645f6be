/* P-256 keys (p256.h). */
#include <errno.h>
#include <string.h>

#include "base.h"
#include "der.h"
#include "p256.h"

static const uint8_t spki_p256_prefix[26] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
};

int p256_generate(struct p256_key *k)
{
	br_hmac_drbg_context rng;
	uint8_t seed[48];
	br_ec_public_key pk;
	unsigned char pkbuf[BR_EC_KBUF_PUB_MAX_SIZE];
	int r;

	r = random_bytes(seed, sizeof seed);
	if (r < 0)
		return r;
	br_hmac_drbg_init(&rng, &br_sha256_vtable, seed, sizeof seed);
	secret_wipe(seed, sizeof seed);
	if (!br_ec_keygen(&rng.vtable, br_ec_get_default(), &k->priv, k->sk, BR_EC_secp256r1) ||
	    br_ec_compute_pub(br_ec_get_default(), &pk, pkbuf, &k->priv) != 65) {
		secret_wipe(&rng, sizeof rng);
		return -EIO;
	}
	secret_wipe(&rng, sizeof rng);
	memcpy(k->spki, spki_p256_prefix, sizeof spki_p256_prefix);
	memcpy(k->spki + sizeof spki_p256_prefix, pkbuf, 65);
	return 0;
}

size_t p256_sign(const struct p256_key *k, const br_hash_class *h, const uint8_t *hv, uint8_t *sig,
		 size_t cap)
{
	uint8_t tmp[80];
	size_t n = br_ecdsa_sign_asn1_get_default()(br_ec_get_default(), h, hv, &k->priv, tmp);

	if (n == 0 || n > cap)
		return 0;
	memcpy(sig, tmp, n);
	return n;
}

static const uint8_t oid_p256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};

int p256_sec1_der(const struct p256_key *k, uint8_t *out, size_t cap, size_t *ret_len)
{
	struct der_out d = {.p = out, .cap = cap};
	uint8_t pub[66];
	size_t seq = der_begin(&d), s;

	der_put_tlv(&d, DER_INTEGER, "\x01", 1);
	der_put_tlv(&d, DER_OCTET_STRING, k->priv.x, k->priv.xlen);
	s = der_begin(&d);
	der_put_tlv(&d, DER_OID, oid_p256, sizeof oid_p256);
	der_end(&d, s, 0xa0);
	s = der_begin(&d);
	pub[0] = 0; /* BIT STRING: no unused bits */
	memcpy(pub + 1, k->spki + P256_SPKI_LEN - 65, 65);
	der_put_tlv(&d, DER_BIT_STRING, pub, sizeof pub);
	der_end(&d, s, 0xa1);
	der_end(&d, seq, DER_SEQUENCE);
	if (d.err) {
		secret_wipe(out, cap);
		return d.err;
	}
	*ret_len = d.len;
	return 0;
}

void p256_wipe(struct p256_key *k)
{
	secret_wipe(k, sizeof *k);
}
