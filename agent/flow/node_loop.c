/* The node's one poll loop: serve_run polls the servers' connections and one extra
 * descriptor, an epoll set in which each descriptor has one owner: the supervisor's signalfd
 * (shutdown signals, children's exits), the join round's pipe, the init server's kubeadm
 * pipe, the DHCP renewal's socket (PID 1 is the node's network manager for its life). The
 * supervisor is seen to on every turn, so a shutdown signal ends any wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/net.h"
#include "node_internal.h"

int node_loop_open(struct node *n)
{
	n->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (n->epfd < 0)
		return log_err(-errno, "node: epoll");
	return node_loop_watch(n, sv_fd(n->sv), OWN_SV, 1);
}

void node_loop_close(struct node *n)
{
	if (n->epfd >= 0)
		close(n->epfd);
	n->epfd = -1;
}

int node_loop_watch(struct node *n, int fd, enum node_owner owner, int on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = owner};

	if (fd < 0 || n->epfd < 0)
		return -EBADF;
	if (epoll_ctl(n->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev) < 0)
		return log_err(-errno, "node: epoll_ctl");
	return 0;
}

/* The init server's kubeadm pipe joins the set when it appears and leaves it before the
 * server closes it (at its end of file). */
static void init_turn(struct node *n, short revents)
{
	int fd;

	if (!n->init)
		return;
	fd = init_server_fd(n->init);
	if (fd != n->init_fd && n->init_fd >= 0)
		n->init_fd = -1; /* closed by the server: gone from the set with it */
	if (fd >= 0 && n->init_fd < 0 && node_loop_watch(n, fd, OWN_INIT, 1) == 0)
		n->init_fd = fd;
	if (revents || init_server_busy(n->init))
		init_server_ready(n->init, revents);
	if (n->init_fd >= 0 && init_server_fd(n->init) != n->init_fd)
		n->init_fd = -1;
}

/* The DHCP lease: its socket is in the set only while a renewal runs. */
static void dhcp_turn(struct node *n, int readable)
{
	int fd;

	if (readable || dhcp_lease_next_ms() == 0)
		dhcp_lease_handle();
	fd = dhcp_lease_fd();
	if (fd != n->dhcp_fd) {
		if (n->dhcp_fd >= 0)
			epoll_ctl(n->epfd, EPOLL_CTL_DEL, n->dhcp_fd, NULL); /* EBADF: closed */
		n->dhcp_fd = fd >= 0 && node_loop_watch(n, fd, OWN_DHCP, 1) == 0 ? fd : -1;
	}
}

void node_loop_ready(void *ctx, short revents)
{
	struct node *n = ctx;
	struct epoll_event ev[8];
	short init_ev = 0;
	int k = revents ? epoll_wait(n->epfd, ev, 8, 0) : 0, dhcp = 0;

	for (int i = 0; i < k; i++) {
		if (ev[i].data.u32 == OWN_ROUND && n->round_fd >= 0)
			round_ready(n);
		else if (ev[i].data.u32 == OWN_INIT)
			init_ev = POLLIN;
		else if (ev[i].data.u32 == OWN_DHCP)
			dhcp = 1;
	}
	init_turn(n, init_ev);
	dhcp_turn(n, dhcp);
	if (sv_handle(n->sv) && !n->sig) {
		n->sig = n->sv->shutdown_signal;
		n->srv.stop = 1;
		return;
	}
	round_reap(n);
	wipe_turn(n);
	if (!n->round && !n->srv.stop && !n->lock.locked && n->won == WON_NONE &&
	    rpc_now_ms() >= n->next_round)
		round_start(n);
}

int node_loop_timeout(void *ctx)
{
	struct node *n = ctx;
	int64_t t = sv_next_ms(n->sv), d = dhcp_lease_next_ms();

	if (d >= 0 && d < t)
		t = d;
	if (n->init && init_server_busy(n->init) && t > 200)
		t = 200;
	if (!n->round && !n->srv.stop && !n->lock.locked && n->won == WON_NONE &&
	    n->next_round - rpc_now_ms() < t)
		t = n->next_round - rpc_now_ms();
	return (int)(t < 0 ? 0 : t);
}

int node_wait(struct node *n, int ms)
{
	int64_t end = rpc_now_ms() + ms;

	for (;;) {
		struct pollfd p[2] = {{.fd = sv_fd(n->sv), .events = POLLIN},
				      {.fd = dhcp_lease_fd(), .events = POLLIN}};
		int64_t left = end - rpc_now_ms();
		int t = sv_next_ms(n->sv), d = dhcp_lease_next_ms();

		if (sv_handle(n->sv)) {
			n->sig = n->sv->shutdown_signal;
			return n->sig;
		}
		round_reap(n);
		if (left <= 0)
			return 0;
		if (d >= 0 && d < t)
			t = d;
		poll(p, p[1].fd >= 0 ? 2 : 1, left < t ? (int)left : t);
		/* a reply, or a timer of the lease (a RENEW retry, the REBIND, a new DISCOVER):
		 * a lost packet must never stop the state machine */
		if ((p[1].fd >= 0 && p[1].revents) || dhcp_lease_next_ms() == 0)
			dhcp_lease_handle();
	}
}
