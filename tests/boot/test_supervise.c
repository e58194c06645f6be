/* The supervisor as an ordinary process (a child subreaper) against /bin/sh test doubles in a
 * temporary directory: a once-child runs once, a failing restart-child is restarted with a
 * growing, capped back-off (start times recorded by the double, the log lines captured), an
 * orphaned grandchild is reaped by us, SIGTERM from a helper process stops the children (one
 * that ignores SIGTERM is SIGKILLed after stop_timeout_ms) and is returned, and the deadline
 * returns 0. Every run has a deadline, so no test can hang. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
	/* the signal at 300 ms, then 300 ms for the stubborn double before SIGKILL */
	CHECK(took >= 550 && took < 5000);
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
	CHECK(took >= 300 && took < 3000);
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
