/* aTLS end to end in one process: a BearSSL client and server on a socketpair, each with
 * the dummy variant in the roles Constellation gives them (spec §1.1), and the refusals. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "atls/atls.h"
#include "atls/conn_internal.h"
#include "attest/attest.h"
#include "base/base.h"
#include "harness.h"

struct pair {
	int fd[2];
	struct atls_conn *cl, *sv;
};

static int pair_open(struct pair *p, const struct atls_config *ccfg, const struct atls_config *scfg)
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p->fd) < 0)
		return -errno;
	fcntl(p->fd[0], F_SETFL, O_NONBLOCK);
	fcntl(p->fd[1], F_SETFL, O_NONBLOCK);
	if (atls_client_new(ccfg, p->fd[0], &p->cl) < 0)
		return -1;
	if (atls_server_new(scfg, p->fd[1], &p->sv) < 0)
		return -1;
	return 0;
}

static void pair_close(struct pair *p)
{
	atls_free(p->cl);
	atls_free(p->sv);
	close(p->fd[0]);
	close(p->fd[1]);
}

/* The client sends "ping", the server answers "pong". Returns 0 when the client got it, else
 * the first error (-EAGAIN if the bounded loop ran out). Bounded: 500 rounds of <= 10 ms. */
static int ping_pong(struct pair *p)
{
	char buf[16];
	int sent = 0, answered = 0;

	for (int round = 0; round < 500; round++) {
		struct pollfd pfd[2] = {{p->fd[0], atls_events(p->cl), 0},
					{p->fd[1], atls_events(p->sv), 0}};
		ssize_t n;

		if (!sent) {
			n = atls_write(p->cl, "ping", 4);
			if (n == 4)
				sent = 1;
			else if (n != -EAGAIN)
				return (int)n;
		}
		n = atls_read(p->sv, buf, sizeof buf);
		if (n == 4 && !memcmp(buf, "ping", 4) && !answered) {
			if (atls_write(p->sv, "pong", 4) != 4)
				return -EIO;
			answered = 1;
		} else if (n < 0 && n != -EAGAIN) {
			return (int)n;
		}
		n = atls_read(p->cl, buf, sizeof buf);
		if (n == 4 && !memcmp(buf, "pong", 4))
			return 0;
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		poll(pfd, 2, 10);
	}
	return -EAGAIN;
}

/* Node -> JoinService: the client attests, the server validates (§1.1). */
TEST(atls_join_shape_client_attests_server_validates)
{
	struct atls_config ccfg = {.issuer = &attest_dummy_issuer};
	struct atls_config scfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct pair p;

	CHECK(pair_open(&p, &ccfg, &scfg) == 0);
	int r = ping_pong(&p);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "client: %s; server: %s", atls_error(p.cl),
			     atls_error(p.sv));
	CHECK(r == 0);
	CHECK(atls_established(p.cl) && atls_established(p.sv));
	CHECK(p.sv->x509.attested);
	/* The server's nonce reached the client through the CertificateRequest DN. */
	CHECK(p.cl->peer_nonce_len == ATLS_NONCE_LEN);
	CHECK_BYTES(p.cl->peer_nonce, p.sv->own_nonce, ATLS_NONCE_LEN);
	pair_close(&p);
}

/* CLI -> init server: the server attests to the client's SNI nonce, the client validates. */
TEST(atls_init_shape_server_attests_client_validates)
{
	struct atls_config ccfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct atls_config scfg = {.issuer = &attest_dummy_issuer};
	struct pair p;

	CHECK(pair_open(&p, &ccfg, &scfg) == 0);
	int r = ping_pong(&p);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "client: %s; server: %s", atls_error(p.cl),
			     atls_error(p.sv));
	CHECK(r == 0);
	CHECK(p.cl->x509.attested);
	CHECK(p.sv->peer_nonce_len == ATLS_NONCE_LEN);
	CHECK_BYTES(p.sv->peer_nonce, p.cl->own_nonce, ATLS_NONCE_LEN);
	pair_close(&p);
}

TEST(atls_client_refuses_server_without_attestation)
{
	struct atls_config ccfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct atls_config scfg = {0};
	struct pair p;

	CHECK(pair_open(&p, &ccfg, &scfg) == 0);
	CHECK(ping_pong(&p) < 0);
	CHECK(!atls_established(p.cl));
	CHECK(strstr(atls_error(p.cl), "no attestation extension") != NULL);
	pair_close(&p);
}

/* A server whose ServerKeyExchange signature is wrong (one bit of s flipped after signing):
 * the client checks it after sending its second flight (algs.c), and must still refuse it
 * before the handshake completes: no "ping" reaches the server. Both the join shape (the
 * client attests) and the init shape (the server attests). */
static const br_ssl_server_policy_class *real_policy;
static int server_got_app_data;

static size_t flip_do_sign(const br_ssl_server_policy_class **pctx, unsigned algo_id,
			   unsigned char *data, size_t hv_len, size_t len)
{
	size_t n = real_policy->do_sign(pctx, algo_id, data, hv_len, len);

	if (n > 8)
		data[n - 2] ^= 0x01;
	return n;
}

