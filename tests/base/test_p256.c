/* P-256 on hogweed (base/p256.c) against RFC 6979's P-256 key and signature and against
 * BearSSL's ec_p256_m31 (what it replaced): the same public key from the same scalar,
 * signatures of either accepted by the other, and the same refusals (a wrong signature, a
 * point off the curve, a scalar out of range, a malformed encoding). */
#include <errno.h>
#include <string.h>

#include <bearssl.h>
#include <gmp.h>

#include "base/base.h"
#include "base/p256.h"
#include "harness.h"

/* RFC 6979 A.2.5: the P-256 key, and the SHA-256 signature of "sample" */
#define RFC_X	"c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"
#define RFC_UX	"60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
#define RFC_UY	"7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
#define RFC_H	"af2bdbe1aa9b6ec1e2ade1d694f41fc71a831d0268e9891562113d8a62add1bf"
#define RFC_R	"efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
#define RFC_S	"f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"
#define G_X	"6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
#define G_Y	"4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"
#define NEG_G_Y "b01cbd1c01e58065711814b583f061e9d431cca994cea1313449bf97c840ae0a"
#define ORDER	"ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"

static const uint8_t *point_of(const struct p256_key *k)
{
	return k->spki + P256_SPKI_LEN - P256_POINT_LEN;
}

static br_ec_public_key bearssl_pub(const struct p256_key *k)
{
	return (br_ec_public_key){BR_EC_secp256r1, (unsigned char *)point_of(k), P256_POINT_LEN};
}

TEST(p256_rfc6979_key_and_signature)
{
	struct p256_key k;
	uint8_t x[32], want[65] = {0x04}, hv[32], sig[80];
	size_t n;
	br_ec_public_key pk;

	harness_unhex(RFC_X, x, sizeof x);
	harness_unhex(RFC_UX, want + 1, 32);
	harness_unhex(RFC_UY, want + 33, 32);
	harness_unhex(RFC_H, hv, sizeof hv);
	CHECK(p256_set_private(&k, x) == 0);
	CHECK(k.priv.curve == BR_EC_secp256r1 && k.priv.xlen == 32 && k.priv.x == k.sk);
	CHECK_BYTES(k.sk, x, 32);
	CHECK_BYTES(point_of(&k), want, 65);
	/* the RFC's signature holds for both; one bit off the hash, for neither */
	harness_unhex(RFC_R, sig, 32);
	harness_unhex(RFC_S, sig + 32, 32);
	n = br_ecdsa_raw_to_asn1(sig, 64);
	CHECK(n > 0);
	pk = bearssl_pub(&k);
	CHECK(p256_verify_asn1(want, 65, hv, 32, sig, n) == 1);
	CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, 32, &pk, sig, n) == 1);
	hv[31] ^= 1;
	CHECK(p256_verify_asn1(want, 65, hv, 32, sig, n) == 0);
	CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, 32, &pk, sig, n) == 0);
	p256_wipe(&k);
}

/* 1 gives the generator, n - 1 its negation; 0 and n are refused */
TEST(p256_private_scalar_range)
{
	struct p256_key k;
	uint8_t x[32] = {0}, want[65] = {0x04};

	harness_unhex(G_X, want + 1, 32);
	harness_unhex(G_Y, want + 33, 32);
	x[31] = 1;
	CHECK(p256_set_private(&k, x) == 0);
	CHECK_BYTES(point_of(&k), want, 65);
	harness_unhex(ORDER, x, sizeof x);
	x[31] -= 1;
	harness_unhex(NEG_G_Y, want + 33, 32);
	CHECK(p256_set_private(&k, x) == 0);
	CHECK_BYTES(point_of(&k), want, 65);
	x[31] += 1;
	CHECK(p256_set_private(&k, x) == -EINVAL);
	memset(x, 0xff, sizeof x);
	CHECK(p256_set_private(&k, x) == -EINVAL);
	memset(x, 0, sizeof x);
	CHECK(p256_set_private(&k, x) == -EINVAL);
	p256_wipe(&k);
}

/* Random keys: hogweed and ec_p256_m31 agree on the public key, and each accepts the other's
 * signatures over SHA-256 and (truncated) SHA-384 hash values. */
