/* gRPC message framing (a 5-byte prefix: flag, 4-byte big-endian length) and the helpers the
 * client and the server share: the plain-socket transport, percent-encoding of
 * grpc-message, the monotonic clock. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <nghttp2/nghttp2.h>

#include "base/base.h"
#include "rpc.h"
#include "rpc_internal.h"

/* The bytes all connections of this process hold for peers: messages being received or
 * waiting for their handler, and nghttp2's own state. One bound for all, so that many
 * connections cannot together make PID 1 hold more than RPC_MEM_BUDGET; within it each server
 * connection and each source address has its share (rpc_mem_account), and when the budget is
 * full the server's reclaim policy closes the largest holder to make room. */
static size_t mem_used;
static rpc_mem_reclaim_fn reclaim;
static void *reclaim_ctx;

#define RECLAIM_MAX 64 /* holders closed for one take at most (SERVE_MAX_CONNS) */

void rpc_mem_set_reclaim(rpc_mem_reclaim_fn fn, void *ctx)
{
	reclaim = fn;
	reclaim_ctx = ctx;
}

static int over(const struct rpc_mem_account *a, size_t n)
{
	return a && a->cap && (a->used > a->cap || n > a->cap - a->used);
}

int rpc_mem_take_for(struct rpc_mem_account *a, size_t n)
{
	for (int i = 0;; i++) {
		const struct rpc_mem_account *full;

		if (over(a, n))
			return -ENOBUFS; /* its own share: nobody else makes room for it */
		if (a && over(a->parent, n))
			full = a->parent;
		else if (n > RPC_MEM_BUDGET - mem_used)
			full = NULL;
		else
			break;
		if (i == RECLAIM_MAX || !reclaim || reclaim(reclaim_ctx, a, full) <= 0)
			return -ENOBUFS;
	}
	mem_used += n;
	if (a) {
		a->used += n;
		if (a->parent)
			a->parent->used += n;
	}
	return 0;
}

static void account_give(struct rpc_mem_account *a, size_t n)
{
	if (a)
		a->used -= n < a->used ? n : a->used;
}

void rpc_mem_give_for(struct rpc_mem_account *a, size_t n)
{
	mem_used -= n < mem_used ? n : mem_used;
	if (a) {
		account_give(a->parent, n);
		account_give(a, n);
	}
}

int rpc_mem_take(size_t n)
{
	return rpc_mem_take_for(NULL, n);
}

void rpc_mem_give(size_t n)
{
	rpc_mem_give_for(NULL, n);
}

size_t rpc_mem_in_use(void)
{
	return mem_used;
}

void rpc_free(void *p)
{
	if (!p)
		return;
	secret_wipe(p, malloc_usable_size(p));
	free(p);
}

/* nghttp2's allocator: counted against the budget, wiped when freed (its frame buffers hold
 * request and response bodies), realloc as a copy into a fresh block. */
