/* The join and rejoin rounds (spec §5.4 step 3, §6.4): one round at a time in a child of
 * the supervisor, every endpoint in order, the first answer handed back over a pipe that the
 * node's poll loop reads, so the servers keep serving while a dial waits. The lock and the
 * disk stay in the node's process. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "join.pb.h"
#include "node_internal.h"
#include "rpc/rpc.h"

#define ROUND_MAX (8 * 1024 * 1024) /* a ticket with its components and files */
#define EP_MAX	  16

static int add_ep(char (*eps)[128], int ne, const char *host, int port)
{
	char ep[128];

	if (!host[0] || ne == EP_MAX)
		return ne;
	snprintf(ep, sizeof ep, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	for (int i = 0; i < ne; i++)
		if (!strcmp(eps[i], ep))
			return ne;
	snprintf(eps[ne], sizeof eps[ne], "%s", ep);
	return ne + 1;
}

/* §5.4 step 3, §6.4: the load balancer, then every control plane; a control plane that
 * rejoins leaves itself out. */
static int endpoints(struct node *n, char (*eps)[128])
{
	const struct node_config *c = n->c;
	struct md_instance peers[32];
	char lb[128] = "";
	int ne = 0, cnt = 0;

	if (c->n_join) {
		for (int i = 0; i < c->n_join && ne < EP_MAX; i++)
			snprintf(eps[ne++], sizeof eps[0], "%s", c->join[i]);
		return ne;
	}
	if (cloud_lb_endpoint(&n->cloud, lb, sizeof lb) < 0)
		log_warn("join: no load-balancer endpoint from the metadata API");
	if (!(n->rejoin && n->self.control_plane && !strcmp(lb, n->self.vpc_ip)))
		ne = add_ep(eps, ne, lb, c->join_port);
	if (cloud_peers(&n->cloud, peers, 32, &cnt) < 0)
		log_warn("join: no peers from the metadata API");
	for (int i = 0; i < cnt && i < 32; i++) {
		if (!peers[i].control_plane || !peers[i].vpc_ip[0])
			continue;
		if (n->rejoin && n->self.control_plane && !strcmp(peers[i].vpc_ip, n->self.vpc_ip))
			continue;
		ne = add_ep(eps, ne, peers[i].vpc_ip, c->join_port);
	}
	return ne;
}

static int put_block(int fd, const void *p, uint32_t len)
{
	int r = write_all(fd, &len, sizeof len);

	return r < 0 ? r : write_all(fd, p, len);
}

static int call_rejoin(struct node *n, const char *ep, struct grpc_result *res)
{
	join_IssueRejoinTicketRequest rq = join_IssueRejoinTicketRequest_init_zero;
	uint8_t req[512];
	pb_ostream_t os = pb_ostream_from_buffer(req, sizeof req);

	snprintf(rq.disk_uuid, sizeof rq.disk_uuid, "%s", n->disk.uuid);
	if (!pb_encode(&os, join_IssueRejoinTicketRequest_fields, &rq))
		return -EINVAL;
	log_info("rejoin: IssueRejoinTicket at %s (disk %s)", ep, n->disk.uuid);
	return flow_call(ep, n->c->issuer, "/join.API/IssueRejoinTicket", req, os.bytes_written,
			 n->c->call_timeout_ms, res);
}

/* IssueJoinTicket at ep; an answer goes to fd with the kubelet key it was made for. 1 when
 * the answer was handed over. */
static int call_join(struct node *n, const char *ep, int fd, struct grpc_result *res)
{
	char pr[16][64], pem[512];
	const char *pp[16];
	uint8_t req[4096];
	size_t len;
	struct p256_key key;
	int np = host_principals(n->kube_name, pr, 16), r, k;
	struct join_request jr = {.name = n->self.name,
				  .disk_uuid = n->disk.uuid,
				  .ip = n->self.vpc_ip,
				  .control_plane = n->self.control_plane,
				  .ssh_pk = n->ssh.pk,
				  .principals = pp,
				  .n_principals = (size_t)np};

	for (int j = 0; j < np; j++)
		pp[j] = pr[j];
	if (join_request_build(&jr, &key, req, sizeof req, &len) < 0)
		return -EINVAL;
	log_info("join: IssueJoinTicket at %s for %s (disk %s)", ep, n->self.name, n->disk.uuid);
	r = flow_call(ep, n->c->issuer, "/join.API/IssueJoinTicket", req, len,
		      n->c->call_timeout_ms, res);
	if (r == 0 && res->status == GRPC_OK) {
		k = kubelet_key_pem(&key, pem, sizeof pem);
		r = k < 0 ? k
			  : (write_all(fd, "T", 1) ?: put_block(fd, pem, (uint32_t)k))
				?: put_block(fd, res->response, (uint32_t)res->response_len);
		secret_wipe(pem, sizeof pem);
		r = r < 0 ? r : 1;
	}
	p256_wipe(&key);
	return r;
}

/* One round in the child: every endpoint in order, the first answer goes to fd. */
static int round_child(void *arg)
{
	struct node *n = arg;
	const char *what = n->rejoin ? "rejoin" : "join";
	char eps[EP_MAX][128];
	int ne, fd = n->round_fd;

	if (n->srv.lfd >= 0)
		close(n->srv.lfd);
	ne = endpoints(n, eps);
	if (!ne)
		log_warn("%s: no endpoint to try", what);
	for (int i = 0; i < ne; i++) {
		struct grpc_result res = {0};
		int r = n->rejoin ? call_rejoin(n, eps[i], &res) : call_join(n, eps[i], fd, &res);

		if (r > 0) {
			rpc_free(res.response); /* the ticket, handed over */
			return 0;
		}
		if (r < 0) {
			rpc_free(res.response);
			log_warn("%s: %s: %s", what, eps[i], strerror(-r));
			continue;
		}
		if (res.status != GRPC_OK) {
			log_warn("%s: %s: rpc error: code = %d desc = %s", what, eps[i], res.status,
				 res.message);
			rpc_free(res.response);
			continue;
		}
		r = write_all(fd, "R", 1)
			?: put_block(fd, res.response, (uint32_t)res.response_len);
		rpc_free(res.response); /* the disk key and the measurement secret */
		return r < 0 ? 1 : 0;
	}
	return 1;
}

static void drop_buffer(struct node *n)
{
	if (n->rbuf) {
		/* the whole block: the ticket or the disk key, wherever the reads put them */
		secret_wipe(n->rbuf, ROUND_MAX);
		free(n->rbuf);
		n->rbuf = NULL;
		n->rlen = 0;
	}
}

static void close_pipe(struct node *n)
{
	if (n->round_fd >= 0) {
		node_loop_watch(n, n->round_fd, OWN_ROUND, 0);
		close(n->round_fd);
		n->round_fd = -1;
	}
}

void round_reap(struct node *n)
{
	if (n->round && n->round->done && n->round_fd < 0) {
		sv_release(n->round);
		n->round = NULL;
	}
}

void round_kill(struct node *n)
{
	if (n->round && n->round->pid > 0) {
		kill(-n->round->pid, SIGKILL);
		kill(n->round->pid, SIGKILL);
	}
	close_pipe(n);
	drop_buffer(n);
}

void round_start(struct node *n)
{
	struct sv_child c = {.name = n->rejoin ? "rejoin round" : "join round",
			     .policy = SV_ONCE,
			     .run = round_child,
			     .arg = n};
	int fds[2];

	round_reap(n);
	if (n->round) /* the last one has not been reaped yet */
		return;
	n->next_round = rpc_now_ms() + n->c->interval_ms;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		log_err(-errno, "join: pipe");
		return;
	}
	/* a round is bounded by its calls; this is the backstop */
	c.deadline_ms = (int64_t)monotonic_ms() + (EP_MAX + 2) * (n->c->call_timeout_ms + 10000);
	n->round_fd = fds[1]; /* the child's end, while it forks */
	n->round = sv_add(n->sv, &c);
	close(fds[1]);
	n->round_fd = -1;
	if (!n->round || n->round->pid <= 0) {
		close(fds[0]);
		sv_release(n->round);
		n->round = NULL;
		return;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	if (!n->rounds && !n->rejoin)
		timeline_event("first-join-round"); /* beside the wipe on a first boot */
	n->round_fd = fds[0];
	n->rbuf = malloc(ROUND_MAX);
	n->rlen = 0;
	node_loop_watch(n, fds[0], OWN_ROUND, 1);
}

static int get_block(struct node *n, size_t *off, const uint8_t **p, uint32_t *len)
{
	if (n->rlen - *off < 4)
		return -EBADMSG;
	memcpy(len, n->rbuf + *off, 4);
	*off += 4;
	if (n->rlen - *off < *len)
		return -EBADMSG;
	*p = n->rbuf + *off;
	*off += *len;
	return 0;
}

/* A join answer: decode, derive the cluster ID, TryLockOnce. */
static void take_ticket(struct node *n)
{
	const uint8_t *pem, *resp;
	uint32_t pem_len, resp_len;
	size_t off = 1;
	char err[256];
	int r;

	if (get_block(n, &off, &pem, &pem_len) < 0 || get_block(n, &off, &resp, &resp_len) < 0 ||
	    pem_len >= sizeof n->kubelet_key) {
		log_error("join: the round's answer is malformed");
		return;
	}
	n->ticket = calloc(1, sizeof *n->ticket);
	if (!n->ticket)
		return;
	if (ticket_decode(resp, resp_len, n->ticket, err, sizeof err) < 0) {
		log_error("join: %s", err);
		secret_wipe(n->ticket, sizeof *n->ticket); /* ticket_decode freed its parts */
		free(n->ticket);
		n->ticket = NULL;
		return;
	}
	r = lock_try_once(&n->lock, n->ticket->cluster_id);
	if (r == 0) { /* Init holds the lock: it won */
		log_info("join: ticket received, but the node is already being initialized");
		ticket_free(n->ticket);
		free(n->ticket);
		n->ticket = NULL;
		return;
	}
	memcpy(n->kubelet_key, pem, pem_len);
	n->kubelet_key_len = pem_len;
	n->won = WON_JOIN;
	n->init_ok = r > 0; /* < 0: the lock is taken but not marked: fatal after the loop */
	n->srv.stop = 1;
}

static void take_rejoin(struct node *n)
{
	join_IssueRejoinTicketResponse resp = join_IssueRejoinTicketResponse_init_zero;
	const uint8_t *buf;
	uint32_t len;
	size_t off = 1;
	pb_istream_t is;

	if (get_block(n, &off, &buf, &len) < 0)
		return;
	is = pb_istream_from_buffer(buf, len);
	if (!pb_decode(&is, join_IssueRejoinTicketResponse_fields, &resp) ||
	    resp.state_disk_key.size != 32 || resp.measurement_secret.size != 32) {
		log_error("rejoin: the response does not hold two 32-byte keys");
	} else {
		memcpy(n->disk_key, resp.state_disk_key.bytes, 32);
		memcpy(n->msecret, resp.measurement_secret.bytes, 32);
		n->won = WON_REJOIN;
		n->srv.stop = 1;
	}
	secret_wipe(&resp, sizeof resp);
}

/* The pipe is readable: read what there is; at its end the round is over. */
void round_ready(struct node *n)
{
	for (;;) {
		ssize_t r = n->rbuf && n->rlen < ROUND_MAX
				? read(n->round_fd, n->rbuf + n->rlen, ROUND_MAX - n->rlen)
				: 0;

		if (r > 0) {
			n->rlen += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		break; /* EOF (or too much): the round is over */
	}
	close_pipe(n);
	if (n->rlen > 1 && n->rbuf[0] == (n->rejoin ? 'R' : 'T'))
		n->rejoin ? take_rejoin(n) : take_ticket(n);
	drop_buffer(n);
	if (n->won != WON_NONE)
		return;
	n->rounds++;
	if (n->c->rounds && n->rounds >= n->c->rounds) {
		log_error("%s: no answer after %d rounds: giving up (a test's bound)",
			  n->rejoin ? "rejoin" : "join", n->rounds);
		n->gave_up = 1;
		n->srv.stop = 1;
		return;
	}
	log_warn("%s: round %d failed; the next in %d s", n->rejoin ? "rejoin" : "join", n->rounds,
		 n->c->interval_ms / 1000);
	n->next_round = rpc_now_ms() + n->c->interval_ms;
}
