/* A gRPC server over aTLS in one poll loop: up to SERVE_MAX_CONNS connections, each with a
 * fresh certificate for its client's nonce, plus one extra descriptor for the handlers (the
 * kubeadm child of the init server). Hostile peers are bounded here, fairly by source address:
 * - when the table is full, the connection that makes room for a new one comes from the source
 *   holding the most slots (the newcomer counted with its own source, so a source that already
 *   holds the most loses one of its own); among those, by class (silent for a second, then a
 *   handshake started and not ended, then the newest waiting for a token, then a session
 *   without a running handler), oldest first; a running handler is never closed. A source
 *   with one slot (the real CLI) is thereby never closed while another holds two;
 * - a connection whose first bytes cannot begin a ClientHello is closed when they arrive;
 * - a connection starts its handshake (whose ClientHello costs a TPM quote, one at a time in
 *   this one loop) only once its first bytes arrived and a token of the global and of its
 *   source's bucket is free; tokens go round robin over the sources (the one admitted least
 *   recently first), so floods wait in the table instead of queuing TPM work and cannot starve
 *   another source, and silent peers cost nothing; the handshake must end within
 *   SERVE_HANDSHAKE_MS of that start;
 * - a request's handler (the init secret's bcrypt check, ~80 ms at cost 10; the recovery key
 *   check, 13 ms with our KDF, ~2 s with Go's) runs only when admitted by cost: the time
 *   handlers take is metered in total and per source (serve_meter), requests go round robin
 *   over the sources, the one served least recently first, and a complete request waits in
 *   its stream meanwhile (the CLI waits for its answer; it does not retry a refusal). We meter
 *   rather than move the check to a worker: a worker would still spend the CPU PID 1 needs
 *   for the CLI's handshake on a 1- or 2-vCPU node, and would add a process and a queue for
 *   the same fairness;
 * - memory: each connection has a share of the rpc budget (RPC_CONN_SHARE) within its source's
 *   (RPC_SOURCE_SHARE); when the budget (or a source's share) is full, the connection holding
 *   the most (of that source) is closed to make room, never one whose handler runs. */
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
#define SERVE_SILENT_MS	   1000	 /* without a byte since accept: silent, evicted first */
#define SERVE_ACCEPT_BURST 16	 /* accepts per poll round */
/* Handshakes (attestations) started per second and burst, in total and per source. */
#define ATTEST_RATE	 8
#define ATTEST_BURST	 8
#define ATTEST_SRC_RATE	 4
#define ATTEST_SRC_BURST 4
/* No separate bound on handshakes under way: the costly step of a handshake (the TPM quote
 * for the ClientHello's nonce) is taken at its start, which the buckets above meter in total
 * and per source; what follows costs the peer as much as us, ends within SERVE_HANDSHAKE_MS,
 * and holds one of the SERVE_MAX_CONNS slots, which bound how many are under way. */
/* accept() out of descriptors: the listening socket rests this long, doubling */
#define ACCEPT_PAUSE_MIN_MS 250
#define ACCEPT_PAUSE_MAX_MS 2000
#define ACCEPT_LINE_MS	    60000 /* at most one line about it this often */
/* Handler work admitted, in microseconds per millisecond of time (30 % of the loop in total,
 * 10 % per source) and bursts. A request is admitted while the credit is positive and then
 * charged what its handler took; one handler runs per pass of the loop. */
#define COST_RATE	  300
#define COST_BURST_US	  400000
#define COST_SRC_RATE	  100
#define COST_SRC_BURST_US 200000
#define SERVE_QUEUE_MS	  120000 /* a complete request waiting longer: UNAVAILABLE */

static void conn_close(struct serve_conn *c)
{
	grpc_server_conn_free(c->rpc);
	atls_free(c->tls);
	close(c->fd);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

/* The memory share of the source addr (a new one when none of its connections is open);
 * self's own reference does not count. There is always a free one: at most SERVE_MAX_CONNS - 1
 * other connections are open. */
static struct rpc_mem_account *source_mem(struct server *s, const uint8_t addr[16],
					  const struct serve_conn *self)
{
	struct serve_source_mem *free_e = NULL;

	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_source_mem *e = &s->mem_sources[i];
		int refs = 0;

		for (int j = 0; j < SERVE_MAX_CONNS; j++)
			refs += s->conns[j].fd >= 0 && &s->conns[j] != self &&
				s->conns[j].mem.parent == &e->mem;
		if (refs && !memcmp(e->addr, addr, 16))
			return &e->mem;
		if (!refs && !free_e)
			free_e = e;
	}
	memset(free_e, 0, sizeof *free_e);
	memcpy(free_e->addr, addr, 16);
	free_e->mem.cap = RPC_SOURCE_SHARE;
	return &free_e->mem;
}

