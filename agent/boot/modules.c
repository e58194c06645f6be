/* Kernel modules from the initrd: /etc/modules.list names them in an order the initrd writer
 * resolved with modprobe (dependencies first), /etc/modules.dep what each one waits for. With
 * more than one CPU online, modules whose dependencies are loaded are loaded side by side (as
 * many as CPUs, at most 4, or constel.module-jobs=N on the kernel command line), each by a
 * child process of ours (finit_module blocks its caller for the whole load and probe; the agent
 * has one thread); with one CPU, constel.module-jobs=1, or without modules.dep, one after the
 * other in list order, here.
 * With /etc/modules.phase (initrd/mkinitrd.py: line i "i: PHASE", the first boot phase that
 * needs module i) only the "network" modules load here, before the network; the rest load in
 * one background child in list order (which mkinitrd.py sorted by phase), while the network,
 * DHCP and the peers are waited for, and the child reports each module on a pipe;
 * modules_wait(PHASE) waits, bounded, for every module of that phase and the ones before it.
 * With constel.csp known (modules_opts.csp), the NIC and disk modules of the other clouds'
 * hardware (cloud_only below: the one table of them) and what only they need are not loaded.
 * Plain .ko files only: Debian's 6.1 kernel has no in-kernel decompression
 * (docs/qemu.md §2), so initrd/mkinitrd.py unpacks compressed ones at build time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot.h"

#define LIST_MAX     (64 * 1024) /* bytes of modules.list or modules.dep */
#define POLL_TICK_MS 10		 /* how often a child without a pidfd is checked */
#define MODULES_NICE 10		 /* the background loader's */

struct mod {
	const char *path;
	uint64_t deps[MODULES_MAX / 64]; /* bit j: waits for module j */
	pid_t pid;
	int pidfd, state; /* 0 waiting, 1 loading, 2 done, 3 not ours (another phase) */
	int absent;	  /* ENODEV: its hardware is not here (or a dependency's is not) */
	int other;	  /* another cloud's hardware (or only needed by such): not loaded */
	int phase;	  /* enum modules_phase */
	int64_t t0;
};

static const char *const phase_names[MODULES_PHASES] = {"network", "root", "verity", "disk",
							"handover"};

const char *modules_phase_name(enum modules_phase p)
{
	return p >= 0 && p < MODULES_PHASES ? phase_names[p] : "?";
}

/* The one set of modules of this boot: the list's text (paths point into it), and for the
 * background child's modules, what the child reported (0 not yet, 1 loaded, 2 failed). */
static struct {
	struct mod m[MODULES_MAX];
	char *text;
	int n, failed, reported[MODULES_MAX];
	int others; /* of the list, another cloud's (not loaded) */
	pid_t pid;
	int64_t deadline;
	char buf[64];
	size_t len;
} bg;		       /* zero: in .bss, no bytes of the file */
static int bg_fd = -1; /* the pipe from the background child */

/* The modules of one cloud's hardware (docs/cluster-clouds.md): each loads only when
 * constel.csp names one of its clouds, and with it what only it needs (hv_vmbus, nvme-core,
 * scsi_mod, mlx4_core...). Every other module of the list loads everywhere: virtio's serve
 * QEMU, OpenStack, GCP's machines without gVNIC and the tests' cloud shapes, and cost only
 * their load where no virtio device is. Names as in modules.list, '-' and '_' alike. */
static const struct {
	const char *name, *csps;
} cloud_only[] = {
    {"gve", "gcp"},	     /* GCP's gVNIC */
    {"hv_netvsc", "azure"},  /* Azure's synthetic NIC */
    {"ena", "aws"},	     /* AWS's Elastic Network Adapter */
    {"nvme", "gcp aws"},     /* GCP's PDs on confidential VMs, AWS's EBS volumes */
    {"virtio_scsi", "gcp"},  /* GCP's PDs on SCSI */
    {"sd_mod", "gcp azure"}, /* the SCSI disks of GCP and Azure */
    {"hv_storvsc", "azure"}, /* Azure's data disks */
    {"pci_hyperv", "azure"}, /* accelerated networking: the VF's PCI bus */
    {"mlx4_en", "azure"},    /* its ConnectX-3 VFs */
    {"mlx5_core", "azure"},  /* its ConnectX-4 and later VFs */
};

