/* The first boot's disk preparation beside the race (issue 28): the state disk is formatted
 * (LUKS2 and keyslot 0 with the temporary passphrase), then one supervised child prepares its
 * data area while the init server listens and the join rounds run: with
 * constel.disk-wipe=full it writes every sector once through dm-crypt/dm-integrity, with none
 * (the default) it zeroes only what mke2fs reads; then it runs mke2fs (disk_prepare_data). The
 * child reports its progress and its ends on a pipe. What needs the disk waits for the end,
 * bounded: the token, the state mapping, the mount and the SSH host key (node_disk_ready),
 * then the winner's key change and the files.
 *
 * The child activates a private mapping of its own from the volume key and removes it before
 * it exits with 0; the node writes the LUKS2 header (token, keyslot change) only after that
 * exit, so the header is never rewritten while the child's mapping is active. A failed or
 * killed child fails the boot with one line; the disk then has no token, and the next boot
 * formats it again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node_internal.h"

/* The child's bound: WIPE_BOUND_BASE_MS plus what it writes at WIPE_MIN_RATE bytes per second,
 * a tenth of the slowest cloud disk Constellation uses (an Azure P4 at 25 MB/s) and of what
 * the wipe does under TCG on a loaded host. What it writes: the whole data area with the
 * wipe; without, mke2fs's journal (at most 1 GiB) and a 128th of the disk for the rest. */
#define WIPE_BOUND_BASE_MS (120 * 1000)
#define WIPE_MIN_RATE	   (2ull << 20)
#define MKFS_JOURNAL_MAX   (1ull << 30)

static int64_t now_ms(void)
{
	return (int64_t)monotonic_ms();
}