/* The budget (or within's share) is full: the connection holding the most (within that
 * source) is closed, unless it is who's own (who then fails) or runs a handler. */
static int reclaim(void *ctx, const struct rpc_mem_account *who,
		   const struct rpc_mem_account *within)
{
	static int64_t window;
	static int lines;
	struct server *s = ctx;
	struct serve_conn *big = NULL;
	int64_t now = rpc_now_ms();

	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];

		if (c->fd < 0 || !c->rpc || grpc_server_conn_busy(c->rpc) ||
		    (within && c->mem.parent != within))
			continue;
		if (!big || c->mem.used > big->mem.used)
			big = c;
	}
	if (!big || !big->mem.used || &big->mem == who || (who && who->used >= big->mem.used))
		return 0;
	if (now - window > 10000) {
		window = now;
		lines = 0;
	}
	if (++lines <= 3)
		log_warn("serve: %s full: closing the connection holding the most (%zu KiB)",
			 within ? "a source's memory share" : "the memory budget",
			 big->mem.used >> 10);
	conn_close(big);
	return 1;
}

/* Refills m by rate microseconds of work per ms up to burst (a new meter starts full). */
static void meter_refill(struct serve_meter *m, int rate, int64_t burst, int64_t now)
{
	int64_t c = m->credit_us + (now - m->at_ms) * rate;

	m->credit_us = c > burst ? burst : c;
	m->at_ms = now;
}

static struct serve_meter *meter_find(struct server *s, const uint8_t addr[16])
{
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		if (s->cost_sources[i].at_ms && !memcmp(s->cost_sources[i].addr, addr, 16))
			return &s->cost_sources[i];
	return NULL;
}

static struct serve_meter *meter_get(struct server *s, const uint8_t addr[16], int64_t now)
{
	struct serve_meter *m = meter_find(s, addr), *old = &s->cost_sources[0];

	if (m)
		return m;
	for (int i = 1; i < SERVE_MAX_CONNS; i++)
		if (s->cost_sources[i].at_ms < old->at_ms)
			old = &s->cost_sources[i];
	memcpy(old->addr, addr, 16);
	old->at_ms = now;
	old->credit_us = COST_SRC_BURST_US;
	old->served = 0;
	return old;
}

/* Runs the handler of one waiting request as the cost meters allow, round robin over the
 * sources (the one served least recently first, then the request waiting longest): one per
 * pass of the loop, so that the other connections (the CLI's handshake) step between two and
 * the loop never stalls for more than one check. *did is set when one ran. Returns the ms
 * until the next try when one still waits, -1 when none. */
static int admit_calls(struct server *s, int *did)
{
	struct serve_conn *next = NULL;
	struct serve_meter *src;
	uint64_t best_served = 0, t0;
	int64_t best_ready = 0, now = rpc_now_ms(), cost;
	int wait = -1;

	if (s->stop || s->pause)
		return -1;
	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];
		int64_t ready;
		uint64_t served = 0;

		if (c->fd < 0 || c->dead || !c->admitted ||
		    !(ready = grpc_server_conn_waiting(c->rpc)))
			continue;
		if ((src = meter_find(s, c->addr))) {
			meter_refill(src, COST_SRC_RATE, COST_SRC_BURST_US, now);
			if (src->credit_us <= 0) {
				int t = (int)(-src->credit_us / COST_SRC_RATE) + 1;

				wait = wait < 0 || t < wait ? t : wait;
				continue;
			}
			served = src->served;
		}
		if (!next || served < best_served ||
		    (served == best_served && ready < best_ready)) {
			next = c;
			best_served = served;
			best_ready = ready;
		}
	}
	if (!next)
		return wait;
	meter_refill(&s->cost_global, COST_RATE, COST_BURST_US, now);
	if (s->cost_global.credit_us <= 0) {
		int t = (int)(-s->cost_global.credit_us / COST_RATE) + 1;

		return wait < 0 || t < wait ? t : wait;
	}
	src = meter_get(s, next->addr, now);
	t0 = monotonic_ns();
	grpc_server_conn_dispatch(next->rpc);
	cost = (int64_t)((monotonic_ns() - t0) / 1000) + 1;
	s->cost_global.credit_us -= cost;
	src->credit_us -= cost;
	src->served = ++s->cost_served;
	s->cost_used_us += cost;
	*did = 1;
	log_debug("serve: a handler took %lld ms; credit %lld ms in all, %lld ms its source's",
		  (long long)(cost / 1000), (long long)(s->cost_global.credit_us / 1000),
		  (long long)(src->credit_us / 1000));
	return 0;
}

