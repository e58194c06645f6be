/* gRPC over HTTP/2 between our client and our server on a socketpair, driven by one poll
 * loop as in the agent: unary and streaming calls, statuses and messages, deadlines, size
 * limits and a vanished server. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "rpc/rpc.h"

static void echo(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	grpc_stream_send(s, req, len);
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static void refuse(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)req;
	(void)len;
	grpc_stream_finish(s, GRPC_INTERNAL, "bad: 100% \"x\"\n");
}

static void three(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)req;
	(void)len;
	grpc_stream_send(s, (const uint8_t *)"one", 3);
	grpc_stream_send(s, (const uint8_t *)"two", 3);
	grpc_stream_send(s, (const uint8_t *)"three", 5);
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static void one_then_fail(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)req;
	(void)len;
	grpc_stream_send(s, (const uint8_t *)"one", 3);
	grpc_stream_finish(s, GRPC_FAILED_PRECONDITION, "node is already being activated");
}

/* Never answers: the client's deadline must end the call. */
static void silent(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)s;
	(void)req;
	(void)len;
}

/* Keeps the stream to answer later from the poll loop, as the init server does (kubeadm). */
static struct grpc_stream *held;

static void hold(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)req;
	(void)len;
	held = s;
}

static const struct grpc_method methods[] = {
    {"/test.API/Echo", echo, NULL},	{"/test.API/Refuse", refuse, NULL},
    {"/test.API/Three", three, NULL},	{"/test.API/OneThenFail", one_then_fail, NULL},
    {"/test.API/Silent", silent, NULL}, {"/test.API/Hold", hold, NULL},
};

struct collected {
	int n;
	char msgs[4][16];
};

static void collect(void *arg, const uint8_t *msg, size_t len)
{
	struct collected *c = arg;

	if (c->n < 4 && len < 16) {
		memcpy(c->msgs[c->n], msg, len);
		c->msgs[c->n][len] = '\0';
	}
	c->n++;
}

/* One call from our client to our server; close_server_after_ms >= 0 closes the server's end
 * then. Bounded by the deadline plus a second. */
static int call(const char *path, const uint8_t *req, size_t len, int timeout_ms,
		struct collected *stream, int close_server_after_ms, struct grpc_result *res)
{
	int fd[2];
	struct rpc_io cio, sio;
	struct grpc_client *cl;
	struct grpc_server_conn *sv;
	int64_t start = rpc_now_ms();
	int done = 0, server_open = 1;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0)
		return -errno;
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&cio, &fd[0]);
	rpc_io_fd(&sio, &fd[1]);
	if (grpc_client_new(&cio, "localhost", &cl) < 0 ||
	    grpc_server_conn_new(&sio, methods, sizeof methods / sizeof methods[0], &sv) < 0)
		return -ENOMEM;
	if (stream)
		grpc_client_on_message(cl, collect, stream);
	grpc_client_call(cl, path, req, len, start + timeout_ms);
	while (!done && rpc_now_ms() - start < timeout_ms + 1000) {
		struct pollfd pfd[2] = {{fd[0], grpc_client_events(cl), 0},
					{server_open ? fd[1] : -1, 0, 0}};

		if (server_open) {
			pfd[1].events = grpc_server_conn_events(sv);
			if (grpc_server_conn_step(sv) != 0 ||
			    (close_server_after_ms >= 0 &&
			     rpc_now_ms() - start >= close_server_after_ms)) {
				grpc_server_conn_free(sv);
				sv = NULL;
				close(fd[1]);
				server_open = 0;
			}
		}
		done = grpc_client_step(cl, res);
		if (!done)
			poll(pfd, 2, 10);
	}
	grpc_client_free(cl);
	grpc_server_conn_free(sv);
	close(fd[0]);
	if (server_open)
		close(fd[1]);
	return done ? 0 : -ETIMEDOUT;
}

