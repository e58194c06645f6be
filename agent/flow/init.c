/* The init server (spec §5.5) as a host command: serves /init.API/Init over aTLS until one
 * call succeeded. The init secret is checked against a bcrypt hash; the keys of §3.3 are
 * derived from the request's master secret; a command stands in for the kubeadm init
 * sequence and its standard output is the kubeconfig. Failures are answered the way the CLI
 * expects: one init_failure, then the logs in chunks of at most 1024 bytes, then EOF. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "boot/boot.h"
#include "flow.h"
#include "init.pb.h"
#include "kube/kube.h"
#include "net/net.h"

#define KUBECONFIG_MAX (1024 * 1024)
#define LOG_CHUNK      1024

struct init_server {
	struct server *srv;
	const struct serve_params *p;
	char hash[BCRYPT_HASH_LEN + 2];
	size_t hash_len;
	struct node_lock own_lock, *lock;
	const struct init_hooks *hooks;
	void *hooks_ctx;
	/* the Init between the lock and kubeadm's start (kept for the child) */
	init_InitRequest *req;
	struct component_list comps;
	const char *sans[32];
	struct init_info info;
	/* the running kubeadm stand-in */
	pid_t child;
	struct sv_child *svc; /* the supervisor's slot of the child (serve_params.sv) */
	int pipe_fd, out_fd;
	int64_t deadline;
	uint8_t *out;
	size_t out_len;
	struct grpc_stream *stream;
	uint8_t cluster_id[32];
};

static int send_response(struct grpc_stream *s, const init_InitResponse *m)
{
	size_t len;
	uint8_t *buf;
	pb_ostream_t os;
	int r;

	if (!pb_get_encoded_size(&len, init_InitResponse_fields, m))
		return -EINVAL;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	os = pb_ostream_from_buffer(buf, len);
	r = pb_encode(&os, init_InitResponse_fields, m) ? grpc_stream_send(s, buf, len) : -EINVAL;
	secret_wipe(buf, len);
	free(buf);
	return r;
}

/* init_failure with why, then our log lines as log messages, then the end of the stream. */
static void fail(struct grpc_stream *s, const char *why)
{
	init_InitResponse *m = calloc(1, sizeof *m);
	char *logs = malloc(LOG_RING_SIZE);
	size_t n;

	log_error("init: %s", why);
	if (!m || !logs) {
		grpc_stream_finish(s, GRPC_INTERNAL, why);
		free(m);
		free(logs);
		return;
	}
	m->which_kind = init_InitResponse_init_failure_tag;
	snprintf(m->kind.init_failure.error, sizeof m->kind.init_failure.error, "%s", why);
	send_response(s, m);
	n = log_ring_copy(logs, LOG_RING_SIZE);
	for (size_t off = 0; off < n; off += LOG_CHUNK) {
		size_t l = n - off < LOG_CHUNK ? n - off : LOG_CHUNK;

		memset(m, 0, sizeof *m);
		m->which_kind = init_InitResponse_log_tag;
		m->kind.log.log.size = (pb_size_t)l;
		memcpy(m->kind.log.log.bytes, logs + off, l);
		send_response(s, m);
	}
	grpc_stream_finish(s, GRPC_OK, NULL);
	free(m);
	free(logs);
}

static bool encode_kubeconfig(pb_ostream_t *os, const pb_field_t *f, void *const *arg)
{
	const struct init_server *st = *arg;

	return pb_encode_tag_for_field(os, f) && pb_encode_string(os, st->out, st->out_len);
}

static int write_hex(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char hex[130];

	hex_encode(b, n, hex, sizeof hex - 1);
	strcat(hex, "\n");
	return flow_write(dir, name, hex, strlen(hex));
}

