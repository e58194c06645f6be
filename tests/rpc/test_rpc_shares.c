/* The memory a server connection holds for its peer (issue 23): a complete request stays in
 * the budget until its stream is freed, a second request message on a unary stream resets
 * it, a connection past its own share is closed, and when the budget is full the reclaim
 * policy is asked to close the largest holder before the newcomer is refused. A raw nghttp2
 * client on a socketpair sends gRPC messages without END_STREAM to our server. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "harness.h"
#include "rpc/rpc.h"

static int handled;

static void hold(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	handled++;
	(void)ctx;
	(void)req;
	(void)len;
	grpc_stream_finish(s, GRPC_OK, NULL);
}

static const struct grpc_method methods[] = {{"/test.API/Hold", hold, NULL}};

struct peer {
	int fd[2];
	struct rpc_io sio;
	struct grpc_server_conn *sv;
	nghttp2_session *h;
	uint8_t *out; /* the framed messages the client sends */
	size_t out_len, out_off;
	uint32_t reset_err;
	int closed, ended; /* closed: the stream; ended: the server's step result */
	int end_stream;	   /* the request ends after its messages */
};

static ssize_t peer_send(nghttp2_session *h, const uint8_t *data, size_t len, int flags, void *u)
{
	ssize_t n = send(((struct peer *)u)->fd[0], data, len, MSG_NOSIGNAL);

	(void)h;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

static int peer_close(nghttp2_session *h, int32_t id, uint32_t err, void *u)
{
	struct peer *p = u;

	(void)h;
	(void)id;
	p->closed = 1;
	p->reset_err = err;
	return 0;
}

/* All messages, then EOF without END_STREAM (the request never ends) unless end_stream. */
static ssize_t peer_read(nghttp2_session *h, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *u)
{
	struct peer *p = src->ptr;
	size_t n = p->out_len - p->out_off < len ? p->out_len - p->out_off : len;

	(void)h;
	(void)id;
	(void)u;
	memcpy(buf, p->out + p->out_off, n);
	p->out_off += n;
	if (p->out_off == p->out_len)
		*flags |=
		    NGHTTP2_DATA_FLAG_EOF | (p->end_stream ? 0 : NGHTTP2_DATA_FLAG_NO_END_STREAM);
	return (ssize_t)n;
}

/* A peer on its own server connection (counted against acct when set), one stream carrying
 * n messages of len bytes each. */
static int peer_new(struct peer *p, struct rpc_mem_account *acct, int n, size_t len)
{
	nghttp2_session_callbacks *cb;
	nghttp2_nv hdrs[] = {
	    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":path", (uint8_t *)"/test.API/Hold", 5, 14, 0},
	    {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
	    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
	};
	nghttp2_data_provider dp = {.source.ptr = p, .read_callback = peer_read};

	memset(p, 0, sizeof *p);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p->fd) < 0)
		return -errno;
	fcntl(p->fd[0], F_SETFL, O_NONBLOCK);
	fcntl(p->fd[1], F_SETFL, O_NONBLOCK);
	rpc_io_fd(&p->sio, &p->fd[1]);
	if (grpc_server_conn_new_for(&p->sio, methods, 1, acct, &p->sv) < 0)
		return -ENOMEM;
	p->out_len = (size_t)n * (len + 5);
	p->out = calloc(1, p->out_len);
	if (!p->out)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		uint8_t *m = p->out + (size_t)i * (len + 5);

		m[1] = (uint8_t)(len >> 24);
		m[2] = (uint8_t)(len >> 16);
		m[3] = (uint8_t)(len >> 8);
		m[4] = (uint8_t)len;
	}
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, peer_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, peer_close);
	nghttp2_session_client_new(&p->h, cb, p);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(p->h, NGHTTP2_FLAG_NONE, NULL, 0);
	return nghttp2_submit_request(p->h, NULL, hdrs, 5, &dp, NULL) > 0 ? 0 : -EIO;
}

/* Runs both sides until all is sent and the server has read it (or the stream closed, or
 * the server ended the connection), at most max_ms. */
static void peer_run(struct peer *p, int max_ms)
{
	int64_t start = rpc_now_ms(), quiet = 0;
	uint8_t buf[16384];

	while (!p->ended && !p->closed && rpc_now_ms() - start < max_ms) {
		struct pollfd pfd[2] = {{p->fd[0], POLLIN, 0},
					{p->fd[1], grpc_server_conn_events(p->sv), 0}};
		ssize_t n;

		nghttp2_session_send(p->h);
		p->ended = grpc_server_conn_step(p->sv);
		while ((n = recv(p->fd[0], buf, sizeof buf, 0)) > 0)
			nghttp2_session_mem_recv(p->h, buf, (size_t)n);
		/* all sent and a few quiet rounds after it: the server has what it will get */
		if (p->out_off == p->out_len && ++quiet > 20)
			break;
		poll(pfd, 2, 5);
	}
}

static void peer_free(struct peer *p)
{
	nghttp2_session_del(p->h);
	grpc_server_conn_free(p->sv);
	close(p->fd[0]);
	close(p->fd[1]);
	free(p->out);
}

TEST(rpc_a_complete_request_stays_counted_until_its_stream_ends)
{
	struct peer p;
	size_t before = rpc_mem_in_use(), held;

	CHECK(peer_new(&p, NULL, 1, 2 << 20) == 0);
	peer_run(&p, 5000);
	held = rpc_mem_in_use() - before;
	CHECK(!p.ended && !p.closed);
	peer_free(&p);
	if (held < 2 << 20)
		harness_fail(__FILE__, __LINE__, "%zu bytes counted for a complete 2 MiB request",
			     held);
	CHECK(held >= 2 << 20);
	CHECK(rpc_mem_in_use() == before);
}

