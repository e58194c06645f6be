/* Running kubeadm (spec §5.4 step 9, §10) against kubeadm-test-double, a /bin/sh script that
 * records its arguments and environment, fails while told to, sleeps when told to (with a
 * grandchild, or ignoring SIGTERM with one), makes a cluster CA with openssl for "init phase
 * certs all", prints a kubeconfig for "kubeconfig user", and prints what kubeadm prints that
 * must not reach the console: a join banner with a bootstrap token and a certificate key, or
 * thousands of lines. Checked: exit statuses and signals come back, kubeadm's output reaches
 * the log only as its last lines with tokens redacted, a hung kubeadm's process group is
 * stopped (SIGTERM, grace, SIGKILL) on its deadline, on the stop fd and on a SIGTERM to the
 * process running it, join retries and gives up after three attempts, the join configuration
 * is passed in a 0600 file that is gone afterwards, the audit policy and an empty manifests
 * directory exist, init runs its four kubeadm commands in order with the right skip-phases
 * and --skip-token-print, signs a kubelet certificate that openssl verifies against the CA,
 * and returns the kubeconfig bytes on out_fd, bounded. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "harness.h"
#include "kube/kube.h"

#define KUBECONFIG_TEXT "apiVersion: v1\nkind: Config\nclusters: []\n"

/* One fixture directory per test: dir/kubeadm-test-double, dir/root, dir/record, ... */
static char dir[64];

static const char *at(const char *name)
{
	return harness_path(dir, name);
}

static const char double_script[] =
    "#!/bin/sh\n"
    "# kubeadm-test-double: records argv, PATH and the config it was given; told by files\n"
    "# in its directory to fail (a count), sleep, or print too much\n"
    "d='%s'\n"
    "root=\"$d/root\"\n"
    "echo \"$*\" >>\"$d/record\"\n"
    "echo \"$PATH\" >\"$d/path\"\n"
    "echo \"${CONSTEL_TEST_SECRET:-unset}\" >\"$d/env-secret\"\n"
    "prev=; cfg=\n"
    "for a in \"$@\"; do [ \"$prev\" = --config ] && cfg=$a; prev=$a; done\n"
    "if [ -n \"$cfg\" ]; then\n"
    "  stat -c %%a \"$cfg\" >>\"$d/cfgmode\"; cp \"$cfg\" \"$d/last-config\"; fi\n"
    "ls -A \"$root/etc/kubernetes/manifests\" 2>/dev/null | wc -l >>\"$d/manifests\"\n"
    "if [ -f \"$d/sleep\" ]; then sleep 30 & echo $! >\"$d/sleep-pid\"; wait; fi\n"
    "if [ -f \"$d/fail\" ]; then n=$(cat \"$d/fail\"); if [ \"$n\" -gt 0 ]; then\n"
    "  echo $((n - 1)) >\"$d/fail\"; echo 'kubeadm-test-double: failing as told' >&2; exit 3\n"
    "fi; fi\n"
    "case \"$*\" in\n"
    "'init phase certs all'*)\n"
    "  mkdir -p \"$root/etc/kubernetes/pki\"\n"
    "  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kubernetes \\\n"
    "    -keyout \"$root/etc/kubernetes/pki/ca.key\" -out \"$root/etc/kubernetes/pki/ca.crt\" \\\n"
    "    2>/dev/null || exit 9 ;;\n"
    "'kubeconfig user'*)\n"
    "  if [ -f \"$d/huge\" ]; then head -c 1100000 /dev/zero; exit 0; fi\n"
    "  printf '" KUBECONFIG_TEXT "' ;;\n"
    "'stdout')\n"
    "  echo to-stdout ;;\n"
    "'signal')\n"
    "  kill -TERM $$ ;;\n"
    "'banner')\n"
    "  echo 'Then you can join any number of worker nodes by running:'\n"
    "  echo 'kubeadm join 10.42.1.100:6443 --token k8f3x2.q7w1e9r4t6y8u0i2 \\'\n"
    "  echo '  --discovery-token-ca-cert-hash "
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'\n"
    "  echo 'I1124 discovery.go:52] using token k8f3x2.q7w1e9r4t6y8u0i2 for discovery' >&2\n"
    "  echo '--certificate-key 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' "
    ";;\n"
    "'flood')\n"
    "  i=0; while [ $i -lt 3000 ]; do echo \"line $i k8f3x2.q7w1e9r4t6y8u0i2 padding padding "
    "padding\"; i=$((i+1)); done\n"
    "  echo the-last-line; exit 4 ;;\n"
    "'stubborn')\n"
    "  trap '' TERM; (exec sleep 30) & echo $! >\"$d/sleep-pid\"; wait ;;\n"
    "esac\n"
    "exit 0\n";

