/* The rpc layer: gRPC over HTTP/2 (nghttp2) on any byte transport, for the join, rejoin,
 * init and recover calls (spec §12). Unary client calls; unary and server-streaming
 * handlers on the server. Non-blocking: the caller polls the transport's fd for
 * *_events() and calls *_step() when it is ready or when *_timeout_ms() has passed. */
#ifndef CONSTEL_RPC_H
#define CONSTEL_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GRPC_MAX_MESSAGE (4 * 1024 * 1024) /* grpc-go's default receive limit */
/* What all connections of the process together may hold for their peers (messages being
 * received or waiting for their handler, nghttp2's state): when it is full, the server's
 * policy closes the largest holder, or the connection that asks is closed. */
#define RPC_MEM_BUDGET (48 * 1024 * 1024)
/* A server connection's share of it, and the share of all connections from one source address:
 * one peer cannot take the whole budget, and the CLI (one connection, small) always fits. */
#define RPC_CONN_SHARE	 (12 * 1024 * 1024)
#define RPC_SOURCE_SHARE (24 * 1024 * 1024)

enum grpc_status {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
};

/* The transport under HTTP/2: plain socket or aTLS. read/write return a byte count,
 * -EAGAIN when they would block, or another negative errno (end of stream included).
 * Poll interest comes from the transport, never from nghttp2's wish alone: with writable
 * set (TLS), events() is exactly what the engine waits for on the socket and HTTP/2 output
 * adds POLLOUT only when writable() says the engine takes application data now; a
 * transport without writable (a plain socket) always waits for POLLIN and for POLLOUT while
 * HTTP/2 has output. Otherwise a TLS handshake that waits for the peer would see POLLOUT
 * ready forever and spin. */
struct rpc_io {
	ssize_t (*read)(void *ctx, void *buf, size_t len);
	ssize_t (*write)(void *ctx, const void *buf, size_t len);
	short (*events)(void *ctx); /* what the transport itself waits for (TLS records) */
	void *ctx;
	int (*writable)(void *ctx); /* NULL: writes go straight to the socket */
};

/* A plain non-blocking socket as transport (tests, h2c). */
void rpc_io_fd(struct rpc_io *io, int *fd);
/* An aTLS connection as transport (the handshake runs under the first reads and writes). */
struct atls_conn;
void rpc_io_atls(struct rpc_io *io, struct atls_conn *c);

struct rpc_mem_account;

/* ---- gRPC message framing: a 5-byte prefix (flag 0, 4-byte big-endian length) ---- */
struct grpc_deframer {
	uint8_t hdr[5];
	size_t hdr_len;
	uint8_t *msg;
	size_t msg_len, have, cap, limit; /* cap: allocated, grown as bytes arrive */
	int started, done;		  /* started: header read; done: a whole message */
	struct rpc_mem_account *acct;	  /* whose share the buffer counts in (NULL: none) */
};

void grpc_deframer_init(struct grpc_deframer *d, size_t limit);
/* Consumes up to len bytes; *used says how many. Returns 1 when a message is complete (take
 * it with grpc_deframer_take), 0 when more bytes are needed, -EMSGSIZE over the limit,
 * -EPROTONOSUPPORT for a compressed message, -ENOBUFS over RPC_MEM_BUDGET, -ENOMEM. The
 * buffer grows with the bytes that arrived, never to the claimed length up front. */
int grpc_deframer_push(struct grpc_deframer *d, const uint8_t *buf, size_t len, size_t *used);
/* Hands the message over (the caller frees it with rpc_free) and resets for the next. The
 * budget counts messages while they arrive; a whole one goes to its handler at once. */
uint8_t *grpc_deframer_take(struct grpc_deframer *d, size_t *len);
/* The same, but the message stays counted (against d->acct): *counted bytes, which the
 * caller gives back (rpc_mem_give_for) when it frees the message. A server holds a request
 * until its stream ends; it must stay in the budget until then. */
uint8_t *grpc_deframer_keep(struct grpc_deframer *d, size_t *len, size_t *counted);
void grpc_deframer_free(struct grpc_deframer *d);

/* Wipes a heap block (malloc_usable_size bytes) and frees it: every buffer that held a
 * request or response body goes this way, responses handed to callers included. */
void rpc_free(void *p);
/* The shared budget: take fails with -ENOBUFS past RPC_MEM_BUDGET. */
int rpc_mem_take(size_t n);
void rpc_mem_give(size_t n);
size_t rpc_mem_in_use(void);
/* A holder's share: a server connection's, whose parent is its source address's. */
struct rpc_mem_account {
	size_t used, cap;		/* cap: the most it may hold; 0: no share of its own */
	struct rpc_mem_account *parent; /* NULL: none */
};
/* Takes n bytes for a (NULL: the shared budget only): -ENOBUFS past a's own share at once;
 * past its parent's share or the whole budget, the reclaim callback (when set) is asked to
 * make room, then -ENOBUFS. */
