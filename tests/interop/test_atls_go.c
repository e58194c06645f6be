/* Interop: our BearSSL aTLS engine against Go's crypto/tls configured as Constellation's
 * aTLS (tests/interop/atlspeer, built offline from Debian's Go), in both directions and in
 * the shapes of spec §1.1, plus the §13 breakages each side must refuse. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "atls/atls.h"
#include "atls/conn_internal.h"
#include "attest/attest.h"
#include "harness.h"
#include "interop/peer.h"

/* Client side of the exchange: send "ping", expect "pong". Bounded to about 10 s. */
static int client_ping(struct atls_conn *c, int fd)
{
	int sent = 0;
	char buf[8];

	for (int round = 0; round < 1000; round++) {
		struct pollfd pfd = {fd, atls_events(c), 0};
		ssize_t n;

		if (!sent) {
			n = atls_write(c, "ping", 4);
			if (n == 4)
				sent = 1;
			else if (n != -EAGAIN)
				return (int)n;
		}
		n = atls_read(c, buf, sizeof buf);
		if (n == 4 && !memcmp(buf, "pong", 4))
			return 0;
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		poll(&pfd, 1, 10);
	}
	return -ETIMEDOUT;
}

/* Server side: expect "ping", answer "pong" and flush it. Bounded to about 10 s. */
static int server_pong(struct atls_conn *c, int fd)
{
	char buf[8];

	for (int round = 0; round < 1000; round++) {
		struct pollfd pfd = {fd, atls_events(c), 0};
		ssize_t n = atls_read(c, buf, sizeof buf);

		if (n == 4 && !memcmp(buf, "ping", 4)) {
			for (int w = 0; w < 1000; w++) {
				n = atls_write(c, "pong", 4);
				if (n == 4)
					return atls_flush(c);
				if (n != -EAGAIN)
					return (int)n;
				poll(&pfd, 1, 10);
			}
			return -ETIMEDOUT;
		}
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		poll(&pfd, 1, 10);
	}
	return -ETIMEDOUT;
}

/* The ECDHE curve our client's last handshake used. */
static int last_client_curve;

/* Our client against a Go server started with args; *go_status gets the server's exit. */
static int c_client_vs_go(char *const args[], const struct atls_config *cfg, char *err,
			  size_t errlen, struct peer *pr, int *go_status)
{
	struct atls_conn *c;
	int port, fd, r;

	if (peer_start(pr, args) < 0 || peer_line(pr) < 0 ||
	    sscanf(pr->line, "LISTEN %d", &port) != 1)
		return -100;
	fd = tcp_connect(port);
	if (fd < 0 || atls_client_new(cfg, fd, &c) < 0)
		return -101;
	r = client_ping(c, fd);
	snprintf(err, errlen, "%s", atls_error(c));
	last_client_curve = br_ssl_engine_get_ecdhe_curve(c->eng);
	atls_free(c);
	close(fd);
	if (peer_line(pr) < 0)
		snprintf(pr->line, sizeof pr->line, "(no line)");
	*go_status = peer_wait(pr);
	return r;
}

/* A Go client started with args (with --addr appended) against our server. */
static int go_client_vs_c(const char *flags[], const struct atls_config *cfg, char *err,
			  size_t errlen, struct peer *pr, int *go_status)
{
	char addr[64], *args[12];
	struct pollfd pfd;
	struct atls_conn *c;
	int port, lfd, fd, r, n = 0;

	lfd = tcp_listen(&port);
	if (lfd < 0)
		return -100;
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	args[n++] = "atlspeer";
	args[n++] = "client";
	args[n++] = "--addr";
	args[n++] = addr;
	for (int i = 0; flags[i] && n < 11; i++)
		args[n++] = (char *)flags[i];
	args[n] = NULL;
	if (peer_start(pr, args) < 0)
		return -101;
	pfd = (struct pollfd){lfd, POLLIN, 0};
	if (poll(&pfd, 1, 10000) <= 0 || (fd = accept(lfd, NULL, NULL)) < 0) {
		close(lfd);
		return -102;
	}
	close(lfd);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (atls_server_new(cfg, fd, &c) < 0)
		return -103;
	r = server_pong(c, fd);
	snprintf(err, errlen, "%s", atls_error(c));
	if (peer_line(pr) < 0)
		snprintf(pr->line, sizeof pr->line, "(no line)");
	atls_free(c);
	close(fd);
	*go_status = peer_wait(pr);
	return r;
}

/* Node -> JoinService: our client attests to a Go server that validates (strict Go X.509
 * parsing of our certificate included); TLS 1.2 with an AEAD ECDHE-ECDSA suite and h2. */
