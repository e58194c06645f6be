/* The node's one flow (spec §5, §6.4, §14): the state disk decides between first boot and
 * reboot; then one poll loop races, under one node lock, the init server (:9000) against the
 * join client (a round every 30 s over every endpoint), or the rejoin client against the
 * recovery server (:9999, control planes). The clients run one round at a time in a forked
 * child that hands its answer back over a pipe, so the server keeps serving while a dial
 * waits; the lock, the disk and everything after it stay in this one process, which is also
 * why the Init stream can stay open across switch_root until kubeadm has produced the
 * kubeconfig.
 *
 * Failures before the lock are retried forever (a line per round); after the lock the disk's
 * token is reset (the next boot formats), the reason printed, and the node reboots after
 * constel.reboot-delay. An initialized disk is never reset: a wrong key reboots without
 * touching it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>
#include <sodium.h>

#include "boot/boot.h"
#include "join.pb.h"
#include "kube/kube.h"
#include "net/net.h"
#include "node.h"

#define CHILD_MAX (8 * 1024 * 1024) /* a ticket with its components and files */
#define EP_MAX	  16

enum won { WON_NONE, WON_JOIN, WON_INIT, WON_REJOIN, WON_RECOVER };

struct node {
	const struct node_config *c;
	char state[PATH_MAX]; /* the state filesystem: <root>/run/state */
	struct disk disk;
	struct md_instance self;
	char lb_host[64];
	struct ssh_key ssh;
	struct node_lock lock;
	struct server srv;
	struct serve_params sp;
	struct grpc_method method;
	struct init_server *init;
	struct recover_server rec;
	char listen[96];
	/* the client round running in a child */
	pid_t child;
	int child_fd;
	uint8_t *cbuf;
	size_t clen;
	int64_t next_round;
	int rounds, gave_up;
	int rejoin; /* initialized disk: rejoin instead of join */
	enum won won;
	struct ticket *ticket;
	char kubelet_key[512];
	size_t kubelet_key_len;
	uint8_t disk_key[32], msecret[32];
	char hash[128];
	int init_ok;
};

/* mkdir -p of the folder holding path */
static int mkdir_for(const char *path, mode_t mode)
{
	char dir[PATH_MAX];
	int r;

	snprintf(dir, sizeof dir, "%s", path);
	if (strrchr(dir, '/'))
		*strrchr(dir, '/') = '\0';
	if ((r = mkdir_parents(dir, mode)) < 0)
		return log_err(r, "mkdir %s", dir);
	return 0;
}

static int path_in(char *out, size_t cap, const char *a, const char *b)
{
	if (snprintf(out, cap, "%s%s", a, b) >= (int)cap)
		return log_err(-ENAMETOOLONG, "path %s%s too long", a, b);
	return 0;
}

/* A file on the state filesystem, created exclusively with mode 0600 (§5.4: an existing file
 * fails the write), its directory made first. */
static int state_write(struct node *n, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	int r;

	if ((r = path_in(path, sizeof path, n->state, rel)) < 0 || (r = mkdir_for(path, 0755)) < 0)
		return r;
	if ((r = write_file_excl(path, data, len, 0600)) < 0)
		return log_err(r, "write %s", path);
	return 0;
}

/* ---- rebooting ---- */

/* The end of a fatal error: the reason, the reset of the disk when we formatted it and got
 * past the lock, the delay, the reboot. In host mode it returns instead. */
static int node_fatal(struct node *n, int reset, const char *why)
{
	log_error("fatal: %s", why);
	if (reset && n->disk.path[0]) {
		if (disk_reset(n->disk.path) == 0)
			log_error(
			    "state disk %s reset to not initialized: the next boot formats it",
			    n->disk.path);
	}
	if (!n->c->pid1) {
		log_error("host mode: a node would reboot in %d s now", n->c->reboot_delay_s);
		return -EIO;
	}
	log_error("rebooting in %d s", n->c->reboot_delay_s);
	sleep((unsigned)n->c->reboot_delay_s);
	boot_links_down();
	sync();
	reboot(RB_AUTOBOOT);
	return -EIO;
}