/* The host command's kubeadm: the command with /bin/sh, the request in the environment. */
static int default_kubeadm(void *ctx, const struct init_info *info, int out_fd)
{
	struct init_server *st = ctx;
	char sans[2048] = "";

	dup2(out_fd, STDOUT_FILENO);
	for (size_t i = 0; i < info->n_sans; i++) {
		if (i)
			strncat(sans, ",", sizeof sans - strlen(sans) - 1);
		strncat(sans, info->sans[i], sizeof sans - strlen(sans) - 1);
	}
	setenv("CONSTEL_KUBERNETES_VERSION", info->kubernetes_version, 1);
	setenv("CONSTEL_CLUSTER_NAME", info->cluster_name, 1);
	setenv("CONSTEL_SERVICE_CIDR", info->service_cidr, 1);
	setenv("CONSTEL_APISERVER_CERT_SANS", sans, 1);
	setenv("CONSTEL_CONFORMANCE_MODE", info->conformance ? "true" : "false", 1);
	execl("/bin/sh", "sh", "-c", st->p->kubeadm_cmd, (char *)NULL);
	return 127;
}

/* The host command's store: the keys as files in out_dir. */
static int default_locked(void *ctx, const struct init_keys *k, const struct init_info *info)
{
	struct init_server *st = ctx;
	struct ssh_key ca;
	char line[160];
	int r = -EIO;

	(void)info;
	if (ssh_key_from_seed(&ca, k->ssh_ca_seed) == 0 &&
	    ssh_authorized_key(ca.pk, line, sizeof line) >= 0 &&
	    flow_write(st->p->out_dir, "state_disk_key", k->disk_key, 32) == 0 &&
	    flow_write(st->p->out_dir, "measurement_salt", k->measurement_salt, 32) == 0 &&
	    write_hex(st->p->out_dir, "cluster_id", k->cluster_id, 32) == 0 &&
	    flow_write(st->p->out_dir, "ssh_ca.pub", line, strlen(line)) == 0)
		r = 0;
	secret_wipe(&ca, sizeof ca);
	return r;
}

static const struct init_hooks default_hooks = {default_locked, default_kubeadm, NULL};

static int kubeadm_child(void *arg)
{
	struct init_server *st = arg;

	close(st->pipe_fd);
	return st->hooks->kubeadm(st->hooks_ctx, &st->info, st->out_fd);
}

/* Starts the kubeadm hook in a child (the supervisor's, or our own fork) with its stdout on
 * a pipe the poll loop reads, within kubeadm_timeout_ms. */