/* path's module name ("/lib/.../nvme-core.ko" -> "nvme_core") into out. */
static void mod_name(const char *path, char *out, size_t cap)
{
	const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t k = 0;

	for (; *b && strcmp(b, ".ko") && k + 1 < cap; b++)
		out[k++] = *b == '-' ? '_' : *b;
	out[k] = 0;
}

/* 1 when csp's word list names csp. */
static int csp_in(const char *list, const char *csp)
{
	size_t l = strlen(csp);

	for (const char *p = list; *p; p += strcspn(p, " "), p += *p == ' ')
		if (strcspn(p, " ") == l && !strncmp(p, csp, l))
			return 1;
	return 0;
}

int modules_cloud_only(const char *path, const char *csp)
{
	char name[64];

	mod_name(path, name, sizeof name);
	for (size_t i = 0; i < sizeof cloud_only / sizeof cloud_only[0]; i++)
		if (!strcmp(name, cloud_only[i].name))
			return csp_in(cloud_only[i].csps, csp) ? 0 : 1;
	return 0;
}

/* Marks m[].other for csp: another cloud's module, and a dependency every module of which
 * is (last to first: dependents come after what they wait for). Without dependencies known
 * (have_deps 0) only the table's own. The count marked. */
static int mark_other(struct mod *m, int n, const char *csp, int have_deps)
{
	int k = 0;

	if (!csp)
		return 0;
	for (int i = n - 1; i >= 0; i--) {
		int users = 0, others = 0;

		for (int j = i + 1; have_deps && j < n; j++)
			if (m[j].deps[i / 64] >> (i % 64) & 1) {
				users++;
				others += m[j].other;
			}
		m[i].other = modules_cloud_only(m[i].path, csp) || (users && users == others);
		k += m[i].other;
	}
	return k;
}

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

/* A module's end: counted, logged when it failed, and (report_fd >= 0: the background child)
 * reported to PID 1 as "INDEX 0|1\n" (1: failed), one write of less than PIPE_BUF. */
static void finish(struct mod *m, int i, int r, int report_fd, int *failed)
{
	int bad = judged(m, r) < 0;

	m->state = 2;
	m->absent = r == -ENODEV;
	*failed += bad;
	log_debug("modules: %s in %lld ms", m->path, (long long)(now_ms() - m->t0));
	if (report_fd >= 0) {
		char line[32];
		int k = snprintf(line, sizeof line, "%d %d\n", i, bad);

		(void)!write(report_fd, line, (size_t)k);
	}
}

static void ended(struct mod *m, int i, int status, int report_fd, int *failed)
{
	int r = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;

	if (m->pidfd >= 0)
		close(m->pidfd);
	m->pidfd = -1;
	finish(m, i, r, report_fd, failed);
}

/* A module whose dependency found no hardware (another cloud's bus: hv_vmbus off Azure) is
 * not loaded: it would only fail on the missing symbols. It counts as ENODEV itself. */
static int dep_absent(const struct mod *m, int i)
{
	for (int j = 0; j < i; j++)
		if ((m[i].deps[j / 64] >> (j % 64) & 1) && m[j].absent)
			return 1;
	return 0;
}

/* Starts module i in a child; loads it here when there is no child to be had. */
static void start(struct mod *m, int i, const struct modules_opts *o, int report_fd, int *failed)
{
	m->t0 = now_ms();
	if (dep_absent(bg.m, i)) {
		finish(m, i, -ENODEV, report_fd, failed);
		return;
	}
	m->pid = fork();
	if (m->pid == 0) {
		int r = o->load(m->path);

		_exit(r < 0 && -r < 256 ? -r : (r < 0 ? EIO : 0));
	}
	if (m->pid < 0) {
		finish(m, i, o->load(m->path), report_fd, failed);
		return;
	}
	m->state = 1;
	m->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
}

