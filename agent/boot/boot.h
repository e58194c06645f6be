/* PID-1 duties of the initramfs (ARCHITECTURE.md "The boot, as one path"): loading the kernel
 * modules the initrd carries, since there is no modprobe and the kernel's own
 * request_module() finds nothing; reading the kernel command line; the early mounts and
 * entropy; the real root and switch_root; supervising the node's services afterwards; the
 * shutdown; the boot timeline. Functions return 0 or a negative errno and log one line per
 * failure, unless said otherwise. */
#ifndef CONSTEL_BOOT_H
#define CONSTEL_BOOT_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

/* Loads every module named in list (one absolute .ko path per line, dependencies first) with
 * finit_module(). With list's sibling NAME.dep (initrd/mkinitrd.py's /etc/modules.dep: line i
 * "i: j k ...", the earlier modules module i waits for) and more than one online CPU, as many
 * modules as CPUs load at a time (at most MODULES_JOBS_MAX, fewer with constel.module-jobs=N
 * on the kernel command line), each in a child process, a module only after all it waits for;
 * else one after the other in list order. Already loaded (EEXIST) and no such
 * hardware (ENODEV) are fine; any other failure is logged as one line and counted. Returns the
 * number of failures, or a negative errno when the list cannot be read. */
int modules_load_list(const char *list);

/* The deadline is for the children; a module loaded in-process is not bounded. */
#define MODULES_MAX	    256
#define MODULES_JOBS_MAX    4
#define MODULES_DEADLINE_MS 60000

/* modules_load_list's engine, for the tests: jobs at a time (1: in-process, list order), dep
 * NULL for none, children still loading at deadline_ms are killed and counted as failed; load
 * returns 0 or -errno (modules_finit: open and finit_module). */
struct modules_opts {
	int jobs, deadline_ms;
	int (*load)(const char *path);
	const char *csp; /* constel.csp: other clouds' modules are not loaded; NULL: all are */
};
/* 1 when the module at path serves only other clouds' hardware than csp's (modules.c's
 * table), else 0. */
int modules_cloud_only(const char *path, const char *csp);
int modules_load_with(const char *list, const char *dep, const struct modules_opts *o);
int modules_finit(const char *path);

/* The boot phases that need modules, in the order they come (initrd/modules.txt marks each
 * module with the first that needs it; initrd/mkinitrd.py writes /etc/modules.phase). */
enum modules_phase {
	MODULES_NETWORK,  /* before the network: the NIC (loaded in the foreground) */
	MODULES_ROOT,	  /* the real root: its disk and file system */
	MODULES_VERITY,	  /* a dm-verity root */
	MODULES_DISK,	  /* the state disk: dm-crypt, dm-integrity, their ciphers, ext4 */
	MODULES_HANDOVER, /* the real root's services (containerd's overlayfs) */
	MODULES_PHASES
};
const char *modules_phase_name(enum modules_phase p);

/* PID 1's loader: as modules_load_list, but with list's sibling NAME.phase (line i "i: PHASE")
 * only the network phase's modules load now; the others load in the background, in one child
 * process (list order, which puts the earlier phases first; in parallel as above), which
 * reports each module on a pipe. Without NAME.phase (or with one that does not match the list,
 * one line) all load now. Returns the number of failures of those loaded now, or -errno. The
 * child is not waited for here: the supervisor reaps it with the orphans. csp: constel.csp,
 * whose cloud's modules only are loaded of those modules_cloud_only knows (NULL: all). */
int modules_start(const char *list, const char *csp);
/* modules_start's engine, for the tests: phase NULL for none. */
int modules_start_with(const char *list, const char *dep, const char *phase,
		       const struct modules_opts *o);
/* Waits until the background child has reported every module of phase p and of the phases
 * before it, at most timeout_ms (and not past modules_start's deadline_ms). Returns 0 at once
 * when there is no background loading (none started, or all of them loaded now); else the
 * number of those modules that failed (each said in one line by the child), -ETIMEDOUT (one
 * line) or -ECHILD when the child ended first (one line). Logs how long it waited, when it
 * did. */
int modules_wait(enum modules_phase p, int timeout_ms);
#define MODULES_WAIT_MS 30000

/* The value of key on a kernel command line (kernel quoting rules; the last occurrence wins;
 * nothing after "--"). Returns 1 and the value in out ("" for a bare key), 0 when absent,
 * -ENAMETOOLONG when the value does not fit in outlen. */
int cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen);

/* ---- the GUID partition table (gpt.c) ----
 * Only what the roothash= convention needs: the partition of a given type and unique GUID.
 * GUIDs are 16 bytes in the GPT's on-disk order (the first three fields little-endian). */
