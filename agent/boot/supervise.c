/* PID 1's supervisor for the whole boot: every child (the join rounds, kubeadm once in its
 * own process group with a deadline, containerd and kubelet restarted with back-off), the
 * reaping every PID 1 owes its orphans, the shutdown signals read from a signalfd that the
 * caller polls in its one loop (no handler runs asynchronously), and the shutdown itself
 * (unmounts, state disk, links, reboot). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "base/base.h"
#include "boot.h"
#include "disk/disk.h"
#include "net/net.h"

#define KILL_WAIT_MS 5000 /* after SIGKILL: only a process stuck in the kernel takes longer */
#define POLL_MAX_MS  1000 /* s->stopping, set from outside, is seen this quickly */

static void sv_setup(struct supervisor *s)
{
	static int subreaper;

	if (s->backoff_min_ms <= 0)
		s->backoff_min_ms = 1000;
	if (s->backoff_max_ms <= 0)
		s->backoff_max_ms = 60000;
	if (s->backoff_max_ms < s->backoff_min_ms)
		s->backoff_max_ms = s->backoff_min_ms;
	if (s->stop_timeout_ms <= 0)
		s->stop_timeout_ms = 10000;
	/* SIG_IGN would make the kernel reap our children before we see their status */
	signal(SIGCHLD, SIG_DFL);
	if (getpid() != 1 && !subreaper) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
			log_err(-errno, "supervisor: becoming a subreaper");
		else
			subreaper = 1;
	}
}

static void shutdown_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGPWR);
}

int sv_open(struct supervisor *s)
{
	sigset_t set;

	if (s->opened)
		return 0;
	shutdown_set(&set);
	sigprocmask(SIG_BLOCK, &set, &s->old_mask);
	s->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sfd < 0) {
		int r = log_err(-errno, "supervisor: signalfd");

		sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
		return r;
	}
	s->opened = 1;
	sv_setup(s);
	return 0;
}

int sv_fd(const struct supervisor *s)
{
	return s->opened ? s->sfd : -1;
}

void sv_close(struct supervisor *s)
{
	if (!s->opened)
		return;
	close(s->sfd);
	s->sfd = -1;
	s->opened = 0;
	sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* In the forked child: a clean start (no ignored or blocked signals, in this order so a
 * pending one meets no handler of ours), its own session and process group, no stdin. */
static void child_reset(const struct supervisor *s)
{
	sigset_t none;
	int fd;

	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (s->opened)
		close(s->sfd);
	setsid();
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd > 0) {
		dup2(fd, 0);
		close(fd);
	}
}

/* ---- a program's output on the console, as the agent's own lines are ----
 * containerd and kubelet write to what PID 1 hands them, the serial console the host reads
 * and, on a terminal, interprets: escape sequences in a container's name or a log message
 * could rewrite what an operator sees, and one line could be megabytes. Their stdout and
 * stderr therefore go into a pipe read by a small filter process (forked in the child before
 * the exec, so PID 1's loop never reads it; it keeps only the pipe and the console), which
 * writes each line as "name: line" with control characters replaced by '?' and at most
 * LOG_LINE_MAX bytes (a longer one cut with "..."), as log.c does with the agent's. It ends at
 * EOF, when the program and everything that inherited its output have exited, and is reaped
 * as any orphan is. */

#define FILTER_LINE_MAX 1024 /* log.c's LOG_LINE_MAX */

