/* P-256 keys (p256.h): the scalar multiplications and ECDSA of nettle's hogweed on fixed,
 * wiped buffers; BearSSL's scalar sampling, HMAC-DRBG and signature encodings around them. */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>

#include "base.h"
#include "der.h"
#include "p256.h"

#define LIMB_BITS (8 * sizeof(mp_limb_t))
#define LIMBS	  (256 / LIMB_BITS)
/* hogweed's scratch for P-256 (ecc_ecdsa_sign_itch 44, ecc_ecdsa_verify_itch 244 limbs in
 * nettle 3.8.1); checked against the library at run time. */
#define SIGN_ITCH   64
#define VERIFY_ITCH 256

static const uint8_t spki_p256_prefix[26] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
};

/* ---- hogweed's heap: a static block, wiped when it is given back, never an abort ----
 * ecc_point_mul_g (every key generation: one per server handshake) takes its scratch from the
 * GMP (here mini-gmp) allocator, whose interface cannot fail: mini-gmp's own allocator aborts,
 * which in PID 1 is a kernel panic. Here the scratch comes from a static block (it asks for a
 * few hundred bytes, LIFO: one at a time), so no handshake allocates; only a request the block
 * cannot hold goes to malloc, and if that fails the allocation jumps back to the caller
 * (gmp_oom, set around every hogweed call that allocates), which returns -ENOMEM. Nothing of
 * hogweed's state outlives the abandoned call: ecc_point_mul_g allocates before it computes,
 * and its result is discarded. What held key-dependent values is wiped before it is given
 * back; mini-gmp passes 0 for the old sizes, so the block's size is the allocator's. */

#define GMP_BLOCK 4096
static _Alignas(16) uint8_t gmp_block[GMP_BLOCK];
static size_t gmp_block_used; /* bytes handed out from gmp_block, 0 when free */
static jmp_buf *gmp_oom;

static int in_block(const void *p)
{
	return (const uint8_t *)p >= gmp_block && (const uint8_t *)p < gmp_block + GMP_BLOCK;
}

static void *gmp_wiped_alloc(size_t n)
{
	void *p;

	if (!gmp_block_used && n && n <= GMP_BLOCK) {
		gmp_block_used = n;
		return gmp_block;
	}
	p = malloc(n ? n : 1);
	if (!p) {
		log_msg(LOG_ERROR, "p256: out of memory (%zu bytes)", n);
		if (gmp_oom)
			longjmp(*gmp_oom, 1);
		abort(); /* not reached: every hogweed call that allocates sets gmp_oom */
	}
	return p;
}

static void gmp_wiped_free(void *p, size_t n)
{
	(void)n;
	if (in_block(p)) {
		secret_wipe(gmp_block, gmp_block_used);
		gmp_block_used = 0;
		return;
	}
	if (p)
		secret_wipe(p, malloc_usable_size(p));
	free(p);
}

static void *gmp_wiped_realloc(void *old, size_t old_n, size_t n)
{
	size_t have = !old ? 0 : in_block(old) ? gmp_block_used : malloc_usable_size(old);
	void *p;

	(void)old_n;
	if (in_block(old)) /* the block is in use: the new one comes from malloc */
		p = malloc(n ? n : 1);
	else
		p = gmp_wiped_alloc(n);
	if (!p) {
		log_msg(LOG_ERROR, "p256: out of memory (%zu bytes)", n);
		if (gmp_oom)
			longjmp(*gmp_oom, 1);
		abort(); /* not reached, as above */
	}
	if (old) {
		memcpy(p, old, have < n ? have : n);
		gmp_wiped_free(old, have);
	}
	return p;
}

static const struct ecc_curve *curve(void)
{
	static int ready;

	if (!ready) {
		mp_set_memory_functions(gmp_wiped_alloc, gmp_wiped_realloc, gmp_wiped_free);
		ready = 1;
	}
	return nettle_get_secp_256r1();
}

int hogweed_call(void (*fn)(void *), void *arg)
{
	jmp_buf oom;

	(void)curve(); /* installs the allocator */
	if (setjmp(oom)) {
		gmp_oom = NULL;
		secret_wipe(gmp_block, sizeof gmp_block);
		gmp_block_used = 0;
		return -ENOMEM;
	}
	gmp_oom = &oom;
	fn(arg);
	gmp_oom = NULL;
	return 0;
}

/* 32 big-endian bytes <-> little-endian 64-bit limbs: hogweed's, and the Montgomery
 * arithmetic's below */