/* Refills b at rate tokens a second up to burst; 1 when a whole token is there. */
static int bucket_ready(struct serve_bucket *b, int rate, int burst, int64_t now)
{
	int64_t t = (int64_t)b->tokens_milli + (now - b->at_ms) * rate;

	b->tokens_milli = t > burst * 1000 ? burst * 1000 : (int)t;
	b->at_ms = now;
	return b->tokens_milli >= 1000;
}

/* The bucket of a source address, NULL when it has none. */
static struct serve_bucket *source_find(struct server *s, const uint8_t addr[16])
{
	for (size_t i = 0; i < sizeof s->sources / sizeof s->sources[0]; i++)
		if (s->sources[i].at_ms && !memcmp(s->sources[i].addr, addr, 16))
			return &s->sources[i];
	return NULL;
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
	old->admitted_ms = 0;
	old->tokens_milli = ATTEST_SRC_BURST * 1000;
	return old;
}

/* What the first bytes of a connection say: 1 they can begin a ClientHello (a TLS handshake
 * record, version 3.x, whose first message is a ClientHello), 0 none arrived yet, -1 they
 * cannot (or the peer hung up): the connection is closed before it costs a token. */
static int first_bytes(int fd)
{
	uint8_t b[6];
	ssize_t n = recv(fd, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (n == 0 || b[0] != 0x16 || (n > 1 && b[1] != 0x03) || (n > 5 && b[5] != 0x01))
		return -1;
	return 1;
}

static void not_a_client_hello(struct serve_conn *c)
{
	log_debug("serve: closing a connection whose first bytes are not a ClientHello");
	c->dead = 1;
}

/* Starts the handshakes of connections whose first bytes (the ClientHello) arrived, round
 * robin over the sources (the source admitted least recently first, then the oldest
 * connection), as the buckets allow (a source without tokens is passed over, not waited for);
 * returns the ms until the next try when one still waits, -1 when none does. */
static int admit(struct server *s, int64_t now)
{
	int64_t last[SERVE_MAX_CONNS]; /* per waiting connection: its source's last admission */
	uint8_t passed[SERVE_MAX_CONNS] = {0};
	int wait = -1, any = 0;

	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];
		struct serve_bucket *b;

		if (c->fd < 0 || c->admitted || !c->hello || c->dead) {
			passed[i] = 1;
			continue;
		}
		b = source_find(s, c->addr);
		last[i] = b ? b->admitted_ms : 0;
		any = 1;
	}
	if (!any)
		return -1;
	for (;;) {
		struct serve_conn *next = NULL;
		struct serve_bucket *src;
		int ni = -1;

		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];

			if (!passed[i] &&
			    (!next || last[i] < last[ni] ||
			     (last[i] == last[ni] && c->accepted_ms < next->accepted_ms))) {
				next = c;
				ni = i;
			}
		}
		if (!next)
			return wait;
		if (first_bytes(next->fd) < 0) { /* a slowloris's later bytes count too */
			not_a_client_hello(next);
			passed[ni] = 1;
			continue;
		}
		if (!bucket_ready(&s->global, ATTEST_RATE, ATTEST_BURST, now))
			return (1000 - s->global.tokens_milli) / ATTEST_RATE + 1;
		src = source_bucket(s, next->addr, now);
		if (!bucket_ready(src, ATTEST_SRC_RATE, ATTEST_SRC_BURST, now)) {
			int t = (1000 - src->tokens_milli) / ATTEST_SRC_RATE + 1;

			for (int i = 0; i < SERVE_MAX_CONNS; i++)
				if (!passed[i] && !memcmp(s->conns[i].addr, next->addr, 16))
					passed[i] = 1;
			if (wait < 0 || t < wait)
				wait = t;
			continue;
		}
		s->global.tokens_milli -= 1000;
		src->tokens_milli -= 1000;
		src->admitted_ms = now;
		next->admitted = 1;
		next->admitted_ms = now;
		passed[ni] = 1;
		for (int i = 0; i < SERVE_MAX_CONNS; i++)
			if (!passed[i] && !memcmp(s->conns[i].addr, next->addr, 16))
				last[i] = now;
	}
}

