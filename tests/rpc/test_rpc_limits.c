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

TEST(rpc_more_than_4_streams_on_a_connection_are_refused)
{
	int fd[2];
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

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	fcntl(fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&sio, &fd[1]);
	CHECK(grpc_server_conn_new(&sio, methods, 1, &sv) == 0);
	raw.fd = fd[0];
	CHECK(nghttp2_session_callbacks_new(&cb) == 0);
	nghttp2_session_callbacks_set_send_callback(cb, raw_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, raw_close);
	CHECK(nghttp2_session_client_new(&h, cb, &raw) == 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(h, NGHTTP2_FLAG_NONE, NULL, 0);
	/* Open streams without ending them (the requests never complete): held by the server. */
	for (int i = 0; i < 8; i++)
		raw.opened +=
		    nghttp2_submit_headers(h, NGHTTP2_FLAG_NONE, -1, NULL, hdrs, 5, NULL) > 0;
	start = rpc_now_ms();
	while (rpc_now_ms() - start < 2000 && raw.refused < 4) {
		struct pollfd pfd[2] = {{fd[0], POLLIN, 0},
					{fd[1], grpc_server_conn_events(sv), 0}};
		ssize_t n;

		nghttp2_session_send(h);
		if (grpc_server_conn_step(sv) != 0)
			break;
		while ((n = recv(fd[0], buf, sizeof buf, 0)) > 0)
			nghttp2_session_mem_recv(h, buf, (size_t)n);
		poll(pfd, 2, 10);
	}
	nghttp2_session_del(h);
	grpc_server_conn_free(sv);
	close(fd[0]);
	close(fd[1]);
	CHECK(raw.opened == 8);
	if (raw.refused != 4)
		harness_fail(__FILE__, __LINE__, "%d of 8 streams refused", raw.refused);
	CHECK(raw.refused == 4);
}
