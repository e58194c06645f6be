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
