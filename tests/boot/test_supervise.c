/* The supervisor as an ordinary process (a child subreaper) against /bin/sh test doubles in a
 * temporary directory: a once-child runs once, a failing restart-child is restarted with a
 * growing, capped back-off (start times recorded by the double, the log lines captured), an
 * orphaned grandchild is reaped by us, SIGTERM from a helper process stops the children (one
 * that ignores SIGTERM is SIGKILLed after stop_timeout_ms) and is returned, and the deadline
 * returns 0. A running kubelet double whose files kubeadm rewrites (kubelet_stamp) is
 * restarted at once with the new flags, not counted for the back-off. Every run has a
 * deadline, so no test can hang. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "harness.h"
#include "kube/kube.h"

static char dir[64];

static const char *at(const char *name)
{
	return harness_path(dir, name);
}

static void setup(void)
{
	harness_tmpdir(dir, "supervise");
}

static void teardown(void)
{
	harness_rmtree(dir);
}

/* A test double: dir/name, "#!/bin/sh" and body (with %s for dir, as often as given). */
static const char *script(const char *name, const char *body)
{
	const char *path = at(name);
	FILE *f = fopen(path, "w");

	if (!f)
		abort();
	fprintf(f, "#!/bin/sh\nd='%s'\n%s", dir, body);
	fclose(f);
	chmod(path, 0755);
	return path;
}

/* The whole of a small file (NUL-terminated) into buf; its length or -1. */
static int slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY), n;

	if (fd < 0)
		return -1;
	n = (int)read_full(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static int count_lines(const char *path)
{
	char buf[4096];
	int n = 0;

	if (slurp(path, buf, sizeof buf) < 0)
		return -1;
	for (char *p = buf; *p; p++)
		n += *p == '\n';
	return n;
}

/* Log lines go to dir/log while captured. */
static int capture_log(void)
{
	int fd = open(at("log"), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);

	log_set_fd(fd);
	return fd;
}

static void release_log(int fd)
{
	log_set_fd(STDERR_FILENO);
	log_set_level(LOG_INFO);
	close(fd);
}

static int64_t now_ms(void)
{
	return (int64_t)monotonic_ms();
}

/* The shutdown signals and SIGCHLD blocked, as PID 1 has them, so none is lost between
 * starting and supervise_run. */
static void block_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPWR);
	sigprocmask(SIG_BLOCK, &set, old);
}

TEST(supervise_once_child_runs_once_and_the_deadline_returns_zero)
{
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "once-double", .argv = argv, .policy = SV_ONCE};
	struct supervisor s = {.children = &c, .n = 1, .backoff_min_ms = 50, .backoff_max_ms = 200};
	int64_t t0;
	sigset_t old;
	int r;

	setup();
	argv[0] = script("once-double", "echo ran >>\"$d/once-runs\"\nexit 0\n");
	block_signals(&old);
	t0 = now_ms();
	r = supervise_run(&s, t0 + 500);
	sigprocmask(SIG_SETMASK, &old, NULL);
	CHECK(r == 0);
	CHECK(now_ms() - t0 >= 500 && now_ms() - t0 < 5000);
	CHECK(count_lines(at("once-runs")) == 1);
	CHECK(c.done == 1 && c.pid == 0);
	CHECK(WIFEXITED(c.last_status) && WEXITSTATUS(c.last_status) == 0);
	teardown();
}