TEST(interop_c_join_client_attests_to_go_server)
{
	char *args[] = {"atlspeer", "server", "--validate", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = c_client_vs_go(args, &cfg, err, sizeof err, &pr, &st);

	if (r != 0 || st != 0)
		harness_fail(__FILE__, __LINE__, "ours: %d %s; go: %s (exit %d)", r, err, pr.line,
			     st);
	CHECK(r == 0 && st == 0);
	CHECK(!strncmp(pr.line, "OK version=303 suite=TLS_ECDHE_ECDSA_WITH_", 42));
	CHECK(strstr(pr.line, "alpn=h2") != NULL);
	/* X25519, not P-256: Go's TLS 1.2 server takes the client's first curve */
	CHECK(last_client_curve == BR_EC_curve25519);
}

/* CLI -> init server: a Go client validates our server's attestation of its SNI nonce. */
TEST(interop_go_cli_validates_c_init_server)
{
	const char *flags[] = {"--validate", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = go_client_vs_c(flags, &cfg, err, sizeof err, &pr, &st);

	if (r != 0 || st != 0)
		harness_fail(__FILE__, __LINE__, "ours: %d %s; go: %s (exit %d)", r, err, pr.line,
			     st);
	CHECK(r == 0 && st == 0);
	CHECK(!strncmp(pr.line, "OK version=303", 14));
}

/* Our client validates a Go server that attests (the CLI's side, for our tools). */
TEST(interop_c_client_validates_go_attesting_server)
{
	char *args[] = {"atlspeer", "server", "--issue", NULL};
	struct atls_config cfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct peer pr;
	char err[256];
	int st, r = c_client_vs_go(args, &cfg, err, sizeof err, &pr, &st);

	if (r != 0 || st != 0)
		harness_fail(__FILE__, __LINE__, "ours: %d %s; go: %s (exit %d)", r, err, pr.line,
			     st);
	CHECK(r == 0 && st == 0);
}

/* A Go server's client-certificate request, answered by a Go-attesting client, through our
 * server with a validator: the Go client reads our server nonce from the CA DN. */
TEST(interop_go_client_attests_to_c_validating_server)
{
	const char *flags[] = {"--issue", NULL};
	struct atls_config cfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct peer pr;
	char err[256];
	int st, r = go_client_vs_c(flags, &cfg, err, sizeof err, &pr, &st);

	if (r != 0 || st != 0)
		harness_fail(__FILE__, __LINE__, "ours: %d %s; go: %s (exit %d)", r, err, pr.line,
			     st);
	CHECK(r == 0 && st == 0);
}

/* §13.1: a hex nonce in the SNI happens to be valid base64 of other bytes, so our server
 * (like Go's) attests to those, and the validating client finds the wrong nonce. */
TEST(interop_hex_sni_fails_attestation_of_c_server)
{
	const char *flags[] = {"--validate", "--bad-sni", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = go_client_vs_c(flags, &cfg, err, sizeof err, &pr, &st);

	CHECK(r < 0 && st == 1);
	CHECK(strstr(pr.line, "wrong nonce") != NULL);
}

/* §1.2: an SNI that is not base64 aborts the handshake on our server, as on Go's. */
TEST(interop_c_server_aborts_on_non_base64_sni)
{
	const char *flags[] = {"--sni", "node-1.example", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = go_client_vs_c(flags, &cfg, err, sizeof err, &pr, &st);

	CHECK(r < 0 && st == 1);
	CHECK(strstr(err, "not standard base64") != NULL);
}

/* §13.2: a Go client that offers no ALPN; we refuse to speak without h2, like grpc-go. */
TEST(interop_c_server_refuses_client_without_alpn)
{
	const char *flags[] = {"--no-alpn", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = go_client_vs_c(flags, &cfg, err, sizeof err, &pr, &st);

	CHECK(r < 0 && st == 1);
	CHECK(strstr(err, "no ALPN") != NULL);
}

/* §13.3: an attestation extension marked critical is refused by our validating client. */
TEST(interop_c_client_refuses_critical_attestation_extension)
{
	char *args[] = {"atlspeer", "server", "--issue", "--critical-ext", NULL};
	struct atls_config cfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct peer pr;
	char err[256];
	int st, r = c_client_vs_go(args, &cfg, err, sizeof err, &pr, &st);

	CHECK(r < 0 && st == 1);
	CHECK(strstr(err, "unhandled critical extension") != NULL);
}

/* §13.2 from the other side: a server that selects no protocol is refused by our client. */
TEST(interop_c_client_refuses_go_server_without_alpn)
{
	char *args[] = {"atlspeer", "server", "--no-alpn", NULL};
	struct atls_config cfg = {.issuer = &attest_dummy_issuer};
	struct peer pr;
	char err[256];
	int st, r = c_client_vs_go(args, &cfg, err, sizeof err, &pr, &st);

	CHECK(r < 0);
	CHECK(strstr(err, "no ALPN") != NULL);
	(void)st;
}