static void drain(struct node *n)
{
	for (;;) {
		ssize_t k;
		char *nl;

		if (n->wipe_len >= sizeof n->wipe_buf - 1)
			n->wipe_len = 0; /* no line of ours is this long: dropped */
		k = read(n->wipe_fd, n->wipe_buf + n->wipe_len,
			 sizeof n->wipe_buf - 1 - n->wipe_len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		n->wipe_len += (size_t)k;
		n->wipe_buf[n->wipe_len] = '\0';
		while ((nl = strchr(n->wipe_buf, '\n'))) {
			unsigned long long a, b;

			*nl = '\0';
			if (sscanf(n->wipe_buf, "P %llu %llu", &a, &b) == 2 && b)
				n->wipe_pct = (int)(a * 100 / b);
			else if (sscanf(n->wipe_buf, "E %llu %llu", &a, &b) == 2) {
				n->wipe_ended = 1;
				n->disk.wipe_bytes = a;
				n->disk.wipe_ns = b;
				timeline_event("wipe-end");
			} else if (sscanf(n->wipe_buf, "M %llu %llu", &a, &b) == 2) {
				n->mkfs_ended = 1;
				timeline_event("mkfs-end");
			}
			n->wipe_len -= (size_t)(nl + 1 - n->wipe_buf);
			memmove(n->wipe_buf, nl + 1, n->wipe_len + 1);
		}
	}
}

static int wipe_child(void *arg)
{
	struct node *n = arg;

	/* on a node with few vCPUs the race's own work goes first; the key waits for us anyway */
	(void)!nice(10);
	return disk_prepare_data(&n->disk, n->c->mke2fs, n->wipe_fd) < 0 ? 1 : 0;
}

int wipe_start(struct node *n)
{
	uint64_t bytes = 0;
	int fds[2], fd = open(n->disk.path, O_RDONLY | O_CLOEXEC);
	int wipe = !n->disk.no_wipe;
	struct sv_child c = {.name = wipe ? "state-disk wipe" : "state-disk mke2fs",
			     .policy = SV_ONCE,
			     .run = wipe_child,
			     .arg = n};

	if (fd >= 0) {
		off_t end = lseek(fd, 0, SEEK_END);

		bytes = end > 0 ? (uint64_t)end : 0;
		close(fd);
	}
	if (!wipe)
		bytes = MKFS_JOURNAL_MAX + bytes / 128;
	n->wipe_bound_ms = WIPE_BOUND_BASE_MS + (int64_t)(bytes / WIPE_MIN_RATE * 1000);
	c.deadline_ms = now_ms() + n->wipe_bound_ms;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return log_err(-errno, "disk: %s: wipe: pipe", n->disk.path);
	n->wipe_fd = fds[1]; /* the child's end, while it forks */
	n->wipe = sv_add(n->sv, &c);
	close(fds[1]);
	n->wipe_fd = -1;
	if (!n->wipe || n->wipe->pid <= 0) {
		close(fds[0]);
		sv_release(n->wipe);
		n->wipe = NULL;
		return log_err(-ECHILD, "disk: %s: the %s could not be started", n->disk.path,
			       wipe ? "wipe" : "mke2fs");
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	n->wipe_fd = fds[0];
	n->wipe_t0 = now_ms();
	timeline_event(wipe ? "wipe-start" : "mkfs-start");
	log_info("disk: %s: %s in the background (pid %d, bound %lld s); the race goes on",
		 n->disk.path, wipe ? "wiping and mke2fs" : "mke2fs (not wiped)", (int)n->wipe->pid,
		 (long long)(n->wipe_bound_ms / 1000));
	return 0;
}

/* The child has exited: its status and its last line decide. 0, or -EIO with one line. */
static int ended(struct node *n)
{
	struct sv_child *w = n->wipe;
	int st = w->last_status, ok;
	const char *what = n->disk.no_wipe ? "mke2fs" : "wipe";

	drain(n);
	ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && n->mkfs_ended &&
	     (n->disk.no_wipe || n->wipe_ended);
	n->wipe_state = ok ? 1 : -EIO;
	if (!ok)
		timeline_event(n->disk.no_wipe ? "mkfs-failed" : "wipe-failed");
	if (ok)
		log_info("disk: %s: the background %s ended after %.1f s", n->disk.path,
			 n->disk.no_wipe ? "mke2fs" : "wipe and mke2fs",
			 (double)(now_ms() - n->wipe_t0) / 1e3);
	else if (w->timed_out)
		log_error("disk: %s: the %s did not end within its bound of %lld s", n->disk.path,
			  what, (long long)(n->wipe_bound_ms / 1000));
	else
		log_error("disk: %s: the %s failed (%s %d)", n->disk.path, what,
			  WIFEXITED(st) ? "exit status" : "signal",
			  WIFEXITED(st)	    ? WEXITSTATUS(st)
			  : WIFSIGNALED(st) ? WTERMSIG(st)
					    : -1);
	sv_release(w);
	n->wipe = NULL;
	close(n->wipe_fd);
	n->wipe_fd = -1;
	return ok ? 0 : -EIO;
}

void wipe_turn(struct node *n)
{
	if (!n->wipe)
		return;
	drain(n);
	if (!n->wipe->done)
		return;
	/* a failure ends the race before anyone takes the node lock */
	if (ended(n) < 0 && n->won == WON_NONE) {
		n->srv.stop = 1;
		return;
	}
	/* the disk made ready now, while the rounds wait for their peers: not after the win */
	if (n->wipe_state > 0 && n->won == WON_NONE && node_disk_ready(n) < 0)
		n->srv.stop = 1;
}

/* The SSH host key the rounds already announced, now on the state disk (§14). */
static int store_ssh_key(struct node *n)
{
	char path[PATH_MAX], text[4096];
	int r;

	if ((r = path_in(path, sizeof path, n->state, "/ssh/ssh_host_ed25519_key")) < 0 ||
	    (r = node_mkdir_for(path, 0700)) < 0)
		return r;
	r = ssh_key_format(&n->ssh, text, sizeof text);
	if (r == 0 && (r = write_file_excl(path, text, strlen(text), 0600)) < 0)
		log_err(r, "ssh: writing the host key %s", path);
	secret_wipe(text, sizeof text);
	return r;
}

int node_disk_ready(struct node *n)
{
	int64_t t0 = now_ms();
	int waited = 0;
	const char *what = n->disk.no_wipe ? "mke2fs" : "wipe";

	if (n->disk_ready)
		return n->disk_ready > 0 ? 0 : -EIO;
	while (n->wipe) {
		drain(n);
		if (n->wipe->done) {
			ended(n);
			break;
		}
		if (!waited++) {
			if (n->disk.no_wipe)
				log_info("disk: %s: the key waits for mke2fs", n->disk.path);
			else
				log_info("disk: %s: the key waits for the wipe (%d%% done)",
					 n->disk.path, n->wipe_pct);
		}
		/* the supervisor kills the child at its deadline; this is the backstop */
		if (now_ms() > n->wipe_t0 + n->wipe_bound_ms + 30000) {
			log_error("disk: %s: the %s did not end within its bound of %lld s",
				  n->disk.path, what, (long long)(n->wipe_bound_ms / 1000));
			n->disk_ready = -1;
			return -ETIMEDOUT;
		}
		if (node_wait(n, 100)) {
			n->srv.stop = 1;
			return -EINTR;
		}
	}
	if (waited)
		log_info("disk: waited %lld ms for the %s", (long long)(now_ms() - t0), what);
	n->disk_ready = -1;
	if (n->wipe_state < 0)
		return -EIO;
	/* ext4 is made: the child ran mke2fs */
	if (disk_format_finish(&n->disk) < 0 || n->ops->state_fs_mount(n) < 0 ||
	    store_ssh_key(n) < 0)
		return -EIO;
	n->disk_ready = 1;
	timeline_event("disk-ready");
	return 0;
}

void wipe_kill(struct node *n)
{
	if (n->wipe && n->wipe->pid > 0) {
		kill(-n->wipe->pid, SIGKILL);
		kill(n->wipe->pid, SIGKILL);
	}
	if (n->wipe_fd >= 0)
		close(n->wipe_fd);
	n->wipe_fd = -1;
}
