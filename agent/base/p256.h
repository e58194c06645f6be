/* ECDSA P-256 keys: a fresh key with its SubjectPublicKeyInfo, ASN.1 signatures and their
 * check, and the SEC1 "EC PRIVATE KEY" encoding kubelet reads. Used by the aTLS certificates
 * and handshake signatures (one key per connection) and the kubelet CSR (one key per join
 * attempt). The curve arithmetic is nettle's hogweed (3-4x BearSSL 0.6's ec_p256_m31, which
 * has no 64-bit P-256); BearSSL does the encodings and hashes around it.
 *
 * Timing: nettle writes its ECC code without branches or memory indices that depend on
 * secret values, but documents that this holds only as far as the GMP functions under it do,
 * and our hogweed is built on its bundled mini-gmp, which makes no such promise. So the claim
 * here is scoped to what is checked: every mini-gmp mpn routine the P-256 key generation and
 * signature run on secret values (mpn_add_n, mpn_sub_n, mpn_mul_1, mpn_addmul_1,
 * mpn_submul_1, mpn_mul, mpn_mul_n, mpn_sqr, mpn_rshift, mpn_copyi, mpn_copyd, mpn_zero, and
 * gmp-glue's mpn_cnd_add_n, mpn_cnd_sub_n, mpn_cnd_swap) has no conditional jump but its
 * loop, its size checks and asserts (tests/deps/test_deps_hogweed.sh counts them in the built
 * library). mini-gmp's data-dependent routines (mpn_cmp, mpn_zero_p) run only in the
 * signature check, on public values. The presigned part (p256.c) is our own constant-time
 * Montgomery code. Cache timing of the CPU itself is out of scope. */
#ifndef CONSTEL_BASE_P256_H
#define CONSTEL_BASE_P256_H

#include <stddef.h>
#include <stdint.h>

#include <bearssl.h>

#define P256_SPKI_LEN  91 /* SubjectPublicKeyInfo DER of an uncompressed point */
#define P256_POINT_LEN 65 /* 04 || X || Y */

/* A signature's message-independent part, made ahead (p256_presign) and used once: r, the
 * nonce's inverse and kinv * x * r mod n, as little-endian 64-bit limbs. */
struct p256_presig {
	int ready;
	uint64_t r[4], kinv[4], t[4];
};

struct p256_key {
	unsigned char sk[BR_EC_KBUF_PRIV_MAX_SIZE];
	br_ec_private_key priv;	     /* curve, and x = sk (32 bytes, big-endian) */
	uint8_t spki[P256_SPKI_LEN]; /* ends with the public point */
	struct p256_presig pre[2];
};

int p256_generate(struct p256_key *k);
/* The key of the private scalar x (big-endian, 0 < x < n); -EINVAL when x is out of range. */
int p256_set_private(struct p256_key *k, const uint8_t x[32]);
/* Signs the hash value hv (of hash h) into sig as an ASN.1 ECDSA signature; returns its
 * length, 0 on failure. The nonce is hedged (RFC 6979 §3.6 style): drawn from an HMAC-DRBG
 * seeded with the key, the hash value and fresh random bytes. */
size_t p256_sign(const struct p256_key *k, const br_hash_class *h, const uint8_t *hv, uint8_t *sig,
		 size_t cap);
/* Makes the nonce of a later signature and the part of the signature that does not depend
 * on the message (its scalar multiplication, ~50 us), for a caller that has time while it
 * waits; the key keeps up to two. 0 when one was made or all are there, else -errno. The
 * nonce: from an HMAC-DRBG seeded with the key, fresh random bytes and a counter. */
int p256_presign(struct p256_key *k);
/* p256_sign with a presigned nonce when the key holds one (which is then wiped: each is used
 * once), else p256_sign. */
size_t p256_sign_presigned(struct p256_key *k, const br_hash_class *h, const uint8_t *hv,
			   uint8_t *sig, size_t cap);
/* Checks the ASN.1 ECDSA signature sig over the hash value hv with the public key pub (an
 * uncompressed point); 1 when it holds, 0 when not: a bad signature, a malformed encoding,
 * a point that is not on the curve. */
int p256_verify_asn1(const uint8_t *pub, size_t pub_len, const void *hv, size_t hv_len,
		     const void *sig, size_t sig_len);
/* SEC1 ECPrivateKey DER (RFC 5915, with the curve OID and the public key). */
int p256_sec1_der(const struct p256_key *k, uint8_t *out, size_t cap, size_t *ret_len);
void p256_wipe(struct p256_key *k);

/* Runs fn(arg), a call into hogweed (the ed25519 of kube/ssh.c), with hogweed's scratch on
 * the wiped heap described in p256.c: 0, or -ENOMEM (logged) when the scratch could not be
 * had, in which case fn was abandoned and what it wrote must be discarded. */
int hogweed_call(void (*fn)(void *), void *arg);

#endif
