/* gRPC client: one unary call per client over nghttp2, with the headers grpc-go expects
 * (spec §12), grpc-timeout from the deadline, status from trailers (or a Trailers-Only
 * response), and transport failures mapped to UNAVAILABLE as grpc-go reports them. The client
 * never pings; nghttp2 answers the server's PINGs by itself. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "base/base.h"
#include "rpc.h"
#include "rpc_internal.h"

struct grpc_client {
	struct rpc_io io;
	nghttp2_session *h2;
	char authority[256];
	int32_t stream_id;
	int64_t deadline;
	const uint8_t *req;
	size_t req_len, req_off;
	uint8_t hdr[5];
	struct grpc_deframer df;
	int http_status, have_status, status, closed, failed, fail_status;
	char message[512];
	uint8_t *resp;
	size_t resp_len;
	int n_msgs;
	void (*on_message)(void *arg, const uint8_t *msg, size_t len);
	void *arg;
	uint8_t rbuf[16384];
};

static void fail(struct grpc_client *c, int status, const char *why)
{
	if (c->failed)
		return;
	c->failed = 1;
	c->fail_status = status;
	snprintf(c->message, sizeof c->message, "%s", why);
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u)
{
	struct grpc_client *c = u;
	ssize_t n = rpc_h2_write(&c->io, data, len);

	(void)s;
	(void)flags;
	if (n == NGHTTP2_ERR_CALLBACK_FAILURE)
		fail(c, GRPC_UNAVAILABLE, "connection lost while sending");
	return n;
}

static ssize_t read_request(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
			    uint32_t *flags, nghttp2_data_source *src, void *u)
{
	struct grpc_client *c = u;
	size_t total = 5 + c->req_len, n = 0;

	(void)s;
	(void)id;
	(void)src;
	while (n < len && c->req_off < total) {
		if (c->req_off < 5)
			buf[n++] = c->hdr[c->req_off++];
		else {
			size_t k = total - c->req_off < len - n ? total - c->req_off : len - n;

			memcpy(buf + n, c->req + c->req_off - 5, k);
			n += k;
			c->req_off += k;
		}
	}
	if (c->req_off == total)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
		     const uint8_t *value, size_t vlen, uint8_t flags, void *u)
{
	struct grpc_client *c = u;

	(void)s;
	(void)flags;
	if (f->hd.stream_id != c->stream_id)
		return 0;
	if (nlen == 7 && !memcmp(name, ":status", 7) && vlen == 3) {
		c->http_status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
	} else if (nlen == 11 && !memcmp(name, "grpc-status", 11) && vlen > 0 && vlen < 4) {
		/* digits only: atoi would read " 0", "+0" or "0x" as OK (0) */
		int st = 0;

		for (size_t i = 0; i < vlen && st >= 0; i++)
			st = value[i] >= '0' && value[i] <= '9' ? st * 10 + (value[i] - '0') : -1;
		c->status = st < 0 ? GRPC_UNKNOWN : st;
		c->have_status = 1;
	} else if (nlen == 12 && !memcmp(name, "grpc-message", 12)) {
		grpc_percent_decode(value, vlen, c->message, sizeof c->message);
	}
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *u)
{
	struct grpc_client *c = u;

	(void)s;
	(void)flags;
	if (id != c->stream_id)
		return 0;
	while (len > 0) {
		size_t used;
		int r = grpc_deframer_push(&c->df, data, len, &used);

		if (r < 0) {
			fail(c, r == -EMSGSIZE ? GRPC_RESOURCE_EXHAUSTED : GRPC_INTERNAL,
			     r == -EMSGSIZE ? "response larger than 4 MiB"
					    : "malformed or compressed response message");
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
		data += used;
		len -= used;
		if (r == 1) {
			rpc_free(c->resp);
			c->resp = grpc_deframer_take(&c->df, &c->resp_len);
			c->n_msgs++;
			if (c->on_message) {
				c->on_message(c->arg, c->resp, c->resp_len);
				rpc_free(c->resp);
				c->resp = NULL;
			}
		}
	}
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t err, void *u)
{
	struct grpc_client *c = u;

	(void)s;
	if (id != c->stream_id)
		return 0;
	c->closed = 1;
	if (err != NGHTTP2_NO_ERROR && !c->have_status)
		fail(c, GRPC_UNAVAILABLE, "stream reset by the server");
	return 0;
}

int grpc_client_new(const struct rpc_io *io, const char *authority, struct grpc_client **ret)
{
	struct grpc_client *c = calloc(1, sizeof *c);
	nghttp2_session_callbacks *cb;
	nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
					{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};

	if (!c)
		return -ENOMEM;
	c->io = *io;
	snprintf(c->authority, sizeof c->authority, "%s", authority);
	grpc_deframer_init(&c->df, GRPC_MAX_MESSAGE);
	if (nghttp2_session_callbacks_new(&cb)) {
		free(c);
		return -ENOMEM;
	}
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	if (nghttp2_session_client_new3(&c->h2, cb, c, NULL, rpc_h2_mem())) {
		nghttp2_session_callbacks_del(cb);
		free(c);
		return -ENOMEM;
	}
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, set, 2);
	*ret = c;
	return 0;
}