TEST(p256_agrees_with_bearssl_m31)
{
	static const br_hash_class *const hashes[] = {&br_sha256_vtable, &br_sha384_vtable};

	for (int i = 0; i < 40; i++) {
		const br_hash_class *h = hashes[i % 2];
		size_t hv_len = (h->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK, n;
		struct p256_key k;
		unsigned char pub[BR_EC_KBUF_PUB_MAX_SIZE], hv[48], sig[80];
		br_ec_public_key bpk, own;

		CHECK(p256_generate(&k) == 0);
		CHECK(br_ec_compute_pub(&br_ec_p256_m31, &bpk, pub, &k.priv) == 65);
		CHECK_BYTES(point_of(&k), pub, 65);
		own = bearssl_pub(&k);
		CHECK(random_bytes(hv, sizeof hv) == 0);
		n = p256_sign(&k, h, hv, sig, sizeof sig);
		CHECK(n >= 8 && n <= 72);
		CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, hv_len, &own, sig, n) == 1);
		CHECK(p256_verify_asn1(pub, 65, hv, hv_len, sig, n) == 1);
		n = br_ecdsa_i31_sign_asn1(&br_ec_p256_m31, h, hv, &k.priv, sig);
		CHECK(n > 0);
		CHECK(p256_verify_asn1(pub, 65, hv, hv_len, sig, n) == 1);
		p256_wipe(&k);
	}
}

/* The nonce is hedged with fresh randomness: the same hash signed twice gives two different
 * signatures (a repeated nonce would give the same r and reveal the key). */
TEST(p256_sign_nonces_differ)
{
	struct p256_key k;
	uint8_t hv[32] = {7}, a[80], b[80];
	size_t na, nb;

	CHECK(p256_generate(&k) == 0);
	na = p256_sign(&k, &br_sha256_vtable, hv, a, sizeof a);
	nb = p256_sign(&k, &br_sha256_vtable, hv, b, sizeof b);
	CHECK(na > 0 && nb > 0);
	CHECK(na != nb || memcmp(a, b, na) != 0);
	CHECK(p256_verify_asn1(point_of(&k), 65, hv, 32, a, na) == 1);
	CHECK(p256_verify_asn1(point_of(&k), 65, hv, 32, b, nb) == 1);
	CHECK(p256_sign(&k, &br_sha256_vtable, hv, a, 8) == 0); /* no room */
	p256_wipe(&k);
}

TEST(p256_verify_refuses_what_bearssl_refuses)
{
	struct p256_key k, other;
	uint8_t hv[32] = {1, 2, 3}, sig[80], bad[80], pt[65], raw[64] = {0};
	size_t n, nraw;
	br_ec_public_key pk;

	CHECK(p256_generate(&k) == 0);
	CHECK(p256_generate(&other) == 0);
	n = p256_sign(&k, &br_sha256_vtable, hv, sig, sizeof sig);
	CHECK(n > 0);
	memcpy(pt, point_of(&k), 65);
	pk = (br_ec_public_key){BR_EC_secp256r1, pt, 65};
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n) == 1);
	/* another key's signature */
	CHECK(p256_verify_asn1(point_of(&other), 65, hv, 32, sig, n) == 0);
	/* every byte of the signature changed in turn */
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, sig, n);
		bad[i] ^= 0x10;
		CHECK(p256_verify_asn1(pt, 65, hv, 32, bad, n) == 0);
		CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, 32, &pk, bad, n) == 0);
	}
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n - 1) == 0);
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, 0) == 0);
	CHECK(p256_verify_asn1(pt, 65, hv, 0, sig, n) == 0);
	/* r = 0, s = 0 */
	nraw = br_ecdsa_raw_to_asn1(raw, sizeof raw);
	CHECK(nraw > 0 && p256_verify_asn1(pt, 65, hv, 32, raw, nraw) == 0);
	/* a point off the curve (y + 1), a compressed point, a short one */
	pt[64] ^= 1;
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n) == 0);
	CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, 32, &pk, sig, n) == 0);
	pt[64] ^= 1;
	pt[0] = 0x02;
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n) == 0);
	pt[0] = 0x04;
	CHECK(p256_verify_asn1(pt, 64, hv, 32, sig, n) == 0);
	/* (0, 0) */
	memset(pt + 1, 0, 64);
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n) == 0);
	/* x >= p: all ones */
	memset(pt + 1, 0xff, 32);
	CHECK(p256_verify_asn1(pt, 65, hv, 32, sig, n) == 0);
	CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, 32, &pk, sig, n) == 0);
	p256_wipe(&k);
	p256_wipe(&other);
}

