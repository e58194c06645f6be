/* Kernel modules from the initrd: /etc/modules.list names them in an order the initrd writer
 * resolved with modprobe (dependencies first), /etc/modules.dep what each one waits for. With
 * more than one CPU online, modules whose dependencies are loaded are loaded side by side (as
 * many as CPUs, at most 4, or constel.module-jobs=N on the kernel command line), each by a
 * child process of ours (finit_module blocks its caller for the whole load and probe; the agent
 * has one thread); with one CPU, constel.module-jobs=1, or without modules.dep, one after the
 * other in list order, here.
 * Plain .ko files only: Debian's 6.1 kernel has no in-kernel decompression
 * (../shared/notes/qemu.md §2), so initrd/mkinitrd.py unpacks compressed ones at build time. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot.h"

#define LIST_MAX     (64 * 1024) /* bytes of modules.list or modules.dep */
#define POLL_TICK_MS 10		 /* how often a child without a pidfd is checked */

struct mod {
	const char *path;
	uint64_t deps[MODULES_MAX / 64]; /* bit j: waits for module j */
	pid_t pid;
	int pidfd, state; /* 0 waiting, 1 loading, 2 done */
	int64_t t0;
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int modules_finit(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Reads a whole small file into a NUL-terminated heap buffer. */
static int slurp(const char *path, char **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *buf;

	if (fd < 0)
		return -errno;
	if (!(buf = malloc(LIST_MAX + 1))) {
		close(fd);
		return -ENOMEM;
	}
	while (len < LIST_MAX) {
		ssize_t k = read(fd, buf + len, LIST_MAX - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (len == LIST_MAX) {
		free(buf);
		return -EFBIG;
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

/* modules.dep: line i is "i: j k ..." with 1 <= j < i. Returns 0, or -EINVAL with the line. */
static int parse_deps(char *text, struct mod *m, int n, int *bad_line)
{
	char *save = NULL, *line;
	int i = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *end;
		long v;

		*bad_line = i + 1;
		if (i >= n)
			return -EINVAL;
		v = strtol(p, &end, 10);
		if (end == p || *end != ':' || v != i + 1)
			return -EINVAL;
		for (p = end + 1; *p;) {
			if (*p == ' ') {
				p++;
				continue;
			}
			v = strtol(p, &end, 10);
			if (end == p || (*end && *end != ' ') || v < 1 || v > i)
				return -EINVAL;
			m[i].deps[(v - 1) / 64] |= 1ULL << ((v - 1) % 64);
			p = end;
		}
		i++;
	}
	*bad_line = i + 1;
	return i == n ? 0 : -EINVAL;
}

static int ready(const struct mod *m, int i)
{
	for (int j = 0; j < i; j++)
		if ((m[i].deps[j / 64] >> (j % 64) & 1) && m[j].state != 2)
			return 0;
	return 1;
}

/* One module's result: 0 or the one line that says why it failed. */
static int judged(const struct mod *m, int r)
{
	if (r == 0 || r == -EEXIST || r == -ENODEV)
		return 0;
	return log_err(r, "modules: loading %s", m->path);
}

static void ended(struct mod *m, int status, int *failed)
{
	int r = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;

	if (m->pidfd >= 0)
		close(m->pidfd);
	m->pidfd = -1;
	m->state = 2;
	log_debug("modules: %s in %lld ms", m->path, (long long)(now_ms() - m->t0));
	if (judged(m, r) < 0)
		(*failed)++;
}

/* Starts module i in a child; loads it here when there is no child to be had. */
static void start(struct mod *m, const struct modules_opts *o, int *failed)
{
	m->t0 = now_ms();
	m->pid = fork();
	if (m->pid == 0) {
		int r = o->load(m->path);

		_exit(r < 0 && -r < 256 ? -r : (r < 0 ? EIO : 0));
	}
	if (m->pid < 0) {
		m->state = 2;
		if (judged(m, o->load(m->path)) < 0)
			(*failed)++;
		return;
	}
	m->state = 1;
	m->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
}

int modules_load_with(const char *list, const char *dep, const struct modules_opts *o)
{
	static struct mod m[MODULES_MAX];
	char *text = NULL, *deptext = NULL, *save = NULL, *line;
	int n = 0, failed = 0, done = 0, running = 0, jobs = o->jobs, bad, r;
	int64_t t0 = now_ms(), deadline = t0 + o->deadline_ms;

	if ((r = slurp(list, &text)) < 0)
		return log_err(r, "modules: %s", list);
	memset(m, 0, sizeof m);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (n == MODULES_MAX) {
			free(text);
			return log_err(-E2BIG, "modules: %s names more than %d modules", list,
				       MODULES_MAX);
		}
		m[n].pidfd = -1;
		m[n++].path = line;
	}
	/* Without what each waits for, each waits for the one before it: the list order. */
	r = dep ? slurp(dep, &deptext) : -ENOENT;
	if (r == 0 && parse_deps(deptext, m, n, &bad) < 0) {
		log_warn("modules: %s line %d does not match %s: loading in list order", dep, bad,
			 list);
		r = -EINVAL;
	} else if (r < 0 && r != -ENOENT) {
		log_err(r, "modules: %s: loading in list order", dep);
	}
	free(deptext);
	if (r < 0)
		jobs = 1;

	if (jobs <= 1) {
		for (int i = 0; i < n; i++) {
			m[i].t0 = now_ms();
			if (judged(&m[i], o->load(m[i].path)) < 0)
				failed++;
			log_debug("modules: %s in %lld ms", m[i].path,
				  (long long)(now_ms() - m[i].t0));
		}
		done = n;
	}
	while (done < n) {
		struct pollfd pfd[MODULES_JOBS_MAX];
		int np = 0, tick = 0;
		int64_t left = deadline - now_ms();

		if (left <= 0) {
			log_error("modules: %d of %d modules not loaded after %d ms (loading, or "
				  "waiting for one that is): not waited for",
				  n - done, n, o->deadline_ms);
			for (int i = 0; i < n; i++)
				if (m[i].state == 1) {
					kill(m[i].pid, SIGKILL);
					if (m[i].pidfd >= 0)
						close(m[i].pidfd);
				}
			failed += n - done;
			break;
		}
		for (int i = 0; i < n && running < jobs; i++)
			if (m[i].state == 0 && ready(m, i)) {
				start(&m[i], o, &failed);
				if (m[i].state == 1)
					running++;
				else
					done++;
			}
		for (int i = 0; i < n; i++)
			if (m[i].state == 1) {
				if (m[i].pidfd >= 0)
					pfd[np++] = (struct pollfd){m[i].pidfd, POLLIN, 0};
				else
					tick = 1;
			}
		if (running)
			poll(pfd, (nfds_t)np,
			     tick || left < POLL_TICK_MS ? POLL_TICK_MS : (int)left);
		for (int i = 0; i < n; i++) {
			int status;

			if (m[i].state == 1 && waitpid(m[i].pid, &status, WNOHANG) == m[i].pid) {
				ended(&m[i], status, &failed);
				running--;
				done++;
			}
		}
	}
	free(text);
	log_info("modules: %d loaded, %d failed, in %lld ms (%d at a time)", n - failed, failed,
		 (long long)(now_ms() - t0), jobs);
	return failed;
}

/* constel.module-jobs=N (1..MODULES_JOBS_MAX) on the kernel command line, or 0. */
static int jobs_from_cmdline(void)
{
	char cmdline[4096], v[16], *end;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t k = fd < 0 ? -1 : read(fd, cmdline, sizeof cmdline - 1);
	long n;

	if (fd >= 0)
		close(fd);
	if (k <= 0)
		return 0;
	cmdline[k] = 0;
	if (cmdline_get(cmdline, "constel.module-jobs", v, sizeof v) != 1)
		return 0;
	n = strtol(v, &end, 10);
	if (end == v || *end || n < 1 || n > MODULES_JOBS_MAX) {
		log_warn("modules: constel.module-jobs=%s is not 1 to %d: ignored", v,
			 MODULES_JOBS_MAX);
		return 0;
	}
	return (int)n;
}

int modules_load_list(const char *list)
{
	struct modules_opts o = {
	    .jobs = 1, .deadline_ms = MODULES_DEADLINE_MS, .load = modules_finit};
	char dep[256];
	size_t len = strlen(list);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int jobs = jobs_from_cmdline();

	/* As many at a time as there are CPUs (at most MODULES_JOBS_MAX), unless asked otherwise.
	 * Under QEMU/TCG -smp 2, 2 at a time took 0.55x the time of one at a time while the
	 * host had two cores free, but 2-3x when other work took them (a vCPU descheduled in the
	 * middle of a load holds up the other): constel.module-jobs=1 for such a host. */
	o.jobs = cpus < 1 ? 1 : cpus > MODULES_JOBS_MAX ? MODULES_JOBS_MAX : (int)cpus;
	if (jobs > 0)
		o.jobs = jobs < o.jobs ? jobs : o.jobs;
	/* /etc/modules.list -> /etc/modules.dep */
	if (len > 5 && len < sizeof dep && !strcmp(list + len - 5, ".list")) {
		memcpy(dep, list, len - 5);
		strcpy(dep + len - 5, ".dep");
		return modules_load_with(list, dep, &o);
	}
	return modules_load_with(list, NULL, &o);
}
