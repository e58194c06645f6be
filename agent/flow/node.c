/* The node's one flow (spec §5, §6.4, §14; ARCHITECTURE's steps 3 to 8), read top to bottom
 * in node_run: the TPM, the state disk, who we are, the race for the key under one node lock
 * (the init server against the join client, or the rejoin client against the recovery
 * server), the state disk's files, the handover and kubeadm, then the node stays up under
 * the supervisor. The rounds run in supervised children (node_round.c); every descriptor is
 * polled in one loop (node_loop.c); PID 1 and host mode differ in node_ops.c only.
 *
 * Failures before the lock are retried forever (a line per round); after the lock the disk's
 * token is reset (the next boot formats), the reason printed, and the node reboots after
 * constel.reboot-delay. An initialized disk is never reset. A shutdown signal ends every
 * wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "node_internal.h"

#define INIT_TIMEOUT_MS	    (60 * 60 * 1000) /* the CLI's 1 h */
#define DOWNLOAD_TIMEOUT_MS (5 * 60 * 1000)

/* mkdir -p of the folder holding path */
int node_mkdir_for(const char *path, mode_t mode)
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

/* A file on the state filesystem, created exclusively with mode 0600 (§5.4: an existing file
 * fails the write), its directory made first. */
static int state_write(struct node *n, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	int r;

	if ((r = path_in(path, sizeof path, n->state, rel)) < 0 ||
	    (r = node_mkdir_for(path, 0755)) < 0)
		return r;
	if ((r = write_file_excl(path, data, len, 0600)) < 0)
		return log_err(r, "write %s", path);
	return 0;
}

/* The reason a cloud shows its user: why, and the last error line before it (the place that
 * gave up says precisely what failed). Log lines never hold secrets. */
static void failure_reason(const char *why, char *out, size_t cap)
{
	static char ring[LOG_RING_SIZE];
	size_t n = log_ring_copy(ring, sizeof ring - 1);
	char *last = NULL, *e;

	ring[n] = 0;
	for (char *p = ring; (p = strstr(p, ": error: ")); p++)
		last = p + 9;
	if (last && (e = strchr(last, '\n')))
		*e = 0;
	snprintf(out, cap, "%s%s%s", why, last ? ": " : "", last ? last : "");
}

/* The end of a fatal error: the reason, the reset of the disk when we formatted it and got
 * past the lock, the delay (a shutdown signal cuts it short), the reboot. In host mode it
 * returns -EIO. */
static int node_fatal(struct node *n, int reset, const char *why)
{
	int report = !n->ready && n->ops == &node_pid1_ops;
	char reason[512];

	if (report)
		failure_reason(why, reason, sizeof reason);
	log_error("fatal: %s", why);
	if (report)
		cloud_report_failure(&n->cloud, reason); /* Azure: NotReady with the reason */
	/* a wipe still running: the disk has no token yet (the next boot formats it anyway), and
	 * its header is not written while the wipe's mapping may be active */
	if (n->wipe)
		reset = 0;
	if (reset && n->disk.path[0]) {
		if (disk_reset(n->disk.path) == 0)
			log_error(
			    "state disk %s reset to not initialized: the next boot formats it",
			    n->disk.path);
	}
	if (n->ops == &node_pid1_ops) {
		log_error("rebooting in %d s", n->c->reboot_delay_s);
		node_wait(n, n->c->reboot_delay_s * 1000);
	}
	n->ops->end(n, n->sig ? n->sig : SIGINT);
	return -EIO;
}

/* A shutdown signal ended a wait: PID 1 goes down; host mode ends cleanly. */
static int node_shutdown(struct node *n)
{
	log_info("node: %s received: shutting down", n->sig == SIGTERM	? "SIGTERM"
						     : n->sig == SIGINT ? "SIGINT"
									: "SIGPWR");
	n->ops->end(n, n->sig);
	return 0;
}

/* ---- step 5: the state disk ---- */

/* dm-crypt, dm-integrity, their ciphers and AF_ALG, loaded in the background while the
 * network and the peers are waited for (agent/boot/modules.c): before the first use (a no-op
 * once they are in, or without background loading). */
static void disk_modules(void)
{
	(void)modules_wait(MODULES_DISK, MODULES_WAIT_MS);
}