TEST(supervise_restarts_a_failing_child_with_doubling_capped_backoff)
{
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "flaky-double", .argv = argv, .policy = SV_RESTART};
	struct supervisor s = {.children = &c, .n = 1, .backoff_min_ms = 50, .backoff_max_ms = 200};
	char times[4096], log[8192];
	long long t[64];
	int n = 0, fd;
	sigset_t old;

	setup();
	argv[0] = script("flaky-double", "date +%s%N >>\"$d/starts\"\nexit 1\n");
	fd = capture_log();
	block_signals(&old);
	CHECK(supervise_run(&s, now_ms() + 1500) == 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	release_log(fd);
	CHECK(slurp(at("starts"), times, sizeof times) > 0);
	for (char *p = times, *e; n < 64 && (t[n] = strtoll(p, &e, 10)) && e != p; p = e)
		n++;
	/* 0, +50, +100, +200, +200, ...: at least five starts in 1.5 s, at most 1 + 1500/50 */
	CHECK(n >= 5 && n <= 31);
	/* start-to-start is the back-off plus the double's own run time */
	CHECK((t[1] - t[0]) / 1000000 >= 45);
	CHECK((t[2] - t[1]) / 1000000 >= 95);
	CHECK((t[3] - t[2]) / 1000000 >= 195);
	CHECK((t[4] - t[3]) / 1000000 >= 195);
	CHECK(t[3] - t[2] > t[1] - t[0]);
	CHECK(c.restarts >= 4 && c.done == 0 && c.pid == 0);
	CHECK(slurp(at("log"), log, sizeof log) > 0);
	CHECK(strstr(log, "flaky-double exited with status 1, restart 1 in 50 ms"));
	CHECK(strstr(log, "flaky-double exited with status 1, restart 2 in 100 ms"));
	CHECK(strstr(log, "flaky-double exited with status 1, restart 3 in 200 ms"));
	CHECK(strstr(log, "flaky-double exited with status 1, restart 4 in 200 ms"));
	teardown();
}

TEST(supervise_reaps_an_orphaned_grandchild_as_subreaper)
{
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "parent-double", .argv = argv, .policy = SV_ONCE};
	struct supervisor s = {.children = &c, .n = 1};
	char buf[64], log[8192], want[64];
	sigset_t old;
	int fd, pid;

	setup();
	/* the double exits at once; its sleep is orphaned and reparented to us */
	argv[0] = script("parent-double", "sleep 0.3 &\necho $! >\"$d/orphan\"\nexit 0\n");
	fd = capture_log();
	log_set_level(LOG_DEBUG);
	block_signals(&old);
	CHECK(supervise_run(&s, now_ms() + 1200) == 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	release_log(fd);
	CHECK(slurp(at("orphan"), buf, sizeof buf) > 0);
	pid = atoi(buf);
	CHECK(pid > 1);
	/* a zombie would still answer kill(pid, 0) */
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	snprintf(want, sizeof want, "supervisor: reaped orphan %d\n", pid);
	CHECK(slurp(at("log"), log, sizeof log) > 0);
	CHECK(strstr(log, want));
	teardown();
}

TEST(supervise_sigterm_stops_children_and_kills_the_stubborn_one)
{
	const char *sleeper_argv[] = {NULL, NULL}, *stubborn_argv[] = {NULL, NULL};
	struct sv_child c[2] = {
	    {.name = "sleeper-double", .argv = sleeper_argv, .policy = SV_RESTART},
	    {.name = "stubborn-double", .argv = stubborn_argv, .policy = SV_RESTART},
	};
	struct supervisor s = {.children = c, .n = 2, .stop_timeout_ms = 300};
	int64_t t0, took;
	sigset_t old;
	pid_t helper;
	int r;

	setup();
	sleeper_argv[0] = script("sleeper-double", "exec sleep 30\n");
	stubborn_argv[0] = script("stubborn-double", "trap '' TERM\necho up >\"$d/stubborn-up\"\n"
						     "while :; do sleep 0.05; done\n");
	block_signals(&old);
	t0 = now_ms();
	helper = fork();
	if (helper == 0) {
		usleep(300 * 1000);
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	CHECK(helper > 0);
	r = supervise_run(&s, t0 + 10000);
	took = now_ms() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	CHECK(r == SIGTERM && s.shutdown_signal == SIGTERM);
	/* the signal at 300 ms, then 300 ms for the stubborn double before SIGKILL; a wide upper
	 * bound for a loaded machine, still short of the 10 s deadline */
	CHECK(took >= 550 && took < 9000);
	CHECK(access(at("stubborn-up"), F_OK) == 0);
	CHECK(c[0].pid == 0 && c[1].pid == 0);
	CHECK(WIFSIGNALED(c[0].last_status) && WTERMSIG(c[0].last_status) == SIGTERM);
	CHECK(WIFSIGNALED(c[1].last_status) && WTERMSIG(c[1].last_status) == SIGKILL);
	CHECK(c[0].restarts == 0 && c[1].restarts == 0);
	teardown();
}

TEST(supervise_deadline_stops_a_running_child)
{
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "sleeper-double", .argv = argv, .policy = SV_RESTART};
	struct supervisor s = {.children = &c, .n = 1};
	int64_t t0, took;
	sigset_t old;

	setup();
	argv[0] = script("sleeper-double", "exec sleep 30\n");
	block_signals(&old);
	t0 = now_ms();
	CHECK(sv_start_all(&s) == 0 && c.pid > 0);
	CHECK(supervise_run(&s, t0 + 300) == 0);
	took = now_ms() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	CHECK(took >= 300 && took < 15000); /* the child sleeps 30 s unless stopped */
	CHECK(c.pid == 0 && c.restarts == 0);
	CHECK(WIFSIGNALED(c.last_status) && WTERMSIG(c.last_status) == SIGTERM);
	teardown();
}

