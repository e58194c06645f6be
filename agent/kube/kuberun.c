/* Running kubeadm (spec §5.4 step 9, §10): a child started with fork and execve, no shell, in
 * its own process group, with a fixed PATH and every wait bounded by a deadline; and the two
 * sequences Constellation's bootstrapper runs, join (up to three attempts) and init (in
 * phases, the node's kubelet certificate signed here by the CA that kubeadm just made).
 * Nothing secret goes into argv, the environment or the log: the bootstrap token stays in a
 * 0600 file that is removed afterwards, the admin kubeconfig only passes through memory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "kube.h"

#define JOIN_TIMEOUT_MS	 (5 * 60 * 1000)  /* joinTimeout of the Go join client */
#define INIT_TIMEOUT_MS	 (60 * 60 * 1000) /* the CLI's bound on the Init RPC */
#define STOP_GRACE_MS	 3000		  /* SIGTERM to SIGKILL for kubeadm's group */
#define JOIN_ATTEMPTS	 3
#define KUBECONFIG_MAX	 (1 << 20)
#define YAML_MAX	 16384
#define PKI_FILE_MAX	 16384
#define CERT_PEM_MAX	 12288
#define NO_PIDFD_TICK_MS 10 /* how often a child is polled without pidfd_open (< 5.3) */
#define STD_PATH	 "/run/state/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

/* Where a child's output goes: stdout to fd (>= 0) or into buf (cap bytes) when buf is set,
 * else with stderr into the tail whose last lines reach the log. */
struct run_out {
	int fd;
	uint8_t *buf;
	size_t cap, len;
	int stop_fd; /* > 0: readable when the node shuts down */
};

/* In the child: its own process group, a clean signal state, stdin from /dev/null, stdout and
 * stderr, then execve. The errno of a failed execve goes back through err_fd (close-on-exec:
 * EOF means it ran). */
static void __attribute__((noreturn))
child(const char *const argv[], const char *const envp[], int out_fd, int log_fd, int err_fd)
{
	struct sigaction sa;
	sigset_t none;
	int fd, e;

	setpgid(0, 0);
	/* a backstop when our process is killed outright: kubeadm goes with it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* handlers reset on execve, ignored signals and the mask would be inherited */
	for (int s = 1; s < NSIG; s++)
		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
			sa.sa_handler = SIG_DFL;
			sigaction(s, &sa, NULL);
		}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	dup2(out_fd, 1);
	dup2(log_fd, 2);
	fd = open("/dev/null", O_RDONLY);
	if (fd > 0) {
		dup2(fd, 0);
		close(fd);
	}
#ifdef SYS_close_range
	syscall(SYS_close_range, 3u, ~0u, 1u << 2 /* CLOSE_RANGE_CLOEXEC */);
#endif
	execve(argv[0], (char *const *)argv, (char *const *)envp);
	e = errno;
	if (write(err_fd, &e, sizeof e) < 0)
		_exit(127);
	_exit(127);
}

/* Reads what is there from the child's stdout; -EFBIG once more than o->cap arrived. */
static int take_output(int *fd, struct run_out *o)
{
	for (;;) {
		uint8_t spill[1];
		uint8_t *p = o->len < o->cap ? o->buf + o->len : spill;
		ssize_t n = read(*fd, p, o->len < o->cap ? o->cap - o->len : 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (n == 0) {
			close(*fd);
			*fd = -1;
			return 0;
		}
		if (p == spill)
			return -EFBIG;
		o->len += (size_t)n;
	}
}

/* Reads what is there from the log pipe into the tail. */
static void take_tail(int *fd, struct kube_tail *t)
{
	char b[4096];

	for (;;) {
		ssize_t n = read(*fd, b, sizeof b);

		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0) {
			kube_tail_add(t, b, (size_t)n);
			continue;
		}
		if (n == 0 || errno != EAGAIN) {
			close(*fd);
			*fd = -1;
		}
		break;
	}
	secret_wipe(b, sizeof b);
}

static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* 1 once the child has exited (left a zombie, not reaped: its pid, and so its process group
 * id, stays taken), 0 while it runs, -errno. */
static int exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == EINTR ? 0 : -errno;
	return si.si_pid == pid;
}

/* SIGTERM to kubeadm's process group, STOP_GRACE_MS for kubeadm to exit, then SIGKILL to
 * whatever is left in the group. */
