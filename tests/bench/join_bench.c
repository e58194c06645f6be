/* make bench: our join client's latency and memory, for the comparison with Go's client in
 * join-latency.sh. N sequential fresh connections to the same Go join service, each a full
 * aTLS handshake (new key, certificate, attestation) and one IssueJoinTicket. Built like the
 * shipped agent (static musl, -Os) so the numbers are the agent's.
 *   join_bench HOST:PORT N [--as-go]
 *       prints "BENCH median_us=... min_us=... max_us=... maxrss_kb=..."; the request is a
 *       node's (a signed CSR, an SSH host key) or, with --as-go, the one atlspeer's join-bench
 *       sends (no CSR, so the Go join service does the same work for both clients)
 *   join_bench --crypto N    prints "CRYPTO <step> <median us>" for the public-key steps of
 *                            one client handshake, each timed N times on the same primitives
 *                            the handshake uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include <pb_encode.h>

#include "atls/conn_internal.h"
#include "attest/attest.h"
#include "flow/flow.h"
#include "join.pb.h"
#include "kube/kube.h"

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- --crypto: the public-key steps, each timed n times ---- */

static int64_t *t;
static int n_runs;

static void report(const char *step, int64_t *ns)
{
	qsort(ns, (size_t)n_runs, sizeof *ns, cmp);
	printf("CRYPTO %s %.1f\n", step, (double)ns[n_runs / 2] / 1000);
}

#define TIME(step, code)                              \
	do {                                          \
		for (int i_ = 0; i_ < n_runs; i_++) { \
			int64_t t0_ = now_ns();       \
			code;                         \
			t[i_] = now_ns() - t0_;       \
		}                                     \
		report(step, t);                      \
	} while (0)