TEST(supervise_a_missing_program_is_retried_not_fatal)
{
	const char *argv[] = {"/nonexistent/constel-test-double", NULL};
	struct sv_child c = {.name = "missing-double", .argv = argv, .policy = SV_RESTART};
	struct supervisor s = {.children = &c, .n = 1, .backoff_min_ms = 50, .backoff_max_ms = 50};
	char log[8192];
	sigset_t old;
	int fd;

	setup();
	fd = capture_log();
	block_signals(&old);
	CHECK(supervise_run(&s, now_ms() + 400) == 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	release_log(fd);
	CHECK(c.restarts >= 2);
	CHECK(WIFEXITED(c.last_status) && WEXITSTATUS(c.last_status) == 127);
	CHECK(slurp(at("log"), log, sizeof log) > 0);
	CHECK(strstr(log, "missing-double: executing /nonexistent/constel-test-double: No such"));
	teardown();
}

/* ---- the pollable supervisor of the whole boot (sv_open, sv_add, sv_handle) ---- */

/* Runs the caller's own poll loop over the supervisor for ms, as the node's loop does. */
static void poll_loop(struct supervisor *s, int ms)
{
	int64_t end = now_ms() + ms;

	while (now_ms() < end) {
		struct pollfd p = {.fd = sv_fd(s), .events = POLLIN};
		int64_t left = end - now_ms();
		int t = sv_next_ms(s);

		poll(&p, 1, left < t ? (int)left : t);
		sv_handle(s);
	}
}

static int starts_seen;
static char start_word[32];
static const char *recomposed_argv[4];

/* a prepare hook: argv composed afresh at every start, as kubelet's from kubeadm-flags.env */
static int recompose(struct sv_child *c)
{
	snprintf(start_word, sizeof start_word, "--start=%d", ++starts_seen);
	recomposed_argv[0] = c->arg;
	recomposed_argv[1] = start_word;
	recomposed_argv[2] = NULL;
	c->argv = recomposed_argv;
	return 0;
}

TEST(supervise_kubelet_restarts_capped_while_kubeadm_runs_with_argv_recomposed)
{
	struct sv_child slots[4] = {0};
	struct supervisor s = {.children = slots, .cap = 4, .backoff_min_ms = 50};
	const char *kubeadm_argv[] = {NULL, NULL};
	struct sv_child kubeadm = {
	    .name = "kubeadm-double", .argv = kubeadm_argv, .policy = SV_ONCE};
	struct sv_child kubelet = {.name = "kubelet-double",
				   .policy = SV_RESTART,
				   .prepare = recompose,
				   .backoff_max_ms = 200};
	struct sv_child *ka, *kl;
	char args[8192], times[8192];
	long long t[256];
	int n = 0, fd, maxgap = 0;

	setup();
	/* kubelet exits 1 until kubeadm wrote its config (after 1.5 s), then runs */
	kubelet.arg = (void *)script("kubelet-double",
				     "echo \"$1\" >>\"$d/kubelet-args\"\n"
				     "date +%s%N >>\"$d/kubelet-starts\"\n"
				     "[ -e \"$d/config.yaml\" ] || exit 1\nexec sleep 30\n");
	kubeadm_argv[0] = script("kubeadm-double", "sleep 1.5\ntouch \"$d/config.yaml\"\n");
	fd = capture_log();
	starts_seen = 0;
	CHECK(sv_open(&s) == 0);
	ka = sv_add(&s, &kubeadm);
	kl = sv_add(&s, &kubelet);
	CHECK(ka && kl && ka->pid > 0 && kl->pid > 0);
	poll_loop(&s, 2500);
	CHECK(ka->done && WIFEXITED(ka->last_status) && WEXITSTATUS(ka->last_status) == 0);
	CHECK(kl->pid > 0); /* running since the config exists */
	sv_stop(&s);
	sv_close(&s);
	release_log(fd);
	CHECK(slurp(at("kubelet-starts"), times, sizeof times) > 0);
	for (char *p = times, *e; n < 256 && (t[n] = strtoll(p, &e, 10)) && e != p; p = e)
		n++;
	for (int i = 1; i < n; i++)
		if ((t[i] - t[i - 1]) / 1000000 > maxgap)
			maxgap = (int)((t[i] - t[i - 1]) / 1000000);
	/* 50, 100, 200, 200, ... while kubeadm runs: never the supervisor's 60 s */
	CHECK(n >= 6);
	CHECK(maxgap < 200 + 300);
	CHECK(slurp(at("kubelet-args"), args, sizeof args) > 0);
	CHECK(strstr(args, "--start=1\n--start=2\n--start=3\n"));
	CHECK(starts_seen == n);
	teardown();
}

TEST(supervise_kills_the_process_group_of_a_once_child_at_its_deadline)
{
	struct sv_child slots[2] = {0};
	struct supervisor s = {.children = slots, .cap = 2};
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "kubeadm-double", .argv = argv, .policy = SV_ONCE};
	struct sv_child *k;
	char buf[64];
	int64_t t0;
	int grandchild;

	setup();
	/* what kubeadm does: a child of its own (in its process group), then a long wait */
	argv[0] = script("kubeadm-double", "sleep 30 &\necho $! >\"$d/grandchild\"\nsleep 30\n");
	c.deadline_ms = now_ms() + 400;
	CHECK(sv_open(&s) == 0);
	t0 = now_ms();
	k = sv_add(&s, &c);
	CHECK(k && k->pid > 0);
	while (!k->done && now_ms() - t0 < 5000)
		poll_loop(&s, 50);
	CHECK(k->done && k->timed_out);
	CHECK(WIFSIGNALED(k->last_status) && WTERMSIG(k->last_status) == SIGTERM);
	CHECK(now_ms() - t0 >= 400 && now_ms() - t0 < 3000);
	poll_loop(&s, 200); /* the grandchild, orphaned to us, is reaped */
	CHECK(slurp(at("grandchild"), buf, sizeof buf) > 0);
	grandchild = atoi(buf);
	CHECK(grandchild > 1 && kill(grandchild, 0) < 0 && errno == ESRCH);
	sv_stop(&s);
	sv_close(&s);
	teardown();
}

