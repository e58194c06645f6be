/* The algorithms of an aTLS engine, set one by one instead of through BearSSL's init_full:
 * only what TLS 1.2 with the three ECDHE-ECDSA AEAD suites uses, the CPU-dependent choices
 * (AES-NI, PCLMUL, SSE2: a CPUID each, 13 us in a VM where it traps to the hypervisor, about
 * 0.1 ms per connection) made once per process, and X25519 through nettle's hogweed. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <bearssl.h>
#include <nettle/curve25519.h>

#include "base/base.h"
#include "base/p256.h"
#include "conn_internal.h"

/* ---- X25519 (curve 29) through hogweed, P-256 (curve 23) through br_ec_p256_m31 ----
 * The X25519 half computes exactly what br_ec_c25519_m31 does (RFC 7748: a little-endian
 * scalar, clamped; the point's top bit ignored; tests/atls checks the two agree) in less of
 * the time (the ladder 280 us against 360, the fixed base 100 us on hogweed's table, which
 * the ed25519 of kube/ssh.c shares). libsodium's (90 and 40 us) was dropped for its 39 KiB
 * (docs/size.md). An all-zero result (a low-order peer point) fails, as in Go. hogweed's
 * scratch is p256.c's wiped heap (hogweed_call). */

#define X25519_LEN 32