_Static_assert(sizeof(mp_limb_t) == sizeof(uint64_t), "hogweed's limbs are 64-bit here");
static void limbs_from_be(mp_limb_t r[LIMBS], const uint8_t b[32])
{
	memset(r, 0, LIMBS * sizeof *r);
	for (size_t i = 0; i < 32; i++)
		r[(31 - i) / sizeof *r] |= (mp_limb_t)b[i] << (8 * ((31 - i) % sizeof *r));
}

static void limbs_to_be(uint8_t b[32], const mp_limb_t r[LIMBS])
{
	for (size_t i = 0; i < 32; i++)
		b[i] = (uint8_t)(r[(31 - i) / sizeof *r] >> (8 * ((31 - i) % sizeof *r)));
}

/* 1 when some limb of a is not 0 (public values: r and s of a signature about to be sent) */
static int limbs_nonzero(const mp_limb_t a[LIMBS])
{
	mp_limb_t v = 0;

	for (size_t i = 0; i < LIMBS; i++)
		v |= a[i];
	return v != 0;
}

/* A scalar 0 < x < n as 32 big-endian bytes, sampled as BearSSL's keygen does (32 bytes at a
 * time until in range) from an HMAC-DRBG seeded with seed; the DRBG is wiped after. 0 or -EIO. */
static int draw_scalar(const void *seed, size_t len, unsigned char out[BR_EC_KBUF_PRIV_MAX_SIZE])
{
	br_hmac_drbg_context rng;
	br_ec_private_key x;
	int r;

	br_hmac_drbg_init(&rng, &br_sha256_vtable, seed, len);
	r = br_ec_keygen(&rng.vtable, &br_ec_p256_m31, &x, out, BR_EC_secp256r1) == 32 ? 0 : -EIO;
	secret_wipe(&rng, sizeof rng);
	return r;
}

/* 1 when 0 < x < n (the group order), without a branch on x's bytes */
static int scalar_in_range(const uint8_t x[32])
{
	size_t len;
	const unsigned char *n = br_ec_p256_m31.order(BR_EC_secp256r1, &len);
	uint32_t borrow = 0, nonzero = 0;

	for (size_t i = 32; i-- > 0;) {
		borrow = ((uint32_t)x[i] - n[i] - borrow) >> 31; /* x - n, from the low end */
		nonzero |= x[i];
	}
	return (int)(borrow & ((nonzero + 0xff) >> 8));
}

int p256_set_private(struct p256_key *k, const uint8_t x[32])
{
	const struct ecc_curve *ecc = curve();
	mp_limb_t xl[LIMBS], pt[2 * LIMBS];
	struct ecc_scalar s = {ecc, xl};
	struct ecc_point p = {ecc, pt};
	uint8_t *q = k->spki + sizeof spki_p256_prefix;
	jmp_buf oom;

	if (!scalar_in_range(x))
		return -EINVAL;
	memmove(k->sk, x, 32);
	secret_wipe(k->pre, sizeof k->pre);
	k->priv = (br_ec_private_key){BR_EC_secp256r1, k->sk, 32};
	limbs_from_be(xl, k->sk);
	if (setjmp(oom)) { /* hogweed's scratch could not be allocated */
		gmp_oom = NULL;
		gmp_block_used = 0;
		secret_wipe(xl, sizeof xl);
		secret_wipe(k, sizeof *k);
		return -ENOMEM;
	}
	gmp_oom = &oom;
	ecc_point_mul_g(&p, &s);
	gmp_oom = NULL;
	memcpy(k->spki, spki_p256_prefix, sizeof spki_p256_prefix);
	q[0] = 0x04;
	limbs_to_be(q + 1, pt);
	limbs_to_be(q + 33, pt + LIMBS);
	secret_wipe(xl, sizeof xl);
	return 0;
}

int p256_generate(struct p256_key *k)
{
	uint8_t seed[48];
	int r;

	r = random_bytes(seed, sizeof seed);
	if (r < 0)
		return r;
	r = draw_scalar(seed, sizeof seed, k->sk);
	secret_wipe(seed, sizeof seed);
	if (r == 0)
		r = p256_set_private(k, k->sk);
	if (r < 0)
		secret_wipe(k, sizeof *k);
	return r;
}