TEST(supervise_reaps_orphans_while_the_boot_goes_on)
{
	struct sv_child slots[2] = {0};
	struct supervisor s = {.children = slots, .cap = 2};
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "service-double", .argv = argv, .policy = SV_RESTART};
	char buf[64];
	int orphan;

	setup();
	/* a running service whose short-lived child is orphaned: reaped while it runs on */
	argv[0] = script("service-double", "(sleep 0.2 & echo $! >\"$d/orphan\")\nexec sleep 30\n");
	CHECK(sv_open(&s) == 0);
	CHECK(sv_add(&s, &c) != NULL);
	poll_loop(&s, 800);
	CHECK(slurp(at("orphan"), buf, sizeof buf) > 0);
	orphan = atoi(buf);
	CHECK(orphan > 1 && kill(orphan, 0) < 0 && errno == ESRCH); /* no zombie */
	CHECK(slots[0].pid > 0);				    /* the service still runs */
	sv_stop(&s);
	sv_close(&s);
	teardown();
}

TEST(supervise_kills_a_once_child_that_ignores_sigterm_after_the_grace)
{
	struct sv_child slots[2] = {0};
	struct supervisor s = {.children = slots, .cap = 2};
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "stubborn-kubeadm-double", .argv = argv, .policy = SV_ONCE};
	struct sv_child *k;
	int64_t t0;

	setup();
	argv[0] = script("stubborn-kubeadm-double", "trap '' TERM\nwhile :; do sleep 0.05; done\n");
	CHECK(sv_open(&s) == 0);
	t0 = now_ms();
	c.deadline_ms = t0 + 200;
	k = sv_add(&s, &c);
	CHECK(k && k->pid > 0);
	while (!k->done && now_ms() - t0 < 10000)
		poll_loop(&s, 50);
	CHECK(k->done && k->timed_out);
	CHECK(WIFSIGNALED(k->last_status) && WTERMSIG(k->last_status) == SIGKILL);
	CHECK(now_ms() - t0 >= 200 + SV_KILL_GRACE_MS && now_ms() - t0 < 9000);
	sv_stop(&s);
	sv_close(&s);
	teardown();
}

