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
#include <sodium.h>

#include "flow.h"
#include "init.pb.h"
#include "kube/kube.h"
#include "net/net.h"

#define KUBECONFIG_MAX (1024 * 1024)
#define LOG_CHUNK      1024

struct init_server {
	struct server srv;
	const struct serve_params *p;
	char hash[BCRYPT_HASH_LEN + 2];
	size_t hash_len;
	struct node_lock lock;
	/* the running kubeadm stand-in */
	pid_t child;
	int pipe_fd;
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

static bool skip_component(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	components_Component c;

	(void)f;
	(*(int *)*arg)++;
	return pb_decode(s, components_Component_fields, &c);
}

static int write_hex(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char hex[130];

	hex_encode(b, n, hex, sizeof hex - 1);
	strcat(hex, "\n");
	return flow_write(dir, name, hex, strlen(hex));
}

/* Runs the kubeadm stand-in with its stdout on a pipe the poll loop reads. */
static int start_kubeadm(struct init_server *st, const init_InitRequest *req)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		char sans[2048] = "";

		dup2(fds[1], STDOUT_FILENO);
		for (pb_size_t i = 0; i < req->apiserver_cert_sans_count; i++) {
			if (i)
				strncat(sans, ",", sizeof sans - strlen(sans) - 1);
			strncat(sans, req->apiserver_cert_sans[i], sizeof sans - strlen(sans) - 1);
		}
		setenv("CONSTEL_KUBERNETES_VERSION", req->kubernetes_version, 1);
		setenv("CONSTEL_CLUSTER_NAME",
		       req->cluster_name[0] ? req->cluster_name : "constellation", 1);
		setenv("CONSTEL_SERVICE_CIDR", req->service_cidr, 1);
		setenv("CONSTEL_APISERVER_CERT_SANS", sans, 1);
		setenv("CONSTEL_CONFORMANCE_MODE", req->conformance_mode ? "true" : "false", 1);
		execl("/bin/sh", "sh", "-c", st->p->kubeadm_cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	st->child = pid;
	st->pipe_fd = fds[0];
	st->out_len = 0;
	st->deadline = rpc_now_ms() + st->p->kubeadm_timeout_ms;
	st->srv.extra_fd = fds[0];
	st->srv.extra_events = POLLIN;
	return 0;
}

static void finish_kubeadm(struct init_server *st, int status)
{
	char why[256];

	st->srv.stop = 1;
	if (status == 0) {
		init_InitResponse m = init_InitResponse_init_zero;

		m.which_kind = init_InitResponse_init_success_tag;
		m.kind.init_success.kubeconfig.funcs.encode = encode_kubeconfig;
		m.kind.init_success.kubeconfig.arg = st;
		m.kind.init_success.cluster_id.size = 32;
		memcpy(m.kind.init_success.cluster_id.bytes, st->cluster_id, 32);
		if (send_response(st->stream, &m) == 0 &&
		    grpc_stream_finish(st->stream, GRPC_OK, NULL) == 0) {
			log_info("init: done, kubeconfig of %zu bytes sent", st->out_len);
			st->srv.exit_code = 0;
		} else {
			log_error("init: the CLI went away before the kubeconfig was sent");
			st->srv.exit_code = 1;
		}
	} else {
		if (status > 0)
			snprintf(why, sizeof why, "init: kubeadm init: exit status %d", status);
		else
			snprintf(why, sizeof why, "init: kubeadm init: %s", strerror(-status));
		/* After the lock a failure is final: the node would reset and reboot. */
		fail(st->stream, why);
		st->srv.exit_code = 1;
	}
	st->stream = NULL;
}

static void kubeadm_ready(void *ctx, short revents)
{
	struct init_server *st = ctx;
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
			st->pipe_fd = st->srv.extra_fd = -1;
			break;
		}
	}
	if (st->child > 0 && rpc_now_ms() > st->deadline) {
		log_error("init: kubeadm init: no exit within %d s, killing it",
			  st->p->kubeadm_timeout_ms / 1000);
		kill(st->child, SIGKILL);
		st->deadline = INT64_MAX;
	}
	if (st->child > 0 && st->pipe_fd < 0 && waitpid(st->child, &wst, WNOHANG) == st->child) {
		st->child = 0;
		if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && st->out_len == KUBECONFIG_MAX)
			finish_kubeadm(st, -EFBIG);
		else
			finish_kubeadm(st, WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst));
	}
}

static int kubeadm_timeout(void *ctx)
{
	struct init_server *st = ctx;

	return st->child > 0 ? 200 : -1;
}

