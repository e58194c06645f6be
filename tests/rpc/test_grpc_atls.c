/* gRPC over aTLS between our client and server (the join shape: the client attests, the
 * server validates), both driven by one poll loop. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atls/atls.h"
#include "attest/attest.h"
#include "harness.h"
#include "rpc/rpc.h"

static void echo(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	grpc_stream_send(s, req, len);
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static const struct grpc_method methods[] = {{"/join.API/IssueJoinTicket", echo, NULL}};

static int run(const struct atls_config *ccfg, const struct atls_config *scfg,
	       struct grpc_result *res, char *serr, size_t serrlen)
{
	int fd[2], done = 0, server_done = 0;
	struct atls_conn *ca, *sa;
	struct rpc_io cio, sio;
	struct grpc_client *cl;
	struct grpc_server_conn *sv;
	int64_t start = rpc_now_ms();

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0)
		return -errno;
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	if (atls_client_new(ccfg, fd[0], &ca) < 0 || atls_server_new(scfg, fd[1], &sa) < 0)
		return -ENOMEM;
	rpc_io_atls(&cio, ca);
	rpc_io_atls(&sio, sa);
	if (grpc_client_new(&cio, "10.42.0.1:30090", &cl) < 0 ||
	    grpc_server_conn_new(&sio, methods, 1, &sv) < 0)
		return -ENOMEM;
	grpc_client_call(cl, "/join.API/IssueJoinTicket", (const uint8_t *)"ticket?", 7,
			 start + 5000);
	while (!done && rpc_now_ms() - start < 6000) {
		struct pollfd pfd[2] = {{fd[0], grpc_client_events(cl), 0},
					{server_done ? -1 : fd[1], grpc_server_conn_events(sv), 0}};

		/* A server whose connection ended closes its socket, as the real one does. */
		if (!server_done && grpc_server_conn_step(sv) != 0) {
			server_done = 1;
			shutdown(fd[1], SHUT_RDWR);
		}
		done = grpc_client_step(cl, res);
		if (!done)
			poll(pfd, 2, 10);
	}
	snprintf(serr, serrlen, "%s", atls_error(sa));
	grpc_client_free(cl);
	grpc_server_conn_free(sv);
	atls_free(ca);
	atls_free(sa);
	close(fd[0]);
	close(fd[1]);
	return done ? 0 : -ETIMEDOUT;
}

TEST(grpc_over_atls_join_shape)
{
	struct atls_config ccfg = {.issuer = &attest_dummy_issuer};
	struct atls_config scfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct grpc_result r;
	char serr[256];

	CHECK(run(&ccfg, &scfg, &r, serr, sizeof serr) == 0);
	if (r.status != GRPC_OK)
		harness_fail(__FILE__, __LINE__, "status %d: %s; server: %s", r.status, r.message,
			     serr);
	CHECK(r.status == GRPC_OK);
	CHECK(r.response_len == 7 && !memcmp(r.response, "ticket?", 7));
	free(r.response);
}

/* A refused attestation surfaces as UNAVAILABLE on the client, as grpc-go reports a failed
 * handshake. */
TEST(grpc_over_atls_refused_attestation_is_unavailable)
{
	struct atls_config ccfg = {0}; /* no issuer: no client certificate */
	struct atls_config scfg = {.validators = &attest_dummy_validator, .n_validators = 1};
	struct grpc_result r;
	char serr[256];

	CHECK(run(&ccfg, &scfg, &r, serr, sizeof serr) == 0);
	if (r.status != GRPC_UNAVAILABLE)
		harness_fail(__FILE__, __LINE__, "status %d: %s; server: %s", r.status, r.message,
			     serr);
	CHECK(r.status == GRPC_UNAVAILABLE);
	CHECK(strstr(serr, "peer sent no client certificate") != NULL);
}
