/* What a hostile peer cannot make the rpc layer hold: a claimed 4 MiB message takes memory
 * only as its bytes arrive, all connections together stay under one budget, and a connection
 * gets at most 4 concurrent streams (a raw nghttp2 client opens 8 against our server). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "harness.h"
#include "rpc/rpc.h"

TEST(rpc_claimed_4_mib_message_does_not_allocate_4_mib)
{
	struct grpc_deframer d;
	const uint8_t hdr[5 + 10] = {0, 0x00, 0x40, 0x00, 0x00}; /* 4 MiB claimed, 10 bytes sent */
	size_t used;

	grpc_deframer_init(&d, GRPC_MAX_MESSAGE);
	CHECK(grpc_deframer_push(&d, hdr, sizeof hdr, &used) == 0);
	CHECK(used == sizeof hdr);
	CHECK(d.msg != NULL);
	if (malloc_usable_size(d.msg) >= 64 * 1024)
		harness_fail(__FILE__, __LINE__, "%zu bytes held for 10 received",
			     malloc_usable_size(d.msg));
	CHECK(malloc_usable_size(d.msg) < 64 * 1024);
	grpc_deframer_free(&d);
}

/* Many connections' messages together: one of them is refused before they pass the budget. */
TEST(rpc_all_messages_together_stay_under_one_budget)
{
	enum { N = 20 };
	static struct grpc_deframer d[N];
	static uint8_t body[4 * 1024 * 1024 - 1];
	const uint8_t hdr[5] = {0, 0x00, 0x3f, 0xff, 0xff};
	int refused = -1;

	for (int i = 0; i < N && refused < 0; i++) {
		size_t used;
		int r;

		grpc_deframer_init(&d[i], GRPC_MAX_MESSAGE);
		r = grpc_deframer_push(&d[i], hdr, 5, &used);
		/* all but the last byte: the messages stay in the deframers */
		if (r == 0)
			r = grpc_deframer_push(&d[i], body, sizeof body - 1, &used);
		if (r < 0) {
			CHECK(r == -ENOBUFS);
			refused = i;
		}
	}
	for (int i = 0; i < N; i++)
		grpc_deframer_free(&d[i]);
	if (refused < 0)
		harness_fail(__FILE__, __LINE__, "%d messages of 4 MiB held at once", N);
	CHECK(refused >= 0 && (size_t)refused * 4 <= 64);
}

static void hold(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	(void)req;
	(void)len;
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static const struct grpc_method methods[] = {{"/test.API/Hold", hold, NULL}};

struct raw {
	int fd, refused, opened;
};

static ssize_t raw_send(nghttp2_session *h, const uint8_t *data, size_t len, int flags, void *u)
{
	ssize_t n = send(((struct raw *)u)->fd, data, len, MSG_NOSIGNAL);

	(void)h;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

static int raw_close(nghttp2_session *h, int32_t id, uint32_t err, void *u)
{
	(void)h;
	(void)id;
	if (err == NGHTTP2_REFUSED_STREAM)
		((struct raw *)u)->refused++;
	return 0;
}

/* A raw nghttp2 client on a socketpair against our server, opening n_streams requests that
 * never end; runs until the server ends the connection, refused streams reach want_refused
 * or max_ms pass. Returns the server's last step result; *refused, *ended_ms what was seen. */
static int raw_run(int n_streams, int want_refused, int idle_ms, int request_ms, int max_ms,
		   int *refused, int64_t *ended_ms)
{
	int fd[2], r = 0;
	struct rpc_io sio;
	struct grpc_server_conn *sv;
	nghttp2_session_callbacks *cb;
	nghttp2_session *h;
	struct raw raw = {0};
	int64_t start;
	uint8_t buf[16384];
	nghttp2_nv hdrs[] = {
	    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":path", (uint8_t *)"/test.API/Hold", 5, 14, 0},
	    {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
	    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
	};

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0)
		return -errno;
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&sio, &fd[1]);
	if (grpc_server_conn_new(&sio, methods, 1, &sv) < 0)
		return -ENOMEM;
	if (idle_ms)
		grpc_server_conn_set_deadlines(sv, idle_ms, request_ms);
	raw.fd = fd[0];
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, raw_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, raw_close);
	nghttp2_session_client_new(&h, cb, &raw);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(h, NGHTTP2_FLAG_NONE, NULL, 0);
	/* Streams that are opened and never ended: the requests stay incomplete. */
	for (int i = 0; i < n_streams; i++)
		raw.opened +=
		    nghttp2_submit_headers(h, NGHTTP2_FLAG_NONE, -1, NULL, hdrs, 5, NULL) > 0;
	start = rpc_now_ms();
	*ended_ms = -1;
	while (rpc_now_ms() - start < max_ms && raw.refused < want_refused) {
		struct pollfd pfd[2] = {{fd[0], POLLIN, 0},
					{fd[1], grpc_server_conn_events(sv), 0}};
		ssize_t n;

		nghttp2_session_send(h);
		r = grpc_server_conn_step(sv);
		if (r != 0) {
			*ended_ms = rpc_now_ms() - start;
			break;
		}
		while ((n = recv(fd[0], buf, sizeof buf, 0)) > 0)
			nghttp2_session_mem_recv(h, buf, (size_t)n);
		poll(pfd, 2, 10);
	}
	nghttp2_session_del(h);
	grpc_server_conn_free(sv);
	close(fd[0]);
	close(fd[1]);
	*refused = raw.refused;
	return raw.opened == n_streams ? r : -EIO;
}

TEST(rpc_more_than_4_streams_on_a_connection_are_refused)
{
	int refused;
	int64_t ended;

	CHECK(raw_run(8, 4, 0, 0, 2000, &refused, &ended) == 0);
	if (refused != 4)
		harness_fail(__FILE__, __LINE__, "%d of 8 streams refused", refused);
	CHECK(refused == 4);
}

/* A request that never ends (slowloris) ends the connection at the request deadline. */
TEST(rpc_a_request_that_never_ends_closes_the_connection)
{
	int refused;
	int64_t ended;

	CHECK(raw_run(1, 1, 60000, 300, 3000, &refused, &ended) == -ETIMEDOUT);
	CHECK(ended >= 250 && ended < 2000);
}

/* A connection without any stream ends at the idle deadline. */
TEST(rpc_an_idle_connection_is_closed)
{
	int refused;
	int64_t ended;

	CHECK(raw_run(0, 1, 300, 30000, 3000, &refused, &ended) == -ETIMEDOUT);
	CHECK(ended >= 250 && ended < 2000);
}