static void refuse_bad_ske(const struct atls_config *ccfg, const struct atls_config *scfg)
{
	br_ssl_server_policy_class bad;
	struct pair p;
	char buf[16];

	CHECK(pair_open(&p, ccfg, scfg) == 0);
	real_policy = p.sv->policy;
	bad = *real_policy;
	bad.do_sign = flip_do_sign;
	p.sv->policy = &bad;
	server_got_app_data = 0;
	for (int round = 0; round < 200; round++) {
		struct pollfd pfd[2] = {{p.fd[0], atls_events(p.cl), 0},
					{p.fd[1], atls_events(p.sv), 0}};
		ssize_t n = atls_write(p.cl, "ping", 4);

		if (n < 0 && n != -EAGAIN)
			break;
		CHECK(n != 4);
		if (atls_read(p.sv, buf, sizeof buf) > 0)
			server_got_app_data = 1;
		poll(pfd, 2, 10);
	}
	CHECK(!server_got_app_data);
	CHECK(!atls_established(p.cl));
	if (!strstr(atls_error(p.cl), "signature does not verify"))
		harness_fail(__FILE__, __LINE__, "client: %s", atls_error(p.cl));
	pair_close(&p);
}

TEST(atls_client_refuses_a_wrong_server_signature)
{
	struct atls_config join_c = {.issuer = &attest_dummy_issuer};
	struct atls_config join_s = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct atls_config init_c = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct atls_config init_s = {.issuer = &attest_dummy_issuer};

	refuse_bad_ske(&join_c, &join_s);
	if (harness_failed())
		return;
	refuse_bad_ske(&init_c, &init_s);
}

/* An issuer that attests to the wrong nonce, as a replaying peer would. */
static int stale_issue(void *ctx, const uint8_t user_data[ATLS_USER_DATA_LEN], const uint8_t *nonce,
		       size_t nonce_len, uint8_t *doc, size_t cap, size_t *ret_len, char *err,
		       size_t errlen)
{
	uint8_t other[ATLS_NONCE_LEN] = {0};

	(void)ctx;
	(void)nonce;
	(void)nonce_len;
	return attest_dummy_issuer.issue(NULL, user_data, other, sizeof other, doc, cap, ret_len,
					 err, errlen);
}

TEST(atls_server_refuses_attestation_for_another_nonce)
{
	struct atls_issuer stale = attest_dummy_issuer;
	struct atls_config ccfg = {.issuer = &stale};
	struct atls_config scfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct pair p;

	stale.issue = stale_issue;
	CHECK(pair_open(&p, &ccfg, &scfg) == 0);
	CHECK(ping_pong(&p) < 0);
	CHECK(!atls_established(p.sv));
	CHECK(strstr(atls_error(p.sv), "another nonce") != NULL);
	pair_close(&p);
}

TEST(atls_nonce_dn_round_trip_and_shape)
{
	uint8_t nonce[32], dn[128], back[64];
	size_t n, m;
	char err[128];

	for (int i = 0; i < 32; i++)
		nonce[i] = (uint8_t)(i * 5);
	CHECK(atls_nonce_dn_build(nonce, 32, dn, sizeof dn, &n) == 0);
	/* SEQ { SET { SEQ { OID 2.5.4.3, PrintableString(44) } } } */
	CHECK(n == 2 + 2 + 2 + 5 + 2 + 44);
	CHECK_BYTES(dn, "\x30\x37\x31\x35\x30\x33\x06\x03\x55\x04\x03\x13\x2c", 13);
	CHECK(atls_nonce_dn_decode(dn, n, back, sizeof back, &m, err, sizeof err) == 0);
	CHECK(m == 32);
	CHECK_BYTES(back, nonce, 32);
	dn[20] = '!';
	CHECK(atls_nonce_dn_decode(dn, n, back, sizeof back, &m, err, sizeof err) == -EINVAL);
}

static time_t far_future(void)
{
	return time(NULL) + 3 * 3600;
}

TEST(atls_certificate_shape_and_validity_window)
{
	struct p256_key k;
	struct atls_cert_info ci;
	uint8_t cert[2048];
	size_t n;
	char err[200];
	time_t now = time(NULL);

	CHECK(p256_generate(&k) == 0);
	CHECK_BYTES(k.spki, "\x30\x59\x30\x13\x06\x07\x2a\x86\x48\xce\x3d\x02\x01", 13);
	CHECK(atls_cert_build(&k, now, attest_dummy_issuer.oid, 5, (const uint8_t *)"doc", 3, cert,
			      sizeof cert, &n) == 0);
	CHECK(atls_cert_check(cert, n, now, &ci, err, sizeof err) == 0);
	CHECK(ci.n_ext == 1 && ci.ext[0].oid_len == 5 && ci.ext[0].value_len == 3);
	CHECK(ci.spki_len == 91 && !memcmp(ci.spki, k.spki, 91));
	CHECK(atls_cert_check(cert, n, far_future(), &ci, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "not valid now") != NULL);
	CHECK(atls_cert_check(cert, n - 1, now, &ci, err, sizeof err) == -EINVAL);
}