/* kubelet as node_ops.c has it: argv from dir's kubelet files, with a stamp of them */
static struct kubelet_stamp stamp_seen;
static char kubelet_arena[4096];
static const char *kubelet_words[32];
static char kubelet_path[128];

static int kubelet_compose(struct sv_child *c)
{
	kubelet_stamp_take(dir, &stamp_seen);
	if (kubelet_argv(dir, c->arg, kubelet_arena, sizeof kubelet_arena, kubelet_words, 32) < 0)
		return -EINVAL;
	c->argv = kubelet_words;
	return 0;
}

static int kubelet_files_changed(struct sv_child *c)
{
	(void)c;
	return kubelet_stamp_changed(dir, &stamp_seen);
}

static void put(const char *name, const char *text)
{
	char cmd[256];
	FILE *f;

	snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", at(name));
	CHECK(system(cmd) == 0);
	f = fopen(at(name), "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* kubeadm writes config.yaml, then kubeadm-flags.env, then restarts kubelet (systemctl). A
 * kubelet started between the two writes must be restarted with kubeadm's flags: at once,
 * not after a back-off, and without counting as a failure. */
TEST(supervise_restarts_kubelet_when_kubeadm_rewrites_its_flags)
{
	struct sv_child slots[2] = {0};
	struct supervisor s = {.children = slots, .cap = 2, .backoff_min_ms = 3000};
	struct sv_child kubelet = {.name = "kubelet-double",
				   .policy = SV_RESTART,
				   .prepare = kubelet_compose,
				   .stale = kubelet_files_changed};
	struct sv_child *kl;
	char args[4096], log[8192];
	int fd, started, before, running;
	int64_t t, took;

	setup();
	put("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\n");
	/* script() answers in one of harness_path's 8 buffers, which at() reuses */
	snprintf(kubelet_path, sizeof kubelet_path, "%s",
		 script("kubelet-double", "echo \"$*\" >>\"$d/kubelet-args\"\nexec sleep 30\n"));
	kubelet.arg = kubelet_path;
	fd = capture_log();
	CHECK(sv_open(&s) == 0);
	kl = sv_add(&s, &kubelet);
	started = kl && kl->pid > 0;
	poll_loop(&s, 700);
	before = count_lines(at("kubelet-args")); /* a stamp that stays is no restart */
	/* kubeadm's second write */
	put("var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=\"--node-ip=10.0.0.7\"\n");
	t = now_ms();
	while (count_lines(at("kubelet-args")) < 2 && now_ms() - t < 2900)
		poll_loop(&s, 50);
	took = now_ms() - t;
	poll_loop(&s, 300);
	running = kl && kl->pid > 0 && kl->restarts == 0;
	sv_stop(&s); /* before any CHECK returns */
	sv_close(&s);
	release_log(fd);
	CHECK(started && before == 1);
	/* a check every SV_STALE_CHECK_MS, then the start at once (a back-off: >= 3 s; the
	 * margin is for a loaded machine) */
	CHECK(took < 2900);
	CHECK(running);
	CHECK(slurp(at("kubelet-args"), args, sizeof args) > 0);
	CHECK(count_lines(at("kubelet-args")) == 2);
	CHECK(strstr(args, "--config=/var/lib/kubelet/config.yaml\n") != NULL);
	CHECK(strstr(args, "--config=/var/lib/kubelet/config.yaml --node-ip=10.0.0.7\n") != NULL);
	CHECK(slurp(at("log"), log, sizeof log) > 0);
	CHECK(strstr(log, "kubelet-double: its files changed: restarting it") != NULL);
	CHECK(strstr(log, "restart 1") == NULL);
	teardown();
}

static int stale_once;

/* stale exactly once: kubeadm wrote its files once */
static int stale_first_time(struct sv_child *c)
{
	(void)c;
	return stale_once++ == 0;
}

/* A child that ignores the SIGTERM of a stale restart is killed SV_KILL_GRACE_MS later and
 * started again at once; still no failure for the back-off. */
TEST(supervise_kills_a_stale_child_that_ignores_sigterm_and_starts_it_again)
{
	struct sv_child slots[2] = {0};
	struct supervisor s = {
	    .children = slots, .cap = 2, .backoff_min_ms = 3000, .stop_timeout_ms = 200};
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "stubborn-kubelet-double",
			     .argv = argv,
			     .policy = SV_RESTART,
			     .stale = stale_first_time};
	struct sv_child *k;
	int64_t t0, took;
	pid_t first;
	int ok, ended, restarts;

	setup();
	argv[0] =
	    script("stubborn-kubelet-double",
		   "date +%s%N >>\"$d/starts\"\ntrap '' TERM\nwhile :; do sleep 0.05; done\n");
	stale_once = 0;
	CHECK(sv_open(&s) == 0);
	t0 = now_ms();
	k = sv_add(&s, &c);
	CHECK(k && k->pid > 0);
	first = k ? k->pid : 0;
	while (k && (k->pid == first || k->pid <= 0) && now_ms() - t0 < 12000)
		poll_loop(&s, 50);
	ok = k && k->pid > 0 && k->pid != first;
	ended = k ? k->last_status : 0;
	took = now_ms() - t0;
	restarts = k ? k->restarts : -1;
	sv_stop(&s); /* before any CHECK returns: the double ignores SIGTERM */
	sv_close(&s);
	CHECK(ok);
	CHECK(WIFSIGNALED(ended) && WTERMSIG(ended) == SIGKILL);
	/* the first check after SV_STALE_CHECK_MS, SIGKILL the grace later, then at once */
	CHECK(took >= SV_STALE_CHECK_MS + SV_KILL_GRACE_MS &&
	      took < SV_STALE_CHECK_MS + SV_KILL_GRACE_MS + 2900); /* a back-off: + 3 s */
	CHECK(restarts == 0 && stale_once == 1);
	CHECK(count_lines(at("starts")) == 2);
	teardown();
}

/* ---- a program's output on the console (issue 23) ---- */

/* A program's stdout and stderr reach the console as lines "name: text": escape sequences
 * and other control characters replaced, a 5000-byte line cut to 1024 bytes, stderr too. */
TEST(supervise_filters_a_programs_output_to_the_console)
{
	const char *argv[] = {NULL, NULL};
	struct sv_child c = {.name = "chatty", .argv = argv, .policy = SV_ONCE};
	struct supervisor s = {.children = &c, .n = 1, .backoff_min_ms = 50, .backoff_max_ms = 200};
	static char out[65536];
	sigset_t old;
	int fd, saved, n = -1, longest = 0, cur = 0, ctl = 0;

	setup();
	argv[0] = script("chatty", "printf '\\033[2J\\033]0;owned\\007hello\\n'\n"
				   "head -c 5000 /dev/zero | tr '\\0' x\necho\n"
				   "echo 'to stderr' >&2\nprintf 'no newline'\n");
	fd = open(at("console"), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	saved = dup(STDERR_FILENO);
	CHECK(fd >= 0 && saved >= 0);
	dup2(fd, STDERR_FILENO); /* the console the child inherits */
	block_signals(&old);
	supervise_run(&s, now_ms() + 300);
	/* the filter ends when the program's output closes; it is an orphan we reap */
	for (int i = 0; i < 100 && (n < 0 || !strstr(out, "chatty: no newline")); i++) {
		usleep(20000);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = slurp(at("console"), out, sizeof out);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	for (int i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)out[i];

		if (ch == '\n') {
			longest = cur > longest ? cur : longest;
			cur = 0;
			continue;
		}
		cur++;
		ctl += ch < 0x20 || ch == 0x7f;
	}
	CHECK(n > 0);
	CHECK(ctl == 0);
	CHECK(strstr(out, "chatty: ?[2J?]0;owned?hello\n"));
	CHECK(strstr(out, "chatty: to stderr\n"));
	CHECK(strstr(out, "chatty: no newline\n"));
	CHECK(strstr(out, "xxx...\n"));
	CHECK(longest <= 1024 + 40);
	teardown();
}
