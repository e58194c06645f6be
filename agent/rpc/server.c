/* gRPC server connection over nghttp2: dispatches requests by :path to unary or
 * server-streaming handlers, sends messages as the handler produces them (now or later from
 * the poll loop), ends each stream with grpc-status/grpc-message trailers (Trailers-Only when
 * nothing was sent), refuses requests over 4 MiB, and pings an idle client every 15 s as the
 * Go init server does (spec §5.5, §12). Against hostile peers: 4 streams per connection, a
 * request must end within 30 s, 60 s without a stream ends the connection, and every buffer
 * that held a body is wiped before it is freed or grown, a request stays in the memory budget
 * until its stream is freed, and a stream that sends a second request message is reset (a
 * unary call has one). When the connection ends, its streams are closed: a handler's later
 * send fails instead of going nowhere. Gated (the aTLS servers): a complete request waits
 * for the caller's admission before its handler runs. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "base/base.h"
#include "rpc.h"
#include "rpc_internal.h"

#define OUT_MAX		    (8 * 1024 * 1024) /* queued response bytes per stream */
#define PING_ACK_TIMEOUT_MS 20000
#define MAX_STREAMS	    4	  /* concurrent streams per connection (the CLI uses one) */
#define IDLE_MS		    60000 /* without a request byte or a request being handled */
#define REQUEST_MS	    30000 /* from a request's HEADERS to its end (a slow peer's bytes) */
#define READS_PER_STEP	    16	  /* then the other connections get their turn */

struct grpc_stream {
	struct grpc_server_conn *conn;
	int32_t id;
	char path[256];
	struct grpc_deframer df;
	uint8_t *req;
	size_t req_len, req_counted; /* req_counted: its bytes in the budget */
	int n_req, bad_req, reset;
	int ready; /* gated: complete, waiting for its dispatch since ready_ms */
	int64_t ready_ms;
	uint8_t *out;
	size_t out_len, out_off;
	/* closed: 1 by the peer (RST_STREAM, the stream's end), -EPIPE with its connection */
	int headers_sent, finished, closed, deferred, status, handled, dispatched;
	int64_t opened_ms;
	char message[512];
	struct grpc_stream *next;
};

struct grpc_server_conn {
	struct rpc_io io;
	nghttp2_session *h2;
	const struct grpc_method *methods;
	size_t n_methods;
	struct grpc_stream *streams;
	int64_t last_activity, ping_sent, last_request;
	int ping_outstanding, keepalive_ms, ack_timeout_ms, idle_ms, request_ms, failed, more,
	    n_streams;
	int pings_sent, pings_acked;
	int ended; /* what the step that ended it returned (1: a clean end) */
	int gated, queue_ms;
	nghttp2_mem mem;
	struct rpc_mem_account own, *acct; /* acct: own, or the caller's */
	uint8_t rbuf[16384];
};