TEST(grpc_unary_echo)
{
	struct grpc_result r;

	CHECK(call("/test.API/Echo", (const uint8_t *)"hello", 5, 2000, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_OK);
	CHECK(r.response_len == 5 && !memcmp(r.response, "hello", 5));
	free(r.response);
}

TEST(grpc_empty_request_and_response)
{
	struct grpc_result r;

	CHECK(call("/test.API/Echo", NULL, 0, 2000, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_OK && r.response_len == 0);
	free(r.response);
}

TEST(grpc_error_status_and_percent_encoded_message)
{
	struct grpc_result r;

	CHECK(call("/test.API/Refuse", (const uint8_t *)"x", 1, 2000, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_INTERNAL);
	CHECK(!strcmp(r.message, "bad: 100% \"x\"\n"));
}

TEST(grpc_unknown_method_is_unimplemented)
{
	struct grpc_result r;

	CHECK(call("/test.API/Nope", (const uint8_t *)"x", 1, 2000, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_UNIMPLEMENTED);
	CHECK(strstr(r.message, "/test.API/Nope") != NULL);
}

TEST(grpc_server_streaming_three_messages)
{
	struct grpc_result r;
	struct collected got = {0};

	CHECK(call("/test.API/Three", (const uint8_t *)"x", 1, 2000, &got, -1, &r) == 0);
	CHECK(r.status == GRPC_OK);
	CHECK(got.n == 3 && !strcmp(got.msgs[0], "one") && !strcmp(got.msgs[2], "three"));
}

TEST(grpc_stream_fails_after_one_message)
{
	struct grpc_result r;
	struct collected got = {0};

	CHECK(call("/test.API/OneThenFail", (const uint8_t *)"x", 1, 2000, &got, -1, &r) == 0);
	CHECK(r.status == GRPC_FAILED_PRECONDITION && got.n == 1);
	CHECK(!strcmp(r.message, "node is already being activated"));
}

TEST(grpc_unary_with_two_messages_is_an_error)
{
	struct grpc_result r;

	CHECK(call("/test.API/Three", (const uint8_t *)"x", 1, 2000, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_INTERNAL);
}

TEST(grpc_deadline_exceeded_when_server_is_silent)
{
	struct grpc_result r;
	int64_t t0 = rpc_now_ms();

	CHECK(call("/test.API/Silent", (const uint8_t *)"x", 1, 200, NULL, -1, &r) == 0);
	CHECK(r.status == GRPC_DEADLINE_EXCEEDED);
	CHECK(rpc_now_ms() - t0 < 3000); /* the 200 ms deadline, with room for a loaded machine */
}

TEST(grpc_request_over_4_mib_is_resource_exhausted)
{
	struct grpc_result r;
	size_t n = GRPC_MAX_MESSAGE + 1;
	uint8_t *big = calloc(1, n);

	CHECK(big);
	CHECK(call("/test.API/Echo", big, n, 10000, NULL, -1, &r) == 0);
	free(big);
	CHECK(r.status == GRPC_RESOURCE_EXHAUSTED);
}

TEST(grpc_vanished_server_is_unavailable)
{
	struct grpc_result r;

	CHECK(call("/test.API/Silent", (const uint8_t *)"x", 1, 3000, NULL, 100, &r) == 0);
	CHECK(r.status == GRPC_UNAVAILABLE);
}

/* Keepalive (spec §5.5): an idle connection gets PINGs, and our client ACKs them (through
 * nghttp2) while it waits for a slow answer, so the connection survives. */
TEST(grpc_keepalive_pings_are_acked_by_our_client)
{
	int fd[2], sent = 0, acked = 0, r = 0;
	struct rpc_io cio, sio;
	struct grpc_client *cl;
	struct grpc_server_conn *sv;
	struct grpc_result res;
	int64_t start = rpc_now_ms();

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&cio, &fd[0]);
	rpc_io_fd(&sio, &fd[1]);
	CHECK(grpc_client_new(&cio, "localhost", &cl) == 0);
	CHECK(grpc_server_conn_new(&sio, methods, sizeof methods / sizeof methods[0], &sv) == 0);
	grpc_server_conn_set_keepalive(sv, 100, 300);
	grpc_client_call(cl, "/test.API/Silent", (const uint8_t *)"x", 1, start + 5000);
	while (rpc_now_ms() - start < 1200 && r == 0) {
		struct pollfd pfd[2] = {{fd[0], grpc_client_events(cl), 0},
					{fd[1], grpc_server_conn_events(sv), 0}};

		r = grpc_server_conn_step(sv);
		if (grpc_client_step(cl, &res) != 0)
			break;
		poll(pfd, 2, 10);
	}
	grpc_server_conn_ping_stats(sv, &sent, &acked);
	grpc_client_free(cl);
	grpc_server_conn_free(sv);
	close(fd[0]);
	close(fd[1]);
	CHECK(r == 0);
	if (sent < 3 || acked < sent - 1)
		harness_fail(__FILE__, __LINE__, "%d pings sent, %d acked", sent, acked);
}

/* A peer that speaks HTTP/2 but never ACKs a PING loses the connection after the timeout. */
TEST(grpc_keepalive_closes_a_peer_that_does_not_ack)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
				      "\x00\x00\x00\x04\x00\x00\x00\x00\x00"; /* empty SETTINGS */
	int fd[2], r = 0, sent = 0, acked = 0;
	struct rpc_io sio;
	struct grpc_server_conn *sv;
	int64_t start = rpc_now_ms();
	char sink[4096];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&sio, &fd[1]);
	CHECK(grpc_server_conn_new(&sio, methods, sizeof methods / sizeof methods[0], &sv) == 0);
	grpc_server_conn_set_keepalive(sv, 100, 300);
	CHECK(write(fd[0], preface, sizeof preface - 1) == (ssize_t)(sizeof preface - 1));
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	while (rpc_now_ms() - start < 5000 && r == 0) {
		struct pollfd pfd = {fd[1], grpc_server_conn_events(sv), 0};

		r = grpc_server_conn_step(sv);
		while (read(fd[0], sink, sizeof sink) > 0) /* read everything, answer nothing */
			;
		poll(&pfd, 1, 10);
	}
	grpc_server_conn_ping_stats(sv, &sent, &acked);
	grpc_server_conn_free(sv);
	close(fd[0]);
	close(fd[1]);
	CHECK(r == -ETIMEDOUT);
	CHECK(sent == 1 && acked == 0);
	CHECK(rpc_now_ms() - start < 2500); /* 100 ms idle + 300 ms for the ACK, room for load */
}

/* A client that vanishes (killed: no RST_STREAM, just the end of its connection) while a
 * handler holds its stream: the server's step ends the connection, the stream is closed
 * with it, and the handler's late send and finish fail (-EPIPE) instead of "succeeding" into
 * the dead connection; then the connection is no longer busy and is freed (ASan: no use after
 * free, no leak). */
TEST(grpc_late_send_after_the_connection_ended_fails)
{
	int fd[2], r = 0, busy, sent, finished;
	struct rpc_io cio, sio;
	struct grpc_client *cl;
	struct grpc_server_conn *sv;
	struct grpc_result res;
	int64_t start = rpc_now_ms();

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&cio, &fd[0]);
	rpc_io_fd(&sio, &fd[1]);
	CHECK(grpc_client_new(&cio, "localhost", &cl) == 0);
	CHECK(grpc_server_conn_new(&sio, methods, sizeof methods / sizeof methods[0], &sv) == 0);
	held = NULL;
	grpc_client_call(cl, "/test.API/Hold", (const uint8_t *)"x", 1, start + 5000);
	while (!held && rpc_now_ms() - start < 2000) {
		struct pollfd pfd[2] = {{fd[0], grpc_client_events(cl), 0},
					{fd[1], grpc_server_conn_events(sv), 0}};

		grpc_server_conn_step(sv);
		grpc_client_step(cl, &res);
		poll(pfd, 2, 10);
	}
	CHECK(held != NULL);
	close(fd[0]); /* the client is killed */
	while (r == 0 && rpc_now_ms() - start < 4000) {
		struct pollfd pfd = {fd[1], grpc_server_conn_events(sv), 0};

		r = grpc_server_conn_step(sv);
		poll(&pfd, 1, 10);
	}
	CHECK(r != 0);
	busy = grpc_server_conn_busy(sv);
	sent = held ? grpc_stream_send(held, (const uint8_t *)"late", 4) : 0;
	finished = held ? grpc_stream_finish(held, GRPC_OK, NULL) : 0;
	CHECK(busy == 1);
	if (sent != -EPIPE || finished != -EPIPE)
		harness_fail(__FILE__, __LINE__, "late send %d, finish %d (want %d)", sent,
			     finished, -EPIPE);
	CHECK(grpc_server_conn_busy(sv) == 0);
	CHECK(grpc_server_conn_step(sv) == r);
	grpc_server_conn_free(sv);
	grpc_client_free(cl);
	close(fd[1]);
}