static void stop_group(pid_t pid, int pidfd)
{
	uint64_t end = monotonic_ms() + STOP_GRACE_MS, now;

	kill(-pid, SIGTERM);
	while (exited(pid) == 0 && (now = monotonic_ms()) < end) {
		struct pollfd p = {pidfd, POLLIN, 0};

		if (pidfd >= 0)
			poll(&p, 1, (int)(end - now));
		else
			poll(NULL, 0, NO_PIDFD_TICK_MS);
	}
	kill(-pid, SIGKILL);
}

/* "kubeadm init", "kubeadm join", ... for the log. */
static void name_of(const char *const argv[], char *out, size_t cap)
{
	const char *base = strrchr(argv[0], '/');

	snprintf(out, cap, "%s%s%s", base ? base + 1 : argv[0], argv[1] ? " " : "",
		 argv[1] ? argv[1] : "");
}

/* Polls the exec-error pipe, the output pipes, the stop fd and the child (pidfd) until the
 * child exits, the deadline passes or the node shuts down; then kubeadm's whole process
 * group goes, the child is reaped, and the last lines of its output reach the log. */
static int run(const char *const argv[], const char *const envp[], struct run_out *o,
	       int timeout_ms)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int errp[2], outp[2] = {-1, -1}, logp[2] = {-1, -1}, pidfd, st = 0, e = 0, r = 0;
	int stop_fd = o->stop_fd, own_stop = -1;
	sigset_t stop_set, old_mask;
	struct kube_tail *tail;
	char what[96];
	pid_t pid;

	if (!argv[0] || argv[0][0] != '/')
		return log_err(-EINVAL, "kube: '%s' is not an absolute path",
			       argv[0] ? argv[0] : "");
	name_of(argv, what, sizeof what);
	if (!(tail = malloc(sizeof *tail)))
		return log_err(-ENOMEM, "kube: %s: output buffer", what);
	kube_tail_init(tail);
	if (pipe2(errp, O_CLOEXEC) < 0) {
		free(tail);
		return log_err(-errno, "kube: %s: pipe", what);
	}
	if ((o->buf && pipe2(outp, O_CLOEXEC) < 0) || pipe2(logp, O_CLOEXEC) < 0) {
		r = log_err(-errno, "kube: %s: pipe", what);
		pid = -1;
	} else {
		pid = fork();
	}
	if (pid == 0)
		child(argv, envp,
		      o->buf	   ? outp[1]
		      : o->fd >= 0 ? o->fd
				   : logp[1],
		      logp[1], errp[1]);
	if (pid < 0 && r == 0)
		r = log_err(-errno, "kube: %s: fork", what);
	if (pid > 0)
		setpgid(pid, pid); /* also here: a kill before the child's own call must reach it */
	close(errp[1]);
	for (int *p = outp; p; p = p == outp ? logp : NULL)
		if (p[1] >= 0) {
			close(p[1]);
			fcntl(p[0], F_SETFL, O_NONBLOCK);
		}
	if (pid < 0) {
		close(errp[0]);
		if (outp[0] >= 0)
			close(outp[0]);
		if (logp[0] >= 0)
			close(logp[0]);
		free(tail);
		return r;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* In a process of its own (not PID 1, which reads its signals itself), a SIGTERM or
	 * SIGINT for us stops kubeadm's group first; the signal then takes its course. */
	if (stop_fd <= 0 && getpid() != 1) {
		sigemptyset(&stop_set);
		sigaddset(&stop_set, SIGTERM);
		sigaddset(&stop_set, SIGINT);
		if (sigprocmask(SIG_BLOCK, &stop_set, &old_mask) == 0) {
			own_stop = signalfd(-1, &stop_set, SFD_CLOEXEC | SFD_NONBLOCK);
			if (own_stop < 0)
				sigprocmask(SIG_SETMASK, &old_mask, NULL);
			stop_fd = own_stop;
		}
	}
	for (;;) {
		struct pollfd p[5];
		uint64_t now = monotonic_ms();
		int n = 0, w = exited(pid), stop = -1;

		if (w != 0) {
			if (w < 0)
				r = log_err(w, "kube: %s: wait", what);
			break;
		}
		if (now >= deadline) {
			r = log_err(-ETIMEDOUT,
				    "kube: %s: no exit within %d ms; stopping its process group",
				    what, timeout_ms);
			break;
		}
		if (errp[0] >= 0)
			p[n++] = (struct pollfd){errp[0], POLLIN, 0};
		if (outp[0] >= 0)
			p[n++] = (struct pollfd){outp[0], POLLIN, 0};
		if (logp[0] >= 0)
			p[n++] = (struct pollfd){logp[0], POLLIN, 0};
		if (pidfd >= 0)
			p[n++] = (struct pollfd){pidfd, POLLIN, 0};
		if (stop_fd > 0) {
			stop = n;
			p[n++] = (struct pollfd){stop_fd, POLLIN, 0};
		}
		w = (int)(deadline - now);
		if (poll(p, (nfds_t)n, pidfd >= 0 || w < NO_PIDFD_TICK_MS ? w : NO_PIDFD_TICK_MS) <=
		    0)
			continue;
		if (stop >= 0 && p[stop].revents) {
			r = log_err(-ECANCELED, "kube: %s: %s; stopping its process group", what,
				    stop_fd == own_stop ? "we were asked to stop"
							: "the node shuts down");
			break;
		}
		if (errp[0] >= 0) {
			ssize_t k = read(errp[0], &e, sizeof e);

			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
				close(errp[0]);
				errp[0] = -1;
			}
		}
		if (outp[0] >= 0 && (r = take_output(&outp[0], o)) < 0) {
			log_err(r, "kube: %s: reading its output (at most %zu bytes)", what,
				o->cap);
			break;
		}
		if (logp[0] >= 0)
			take_tail(&logp[0], tail);
	}
	if (r < 0)
		stop_group(pid, pidfd);
	else
		kill(-pid, SIGKILL); /* anything kubeadm left behind in its group */
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (errp[0] >= 0) {
		int e2;

		if (e == 0 && read(errp[0], &e2, sizeof e2) == sizeof e2)
			e = e2;
		close(errp[0]);
	}
	if (outp[0] >= 0) {
		if (r == 0 && (r = take_output(&outp[0], o)) < 0)
			log_err(r, "kube: %s: reading its output (at most %zu bytes)", what,
				o->cap);
		if (outp[0] >= 0)
			close(outp[0]);
	}
	if (logp[0] >= 0) {
		take_tail(&logp[0], tail);
		if (logp[0] >= 0)
			close(logp[0]);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (e <= 0) {
		int ok = r == 0 && status_of(st) == 0;

		kube_tail_log(tail, what, ok ? KUBE_TAIL_LINES / 4 : KUBE_TAIL_LINES,
			      ok ? LOG_INFO : LOG_WARN);
	}
	secret_wipe(tail, sizeof *tail);
	free(tail);
	if (own_stop >= 0) {
		close(own_stop);
		sigprocmask(SIG_SETMASK, &old_mask, NULL); /* a pending stop signal now acts */
	}
	if (e > 0)
		return log_err(-e, "kube: %s: cannot start", argv[0]);
	return r < 0 ? r : status_of(st);
}