static int open_state_disk(struct node *n)
{
	char path[PATH_MAX];
	int st;

	if (n->c->state_disk ? disk_find(n->c->csp, n->c->state_disk, path, sizeof path) < 0
			     : cloud_state_disk(&n->cloud, path, sizeof path) < 0)
		return node_fatal(n, 0, "no state disk");
	st = disk_open(&n->disk, path, NULL, n->c->kdf);
	if (st < 0)
		return node_fatal(n, 0,
				  "the state disk's header was refused; it is left untouched");
	n->disk.no_dm = n->ops != &node_pid1_ops;
	n->rejoin = st == DISK_INITIALIZED;
	if (n->rejoin) {
		log_info("disk: %s: initialized (uuid %s): the rejoin path", path, n->disk.uuid);
		return 0;
	}
	log_info("disk: %s: %s", path,
		 st == DISK_NEW ? "not LUKS2: a new disk"
				: "LUKS2 without the initialized token: its data is disposable");
	disk_modules();
	n->disk.no_wipe = n->c->disk_wipe == DISK_WIPE_NONE; /* format, zero what mkfs reads */
	if (n->c->disk_wipe != DISK_WIPE_SYNC && !n->disk.no_dm) {
		/* the wipe (full) and mke2fs beside the race; node_disk_ready finishes before the
		 * key change */
		if (disk_format_header(&n->disk) < 0 || wipe_start(n) < 0)
			return node_fatal(n, 0, "preparing the new state disk failed");
		return 0;
	}
	if (disk_format(&n->disk) < 0 || n->ops->state_fs_new(n) < 0)
		return node_fatal(n, 0, "preparing the new state disk failed");
	n->disk_ready = 1;
	return 0;
}

/* ---- step 4: who we are ---- */

/* Retries a metadata call every interval until it works, a test's bound, or a signal. */
static int metadata_wait(struct node *n, int try, const char *what)
{
	if (n->c->rounds && try >= n->c->rounds)
		return log_err(-ETIMEDOUT, "metadata: no %s after %d tries", what, try);
	log_warn("metadata: %s failed; again in %d s", what, n->c->interval_ms / 1000);
	return node_wait(n, n->c->interval_ms) ? -EINTR : 0;
}

static int self_from_metadata(struct node *n)
{
	const struct node_config *c = n->c;
	int r;

	for (int i = 1; !(c->name && c->role && c->ip); i++) {
		if (cloud_self(&n->cloud, &n->self) == 0 && n->self.name[0])
			break;
		if ((r = metadata_wait(n, i, "/self")) < 0)
			return r;
	}
	if (c->name)
		snprintf(n->self.name, sizeof n->self.name, "%s", c->name);
	if (c->ip)
		snprintf(n->self.vpc_ip, sizeof n->self.vpc_ip, "%s", c->ip);
	if (c->role)
		n->self.control_plane = !strcmp(c->role, "control-plane");
	else if (n->self.no_role)
		return log_err(-EOPNOTSUPP,
			       "node: %s does not say the node's role; constel.role= is needed",
			       n->cloud.ops->name);
	if (!c->n_join && cloud_lb_endpoint(&n->cloud, n->lb_host, sizeof n->lb_host) < 0)
		n->lb_host[0] = '\0';
	if (kube_node_name(n->self.name, n->kube_name, sizeof n->kube_name) < 0)
		return log_err(-EINVAL, "node: %s is not a Kubernetes node name", n->self.name);
	log_info("node: %s, %s, %s", n->self.name,
		 n->self.control_plane ? "control plane" : "worker",
		 n->self.vpc_ip[0] ? n->self.vpc_ip : "no IP");
	return 0;
}

static int init_hash(struct node *n)
{
	const struct node_config *c = n->c;
	int r;

	if (c->init_secret_hash) {
		snprintf(n->hash, sizeof n->hash, "%s", c->init_secret_hash);
		return 0;
	}
	for (int i = 1;; i++) {
		if (cloud_init_secret_hash(&n->cloud, n->hash, sizeof n->hash) == 0 && n->hash[0])
			return 0;
		if ((r = metadata_wait(n, i, "/initsecrethash")) < 0)
			return r;
	}
}

/* §14: host_public_key is mandatory, so the key exists before the first round */
static int ssh_host_key(struct node *n)
{
	char path[PATH_MAX], err[256];

	/* the disk is being wiped: the key lives in memory until node_disk_ready stores it */
	if (!n->disk_ready)
		return ssh_key_generate(&n->ssh) < 0 ? log_err(-EIO, "ssh: no host key") : 0;
	if (path_in(path, sizeof path, n->state, "/ssh/ssh_host_ed25519_key") < 0 ||
	    node_mkdir_for(path, 0700) < 0 ||
	    ssh_host_key_load(path, 1, &n->ssh, err, sizeof err) < 0)
		return log_err(-EIO, "ssh: %s", err);
	return 0;
}