static void handle_init(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	struct init_server *st = ctx;
	init_InitRequest *req = calloc(1, sizeof *req);
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);
	struct kms kms = {0};
	struct ssh_key ca;
	uint8_t msecret[32], disk_key[32], seed[32];
	char err[256], line[160];
	int components = 0, r;

	if (!req) {
		grpc_stream_finish(s, GRPC_INTERNAL, "out of memory");
		return;
	}
	if (st->lock.locked) {
		log_warn("init: refusing a second Init: node is already being activated");
		grpc_stream_finish(s, GRPC_FAILED_PRECONDITION, "node is already being activated");
		goto out;
	}
	req->kubernetes_components.funcs.decode = skip_component;
	req->kubernetes_components.arg = &components;
	if (!pb_decode(&is, init_InitRequest_fields, req)) {
		snprintf(err, sizeof err, "malformed InitRequest: %s", PB_GET_ERROR(&is));
		fail(s, err);
		goto out;
	}
	log_info("init: request for Kubernetes %s, cluster '%s', %d components",
		 req->kubernetes_version, req->cluster_name, components);
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
	/* TryLockOnce: from here on a failure is final (the boot flow resets and reboots). */
	r = lock_try_once(&st->lock, st->cluster_id);
	if (r == 0) {
		grpc_stream_finish(s, GRPC_FAILED_PRECONDITION, "node is already being activated");
		goto out;
	}
	if (r < 0 || crypto_sign_seed_keypair(ca.pk, ca.sk, seed) != 0 ||
	    ssh_authorized_key(ca.pk, line, sizeof line) < 0 ||
	    flow_write(st->p->out_dir, "state_disk_key", disk_key, 32) < 0 ||
	    flow_write(st->p->out_dir, "measurement_salt", req->measurement_salt.bytes, 32) < 0 ||
	    write_hex(st->p->out_dir, "cluster_id", st->cluster_id, 32) < 0 ||
	    flow_write(st->p->out_dir, "ssh_ca.pub", line, strlen(line)) < 0) {
		st->srv.stop = 1;
		st->srv.exit_code = 1;
		fail(s, "writing the node's keys failed");
		goto out;
	}
	st->out = malloc(KUBECONFIG_MAX);
	r = st->out ? start_kubeadm(st, req) : -ENOMEM;
	if (r < 0) {
		st->srv.stop = 1;
		st->srv.exit_code = 1;
		snprintf(err, sizeof err, "starting kubeadm init: %s", strerror(-r));
		fail(s, err);
		goto out;
	}
	st->stream = s;
	log_info("init: running the kubeadm init stand-in");
out:
	secret_wipe(&ca, sizeof ca);
	secret_wipe(msecret, sizeof msecret);
	secret_wipe(disk_key, sizeof disk_key);
	secret_wipe(seed, sizeof seed);
	kms_free(&kms);
	secret_wipe(req, sizeof *req);
	free(req);
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
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

int flow_serve_init(const struct serve_params *p)
{
	struct init_server *st = calloc(1, sizeof *st);
	struct grpc_method m = {"/init.API/Init", handle_init, st};
	char err[256];
	int r;

	if (!st)
		return -ENOMEM;
	st->p = p;
	st->pipe_fd = -1;
	st->lock.tcti = p->tpm;
	r = read_hash(p->init_secret_hash_path, st->hash, sizeof st->hash, &st->hash_len);
	if (r == 0 && bcrypt_check(st->hash, st->hash_len, "", 0, err, sizeof err) == -EINVAL)
		r = log_err(-EINVAL, "serve-init: %s: %s", p->init_secret_hash_path, err);
	if (r == 0 && (r = mkdir_parents(p->out_dir, 0700)) < 0)
		log_err(r, "serve-init: mkdir %s", p->out_dir);
	if (r < 0) {
		free(st);
		return r;
	}
	st->srv.lfd = tcp_listen_on(p->listen, err, sizeof err);
	if (st->srv.lfd < 0) {
		r = st->srv.lfd;
		log_error("serve-init: %s", err);
		free(st);
		return r;
	}
	st->srv.tls.issuer = p->issuer;
	st->srv.methods = &m;
	st->srv.n_methods = 1;
	st->srv.extra_fd = -1;
	st->srv.extra_ready = kubeadm_ready;
	st->srv.extra_timeout_ms = kubeadm_timeout;
	st->srv.ctx = st;
	log_info("serve-init: listening on %s (port %d)", p->listen, tcp_local_port(st->srv.lfd));
	r = serve_run(&st->srv);
	if (st->child > 0) {
		kill(st->child, SIGKILL);
		waitpid(st->child, NULL, 0);
	}
	if (st->pipe_fd >= 0)
		close(st->pipe_fd);
	if (st->out)
		secret_wipe(st->out, KUBECONFIG_MAX);
	free(st->out);
	secret_wipe(st->hash, sizeof st->hash);
	free(st);
	return r == 0 ? 0 : -EIO;
}