static int crypto_steps(int n)
{
	struct p256_key key;
	uint8_t hv[32] = {1}, sig[80], pt[BR_EC_KBUF_PUB_MAX_SIZE], sk[32] = {2}, peer[32];
	size_t siglen = 0, len;
	br_ec_public_key pub = {.curve = BR_EC_secp256r1};
	const unsigned char *g;
	volatile uint32_t ok = 1;
	br_hmac_drbg_context rng;
	br_ec_private_key bsk;
	br_ec_public_key bpk;
	unsigned char bkbuf[BR_EC_KBUF_PRIV_MAX_SIZE], bpbuf[BR_EC_KBUF_PUB_MAX_SIZE];

	n_runs = n;
	t = calloc((size_t)n, sizeof *t);
	if (!t || p256_generate(&key) < 0)
		return 1;
	br_hmac_drbg_init(&rng, &br_sha256_vtable, "bench", 5);
	pub.q = key.spki + P256_SPKI_LEN - 65;
	pub.qlen = 65;
	atls_ec_client.mulgen(peer, sk, sizeof sk, BR_EC_curve25519);
	/* the client's own: certificate key, certificate and CertificateVerify signatures */
	TIME("p256_keygen", p256_wipe(&key); p256_generate(&key));
	TIME("p256_ecdsa_sign", siglen = p256_sign(&key, &br_sha256_vtable, hv, sig, sizeof sig));
	/* what is left of a signature once its nonce is presigned (the client presigns two while
	 * the server computes its first flight) */
	for (int i = 0; i < n_runs; i++) {
		int64_t t0;

		p256_presign(&key);
		t0 = now_ns();
		siglen = p256_sign_presigned(&key, &br_sha256_vtable, hv, sig, sizeof sig);
		t[i] = now_ns() - t0;
	}
	report("p256_ecdsa_sign_presigned", t);
	/* the server's ServerKeyExchange signature, checked as the engine does */
	TIME("p256_ecdsa_verify",
	     ok &= (uint32_t)p256_verify_asn1(pub.q, pub.qlen, hv, sizeof hv, sig, siglen));
	/* the same three on BearSSL 0.6's ec_p256_m31, which p256.c used before hogweed */
	TIME("p256_keygen_bearssl_m31",
	     br_ec_keygen(&rng.vtable, &br_ec_p256_m31, &bsk, bkbuf, BR_EC_secp256r1);
	     ok &= br_ec_compute_pub(&br_ec_p256_m31, &bpk, bpbuf, &bsk) == 65);
	TIME("p256_ecdsa_sign_bearssl_m31",
	     siglen = br_ecdsa_i31_sign_asn1(&br_ec_p256_m31, &br_sha256_vtable, hv, &bsk, sig));
	TIME("p256_ecdsa_verify_bearssl_m31",
	     ok &= br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, hv, sizeof hv, &bpk, sig, siglen));
	/* ECDHE as negotiated now (X25519, hogweed) and as before (P-256, BearSSL) */
	TIME("x25519_ecdhe", atls_ec_client.mulgen(pt, sk, sizeof sk, BR_EC_curve25519);
	     memcpy(pt, peer, sizeof peer);
	     ok &= atls_ec_client.mul(pt, sizeof peer, sk, sizeof sk, BR_EC_curve25519));
	TIME("p256_ecdhe", br_ec_p256_m31.mulgen(pt, key.sk, 32, BR_EC_secp256r1);
	     g = br_ec_p256_m31.generator(BR_EC_secp256r1, &len); memcpy(pt, g, len);
	     ok &= br_ec_p256_m31.mul(pt, len, key.sk, 32, BR_EC_secp256r1));
	TIME("x25519_bearssl_m31", br_ec_c25519_m31.mulgen(pt, sk, sizeof sk, BR_EC_curve25519);
	     memcpy(pt, peer, sizeof peer);
	     ok &= br_ec_c25519_m31.mul(pt, sizeof peer, sk, sizeof sk, BR_EC_curve25519));
	p256_wipe(&key);
	free(t);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	join_IssueJoinTicketRequest req = join_IssueJoinTicketRequest_init_zero;
	uint8_t buf[1024];
	pb_ostream_t os = pb_ostream_from_buffer(buf, sizeof buf);
	struct rusage ru;
	int64_t *lat;
	int n;

	if (argc == 3 && !strcmp(argv[1], "--crypto") && (n = atoi(argv[2])) > 0)
		return crypto_steps(n);
	if (argc < 3 || argc > 4 || (n = atoi(argv[2])) < 1 ||
	    (argc == 4 && strcmp(argv[3], "--as-go")))
		return fprintf(stderr, "usage: join_bench HOST:PORT N [--as-go] | --crypto N\n"), 2;
	lat = calloc((size_t)n, sizeof *lat);
	strcpy(req.disk_uuid, "bench");
	if (argc == 4) {
		req.host_public_key.size = 3;
		memcpy(req.host_public_key.bytes, "key", 3);
	} else {
		/* A whole request as a node makes it: a signed CSR and an SSH host key (made once).
		 */
		struct p256_key key;
		struct ssh_key ssh;
		size_t csr_len;

		if (p256_generate(&key) < 0 || ssh_key_generate(&ssh) < 0 ||
		    csr_build(&key, "bench-node", "10.0.0.1", req.certificate_request.bytes,
			      sizeof req.certificate_request.bytes, &csr_len) < 0)
			return 1;
		req.certificate_request.size = (pb_size_t)csr_len;
		req.host_public_key.size =
		    (pb_size_t)ssh_pubkey_wire(ssh.pk, req.host_public_key.bytes);
		req.host_certificate_principals_count = 1;
		strcpy(req.host_certificate_principals[0], "10.0.0.1");
		p256_wipe(&key);
		secret_wipe(&ssh, sizeof ssh);
	}
	if (!lat || !pb_encode(&os, join_IssueJoinTicketRequest_fields, &req))
		return 1;
	log_set_level(LOG_ERROR);
	for (int i = 0; i < n; i++) {
		struct grpc_result res;
		int64_t start = now_ns();

		if (flow_call(argv[1], &attest_dummy_issuer, "/join.API/IssueJoinTicket", buf,
			      os.bytes_written, 30000, &res) < 0 ||
		    res.status != GRPC_OK) {
			fprintf(stderr, "join_bench: call %d: status %d: %s\n", i, res.status,
				res.message);
			return 1;
		}
		free(res.response);
		lat[i] = (now_ns() - start) / 1000;
	}
	qsort(lat, (size_t)n, sizeof *lat, cmp);
	getrusage(RUSAGE_SELF, &ru);
	printf("BENCH median_us=%lld min_us=%lld max_us=%lld maxrss_kb=%ld\n",
	       (long long)lat[n / 2], (long long)lat[0], (long long)lat[n - 1], ru.ru_maxrss);
	free(lat);
	return 0;
}