void sv_filter_feed(struct sv_filter *f, const char *name, const char *p, size_t n, int out,
		    int eof)
{
	for (size_t i = 0; i <= n; i++) {
		int end = i == n ? eof && f->len : p[i] == '\n';
		char line[FILTER_LINE_MAX + 80];
		int m;

		if (i == n && !end)
			break;
		if (!end) {
			unsigned char c = (unsigned char)p[i];

			if (f->len < sizeof f->line)
				f->line[f->len++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
			else
				f->cut = 1;
			continue;
		}
		if (f->cut)
			memcpy(f->line + f->len - 3, "...", 3);
		m = snprintf(line, sizeof line, "%.32s: %.*s\n", name, (int)f->len, f->line);
		if (m > 0 &&
		    write(out, line, (size_t)m < sizeof line ? (size_t)m : sizeof line - 1) < 0) {
			/* the console is gone: nothing to tell */
		}
		f->len = 0;
		f->cut = 0;
	}
}

/* In the child before the exec: stdout and stderr into a pipe whose other end a forked
 * filter reads. A pipe or fork that fails ends the start (exit 126, retried with back-off)
 * rather than giving the program the console unfiltered. */
static void filter_output(const struct sv_child *c)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0) {
		log_err(-errno, "%s: output pipe", c->name);
		_exit(126);
	}
	pid = fork();
	if (pid < 0) {
		log_err(-errno, "%s: output filter", c->name);
		_exit(126);
	}
	if (pid == 0) {
		struct sv_filter f = {0};
		char buf[4096];
		ssize_t n;

		/* only the pipe (as 3) and the console (2) stay open: no socket or disk of PID 1 */
		if (dup2(p[0], 3) < 0)
			_exit(1);
		if (syscall(SYS_close_range, 4u, ~0u, 0u) < 0)
			for (int fd = 4; fd < 1024; fd++)
				close(fd);
		while ((n = read(3, buf, sizeof buf)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			sv_filter_feed(&f, c->name, buf, (size_t)n, STDERR_FILENO, 0);
		}
		sv_filter_feed(&f, c->name, buf, 0, STDERR_FILENO, 1);
		_exit(0);
	}
	close(p[0]);
	if (dup2(p[1], STDOUT_FILENO) < 0 || dup2(p[1], STDERR_FILENO) < 0)
		_exit(126);
	close(p[1]);
}

static __attribute__((noreturn)) void child_exec(const struct supervisor *s,
						 const struct sv_child *c)
{
	child_reset(s);
	if (!c->run && access(c->argv[0], X_OK) == 0) /* else exec fails: only our line */
		filter_output(c);
	if (c->run)
		_exit(c->run(c->arg) & 0xff);
	if (c->envp)
		execve(c->argv[0], (char *const *)c->argv, (char *const *)c->envp);
	else
		execv(c->argv[0], (char *const *)c->argv);
	log_err(-errno, "%s: executing %s", c->name, c->argv[0]);
	_exit(127);
}

static int backoff_ms(const struct supervisor *s, const struct sv_child *c)
{
	int max = c->backoff_max_ms > 0 ? c->backoff_max_ms : s->backoff_max_ms;
	int d = s->backoff_min_ms < max ? s->backoff_min_ms : max;

	for (int i = 1; i < c->restarts && d < max; i++)
		d = d > max / 2 ? max : d * 2;
	return d < max ? d : max;
}

static int start_child(struct supervisor *s, struct sv_child *c, int64_t now)
{
	pid_t pid;
	int r;

	if (c->prepare && (r = c->prepare(c)) < 0) {
		int delay;

		if (c->policy == SV_ONCE) {
			c->done = 1;
			c->last_status = -1;
			return log_err(r, "%s: not started", c->name);
		}
		c->restarts++;
		delay = backoff_ms(s, c);
		c->next_start_ms = now + delay;
		log_warn("%s: not started: %s; again in %d ms", c->name, strerror(-r), delay);
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r = log_err(-errno, "%s: fork", c->name);
		c->next_start_ms = now + s->backoff_min_ms;
		return r;
	}
	if (pid == 0)
		child_exec(s, c);
	setpgid(pid, pid); /* also done by the child's setsid: whichever runs first */
	c->pid = pid;
	c->started_ms = now;
	c->check_ms = now + SV_STALE_CHECK_MS;
	c->refreshing = 0;
	c->kill_ms = 0;
	/* a run() child is the caller's own work: it says what it does */
	if (c->restarts)
		log_info("%s started (pid %d, restart %d)", c->name, (int)pid, c->restarts);
	else
		log_msg(c->run ? LOG_DEBUG : LOG_INFO, "%s started (pid %d)", c->name, (int)pid);
	return 0;
}

int sv_start_all(struct supervisor *s)
{
	int64_t now = (int64_t)monotonic_ms();
	int failed = 0;

	sv_setup(s);
	for (size_t i = 0; i < s->n; i++)
		if (s->children[i].name && s->children[i].pid <= 0 && !s->children[i].done &&
		    start_child(s, &s->children[i], now) < 0)
			failed++;
	return failed;
}

struct sv_child *sv_add(struct supervisor *s, const struct sv_child *c)
{
	struct sv_child *slot = NULL;

	for (size_t i = 0; i < s->cap && !slot; i++)
		if (!s->children[i].name)
			slot = &s->children[i];
	if (!slot) {
		log_err(-ENOSPC, "supervisor: no slot for %s", c->name);
		return NULL;
	}
	*slot = *c;
	slot->pid = 0;
	slot->restarts = 0;
	slot->done = 0;
	slot->timed_out = 0;
	slot->kill_ms = 0;
	slot->last_status = -1;
	slot->next_start_ms = 0;
	if ((size_t)(slot - s->children) >= s->n)
		s->n = (size_t)(slot - s->children) + 1;
	sv_setup(s);
	start_child(s, slot, (int64_t)monotonic_ms());
	return slot;
}