size_t p256_sign(const struct p256_key *k, const br_hash_class *h, const uint8_t *hv, uint8_t *sig,
		 size_t cap)
{
	const struct ecc_curve *ecc = curve();
	size_t hv_len = (h->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK, n = 0;
	uint8_t seed[32 + 64 + 32], nonce[BR_EC_KBUF_PRIV_MAX_SIZE], out[80];
	mp_limb_t z[LIMBS], kl[LIMBS], r[LIMBS], s[LIMBS], scratch[SIGN_ITCH];

	if (k->priv.curve != BR_EC_secp256r1 || k->priv.xlen != 32 || hv_len == 0 || hv_len > 64 ||
	    (size_t)ecc_ecdsa_sign_itch(ecc) > SIGN_ITCH)
		return 0;
	memcpy(seed, k->priv.x, 32);
	memcpy(seed + 32, hv, hv_len);
	if (random_bytes(seed + 32 + hv_len, 32) < 0)
		goto out;
	if (draw_scalar(seed, 64 + hv_len, nonce) < 0)
		goto out;
	limbs_from_be(z, k->priv.x);
	limbs_from_be(kl, nonce);
	ecc_ecdsa_sign(ecc, z, kl, hv_len, hv, r, s, scratch);
	/* ecc_ecdsa_sign leaves the check of r, s != 0 to its caller (ecc.h); either is 0 with
	 * probability ~2^-256, and a signature with one is invalid: no signature then (the
	 * handshake fails and is retried with a fresh nonce) rather than a loop here. */
	if (!limbs_nonzero(r) || !limbs_nonzero(s))
		goto out;
	limbs_to_be(out, r);
	limbs_to_be(out + 32, s);
	n = br_ecdsa_raw_to_asn1(out, 64);
	if (n > cap)
		n = 0;
	if (n)
		memcpy(sig, out, n);
out:
	secret_wipe(seed, sizeof seed);
	secret_wipe(nonce, sizeof nonce);
	secret_wipe(z, sizeof z);
	secret_wipe(kl, sizeof kl);
	secret_wipe(scratch, sizeof scratch);
	return n;
}

/* ---- presigned nonces ----
 * s = kinv * (h + x * r) = kinv * h + t mod n with t = kinv * x * r: hogweed makes r and kinv
 * (an ECDSA signature by the key 0 of the hash value 1 has s = kinv), the rest is two
 * multiplications mod n, done here in Montgomery form on 64-bit limbs, without a branch or
 * an index that depends on the values. */

typedef unsigned __int128 u128;

/* A 256-bit modulus m in Montgomery arithmetic: m0 = -1/m mod 2^64, r2 = 2^512 mod m. */
struct modulus {
	uint64_t m[4], m0, r2[4];
};

static const struct modulus mod_n = {/* the group order */
				     {0xf3b9cac2fc632551, 0xbce6faada7179e84, 0xffffffffffffffff,
				      0xffffffff00000000},
				     0xccd1c8aaee00bc4f,
				     {0x83244c95be79eea2, 0x4699799c49bd6fa6, 0x2845b2392b6bec59,
				      0x66e12d94f3d95620}};
static const struct modulus mod_p = {/* the field prime */
				     {0xffffffffffffffff, 0x00000000ffffffff, 0x0000000000000000,
				      0xffffffff00000001},
				     0x0000000000000001,
				     {0x0000000000000003, 0xfffffffbffffffff, 0xfffffffffffffffe,
				      0x00000004fffffffd}};
static const uint64_t curve_b[4] = {0x3bce3c3e27d2604b, 0x651d06b0cc53b0f6, 0xb3ebbd55769886bc,
				    0x5ac635d8aa3a93e7};

/* d = a - m; returns the borrow (1 when a < m) */
static uint64_t sub_m(const struct modulus *M, uint64_t d[4], const uint64_t a[4])
{
	uint64_t borrow = 0;

	for (int j = 0; j < 4; j++) {
		u128 v = (u128)a[j] - M->m[j] - borrow;

		d[j] = (uint64_t)v;
		borrow = (uint64_t)(v >> 64) & 1;
	}
	return borrow;
}

/* out = a - m when a >= m (hi: a's bit 256), else a; for a < 2m */
static void sub_m_if_over(const struct modulus *M, uint64_t out[4], const uint64_t a[4],
			  uint64_t hi)
{
	uint64_t d[4], keep = (uint64_t)0 - ((hi | (sub_m(M, d, a) ^ 1)) & 1); /* ones: take d */

	for (int j = 0; j < 4; j++)
		out[j] = (d[j] & keep) | (a[j] & ~keep);
	secret_wipe(d, sizeof d); /* a - m of a secret a */
	secret_wipe(&keep, sizeof keep);
}

/* out = a + b mod m, for a, b < m */
static void add_mod(const struct modulus *M, uint64_t out[4], const uint64_t a[4],
		    const uint64_t b[4])
{
	uint64_t s[4], carry = 0;

	for (int j = 0; j < 4; j++) {
		u128 v = (u128)a[j] + b[j] + carry;

		s[j] = (uint64_t)v;
		carry = (uint64_t)(v >> 64);
	}
	sub_m_if_over(M, out, s, carry);
	secret_wipe(s, sizeof s);
}

/* out = a * b / 2^256 mod m, for a, b < m (CIOS Montgomery multiplication) */
static void mont_mul(const struct modulus *M, uint64_t out[4], const uint64_t a[4],
		     const uint64_t b[4])
{
	uint64_t t[6] = {0};

	for (int i = 0; i < 4; i++) {
		u128 c = 0;
		uint64_t q;

		for (int j = 0; j < 4; j++) {
			c += (u128)a[j] * b[i] + t[j];
			t[j] = (uint64_t)c;
			c >>= 64;
		}
		c += t[4];
		t[4] = (uint64_t)c;
		t[5] = (uint64_t)(c >> 64);
		q = t[0] * M->m0;
		c = ((u128)q * M->m[0] + t[0]) >> 64;
		for (int j = 1; j < 4; j++) {
			c += (u128)q * M->m[j] + t[j];
			t[j - 1] = (uint64_t)c;
			c >>= 64;
		}
		c += t[4];
		t[3] = (uint64_t)c;
		t[4] = t[5] + (uint64_t)(c >> 64);
	}
	sub_m_if_over(M, out, t, t[4]);
	secret_wipe(t, sizeof t);
}

/* out = a * b mod m, for a, b < m */
static void mul_mod(const struct modulus *M, uint64_t out[4], const uint64_t a[4],
		    const uint64_t b[4])
{
	uint64_t t[4];

	mont_mul(M, t, a, b);
	mont_mul(M, out, t, M->r2);
	secret_wipe(t, sizeof t);
}

/* out = a - b mod m, for a, b < m */
static void sub_mod(const struct modulus *M, uint64_t out[4], const uint64_t a[4],
		    const uint64_t b[4])
{
	uint64_t d[4], borrow = 0, carry = 0, mask;

	for (int j = 0; j < 4; j++) {
		u128 v = (u128)a[j] - b[j] - borrow;

		d[j] = (uint64_t)v;
		borrow = (uint64_t)(v >> 64) & 1;
	}
	mask = (uint64_t)0 - borrow;
	for (int j = 0; j < 4; j++) {
		u128 v = (u128)d[j] + (M->m[j] & mask) + carry;

		out[j] = (uint64_t)v;
		carry = (uint64_t)(v >> 64);
	}
	secret_wipe(d, sizeof d);
}

/* x, y < p and y^2 = x^3 - 3x + b (mod p): the point is on the curve (public values) */
static int on_curve(const uint64_t x[4], const uint64_t y[4])
{
	uint64_t d[4], l[4], r[4], t[4];

	if (!sub_m(&mod_p, d, x) || !sub_m(&mod_p, d, y))
		return 0;
	mul_mod(&mod_p, l, y, y);
	mul_mod(&mod_p, r, x, x);
	mul_mod(&mod_p, r, r, x);
	add_mod(&mod_p, t, x, x);
	add_mod(&mod_p, t, t, x);
	sub_mod(&mod_p, r, r, t);
	add_mod(&mod_p, r, r, curve_b);
	return !memcmp(l, r, sizeof l);
}

int p256_presign(struct p256_key *k)
{
	const struct ecc_curve *ecc = curve();
	struct p256_presig *p = NULL;
	static uint64_t count; /* distinct seeds even if the random bytes repeated */
	uint8_t seed[72], nonce[BR_EC_KBUF_PRIV_MAX_SIZE], one = 1;
	mp_limb_t zero[LIMBS] = {0}, kl[LIMBS], rl[LIMBS], kinvl[LIMBS], scratch[SIGN_ITCH];
	uint64_t x[4], xr[4];
	int r;

	for (size_t i = 0; i < sizeof k->pre / sizeof k->pre[0]; i++)
		if (!k->pre[i].ready) {
			p = &k->pre[i];
			break;
		}
	if (!p)
		return 0;
	if (k->priv.curve != BR_EC_secp256r1 || k->priv.xlen != 32 ||
	    (size_t)ecc_ecdsa_sign_itch(ecc) > SIGN_ITCH)
		return -EINVAL;
	memcpy(seed, k->priv.x, 32);
	count++;
	memcpy(seed + 64, &count, sizeof count);
	r = random_bytes(seed + 32, 32);
	if (r < 0)
		goto out;
	if ((r = draw_scalar(seed, sizeof seed, nonce)) < 0)
		goto out;
	limbs_from_be(kl, nonce);
	/* the key 0 signing the hash value 1: s = kinv * (1 + 0 * r) */
	ecc_ecdsa_sign(ecc, zero, kl, 1, &one, rl, kinvl, scratch);
	if (!limbs_nonzero(rl) || !limbs_nonzero(kinvl)) { /* r = 0: this nonce is unusable */
		r = -EAGAIN;
		goto out;
	}
	memcpy(p->r, rl, sizeof p->r);
	memcpy(p->kinv, kinvl, sizeof p->kinv);
	limbs_from_be(x, k->priv.x);
	mul_mod(&mod_n, xr, x, p->r);
	mul_mod(&mod_n, p->t, p->kinv, xr);
	p->ready = 1;
	r = 0;
out:
	secret_wipe(seed, sizeof seed);
	secret_wipe(nonce, sizeof nonce);
	secret_wipe(kl, sizeof kl);
	secret_wipe(kinvl, sizeof kinvl);
	secret_wipe(x, sizeof x);
	secret_wipe(xr, sizeof xr);
	secret_wipe(scratch, sizeof scratch);
	return r;
}

size_t p256_sign_presigned(struct p256_key *k, const br_hash_class *h, const uint8_t *hv,
			   uint8_t *sig, size_t cap)
{
	size_t hv_len = (h->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK, n = 0;
	struct p256_presig *p = NULL;
	uint8_t hb[32] = {0}, out[80];
	uint64_t e[4], s[4], nonzero = 0;

	for (size_t i = 0; i < sizeof k->pre / sizeof k->pre[0]; i++)
		if (k->pre[i].ready) {
			p = &k->pre[i];
			break;
		}
	if (!p || hv_len == 0 || hv_len > 64)
		return p256_sign(k, h, hv, sig, cap);
	/* e: the leftmost 256 bits of the hash value (FIPS 186-4 6.4), reduced mod n */
	if (hv_len >= 32)
		memcpy(hb, hv, 32);
	else
		memcpy(hb + 32 - hv_len, hv, hv_len);
	limbs_from_be(e, hb);
	sub_m_if_over(&mod_n, e, e, 0);
	/* s = kinv * e + t mod n */
	mul_mod(&mod_n, s, p->kinv, e);
	add_mod(&mod_n, s, s, p->t);
	for (int j = 0; j < 4; j++)
		nonzero |= s[j];
	if (nonzero) {
		limbs_to_be(out, p->r);
		limbs_to_be(out + 32, s);
		n = br_ecdsa_raw_to_asn1(out, 64);
		if (n > cap)
			n = 0;
		if (n)
			memcpy(sig, out, n);
	}
	secret_wipe(p, sizeof *p); /* each nonce signs once */
	secret_wipe(e, sizeof e);
	secret_wipe(s, sizeof s);
	secret_wipe(hb, sizeof hb);
	/* s = 0 (probability 2^-256): a fresh nonce instead */
	return nonzero ? n : p256_sign(k, h, hv, sig, cap);
}

int p256_verify_asn1(const uint8_t *pub, size_t pub_len, const void *hv, size_t hv_len,
		     const void *sig, size_t sig_len)
{
	const struct ecc_curve *ecc = curve();
	mp_limb_t pt[2 * LIMBS], r[LIMBS], s[LIMBS], scratch[VERIFY_ITCH];
	uint64_t x[4], y[4];
	uint8_t raw[2 * 72], rs[64] = {0};
	size_t half;

	/* the same bounds as BearSSL's br_ecdsa_i31_vrfy_asn1 for P-256 */
	if (pub_len != P256_POINT_LEN || pub[0] != 0x04 || hv_len == 0 || hv_len > 64 ||
	    sig_len > 72 || (size_t)ecc_ecdsa_verify_itch(ecc) > VERIFY_ITCH)
		return 0;
	memcpy(raw, sig, sig_len);
	sig_len = br_ecdsa_asn1_to_raw(raw, sig_len);
	if (sig_len == 0 || sig_len % 2 || sig_len > 64)
		return 0;
	half = sig_len / 2;
	memcpy(rs + 32 - half, raw, half);
	memcpy(rs + 64 - half, raw + half, half);
	/* hogweed's check takes the point as given */
	limbs_from_be(x, pub + 1);
	limbs_from_be(y, pub + 33);
	if (!on_curve(x, y))
		return 0;
	limbs_from_be(pt, pub + 1);
	limbs_from_be(pt + LIMBS, pub + 33);
	limbs_from_be(r, rs);
	limbs_from_be(s, rs + 32);
	/* refuses r or s outside 1..n-1 */
	return ecc_ecdsa_verify(ecc, pt, hv_len, hv, r, s, scratch) ? 1 : 0;
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
