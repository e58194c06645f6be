/* kubelet's command line as kubeadm's systemd drop-in composes it: the EnvironmentFile=
 * parser (quotes, escapes, comments, bounds, malformed files) and the argv from the files
 * under a root folder, as PID 1 composes it at every kubelet (re)start. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"
#include "kube/kube.h"

static int value_of(const char *text, const char *key, char *val, size_t cap)
{
	char err[160];

	return env_file_value(text, strlen(text), key, val, cap, err, sizeof err);
}

/* what kubeadm 1.32's writeKubeletFlagBytesToDisk writes */
static const char kubeadm_flags[] =
    "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/"
    "containerd.sock --node-ip=10.9.0.2 --pod-infra-container-image=registry.k8s.io/"
    "pause:3.10 --provider-id=qemu:///hostname/worker-0\"\n";

TEST(env_file_reads_kubeadm_flags)
{
	char v[1024];

	CHECK(value_of(kubeadm_flags, "KUBELET_KUBEADM_ARGS", v, sizeof v) == 1);
	CHECK(strcmp(v, "--container-runtime-endpoint=unix:///run/containerd/containerd.sock "
			"--node-ip=10.9.0.2 --pod-infra-container-image=registry.k8s.io/"
			"pause:3.10 --provider-id=qemu:///hostname/worker-0") == 0);
	CHECK(value_of(kubeadm_flags, "KUBELET_EXTRA_ARGS", v, sizeof v) == 0);
	CHECK(v[0] == '\0');
}