/* How willingly a connection gives up its slot for a new one: 0 never (a handler runs),
 * then a session without a running handler, one waiting for a handshake token with its
 * ClientHello in (it waits on us: the real CLI's state before its handshake), one whose
 * handshake started and has not ended (it waits on its peer), and first of all one that has
 * not sent a byte for SERVE_SILENT_MS (a just accepted client is not silent yet). */
static int evictable(struct serve_conn *c, int64_t now)
{
	/* bytes that came after the last poll count too: the newest client is not silent */
	if (!c->hello && !c->dead) {
		int r = first_bytes(c->fd);

		if (r)
			c->hello = 1;
		if (r < 0)
			not_a_client_hello(c);
	}
	if (grpc_server_conn_busy(c->rpc))
		return 0;
	if (c->dead)
		return 5;
	if (atls_established(c->tls))
		return 1;
	if (!c->admitted)
		return c->hello || now - c->accepted_ms < SERVE_SILENT_MS ? 2 : 4;
	return 3;
}

/* A free slot, or the slot (closed) of a connection of the source holding the most slots, the
 * new connection from addr counted with its source: the most evictable, oldest first, except
 * among those waiting for a token: the newest (admission serves that queue's head, eviction
 * drops its tail). NULL when every open connection runs a handler.
 * Fairness is by address: an attacker with SERVE_MAX_CONNS - 1 addresses or more holds one
 * slot per address as the CLI does, the ties then go by class, and the CLI mid-handshake can
 * be the one closed (a failed dial, which the CLI retries). Counting sources by network (/24, /64)
 * and closing only within a source holding two or more would raise that to as many networks; we
 * leave it: an attacker with that many addresses on the node's network is a flood the cloud's
 * network must absorb. */
