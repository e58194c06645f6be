/* Test helper: the fakes a C test runs as child processes (the Python fakes of tests/cloud and
 * tests/attest, run from the repository's top as tests/run.sh does), on 127.0.0.1 only. Each
 * start is bounded (python3 on a loaded machine gets 60 s), a fake never outlives its test
 * (PR_SET_PDEATHSIG) and is stopped with SIGTERM and reaped.
 *
 *   fake_serve(argv, slot, fmt, &port): argv[slot] becomes fmt ("127.0.0.1:%d", "%d") with a
 *     free port; the fake is up once that port accepts connections (a fake that exits, the
 *     port taken meanwhile, is started again on another, at most 8 times).
 *   fake_start_line(argv, line, cap): the fake prints its first line (its port, or "ready")
 *     on stdout; that line into line.
 *   fake_api_start(f, script, name, state, tls): an API fake with --state FILE --log FILE
 *     [--tls PEM] (tests/cloud/fake_*_api.py) that prints "PORT [TLS_PORT]"; its folder
 *     f->dir (state.json, log.jsonl; with tls ca.pem, other-ca.pem, server.pem).
 * Each returns a pid (or 0) / -1 or a negative errno, and says why on stderr. */
#ifndef CONSTEL_TEST_FAKE_PROC_H
#define CONSTEL_TEST_FAKE_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tpm/swtpm.h"

#define FAKE_START_MS 60000 /* python3 on a loaded 2-core machine */

static inline int fake_free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int p = 20000 + (int)(random() % 12000); /* below the ephemeral ports */

		if (swtpm_port_free(p))
			return p;
	}
	return -1;
}