int kube_run(const char *const argv[], const char *const envp[], int out_fd, int timeout_ms)
{
	return kube_run_until(argv, envp, out_fd, timeout_ms, -1);
}

int kube_run_until(const char *const argv[], const char *const envp[], int out_fd, int timeout_ms,
		   int stop_fd)
{
	struct run_out o = {.fd = out_fd, .stop_fd = stop_fd};

	return run(argv, envp, &o, timeout_ms);
}

/* ---- the files around kubeadm ---- */

static int write_audit_policy(const char *root)
{
	char path[4096];
	int r;

	if ((r = path_in(path, sizeof path, root, "/etc/kubernetes/audit-policy.yaml")) < 0)
		return r;
	if ((r = write_file_replace(path, kube_audit_policy, strlen(kube_audit_policy), 0644)) < 0)
		return log_err(r, "kubeadm: writing %s", path);
	return 0;
}

/* The static-pod directory, emptied: a failed earlier attempt may have left manifests that
 * would start with the kubelet. */
static int recreate_manifests(const char *root)
{
	char path[4096];
	int r;

	if ((r = path_in(path, sizeof path, root, "/etc/kubernetes/manifests")) < 0)
		return r;
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return log_err(-errno, "kubeadm: removing %s", path);
	if ((r = mkdir_parents(path, 0755)) < 0)
		return log_err(r, "kubeadm: creating %s", path);
	return 0;
}