/* Presigned nonces (what the aTLS client makes while it waits): each signature verifies with
 * BearSSL, over hash values below and above the group order and of both lengths; the two
 * nonces differ, each is used once, and then p256_sign_presigned makes fresh ones. */
TEST(p256_presigned_signatures_verify_and_are_used_once)
{
	static const br_hash_class *const hashes[] = {&br_sha256_vtable, &br_sha384_vtable};

	for (int i = 0; i < 60; i++) {
		const br_hash_class *h = hashes[i % 2];
		size_t hv_len = (h->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK, n[3];
		struct p256_key k;
		unsigned char hv[48], sig[3][80];
		br_ec_public_key pk;

		CHECK(p256_generate(&k) == 0);
		pk = bearssl_pub(&k);
		CHECK(!k.pre[0].ready && !k.pre[1].ready);
		CHECK(p256_presign(&k) == 0 && p256_presign(&k) == 0 && p256_presign(&k) == 0);
		CHECK(k.pre[0].ready && k.pre[1].ready);
		CHECK(memcmp(k.pre[0].r, k.pre[1].r, sizeof k.pre[0].r) != 0);
		if (i % 3 == 0)
			memset(hv, 0xff, sizeof hv); /* >= n: reduced */
		else if (i % 3 == 1) /* small (0 itself: BearSSL's m31 check refuses it) */
			memset(hv, 0, sizeof hv), hv[31] = 1;
		else
			CHECK(random_bytes(hv, sizeof hv) == 0);
		for (int j = 0; j < 3; j++) {
			n[j] = p256_sign_presigned(&k, h, hv, sig[j], sizeof sig[j]);
			CHECK(n[j] >= 8 && n[j] <= 72);
			CHECK(br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, hv_len, &pk, sig[j],
						     n[j]) == 1);
			CHECK(p256_verify_asn1(point_of(&k), 65, hv, hv_len, sig[j], n[j]) == 1);
		}
		CHECK(!k.pre[0].ready && !k.pre[1].ready);
		CHECK(n[0] != n[1] || memcmp(sig[0], sig[1], n[0]) != 0);
		CHECK(n[1] != n[2] || memcmp(sig[1], sig[2], n[1]) != 0);
		/* a new key starts without any */
		CHECK(p256_presign(&k) == 0);
		CHECK(p256_set_private(&k, k.sk) == 0);
		CHECK(!k.pre[0].ready);
		p256_wipe(&k);
	}
}

/* The allocation below must fail with NULL, not end the binary in ASan's report. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static void *(*real_alloc)(size_t);
static void *failing_alloc(size_t n)
{
	(void)n;
	return real_alloc((size_t)1 << 62); /* more than the static block and any malloc */
}

/* hogweed's scratch (the GMP allocator) could not be had: p256_generate returns -ENOMEM, as
 * a server handshake then fails, instead of mini-gmp's abort() in PID 1; the next key works. */
TEST(p256_generate_returns_enomem_when_hogweeds_scratch_cannot_be_allocated)
{
	void *(*a)(size_t), *(*r)(void *, size_t, size_t);
	void (*f)(void *, size_t);
	struct p256_key k;
	int rc;

	CHECK(p256_generate(&k) == 0); /* p256.c's allocator installed */
	mp_get_memory_functions(&a, &r, &f);
	real_alloc = a;
	mp_set_memory_functions(failing_alloc, r, f);
	rc = p256_generate(&k);
	mp_set_memory_functions(a, r, f);
	CHECK(rc == -ENOMEM);
	CHECK(p256_generate(&k) == 0);
	p256_wipe(&k);
}