#define GPT_SECTOR_MAX	4096
#define GPT_ENTRIES_MAX 1024
#define GPT_ENTRY_MIN	128
#define GPT_ENTRY_MAX	1024
struct gpt_header {
	uint64_t my_lba, alt_lba, entries_lba;
	uint32_t n_entries, entry_size, entries_crc;
};
/* The header in sec (one sector of sector_size bytes, read from lba): its signature, size,
 * CRC32 and own LBA checked, the entry count and size bounded. 0 or -EBADMSG. */
int gpt_header_parse(const uint8_t *sec, size_t sector_size, uint64_t lba, struct gpt_header *h);
/* The entry array arr (len bytes, at least h's count times size) checked against h's CRC32:
 * the 1-based number of the one entry of type and uuid, -ENOENT when none, -ENOTUNIQ when
 * two match, -EBADMSG for a bad CRC or entry. */
int gpt_entries_find(const struct gpt_header *h, const uint8_t *arr, size_t len,
		     const uint8_t type[16], const uint8_t uuid[16]);
/* "4f68bce3-e8cd-4db1-96e7-fbcaf984b709" (dashes optional) into the on-disk order; -EINVAL */
int gpt_guid_parse(const char *s, uint8_t out[16]);
/* 16 bytes in the order a GUID is written (systemd's sd_id128, a root hash's first or last
 * 128 bits) into the on-disk order. */
void gpt_guid_from_bytes(const uint8_t b[16], uint8_t out[16]);
/* The partition number of type and uuid on the whole disk at path (its primary GPT, else
 * the backup at the last LBA), -ENOENT, or -errno. */
int gpt_disk_find(const char *disk, const uint8_t type[16], const uint8_t uuid[16]);
/* Every whole disk of /sys/class/block, again every 50 ms up to timeout_ms while none holds
 * it: the partition device (/dev/vda2) of type and uuid into dev. 0, -ENOENT, -ENOTUNIQ (on
 * two disks or twice on one), or -errno. */
int gpt_find_partition(const uint8_t type[16], const uint8_t uuid[16], char *dev, size_t cap,
		       int timeout_ms);

/* ---- mounts (mount.c) ---- */
/* PID 1's early mounts: /proc, /sys, /dev (devtmpfs), /dev/pts, /dev/shm, /run (tmpfs, 0755),
 * /sys/kernel/security (securityfs, for the TPM event log) and /sys/fs/cgroup (cgroup2, for
 * kubelet and containerd, since no systemd mounts it). Creates the directories; a target
 * that is already a mount point is skipped. Returns the number of failures, one line each. */
int boot_early_mounts(void);
/* configfs on /sys/kernel/config (its module loaded before: initrd/modules.txt's disk phase),
 * where configfs-tsm offers the SEV-SNP report (agent/attest/sev_guest.c tries it first); for
 * the SNP variants, before the first attestation. 0 (also when mounted already; one line when
 * it mounts), or -errno with one line. */
int boot_configfs_mount(void);

/* Returns 1 when getrandom(GRND_NONBLOCK) already succeeds. Otherwise logs one line and
 * waits for the pool (a poll on /dev/random, bounded by timeout_ms): 0 once it is ready,
 * -ETIMEDOUT (one line) when it is not. */
int boot_entropy_wait(int timeout_ms);

/* The real root, mounted read-only at target (made when missing). fstype NULL or "" tries
 * ext4, erofs and squashfs in turn. With roothash_hex, dev is first opened as dm-verity
 * "root" through libcryptsetup (the verity superblock is on hash_dev at hash_offset bytes;
 * hash_dev NULL: on dev itself) and /dev/mapper/root is mounted; the mapping is removed again
 * when the mount fails. dev is waited for up to 5 s (late device probes).
 * gpt_auto (roothash= of systemd and mkosi): a missing dev is the GPT partition of type
 * root-x86-64 whose unique GUID is the root hash's first 128 bits, a missing hash_dev the
 * one of type root-x86-64-verity with its last 128 bits, found on any whole disk within the
 * same 5 s. full_check: every block of the root is read through dm-verity before it counts
 * as verified (a changed block anywhere is refused), else only what the mount reads. */
struct boot_root {
	const char *dev, *fstype, *roothash_hex, *hash_dev;
	uint64_t hash_offset;
	const char *target;
	int gpt_auto, full_check;
};
int boot_mount_root(const struct boot_root *r);
/* Reads each of the files (paths inside root; NULL ends the list; a missing one is
 * skipped) to its end: on a dm-verity root a changed block in one is an EIO here. 0, or the
 * first failure's -errno (one line naming the file). */
int boot_root_read_files(const char *root, const char *const *paths);

/* §4: makes state/{var,kubernetes,etccni,opt} and bind-mounts them onto newroot/var,
 * newroot/etc/kubernetes, newroot/etc/cni and newroot/opt. A missing mount point is made
 * when the root is writable; on a read-only root it is -ENOENT (one line). A mount point that
 * is a symlink is refused (-ENOTDIR): it would resolve in the initramfs, not in newroot. On a
 * failure the binds already made are undone. state is the mounted state directory
 * (normally /run/state). */