void sv_release(struct sv_child *c)
{
	if (c && c->pid <= 0)
		memset(c, 0, sizeof *c);
}

static void describe(int status, char *out, size_t cap)
{
	if (status < 0)
		snprintf(out, cap, "is gone (reaped elsewhere)");
	else if (WIFEXITED(status))
		snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(out, cap, "ended (wait status 0x%x)", (unsigned)status);
}

static void child_ended(struct supervisor *s, struct sv_child *c, int status, int64_t now)
{
	int failed = status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	int level = failed ? LOG_WARN : LOG_INFO, delay;
	char how[96];

	describe(status, how, sizeof how);
	c->pid = 0;
	c->last_status = status;
	if (c->policy == SV_ONCE || s->stopping) {
		c->done = c->policy == SV_ONCE;
		log_msg(s->stopping || c->run ? LOG_DEBUG : level, "%s %s", c->name, how);
		return;
	}
	if (c->refreshing) { /* we stopped it: started again now, the back-off untouched */
		c->refreshing = 0;
		c->kill_ms = 0;
		c->next_start_ms = now;
		log_info("%s %s: starting it again with its files as they are now", c->name, how);
		return;
	}
	/* a child that stayed up a while was healthy: its next failure starts over */
	if (now - c->started_ms >= SV_UP_RESET_MS)
		c->restarts = 0;
	c->restarts++;
	delay = backoff_ms(s, c);
	c->next_start_ms = now + delay;
	if (delay % 1000)
		log_msg(level, "%s %s, restart %d in %d ms", c->name, how, c->restarts, delay);
	else
		log_msg(level, "%s %s, restart %d in %d s", c->name, how, c->restarts,
			delay / 1000);
}

static struct sv_child *find_child(struct supervisor *s, pid_t pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->children[i].name && s->children[i].pid == pid)
			return &s->children[i];
	return NULL;
}

/* Reaps every child that has ended, ours or an orphan. Returns 1 when no child is left at
 * all (ECHILD), else 0. */
static int reap(struct supervisor *s)
{
	int64_t now = (int64_t)monotonic_ms();
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct sv_child *c = find_child(s, pid);

		if (c)
			child_ended(s, c, status, now);
		else
			log_debug("supervisor: reaped orphan %d", (int)pid);
	}
	if (pid < 0 && errno == ECHILD) {
		/* nothing left to wait for: a child we count as running was reaped by someone
		 * else, and must not stay "running" forever */
		for (size_t i = 0; i < s->n; i++)
			if (s->children[i].name && s->children[i].pid > 0)
				child_ended(s, &s->children[i], -1, now);
		return 1;
	}
	return 0;
}

/* Drains the signalfd; the last shutdown signal read, or 0 (SIGCHLD only tells us to reap). */
static int read_signals(int sfd)
{
	struct signalfd_siginfo si;
	int sig = 0;

	while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
		if (si.ssi_signo != SIGCHLD)
			sig = (int)si.ssi_signo;
	return sig;
}

static int running(const struct supervisor *s)
{
	int n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->children[i].name && s->children[i].pid > 0;
	return n;
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	case SIGPWR:
		return "SIGPWR";
	default:
		return strsignal(sig);
	}
}