static const unsigned char x25519_base[X25519_LEN] = {9};
/* What the engine masks its random ECDHE scalar with; the same as BearSSL's c25519 order. */
static const unsigned char x25519_order[X25519_LEN] = {
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

static const unsigned char *ec_generator(int curve, size_t *len)
{
	if (curve == BR_EC_curve25519) {
		*len = sizeof x25519_base;
		return x25519_base;
	}
	return br_ec_p256_m31.generator(curve, len);
}

static const unsigned char *ec_order(int curve, size_t *len)
{
	if (curve == BR_EC_curve25519) {
		*len = sizeof x25519_order;
		return x25519_order;
	}
	return br_ec_p256_m31.order(curve, len);
}

static size_t ec_xoff(int curve, size_t *len)
{
	if (curve == BR_EC_curve25519) {
		*len = X25519_LEN;
		return 0;
	}
	return br_ec_p256_m31.xoff(curve, len);
}

struct x25519_call {
	unsigned char *out;
	const unsigned char *k, *G; /* G NULL: the base point */
};

static void x25519_run(void *arg)
{
	struct x25519_call *c = arg;

	if (c->G)
		nettle_curve25519_mul(c->out, c->k, c->G);
	else
		nettle_curve25519_mul_g(c->out, c->k);
}

/* out = x * G (G NULL: the base point); 0, or -1 for an all-zero result or no scratch */
static int x25519(unsigned char out[X25519_LEN], const unsigned char *x, size_t xlen,
		  const unsigned char *G)
{
	unsigned char k[X25519_LEN], acc = 0;
	struct x25519_call c = {out, k, G};
	int r;

	if (xlen > X25519_LEN)
		return -1;
	memcpy(k, x, xlen);
	memset(k + xlen, 0, sizeof k - xlen);
	r = hogweed_call(x25519_run, &c);
	secret_wipe(k, sizeof k);
	for (size_t i = 0; i < X25519_LEN; i++)
		acc |= out[i];
	if (r < 0 || !acc) {
		secret_wipe(out, X25519_LEN);
		return -1;
	}
	return 0;
}

static uint32_t ec_mul(unsigned char *G, size_t Glen, const unsigned char *x, size_t xlen,
		       int curve)
{
	unsigned char out[X25519_LEN];
	int r;

	if (curve != BR_EC_curve25519)
		return br_ec_p256_m31.mul(G, Glen, x, xlen, curve);
	if (Glen != X25519_LEN)
		return 0;
	r = x25519(out, x, xlen, G);
	if (r == 0)
		memcpy(G, out, sizeof out);
	secret_wipe(out, sizeof out);
	return r == 0;
}

static size_t ec_mulgen(unsigned char *R, const unsigned char *x, size_t xlen, int curve)
{
	if (curve != BR_EC_curve25519)
		return br_ec_p256_m31.mulgen(R, x, xlen, curve);
	return x25519(R, x, xlen, NULL) == 0 ? X25519_LEN : 0;
}

static uint32_t ec_muladd(unsigned char *A, const unsigned char *B, size_t len,
			  const unsigned char *x, size_t xlen, const unsigned char *y, size_t ylen,
			  int curve)
{
	if (curve == BR_EC_curve25519)
		return 0; /* ECDSA only; there is no ECDSA over Curve25519 */
	return br_ec_p256_m31.muladd(A, B, len, x, xlen, y, ylen, curve);
}

/* The client offers X25519 alone: BearSSL lists its curves in ascending order, and Go's TLS 1.2
 * server takes the client's first (P-256 cost 0.68 ms of ECDHE against 0.05 ms). Every Go TLS
 * server accepts X25519 (spec: "X25519 alone is enough"). The server accepts P-256 too. */
const br_ec_impl atls_ec_client = {
    .supported_curves = 1u << BR_EC_curve25519,
    .generator = ec_generator,
    .order = ec_order,
    .xoff = ec_xoff,
    .mul = ec_mul,
    .mulgen = ec_mulgen,
    .muladd = ec_muladd,
};

const br_ec_impl atls_ec_server = {
    .supported_curves = (1u << BR_EC_curve25519) | (1u << BR_EC_secp256r1),
    .generator = ec_generator,
    .order = ec_order,
    .xoff = ec_xoff,
    .mul = ec_mul,
    .mulgen = ec_mulgen,
    .muladd = ec_muladd,
};

/* The peer's handshake signature (ServerKeyExchange, CertificateVerify): aTLS keys are P-256
 * (spec §1.4), checked with hogweed's P-256 (base/p256.c, 2.5x ec_p256_m31) whatever the
 * engine's ECDHE curves. A server checks the client's CertificateVerify at once. A client
 * keeps the server's signature for atls_ske_check: BearSSL goes on to our second flight as
 * if it held, and conn.c lets nothing through before the check has passed (what the
 * engine would have refused still ends the handshake, at most one flight later).
 *
 * So our second flight (the client's certificate with its attestation, ClientKeyExchange,
 * CertificateVerify) goes out before the server's signature over the key exchange is
 * checked. That is right only because the node does not authenticate the join service:
 * as Constellation's own node (its dialer has an issuer and no validator, spec §1.1),
 * it accepts any self-consistent self-signed server certificate, so a server
 * whose signature would fail could as well have signed with a key of its own; the flight
 * gives it nothing a valid handshake would not. The attestation in our certificate is bound
 * to this connection's nonces and key, so it is no use elsewhere. What must not go out
 * before the check, application data (the join request with the disk UUID), does not:
 * conn.c holds it back. A client that did validate its server would have to check first. */
static uint32_t ecdsa_vrfy(const br_ec_impl *impl, const void *hash, size_t hash_len,
			   const br_ec_public_key *pk, const void *sig, size_t sig_len)
{
	struct atls_conn *c = (struct atls_conn *)((char *)impl - offsetof(struct atls_conn, ec));

	if (pk->curve != BR_EC_secp256r1)
		return 0;
	if (c->is_server)
		return (uint32_t)p256_verify_asn1(pk->q, pk->qlen, hash, hash_len, sig, sig_len);
	if (c->ske.pending || c->ske.failed || pk->qlen != sizeof c->ske.q || hash_len == 0 ||
	    hash_len > sizeof c->ske.hv || sig_len > sizeof c->ske.sig)
		return 0;
	memcpy(c->ske.q, pk->q, pk->qlen);
	memcpy(c->ske.hv, hash, hash_len);
	memcpy(c->ske.sig, sig, sig_len);
	c->ske.hv_len = hash_len;
	c->ske.sig_len = sig_len;
	c->ske.pending = 1;
	return 1;
}

int atls_ske_check(struct atls_conn *c)
{
	if (c->ske.pending) {
		c->ske.pending = 0;
		c->ske.failed = !p256_verify_asn1(c->ske.q, sizeof c->ske.q, c->ske.hv,
						  c->ske.hv_len, c->ske.sig, c->ske.sig_len);
	}
	if (!c->ske.failed)
		return 0;
	errbuf_set(c->error, sizeof c->error, "%s",
		   "handshake: peer's handshake signature does not verify");
	return -EPROTO;
}

/* ---- the symmetric algorithms: the CPU's choice, made once per process ---- */

static struct {
	int done;
	const br_block_ctr_class *aes_ctr;
	br_ghash ghash;
	br_chacha20_run chacha20;
	br_poly1305_run poly1305;
} cpu;

static void cpu_choose(void)
{
	if (cpu.done)
		return;
	cpu.aes_ctr = br_aes_x86ni_ctr_get_vtable();
	if (!cpu.aes_ctr)
		cpu.aes_ctr = &br_aes_ct64_ctr_vtable;
	cpu.ghash = br_ghash_pclmul_get();
	if (!cpu.ghash)
		cpu.ghash = br_ghash_ctmul64;
	cpu.chacha20 = br_chacha20_sse2_get();
	if (!cpu.chacha20)
		cpu.chacha20 = br_chacha20_ct_run;
	cpu.poly1305 = br_poly1305_ctmulq_get();
	if (!cpu.poly1305)
		cpu.poly1305 = br_poly1305_ctmul_run;
	cpu.done = 1;
}

void atls_engine_algorithms(struct atls_conn *c, br_ssl_engine_context *eng)
{
	cpu_choose();
	/* SHA-256 and SHA-384: the suites' PRFs and the ECDSA signature hashes we offer */
	br_ssl_engine_set_hash(eng, br_sha256_ID, &br_sha256_vtable);
	br_ssl_engine_set_hash(eng, br_sha384_ID, &br_sha384_vtable);
	br_ssl_engine_set_prf_sha256(eng, &br_tls12_sha256_prf);
	br_ssl_engine_set_prf_sha384(eng, &br_tls12_sha384_prf);
	br_ssl_engine_set_gcm(eng, &br_sslrec_in_gcm_vtable, &br_sslrec_out_gcm_vtable);
	br_ssl_engine_set_aes_ctr(eng, cpu.aes_ctr);
	br_ssl_engine_set_ghash(eng, cpu.ghash);
	br_ssl_engine_set_chapol(eng, &br_sslrec_in_chapol_vtable, &br_sslrec_out_chapol_vtable);
	br_ssl_engine_set_chacha20(eng, cpu.chacha20);
	br_ssl_engine_set_poly1305(eng, cpu.poly1305);
	c->ec = c->is_server ? atls_ec_server : atls_ec_client;
	br_ssl_engine_set_ec(eng, &c->ec);
	br_ssl_engine_set_ecdsa(eng, ecdsa_vrfy);
}
