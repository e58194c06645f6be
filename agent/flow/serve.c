/* A gRPC server over aTLS in one poll loop: up to SERVE_MAX_CONNS connections, each with a
 * fresh certificate for its client's nonce, plus one extra descriptor for the handlers (the
 * kubeadm child of the init server). Hostile peers are bounded here: when the table is full
 * the oldest connection without a session (silent ones first; else the oldest session without
 * a running handler) makes room for the new one; a connection starts its handshake (whose
 * ClientHello costs a TPM quote, one at a time in this one loop) only once its first bytes arrived
 * and a token of the global and of its source address's bucket is free, so floods wait in the table
 * instead of queuing TPM work, and silent peers cost nothing; the handshake must end within
 * SERVE_HANDSHAKE_MS of that start. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flow.h"
#include "net/net.h"

#define SERVE_HANDSHAKE_MS 10000 /* from the start of the handshake to an aTLS session */
#define SERVE_WAIT_MS	   60000 /* in the table without a start of handshake */
#define SERVE_ACCEPT_BURST 16	 /* accepts per poll round */
/* Handshakes (attestations) started per second and burst, in total and per source. */
#define ATTEST_RATE	 8
#define ATTEST_BURST	 8
#define ATTEST_SRC_RATE	 4
#define ATTEST_SRC_BURST 4
/* Handshakes under way at once, in total and per source address. */
#define ATTEST_INFLIGHT	    16
#define ATTEST_SRC_INFLIGHT 8

static void conn_close(struct serve_conn *c)
{
	grpc_server_conn_free(c->rpc);
	atls_free(c->tls);
	close(c->fd);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

/* Refills b at rate tokens a second up to burst; 1 when a whole token is there. */
static int bucket_ready(struct serve_bucket *b, int rate, int burst, int64_t now)
{
	int64_t t = (int64_t)b->tokens_milli + (now - b->at_ms) * rate;

	b->tokens_milli = t > burst * 1000 ? burst * 1000 : (int)t;
	b->at_ms = now;
	return b->tokens_milli >= 1000;
}

/* The bucket of a source address: its own, or the least recently used one made new. */
static struct serve_bucket *source_bucket(struct server *s, const uint8_t addr[16], int64_t now)
{
	struct serve_bucket *old = &s->sources[0];
	size_t n = sizeof s->sources / sizeof s->sources[0];

	for (size_t i = 0; i < n; i++) {
		if (s->sources[i].at_ms && !memcmp(s->sources[i].addr, addr, 16))
			return &s->sources[i];
		if (s->sources[i].at_ms < old->at_ms)
			old = &s->sources[i];
	}
	memcpy(old->addr, addr, 16);
	old->at_ms = now;
	old->tokens_milli = ATTEST_SRC_BURST * 1000;
	return old;
}

/* Starts the handshakes of connections whose first bytes (the ClientHello) arrived, oldest
 * first, as the buckets allow (a source without tokens is passed over, not waited for);
 * returns the ms until the next try when one still waits, -1 when none does. */
static int admit(struct server *s, int64_t now)
{
	uint8_t passed[SERVE_MAX_CONNS] = {0};
	int wait = -1;

	for (;;) {
		struct serve_conn *next = NULL;
		struct serve_bucket *src;

		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];

			if (c->fd >= 0 && !c->admitted && c->hello && !passed[i] &&
			    (!next || c->accepted_ms < next->accepted_ms))
				next = c;
		}
		if (!next)
			return wait;
		if (!bucket_ready(&s->global, ATTEST_RATE, ATTEST_BURST, now))
			return (1000 - s->global.tokens_milli) / ATTEST_RATE + 1;
		src = source_bucket(s, next->addr, now);
		if (!bucket_ready(src, ATTEST_SRC_RATE, ATTEST_SRC_BURST, now)) {
			int t = (1000 - src->tokens_milli) / ATTEST_SRC_RATE + 1;

			passed[next - s->conns] = 1;
			if (wait < 0 || t < wait)
				wait = t;
			continue;
		}
		s->global.tokens_milli -= 1000;
		src->tokens_milli -= 1000;
		next->admitted = 1;
		next->admitted_ms = now;
	}
}