/* argv with stdout to out_fd (-1: /dev/null); stderr kept when keep_err, else /dev/null. */
static inline pid_t fake_spawn(char *const argv[], int out_fd, int keep_err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(devnull, 0);
		dup2(out_fd >= 0 ? out_fd : devnull, 1);
		if (!keep_err)
			dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static inline void fake_reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

static inline uint64_t fake_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline pid_t fake_serve(char **argv, int slot, const char *fmt, int *port)
{
	static char arg[8][64];
	static int next;
	char *a = arg[next++ % 8];

	for (int tries = 0; tries < 8; tries++) {
		int p = fake_free_port(), st;
		uint64_t deadline = fake_now_ms() + FAKE_START_MS;
		pid_t pid;

		if (p < 0)
			break;
		snprintf(a, 64, fmt, p);
		argv[slot] = a;
		pid = fake_spawn(argv, -1, 0);
		while (pid > 0 && fake_now_ms() < deadline) {
			if (swtpm_port_listening(p) && waitpid(pid, &st, WNOHANG) == 0) {
				*port = p;
				return pid;
			}
			if (waitpid(pid, &st, WNOHANG) == pid) {
				pid = -1; /* it exited: another port */
				break;
			}
			usleep(100 * 1000);
		}
		if (pid > 0) {
			fake_reap(pid);
			break;
		}
	}
	fprintf(stderr, "fake_serve: %s %s did not start\n", argv[0], argv[1]);
	return -1;
}

static inline pid_t fake_start_line(char *const argv[], char *line, size_t cap)
{
	uint64_t deadline = fake_now_ms() + FAKE_START_MS;
	size_t n = 0;
	int pfd[2];
	pid_t pid;

	line[0] = '\0';
	if (pipe(pfd) < 0)
		return -1;
	pid = fake_spawn(argv, pfd[1], 1);
	close(pfd[1]);
	while (pid > 0 && n < cap - 1 && !strchr(line, '\n')) {
		struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
		uint64_t now = fake_now_ms();
		ssize_t k;

		if (now >= deadline || poll(&pf, 1, (int)(deadline - now)) <= 0)
			break;
		k = read(pfd[0], line + n, cap - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		line[n] = '\0';
	}
	close(pfd[0]);
	if (pid > 0 && strchr(line, '\n'))
		return pid;
	fprintf(stderr, "fake_start_line: %s %s printed no line\n", argv[0], argv[1]);
	fake_reap(pid);
	return -1;
}

/* A CA and a certificate for localhost from it (Python's cryptography, as
 * tests/net/test_https.sh), in dir: ca.pem ("<cn> test CA"), other-ca.pem, server.pem. */
static inline int fake_make_pki(const char *dir, const char *cn)
{
	char cmd[4096];

	snprintf(
	    cmd, sizeof cmd,
	    "python3 - '%s' '%s test CA' <<'PY'\n"
	    "import datetime, sys\n"
	    "from cryptography import x509\n"
	    "from cryptography.hazmat.primitives import hashes, serialization\n"
	    "from cryptography.hazmat.primitives.asymmetric import ec\n"
	    "from cryptography.x509.oid import NameOID\n"
	    "d = sys.argv[1]\n"
	    "now = datetime.datetime.now(datetime.timezone.utc); day = datetime.timedelta(days=1)\n"
	    "def n(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])\n"
	    "def pem(c): return c.public_bytes(serialization.Encoding.PEM)\n"
	    "def ca(cn, k): return "
	    "(x509.CertificateBuilder().subject_name(n(cn)).issuer_name(n(cn))"
	    ".public_key(k.public_key()).serial_number(x509.random_serial_number())"
	    ".not_valid_before(now - day).not_valid_after(now + day)"
	    ".add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)"
	    ".sign(k, hashes.SHA256()))\n"
	    "k1 = ec.generate_private_key(ec.SECP256R1()); c1 = ca(sys.argv[2], k1)\n"
	    "k2 = ec.generate_private_key(ec.SECP256R1()); c2 = ca('other CA', k2)\n"
	    "lk = ec.generate_private_key(ec.SECP256R1())\n"
	    "leaf = (x509.CertificateBuilder().subject_name(n('localhost')).issuer_name(c1.subject)"
	    ".public_key(lk.public_key()).serial_number(x509.random_serial_number())"
	    ".not_valid_before(now - day).not_valid_after(now + day)"
	    ".add_extension(x509.SubjectAlternativeName([x509.DNSName('localhost')]), "
	    "critical=False)"
	    ".sign(k1, hashes.SHA256()))\n"
	    "open(d + '/ca.pem', 'wb').write(pem(c1))\n"
	    "open(d + '/other-ca.pem', 'wb').write(pem(c2))\n"
	    "open(d + '/server.pem', 'wb').write(pem(leaf) + lk.private_bytes("
	    "serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, "
	    "serialization.NoEncryption()))\n"
	    "PY\n",
	    dir, cn);
	return system(cmd) == 0 ? 0 : -EIO;
}

struct fake_api {
	pid_t pid;
	int port, tls_port;
	char dir[64];
};

static inline int fake_api_start(struct fake_api *f, const char *script, const char *name,
				 const char *state, int tls)
{
	char st[128], lg[128], pem[128], line[64];
	FILE *sf;

	memset(f, 0, sizeof *f);
	if (access(script, R_OK) != 0)
		return -ENOENT;
	harness_tmpdir(f->dir, name);
	if (tls && fake_make_pki(f->dir, name) < 0)
		return -EIO;
	snprintf(st, sizeof st, "%s", harness_path(f->dir, "state.json"));
	snprintf(lg, sizeof lg, "%s", harness_path(f->dir, "log.jsonl"));
	snprintf(pem, sizeof pem, "%s", harness_path(f->dir, "server.pem"));
	sf = fopen(st, "w");
	if (!sf)
		return -EIO;
	fputs(state, sf);
	fclose(sf);
	f->pid = fake_start_line((char *[]){"python3", (char *)script, "--state", st, "--log", lg,
					    tls ? "--tls" : NULL, pem, NULL},
				 line, sizeof line);
	if (f->pid < 0 || sscanf(line, "%d %d", &f->port, &f->tls_port) < 1 || f->port <= 0) {
		f->pid = 0;
		return -EIO;
	}
	return 0;
}

static inline void fake_api_stop(struct fake_api *f)
{
	fake_reap(f->pid);
	f->pid = 0;
	if (f->dir[0])
		harness_rmtree(f->dir);
	f->dir[0] = '\0';
}

/* How many lines of the fake's log contain s. */
static inline int fake_api_log_count(struct fake_api *f, const char *s)
{
	FILE *lf = fopen(harness_path(f->dir, "log.jsonl"), "r");
	char line[2048];
	int n = 0;

	if (!lf)
		return -1;
	while (fgets(line, sizeof line, lf))
		if (strstr(line, s))
			n++;
	fclose(lf);
	return n;
}

/* err contains want, or the test's stderr says what it was. */
static inline int fake_has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s (want %s)\n", err, want);
	return 0;
}

#endif