/* ---- the hooks of the init and recovery servers (inside the race) ---- */

static int write_ssh_certs(struct node *n, const uint8_t seed[32], const char *const *extra,
			   size_t n_extra)
{
	struct ssh_key ca;
	char line[160], cert[4096], pr[16][64];
	const char *pp[48];
	int np = host_principals(n->kube_name, pr, 16), r = -EIO;
	size_t cnt = 0;

	for (int i = 0; i < np; i++)
		pp[cnt++] = pr[i];
	for (size_t i = 0; i < n_extra && cnt < 48; i++)
		pp[cnt++] = extra[i];
	if (ssh_key_from_seed(&ca, seed) == 0 &&
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
	struct secret *k;
	int r;

	disk_modules();
	if (node_disk_ready(n) < 0)
		return -EIO;
	k = secret_from(key, 32);
	r = k ? disk_set_key(&n->disk, k) : -ENOMEM;

	secret_free(k);
	return r;
}

static int write_node_state(struct node *n, const char *role, const uint8_t *salt)
{
	char path[PATH_MAX];

	if (path_in(path, sizeof path, n->state, "/" NODE_STATE_PATH) < 0 ||
	    node_mkdir_for(path, 0755) < 0)
		return -EIO;
	return node_state_write(path, role, salt);
}

/* Init won the lock: store the keys (the disk's token flips to initialized last). The
 * handover and kubeadm follow in node_run, after the race. */
static int init_locked(void *ctx, const struct init_keys *k, const struct init_info *info)
{
	struct node *n = ctx;

	round_kill(n); /* the cleaner: the join client stops */
	n->won = WON_INIT;
	if (set_disk_key(n, k->disk_key) < 0 ||
	    write_node_state(n, "ControlPlane", k->measurement_salt) < 0 ||
	    write_ssh_certs(n, k->ssh_ca_seed, info->sans, info->n_sans) < 0 ||
	    disk_mark_initialized(&n->disk) < 0)
		return -EIO;
	return 0;
}

static int install_components(struct node *n, const struct component_list *l)
{
	int bound = n->c->download_timeout_ms > 0 ? n->c->download_timeout_ms : DOWNLOAD_TIMEOUT_MS;

	for (int i = 0; i < l->n; i++) {
		struct component c = {l->v[i].url, l->v[i].hash, l->v[i].path, l->v[i].extract};
		int r = component_install(&c, n->c->root, bound);

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

static int init_bound(const struct node *n)
{
	return n->c->init_timeout_ms > 0 ? n->c->init_timeout_ms : INIT_TIMEOUT_MS;
}

/* In the supervised kubeadm child: components, then the init sequence; the kubeconfig on
 * out_fd. */
static int init_kubeadm(void *ctx, const struct init_info *info, int out_fd)
{
	struct node *n = ctx;
	char kubeadm[PATH_MAX];
	struct kubeadm_init ki = {.node_name = n->kube_name,
				  .provider_name = n->self.name,
				  .node_ip = n->self.vpc_ip,
				  .lb_host = n->lb_host[0] ? n->lb_host : n->self.vpc_ip,
				  .kubernetes_version = info->kubernetes_version,
				  .cluster_name = info->cluster_name,
				  .service_cidr = info->service_cidr,
				  .cert_sans = info->sans,
				  .n_sans = info->n_sans,
				  .conformance = info->conformance};
	struct kube_init_run run = {.c = &ki, .root = n->c->root, .timeout_ms = init_bound(n)};

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

/* A Recover's keys: tested on the disk first, so that whoever reaches :9999 with a wrong key
 * cannot stop the rejoin; a key that opens the disk ends the race. */
static int recovered(void *ctx, const uint8_t disk_key[32], const uint8_t msecret[32])
{
	struct node *n = ctx;

	if (n->won != WON_NONE)
		return -EALREADY;
	disk_modules();
	if (disk_check_key(&n->disk, disk_key, 32) < 0) {
		log_warn("recover: the key does not open the state disk: refused; the rejoin "
			 "goes on");
		return -EACCES;
	}
	round_kill(n);
	memcpy(n->disk_key, disk_key, 32);
	memcpy(n->msecret, msecret, 32);
	n->won = WON_RECOVER;
	return 0;
}

static const struct recover_hooks node_recover_hooks = {recovered};

/* ---- step 6: the race ---- */

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

/* The server and the client race until one wins the lock, the Init pauses the server for
 * the handover, a test's round bound is reached, or a shutdown signal arrives. */
static int race(struct node *n)
{
	int r;

	n->srv.lfd = -1;
	n->srv.extra_fd = n->epfd;
	n->srv.extra_events = POLLIN;
	n->srv.extra_ready = node_loop_ready;
	n->srv.extra_timeout_ms = node_loop_timeout;
	n->srv.ctx = n;
	n->srv.tls.issuer = n->c->issuer;
	n->sp.issuer = n->c->issuer;
	n->sp.tpm = n->c->tpm;
	n->sp.disk_uuid = n->disk.uuid;
	n->sp.kubeadm_timeout_ms = init_bound(n);
	n->sp.lock = &n->lock;
	n->sp.hooks_ctx = n;
	n->sp.sv = n->sv;
	n->sp.pause_after_lock = 1;
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
	round_kill(n);
	return r;
}

/* ---- step 7: the state disk's files ---- */

static int store_ticket(struct node *n)
{
	struct ticket *t = n->ticket;
	char path[PATH_MAX];

	if (!n->init_ok)
		return node_fatal(n, 1, "join: the node lock could not be marked in PCR 15");
	if (set_disk_key(n, t->disk_key) < 0)
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
	    write_node_state(n, n->self.control_plane ? "ControlPlane" : "Worker", t->salt) < 0)
		return node_fatal(n, 1, "join: writing the ticket's files failed");
	secret_wipe(n->kubelet_key, sizeof n->kubelet_key);
	/* last: a crash before this formats again instead of a rejoin without files */
	if (disk_mark_initialized(&n->disk) < 0)
		return node_fatal(n, 1, "join: the state disk could not be marked initialized");
	return 0;
}

static int unlock_state_disk(struct node *n)
{
	struct secret *k = secret_from(n->disk_key, 32);
	char path[PATH_MAX];
	uint8_t salt[32], cid[32];
	int r;

	disk_modules();
	r = k ? disk_unlock(&n->disk, k) : -ENOMEM;
	secret_free(k);
	secret_wipe(n->disk_key, sizeof n->disk_key);
	if (r < 0)
		return node_fatal(n, 0, "the state disk did not open with the key we were given");
	if (n->ops->state_fs_mount(n) < 0)
		return node_fatal(n, 0, "the state filesystem did not mount");
	if (path_in(path, sizeof path, n->state, "/" NODE_STATE_PATH) < 0 ||
	    node_state_read(path, salt) < 0)
		return node_fatal(n, 0, "the node-state file is missing or broken");
	r = cluster_id_derive(n->msecret, salt, 32, cid);
	secret_wipe(n->msecret, sizeof n->msecret);
	if (r < 0 || lock_try_once(&n->lock, cid) <= 0)
		return node_fatal(n, 0, "marking the node in PCR 15 failed");
	log_info("rejoin: state disk open, node marked; kubelet can start");
	return 0;
}

/* ---- step 8: the handover ---- */

/* 1 when the file at path holds exactly data (len bytes), else 0. */
static int file_holds(const char *path, const char *data, size_t len)
{
	char buf[96];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = len < sizeof buf ? read_full(fd, buf, sizeof buf) : -1;
	close(fd);
	return n == (ssize_t)len && !memcmp(buf, data, len);
}

/* The real root, the hostname (kubelet registers under it), containerd and kubelet. The
 * hostname file is written (and synced) only when it changed: on a reboot it holds the same
 * name, and its sync through dm-integrity's journal was ~30 ms of the rejoin under TCG. */
static int handover(struct node *n)
{
	char path[PATH_MAX], line[80];

	if (n->ops->switch_root(n) < 0)
		return -EIO;
	snprintf(line, sizeof line, "%s\n", n->kube_name);
	if (n->ops->set_hostname(n->kube_name) < 0 ||
	    path_in(path, sizeof path, n->state, "/etc/hostname") < 0 ||
	    (!file_holds(path, line, strlen(line)) &&
	     write_file_replace(path, line, strlen(line), 0644) < 0))
		return log_err(-EIO, "handover: the hostname %s could not be set", n->kube_name);
	n->ops->start_services(n);
	return 0;
}

/* In the supervised kubeadm child: components, then kubeadm join with its attempts. */
static int join_child(void *arg)
{
	struct node *n = arg;
	struct ticket *t = n->ticket;
	char kubeadm[PATH_MAX], endpoint[300];
	struct kubeadm_join kj = {.node_name = n->kube_name,
				  .provider_name = n->self.name,
				  .node_ip = n->self.vpc_ip,
				  .token = t->token,
				  .ca_cert_hash = t->ca_hash,
				  .api_server_endpoint = endpoint,
				  .control_plane = n->self.control_plane};
	struct kube_join_run run = {.j = &kj,
				    .kubeadm = kubeadm,
				    .root = n->c->root,
				    .attempts = n->c->kubeadm_attempts,
				    .retry_delay_ms = 1000,
				    .timeout_ms = n->c->kubeadm_timeout_ms};

	/* §5.4.2: kubeadm's endpoint is the load balancer of the metadata, not the ticket's */
	if (n->lb_host[0])
		snprintf(endpoint, sizeof endpoint, "%s:6443", n->lb_host);
	else
		snprintf(endpoint, sizeof endpoint, "%s", t->api_server_endpoint);
	kubeadm_path(n, kubeadm, sizeof kubeadm);
	if (install_components(n, &t->comps) < 0) {
		log_error("join: installing the Kubernetes components failed");
		return 2;
	}
	return kube_join_run(&run) == 0 ? 0 : 1;
}

static int kubeadm_join(struct node *n)
{
	int attempts = n->c->kubeadm_attempts > 0 ? n->c->kubeadm_attempts : 1;
	struct sv_child c = {.name = "kubeadm join",
			     .policy = SV_ONCE,
			     .run = join_child,
			     .arg = n,
			     .deadline_ms = (int64_t)monotonic_ms() + init_bound(n) +
					    (int64_t)attempts * (n->c->kubeadm_timeout_ms + 1000)};
	struct sv_child *k = sv_add(n->sv, &c);
	int st;

	if (!k || k->pid <= 0)
		return node_fatal(n, 1, "join: kubeadm join could not be started");
	while (!k->done)
		if (node_wait(n, 1000))
			return node_shutdown(n);
	st = k->last_status;
	sv_release(k);
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 2)
		return node_fatal(n, 1,
				  WIFEXITED(st)
				      ? "join: installing the Kubernetes components failed"
				      : "join: kubeadm join did not finish in its bound");
	if (WEXITSTATUS(st) != 0)
		return node_fatal(n, 1, "join: kubeadm join failed");
	log_info("join: the node joined the cluster");
	return 0;
}

/* The Init stream is still open: kubeadm init runs while the server serves on, until the
 * kubeconfig is sent (or the CLI is gone: the node stays up all the same). */
static int kubeadm_init(struct node *n)
{
	if (init_server_start_kubeadm(n->init) == 0)
		serve_run(&n->srv);
	if (n->sig)
		return node_shutdown(n);
	if (!n->init_ok)
		return node_fatal(n, 1, "init failed after the node lock");
	return 0;
}

/* The node is up: PID 1 supervises until a shutdown signal; host mode returns. */
static int stay_up(struct node *n)
{
	timeline_mark("done");
	if (n->ops != &node_pid1_ops)
		return 0;
	timeline_write(n->c->timeline_path);
	if (n->c->init) {
		char *const argv[] = {(char *)n->c->init, NULL};

		log_info("handing PID 1 to %s", n->c->init);
		sv_close(n->sv);
		execv(n->c->init, argv);
		return node_fatal(n, 0, "constel.init could not be executed");
	}
	while (!node_wait(n, 60000))
		;
	return node_shutdown(n);
}

/* ---- the node ---- */

static void node_free(struct node *n)
{
	round_kill(n);
	wipe_kill(n);
	if (n->init)
		init_server_abort(n->init);
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
	node_loop_close(n);
	if (n->sv == &n->own_sv) {
		sv_stop(n->sv);
		sv_close(n->sv);
	}
}

static struct node *node_new(const struct node_config *c)
{
	struct node *n = calloc(1, sizeof *n);
	char err[160];

	if (!n)
		return NULL;
	if (cloud_select(c->csp, c->metadata, &n->cloud, err, sizeof err) < 0) {
		log_error("node: %s", err);
		free(n);
		return NULL;
	}
	n->cloud.api = c->cloud_api;
	n->cloud.ca_bundle = c->cloud_ca;
	n->c = c;
	n->ops = c->pid1 ? &node_pid1_ops : &node_host_ops;
	n->round_fd = -1;
	n->wipe_fd = -1;
	n->init_fd = -1;
	n->dhcp_fd = -1;
	n->epfd = -1;
	n->lock.tcti = c->tpm;
	snprintf(n->state, sizeof n->state, "%s" DISK_MOUNT, c->root);
	n->sv = c->sv;
	if (!n->sv) {
		n->sv = &n->own_sv;
		n->sv->children = n->sv_slots;
		n->sv->cap = NODE_SV_SLOTS;
		n->sv->stop_timeout_ms = 5000;
	}
	if (sv_open(n->sv) < 0 || node_loop_open(n) < 0) {
		node_free(n);
		free(n);
		return NULL;
	}
	return n;
}

int node_run(const struct node_config *c)
{
	struct node *n = node_new(c);
	char err[256];
	int r;

	if (!n)
		return -ENOMEM;
	/* 3: PCR 15 must be zero */
	if (c->tpm && lock_check_unmarked(c->tpm, err, sizeof err) < 0) {
		r = node_fatal(n, 0, err);
		goto out;
	}
	/* the real root, verified before the state disk is touched or any key asked for */
	timeline_mark("root");
	if (n->ops->open_root(n) < 0) {
		r = node_fatal(n, 0,
			       "the real root could not be verified; the state disk is "
			       "left untouched");
		goto out;
	}
	/* 5: the state disk (new: formatted now and wiped beside the race, or before it with
	 * constel.disk-wipe=sync; initialized: the rejoin path) */
	timeline_mark("disk");
	if ((r = open_state_disk(n)) < 0)
		goto out;
	/* 4: who we are */
	timeline_mark("metadata");
	if ((r = self_from_metadata(n)) < 0 ||
	    (!n->rejoin && ((r = ssh_host_key(n)) < 0 || (r = init_hash(n)) < 0))) {
		r = n->sig ? node_shutdown(n) : node_fatal(n, 0, "no node identity");
		goto out;
	}
	/* the cloud's first-boot chore (Azure: Ready to the wireserver), bounded; a failure is
	 * one line and no reason not to join */
	if (n->ops == &node_pid1_ops && cloud_first_boot(&n->cloud) < 0)
		log_warn("node: %s's first-boot report failed; joining anyway", n->cloud.ops->name);
	n->ready = 1;
	/* the SNP variants: configfs (configfs-tsm, tried before /dev/sev-guest) mounted before
	 * the first report; its module and sev-guest load in the disk phase */
	if (n->ops == &node_pid1_ops && strstr(n->c->variant, "-sev-snp")) {
		(void)modules_wait(MODULES_DISK, MODULES_WAIT_MS);
		(void)boot_configfs_mount();
	}
	/* 6: the key, raced for under the node lock */
	timeline_mark(n->rejoin ? "rejoin" : "join-or-init");
	r = race(n);
	timeline_mark("activate");
	if (n->sig) {
		r = node_shutdown(n);
		goto out;
	}
	if (n->won == WON_NONE && (n->wipe_state < 0 || n->disk_ready < 0)) {
		r = node_fatal(n, 0, "preparing the new state disk failed");
		goto out;
	}
	/* 7: the state disk's files (Init's were stored by its hook) */
	switch (n->won) {
	case WON_JOIN:
		r = store_ticket(n);
		break;
	case WON_INIT:
		/* paused for the handover with the keys stored, or stopped by a failure */
		if (n->srv.stop)
			r = node_fatal(n, 1, "init failed after the node lock");
		break;
	case WON_REJOIN:
	case WON_RECOVER:
		r = unlock_state_disk(n);
		break;
	default:
		log_error("node: neither path finished");
		r = node_fatal(n, 0, "no key for the state disk");
	}
	if (r < 0)
		goto out;
	/* 8: the handover, kubeadm, and the node stays up */
	if (handover(n) < 0) {
		r = node_fatal(n, n->won == WON_JOIN || n->won == WON_INIT,
			       "the handover to the real root failed");
		goto out;
	}
	if (n->won == WON_JOIN)
		r = kubeadm_join(n);
	else if (n->won == WON_INIT)
		r = kubeadm_init(n);
	if (r == 0 && !n->sig)
		r = stay_up(n);
out:
	node_free(n);
	free(n);
	return r;
}