int sv_handle(struct supervisor *s)
{
	int64_t now;
	int sig = s->opened ? read_signals(s->sfd) : 0;

	reap(s);
	if (sig && !s->shutdown_signal) {
		s->shutdown_signal = sig;
		log_info("supervisor: %s received: %s", sig_name(sig),
			 sig == SIGINT ? "reboot" : "poweroff");
	}
	if (s->shutdown_signal || s->stopping)
		return s->shutdown_signal;
	now = (int64_t)monotonic_ms();
	for (size_t i = 0; i < s->n; i++) {
		struct sv_child *c = &s->children[i];

		if (!c->name)
			continue;
		if (c->pid > 0 && c->deadline_ms > 0 && now >= c->deadline_ms && !c->timed_out) {
			log_error("%s: no exit within its bound of %lld s: stopping its process "
				  "group",
				  c->name, (long long)(c->deadline_ms - c->started_ms) / 1000);
			c->timed_out = 1;
			c->kill_ms = now + SV_KILL_GRACE_MS;
			kill(-c->pid, SIGTERM);
			kill(c->pid, SIGTERM);
		} else if (c->pid > 0 && c->timed_out && c->kill_ms && now >= c->kill_ms) {
			log_warn("%s: still there %d s after SIGTERM: killing its process group",
				 c->name, SV_KILL_GRACE_MS / 1000);
			c->kill_ms = 0;
			kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
		}
		if (c->pid > 0 && c->stale && !c->refreshing && !c->timed_out &&
		    now >= c->check_ms) {
			c->check_ms = now + SV_STALE_CHECK_MS;
			if (c->stale(c) > 0) {
				log_info("%s: its files changed: restarting it", c->name);
				c->refreshing = 1;
				c->kill_ms = now + SV_KILL_GRACE_MS;
				kill(-c->pid, SIGTERM);
				kill(c->pid, SIGTERM);
			}
		} else if (c->pid > 0 && c->refreshing && c->kill_ms && now >= c->kill_ms) {
			log_warn("%s: still there %d s after SIGTERM: killing its process group",
				 c->name, SV_KILL_GRACE_MS / 1000);
			c->kill_ms = 0;
			kill(-c->pid, SIGKILL);
			kill(c->pid, SIGKILL);
		}
		if (c->pid <= 0 && !c->done && c->next_start_ms <= now)
			start_child(s, c, now);
	}
	return 0;
}

int sv_next_ms(const struct supervisor *s)
{
	int64_t now = (int64_t)monotonic_ms(), wake = now + POLL_MAX_MS;

	for (size_t i = 0; i < s->n; i++) {
		const struct sv_child *c = &s->children[i];

		if (!c->name)
			continue;
		if (c->pid <= 0 && !c->done && c->next_start_ms < wake)
			wake = c->next_start_ms;
		if (c->pid > 0 && c->deadline_ms > 0 && !c->timed_out && c->deadline_ms < wake)
			wake = c->deadline_ms;
		if (c->pid > 0 && (c->timed_out || c->refreshing) && c->kill_ms &&
		    c->kill_ms < wake)
			wake = c->kill_ms;
		if (c->pid > 0 && c->stale && !c->refreshing && c->check_ms < wake)
			wake = c->check_ms;
	}
	return wake > now ? (int)(wake - now) : 0;
}

/* Waits up to ms for our children (as PID 1: every process) to end. 1 when they did. */
static int wait_children(struct supervisor *s, int ms)
{
	int64_t end = (int64_t)monotonic_ms() + ms;

	for (;;) {
		int64_t now;
		int gone = reap(s);
		struct pollfd p = {.fd = s->sfd, .events = POLLIN};

		if (getpid() == 1 ? gone : !running(s))
			return 1;
		if ((now = (int64_t)monotonic_ms()) >= end)
			return 0;
		poll(&p, s->opened ? 1 : 0,
		     (int)(end - now < POLL_MAX_MS / 10 ? end - now : POLL_MAX_MS / 10));
		if (s->opened)
			read_signals(s->sfd); /* a second shutdown signal changes nothing */
	}
}

static void signal_all(struct supervisor *s, int sig)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sv_child *c = &s->children[i];

		if (!c->name || c->pid <= 0)
			continue;
		if (sig == SIGKILL)
			log_warn("%s did not stop within %d ms: killing it", c->name,
				 s->stop_timeout_ms);
		kill(-c->pid, sig); /* its process group: what it started */
		kill(c->pid, sig);
	}
	/* PID 1 stops everything else too; a test process must never kill(-1) */
	if (getpid() == 1)
		kill(-1, sig);
}

void sv_stop(struct supervisor *s)
{
	sv_setup(s);
	s->stopping = 1;
	if (running(s))
		log_info("supervisor: stopping %d child%s", running(s),
			 running(s) > 1 ? "ren" : "");
	signal_all(s, SIGTERM);
	if (wait_children(s, s->stop_timeout_ms))
		return;
	signal_all(s, SIGKILL);
	if (!wait_children(s, KILL_WAIT_MS))
		log_error("supervisor: %d children still running after SIGKILL", running(s));
}