/* How willingly a connection gives up its slot for a new one: 0 never (a handler runs),
 * then a session without a running handler, one waiting for a handshake token with its
 * ClientHello in (the real CLI's state before its handshake), one whose handshake already
 * started and has not ended, and first of all one that never sent a byte. */
static int evictable(struct serve_conn *c)
{
	uint8_t b;

	/* bytes that came after the last poll count too: the newest client is not silent */
	if (!c->hello && recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
		c->hello = 1;
	if (grpc_server_conn_busy(c->rpc))
		return 0;
	if (atls_established(c->tls))
		return 1;
	if (!c->admitted)
		return c->hello ? 2 : 4;
	return 3;
}

/* A free slot, or the slot of the most evictable connection, oldest first (closed). */
static struct serve_conn *free_slot(struct server *s)
{
	struct serve_conn *old = NULL;
	int best = 0;

	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];
		int e;

		if (c->fd < 0)
			return c;
		e = evictable(c);
		if (e > best || (e && e == best && c->accepted_ms < old->accepted_ms)) {
			old = c;
			best = e;
		}
	}
	if (old) {
		log_debug("serve: %d connections open: closing the oldest %s for a new one",
			  SERVE_MAX_CONNS,
			  best == 1   ? "idle session"
			  : best == 2 ? "one waiting for its handshake"
				      : "one without a session");
		conn_close(old);
	}
	return old;
}