/* Reads list (and dep) into bg.m and bg.text: the count, or -errno (one line). jobs is set to
 * 1 when the dependencies are unknown (then each waits for the one before it). */
static int read_list(const char *list, const char *dep, const char *csp, int *jobs)
{
	char *deptext = NULL, *save = NULL, *line;
	int n = 0, bad, r;

	free(bg.text);
	bg.text = NULL;
	if ((r = slurp(list, &bg.text)) < 0)
		return log_err(r, "modules: %s", list);
	memset(bg.m, 0, sizeof bg.m);
	for (line = strtok_r(bg.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (n == MODULES_MAX)
			return log_err(-E2BIG, "modules: %s names more than %d modules", list,
				       MODULES_MAX);
		bg.m[n].pidfd = -1;
		bg.m[n++].path = line;
	}
	/* Without what each waits for, each waits for the one before it: the list order. */
	r = dep ? slurp(dep, &deptext) : -ENOENT;
	if (r == 0 && parse_deps(deptext, bg.m, n, &bad) < 0) {
		log_warn("modules: %s line %d does not match %s: loading in list order", dep, bad,
			 list);
		r = -EINVAL;
	} else if (r < 0 && r != -ENOENT) {
		log_err(r, "modules: %s: loading in list order", dep);
	}
	free(deptext);
	if (r < 0)
		*jobs = 1;
	bg.others = mark_other(bg.m, n, csp, r == 0);
	return n;
}

/* Loads the modules of bg.m whose state is 0 (the others count as done), jobs at a time, each
 * after what it waits for, until deadline; reports each to report_fd (-1: none). Returns the
 * number of failures. */
static int load_set(int n, int jobs, const struct modules_opts *o, int report_fd)
{
	struct mod *m = bg.m;
	int failed = 0, done = 0, running = 0;
	int64_t deadline = now_ms() + o->deadline_ms;

	for (int i = 0; i < n; i++) {
		if (m[i].state == 0 && m[i].other) { /* done, and not absent: its users skip it */
			m[i].state = 2;
			if (report_fd >= 0) {
				char line[32];
				int k = snprintf(line, sizeof line, "%d 0\n", i);

				(void)!write(report_fd, line, (size_t)k);
			}
		}
		done += m[i].state != 0;
	}
	if (jobs <= 1) {
		for (int i = 0; i < n; i++)
			if (m[i].state == 0) {
				m[i].t0 = now_ms();
				finish(&m[i], i, dep_absent(m, i) ? -ENODEV : o->load(m[i].path),
				       report_fd, &failed);
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
				start(&m[i], i, o, report_fd, &failed);
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
				ended(&m[i], i, status, report_fd, &failed);
				running--;
				done++;
			}
		}
	}
	return failed;
}

/* The log line's tail for the modules of other clouds not loaded. */
static const char *others_note(const char *csp, int k)
{
	static char note[96];

	if (!k)
		return "";
	snprintf(note, sizeof note, "; %d of other clouds' hardware not loaded (csp %.16s)", k,
		 csp);
	return note;
}

int modules_load_with(const char *list, const char *dep, const struct modules_opts *o)
{
	int jobs = o->jobs, n, failed;
	int64_t t0 = now_ms();

	if ((n = read_list(list, dep, o->csp, &jobs)) < 0)
		return n;
	failed = load_set(n, jobs, o, -1);
	log_info("modules: %d loaded, %d failed, in %lld ms (%d at a time)%s",
		 n - bg.others - failed, failed, (long long)(now_ms() - t0), jobs,
		 others_note(o->csp, bg.others));
	return failed;
}

/* modules.phase: line i is "i: NAME", NAME one of phase_names, no module before one it waits
 * for. 0, or -EINVAL with the line. */