/* The configuration in a new 0600 file root/run/constel/kubeadm-<kind>-<random>.yaml. */
static int write_config(const char *root, const char *kind, const char *yaml, size_t len,
			char *path, size_t cap)
{
	uint8_t rnd[8];
	char hex[17], dir[4096];
	int r;

	if ((r = path_in(dir, sizeof dir, root, "/run/constel")) < 0)
		return r;
	if ((r = mkdir_parents(dir, 0700)) < 0)
		return log_err(r, "kubeadm: creating %s", dir);
	if ((r = random_bytes(rnd, sizeof rnd)) < 0)
		return log_err(r, "kubeadm: random file name");
	hex_encode(rnd, sizeof rnd, hex, sizeof hex);
	if (snprintf(path, cap, "%s/kubeadm-%s-%s.yaml", dir, kind, hex) >= (int)cap)
		return log_err(-ENAMETOOLONG, "kubeadm: %s: path too long", dir);
	if ((r = write_file_excl(path, yaml, len, 0600)) < 0)
		return log_err(r, "kubeadm: writing %s", path);
	return 0;
}

static void kube_env(const char *root, char *buf, size_t cap, const char *envp[2])
{
	if (*root)
		snprintf(buf, cap, "PATH=%s/run/state/bin:%s/usr/local/bin:" STD_PATH, root, root);
	else
		snprintf(buf, cap, "PATH=" STD_PATH);
	envp[0] = buf;
	envp[1] = NULL;
}

static void sleep_ms(uint64_t ms)
{
	uint64_t end = monotonic_ms() + ms, now;

	while ((now = monotonic_ms()) < end)
		poll(NULL, 0, (int)(end - now));
}

static const char *describe(int r, char *buf, size_t cap)
{
	if (r > 128)
		snprintf(buf, cap, "killed by signal %d", r - 128);
	else if (r > 0)
		snprintf(buf, cap, "exit status %d", r);
	else
		snprintf(buf, cap, "%s", strerror(-r));
	return buf;
}

/* ---- join ---- */

int kube_join_run(const struct kube_join_run *r)
{
	const char *root = r->root ? r->root : "";
	int attempts = r->attempts > 0 ? r->attempts : JOIN_ATTEMPTS;
	uint64_t deadline = monotonic_ms() + (r->timeout_ms > 0 ? r->timeout_ms : JOIN_TIMEOUT_MS);
	char *yaml = malloc(YAML_MAX), cfg[4096], env[8400], why[64];
	const char *envp[2], *argv[] = {r->kubeadm, "join", "-v=5", "--config", cfg, NULL};
	int n, rc;

	if (!yaml)
		return log_err(-ENOMEM, "kubeadm: join configuration");
	n = kubeadm_join_yaml(r->j, yaml, YAML_MAX);
	rc = n < 0 ? n : write_config(root, "join", yaml, (size_t)n, cfg, sizeof cfg);
	secret_wipe(yaml, YAML_MAX); /* the bootstrap token */
	free(yaml);
	if (rc < 0)
		return rc;
	kube_env(root, env, sizeof env, envp);
	for (int i = 1; i <= attempts; i++) {
		uint64_t now = monotonic_ms();

		if (now >= deadline) {
			rc = log_err(-ETIMEDOUT, "kubeadm: join: no time left for attempt %d/%d", i,
				     attempts);
			break;
		}
		/* Go's JoinCluster redoes these on every attempt */
		if ((rc = write_audit_policy(root)) < 0 || (rc = recreate_manifests(root)) < 0)
			break;
		log_info("kubeadm: join -v=5 (attempt %d/%d)", i, attempts);
		if ((rc = kube_run_until(argv, envp, -1, (int)(deadline - monotonic_ms()),
					 r->stop_fd)) == 0)
			break;
		if (rc == -ECANCELED)
			break; /* the node shuts down: no retry */
		log_warn("kubeadm: join attempt %d/%d failed: %s", i, attempts,
			 describe(rc, why, sizeof why));
		if (i < attempts && r->retry_delay_ms > 0) {
			now = monotonic_ms();
			sleep_ms(deadline > now && deadline - now < (uint64_t)r->retry_delay_ms
				     ? deadline - now
				     : (uint64_t)r->retry_delay_ms);
		}
	}
	unlink(cfg);
	return rc;
}