static void setup(void)
{
	FILE *f;

	harness_tmpdir(dir, "kuberun");
	if (!(f = fopen(at("kubeadm-test-double"), "w")))
		abort();
	fprintf(f, double_script, dir);
	fclose(f);
	chmod(at("kubeadm-test-double"), 0755);
	mkdir(at("root"), 0755);
}

static void teardown(void)
{
	harness_rmtree(dir);
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");

	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *path)
{
	static char b[16][65536]; /* a test reads at most 16 files */
	static int i;
	FILE *f = fopen(path, "rb");
	size_t n = 0;

	i = (i + 1) % 16;
	if (f) {
		n = fread(b[i], 1, sizeof b[i] - 1, f);
		fclose(f);
	}
	b[i][n] = '\0';
	return f ? b[i] : NULL;
}

static int count_lines(const char *text)
{
	int n = 0;

	for (; text && *text; text++)
		n += *text == '\n';
	return n;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* ---- kube_run ---- */

static int run_double(const char *arg, int out_fd, int timeout_ms)
{
	const char *argv[] = {at("kubeadm-test-double"), arg, NULL};
	const char *envp[] = {"PATH=/usr/bin:/bin", NULL};

	return kube_run(argv, envp, out_fd, timeout_ms);
}

TEST(kube_run_returns_exit_status_signal_and_stdout)
{
	int fd, r1, r2, r3;
	char *out;

	setup();
	fd = open(at("out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r1 = run_double("stdout", fd, 5000);
	close(fd);
	out = slurp(at("out"));
	put("fail", "1");
	r2 = run_double("x", -1, 5000);
	r3 = run_double("signal", -1, 5000);
	teardown();
	CHECK(r1 == 0 && out && !strcmp(out, "to-stdout\n"));
	CHECK(r2 == 3);
	CHECK(r3 == 128 + SIGTERM);
}

TEST(kube_run_refuses_relative_and_missing_programs)
{
	const char *rel[] = {"kubeadm", "version", NULL},
		   *missing[] = {"/nonexistent/kubeadm", NULL};
	const char *envp[] = {NULL};

	CHECK(kube_run(rel, envp, -1, 1000) == -EINVAL);
	CHECK(kube_run(missing, envp, -1, 1000) == -ENOENT);
}

/* A process that is gone, or a zombie nobody reaped yet (its parent was killed). */
static int gone(pid_t pid)
{
	char path[64], *st, *p;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(st = slurp(path)))
		return 1;
	p = strrchr(st, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

TEST(kube_run_kills_a_hung_kubeadm_and_its_children_within_the_bound)
{
	uint64_t t0;
	int r, dead = 0;
	pid_t sleeper;
	char *pid;

	setup();
	put("sleep", "");
	t0 = monotonic_ms();
	r = run_double("x", -1, 300);
	t0 = monotonic_ms() - t0;
	pid = slurp(at("sleep-pid"));
	sleeper = pid ? (pid_t)atoi(pid) : 0;
	for (int i = 0; sleeper > 0 && i < 100 && !(dead = gone(sleeper)); i++)
		usleep(10000);
	teardown();
	CHECK(r == -ETIMEDOUT);
	CHECK(t0 >= 300 && t0 < 3000);
	CHECK(sleeper > 0 && dead);
}

/* Runs the double with arg, the agent's log going to a file; returns its exit status and the
 * log's text in *log. */
static int run_logged(const char *arg, int timeout_ms, int stop_fd, char **log)
{
	const char *argv[] = {at("kubeadm-test-double"), arg, NULL};
	const char *envp[] = {"PATH=/usr/bin:/bin", NULL};
	int fd = open(at("log"), O_WRONLY | O_CREAT | O_TRUNC, 0600), r;

	log_set_fd(fd);
	r = kube_run_until(argv, envp, -1, timeout_ms, stop_fd);
	log_set_fd(2);
	close(fd);
	*log = slurp(at("log"));
	return r;
}

TEST(kube_run_logs_kubeadm_output_without_the_bootstrap_token)
{
	char *log;
	int r;

	setup();
	r = run_logged("banner", 5000, -1, &log);
	teardown();
	CHECK(r == 0);
	CHECK(log &&
	      strstr(log, "kubeadm-test-double banner| kubeadm join 10.42.1.100:6443 --token "
			  "<token> \\"));
	CHECK(strstr(log, "discovery.go:52] using token <token> for discovery"));
	CHECK(strstr(log, "--discovery-token-ca-cert-hash sha256:0123456789abcdef"));
	CHECK(strstr(log, "--certificate-key <key>"));
	CHECK(!strstr(log, "q7w1e9r4t6y8u0i2") && !strstr(log, "k8f3x2"));
	CHECK(!strstr(log, "ffeeddccbbaa9988"));
}

TEST(kube_run_keeps_only_the_last_lines_of_a_long_output)
{
	char *log;
	int r, lines = 0;

	setup();
	r = run_logged("flood", 10000, -1, &log);
	teardown();
	for (char *p = log; p && (p = strstr(p, "| ")); p++)
		lines++;
	CHECK(r == 4);
	CHECK(log && strstr(log, "flood| the-last-line"));
	CHECK(strstr(log, "flood| line 2999 <token> padding"));
	CHECK(!strstr(log, "line 0 ") && !strstr(log, "q7w1e9r4t6y8u0i2"));
	CHECK(lines == KUBE_TAIL_LINES);
}

TEST(kube_run_kills_a_group_that_ignores_sigterm_after_the_grace)
{
	uint64_t t0;
	char *log, *pid;
	pid_t sleeper;
	int r, dead = 0;

	setup();
	t0 = monotonic_ms();
	r = run_logged("stubborn", 300, -1, &log);
	t0 = monotonic_ms() - t0;
	pid = slurp(at("sleep-pid"));
	sleeper = pid ? (pid_t)atoi(pid) : 0;
	for (int i = 0; sleeper > 0 && i < 100 && !(dead = gone(sleeper)); i++)
		usleep(10000);
	teardown();
	CHECK(r == -ETIMEDOUT);
	CHECK(t0 >= 3300 && t0 < 6000); /* the grace, then SIGKILL */
	CHECK(sleeper > 0 && dead);
	CHECK(log && strstr(log, "no exit within 300 ms; stopping its process group"));
}

TEST(kube_run_stops_the_group_when_the_node_shuts_down)
{
	uint64_t t0;
	char *log, *pid;
	pid_t sleeper;
	struct itimerspec ts = {.it_value = {0, 500 * 1000 * 1000}};
	int r, dead = 0, stop;

	setup();
	put("sleep", "");
	/* readable after 500 ms, as PID 1's signalfd is once SIGTERM arrives */
	stop = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	CHECK(stop >= 0 && timerfd_settime(stop, 0, &ts, NULL) == 0);
	t0 = monotonic_ms();
	r = run_logged("x", 60000, stop, &log);
	t0 = monotonic_ms() - t0;
	close(stop);
	pid = slurp(at("sleep-pid"));
	sleeper = pid ? (pid_t)atoi(pid) : 0;
	for (int i = 0; sleeper > 0 && i < 100 && !(dead = gone(sleeper)); i++)
		usleep(10000);
	teardown();
	CHECK(r == -ECANCELED);
	CHECK(t0 >= 500 && t0 < 3000);
	CHECK(log && strstr(log, "the node shuts down; stopping its process group"));
	CHECK(sleeper > 0 && dead);
}

TEST(kube_run_in_a_child_stops_the_group_on_sigterm_then_dies_of_it)
{
	uint64_t t0;
	char *log, *pid;
	pid_t sleeper, hook;
	int st = 0, dead = 0;

	setup();
	put("sleep", "");
	/* the supervisor's kubeadm child: SIGTERM from the supervisor while kubeadm runs */
	hook = fork();
	if (hook == 0)
		_exit(run_logged("x", 60000, -1, &log) == -ECANCELED ? 42 : 1);
	for (int i = 0; i < 300 && access(at("sleep-pid"), F_OK) < 0; i++)
		usleep(10000);
	t0 = monotonic_ms();
	kill(hook, SIGTERM);
	waitpid(hook, &st, 0);
	t0 = monotonic_ms() - t0;
	log = slurp(at("log"));
	pid = slurp(at("sleep-pid"));
	sleeper = pid ? (pid_t)atoi(pid) : 0;
	for (int i = 0; sleeper > 0 && i < 100 && !(dead = gone(sleeper)); i++)
		usleep(10000);
	teardown();
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CHECK(t0 < 3000);
	CHECK(sleeper > 0 && dead);
	if (!log || !strstr(log, "we were asked to stop; stopping its process group"))
		fprintf(stderr, "log: %s\n", log ? log : "(none)");
	CHECK(log && strstr(log, "we were asked to stop; stopping its process group"));
}

TEST(kube_output_redact_replaces_tokens_and_certificate_keys)
{
	char s[] =
	    "a abcdef.0123456789abcdef b ABCDEF.0123456789abcdef x.y abcdef.0123456789abcde "
	    "--certificate-key=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff "
	    "--certificate-key 12 zz0abcdef.0123456789abcdefzz";
	size_t n = kube_output_redact(s, strlen(s));

	s[n] = '\0';
	CHECK(!strcmp(s, "a <token> b ABCDEF.0123456789abcdef x.y abcdef.0123456789abcde "
			 "--certificate-key=<key> --certificate-key 12 zz0<token>zz"));
}

/* ---- join ---- */

static struct kubeadm_join join_config(void)
{
	return (struct kubeadm_join){.node_name = "worker-0",
				     .provider_name = "worker-0",
				     .node_ip = "10.42.2.100",
				     .api_server_endpoint = "10.42.1.100:6443",
				     .token = "abcdef.0123456789abcdef",
				     .ca_cert_hash = "sha256:00ff"};
}

static int join(int attempts, int timeout_ms)
{
	struct kubeadm_join j = join_config();
	char root[300];
	struct kube_join_run r = {.j = &j,
				  .kubeadm = at("kubeadm-test-double"),
				  .root = root,
				  .attempts = attempts,
				  .retry_delay_ms = 50,
				  .timeout_ms = timeout_ms};

	snprintf(root, sizeof root, "%s", at("root"));
	return kube_join_run(&r);
}

/* The --config argument of the first recorded line. */
static const char *recorded_config(void)
{
	static char cfg[300];
	char *rec = slurp(at("record")), *p;

	cfg[0] = '\0';
	if (rec && (p = strstr(rec, "--config ")))
		sscanf(p + 9, "%299s", cfg);
	return cfg;
}

TEST(kube_join_run_retries_until_the_third_attempt_succeeds)
{
	char *rec, *cfg_copy, *policy, *path, *secret, manifests[300], cfg[300], want[400], c[300];
	int r, lines, manifests_empty, cfg_gone, mode_ok, token_in_argv, path_ok;
	struct stat st;

	setup();
	setenv("CONSTEL_TEST_SECRET", "must-not-reach-kubeadm", 1);
	snprintf(manifests, sizeof manifests, "%s", at("root/etc/kubernetes/manifests"));
	sh("mkdir -p %s/old && touch %s/etcd.yaml %s/old/x", manifests, manifests, manifests);
	put("fail", "2");
	r = join(3, 10000);
	rec = slurp(at("record"));
	lines = count_lines(rec);
	snprintf(cfg, sizeof cfg, "%s", recorded_config());
	snprintf(c, sizeof c, "%s", at("root/run/constel/kubeadm-join-"));
	snprintf(want, sizeof want, "join -v=5 --config %s\n", cfg);
	cfg_gone = cfg[0] && access(cfg, F_OK) < 0 && errno == ENOENT;
	cfg_copy = slurp(at("last-config"));
	mode_ok = !strcmp(slurp(at("cfgmode")) ?: "", "600\n600\n600\n");
	token_in_argv = rec && strstr(rec, "abcdef.") != NULL;
	policy = slurp(at("root/etc/kubernetes/audit-policy.yaml"));
	manifests_empty = stat(manifests, &st) == 0 && S_ISDIR(st.st_mode) &&
			  !strcmp(slurp(at("manifests")) ?: "", "0\n0\n0\n");
	path = slurp(at("path"));
	path_ok = path &&
		  !strncmp(path, at("root/run/state/bin:"), strlen(at("root/run/state/bin:"))) &&
		  strstr(path, ":/run/state/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\n");
	secret = slurp(at("env-secret"));
	unsetenv("CONSTEL_TEST_SECRET");
	stat(at("root/etc/kubernetes/audit-policy.yaml"), &st);
	teardown();
	CHECK(r == 0);
	CHECK(lines == 3 && rec && !strncmp(rec, want, strlen(want)) &&
	      !strcmp(rec + 2 * strlen(want), want));
	CHECK(!strncmp(cfg, c, strlen(c)) && strstr(cfg, ".yaml"));
	CHECK(cfg_gone);
	CHECK(mode_ok);
	CHECK(cfg_copy && strstr(cfg_copy, "kind: JoinConfiguration") &&
	      strstr(cfg_copy, "token: \"abcdef.0123456789abcdef\""));
	CHECK(!token_in_argv);
	CHECK(policy && !strcmp(policy, kube_audit_policy) && (st.st_mode & 07777) == 0644);
	CHECK(manifests_empty);
	CHECK(path_ok);
	CHECK(secret && !strcmp(secret, "unset\n"));
}

TEST(kube_join_run_gives_up_after_three_attempts_with_the_failing_status)
{
	char cfg[300];
	int r, lines, cfg_gone;

	setup();
	put("fail", "5");
	r = join(0, 10000); /* 0: the default of three */
	lines = count_lines(slurp(at("record")));
	snprintf(cfg, sizeof cfg, "%s", recorded_config());
	cfg_gone = cfg[0] && access(cfg, F_OK) < 0;
	teardown();
	CHECK(r == 3);
	CHECK(lines == 3);
	CHECK(cfg_gone);
}

TEST(kube_join_run_stops_at_the_overall_deadline)
{
	uint64_t t0;
	char cfg[300];
	int r, lines, cfg_gone;

	setup();
	put("sleep", "");
	t0 = monotonic_ms();
	r = join(3, 400);
	t0 = monotonic_ms() - t0;
	lines = count_lines(slurp(at("record")));
	snprintf(cfg, sizeof cfg, "%s", recorded_config());
	cfg_gone = cfg[0] && access(cfg, F_OK) < 0;
	teardown();
	CHECK(r == -ETIMEDOUT);
	CHECK(t0 >= 400 && t0 < 3000);
	CHECK(lines == 1);
	CHECK(cfg_gone);
}

TEST(kube_join_run_refuses_a_configuration_with_a_control_character)
{
	struct kubeadm_join j = join_config();
	struct kube_join_run r = {.j = &j, .kubeadm = "/bin/false", .root = "/nonexistent"};

	j.token = "a\nb";
	CHECK(kube_join_run(&r) == -EINVAL);
}

/* ---- init ---- */

static const char *const sans[] = {"cluster.example.com"};

static int init(const char *cluster, int conformance, int out_fd)
{
	struct kubeadm_init c = {.node_name = "control-plane-0",
				 .provider_name = "control-plane-0",
				 .node_ip = "10.42.1.100",
				 .lb_host = "10.42.1.100",
				 .kubernetes_version = "v1.32.9",
				 .cluster_name = cluster,
				 .cert_sans = sans,
				 .n_sans = 1,
				 .conformance = conformance};
	char root[300];
	struct kube_init_run r = {
	    .c = &c, .kubeadm = at("kubeadm-test-double"), .root = root, .timeout_ms = 30000};

	snprintf(root, sizeof root, "%s", at("root"));
	return kube_init_run(&r, out_fd);
}

TEST(kube_init_run_runs_the_phases_signs_the_kubelet_cert_and_returns_the_kubeconfig)
{
	char *rec, *out, *key, *policy, cfg[300], want[2048], kcrt[300], kkey[300], ca[300];
	int r, verify, match, subject, san, key_mode, crt_mode, is_ec, cfg_gone, manifests_empty;
	struct stat st;
	int fd;

	setup();
	sh("mkdir -p %s && touch %s/kube-apiserver.yaml", at("root/etc/kubernetes/manifests"),
	   at("root/etc/kubernetes/manifests"));
	fd = open(at("out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r = init("", 0, fd);
	close(fd);
	out = slurp(at("out"));
	rec = slurp(at("record"));
	snprintf(cfg, sizeof cfg, "%s", recorded_config());
	snprintf(want, sizeof want,
		 "init phase preflight -v=5 --config %s\n"
		 "init phase certs all -v=5 --config %s\n"
		 "init -v=5 --skip-phases=preflight,certs,addon/coredns,addon/kube-proxy "
		 "--skip-token-print --config %s\n"
		 "kubeconfig user --client-name constellation-admin --config %s --org "
		 "system:masters\n",
		 cfg, cfg, cfg, cfg);
	cfg_gone = cfg[0] && access(cfg, F_OK) < 0;
	snprintf(kcrt, sizeof kcrt, "%s", at("root/run/state/kubelet/pki/kubelet-client-crt.pem"));
	snprintf(kkey, sizeof kkey, "%s", at("root/run/state/kubelet/pki/kubelet-client-key.pem"));
	snprintf(ca, sizeof ca, "%s", at("root/etc/kubernetes/pki/ca.crt"));
	verify = sh("openssl verify -CAfile %s %s >/dev/null", ca, kcrt);
	match = sh("openssl pkey -in %s -pubout >%s && openssl x509 -in %s -noout -pubkey >%s && "
		   "cmp -s %s %s",
		   kkey, at("pub1"), kcrt, at("pub2"), at("pub1"), at("pub2"));
	subject = sh("openssl x509 -in %s -noout -subject | grep -q 'O *= *system:nodes, CN *= "
		     "*system:node:control-plane-0'",
		     kcrt);
	san =
	    sh("openssl x509 -in %s -noout -ext subjectAltName | grep -q 'IP Address:10.42.1.100'",
	       kcrt);
	key = slurp(kkey);
	is_ec = key && !strncmp(key, "-----BEGIN EC PRIVATE KEY-----\n", 31);
	key_mode = stat(kkey, &st) == 0 && (st.st_mode & 07777) == 0600;
	crt_mode = stat(kcrt, &st) == 0 && (st.st_mode & 07777) == 0600;
	/* the double saw an empty manifests directory only at the last two commands */
	manifests_empty = !strcmp(slurp(at("manifests")) ?: "", "1\n1\n0\n0\n");
	policy = slurp(at("root/etc/kubernetes/audit-policy.yaml"));
	teardown();
	CHECK(r == 0);
	CHECK(rec && !strcmp(rec, want));
	CHECK(out && !strcmp(out, KUBECONFIG_TEXT));
	CHECK(cfg_gone);
	CHECK(verify == 0);
	CHECK(match == 0);
	CHECK(subject == 0);
	CHECK(san == 0);
	CHECK(is_ec && key_mode && crt_mode);
	CHECK(manifests_empty);
	CHECK(policy && !strcmp(policy, kube_audit_policy));
}

TEST(kube_init_run_in_conformance_mode_keeps_kube_proxy_and_names_the_admin)
{
	char *rec;
	int r, fd;

	setup();
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	r = init("my-cluster", 1, fd);
	close(fd);
	rec = slurp(at("record"));
	teardown();
	CHECK(r == 0);
	CHECK(rec &&
	      strstr(rec,
		     "init -v=5 --skip-phases=preflight,certs,addon/coredns --skip-token-print "
		     "--config "));
	CHECK(strstr(rec, "kubeconfig user --client-name my-cluster-admin "));
}

TEST(kube_init_run_stops_at_a_failed_phase_and_passes_nothing_on)
{
	char cfg[300];
	int r, lines, cfg_gone, fd;
	struct stat st;

	setup();
	put("fail", "1");
	fd = open(at("out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r = init("", 0, fd);
	close(fd);
	lines = count_lines(slurp(at("record")));
	snprintf(cfg, sizeof cfg, "%s", recorded_config());
	cfg_gone = cfg[0] && access(cfg, F_OK) < 0;
	stat(at("out"), &st);
	teardown();
	CHECK(r == 3);
	CHECK(lines == 1);
	CHECK(cfg_gone);
	CHECK(st.st_size == 0);
}

TEST(kube_init_run_refuses_a_kubeconfig_over_1_mib)
{
	int r, fd;
	struct stat st;

	setup();
	put("huge", "");
	fd = open(at("out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r = init("", 0, fd);
	close(fd);
	stat(at("out"), &st);
	teardown();
	CHECK(r == -EFBIG);
	CHECK(st.st_size == 0);
}