void grpc_client_on_message(struct grpc_client *c,
			    void (*fn)(void *arg, const uint8_t *msg, size_t len), void *arg)
{
	c->on_message = fn;
	c->arg = arg;
}

void grpc_client_free(struct grpc_client *c)
{
	if (!c)
		return;
	nghttp2_session_del(c->h2);
	grpc_deframer_free(&c->df);
	rpc_free(c->resp);
	secret_wipe(c, sizeof *c); /* rbuf held response bytes */
	free(c);
}

#define NV(n, v)                                                                               \
	{                                                                                      \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE \
	}

int grpc_client_call(struct grpc_client *c, const char *path, const uint8_t *req, size_t len,
		     int64_t deadline_ms)
{
	char timeout[24];
	int64_t left = deadline_ms - rpc_now_ms();
	nghttp2_data_provider dp = {.read_callback = read_request};

	if (left < 1)
		left = 1;
	/* At most 8 digits (gRPC spec); fall back to seconds for long deadlines. */
	if (left < 100000000)
		snprintf(timeout, sizeof timeout, "%lldm", (long long)left);
	else
		snprintf(timeout, sizeof timeout, "%lldS",
			 (long long)(left / 1000 > 99999999 ? 99999999 : left / 1000));
	nghttp2_nv hdrs[] = {
	    NV(":method", "POST"),
	    NV(":scheme", "https"),
	    NV(":path", path),
	    NV(":authority", c->authority),
	    NV("content-type", "application/grpc"),
	    NV("te", "trailers"),
	    NV("grpc-timeout", timeout),
	};

	c->req = req;
	c->req_len = len;
	c->req_off = 0;
	c->deadline = deadline_ms;
	grpc_frame_header(c->hdr, len);
	c->stream_id =
	    nghttp2_submit_request(c->h2, NULL, hdrs, sizeof hdrs / sizeof hdrs[0], &dp, c);
	return c->stream_id < 0 ? -EIO : 0;
}

static void finish(struct grpc_client *c, struct grpc_result *r)
{
	memset(r, 0, sizeof *r);
	if (c->failed) {
		r->status = c->fail_status;
	} else if (c->have_status) {
		r->status = c->status;
	} else if (c->http_status && c->http_status != 200) {
		r->status = GRPC_UNAVAILABLE;
		snprintf(c->message, sizeof c->message, "HTTP status %d", c->http_status);
	} else {
		r->status = GRPC_INTERNAL;
		snprintf(c->message, sizeof c->message, "%s", "stream ended without grpc-status");
	}
	if (r->status == GRPC_OK && !c->on_message && c->n_msgs != 1) {
		r->status = GRPC_INTERNAL;
		snprintf(c->message, sizeof c->message, "unary response with %d messages",
			 c->n_msgs);
	}
	snprintf(r->message, sizeof r->message, "%s", c->message);
	if (r->status == GRPC_OK) {
		r->response = c->resp;
		r->response_len = c->resp_len;
		c->resp = NULL;
	}
}

int grpc_client_step(struct grpc_client *c, struct grpc_result *result)
{
	for (;;) {
		ssize_t n;

		if (c->failed || c->closed)
			break;
		if (rpc_now_ms() >= c->deadline) {
			fail(c, GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
			break;
		}
		n = c->io.read(c->io.ctx, c->rbuf, sizeof c->rbuf);
		if (n == -EAGAIN)
			break;
		if (n < 0) {
			fail(c, GRPC_UNAVAILABLE, "connection closed before the response");
			break;
		}
		if (nghttp2_session_mem_recv(c->h2, c->rbuf, (size_t)n) < 0) {
			fail(c, GRPC_UNAVAILABLE, "HTTP/2 protocol error from the server");
			break;
		}
	}
	if (!c->failed && nghttp2_session_send(c->h2) != 0)
		fail(c, GRPC_UNAVAILABLE, "connection lost while sending");
	if (c->failed || c->closed) {
		finish(c, result);
		return 1;
	}
	return 0;
}

short grpc_client_events(struct grpc_client *c)
{
	return rpc_h2_events(&c->io, c->h2);
}

int grpc_client_timeout_ms(struct grpc_client *c)
{
	return rpc_poll_timeout(c->deadline - rpc_now_ms());
}

int grpc_unary_call(const struct rpc_io *io, int fd, const char *authority, const char *path,
		    const uint8_t *req, size_t len, int timeout_ms, struct grpc_result *result)
{
	struct grpc_client *c;
	int r;

	r = grpc_client_new(io, authority, &c);
	if (r < 0)
		return r;
	r = grpc_client_call(c, path, req, len, rpc_now_ms() + timeout_ms);
	while (r == 0) {
		struct pollfd pfd = {fd, grpc_client_events(c), 0};

		r = grpc_client_step(c, result);
		if (r != 0)
			break;
		poll(&pfd, 1, grpc_client_timeout_ms(c));
	}
	grpc_client_free(c);
	return r < 0 ? r : 0;
}