static void stream_free(struct grpc_stream *s)
{
	struct grpc_stream **p;

	for (p = &s->conn->streams; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	s->conn->n_streams--;
	grpc_deframer_free(&s->df);
	rpc_mem_give_for(s->conn->acct, s->req_counted);
	rpc_free(s->req);
	rpc_free(s->out);
	rpc_free(s);
}

static ssize_t on_send(nghttp2_session *h, const uint8_t *data, size_t len, int flags, void *u)
{
	struct grpc_server_conn *c = u;
	ssize_t n = rpc_h2_write(&c->io, data, len);

	(void)h;
	(void)flags;
	if (n == NGHTTP2_ERR_CALLBACK_FAILURE)
		c->failed = -EPIPE;
	return n;
}

static ssize_t read_response(nghttp2_session *h, int32_t id, uint8_t *buf, size_t len,
			     uint32_t *flags, nghttp2_data_source *src, void *u)
{
	struct grpc_stream *s = src->ptr;
	size_t n = s->out_len - s->out_off;

	(void)u;
	if (n > len)
		n = len;
	if (n) {
		memcpy(buf, s->out + s->out_off, n);
		s->out_off += n;
	}
	if (s->out_off < s->out_len)
		return (ssize_t)n;
	if (!s->finished) {
		if (n > 0)
			return (ssize_t)n;
		s->deferred = 1;
		return NGHTTP2_ERR_DEFERRED;
	}
	/* All sent and the handler finished: end with the status trailers. */
	{
		char st[8], msg[1024];

		snprintf(st, sizeof st, "%d", s->status);
		grpc_percent_encode(s->message, msg, sizeof msg);
		nghttp2_nv tr[] = {
		    {(uint8_t *)"grpc-status", (uint8_t *)st, 11, strlen(st), NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"grpc-message", (uint8_t *)msg, 12, strlen(msg),
		     NGHTTP2_NV_FLAG_NONE},
		};

		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(h, id, tr, msg[0] ? 2 : 1) != 0)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

static int send_headers(struct grpc_stream *s)
{
	nghttp2_nv hdrs[] = {
	    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
	    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16,
	     NGHTTP2_NV_FLAG_NONE},
	};
	nghttp2_data_provider dp = {.source.ptr = s, .read_callback = read_response};

	s->headers_sent = 1;
	return nghttp2_submit_response(s->conn->h2, s->id, hdrs, 2, &dp) ? -EIO : 0;
}

int grpc_stream_send(struct grpc_stream *s, const uint8_t *msg, size_t len)
{
	uint8_t *p;

	if (s->closed)
		return s->closed < 0 ? s->closed : -ECONNRESET;
	if (s->finished)
		return -EINVAL;
	if (len > GRPC_MAX_MESSAGE || s->out_len - s->out_off + len + 5 > OUT_MAX)
		return -EMSGSIZE;
	/* Drop what was sent, then append the framed message. */
	if (s->out_off) {
		memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
		s->out_len -= s->out_off;
		s->out_off = 0;
	}
	/* A fresh block and the old one wiped: no realloc, which would leave the old bytes
	 * (a kubeconfig's key) in freed heap. */
	p = malloc(s->out_len + 5 + len);
	if (!p)
		return -ENOMEM;
	if (s->out_len)
		memcpy(p, s->out, s->out_len);
	rpc_free(s->out);
	s->out = p;
	grpc_frame_header(s->out + s->out_len, len);
	if (len)
		memcpy(s->out + s->out_len + 5, msg, len);
	s->out_len += 5 + len;
	if (!s->headers_sent)
		return send_headers(s);
	if (s->deferred) {
		s->deferred = 0;
		nghttp2_session_resume_data(s->conn->h2, s->id);
	}
	return 0;
}

int grpc_stream_finish(struct grpc_stream *s, int status, const char *message)
{
	if (s->finished)
		return -EINVAL;
	s->finished = 1;
	s->status = status;
	snprintf(s->message, sizeof s->message, "%s", message ? message : "");
	if (s->closed) {
		int r = s->closed < 0 ? s->closed : -ECONNRESET;

		stream_free(s);
		return r;
	}
	if (!s->headers_sent) {
		/* Trailers-Only: the status in the response headers, which end the stream. */
		char st[8], msg[1024];

		snprintf(st, sizeof st, "%d", status);
		grpc_percent_encode(s->message, msg, sizeof msg);
		nghttp2_nv hdrs[] = {
		    {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16,
		     NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"grpc-status", (uint8_t *)st, 11, strlen(st), NGHTTP2_NV_FLAG_NONE},
		    {(uint8_t *)"grpc-message", (uint8_t *)msg, 12, strlen(msg),
		     NGHTTP2_NV_FLAG_NONE},
		};

		s->headers_sent = 1;
		return nghttp2_submit_response(s->conn->h2, s->id, hdrs, msg[0] ? 4 : 3, NULL)
			   ? -EIO
			   : 0;
	}
	if (s->deferred) {
		s->deferred = 0;
		nghttp2_session_resume_data(s->conn->h2, s->id);
	}
	return 0;
}

static int on_begin_headers(nghttp2_session *h, const nghttp2_frame *f, void *u)
{
	struct grpc_server_conn *c = u;
	struct grpc_stream *s;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	c->last_request = rpc_now_ms();
	/* nghttp2 refuses streams past our SETTINGS once the peer knows them; ours counts the
	 * streams a handler still holds too. */
	if (c->n_streams >= MAX_STREAMS) {
		nghttp2_submit_rst_stream(h, NGHTTP2_FLAG_NONE, f->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	s = calloc(1, sizeof *s);
	if (!s)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	s->conn = c;
	s->id = f->hd.stream_id;
	s->opened_ms = c->last_request;
	grpc_deframer_init(&s->df, GRPC_MAX_MESSAGE);
	s->df.acct = c->acct;
	s->next = c->streams;
	c->streams = s;
	c->n_streams++;
	nghttp2_session_set_stream_user_data(h, s->id, s);
	return 0;
}

static int on_header(nghttp2_session *h, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
		     const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
	struct grpc_stream *s = nghttp2_session_get_stream_user_data(h, f->hd.stream_id);

	(void)flags;
	(void)u;
	if (!s)
		return 0;
	if (nlen == 5 && !memcmp(name, ":path", 5)) {
		if (vlen >= sizeof s->path)
			vlen = sizeof s->path - 1;
		memcpy(s->path, value, vlen);
		s->path[vlen] = '\0';
	}
	return 0;
}

static int on_data(nghttp2_session *h, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *u)
{
	struct grpc_stream *s = nghttp2_session_get_stream_user_data(h, id);
	struct grpc_server_conn *c = u;

	(void)flags;
	c->last_request = rpc_now_ms();
	if (!s || s->bad_req)
		return 0;
	while (len > 0) {
		size_t used;
		int r = grpc_deframer_push(&s->df, data, len, &used);

		if (r == -ENOBUFS || r == -ENOMEM) {
			c->failed = r;
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
		if (r < 0) {
			s->bad_req = r;
			return 0;
		}
		data += used;
		len -= used;
		if (r == 1 && s->n_req) {
			/* unary: one request message; a second is a peer holding memory */
			size_t n, counted;

			rpc_free(grpc_deframer_keep(&s->df, &n, &counted));
			rpc_mem_give_for(c->acct, counted);
			log_debug("rpc: resetting stream %d: a second request message", id);
			s->bad_req = -EPROTO;
			s->reset = 1;
			nghttp2_submit_rst_stream(h, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
			return 0;
		}
		if (r == 1) {
			s->req = grpc_deframer_keep(&s->df, &s->req_len, &s->req_counted);
			s->n_req++;
		}
	}
	return 0;
}

static const struct grpc_method *method_of(const struct grpc_server_conn *c,
					   const struct grpc_stream *s)
{
	for (size_t i = 0; i < c->n_methods; i++)
		if (!strcmp(c->methods[i].path, s->path))
			return &c->methods[i];
	return NULL;
}

static void dispatch(struct grpc_server_conn *c, struct grpc_stream *s)
{
	char why[300];

	s->dispatched = 1;
	if (s->bad_req == -EMSGSIZE) {
		grpc_stream_finish(s, GRPC_RESOURCE_EXHAUSTED, "request message larger than 4 MiB");
		return;
	}
	if (s->bad_req) {
		grpc_stream_finish(s, GRPC_INTERNAL, "malformed or compressed request message");
		return;
	}
	for (size_t i = 0; i < c->n_methods; i++) {
		if (strcmp(c->methods[i].path, s->path))
			continue;
		if (s->n_req != 1) {
			grpc_stream_finish(s, GRPC_INTERNAL,
					   "expected exactly one request message");
			return;
		}
		s->handled = 1;
		c->methods[i].handle(c->methods[i].ctx, s, s->req, s->req_len);
		return;
	}
	snprintf(why, sizeof why, "unknown method %.250s", s->path);
	grpc_stream_finish(s, GRPC_UNIMPLEMENTED, why);
}

static int on_frame_recv(nghttp2_session *h, const nghttp2_frame *f, void *u)
{
	struct grpc_server_conn *c = u;
	struct grpc_stream *s;

	if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
		c->ping_outstanding = 0;
		c->pings_acked++;
		return 0;
	}
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	s = nghttp2_session_get_stream_user_data(h, f->hd.stream_id);
	if (!s || s->reset)
		return 0;
	if (c->gated && !s->bad_req && s->n_req == 1 && method_of(c, s)) {
		/* a handler's work: when the caller admits it (refusals stay immediate) */
		s->ready = 1;
		s->ready_ms = rpc_now_ms();
		return 0;
	}
	dispatch(c, s);
	return 0;
}

static int on_close(nghttp2_session *h, int32_t id, uint32_t err, void *u)
{
	struct grpc_stream *s = nghttp2_session_get_stream_user_data(h, id);

	(void)err;
	(void)u;
	if (!s)
		return 0;
	s->closed = 1;
	/* A handler that has not finished may still hold the stream; it is freed at finish. A
	 * request no handler got (reset, waiting, incomplete) goes now, with its memory. */
	if (s->finished || !s->handled)
		stream_free(s);
	return 0;
}

/* Requests nghttp2 refuses on its own (HTTP messaging rules): say which and why. */
static int on_invalid_frame(nghttp2_session *h, const nghttp2_frame *f, int err, void *u)
{
	(void)h;
	(void)u;
	log_debug("rpc: refused a frame of type %d on stream %d: %s", f->hd.type, f->hd.stream_id,
		  nghttp2_strerror(err));
	return 0;
}

static int on_invalid_header(nghttp2_session *h, const nghttp2_frame *f, const uint8_t *name,
			     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
	(void)h;
	(void)value;
	(void)flags;
	(void)u;
	log_debug("rpc: invalid header '%.*s' (%zu bytes of value) on stream %d", (int)nlen, name,
		  vlen, f->hd.stream_id);
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int grpc_server_conn_new(const struct rpc_io *io, const struct grpc_method *methods,
			 size_t n_methods, struct grpc_server_conn **ret)
{
	return grpc_server_conn_new_for(io, methods, n_methods, NULL, ret);
}

int grpc_server_conn_new_for(const struct rpc_io *io, const struct grpc_method *methods,
			     size_t n_methods, struct rpc_mem_account *acct,
			     struct grpc_server_conn **ret)
{
	struct grpc_server_conn *c = calloc(1, sizeof *c);
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	int r;
	nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
					{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};

	if (!c)
		return -ENOMEM;
	c->io = *io;
	c->methods = methods;
	c->n_methods = n_methods;
	c->keepalive_ms = 15000;
	c->ack_timeout_ms = PING_ACK_TIMEOUT_MS;
	c->idle_ms = IDLE_MS;
	c->request_ms = REQUEST_MS;
	c->acct = acct ? acct : &c->own;
	rpc_h2_mem_for(&c->mem, c->acct);
	if (nghttp2_session_callbacks_new(&cb)) {
		free(c);
		return -ENOMEM;
	}
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, on_invalid_frame);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, on_invalid_header);
	/* grpc-go sends the TLS ServerName as :authority, and for aTLS that is the client's
	 * base64 nonce, with '/' and '=' that nghttp2's HTTP checks refuse (spec §1.2). gRPC
	 * needs none of those checks: the path is matched against our methods. */
	if (nghttp2_option_new(&opt)) {
		nghttp2_session_callbacks_del(cb);
		free(c);
		return -ENOMEM;
	}
	nghttp2_option_set_no_http_messaging(opt, 1);
	r = nghttp2_session_server_new3(&c->h2, cb, c, opt, &c->mem);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (r) {
		free(c);
		return -ENOMEM;
	}
	nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, set, 2);
	*ret = c;
	return 0;
}

void grpc_server_conn_free(struct grpc_server_conn *c)
{
	if (!c)
		return;
	nghttp2_session_del(c->h2);
	while (c->streams)
		stream_free(c->streams);
	secret_wipe(c, sizeof *c); /* rbuf held request bytes */
	free(c);
}

void grpc_server_conn_set_keepalive(struct grpc_server_conn *c, int idle_ms, int ack_timeout_ms)
{
	c->keepalive_ms = idle_ms;
	c->ack_timeout_ms = ack_timeout_ms;
}

void grpc_server_conn_set_deadlines(struct grpc_server_conn *c, int idle_ms, int request_ms)
{
	c->idle_ms = idle_ms;
	c->request_ms = request_ms;
}

void grpc_server_conn_ping_stats(const struct grpc_server_conn *c, int *sent, int *acked)
{
	*sent = c->pings_sent;
	*acked = c->pings_acked;
}

/* One line for a connection closed by the memory bound. */
static int over_budget(void)
{
	log_warn("rpc: closing a connection: it would pass its share (%d MiB, %d MiB per source) "
		 "or all connections together %d MiB, and it holds the most",
		 RPC_CONN_SHARE >> 20, RPC_SOURCE_SHARE >> 20, RPC_MEM_BUDGET >> 20);
	return -ENOBUFS;
}

void grpc_server_conn_set_gated(struct grpc_server_conn *c, int queue_ms)
{
	c->gated = 1;
	c->queue_ms = queue_ms;
}

static struct grpc_stream *first_waiting(const struct grpc_server_conn *c)
{
	struct grpc_stream *w = NULL;

	for (struct grpc_stream *s = c->streams; s; s = s->next)
		if (s->ready && !s->dispatched && !s->closed && (!w || s->ready_ms < w->ready_ms))
			w = s;
	return w;
}

int64_t grpc_server_conn_waiting(const struct grpc_server_conn *c)
{
	const struct grpc_stream *s = c->ended ? NULL : first_waiting(c);

	return s ? (s->ready_ms ? s->ready_ms : 1) : 0;
}

int grpc_server_conn_dispatch(struct grpc_server_conn *c)
{
	struct grpc_stream *s = c->ended ? NULL : first_waiting(c);

	if (!s)
		return 0;
	dispatch(c, s);
	return 1;
}

/* The connection ended (EOF, an error, a deadline): every stream of it is closed. A stream
 * a handler still holds stays until the handler finishes it, and its later sends and finish
 * fail (-EPIPE) instead of queueing bytes for a peer that is gone; the rest are freed. */
static void conn_ended(struct grpc_server_conn *c, int why)
{
	struct grpc_stream *s = c->streams, *next;

	c->ended = why ? why : 1;
	for (; s; s = next) {
		next = s->next;
		if (s->closed)
			continue;
		s->closed = -EPIPE;
		nghttp2_session_set_stream_user_data(c->h2, s->id, NULL);
		if (s->finished || !s->handled)
			stream_free(s);
	}
}

static int conn_step(struct grpc_server_conn *c);

int grpc_server_conn_step(struct grpc_server_conn *c)
{
	int r;

	if (c->ended)
		return c->ended;
	r = conn_step(c);
	if (r != 0)
		conn_ended(c, r);
	return r;
}

static int conn_step(struct grpc_server_conn *c)
{
	int64_t now = rpc_now_ms();
	int n;

	/* The deadlines count from the first step: the caller steps a connection once its
	 * handshake may start. */
	if (!c->last_activity)
		c->last_activity = c->last_request = now;
	c->more = 0;
	for (int i = 0;; i++) {
		ssize_t got, used;

		if (i == READS_PER_STEP) {
			c->more = 1;
			break;
		}
		got = c->io.read(c->io.ctx, c->rbuf, sizeof c->rbuf);
		if (got == -EAGAIN)
			break;
		if (got < 0)
			return got == -ECONNRESET ? 1 : (int)got;
		c->last_activity = rpc_now_ms();
		used = nghttp2_session_mem_recv(c->h2, c->rbuf, (size_t)got);
		if (c->failed == -ENOBUFS || used == NGHTTP2_ERR_NOMEM)
			return over_budget();
		if (used < 0)
			return c->failed ? c->failed : -EPROTO;
	}
	now = rpc_now_ms();
	for (struct grpc_stream *s = c->streams; s; s = s->next)
		if (s->ready && !s->dispatched && now - s->ready_ms > c->queue_ms) {
			/* admission kept it waiting too long: the client may try again */
			s->dispatched = 1;
			grpc_stream_finish(s, GRPC_UNAVAILABLE, "server busy, try again");
			break; /* the list may have changed */
		}
	for (struct grpc_stream *s = c->streams; s; s = s->next)
		if (!s->dispatched && !s->ready && now - s->opened_ms > c->request_ms) {
			log_debug("rpc: closing a connection whose request took over %d s",
				  c->request_ms / 1000);
			return -ETIMEDOUT;
		}
	if (c->streams)
		c->last_request = now; /* idle counts from the last stream's end */
	if (!c->streams && now - c->last_request > c->idle_ms) {
		log_debug("rpc: closing a connection idle for %d s", c->idle_ms / 1000);
		return -ETIMEDOUT;
	}
	if (c->ping_outstanding && now - c->ping_sent > c->ack_timeout_ms)
		return -ETIMEDOUT;
	if (!c->ping_outstanding && now - c->last_activity >= c->keepalive_ms) {
		nghttp2_submit_ping(c->h2, NGHTTP2_FLAG_NONE, NULL);
		c->pings_sent++;
		c->ping_outstanding = 1;
		c->ping_sent = now;
		c->last_activity = now;
	}
	n = nghttp2_session_send(c->h2);
	if (n == NGHTTP2_ERR_NOMEM || c->failed == -ENOBUFS)
		return over_budget();
	if (n != 0)
		return c->failed ? c->failed : -EIO;
	if (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2))
		return 1;
	return 0;
}

int grpc_server_conn_busy(const struct grpc_server_conn *c)
{
	for (const struct grpc_stream *s = c->streams; s; s = s->next)
		if (s->handled && !s->finished)
			return 1;
	return 0;
}

short grpc_server_conn_events(struct grpc_server_conn *c)
{
	return rpc_h2_events(&c->io, c->h2);
}

int grpc_server_conn_timeout_ms(struct grpc_server_conn *c)
{
	int64_t now = rpc_now_ms(), t;

	if (c->more)
		return 0;
	if (!c->last_activity)
		return 1000; /* not stepped yet */
	if (c->ping_outstanding)
		t = c->ping_sent + c->ack_timeout_ms - now;
	else
		t = c->last_activity + c->keepalive_ms - now;
	if (!c->streams && c->last_request + c->idle_ms + 1 - now < t)
		t = c->last_request + c->idle_ms + 1 - now;
	for (struct grpc_stream *s = c->streams; s; s = s->next) {
		if (s->ready && !s->dispatched && s->ready_ms + c->queue_ms + 1 - now < t)
			t = s->ready_ms + c->queue_ms + 1 - now;
		if (!s->dispatched && !s->ready && s->opened_ms + c->request_ms + 1 - now < t)
			t = s->opened_ms + c->request_ms + 1 - now;
	}
	return rpc_poll_timeout(t);
}