TEST(env_file_quotes_and_escapes)
{
	char v[256];

	CHECK(value_of("A='x \"y\" \\z'\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "x \"y\" \\z") == 0); /* single quotes: literal */
	CHECK(value_of("A=\"a\\\"b\\\\c\\$d\\`e\\nf\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "a\"b\\c$d`e\\nf") == 0); /* other escapes keep the backslash */
	CHECK(value_of("A=a\\ b\\\"c\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "a b\"c") == 0);
	CHECK(value_of("A=\"one\" 'two' three\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "onetwothree") == 0); /* blanks after a closing quote are skipped */
	CHECK(value_of("A=x\"y\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "x\"y\"") == 0); /* a quote inside an unquoted value is literal */
	CHECK(value_of("A=\"line1\\\nline2\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "line1line2") == 0);
	CHECK(value_of("A=one\\\ntwo\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "onetwo") == 0);
	CHECK(value_of("A=\"multi\nline\"\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "multi\nline") == 0);
}

TEST(env_file_comments_blanks_and_last_assignment)
{
	char v[256];

	CHECK(value_of("# A=1\n; A=2\n  A  =   spaced value  \t\nB=3", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "spaced value") == 0);
	CHECK(value_of("A=1\nA=2\r\nno equals line\nA=\n", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "") == 0); /* the last one wins, even empty */
	CHECK(value_of("A=last-line-without-newline", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "last-line-without-newline") == 0);
	CHECK(value_of("A=\"open quote to the end", "A", v, sizeof v) == 1);
	CHECK(strcmp(v, "open quote to the end") == 0); /* as systemd takes it */
	CHECK(value_of("AB=1\nA_B=2\n", "A", v, sizeof v) == 0);
}

TEST(env_file_refuses_malformed_and_oversized)
{
	char v[16], err[160], *big;

	CHECK(env_file_value("A=1\n\0B=2\n", 10, "A", v, sizeof v, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "NUL") != NULL);
	CHECK(value_of("A=\xff\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A=\xc0\x80\n", "A", v, sizeof v) == -EINVAL); /* overlong */
	CHECK(value_of("A=caf\xc3\xa9\n", "A", v, sizeof v) == 1);
	CHECK(value_of("1A=x\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A B=x\n", "A", v, sizeof v) == -EINVAL);
	CHECK(value_of("A=0123456789abcdef\n", "A", v, sizeof v) == -EINVAL); /* > cap - 1 */
	CHECK(value_of("A=0123456789abcde\n", "A", v, sizeof v) == 1);
	big = malloc(KUBELET_ENV_FILE_MAX + 1);
	CHECK(big != NULL);
	memset(big, '#', KUBELET_ENV_FILE_MAX + 1);
	CHECK(env_file_value(big, KUBELET_ENV_FILE_MAX + 1, "A", v, sizeof v, err, sizeof err) ==
	      -EINVAL);
	CHECK(env_file_value(big, KUBELET_ENV_FILE_MAX, "A", v, sizeof v, err, sizeof err) == 0);
	free(big);
}

static void put_file(const char *dir, const char *rel, const char *text)
{
	char path[256];

	snprintf(path, sizeof path, "%s%s", dir, rel);
	*strrchr(path, '/') = '\0';
	if (mkdir_parents(path, 0755) < 0)
		abort();
	snprintf(path, sizeof path, "%s%s", dir, rel);
	if (write_file_replace(path, text, strlen(text), 0644) < 0)
		abort();
}

TEST(kubelet_stamp_sees_kubeadm_write_its_files)
{
	struct kubelet_stamp s;
	char dir[64];
	int fresh, created, rewritten, same, removed;

	harness_tmpdir(dir, "kubelet-stamp");
	kubelet_stamp_take(dir, &s);
	fresh = kubelet_stamp_changed(dir, &s);
	put_file(dir, "/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\n");
	created = kubelet_stamp_changed(dir, &s);
	kubelet_stamp_take(dir, &s);
	same = kubelet_stamp_changed(dir, &s);
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", kubeadm_flags);
	rewritten = kubelet_stamp_changed(dir, &s);
	kubelet_stamp_take(dir, &s);
	unlink(harness_path(dir, "var/lib/kubelet/kubeadm-flags.env"));
	removed = kubelet_stamp_changed(dir, &s);
	harness_rmtree(dir);
	CHECK(!fresh && created && !same && rewritten && removed);
}

static const char *const fixed[] = {
    "/usr/bin/kubelet",
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--config=/var/lib/kubelet/config.yaml",
};

TEST(kubelet_argv_without_files_is_the_drop_in)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	n = kubelet_argv(dir, "/usr/bin/kubelet", arena, sizeof arena, argv, 64);
	CHECK(n == 4);
	for (int i = 0; i < 4; i++)
		CHECK(strcmp(argv[i], fixed[i]) == 0);
	CHECK(argv[4] == NULL);
	harness_rmtree(dir);
}

TEST(kubelet_argv_takes_kubeadm_flags_then_extra_args)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", kubeadm_flags);
	put_file(dir, "/etc/default/kubelet", "KUBELET_EXTRA_ARGS='--v=2  --node-labels=a=b'\n");
	n = kubelet_argv(dir, "/usr/bin/kubelet", arena, sizeof arena, argv, 64);
	CHECK(n == 10);
	for (int i = 0; i < 4; i++)
		CHECK(strcmp(argv[i], fixed[i]) == 0);
	CHECK(strcmp(argv[4], "--container-runtime-endpoint=unix:///run/containerd/"
			      "containerd.sock") == 0);
	CHECK(strcmp(argv[5], "--node-ip=10.9.0.2") == 0);
	CHECK(strcmp(argv[6], "--pod-infra-container-image=registry.k8s.io/pause:3.10") == 0);
	CHECK(strcmp(argv[7], "--provider-id=qemu:///hostname/worker-0") == 0);
	CHECK(strcmp(argv[8], "--v=2") == 0);
	CHECK(strcmp(argv[9], "--node-labels=a=b") == 0);
	CHECK(argv[10] == NULL);
	harness_rmtree(dir);
}

TEST(kubelet_argv_drops_a_malformed_file_only)
{
	char dir[64], arena[4096];
	const char *argv[64];
	int n;

	harness_tmpdir(dir, "kubelet-argv");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=--a\n1BAD=x\n");
	put_file(dir, "/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--v=4\n");
	n = kubelet_argv(dir, "/k", arena, sizeof arena, argv, 64);
	CHECK(n == 5);
	CHECK(strcmp(argv[4], "--v=4") == 0);
	harness_rmtree(dir);
}

TEST(kubelet_argv_bounds_words_and_buffers)
{
	char dir[64], arena[16384], *text;
	const char *argv[KUBELET_WORDS_MAX + 16];
	size_t n = 0;
	int r;

	harness_tmpdir(dir, "kubelet-argv");
	text = malloc(KUBELET_ENV_FILE_MAX);
	CHECK(text != NULL);
	n += (size_t)snprintf(text, 64, "KUBELET_KUBEADM_ARGS=\"");
	for (int i = 0; i <= KUBELET_WORDS_MAX; i++)
		n += (size_t)snprintf(text + n, 8, "-%d ", i % 10);
	snprintf(text + n, 4, "\"\n");
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", text);
	r = kubelet_argv(dir, "/k", arena, sizeof arena, argv, KUBELET_WORDS_MAX + 16);
	CHECK(r == 4); /* one word too many: the file's words are left out */
	memcpy(text, "KUBELET_KUBEADM_ARGS=--a ", 25);
	memset(text + 25, 'x', KUBELET_WORD_MAX + 1);
	text[25 + KUBELET_WORD_MAX + 1] = '\0';
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", text);
	r = kubelet_argv(dir, "/k", arena, sizeof arena, argv, 64);
	CHECK(r == 4);
	free(text);
	put_file(dir, "/var/lib/kubelet/kubeadm-flags.env", kubeadm_flags);
	CHECK(kubelet_argv(dir, "/k", arena, sizeof arena, argv, 8) == -E2BIG);
	CHECK(kubelet_argv(dir, "/k", arena, 200, argv, 64) == -ENOBUFS);
	CHECK(kubelet_argv(dir, "/k", arena, sizeof arena, argv, 9) == 8);
	harness_rmtree(dir);
}

/* ---- against the doubles: kubeadm join writes its files, kubelet restarts until then ---- */

static const char join_cfg[] = "apiVersion: kubeadm.k8s.io/v1beta3\n"
			       "kind: JoinConfiguration\n"
			       "discovery:\n"
			       "  bootstrapToken:\n"
			       "    apiServerEndpoint: \"10.42.1.100:6443\"\n"
			       "    token: \"abcdef.0123456789abcdef\"\n"
			       "nodeRegistration:\n"
			       "  name: \"worker-0\"\n"
			       "  criSocket: \"unix:///run/containerd/containerd.sock\"\n"
			       "  kubeletExtraArgs:\n"
			       "    cloud-provider: \"\"\n"
			       "    node-ip: \"10.42.2.100\"\n"
			       "---\n"
			       "apiVersion: kubelet.config.k8s.io/v1beta1\n"
			       "kind: KubeletConfiguration\n"
			       "providerID: \"qemu:///hostname/worker-0\"\n";

/* Runs argv in root (chroot) under hostname, its output appended to root/<out>. */
static pid_t spawn_in(const char *root, const char *hostname, const char *const *argv,
		      const char *out)
{
	pid_t pid = fork();

	if (pid == 0) {
		char path[256];
		int fd;

		snprintf(path, sizeof path, "%s/%s", root, out);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || unshare(CLONE_NEWUTS) < 0 ||
		    sethostname(hostname, strlen(hostname)) < 0 || chroot(root) < 0 ||
		    chdir("/") < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The stand-in of tests/vm/standin.c, as make builds it ($BUILD/vm/standin). */
static const char *standin(void)
{
	static char path[256];
	const char *b = getenv("BUILD");

	snprintf(path, sizeof path, "%s/vm/standin", b && *b ? b : "build");
	return path;
}

static int copy_file(const char *from, const char *to)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, "install -D -m 0755 %s %s", from, to);
	return system(cmd);
}

TEST(kubelet_argv_satisfies_the_kubelet_double_once_kubeadm_wrote_its_flags)
{
	const char *join[] = {"/usr/bin/kubeadm", "join",	   "-v=5",
			      "--config",	  "/tmp/cfg.yaml", NULL};
	char dir[64], arena[8192], *out;
	const char *argv[64];
	struct kubelet_stamp stamp;
	pid_t kubeadm, kubelet = -1;
	int st = -1, starts = 0, ok_starts = 0;
	uint64_t end;

	if (access(standin(), X_OK) < 0) {
		harness_fail(__FILE__, __LINE__, "%s missing: make %s", standin(), standin());
		return;
	}
	harness_tmpdir(dir, "kubelet-double");
	CHECK(copy_file(standin(), harness_path(dir, "usr/bin/kubeadm")) == 0);
	CHECK(copy_file(standin(), harness_path(dir, "usr/bin/kubelet")) == 0);
	put_file(dir, "/usr/share/standin/tls-bootstrap-wait-s", "20\n");
	put_file(dir, "/tmp/cfg.yaml", join_cfg);
	put_file(dir, "/run/.keep", "");
	/* PID 1's part: kubelet first, restarted with its argv composed anew at every start */
	end = monotonic_ms() + 25000;
	kubeadm = -1;
	while (monotonic_ms() < end) {
		if (kubelet < 0) {
			int n =
			    kubelet_argv(dir, "/usr/bin/kubelet", arena, sizeof arena, argv, 64);

			CHECK(n >= 4);
			kubelet_stamp_take(dir, &stamp);
			kubelet = spawn_in(dir, "worker-0", argv, "kubelet.out");
			starts++;
			ok_starts += n > 4;
		}
		if (kubelet > 0 && waitpid(kubelet, NULL, WNOHANG) == kubelet)
			kubelet = -1;
		/* kubeadm's "systemctl restart kubelet" once it wrote the files */
		if (kubelet > 0 && kubelet_stamp_changed(dir, &stamp)) {
			kill(kubelet, SIGTERM);
			waitpid(kubelet, NULL, 0);
			kubelet = -1;
		}
		/* kubeadm after the first kubelet gave up, as on a node that downloads it first */
		if (kubeadm < 0 && kubelet < 0)
			kubeadm = spawn_in(dir, "worker-0", join, "kubeadm.out");
		if (kubeadm > 0 && waitpid(kubeadm, &st, WNOHANG) == kubeadm)
			break;
		usleep(200000);
	}
	if (kubelet > 0) {
		kill(kubelet, SIGKILL);
		waitpid(kubelet, NULL, 0);
	}
	out = malloc(65536);
	CHECK(out != NULL);
	{
		FILE *f = fopen(harness_path(dir, "kubelet.out"), "r");
		size_t n = f ? fread(out, 1, 65535, f) : 0;

		out[n] = '\0';
		if (f)
			fclose(f);
	}
	if (getenv("KEEP"))
		fprintf(stderr, "kept %s st=%d\n", dir, st);
	else
		harness_rmtree(dir);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(starts >= 2 && ok_starts >= 1);
	CHECK(
	    strstr(out, "failed to load kubelet config file, path: /var/lib/kubelet/config.yaml"));
	CHECK(strstr(out, "@@DATA kubelet_flags ok (3 words of KUBELET_KUBEADM_ARGS)"));
	CHECK(strstr(out, "@@DATA kubelet_hostname_ok yes"));
	CHECK(strstr(out, "@@DATA kubelet_bootstrap tls-bootstrap"));
	CHECK(!strstr(out, "missing"));
	free(out);
}

static char *run_double(const char *dir, const char *const *argv, int *status)
{
	static char out[16384];
	pid_t pid;
	FILE *f;
	size_t n;

	unlink(harness_path(dir, "double.out"));
	pid = spawn_in(dir, "control-plane-0", argv, "double.out");
	*status = -1;
	if (pid > 0)
		waitpid(pid, status, 0);
	f = fopen(harness_path(dir, "double.out"), "r");
	n = f ? fread(out, 1, sizeof out - 1, f) : 0;
	out[n] = '\0';
	if (f)
		fclose(f);
	return out;
}

TEST(kubeadm_double_fails_as_kubeadm_without_a_kubelet_and_prints_the_token_unless_told)
{
	const char *join[] = {"/usr/bin/kubeadm", "join", "--config", "/tmp/cfg.yaml", NULL};
	const char *init[] = {"/usr/bin/kubeadm", "init",	   "-v=5",
			      "--config",	  "/tmp/cfg.yaml", NULL};
	const char *quiet[] = {"/usr/bin/kubeadm", "init",	    "-v=5", "--skip-token-print",
			       "--config",	   "/tmp/cfg.yaml", NULL};
	char dir[64], *out, token_line[64];
	int st, join_failed, said, printed, withheld, files;

	if (access(standin(), X_OK) < 0) {
		harness_fail(__FILE__, __LINE__, "%s missing: make %s", standin(), standin());
		return;
	}
	harness_tmpdir(dir, "kubeadm-double");
	CHECK(copy_file(standin(), harness_path(dir, "usr/bin/kubeadm")) == 0);
	put_file(dir, "/usr/share/standin/tls-bootstrap-wait-s", "1\n");
	put_file(dir, "/usr/share/standin/banner-token", "k8f3x2.q7w1e9r4t6y8u0i2\n");
	put_file(dir, "/tmp/cfg.yaml", join_cfg);
	out = run_double(dir, join, &st);
	join_failed = WIFEXITED(st) && WEXITSTATUS(st) == 1;
	said = strstr(out, "error execution phase kubelet-start: timed out waiting for the "
			   "condition") != NULL;
	files = access(harness_path(dir, "var/lib/kubelet/config.yaml"), F_OK) == 0 &&
		access(harness_path(dir, "var/lib/kubelet/kubeadm-flags.env"), F_OK) == 0 &&
		access(harness_path(dir, "etc/kubernetes/bootstrap-kubelet.conf"), F_OK) == 0;
	/* init, with the kubelet's certificate already there */
	put_file(dir, "/var/lib/kubelet/pki/kubelet-client-current.pem", "pem\n");
	put_file(dir, "/tmp/cfg.yaml",
		 "kind: InitConfiguration\nnodeRegistration:\n  name: "
		 "control-plane-0\n---\nkind: ClusterConfiguration\n"
		 "controlPlaneEndpoint: 10.42.1.100:6443\n");
	out = run_double(dir, init, &st);
	snprintf(token_line, sizeof token_line, "--token %s", "k8f3x2.q7w1e9r4t6y8u0i2");
	printed = WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
		  strstr(out, "kubeadm join 10.42.1.100:6443 ") && strstr(out, token_line);
	out = run_double(dir, quiet, &st);
	withheld = WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
		   strstr(out, "--token <value withheld>") && !strstr(out, "q7w1e9r4t6y8u0i2");
	harness_rmtree(dir);
	CHECK(join_failed && said);
	CHECK(files);
	CHECK(printed);
	CHECK(withheld);
}