/* ---- the state filesystem ---- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	if (f->level == 0)
		return 0;
	return remove(p) < 0 ? -1 : 0;
}

static int state_fs_mount(struct node *n)
{
	int r;

	if (!n->c->pid1)
		return 0;
	if ((r = mkdir_parents(n->state, 0755)) < 0)
		return log_err(r, "mkdir %s", n->state);
	if (mount("/dev/mapper/" DISK_MAPPING, n->state, "ext4", 0, NULL) < 0)
		return log_err(-errno, "mounting /dev/mapper/%s at %s", DISK_MAPPING, n->state);
	return 0;
}

/* First boot: a fresh filesystem on the new mapping (PID 1), or an emptied folder (host). */
static int state_fs_new(struct node *n)
{
	int r;

	if (n->c->pid1)
		return (r = disk_mkfs(n->c->mke2fs, "/dev/mapper/" DISK_MAPPING)) < 0
			   ? r
			   : state_fs_mount(n);
	if ((r = mkdir_parents(n->state, 0755)) < 0)
		return log_err(r, "mkdir %s", n->state);
	if (nftw(n->state, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
		return log_err(-errno, "emptying %s", n->state);
	return 0;
}

/* §4: /var, /etc/kubernetes, /etc/cni and /opt of the real root live on the state disk. On a
 * node: bind mounts and switch_root; in host mode: symlinks in the root folder. */
static int handover(struct node *n)
{
	static const char *const map[][2] = {{"/var", "/var"},
					     {"/kubernetes", "/etc/kubernetes"},
					     {"/etccni", "/etc/cni"},
					     {"/opt", "/opt"}};
	char src[PATH_MAX], dst[PATH_MAX], rel[PATH_MAX];
	int r;

	if (n->c->pid1) {
		struct boot_root br = {.dev = n->c->real_root,
				       .fstype = n->c->root_fstype,
				       .roothash_hex = n->c->verity_roothash,
				       .hash_dev = n->c->verity_hashdev,
				       .hash_offset = n->c->verity_hashoffset,
				       .target = "/sysroot"};

		if (!n->c->real_root || !n->c->real_root[0]) {
			log_info("handover: no root= given: staying in the initramfs");
			return 0;
		}
		if ((r = boot_mount_root(&br)) < 0 ||
		    (r = boot_bind_state(n->state, "/sysroot")) < 0)
			return r;
		/* the lease's DNS servers for the real root (net/resolv.c); failing is one line */
		(void)resolv_conf_carry("/etc/resolv.conf", "/sysroot", "/run");
		if ((r = boot_switch_root("/sysroot")) < 0)
			return r;
		log_info("handover: switched to the real root %s", n->c->real_root);
		return 0;
	}
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if ((r = path_in(src, sizeof src, n->state, map[i][0])) < 0 ||
		    (r = mkdir_parents(src, 0755)) < 0 ||
		    (r = path_in(dst, sizeof dst, n->c->root, map[i][1])) < 0)
			return r;
		snprintf(rel, sizeof rel, "%s", dst);
		*strrchr(rel, '/') = '\0';
		if ((r = mkdir_parents(rel, 0755)) < 0)
			return log_err(r, "mkdir %s", rel);
		if (symlink(src, dst) < 0 && errno != EEXIST)
			return log_err(-errno, "host mode: symlink %s -> %s", dst, src);
	}
	log_info("handover: host mode: /var, /etc/kubernetes, /etc/cni, /opt of %s point at %s",
		 n->c->root, n->state);
	return 0;
}

/* ---- the join and rejoin rounds, each in a child ---- */

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
	char lb[64] = "";
	int ne = 0, cnt = 0;

	if (c->n_join) {
		for (int i = 0; i < c->n_join && ne < EP_MAX; i++)
			snprintf(eps[ne++], sizeof eps[0], "%s", c->join[i]);
		return ne;
	}
	if (md_endpoint(c->metadata, lb, sizeof lb) < 0)
		log_warn("join: no load-balancer endpoint from the metadata API");
	if (!(n->rejoin && n->self.control_plane && !strcmp(lb, n->self.vpc_ip)))
		ne = add_ep(eps, ne, lb, c->join_port);
	if (md_peers(c->metadata, peers, 32, &cnt) < 0)
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

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t w = write(fd, b, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		b += w;
		len -= (size_t)w;
	}
	return 0;
}