static void peer_addr(const struct sockaddr_storage *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* 1 when a connection was accepted (there may be more), 0 when none waits. */
static int accept_one(struct server *s)
{
	static int64_t warned;
	struct serve_conn *slot;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof sa;
	struct rpc_io io;
	int fd = accept4(s->lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return 0;
	slot = free_slot(s);
	if (!slot) {
		/* Every slot holds an established session or a running handler. */
		if (rpc_now_ms() - warned > 10000) {
			log_warn("serve: %d connections open with sessions, refusing more",
				 SERVE_MAX_CONNS);
			warned = rpc_now_ms();
		}
		close(fd);
		return 1;
	}
	slot->fd = fd;
	slot->accepted_ms = rpc_now_ms();
	peer_addr(&sa, slot->addr);
	tcp_nodelay(fd);
	if (s->on_accept)
		s->on_accept(s->ctx);
	if (atls_server_new(&s->tls, fd, &slot->tls) < 0) {
		conn_close(slot);
		return 1;
	}
	rpc_io_atls(&io, slot->tls);
	if (grpc_server_conn_new(&io, s->methods, s->n_methods, &slot->rpc) < 0) {
		conn_close(slot);
		return 1;
	}
	log_debug("serve: new connection");
	return 1;
}

static void hello_arrived(struct server *s, int fd)
{
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		if (s->conns[i].fd == fd)
			s->conns[i].hello = 1;
}

/* One line per failed handshake, at most 5 in 10 s: a flood of garbage must not flood the
 * console too. */
static void handshake_failed(const struct serve_conn *c, int64_t now)
{
	static int64_t window;
	static int lines;

	if (now - window > 10000) {
		window = now;
		lines = 0;
	}
	if (++lines <= 5)
		log_warn("serve: aTLS handshake failed: %s%s", atls_error(c->tls),
			 lines == 5 ? " (more in the next 10 s not logged)" : "");
}

/* Steps one connection; 1 when it is gone (closed). */
static int conn_step(struct serve_conn *c, int64_t now)
{
	int r;

	if (!c->dead && !c->admitted && now - c->accepted_ms > SERVE_WAIT_MS) {
		log_debug("serve: closing a connection that waited %d s for its handshake",
			  SERVE_WAIT_MS / 1000);
		c->dead = 1;
	}
	if (!c->dead && c->admitted && !atls_established(c->tls) &&
	    now - c->admitted_ms > SERVE_HANDSHAKE_MS) {
		log_debug("serve: closing a connection without an aTLS session after %d s",
			  SERVE_HANDSHAKE_MS / 1000);
		c->dead = 1;
	}
	if (!c->dead && c->admitted) {
		r = grpc_server_conn_step(c->rpc);
		if (r != 0) {
			if (r < 0 && atls_established(c->tls))
				log_debug("serve: connection ended: %s", strerror(-r));
			else if (r < 0)
				handshake_failed(c, now);
			c->dead = 1;
		}
	}
	if (c->dead && !grpc_server_conn_busy(c->rpc)) {
		conn_close(c);
		return 1;
	}
	return 0;
}

/* The poll timeout for one connection's deadlines. */
static int conn_timeout(const struct serve_conn *c, int64_t now)
{
	int64_t t;

	if (!c->admitted)
		t = c->accepted_ms + SERVE_WAIT_MS - now;
	else if (!atls_established(c->tls))
		t = c->admitted_ms + SERVE_HANDSHAKE_MS - now;
	else
		return grpc_server_conn_timeout_ms(c->rpc);
	return t < 0 ? 0 : t > 1000 ? 1000 : (int)t;
}

int serve_run(struct server *s)
{
	struct pollfd pfd[SERVE_MAX_CONNS + 2];
	int64_t stop_at = 0;

	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	s->global.at_ms = rpc_now_ms();
	s->global.tokens_milli = ATTEST_BURST * 1000;
	for (;;) {
		int n = 0, timeout = 1000, open = 0, busy = 0, lidx = -1, t;
		int64_t now = rpc_now_ms();

		t = admit(s, now);
		if (t >= 0 && t < timeout)
			timeout = t;
		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];

			if (c->fd < 0 || conn_step(c, now))
				continue;
			open++;
			busy |= grpc_server_conn_busy(c->rpc);
		}
		if (s->stop) {
			if (!stop_at)
				stop_at = rpc_now_ms();
			if (s->lfd >= 0) {
				close(s->lfd);
				s->lfd = -1;
			}
			/* Let the last responses reach the client; it closes the connection. */
			if (!open || (!busy && rpc_now_ms() - stop_at > 2000) ||
			    rpc_now_ms() - stop_at > 10000)
				break;
		}
		if (s->lfd >= 0) {
			lidx = n;
			pfd[n++] = (struct pollfd){s->lfd, POLLIN, 0};
		}
		now = rpc_now_ms();
		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];

			/* A waiting connection is polled only until its first bytes arrive;
			 * they stay in the socket until a handshake token is its own. */
			if (c->fd < 0 || c->dead)
				continue;
			if (c->admitted)
				pfd[n++] =
				    (struct pollfd){c->fd, grpc_server_conn_events(c->rpc), 0};
			else if (!c->hello)
				pfd[n++] = (struct pollfd){c->fd, POLLIN, 0};
			t = conn_timeout(c, now);
			if (t >= 0 && t < timeout)
				timeout = t;
		}
		if (s->extra_fd >= 0)
			pfd[n++] = (struct pollfd){s->extra_fd, s->extra_events, 0};
		if (s->extra_timeout_ms) {
			t = s->extra_timeout_ms(s->ctx);
			if (t >= 0 && t < timeout)
				timeout = t;
		}
		if (s->stop && timeout > 100)
			timeout = 100;
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			return log_err(-errno, "serve: poll");
		for (int i = 0; i < n; i++)
			if (pfd[i].revents && i != lidx && pfd[i].fd != s->extra_fd)
				hello_arrived(s, pfd[i].fd);
		if (lidx >= 0 && (pfd[lidx].revents & POLLIN))
			for (int i = 0; i < SERVE_ACCEPT_BURST && accept_one(s); i++)
				;
		if (s->extra_fd >= 0 && s->extra_ready)
			s->extra_ready(s->ctx,
				       pfd[n - 1].fd == s->extra_fd ? pfd[n - 1].revents : 0);
		else if (s->extra_ready && s->extra_timeout_ms)
			s->extra_ready(s->ctx, 0);
	}
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		if (s->conns[i].fd >= 0)
			conn_close(&s->conns[i]);
	if (s->lfd >= 0)
		close(s->lfd);
	return s->exit_code;
}

int flow_write(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	int r;

	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return log_err(-ENAMETOOLONG, "write %s/%s", dir, name);
	r = write_file_excl(path, data, len, 0600);
	if (r < 0)
		return log_err(r, "write %s", path);
	return 0;
}