int rpc_mem_take_for(struct rpc_mem_account *a, size_t n);
void rpc_mem_give_for(struct rpc_mem_account *a, size_t n);
/* The server's policy when memory runs out: fn closes one holder (within the share of
 * `within`, NULL: any) other than `who` and returns 1, or returns 0 when `who` is itself the
 * largest (or nothing can be closed). NULL fn: none. */
typedef int (*rpc_mem_reclaim_fn)(void *ctx, const struct rpc_mem_account *who,
				  const struct rpc_mem_account *within);
void rpc_mem_set_reclaim(rpc_mem_reclaim_fn fn, void *ctx);

/* ---- client ---- */
struct grpc_result {
	int status;	   /* enum grpc_status */
	char message[512]; /* grpc-message, or our reason for a transport failure (an aTLS refusal
			      names two PCR values: 250 bytes) */
	uint8_t *response; /* the response message for status OK (caller frees: rpc_free) */
	size_t response_len;
};

struct grpc_client;

int grpc_client_new(const struct rpc_io *io, const char *authority, struct grpc_client **ret);
void grpc_client_free(struct grpc_client *c);
/* Starts the one unary call of this client; the deadline is absolute CLOCK_MONOTONIC ms. */
int grpc_client_call(struct grpc_client *c, const char *path, const uint8_t *req, size_t len,
		     int64_t deadline_ms);
/* For a server-streaming call: every response message goes to fn as it arrives (the client
 * keeps none), and any number of messages is fine. */
void grpc_client_on_message(struct grpc_client *c,
			    void (*fn)(void *arg, const uint8_t *msg, size_t len), void *arg);
/* Drives I/O. Returns 1 when the call has finished (result filled), 0 to continue. */
int grpc_client_step(struct grpc_client *c, struct grpc_result *result);
short grpc_client_events(struct grpc_client *c);
int grpc_client_timeout_ms(struct grpc_client *c);

/* Convenience: one call on a connected socket fd (made non-blocking) with its own poll loop. */
int grpc_unary_call(const struct rpc_io *io, int fd, const char *authority, const char *path,
		    const uint8_t *req, size_t len, int timeout_ms, struct grpc_result *result);

/* ---- server ---- */
struct grpc_server_conn;
struct grpc_stream;

/* A handler gets the request message. A unary handler answers with grpc_stream_send (once)
 * and grpc_stream_finish; a streaming one may send several messages, now or later from the
 * poll loop, then finish. */
struct grpc_method {
	const char *path;
	void (*handle)(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len);
	void *ctx;
};

int grpc_server_conn_new(const struct rpc_io *io, const struct grpc_method *methods,
			 size_t n_methods, struct grpc_server_conn **ret);
/* The same with the connection's memory counted against acct (which outlives it) as well as
 * the shared budget. */
int grpc_server_conn_new_for(const struct rpc_io *io, const struct grpc_method *methods,
			     size_t n_methods, struct rpc_mem_account *acct,
			     struct grpc_server_conn **ret);
/* Gated dispatch: a complete request waits until the caller dispatches it
 * (grpc_server_conn_dispatch), so that costly handlers run only as the caller's admission
 * allows; one that waits longer than queue_ms is answered UNAVAILABLE. */
void grpc_server_conn_set_gated(struct grpc_server_conn *c, int queue_ms);
/* When the longest waiting complete request became complete (rpc_now_ms), 0 when none waits. */
int64_t grpc_server_conn_waiting(const struct grpc_server_conn *c);
/* Runs the handler of the longest waiting request; 1 when there was one. */
int grpc_server_conn_dispatch(struct grpc_server_conn *c);
void grpc_server_conn_free(struct grpc_server_conn *c);
/* Drives I/O and timers. Returns 0 while the connection lives, 1 once it ended cleanly,
 * or a negative errno; once ended, every stream is closed (a handler's later
 * grpc_stream_send and grpc_stream_finish return -EPIPE) and the step returns the same. */
int grpc_server_conn_step(struct grpc_server_conn *c);
/* 1 while a handler holds a stream it has not finished: the connection must not be freed
 * yet, even if it failed (the handler's later send and finish then fail quietly). */
int grpc_server_conn_busy(const struct grpc_server_conn *c);
short grpc_server_conn_events(struct grpc_server_conn *c);
int grpc_server_conn_timeout_ms(struct grpc_server_conn *c);
/* Keepalive: a PING after idle_ms without traffic (default 15000, as the Go init server);
 * the connection fails when the ACK takes longer than ack_timeout_ms (default 20000). */
void grpc_server_conn_set_keepalive(struct grpc_server_conn *c, int idle_ms, int ack_timeout_ms);
/* Deadlines: the connection ends after idle_ms without a stream (default 60000) and when a
 * request has not ended request_ms after its HEADERS (default 30000; a slow peer's bytes). */
void grpc_server_conn_set_deadlines(struct grpc_server_conn *c, int idle_ms, int request_ms);
void grpc_server_conn_ping_stats(const struct grpc_server_conn *c, int *sent, int *acked);

int grpc_stream_send(struct grpc_stream *s, const uint8_t *msg, size_t len);
int grpc_stream_finish(struct grpc_stream *s, int status, const char *message);

int64_t rpc_now_ms(void);

#endif