static int put_block(int fd, const void *p, uint32_t len)
{
	int r = write_all(fd, &len, sizeof len);

	return r < 0 ? r : write_all(fd, p, len);
}

/* One round in the child: every endpoint in order, the first answer goes to fd. */
static int round_child(struct node *n, int fd)
{
	const struct node_config *c = n->c;
	char eps[EP_MAX][128];
	int ne = endpoints(n, eps);

	if (!ne)
		log_warn("%s: no endpoint to try", n->rejoin ? "rejoin" : "join");
	for (int i = 0; i < ne; i++) {
		struct grpc_result res;
		uint8_t req[4096];
		size_t len;
		int r;

		if (n->rejoin) {
			join_IssueRejoinTicketRequest rq = join_IssueRejoinTicketRequest_init_zero;
			pb_ostream_t os = pb_ostream_from_buffer(req, sizeof req);

			snprintf(rq.disk_uuid, sizeof rq.disk_uuid, "%s", n->disk.uuid);
			if (!pb_encode(&os, join_IssueRejoinTicketRequest_fields, &rq))
				return 1;
			len = os.bytes_written;
			log_info("rejoin: IssueRejoinTicket at %s (disk %s)", eps[i], n->disk.uuid);
			r = flow_call(eps[i], c->issuer, "/join.API/IssueRejoinTicket", req, len,
				      c->call_timeout_ms, &res);
		} else {
			char pr[16][64], pem[512];
			const char *pp[16];
			struct p256_key key;
			int np = host_principals(pr, 16);
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
				return 1;
			log_info("join: IssueJoinTicket at %s for %s (disk %s)", eps[i],
				 n->self.name, n->disk.uuid);
			r = flow_call(eps[i], c->issuer, "/join.API/IssueJoinTicket", req, len,
				      c->call_timeout_ms, &res);
			if (r == 0 && res.status == GRPC_OK) {
				int k = kubelet_key_pem(&key, pem, sizeof pem);

				r = k < 0 ? k
					  : (write_all(fd, "T", 1) ?: put_block(fd, pem, (uint32_t)k))
						?: put_block(fd, res.response, (uint32_t)res.response_len);
				secret_wipe(pem, sizeof pem);
				p256_wipe(&key);
				return r < 0 ? 1 : 0;
			}
			p256_wipe(&key);
		}
		if (r < 0) {
			log_warn("%s: %s: %s", n->rejoin ? "rejoin" : "join", eps[i], strerror(-r));
			continue;
		}
		if (res.status != GRPC_OK) {
			log_warn("%s: %s: rpc error: code = %d desc = %s",
				 n->rejoin ? "rejoin" : "join", eps[i], res.status, res.message);
			free(res.response);
			continue;
		}
		r = (write_all(fd, "R", 1)
			 ?: put_block(fd, res.response, (uint32_t)res.response_len));
		return r < 0 ? 1 : 0;
	}
	return 1;
}

static void kill_child(struct node *n)
{
	if (n->child > 0) {
		kill(n->child, SIGKILL);
		waitpid(n->child, NULL, 0);
		n->child = 0;
	}
	if (n->child_fd >= 0) {
		if (n->srv.extra_fd == n->child_fd)
			n->srv.extra_fd = -1;
		close(n->child_fd);
		n->child_fd = -1;
	}
	if (n->cbuf) {
		secret_wipe(n->cbuf, n->clen);
		free(n->cbuf);
		n->cbuf = NULL;
		n->clen = 0;
	}
}

