/* A gRPC server over aTLS in one poll loop: up to SERVE_MAX_CONNS connections, each with a
 * fresh certificate for its client's nonce, plus one extra descriptor for the handlers (the
 * kubeadm child of the init server). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flow.h"
#include "net/net.h"

static void conn_close(struct serve_conn *c)
{
	grpc_server_conn_free(c->rpc);
	atls_free(c->tls);
	close(c->fd);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

static void accept_one(struct server *s)
{
	struct serve_conn *slot = NULL;
	struct rpc_io io;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	for (int i = 0; i < SERVE_MAX_CONNS; i++)
		if (s->conns[i].fd < 0) {
			slot = &s->conns[i];
			break;
		}
	if (!slot) {
		log_warn("serve: %d connections open, refusing another", SERVE_MAX_CONNS);
		close(fd);
		return;
	}
	slot->fd = fd;
	tcp_nodelay(fd);
	if (s->on_accept)
		s->on_accept(s->ctx);
	if (atls_server_new(&s->tls, fd, &slot->tls) < 0) {
		conn_close(slot);
		return;
	}
	rpc_io_atls(&io, slot->tls);
	if (grpc_server_conn_new(&io, s->methods, s->n_methods, &slot->rpc) < 0) {
		conn_close(slot);
		return;
	}
	log_debug("serve: new connection");
}

int serve_run(struct server *s)
{
	struct pollfd pfd[SERVE_MAX_CONNS + 2];
	int64_t stop_at = 0;

	if (!s->running)
		for (int i = 0; i < SERVE_MAX_CONNS; i++)
			s->conns[i].fd = -1;
	s->running = 1;
	for (;;) {
		int n = 0, timeout = 1000, open = 0, busy = 0;

		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];
			int r;

			if (c->fd < 0)
				continue;
			if (!c->dead) {
				r = grpc_server_conn_step(c->rpc);
				if (r != 0) {
					if (r < 0 && atls_established(c->tls))
						log_debug("serve: connection ended: %s",
							  strerror(-r));
					else if (r < 0)
						log_warn("serve: aTLS handshake failed: %s",
							 atls_error(c->tls));
					c->dead = 1;
				}
			}
			if (c->dead && !grpc_server_conn_busy(c->rpc)) {
				conn_close(c);
				continue;
			}
			open++;
			busy |= grpc_server_conn_busy(c->rpc);
		}
		if (s->pause) {
			s->pause = 0;
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
		if (s->lfd >= 0)
			pfd[n++] = (struct pollfd){s->lfd, POLLIN, 0};
		for (int i = 0; i < SERVE_MAX_CONNS; i++) {
			struct serve_conn *c = &s->conns[i];
			int t;

			if (c->fd < 0 || c->dead)
				continue;
			pfd[n++] = (struct pollfd){c->fd, grpc_server_conn_events(c->rpc), 0};
			t = grpc_server_conn_timeout_ms(c->rpc);
			if (t >= 0 && t < timeout)
				timeout = t;
		}
		if (s->extra_fd >= 0)
			pfd[n++] = (struct pollfd){s->extra_fd, s->extra_events, 0};
		if (s->extra_timeout_ms) {
			int t = s->extra_timeout_ms(s->ctx);

			if (t >= 0 && t < timeout)
				timeout = t;
		}
		if (s->stop && timeout > 100)
			timeout = 100;
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			return log_err(-errno, "serve: poll");
		if (s->lfd >= 0 && (pfd[0].revents & POLLIN))
			accept_one(s);
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