int boot_bind_state(const char *state, const char *newroot);

/* switch_root as busybox and systemd do it, for PID 1 only: moves /dev, /proc, /sys and /run
 * (with what is mounted below them) onto newroot, makes newroot the root (chdir, MS_MOVE onto
 * "/", chroot), then deletes the initramfs's files, never crossing into another mount.
 * Refuses (-EPERM, -EINVAL, one line, nothing changed) when not PID 1, when / is not ramfs or
 * tmpfs, or when newroot is not a mount point. Open descriptors (sockets, /dev/kmsg) stay. */
int boot_switch_root(const char *newroot);

/* The console filter of a supervised program's output (supervise.c): bytes in, lines
 * "name: text" out to out with control characters replaced and at most 1024 bytes of text;
 * eof flushes a last line without newline. */
struct sv_filter {
	char line[1024];
	size_t len;
	int cut;
};
void sv_filter_feed(struct sv_filter *f, const char *name, const char *p, size_t n, int out,
		    int eof);

/* ---- the supervisor (supervise.c) ----
 * From its first instruction PID 1 owns every child: the join rounds, kubeadm (SV_ONCE, its
 * process group killed at its deadline or the shutdown), containerd and kubelet (SV_RESTART,
 * exponential back-off). It reaps every child and orphan for the whole boot and reads the
 * shutdown signals (SIGTERM, SIGINT, SIGPWR) and SIGCHLD from a signalfd. It is pollable:
 * sv_fd() goes into the caller's poll loop, sv_handle() runs when it is readable or
 * sv_next_ms() has passed. It also works as an ordinary process (tests, host mode): it then
 * makes itself a child subreaper, so orphans of its children are reparented to it. */
enum sv_policy {
	SV_ONCE,
	SV_RESTART,
};

struct sv_child {
	const char *name;	 /* NULL: a free slot */
	const char *const *argv; /* argv[0] is the absolute path executed */
	const char *const *envp; /* NULL: the supervisor's environment */
	enum sv_policy policy;
	/* Before every start (e.g. kubelet's argv composed afresh); < 0 skips this start, which
	 * counts as a failed run for the back-off. */
	int (*prepare)(struct sv_child *c);
	/* SV_RESTART, while it runs, at most every SV_STALE_CHECK_MS: 1 when what prepare
	 * composed is out of date (kubeadm rewrote kubelet's files). The supervisor then stops
	 * it (SIGTERM, SIGKILL SV_KILL_GRACE_MS later) and starts it again at once; that exit
	 * is no failure for the back-off. */
	int (*stale)(struct sv_child *c);
	/* Instead of argv: run(arg) in the forked child, its return value the exit status. */
	int (*run)(void *arg);
	void *arg;
	int backoff_max_ms; /* 0: the supervisor's */
	/* SV_ONCE: CLOCK_MONOTONIC ms when its process group gets SIGTERM (a kubeadm runner
	 * stops kubeadm's own group on it), SIGKILL SV_KILL_GRACE_MS later */
	int64_t deadline_ms;
	/* state, written by the supervisor; zero before the first start */
	pid_t pid;	       /* > 0 while running; the child leads its own process group */
	int restarts;	       /* back-off step; 0 again after SV_UP_RESET_MS up */
	int64_t next_start_ms; /* CLOCK_MONOTONIC ms when the next start is due */
	int last_status;       /* of the last exit, as waitpid() wrote it; -1 unknown */
	int done;	       /* SV_ONCE child that has exited */
	int timed_out;	       /* SV_ONCE child stopped at its deadline */
	int64_t kill_ms;       /* after the deadline: when SIGKILL follows */
	int64_t started_ms;    /* CLOCK_MONOTONIC ms of the last start */
	int64_t check_ms;      /* when stale is asked next */
	int refreshing;	       /* stopped by the supervisor because stale said so */
};

struct supervisor {
	struct sv_child *children;
	size_t n, cap;			    /* slots used (some may be free again), slots */
	int backoff_min_ms, backoff_max_ms; /* 1000, 60000 when 0 */
	int stop_timeout_ms;		    /* SIGTERM to SIGKILL, 10000 when 0 */
	volatile int stopping;		    /* set (e.g. by a signal handler) to stop */
	int shutdown_signal; /* SIGTERM, SIGINT (reboot) or SIGPWR (poweroff) that stopped it */
	/* sv_open */
	int sfd, opened;
	sigset_t old_mask;
};

#define SV_KILL_GRACE_MS  5000
#define SV_STALE_CHECK_MS 500
/* A child up this long starts the back-off over at backoff_min_ms. */
#define SV_UP_RESET_MS 60000