static void start_round(struct node *n)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		log_err(-errno, "join: pipe");
		n->next_round = rpc_now_ms() + n->c->interval_ms;
		return;
	}
	pid = fork();
	if (pid < 0) {
		log_err(-errno, "join: fork");
		close(fds[0]);
		close(fds[1]);
		n->next_round = rpc_now_ms() + n->c->interval_ms;
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		if (n->srv.lfd >= 0)
			close(n->srv.lfd);
		/* a round is bounded by its calls; this is the backstop */
		alarm((unsigned)((EP_MAX + 2) * (n->c->call_timeout_ms / 1000 + 10)));
		_exit(round_child(n, fds[1]));
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	n->child = pid;
	n->child_fd = fds[0];
	n->cbuf = malloc(CHILD_MAX);
	n->clen = 0;
	n->srv.extra_fd = fds[0];
	n->srv.extra_events = POLLIN;
}

static int get_block(struct node *n, size_t *off, const uint8_t **p, uint32_t *len)
{
	if (n->clen - *off < 4)
		return -EBADMSG;
	memcpy(len, n->cbuf + *off, 4);
	*off += 4;
	if (n->clen - *off < *len)
		return -EBADMSG;
	*p = n->cbuf + *off;
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

static void child_ready(struct node *n, short revents)
{
	int st = 0;

	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	for (;;) {
		ssize_t r = n->cbuf && n->clen < CHILD_MAX
				? read(n->child_fd, n->cbuf + n->clen, CHILD_MAX - n->clen)
				: 0;

		if (r > 0) {
			n->clen += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		break; /* EOF (or too much): the round is over */
	}
	waitpid(n->child, &st, 0);
	n->child = 0;
	n->srv.extra_fd = -1;
	close(n->child_fd);
	n->child_fd = -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && n->clen > 1 &&
	    n->cbuf[0] == (n->rejoin ? 'R' : 'T'))
		n->rejoin ? take_rejoin(n) : take_ticket(n);
	secret_wipe(n->cbuf, n->clen);
	free(n->cbuf);
	n->cbuf = NULL;
	n->clen = 0;
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

static void loop_ready(void *ctx, short revents)
{
	struct node *n = ctx;

	if (n->child_fd >= 0)
		child_ready(n, revents);
	else if (n->init)
		init_server_ready(n->init, revents);
	if (!n->child && !n->srv.stop && !n->lock.locked && n->won == WON_NONE &&
	    rpc_now_ms() >= n->next_round)
		start_round(n);
}

static int loop_timeout(void *ctx)
{
	struct node *n = ctx;
	int64_t t = -1;

	if (n->init && init_server_busy(n->init))
		t = 200;
	else if (n->child)
		t = 1000;
	else if (!n->srv.stop && !n->lock.locked) {
		t = n->next_round - rpc_now_ms();
		if (t < 0)
			t = 0;
	}
	return (int)(t > 60000 ? 60000 : t);
}

/* ---- the hooks of the init and recovery servers ---- */

static int write_ssh_certs(struct node *n, const uint8_t seed[32], const char *const *extra,
			   size_t n_extra)
{
	struct ssh_key ca;
	char line[160], cert[4096], pr[16][64];
	const char *pp[48];
	int np = host_principals(pr, 16), r = -EIO;
	size_t cnt = 0;

	for (int i = 0; i < np; i++)
		pp[cnt++] = pr[i];
	for (size_t i = 0; i < n_extra && cnt < 48; i++)
		pp[cnt++] = extra[i];
	if (crypto_sign_seed_keypair(ca.pk, ca.sk, seed) == 0 &&
	    ssh_authorized_key(ca.pk, line, sizeof line) >= 0 &&
	    ssh_host_cert_sign(seed, n->ssh.pk, pp, cnt, time(NULL), cert, sizeof cert) >= 0 &&
	    state_write(n, "/ssh/ssh_ca.pub", line, strlen(line)) == 0 &&
	    state_write(n, "/ssh/ssh_host_cert.pub", cert, strlen(cert)) == 0)
		r = 0;
	secret_wipe(&ca, sizeof ca);
	return r;
}

static int set_disk_key(struct node *n, const uint8_t key[32])
{
	struct secret *k = secret_from(key, 32);
	int r = k ? disk_set_key(&n->disk, k) : -ENOMEM;

	secret_free(k);
	return r;
}

static int init_locked(void *ctx, const struct init_keys *k, const struct init_info *info)
{
	struct node *n = ctx;
	char path[PATH_MAX];

	kill_child(n); /* the cleaner: the join client stops */
	n->won = WON_INIT;
	if (set_disk_key(n, k->disk_key) < 0 ||
	    path_in(path, sizeof path, n->state, "/" NODE_STATE_PATH) < 0 ||
	    mkdir_for(path, 0755) < 0 ||
	    node_state_write(path, "ControlPlane", k->measurement_salt) < 0 ||
	    write_ssh_certs(n, k->ssh_ca_seed, info->sans, info->n_sans) < 0 ||
	    disk_mark_initialized(&n->disk) < 0 || handover(n) < 0)
		return -EIO;
	if (n->c->before_kubeadm)
		n->c->before_kubeadm(n->c->hook_ctx);
	return 0;
}

static int install_components(struct node *n, const struct component_list *l)
{
	for (int i = 0; i < l->n; i++) {
		struct component c = {l->v[i].url, l->v[i].hash, l->v[i].path, l->v[i].extract};
		int r = component_install(&c, n->c->root, n->c->kubeadm_timeout_ms);

		if (r < 0)
			return r;
	}
	return 0;
}

static void kubeadm_path(struct node *n, char *out, size_t cap)
{
	if (n->c->kubeadm)
		snprintf(out, cap, "%s", n->c->kubeadm);
	else
		snprintf(out, cap, "%s/run/state/bin/kubeadm", n->c->root);
}

/* In the forked child: components, then the init sequence; the kubeconfig on out_fd. */
static int init_kubeadm(void *ctx, const struct init_info *info, int out_fd)
{
	struct node *n = ctx;
	char kubeadm[PATH_MAX], name[64];
	struct kubeadm_init ki = {.node_name = name,
				  .provider_name = n->self.name,
				  .node_ip = n->self.vpc_ip,
				  .lb_host = n->lb_host[0] ? n->lb_host : n->self.vpc_ip,
				  .kubernetes_version = info->kubernetes_version,
				  .cluster_name = info->cluster_name,
				  .service_cidr = info->service_cidr,
				  .cert_sans = info->sans,
				  .n_sans = info->n_sans,
				  .conformance = info->conformance};
	struct kube_init_run run = {
	    .c = &ki, .root = n->c->root, .timeout_ms = n->c->kubeadm_timeout_ms};

	if (kube_node_name(n->self.name, name, sizeof name) < 0)
		return 1;
	if (install_components(n, info->components) < 0)
		return 1;
	kubeadm_path(n, kubeadm, sizeof kubeadm);
	run.kubeadm = kubeadm;
	return kube_init_run(&run, out_fd) == 0 ? 0 : 1;
}

static void init_done(void *ctx, int ok)
{
	struct node *n = ctx;

	n->init_ok = ok;
}

static const struct init_hooks node_init_hooks = {init_locked, init_kubeadm, init_done};

static int recovered(void *ctx, const uint8_t disk_key[32], const uint8_t msecret[32])
{
	struct node *n = ctx;

	if (n->won != WON_NONE)
		return -EALREADY;
	kill_child(n);
	memcpy(n->disk_key, disk_key, 32);
	memcpy(n->msecret, msecret, 32);
	n->won = WON_RECOVER;
	return 0;
}

static const struct recover_hooks node_recover_hooks = {recovered};

/* ---- after the race ---- */

static int after_join(struct node *n)
{
	struct ticket *t = n->ticket;
	char path[PATH_MAX], kubeadm[PATH_MAX], name[64];
	struct kubeadm_join kj = {.node_name = n->self.name,
				  .provider_name = n->self.name,
				  .node_ip = n->self.vpc_ip,
				  .token = t->token,
				  .ca_cert_hash = t->ca_hash,
				  .control_plane = n->self.control_plane};
	struct kube_join_run run = {.j = &kj,
				    .root = n->c->root,
				    .attempts = n->c->kubeadm_attempts,
				    .retry_delay_ms = 1000,
				    .timeout_ms = n->c->kubeadm_timeout_ms};
	char endpoint[300];
	int r;

	if (!n->init_ok)
		return node_fatal(n, 1, "join: the node lock could not be marked in PCR 15");
	if ((r = set_disk_key(n, t->disk_key)) < 0)
		return node_fatal(n, 1, "join: the state disk did not take the cluster's key");
	for (int i = 0; i < t->n_files; i++) {
		snprintf(path, sizeof path, "/kubernetes/pki/%s", t->files[i].name);
		if (state_write(n, path, t->files[i].data, t->files[i].len) < 0)
			return node_fatal(n, 1, "join: writing the control-plane files failed");
	}
	if (state_write(n, "/kubelet/pki/kubelet-client-crt.pem", t->kubelet_cert,
			t->kubelet_cert_len) < 0 ||
	    state_write(n, "/kubelet/pki/kubelet-client-key.pem", n->kubelet_key,
			n->kubelet_key_len) < 0 ||
	    state_write(n, "/ssh/ssh_ca.pub", t->ssh_ca, strlen(t->ssh_ca)) < 0 ||
	    state_write(n, "/ssh/ssh_host_cert.pub", t->host_cert, strlen(t->host_cert)) < 0 ||
	    path_in(path, sizeof path, n->state, "/" NODE_STATE_PATH) < 0 ||
	    mkdir_for(path, 0755) < 0 ||
	    node_state_write(path, n->self.control_plane ? "ControlPlane" : "Worker", t->salt) < 0)
		return node_fatal(n, 1, "join: writing the ticket's files failed");
	if (disk_mark_initialized(&n->disk) < 0)
		return node_fatal(n, 1, "join: the state disk could not be marked initialized");
	secret_wipe(n->kubelet_key, sizeof n->kubelet_key);
	if (handover(n) < 0)
		return node_fatal(n, 1, "join: the handover to the real root failed");
	/* §5.4.2: kubeadm's endpoint is the load balancer of the metadata, not the ticket's */
	if (n->lb_host[0])
		snprintf(endpoint, sizeof endpoint, "%s:6443", n->lb_host);
	else
		snprintf(endpoint, sizeof endpoint, "%s", t->api_server_endpoint);
	kj.api_server_endpoint = endpoint;
	if (kube_node_name(n->self.name, name, sizeof name) < 0)
		return node_fatal(n, 1, "join: the node name is not a Kubernetes name");
	kj.node_name = name;
	if ((r = install_components(n, &t->comps)) < 0)
		return node_fatal(n, 1, "join: installing the Kubernetes components failed");
	kubeadm_path(n, kubeadm, sizeof kubeadm);
	run.kubeadm = kubeadm;
	if (n->c->before_kubeadm)
		n->c->before_kubeadm(n->c->hook_ctx);
	if ((r = kube_join_run(&run)) != 0)
		return node_fatal(n, 1, "join: kubeadm join failed");
	log_info("join: the node joined the cluster");
	return 0;
}

static int after_rejoin(struct node *n)
{
	struct secret *k = secret_from(n->disk_key, 32);
	char path[PATH_MAX];
	uint8_t salt[32], cid[32];
	int r;

	r = k ? disk_unlock(&n->disk, k) : -ENOMEM;
	secret_free(k);
	secret_wipe(n->disk_key, sizeof n->disk_key);
	if (r < 0)
		return node_fatal(n, 0, "the state disk did not open with the key we were given");
	if (state_fs_mount(n) < 0)
		return node_fatal(n, 0, "the state filesystem did not mount");
	if (path_in(path, sizeof path, n->state, "/" NODE_STATE_PATH) < 0 ||
	    node_state_read(path, salt) < 0)
		return node_fatal(n, 0, "the node-state file is missing or broken");
	r = cluster_id_derive(n->msecret, salt, 32, cid);
	secret_wipe(n->msecret, sizeof n->msecret);
	if (r < 0 || lock_try_once(&n->lock, cid) <= 0)
		return node_fatal(n, 0, "marking the node in PCR 15 failed");
	if (handover(n) < 0)
		return node_fatal(n, 0, "the handover to the real root failed");
	log_info("rejoin: state disk open, node marked; kubelet can start");
	return 0;
}

/* ---- the node ---- */

static int self_from_metadata(struct node *n)
{
	const struct node_config *c = n->c;

	if (c->name && c->role && c->ip) {
		snprintf(n->self.name, sizeof n->self.name, "%s", c->name);
		snprintf(n->self.vpc_ip, sizeof n->self.vpc_ip, "%s", c->ip);
		n->self.control_plane = !strcmp(c->role, "control-plane");
	} else {
		for (int i = 1;; i++) {
			if (md_self(c->metadata, &n->self) == 0 && n->self.name[0])
				break;
			if (c->rounds && i >= c->rounds)
				return log_err(-ETIMEDOUT, "metadata: no /self after %d tries", i);
			log_warn("metadata: /self failed; again in %d s", c->interval_ms / 1000);
			usleep((useconds_t)c->interval_ms * 1000);
		}
		if (c->name)
			snprintf(n->self.name, sizeof n->self.name, "%s", c->name);
		if (c->ip)
			snprintf(n->self.vpc_ip, sizeof n->self.vpc_ip, "%s", c->ip);
		if (c->role)
			n->self.control_plane = !strcmp(c->role, "control-plane");
	}
	if (!c->n_join && md_endpoint(c->metadata, n->lb_host, sizeof n->lb_host) < 0)
		n->lb_host[0] = '\0';
	log_info("node: %s, %s, %s", n->self.name,
		 n->self.control_plane ? "control plane" : "worker",
		 n->self.vpc_ip[0] ? n->self.vpc_ip : "no IP");
	return 0;
}

static int init_hash(struct node *n)
{
	const struct node_config *c = n->c;

	if (c->init_secret_hash) {
		snprintf(n->hash, sizeof n->hash, "%s", c->init_secret_hash);
		return 0;
	}
	for (int i = 1;; i++) {
		if (md_init_secret_hash(c->metadata, n->hash, sizeof n->hash) == 0 && n->hash[0])
			return 0;
		if (c->rounds && i >= c->rounds)
			return log_err(-ETIMEDOUT, "metadata: no init secret hash after %d tries",
				       i);
		log_warn("metadata: /initsecrethash failed; again in %d s", c->interval_ms / 1000);
		usleep((useconds_t)c->interval_ms * 1000);
	}
}

static int listen_on(struct node *n, int port)
{
	char err[256];

	snprintf(n->listen, sizeof n->listen, "%s:%d", n->c->listen_host, port);
	n->srv.lfd = tcp_listen_on(n->listen, err, sizeof err);
	if (n->srv.lfd < 0) {
		log_error("node: %s", err);
		return n->srv.lfd;
	}
	log_info("node: %s server listening on %s (port %d)", n->rejoin ? "recovery" : "init",
		 n->listen, tcp_local_port(n->srv.lfd));
	return 0;
}

static int race(struct node *n)
{
	int r;

	n->srv.lfd = -1;
	n->srv.extra_fd = -1;
	n->srv.extra_ready = loop_ready;
	n->srv.extra_timeout_ms = loop_timeout;
	n->srv.ctx = n;
	n->srv.tls.issuer = n->c->issuer;
	n->sp.issuer = n->c->issuer;
	n->sp.tpm = n->c->tpm;
	n->sp.disk_uuid = n->disk.uuid;
	n->sp.kubeadm_timeout_ms = n->c->kubeadm_timeout_ms;
	n->sp.lock = &n->lock;
	n->sp.hooks_ctx = n;
	if (!n->rejoin) {
		n->sp.init_secret_hash = n->hash;
		n->sp.init_hooks = &node_init_hooks;
		if ((r = init_server_new(&n->sp, &n->srv, &n->init)) < 0)
			return r;
		n->method = (struct grpc_method){init_method, init_handle, n->init};
		if ((r = listen_on(n, n->c->init_port)) < 0)
			return r;
	} else if (n->self.control_plane) {
		n->sp.recover_hooks = &node_recover_hooks;
		n->rec = (struct recover_server){&n->srv, &n->sp};
		n->method = (struct grpc_method){recover_method, recover_handle, &n->rec};
		if ((r = listen_on(n, n->c->recover_port)) < 0)
			return r;
	}
	n->srv.methods = &n->method;
	n->srv.n_methods = n->srv.lfd >= 0 ? 1 : 0;
	n->next_round = rpc_now_ms();
	r = serve_run(&n->srv);
	kill_child(n);
	if (n->init)
		init_server_abort(n->init);
	return r;
}

static void node_free(struct node *n)
{
	kill_child(n);
	init_server_free(n->init);
	if (n->ticket) {
		ticket_free(n->ticket);
		free(n->ticket);
	}
	secret_wipe(n->kubelet_key, sizeof n->kubelet_key);
	secret_wipe(n->disk_key, sizeof n->disk_key);
	secret_wipe(n->msecret, sizeof n->msecret);
	secret_wipe(&n->ssh, sizeof n->ssh);
	disk_close(&n->disk);
}

int node_run(const struct node_config *c)
{
	struct node *n = calloc(1, sizeof *n);
	char path[PATH_MAX], err[256];
	int r, st;

	if (!n)
		return -ENOMEM;
	n->c = c;
	n->child_fd = -1;
	n->lock.tcti = c->tpm;
	snprintf(n->state, sizeof n->state, "%s" DISK_MOUNT, c->root);
	if (c->tpm && lock_check_unmarked(c->tpm, err, sizeof err) < 0) {
		r = node_fatal(n, 0, err);
		goto out;
	}
	timeline_mark("disk");
	if (disk_find(c->csp, c->state_disk, path, sizeof path) < 0) {
		r = node_fatal(n, 0, "no state disk");
		goto out;
	}
	st = disk_open(&n->disk, path, NULL, c->kdf);
	if (st < 0) {
		r = node_fatal(n, 0, "the state disk's header was refused; it is left untouched");
		goto out;
	}
	n->disk.no_dm = !c->pid1;
	n->rejoin = st == DISK_INITIALIZED;
	if (!n->rejoin) {
		log_info("disk: %s: %s", path,
			 st == DISK_NEW ? "not LUKS2: a new disk"
					: "LUKS2 without the initialized token: its data is "
					  "disposable");
		if (disk_format(&n->disk) < 0 || state_fs_new(n) < 0) {
			r = node_fatal(n, 0, "preparing the new state disk failed");
			goto out;
		}
	} else {
		log_info("disk: %s: initialized (uuid %s): the rejoin path", path, n->disk.uuid);
	}
	timeline_mark("metadata");
	if ((r = self_from_metadata(n)) < 0)
		goto out;
	if (!n->rejoin) {
		/* §14: host_public_key is mandatory, so the key exists before the first round */
		if (path_in(path, sizeof path, n->state, "/ssh/ssh_host_ed25519_key") < 0 ||
		    mkdir_for(path, 0700) < 0 ||
		    ssh_host_key_load(path, 1, &n->ssh, err, sizeof err) < 0) {
			r = node_fatal(n, 0, "the SSH host key could not be made");
			goto out;
		}
		if ((r = init_hash(n)) < 0)
			goto out;
	}
	timeline_mark(n->rejoin ? "rejoin" : "join-or-init");
	r = race(n);
	timeline_mark("activate");
	switch (n->won) {
	case WON_JOIN:
		r = after_join(n);
		break;
	case WON_INIT:
		r = r == 0 && n->init_ok ? 0 : node_fatal(n, 1, "init failed after the node lock");
		break;
	case WON_REJOIN:
	case WON_RECOVER:
		r = after_rejoin(n);
		break;
	default:
		r = r < 0 ? r : -ETIMEDOUT;
		log_error("node: neither path finished");
	}
out:
	node_free(n);
	free(n);
	return r;
}