int supervise_run(struct supervisor *s, int64_t deadline_ms)
{
	int opened_here = !s->opened, sig = 0, r;

	if ((r = sv_open(s)) < 0)
		return r;
	sv_setup(s);
	for (;;) {
		int64_t now;
		int wait;
		struct pollfd p = {.fd = s->sfd, .events = POLLIN};

		if ((sig = sv_handle(s)) || s->stopping)
			break;
		now = (int64_t)monotonic_ms();
		if (deadline_ms > 0 && now >= deadline_ms)
			break;
		wait = sv_next_ms(s);
		if (deadline_ms > 0 && deadline_ms - now < wait)
			wait = (int)(deadline_ms - now);
		if (wait > 0)
			poll(&p, 1, wait);
	}
	if (!sig && s->stopping)
		sig = s->shutdown_signal;
	sv_stop(s);
	if (opened_here)
		sv_close(s);
	return sig;
}

void boot_end(struct supervisor *s, int sig)
{
	sv_stop(s);
	boot_shutdown(sig ? sig : SIGINT, 1);
	for (;;)
		pause();
}

int boot_links_down(void)
{
	struct nl_link links[64];
	int n = nl_links(links, 64), failed = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if ((links[i].flags & IFF_LOOPBACK) || !(links[i].flags & IFF_UP))
			continue;
		/* nl_link_set logs its own failure */
		if (nl_link_set(links[i].index, 0) < 0)
			failed++;
	}
	return failed;
}

/* Everything that stays for the reboot: the root itself and the kernel's file systems (the
 * state mapping is closed through /dev/mapper/control, the log goes to /dev/kmsg). */
static int keep_mounted(const char *mp)
{
	static const char *const keep[] = {"/proc", "/sys", "/dev"};

	if (!strcmp(mp, "/"))
		return 1;
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
		size_t n = strlen(keep[i]);

		if (!strncmp(mp, keep[i], n) && (mp[n] == '\0' || mp[n] == '/'))
			return 1;
	}
	return 0;
}

/* The mount point field of mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* One mountinfo line ("id parent major:minor root mount-point options ..."): unmounted
 * unless kept; a busy one is detached lazily. 1 when unmounted, 0 kept, -errno failed. */
static int unmount_line(char *line)
{
	char *save, *mp = strtok_r(line, " ", &save);

	for (int f = 1; mp && f < 5; f++)
		mp = strtok_r(NULL, " ", &save);
	if (!mp)
		return 0;
	unescape_octal(mp);
	if (keep_mounted(mp))
		return 0;
	if (umount2(mp, 0) == 0 || (errno == EBUSY && umount2(mp, MNT_DETACH) == 0))
		return 1;
	/* EINVAL, ENOENT: gone already, with a parent that was detached */
	if (errno == EINVAL || errno == ENOENT)
		return 0;
	return log_err(-errno, "shutdown: unmounting %s", mp);
}

/* Unmounts in reverse order of mounting, children before parents. Returns failures. */
static int unmount_all(void)
{
	static char buf[256 * 1024];
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC), failed = 0, done = 0, r;
	ssize_t len = fd < 0 ? -errno : read_full(fd, buf, sizeof buf - 1);
	size_t e;

	if (fd >= 0)
		close(fd);
	if (len < 0) {
		log_err((int)len, "shutdown: reading /proc/self/mountinfo");
		return 1;
	}
	if ((size_t)len == sizeof buf - 1)
		log_warn("shutdown: more mounts than fit in %zu bytes: the newest stay",
			 sizeof buf);
	buf[len] = '\0';
	for (char *p = buf; (p = strchr(p, '\n')); p++)
		*p = '\0';
	/* lines from the last to the first: the newest mounts first */
	for (e = (size_t)len; e > 0;) {
		size_t b = e;

		while (b > 0 && buf[b - 1] != '\0')
			b--;
		if ((r = unmount_line(buf + b)) > 0)
			done++;
		else if (r < 0)
			failed++;
		if (b == 0)
			break;
		e = b - 1;
	}
	log_info("shutdown: %d file systems unmounted, %d failed", done, failed);
	return failed;
}

int boot_shutdown(int sig, int do_reboot)
{
	int ret = 0, r;

	log_info("shutdown: %s", sig == SIGINT ? "rebooting" : "powering off");
	sync();
	if (do_reboot && unmount_all() > 0)
		ret = -EBUSY;
	if ((r = disk_deactivate("state")) < 0)
		ret = r;
	if ((r = boot_links_down()) != 0)
		ret = r < 0 ? r : -EIO;
	if (!do_reboot)
		return ret;
	sync();
	tcdrain(STDERR_FILENO); /* the last line reaches the serial console */
	reboot(sig == SIGINT ? RB_AUTOBOOT : RB_POWER_OFF);
	return log_err(-errno, "shutdown: reboot");
}