static int start_kubeadm(struct init_server *st)
{
	int fds[2], timeout = st->p->kubeadm_timeout_ms > 0 ? st->p->kubeadm_timeout_ms : 3600000;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	st->pipe_fd = fds[0];
	st->out_fd = fds[1];
	st->out_len = 0;
	st->deadline = rpc_now_ms() + timeout;
	if (st->p->sv) {
		struct sv_child c = {.name = "kubeadm init",
				     .policy = SV_ONCE,
				     .run = kubeadm_child,
				     .arg = st,
				     .deadline_ms = (int64_t)monotonic_ms() + timeout};

		st->svc = sv_add(st->p->sv, &c);
		pid = st->svc && st->svc->pid > 0 ? st->svc->pid : -EAGAIN;
		if (pid < 0)
			sv_release(st->svc);
	} else {
		pid = fork();
		if (pid == 0) {
			setpgid(0, 0);
			_exit(kubeadm_child(st) & 0xff);
		}
		pid = pid < 0 ? -errno : pid;
		if (pid > 0)
			setpgid(pid, pid);
	}
	close(fds[1]);
	st->out_fd = -1;
	if (pid < 0) {
		close(fds[0]);
		st->pipe_fd = -1;
		return (int)pid;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	st->child = pid;
	if (!st->p->sv) {
		st->srv->extra_fd = fds[0];
		st->srv->extra_events = POLLIN;
	}
	return 0;
}

/* The request is kept only until the child has its copy: the init secret and the master
 * secret go with it. */
static void drop_request(struct init_server *st)
{
	if (st->req) {
		secret_wipe(st->req, sizeof *st->req);
		free(st->req);
		st->req = NULL;
	}
	component_list_free(&st->comps);
	memset(&st->info, 0, sizeof st->info);
}

static void finish_kubeadm(struct init_server *st, int status)
{
	char why[256];

	st->srv->stop = 1;
	if (status == 0) {
		init_InitResponse m = init_InitResponse_init_zero;

		m.which_kind = init_InitResponse_init_success_tag;
		m.kind.init_success.kubeconfig.funcs.encode = encode_kubeconfig;
		m.kind.init_success.kubeconfig.arg = st;
		m.kind.init_success.cluster_id.size = 32;
		memcpy(m.kind.init_success.cluster_id.bytes, st->cluster_id, 32);
		/* the cluster is up whether or not the CLI is still there to hear it (as the Go
		 * bootstrapper: no reset, no reboot) */
		int r = send_response(st->stream, &m), f;

		/* finished either way: the stream is freed only then */
		f = grpc_stream_finish(st->stream, GRPC_OK, NULL);
		if (!r)
			r = f;
		if (r == 0)
			log_info("init: done, kubeconfig of %zu bytes sent", st->out_len);
		else
			log_warn("init: done, but the CLI hung up before the kubeconfig was "
				 "delivered (%s); the node stays up",
				 strerror(-r));
		st->srv->exit_code = 0;
	} else {
		if (status > 0)
			snprintf(why, sizeof why, "init: kubeadm init: exit status %d", status);
		else
			snprintf(why, sizeof why, "init: kubeadm init: %s", strerror(-status));
		/* After the lock a failure is final: the node would reset and reboot. */
		fail(st->stream, why);
		st->srv->exit_code = 1;
	}
	st->stream = NULL;
	if (st->hooks->done)
		st->hooks->done(st->hooks_ctx, st->srv->exit_code == 0);
}

/* 1 when the kubeadm child has exited, its wait status in *wst. */
static int child_exited(struct init_server *st, int *wst)
{
	if (!st->svc)
		return waitpid(st->child, wst, WNOHANG) == st->child;
	if (!st->svc->done)
		return 0;
	*wst = st->svc->last_status < 0 ? (128 + SIGKILL) << 8 : st->svc->last_status;
	sv_release(st->svc);
	st->svc = NULL;
	return 1;
}

void init_server_ready(struct init_server *st, short revents)
{
	int wst;

	if (st->pipe_fd >= 0 && revents) {
		for (;;) {
			ssize_t n;

			if (st->out_len == KUBECONFIG_MAX) {
				kill(st->child, SIGKILL);
				n = 0;
			} else {
				n = read(st->pipe_fd, st->out + st->out_len,
					 KUBECONFIG_MAX - st->out_len);
			}
			if (n > 0) {
				st->out_len += (size_t)n;
				continue;
			}
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			close(st->pipe_fd);
			st->pipe_fd = st->srv->extra_fd = -1;
			break;
		}
	}
	if (st->child > 0 && !st->svc && rpc_now_ms() > st->deadline) {
		log_error("init: kubeadm init: no exit within %d s, killing its process group",
			  (int)(st->p->kubeadm_timeout_ms / 1000));
		kill(-st->child, SIGKILL);
		kill(st->child, SIGKILL);
		st->deadline = INT64_MAX;
	}
	if (st->child > 0 && st->pipe_fd < 0 && child_exited(st, &wst)) {
		st->child = 0;
		if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && st->out_len == KUBECONFIG_MAX)
			finish_kubeadm(st, -EFBIG);
		else
			finish_kubeadm(st, WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst));
	}
}

int init_server_timeout(struct init_server *st)
{
	return st->child > 0 ? 200 : -1;
}

const char init_method[] = "/init.API/Init";