static int parse_phases(char *text, int n, int *bad_line)
{
	char *save = NULL, *line;
	int i = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		long v = strtol(line, &end, 10);
		int p;

		*bad_line = i + 1;
		if (i >= n || end == line || *end != ':' || v != i + 1)
			return -EINVAL;
		end += strspn(end + 1, " ") + 1;
		for (p = 0; p < MODULES_PHASES && strcmp(end, phase_names[p]); p++)
			;
		if (p == MODULES_PHASES)
			return -EINVAL;
		bg.m[i].phase = p;
		for (int j = 0; j < i; j++)
			if ((bg.m[i].deps[j / 64] >> (j % 64) & 1) && bg.m[j].phase > p)
				return -EINVAL;
		i++;
	}
	*bad_line = i + 1;
	return i == n ? 0 : -EINVAL;
}

/* The background child: loads every module not of the network phase, reports each on fd. */
static __attribute__((noreturn)) void background(int n, int jobs, const struct modules_opts *o,
						 int fd)
{
	sigset_t none;
	int failed, count = 0;
	int64_t t0 = now_ms();

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* PID 1's shutdown SIGTERM ends it */
	/* PID 1's own work (DHCP, the handshakes) is the boot's critical path: the modules take
	 * the CPU it leaves while it waits for its peers (with one CPU it matters) */
	if (setpriority(PRIO_PROCESS, 0, MODULES_NICE) < 0)
		log_debug("modules: no nice %d for the background loader", MODULES_NICE);
	for (int i = 0; i < n; i++) {
		bg.m[i].state = bg.m[i].phase == MODULES_NETWORK ? 2 : 0;
		count += bg.m[i].state == 0 && !bg.m[i].other;
	}
	failed = load_set(n, jobs, o, fd);
	log_info("modules: %d more loaded in the background, %d failed, in %lld ms (%d at a "
		 "time)",
		 count - failed, failed, (long long)(now_ms() - t0), jobs);
	_exit(0);
}

int modules_start_with(const char *list, const char *dep, const char *phase,
		       const struct modules_opts *o)
{
	char *text = NULL;
	int jobs = o->jobs, n, failed, later = 0, now_other = 0, bad, p[2], r;
	int64_t t0 = now_ms();

	if (bg_fd >= 0)
		close(bg_fd);
	bg_fd = -1;
	bg.n = 0;
	if ((n = read_list(list, dep, o->csp, &jobs)) < 0)
		return n;
	r = phase ? slurp(phase, &text) : -ENOENT;
	if (r == 0 && parse_phases(text, n, &bad) < 0) {
		log_warn("modules: %s line %d does not match %s: loading all before the network",
			 phase, bad, list);
		r = -EINVAL;
	} else if (r < 0 && r != -ENOENT) {
		log_err(r, "modules: %s: loading all before the network", phase);
	}
	free(text);
	for (int i = 0; i < n; i++) {
		if (r < 0)
			bg.m[i].phase = MODULES_NETWORK;
		bg.m[i].state = bg.m[i].phase == MODULES_NETWORK ? 0 : 3;
		later += bg.m[i].state == 3;
		now_other += bg.m[i].state == 0 && bg.m[i].other;
	}
	failed = load_set(n, jobs, o, -1);
	log_info("modules: %d loaded, %d failed, in %lld ms (%d at a time)%s%s",
		 n - later - now_other - failed, failed, (long long)(now_ms() - t0), jobs,
		 later ? "; the others in the background" : "", others_note(o->csp, bg.others));
	if (!later)
		return failed;
	memset(bg.reported, 0, sizeof bg.reported);
	bg.n = n;
	bg.failed = 0;
	bg.len = 0;
	bg.deadline = now_ms() + o->deadline_ms;
	if (pipe2(p, O_CLOEXEC) < 0 || (bg.pid = fork()) < 0) {
		/* no child to be had: the rest here, now */
		log_err(-errno, "modules: no background loader: loading the rest now");
		for (int i = 0; i < n; i++)
			bg.m[i].state = bg.m[i].state == 3 ? 0 : 2;
		bg.n = 0;
		return failed + load_set(n, jobs, o, -1);
	}
	if (bg.pid == 0) {
		close(p[0]);
		background(n, jobs, o, p[1]);
	}
	close(p[1]);
	bg_fd = p[0];
	fcntl(bg_fd, F_SETFL, O_NONBLOCK);
	return failed;
}