/* ECDHE: our client offers X25519 alone (Go's TLS 1.2 servers take the client's first curve)
 * and our server takes it; both ends compute it with hogweed behind the br_ec_impl. */
TEST(atls_engines_negotiate_x25519)
{
	struct atls_config ccfg = {.issuer = &attest_dummy_issuer};
	struct atls_config scfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct pair p;

	CHECK(atls_ec_client.supported_curves == 1u << BR_EC_curve25519);
	CHECK(pair_open(&p, &ccfg, &scfg) == 0);
	CHECK(ping_pong(&p) == 0);
	CHECK(br_ssl_engine_get_ecdhe_curve(p.cl->eng) == BR_EC_curve25519);
	CHECK(br_ssl_engine_get_ecdhe_curve(p.sv->eng) == BR_EC_curve25519);
	pair_close(&p);
}

static void random_fill(uint8_t *p, size_t n)
{
	CHECK(random_bytes(p, n) == 0);
}

/* The hogweed X25519 behind atls_ec_client computes what BearSSL's own c25519 does (same
 * scalar convention, so the engine's key generation stays as it was), matches RFC 7748's
 * test vector, and refuses a low-order peer point (all-zero shared secret) as Go does. */
TEST(atls_x25519_matches_bearssl_and_rfc7748)
{
	/* RFC 7748 §5.2, first vector */
	static const uint8_t k[32] = {0xa5, 0x46, 0xe3, 0x6b, 0xf0, 0x52, 0x7c, 0x9d,
				      0x3b, 0x16, 0x15, 0x4b, 0x82, 0x46, 0x5e, 0xdd,
				      0x62, 0x14, 0x4c, 0x0a, 0xc1, 0xfc, 0x5a, 0x18,
				      0x50, 0x6a, 0x22, 0x44, 0xba, 0x44, 0x9a, 0xc4};
	static const uint8_t u[32] = {0xe6, 0xdb, 0x68, 0x67, 0x58, 0x30, 0x30, 0xdb,
				      0x35, 0x94, 0xc1, 0xa4, 0x24, 0xb1, 0x5f, 0x7c,
				      0x72, 0x66, 0x24, 0xec, 0x26, 0xb3, 0x35, 0x3b,
				      0x10, 0xa9, 0x03, 0xa6, 0xd0, 0xab, 0x1c, 0x4c};
	static const uint8_t want[32] = {0xc3, 0xda, 0x55, 0x37, 0x9d, 0xe9, 0xc6, 0x90,
					 0x8e, 0x94, 0xea, 0x4d, 0xf2, 0x8d, 0x08, 0x4f,
					 0x32, 0xec, 0xcf, 0x03, 0x49, 0x1c, 0x71, 0xf7,
					 0x54, 0xb4, 0x07, 0x55, 0x77, 0xa2, 0x85, 0x52};
	const br_ec_impl *ec = &atls_ec_client;
	uint8_t pt[32], ref[32], sk[32], zero[32] = {0};
	size_t len;

	memcpy(pt, u, 32);
	CHECK(ec->mul(pt, 32, k, 32, BR_EC_curve25519) == 1);
	CHECK_BYTES(pt, want, 32);
	for (int i = 0; i < 50; i++) {
		random_fill(sk, sizeof sk);
		random_fill(pt, sizeof pt);
		memcpy(ref, pt, 32);
		CHECK(ec->mul(pt, 32, sk, 32, BR_EC_curve25519) == 1);
		CHECK(br_ec_c25519_m31.mul(ref, 32, sk, 32, BR_EC_curve25519) == 1);
		CHECK_BYTES(pt, ref, 32);
		CHECK(ec->mulgen(pt, sk, 32, BR_EC_curve25519) == 32);
		CHECK(br_ec_c25519_m31.mulgen(ref, sk, 32, BR_EC_curve25519) == 32);
		CHECK_BYTES(pt, ref, 32);
	}
	/* the engine masks its scalar with the order, as with BearSSL's c25519 */
	CHECK_BYTES(ec->order(BR_EC_curve25519, &len),
		    br_ec_c25519_m31.order(BR_EC_curve25519, &len), 32);
	CHECK(ec->xoff(BR_EC_curve25519, &len) == 0 && len == 32);
	memset(pt, 0, sizeof pt); /* u = 0: a low-order point */
	CHECK(ec->mul(pt, 32, sk, 32, BR_EC_curve25519) == 0);
	CHECK(ec->mul(zero, 31, sk, 32, BR_EC_curve25519) == 0);
	/* P-256 goes to BearSSL's ec_p256_m31 unchanged */
	{
		uint8_t a[65], b[65];

		CHECK(ec->mulgen(a, sk, 32, BR_EC_secp256r1) == 65);
		CHECK(br_ec_p256_m31.mulgen(b, sk, 32, BR_EC_secp256r1) == 65);
		CHECK_BYTES(a, b, 65);
	}
}