/* Blocks SIGCHLD, SIGTERM, SIGINT and SIGPWR and opens the signalfd they are read from
 * (PID 1 does this first); makes the process a subreaper when it is not PID 1. Idempotent.
 * 0 or -errno (one line). */
int sv_open(struct supervisor *s);
/* The signalfd (after sv_open), for the caller's poll loop. */
int sv_fd(const struct supervisor *s);
/* Reads the signals, reaps every child and orphan, kills SV_ONCE children past their
 * deadline (their process group), starts due children. Returns the shutdown signal when one
 * arrived (also kept in s->shutdown_signal), else 0. Never blocks. */
int sv_handle(struct supervisor *s);
/* Milliseconds until sv_handle has a start or a deadline to see to (at most 1000), 0 when
 * one is due. */
int sv_next_ms(const struct supervisor *s);
/* Copies c into a free slot and starts it now. The slot, or NULL (-ENOSPC, one line). */
struct sv_child *sv_add(struct supervisor *s, const struct sv_child *c);
/* Frees the slot of a child that has exited (SV_ONCE, done): the owner read its status. */
void sv_release(struct sv_child *c);
/* Stops every child: SIGTERM, stop_timeout_ms, SIGKILL (their process groups too), reap; as
 * PID 1 every other process too (kill -1). */
void sv_stop(struct supervisor *s);
/* Closes the signalfd and restores the signal mask of sv_open. */
void sv_close(struct supervisor *s);

/* Starts every child that is neither running nor done. Returns the number of children that
 * could not be forked (they are retried by sv_handle). */
int sv_start_all(struct supervisor *s);

/* sv_open (when not yet), then sv_handle in a poll loop until a shutdown signal arrives,
 * s->stopping is set, or deadline_ms (absolute CLOCK_MONOTONIC ms; 0: none) passes; then
 * sv_stop. Logs one line per start and exit ("kubelet exited with status 1, restart 3 in
 * 4 s"). When it opened the signalfd itself it closes it again. Returns the signal that
 * stopped it, 0 for the deadline, s->shutdown_signal when s->stopping was set, or -errno
 * (one line) when no signalfd could be made. */
int supervise_run(struct supervisor *s, int64_t deadline_ms);

/* PID 1's one way out, for every exit (a shutdown signal, a fatal error): stop the children,
 * then boot_shutdown(sig, 1). sig SIGINT (or 0) reboots; SIGTERM and SIGPWR power off. */
__attribute__((noreturn)) void boot_end(struct supervisor *s, int sig);

/* The shutdown after the supervisor: sync; with do_reboot, every mount except /, /proc, /sys
 * and /dev is unmounted in reverse order of /proc/self/mountinfo (a lazy detach on EBUSY);
 * then the "state" mapping is closed, every non-loopback link is taken down (the virtio-net
 * poweroff hang, docs/qemu.md §9.2), and with do_reboot the machine reboots
 * (SIGINT) or powers off (SIGTERM, SIGPWR, anything else). do_reboot 0 (tests) skips the
 * unmounts and the reboot() call, but still closes "state" and takes the links down: only in
 * a network namespace of its own. Returns 0, or the last failure's -errno (when reboot()
 * itself failed, that one). */
int boot_shutdown(int sig, int do_reboot);

/* Takes every non-loopback link that is up down (before any reboot, also after a fatal
 * error). Returns the number of failures, or -errno when the links cannot be listed. */
int boot_links_down(void);

/* ---- the boot timeline (timeline.c) ----
 * One phase per mark: timeline_start("mounts") records t0 and opens the first phase;
 * timeline_mark("disk") closes the open phase and opens the next. At most TIMELINE_MAX
 * phases are kept; past that the last entry is renamed "more" and absorbs the rest, so the
 * phases always add up to the total. Not thread-safe (the agent has one thread). */
#define TIMELINE_MAX 32
void timeline_start(const char *phase);
void timeline_mark(const char *next_phase);
/* Logs one info line per phase ("boot timeline: disk 123 ms", the open phase measured up to
 * now) and the total, and writes the same as JSON, {"phases":[{"name":"mounts","ms":12},...],
 * "total_ms":345}, to path (mode 0644, parents made; NULL: log only). */
int timeline_write(const char *path);
/* A moment, not a phase (what runs beside the phases: the first boot's wipe): its name and
 * the ms since t0, logged and written as "events":[{"name":"wipe-end","ms":N},...] after the
 * phases (the key only when there are events). At most TIMELINE_EVENTS_MAX; later ones are
 * dropped; none before timeline_start. */
#define TIMELINE_EVENTS_MAX 16
void timeline_event(const char *name);
/* That JSON (NUL-terminated) into buf; its length, or -ENOSPC. */
int timeline_json(char *buf, size_t cap);

#endif