/* Reads what the child reported; 1 at its end (EOF), else 0. */
static int drain(void)
{
	for (;;) {
		ssize_t k;
		char *nl;

		if (bg.len >= sizeof bg.buf - 1)
			bg.len = 0; /* no line is this long: not ours, dropped */
		k = read(bg_fd, bg.buf + bg.len, sizeof bg.buf - 1 - bg.len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return 0;
		if (k == 0)
			return 1;
		bg.len += (size_t)k;
		bg.buf[bg.len] = 0;
		while ((nl = strchr(bg.buf, '\n'))) {
			char *end;
			long i = strtol(bg.buf, &end, 10);

			if (end > bg.buf && *end == ' ' && i >= 0 && i < bg.n && !bg.reported[i]) {
				bg.reported[i] = end[1] == '1' ? 2 : 1;
				bg.failed += end[1] == '1';
			}
			bg.len -= (size_t)(nl + 1 - bg.buf);
			memmove(bg.buf, nl + 1, bg.len + 1);
		}
	}
}

/* The modules of phases up to p not yet reported. */
static int missing(enum modules_phase p)
{
	int k = 0;

	for (int i = 0; i < bg.n; i++)
		k += bg.m[i].phase != MODULES_NETWORK && bg.m[i].phase <= (int)p && !bg.reported[i];
	return k;
}

int modules_wait(enum modules_phase p, int timeout_ms)
{
	int64_t t0 = now_ms(), end = t0 + timeout_ms;
	int k, failed = 0;

	if (end > bg.deadline)
		end = bg.deadline;
	while (bg_fd >= 0 && (k = missing(p)) > 0) {
		struct pollfd pfd = {.fd = bg_fd, .events = POLLIN};
		int64_t left = end - now_ms();

		if (left <= 0) {
			log_error(
			    "modules: %d modules the %s phase needs not loaded after %lld ms: "
			    "going on without them",
			    k, phase_names[p], (long long)(now_ms() - t0));
			return -ETIMEDOUT;
		}
		poll(&pfd, 1, (int)left);
		if (drain() && (k = missing(p)) > 0) {
			log_error("modules: the background loader ended with %d modules of the %s "
				  "phase not loaded",
				  k, phase_names[p]);
			close(bg_fd);
			bg_fd = -1;
			return -ECHILD;
		}
	}
	for (int i = 0; i < bg.n; i++)
		failed += bg.m[i].phase != MODULES_NETWORK && bg.m[i].phase <= (int)p &&
			  bg.reported[i] == 2;
	if (now_ms() - t0 > 0)
		log_info("modules: waited %lld ms for the %s phase's modules",
			 (long long)(now_ms() - t0), phase_names[p]);
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

static int load_list(const char *list, int background, const char *csp)
{
	struct modules_opts o = {
	    .jobs = 1, .deadline_ms = MODULES_DEADLINE_MS, .load = modules_finit, .csp = csp};
	char dep[256], phase[256];
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
	/* /etc/modules.list -> /etc/modules.dep, /etc/modules.phase */
	if (len > 5 && len < sizeof dep - 2 && !strcmp(list + len - 5, ".list")) {
		memcpy(dep, list, len - 5);
		strcpy(dep + len - 5, ".dep");
		memcpy(phase, list, len - 5);
		strcpy(phase + len - 5, ".phase");
		return background ? modules_start_with(list, dep, phase, &o)
				  : modules_load_with(list, dep, &o);
	}
	return background ? modules_start_with(list, NULL, NULL, &o)
			  : modules_load_with(list, NULL, &o);
}

int modules_load_list(const char *list)
{
	return load_list(list, 0, NULL);
}

int modules_start(const char *list, const char *csp)
{
	return load_list(list, 1, csp);
}