static struct serve_conn *free_slot(struct server *s, const uint8_t addr[16])
{
	struct serve_conn *old = NULL;
	int best = 0, best_n = 0;
	int64_t now = rpc_now_ms();

	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		if (s->conns[i].fd < 0)
			return &s->conns[i];
	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];
		int e = evictable(c, now), n = !memcmp(c->addr, addr, 16);

		if (!e)
			continue;
		for (int j = 0; j < SERVE_MAX_CONNS; j++)
			n += !memcmp(s->conns[j].addr, c->addr, 16);
		if (!old || n > best_n || (n == best_n && e > best) ||
		    (n == best_n && e == best &&
		     (e == 2 ? c->accepted_ms > old->accepted_ms
			     : c->accepted_ms < old->accepted_ms))) {
			old = c;
			best = e;
			best_n = n;
		}
	}
	if (old) {
		log_debug("serve: %d connections open: closing %s of a source holding %d "
			  "for a new one",
			  SERVE_MAX_CONNS,
			  best == 1   ? "the oldest idle session"
			  : best == 2 ? "the newest one waiting for its handshake"
			  : best == 3 ? "the oldest one in its handshake"
			  : best == 4 ? "the oldest one without a byte"
				      : "a closed one",
			  best_n - !memcmp(old->addr, addr, 16));
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

/* accept() failed with EMFILE or ENFILE: the connection stays in the listen queue and the
 * socket readable, so polling it again at once would spin. It is left out of the poll for a
 * back-off (250 ms, doubling to 2 s) until an accept succeeds; one line per episode, at most
 * one a minute (a flood that keeps the table full starts a new episode at every accept). */
static void accept_pause(struct server *s, int err)
{
	int64_t now = rpc_now_ms();

	if (!s->accept_backoff_ms) {
		s->accept_backoff_ms = ACCEPT_PAUSE_MIN_MS;
		s->accept_episode_ms = now;
		if (!s->accept_line_ms || now - s->accept_line_ms > ACCEPT_LINE_MS) {
			log_warn("serve: accept: %s: new connections wait (retried every %d ms "
				 "up to %d ms) until a descriptor is free",
				 strerror(err), ACCEPT_PAUSE_MIN_MS, ACCEPT_PAUSE_MAX_MS);
			s->accept_line_ms = now;
		}
	} else if ((s->accept_backoff_ms *= 2) > ACCEPT_PAUSE_MAX_MS) {
		s->accept_backoff_ms = ACCEPT_PAUSE_MAX_MS;
	}
	s->accept_paused_until = now + s->accept_backoff_ms;
}

/* 1 when a connection was accepted (there may be more), 0 when none waits. */
static int accept_one(struct server *s)
{
	static int64_t warned;
	struct serve_conn *slot;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof sa;
	struct rpc_io io;
	uint8_t addr[16];
	int fd = accept4(s->lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			accept_pause(s, errno);
		return 0;
	}
	if (s->accept_backoff_ms) {
		if (s->accept_line_ms == s->accept_episode_ms)
			log_info("serve: accepting connections again");
		s->accept_backoff_ms = 0;
	}
	peer_addr(&sa, addr);
	slot = free_slot(s, addr);
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
	memcpy(slot->addr, addr, 16);
	slot->mem =
	    (struct rpc_mem_account){.cap = RPC_CONN_SHARE, .parent = source_mem(s, addr, slot)};
	tcp_nodelay(fd);
	if (s->on_accept)
		s->on_accept(s->ctx);
	if (atls_server_new(&s->tls, fd, &slot->tls) < 0) {
		conn_close(slot);
		return 1;
	}
	rpc_io_atls(&io, slot->tls);
	if (grpc_server_conn_new_for(&io, s->methods, s->n_methods, &slot->mem, &slot->rpc) < 0) {
		conn_close(slot);
		return 1;
	}
	grpc_server_conn_set_gated(slot->rpc, SERVE_QUEUE_MS);
	log_debug("serve: new connection");
	return 1;
}

static void hello_arrived(struct server *s, int fd)
{
	for (int i = 0; i < SERVE_MAX_CONNS; i++) {
		struct serve_conn *c = &s->conns[i];

		if (c->fd != fd)
			continue;
		c->hello = 1;
		if (!c->admitted && !c->dead && first_bytes(fd) < 0)
			not_a_client_hello(c);
	}
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
			/* a peer that hangs up mid-handshake (a CLI refusing our attestation)
			 * ends it "cleanly" (r 1): still one line */
			if (r < 0 && atls_established(c->tls))
				log_debug("serve: connection ended: %s", strerror(-r));
			else if (!atls_established(c->tls))
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

	if (!s->running) {
		for (int i = 0; i < SERVE_MAX_CONNS; i++)
			s->conns[i].fd = -1;
		s->global.at_ms = rpc_now_ms();
		s->global.tokens_milli = ATTEST_BURST * 1000;
		s->cost_global.at_ms = rpc_now_ms();
		s->cost_global.credit_us = COST_BURST_US;
	}
	s->running = 1;
	rpc_mem_set_reclaim(reclaim, s);
	for (;;) {
		int n = 0, timeout = 1000, open = 0, busy = 0, lidx = -1, t, did = 0;
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
		t = admit_calls(s, &did);
		if (did)
			timeout = 0; /* the handlers' answers go out in the next pass */
		else if (t >= 0 && t < timeout)
			timeout = t;
		if (s->pause) {
			s->pause = 0;
			rpc_mem_set_reclaim(NULL, NULL);
			return 0;
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
		now = rpc_now_ms();
		if (s->lfd >= 0 && now >= s->accept_paused_until) {
			lidx = n;
			pfd[n++] = (struct pollfd){s->lfd, POLLIN, 0};
		} else if (s->lfd >= 0 && s->accept_paused_until - now < timeout) {
			timeout = (int)(s->accept_paused_until - now);
		}
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
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR) {
			rpc_mem_set_reclaim(NULL, NULL);
			return log_err(-errno, "serve: poll");
		}
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
	s->running = 0;
	rpc_mem_set_reclaim(NULL, NULL);
	if (s->cost_used_us > 1000000)
		log_info("serve: handlers took %lld ms in all",
			 (long long)(s->cost_used_us / 1000));
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