/* ---- init ---- */

static int read_pki(const char *path, char *buf, size_t cap, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return log_err(-errno, "kubeadm: opening %s", path);
	n = read_full(fd, buf, cap);
	close(fd);
	if (n < 0)
		return log_err((int)n, "kubeadm: reading %s", path);
	if ((size_t)n == cap)
		return log_err(-EFBIG, "kubeadm: %s: larger than %zu bytes", path, cap);
	*ret_len = (size_t)n;
	return 0;
}

/* The node's kubelet certificate, as Go's createSignedKubeletCert makes it: a fresh P-256
 * key, a request for system:node:<name> with the node IP, signed by the cluster CA. */
static int kubelet_cert(const char *root, const char *name, const char *ip)
{
	struct {
		struct p256_key key;
		struct csr_info info;
		struct ca ca;
		uint8_t csr[1024], sec1[160];
		char ca_crt[PKI_FILE_MAX], ca_key[PKI_FILE_MAX], cert[CERT_PEM_MAX], key_pem[512];
		char path[4096], err[256];
	} *k = calloc(1, sizeof *k);
	size_t crt_len, key_len, n;
	int r;

	if (!k)
		return log_err(-ENOMEM, "kubeadm: kubelet certificate");
	if ((r = path_in(k->path, sizeof k->path, root, "/etc/kubernetes/pki/ca.crt")) < 0 ||
	    (r = read_pki(k->path, k->ca_crt, sizeof k->ca_crt, &crt_len)) < 0 ||
	    (r = path_in(k->path, sizeof k->path, root, "/etc/kubernetes/pki/ca.key")) < 0 ||
	    (r = read_pki(k->path, k->ca_key, sizeof k->ca_key, &key_len)) < 0)
		goto out;
	if ((r = ca_load(k->ca_crt, crt_len, k->ca_key, key_len, &k->ca, k->err, sizeof k->err)) <
	    0) {
		r = log_err(r, "kubeadm: the cluster CA: %s", k->err);
		goto out;
	}
	if ((r = p256_generate(&k->key)) < 0 ||
	    (r = csr_build(&k->key, name, ip, k->csr, sizeof k->csr, &n)) < 0 ||
	    (r = csr_parse(k->csr, n, &k->info, k->err, sizeof k->err)) < 0 ||
	    (r = ca_sign_kubelet(&k->ca, &k->info, time(NULL), k->cert, sizeof k->cert)) < 0 ||
	    (r = p256_sec1_der(&k->key, k->sec1, sizeof k->sec1, &n)) < 0 ||
	    (r = pem_encode("EC PRIVATE KEY", k->sec1, n, k->key_pem, sizeof k->key_pem)) < 0) {
		r = log_err(r, "kubeadm: signing the kubelet certificate for %s", name);
		goto out;
	}
	if ((r = path_in(k->path, sizeof k->path, root,
			 "/run/state/kubelet/pki/kubelet-client-key.pem")) < 0 ||
	    (r = write_file_replace(k->path, k->key_pem, strlen(k->key_pem), 0600)) < 0 ||
	    (r = path_in(k->path, sizeof k->path, root,
			 "/run/state/kubelet/pki/kubelet-client-crt.pem")) < 0 ||
	    (r = write_file_replace(k->path, k->cert, strlen(k->cert), 0600)) < 0) {
		r = log_err(r, "kubeadm: writing the kubelet certificate");
		goto out;
	}
	log_info("kubeadm: kubelet certificate for %s signed by the cluster CA", name);
out:
	secret_wipe(k, sizeof *k); /* the kubelet key, the CA key */
	free(k);
	return r;
}

/* One kubeadm command within the deadline, logged as one line (and one more on failure). */
static int step(const char *what, const char *const argv[], const char *const envp[],
		struct run_out *o, uint64_t deadline)
{
	uint64_t t0 = monotonic_ms();
	char why[64];
	int r;

	if (t0 >= deadline)
		return log_err(-ETIMEDOUT, "kubeadm: %s: no time left", what);
	log_info("kubeadm: %s", what);
	r = run(argv, envp, o, (int)(deadline - t0));
	if (r > 0)
		log_error("kubeadm: %s: failed after %llu ms: %s", what,
			  (unsigned long long)(monotonic_ms() - t0), describe(r, why, sizeof why));
	else if (r == 0)
		log_debug("kubeadm: %s: done in %llu ms", what,
			  (unsigned long long)(monotonic_ms() - t0));
	return r;
}