void init_handle(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	struct init_server *st = ctx;
	init_InitRequest *req = calloc(1, sizeof *req);
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);
	struct kms kms = {0};
	struct component_list comps = {0};
	struct init_info info = {.sans = st->sans, .components = &st->comps};
	uint8_t msecret[32], disk_key[32], seed[32];
	char err[256];
	int r;

	if (!req) {
		grpc_stream_finish(s, GRPC_INTERNAL, "out of memory");
		return;
	}
	if (st->lock->locked) {
		log_warn("init: refusing a second Init: node is already being activated");
		grpc_stream_finish(s, GRPC_FAILED_PRECONDITION, "node is already being activated");
		goto out;
	}
	req->kubernetes_components.funcs.decode = component_list_decode;
	req->kubernetes_components.arg = &comps;
	if (!pb_decode(&is, init_InitRequest_fields, req)) {
		snprintf(err, sizeof err, "malformed InitRequest: %s", PB_GET_ERROR(&is));
		fail(s, err);
		goto out;
	}
	log_info("init: request for Kubernetes %s, cluster '%s', %d components",
		 req->kubernetes_version, req->cluster_name, comps.n);
	r = bcrypt_check(st->hash, st->hash_len, req->init_secret.bytes, req->init_secret.size, err,
			 sizeof err);
	if (r == -EACCES) {
		fail(s, "invalid init secret: crypto/bcrypt: hashedPassword is not the hash of the "
			"given password");
		goto out;
	}
	if (r < 0) {
		fail(s, err);
		goto out;
	}
	if (kms_parse(req->kms_uri, &kms, err, sizeof err) < 0 ||
	    kms_storage_check(req->storage_uri, err, sizeof err) < 0) {
		char why[300];

		snprintf(why, sizeof why, "creating kms client: %s", err);
		fail(s, why);
		goto out;
	}
	if (req->measurement_salt.size != 32) {
		fail(s, "measurement salt is not 32 bytes");
		goto out;
	}
	if (kms_derive(&kms, "measurementSecret", msecret, 32) < 0 ||
	    cluster_id_derive(msecret, req->measurement_salt.bytes, 32, st->cluster_id) < 0 ||
	    kms_disk_key(&kms, st->p->disk_uuid, 1, disk_key) < 0 ||
	    kms_derive(&kms, "ca_emergency_ssh", seed, 32) < 0) {
		fail(s, "deriving keys failed");
		goto out;
	}
	info.kubernetes_version = req->kubernetes_version;
	info.cluster_name = req->cluster_name[0] ? req->cluster_name : "constellation";
	info.service_cidr = req->service_cidr;
	info.conformance = req->conformance_mode;
	for (pb_size_t i = 0; i < req->apiserver_cert_sans_count; i++)
		st->sans[info.n_sans++] = req->apiserver_cert_sans[i];
	/* TryLockOnce: from here on a failure is final (the boot flow resets and reboots). */
	r = lock_try_once(st->lock, st->cluster_id);
	if (r == 0) {
		grpc_stream_finish(s, GRPC_FAILED_PRECONDITION, "node is already being activated");
		goto out;
	}
	if (r > 0) {
		struct init_keys k = {disk_key, req->measurement_salt.bytes, st->cluster_id, seed};

		r = st->hooks->locked(st->hooks_ctx, &k, &info);
	}
	if (r < 0) {
		st->srv->stop = 1;
		st->srv->exit_code = 1;
		fail(s, "storing the node's keys failed");
		if (st->hooks->done)
			st->hooks->done(st->hooks_ctx, 0);
		goto out;
	}
	/* the request stays with us until the kubeadm child has its copy */
	st->req = req;
	req = NULL;
	st->comps = comps;
	memset(&comps, 0, sizeof comps);
	st->info = info;
	st->stream = s;
	if (st->p->pause_after_lock)
		st->srv->pause = 1; /* the caller hands over, then init_server_start_kubeadm */
	else
		init_server_start_kubeadm(st);
out:
	secret_wipe(msecret, sizeof msecret);
	secret_wipe(disk_key, sizeof disk_key);
	secret_wipe(seed, sizeof seed);
	kms_free(&kms);
	component_list_free(&comps);
	if (req) {
		secret_wipe(req, sizeof *req);
		free(req);
	}
}

int init_server_start_kubeadm(struct init_server *st)
{
	char err[256];
	int r;

	if (!st->stream || !st->req)
		return -EINVAL;
	st->out = malloc(KUBECONFIG_MAX);
	r = st->out ? start_kubeadm(st) : -ENOMEM;
	drop_request(st);
	if (r < 0) {
		st->srv->stop = 1;
		st->srv->exit_code = 1;
		snprintf(err, sizeof err, "starting kubeadm init: %s", strerror(-r));
		fail(st->stream, err);
		st->stream = NULL;
		if (st->hooks->done)
			st->hooks->done(st->hooks_ctx, 0);
		return r;
	}
	log_info("init: kubeadm init running (at most %d s)",
		 (st->p->kubeadm_timeout_ms > 0 ? st->p->kubeadm_timeout_ms : 3600000) / 1000);
	return 0;
}

