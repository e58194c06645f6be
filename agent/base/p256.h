/* ECDSA P-256 keys on BearSSL: a fresh key with its SubjectPublicKeyInfo, ASN.1 signatures,
 * and the SEC1 "EC PRIVATE KEY" encoding kubelet reads. Used by the aTLS certificates (one
 * key per connection) and the kubelet CSR (one key per join attempt). */
#ifndef CONSTEL_BASE_P256_H
#define CONSTEL_BASE_P256_H

#include <stddef.h>
#include <stdint.h>

#include <bearssl.h>

#define P256_SPKI_LEN 91 /* SubjectPublicKeyInfo DER of an uncompressed point */

struct p256_key {
	unsigned char sk[BR_EC_KBUF_PRIV_MAX_SIZE];
	br_ec_private_key priv;
	uint8_t spki[P256_SPKI_LEN];
};

int p256_generate(struct p256_key *k);
/* Signs the hash value hv (of hash h) into sig as an ASN.1 ECDSA signature; returns its
 * length, 0 on failure. */
size_t p256_sign(const struct p256_key *k, const br_hash_class *h, const uint8_t *hv, uint8_t *sig,
		 size_t cap);
/* SEC1 ECPrivateKey DER (RFC 5915, with the curve OID and the public key). */
int p256_sec1_der(const struct p256_key *k, uint8_t *out, size_t cap, size_t *ret_len);
void p256_wipe(struct p256_key *k);

#endif