/* The init sequence once the configuration file exists. */
static int init_steps(const struct kube_init_run *r, const char *root, const char *cfg,
		      uint64_t deadline, int out_fd)
{
	const struct kubeadm_init *c = r->c;
	const char *cluster =
	    c->cluster_name && *c->cluster_name ? c->cluster_name : "constellation";
	const char *skip = c->conformance ? "--skip-phases=preflight,certs,addon/coredns"
					  : "--skip-phases=preflight,certs,addon/coredns,"
					    "addon/kube-proxy";
	char env[8400], name[254], client[300], what[96];
	const char *envp[2];
	const char *preflight[] = {r->kubeadm, "init",	   "phase", "preflight",
				   "-v=5",     "--config", cfg,	    NULL};
	const char *certs[] = {r->kubeadm, "init",     "phase", "certs", "all",
			       "-v=5",	   "--config", cfg,	NULL};
	/* the join banner carries a bootstrap token: never printed, the console is the host's */
	const char *init[] = {r->kubeadm,	    "init",	"-v=5", skip,
			      "--skip-token-print", "--config", cfg,	NULL};
	const char *user[] = {r->kubeadm, "kubeconfig", "user",	 "--client-name",  client,
			      "--config", cfg,		"--org", "system:masters", NULL};
	struct run_out to_log = {.fd = -1, .stop_fd = r->stop_fd},
		       kubeconfig = {.fd = -1, .stop_fd = r->stop_fd};
	int rc;

	kube_env(root, env, sizeof env, envp);
	snprintf(client, sizeof client, "%s-admin", cluster);
	snprintf(what, sizeof what, "init -v=5 %s --skip-token-print", skip);
	if (kube_node_name(c->node_name, name, sizeof name) < 0)
		return -EINVAL; /* kubeadm_init_yaml said why */
	if ((rc = step("init phase preflight", preflight, envp, &to_log, deadline)) != 0 ||
	    (rc = step("init phase certs all", certs, envp, &to_log, deadline)) != 0 ||
	    (rc = kubelet_cert(root, name, c->node_ip)) < 0 ||
	    (rc = recreate_manifests(root)) < 0 ||
	    (rc = step(what, init, envp, &to_log, deadline)) != 0)
		return rc;
	if (!(kubeconfig.buf = malloc(KUBECONFIG_MAX)))
		return log_err(-ENOMEM, "kubeadm: kubeconfig buffer");
	kubeconfig.cap = KUBECONFIG_MAX;
	rc = step("kubeconfig user", user, envp, &kubeconfig, deadline);
	if (rc == 0 && kubeconfig.len == 0)
		rc = log_err(-ENODATA, "kubeadm: kubeconfig user printed nothing");
	if (rc == 0 && (rc = write_all(out_fd, kubeconfig.buf, kubeconfig.len)) < 0)
		log_err(rc, "kubeadm: passing the admin kubeconfig on");
	if (rc == 0)
		log_info("kubeadm: admin kubeconfig for %s (%zu bytes)", client, kubeconfig.len);
	secret_wipe(kubeconfig.buf, kubeconfig.len); /* the admin's private key */
	free(kubeconfig.buf);
	return rc;
}

int kube_init_run(const struct kube_init_run *r, int out_fd)
{
	const char *root = r->root ? r->root : "";
	uint64_t deadline = monotonic_ms() + (r->timeout_ms > 0 ? r->timeout_ms : INIT_TIMEOUT_MS);
	char *yaml = malloc(YAML_MAX), cfg[4096];
	int n, rc;

	if (!yaml)
		return log_err(-ENOMEM, "kubeadm: init configuration");
	n = kubeadm_init_yaml(r->c, yaml, YAML_MAX);
	rc = n < 0 ? n : write_audit_policy(root); /* first, as Go's InitCluster does */
	if (rc == 0)
		rc = write_config(root, "init", yaml, (size_t)n, cfg, sizeof cfg);
	free(yaml);
	if (rc < 0)
		return rc;
	rc = init_steps(r, root, cfg, deadline, out_fd);
	unlink(cfg);
	return rc;
}