int init_server_fd(const struct init_server *st)
{
	return st->pipe_fd;
}

static int read_hash(const char *path, char *out, size_t cap, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return log_err(-errno, "serve-init: %s", path);
	n = read(fd, out, cap - 1);
	close(fd);
	if (n < 0)
		return log_err(-errno, "serve-init: %s", path);
	out[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

int init_server_new(const struct serve_params *p, struct server *srv, struct init_server **ret)
{
	struct init_server *st = calloc(1, sizeof *st);
	char err[256];
	int r = 0;

	if (!st)
		return -ENOMEM;
	st->p = p;
	st->srv = srv;
	st->pipe_fd = -1;
	st->out_fd = -1;
	st->own_lock.tcti = p->tpm;
	st->lock = p->lock ? p->lock : &st->own_lock;
	st->hooks = p->init_hooks ? p->init_hooks : &default_hooks;
	st->hooks_ctx = p->init_hooks ? p->hooks_ctx : st;
	if (p->init_secret_hash) {
		st->hash_len = strlen(p->init_secret_hash);
		if (st->hash_len >= sizeof st->hash)
			r = log_err(-EINVAL, "init: the init secret hash is too long");
		else
			memcpy(st->hash, p->init_secret_hash, st->hash_len + 1);
	} else {
		r = read_hash(p->init_secret_hash_path, st->hash, sizeof st->hash, &st->hash_len);
	}
	while (r == 0 && st->hash_len > 0 &&
	       (st->hash[st->hash_len - 1] == '\n' || st->hash[st->hash_len - 1] == '\r'))
		st->hash[--st->hash_len] = '\0';
	if (r == 0 && bcrypt_check(st->hash, st->hash_len, "", 0, err, sizeof err) == -EINVAL)
		r = log_err(-EINVAL, "init: the init secret hash: %s", err);
	if (r < 0) {
		free(st);
		return r;
	}
	*ret = st;
	return 0;
}

int init_server_busy(const struct init_server *st)
{
	return st->child > 0;
}

void init_server_abort(struct init_server *st)
{
	if (st->child > 0) {
		kill(-st->child, SIGKILL);
		kill(st->child, SIGKILL);
		if (!st->svc) /* else the supervisor reaps it */
			waitpid(st->child, NULL, 0);
		st->child = 0;
	}
	drop_request(st);
}

void init_server_free(struct init_server *st)
{
	if (!st)
		return;
	init_server_abort(st);
	if (st->svc && st->svc->pid <= 0)
		sv_release(st->svc);
	if (st->pipe_fd >= 0)
		close(st->pipe_fd);
	if (st->out)
		secret_wipe(st->out, KUBECONFIG_MAX);
	free(st->out);
	secret_wipe(st->hash, sizeof st->hash);
	free(st);
}

static void ready_cb(void *ctx, short revents)
{
	init_server_ready(ctx, revents);
}

static int timeout_cb(void *ctx)
{
	return init_server_timeout(ctx);
}

int flow_serve_init(const struct serve_params *p)
{
	struct server srv = {0};
	struct init_server *st;
	struct grpc_method m;
	char err[256];
	int r;

	r = init_server_new(p, &srv, &st);
	if (r < 0)
		return r;
	if ((r = mkdir_parents(p->out_dir, 0700)) < 0) {
		log_err(r, "serve-init: mkdir %s", p->out_dir);
		init_server_free(st);
		return r;
	}
	srv.lfd = tcp_listen_on(p->listen, err, sizeof err);
	if (srv.lfd < 0) {
		r = srv.lfd;
		log_error("serve-init: %s", err);
		init_server_free(st);
		return r;
	}
	m = (struct grpc_method){init_method, init_handle, st};
	srv.tls.issuer = p->issuer;
	srv.methods = &m;
	srv.n_methods = 1;
	srv.extra_fd = -1;
	srv.extra_ready = ready_cb;
	srv.extra_timeout_ms = timeout_cb;
	srv.ctx = st;
	log_info("serve-init: listening on %s (port %d)", p->listen, tcp_local_port(srv.lfd));
	r = serve_run(&srv);
	init_server_free(st);
	return r == 0 ? 0 : -EIO;
}