static void *h2_malloc(size_t n, void *u)
{
	void *p = malloc(n ? n : 1);

	if (p && rpc_mem_take_for(u, malloc_usable_size(p)) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void h2_free(void *p, void *u)
{
	if (!p)
		return;
	rpc_mem_give_for(u, malloc_usable_size(p));
	rpc_free(p);
}

static void *h2_calloc(size_t nmemb, size_t size, void *u)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	p = h2_malloc(nmemb * size, u);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

static void *h2_realloc(void *p, size_t n, void *u)
{
	void *q;
	size_t old;

	if (!p)
		return h2_malloc(n, u);
	if (!n) {
		h2_free(p, u);
		return NULL;
	}
	q = h2_malloc(n, u);
	if (!q)
		return NULL;
	old = malloc_usable_size(p);
	memcpy(q, p, old < n ? old : n);
	h2_free(p, u);
	return q;
}

nghttp2_mem *rpc_h2_mem(void)
{
	static nghttp2_mem mem = {NULL, h2_malloc, h2_free, h2_calloc, h2_realloc};

	return &mem;
}

void rpc_h2_mem_for(nghttp2_mem *mem, struct rpc_mem_account *a)
{
	*mem = (nghttp2_mem){a, h2_malloc, h2_free, h2_calloc, h2_realloc};
}

void grpc_deframer_init(struct grpc_deframer *d, size_t limit)
{
	memset(d, 0, sizeof *d);
	d->limit = limit;
}

/* Makes room for need bytes: the buffer grows as bytes arrive (doubling from 4 KiB, never past
 * the message's length), each step a fresh block with the old one wiped, within the budget. */
static int deframer_grow(struct grpc_deframer *d, size_t need)
{
	size_t cap = d->cap ? d->cap * 2 : 4096;
	uint8_t *p;

	if (need <= d->cap)
		return 0;
	if (cap < need)
		cap = need;
	if (cap > d->msg_len)
		cap = d->msg_len;
	if (rpc_mem_take_for(d->acct, cap - d->cap) < 0)
		return -ENOBUFS;
	p = malloc(cap);
	if (!p) {
		rpc_mem_give_for(d->acct, cap - d->cap);
		return -ENOMEM;
	}
	if (d->have)
		memcpy(p, d->msg, d->have);
	rpc_free(d->msg);
	d->msg = p;
	d->cap = cap;
	return 0;
}

int grpc_deframer_push(struct grpc_deframer *d, const uint8_t *buf, size_t len, size_t *used)
{
	size_t off = 0, n;
	int r;

	*used = 0;
	if (d->done)
		return 1;
	while (d->hdr_len < 5 && off < len)
		d->hdr[d->hdr_len++] = buf[off++];
	if (d->hdr_len < 5) {
		*used = off;
		return 0;
	}
	if (!d->started) {
		if (d->hdr[0] != 0) {
			*used = off;
			return d->hdr[0] == 1 ? -EPROTONOSUPPORT : -EBADMSG;
		}
		d->msg_len = (size_t)d->hdr[1] << 24 | (size_t)d->hdr[2] << 16 |
			     (size_t)d->hdr[3] << 8 | d->hdr[4];
		/* The length is the peer's claim: refused over the limit, and memory is taken
		 * only as its bytes arrive. */
		if (d->msg_len > d->limit) {
			*used = off;
			return -EMSGSIZE;
		}
		d->started = 1;
		d->have = 0;
	}
	n = len - off < d->msg_len - d->have ? len - off : d->msg_len - d->have;
	r = deframer_grow(d, d->have + n);
	if (r < 0) {
		*used = off;
		return r;
	}
	if (n)
		memcpy(d->msg + d->have, buf + off, n);
	d->have += n;
	*used = off + n;
	if (d->have == d->msg_len) {
		if (!d->msg) {
			d->msg = malloc(1); /* an empty message is still a message */
			if (!d->msg)
				return -ENOMEM;
		}
		d->done = 1;
		return 1;
	}
	return 0;
}

uint8_t *grpc_deframer_keep(struct grpc_deframer *d, size_t *len, size_t *counted)
{
	uint8_t *m = d->msg;

	*len = d->msg_len;
	*counted = d->cap; /* the caller's now, still in the budget */
	d->msg = NULL;
	d->hdr_len = 0;
	d->msg_len = d->have = d->cap = 0;
	d->done = d->started = 0;
	return m;
}

uint8_t *grpc_deframer_take(struct grpc_deframer *d, size_t *len)
{
	size_t counted;
	struct rpc_mem_account *a = d->acct;
	uint8_t *m = grpc_deframer_keep(d, len, &counted);

	rpc_mem_give_for(a, counted); /* the message leaves the budget with the deframer */
	return m;
}

void grpc_deframer_free(struct grpc_deframer *d)
{
	rpc_mem_give_for(d->acct, d->cap);
	rpc_free(d->msg);
	d->msg = NULL;
	d->cap = 0;
}

void grpc_frame_header(uint8_t hdr[5], size_t len)
{
	hdr[0] = 0;
	hdr[1] = (uint8_t)(len >> 24);
	hdr[2] = (uint8_t)(len >> 16);
	hdr[3] = (uint8_t)(len >> 8);
	hdr[4] = (uint8_t)len;
}

static ssize_t fd_read(void *ctx, void *buf, size_t len)
{
	ssize_t n = recv(*(int *)ctx, buf, len, 0);

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static ssize_t fd_write(void *ctx, const void *buf, size_t len)
{
	ssize_t n = send(*(int *)ctx, buf, len, MSG_NOSIGNAL);

	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static short fd_events(void *ctx)
{
	(void)ctx;
	return 0;
}

void rpc_io_fd(struct rpc_io *io, int *fd)
{
	io->read = fd_read;
	io->write = fd_write;
	io->events = fd_events;
	io->ctx = fd;
	io->writable = NULL;
}

/* What the client's and the server's nghttp2 send callbacks share: the transport's answer
 * in nghttp2's terms. */
ssize_t rpc_h2_write(const struct rpc_io *io, const uint8_t *data, size_t len)
{
	ssize_t n = io->write(io->ctx, data, len);

	if (n == -EAGAIN)
		return NGHTTP2_ERR_WOULDBLOCK;
	if (n < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	return n;
}

short rpc_h2_events(const struct rpc_io *io, nghttp2_session *h2)
{
	short ev = io->events(io->ctx);

	if (!io->writable) {
		ev |= POLLIN;
		if (nghttp2_session_want_write(h2))
			ev |= POLLOUT;
	} else if (nghttp2_session_want_write(h2) && io->writable(io->ctx)) {
		ev |= POLLOUT;
	}
	return ev;
}

/* A poll timeout for something due in left ms: at least 0, at most a second. */
int rpc_poll_timeout(int64_t left)
{
	return left < 0 ? 0 : left > 1000 ? 1000 : (int)left;
}

int64_t rpc_now_ms(void)
{
	return (int64_t)monotonic_ms();
}

/* grpc-message is percent-encoded: bytes outside 0x20..0x7e and '%' itself. */
void grpc_percent_encode(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in && o + 4 < cap; in++) {
		unsigned char ch = (unsigned char)*in;

		if (ch < 0x20 || ch > 0x7e || ch == '%') {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = '\0';
}

void grpc_percent_decode(const uint8_t *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		if (in[i] == '%' && i + 2 < len && hex_digit((char)in[i + 1]) >= 0 &&
		    hex_digit((char)in[i + 2]) >= 0) {
			out[o++] =
			    (char)(hex_digit((char)in[i + 1]) << 4 | hex_digit((char)in[i + 2]));
			i += 2;
		} else {
			out[o++] = (char)in[i];
		}
	}
	out[o] = '\0';
}