TEST(rpc_a_second_request_message_resets_the_stream)
{
	struct peer p;
	size_t before = rpc_mem_in_use();

	CHECK(peer_new(&p, NULL, 2, 10) == 0);
	peer_run(&p, 2000);
	/* the server's RST_STREAM reaches the client with the next round */
	for (int i = 0; i < 10 && !p.closed; i++) {
		p.out_off = 0;
		peer_run(&p, 100);
	}
	CHECK(p.closed && p.reset_err == NGHTTP2_PROTOCOL_ERROR);
	CHECK(!p.ended); /* the connection lives on */
	peer_free(&p);
	CHECK(rpc_mem_in_use() == before);
}

TEST(rpc_a_connection_past_its_share_is_closed)
{
	struct peer p;
	struct rpc_mem_account acct = {.cap = 1 << 20};

	CHECK(peer_new(&p, &acct, 1, 2 << 20) == 0);
	peer_run(&p, 5000);
	CHECK(p.ended == -ENOBUFS);
	CHECK(acct.used <= 1 << 20);
	peer_free(&p);
	CHECK(acct.used == 0);
}

static struct peer *victim;
static int reclaims;

/* The test's policy: close the victim when it holds more than the one asking. */
static int close_victim(void *ctx, const struct rpc_mem_account *who,
			const struct rpc_mem_account *within)
{
	struct rpc_mem_account *a = ctx;

	(void)within;
	reclaims++;
	if (!victim || a->used <= (who ? who->used : 0))
		return 0;
	grpc_server_conn_free(victim->sv);
	victim->sv = NULL;
	victim = NULL;
	return 1;
}

TEST(rpc_a_full_budget_closes_the_largest_holder_first)
{
	struct peer big, small;
	struct rpc_mem_account a = {0}, b = {0};
	size_t fill;

	CHECK(peer_new(&big, &a, 1, 3 << 20) == 0);
	peer_run(&big, 5000);
	CHECK(!big.ended && a.used >= 3 << 20);
	/* the rest of the budget taken but for 256 KiB: the newcomer needs room */
	fill = RPC_MEM_BUDGET - rpc_mem_in_use() - (256 << 10);
	CHECK(rpc_mem_take(fill) == 0);
	victim = &big;
	reclaims = 0;
	rpc_mem_set_reclaim(close_victim, &a);
	CHECK(peer_new(&small, &b, 1, 1 << 20) == 0);
	peer_run(&small, 5000);
	rpc_mem_set_reclaim(NULL, NULL);
	rpc_mem_give(fill);
	CHECK(reclaims >= 1 && !victim);
	CHECK(!small.ended && b.used >= 1 << 20);
	CHECK(a.used == 0);
	peer_free(&small);
	nghttp2_session_del(big.h);
	close(big.fd[0]);
	close(big.fd[1]);
	free(big.out);
}

/* Steps both sides for ms (or until the stream closed when until_closed). */
static void peer_wait(struct peer *p, int ms, int until_closed)
{
	int64_t start = rpc_now_ms();
	uint8_t buf[16384];

	while (!p->ended && !(until_closed && p->closed) && rpc_now_ms() - start < ms) {
		struct pollfd pfd[2] = {{p->fd[0], POLLIN, 0},
					{p->fd[1], grpc_server_conn_events(p->sv), 0}};
		ssize_t n;

		nghttp2_session_send(p->h);
		p->ended = grpc_server_conn_step(p->sv);
		while ((n = recv(p->fd[0], buf, sizeof buf, 0)) > 0)
			nghttp2_session_mem_recv(p->h, buf, (size_t)n);
		poll(pfd, 2, 5);
	}
}

/* Gated (the aTLS servers): a complete request runs its handler only when dispatched. */
TEST(rpc_a_gated_request_waits_for_its_dispatch)
{
	struct peer p;

	handled = 0;
	CHECK(peer_new(&p, NULL, 1, 10) == 0);
	p.end_stream = 1;
	grpc_server_conn_set_gated(p.sv, 60000);
	peer_wait(&p, 300, 1);
	CHECK(!p.closed && handled == 0 && grpc_server_conn_waiting(p.sv) > 0);
	CHECK(grpc_server_conn_dispatch(p.sv) == 1);
	CHECK(handled == 1 && !grpc_server_conn_waiting(p.sv));
	CHECK(grpc_server_conn_dispatch(p.sv) == 0);
	peer_wait(&p, 2000, 1);
	CHECK(p.closed && p.reset_err == NGHTTP2_NO_ERROR);
	peer_free(&p);
}

/* One that waits past the queue deadline is answered (UNAVAILABLE) without its handler. */
TEST(rpc_a_gated_request_waiting_too_long_is_answered_without_its_handler)
{
	struct peer p;
	int64_t t0 = rpc_now_ms();

	handled = 0;
	CHECK(peer_new(&p, NULL, 1, 10) == 0);
	p.end_stream = 1;
	grpc_server_conn_set_gated(p.sv, 300);
	peer_wait(&p, 3000, 1);
	CHECK(p.closed && p.reset_err == NGHTTP2_NO_ERROR && handled == 0);
	CHECK(rpc_now_ms() - t0 >= 300 && !p.ended);
	peer_free(&p);
}
