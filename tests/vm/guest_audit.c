/* The no-wipe audit of the state disk (issue 28 item 2, docs/wipe.md "The no-wipe audit"), the
 * guest side: runs as /init of a test initrd under QEMU (tests/vm/test_disk_audit.sh boots it
 * several times on the same disks, killing QEMU at random points: power cuts).
 *
 * The stack is the node's: LUKS2 aes-xts-plain64 + hmac(sha256) on dm-integrity, 4096-byte
 * sectors, formatted by the agent's disk_format_header + disk_format_finish with NO wipe (the
 * data area's tags never initialised), then what the agent's constel.disk-wipe=none does before
 * mke2fs (disk_zero_for_mkfs) and ext4 with its options (DISK_MKFS_NO_WIPE). Between ext4 and
 * /dev/mapper/state sits one recording layer, dm-log-writes (/dev/mapper/audit): every write ext4
 * sends, in order, with its data and flush marks, durable on the log disk (a fresh one each boot,
 * parsed by the host).
 *
 * Two recorders of "a read of a sector never written since the format":
 *   1. dm-integrity itself: with no wipe, such a read fails its tag check ("Checksum failed"
 *      on the console, the read gets EILSEQ/EIO); the host counts those lines;
 *   2. the block tracepoint block_bio_queue on /dev/mapper/audit, read by a child from
 *      tracefs: writes and reads in their order of submission; a read of a 4096-byte block that
 *      is neither in the host's written set of earlier boots (from their write logs, the seed
 *      disk) nor written before in this boot is printed as "@@VIOL" and counted, with whether
 *      the block reads back below the traced device now ("readable": written since the format,
 *      its write lost from an earlier boot's log at the cut; "unreadable": never written).
 *
 * Command line: audit.dev (state disk), audit.log (log disk), audit.seed (bitmap of the blocks
 * written in earlier boots), audit.key=HEX (32 bytes), audit.boot=first|again, audit.final=1
 * (after the workload: e2fsck -fn, a read-only remount, every file read),
 * audit.mkfs=E-OPTS (mke2fs -E; default the agent's DISK_MKFS_NO_WIPE, "-": none), audit.zero=0
 * (a mutant: no disk_zero_for_mkfs before mke2fs), audit.rounds=N, audit.cut=N (print @@CUT at the
 * Nth operation: the host kills QEMU there), audit.rng=N (the workload's seed), audit.base=N (its
 * first round), audit.inject=1 (a mutant: after the workload, read the last block of
 * /dev/mapper/audit the recorder has not seen written, O_DIRECT). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libdevmapper.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "disk/disk.h"
#include "guest.h"

#define MKE2FS	 "/sbin/mke2fs"
#define E2FSCK	 "/sbin/e2fsck"
#define DEBUGFS	 "/sbin/debugfs"
#define TRACE	 "/sys/kernel/tracing"
#define AUDIT	 "audit"
#define AUDITDEV "/dev/mapper/" AUDIT
#define MNT	 "/mnt"
#define BLK	 4096

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static long ops, cut_at = -1;
/* One operation of the workload done: the host's power cut lands after the Nth. */
static void op(void)
{
	if (++ops == cut_at) {
		printf("@@CUT %ld\n", ops);
		fflush(stdout);
	}
}

static int wfile(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		off += (size_t)n;
	}
	close(fd);
	op();
	return 0;
}

static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* ---- the recorder: block_bio_queue on /dev/mapper/audit ---- */

static uint8_t *bits;
static uint64_t nblocks;
static uint64_t *viol_blocks; /* shared: the first 16 blocks read before written */
static int has(uint64_t b)
{
	return b < nblocks && (bits[b >> 3] >> (b & 7) & 1);
}

/* Whether block b of the state mapping reads back now (O_DIRECT, below the traced device): its
 * tag was written since the format. A block whose read the trace reports although it was
 * written can only be one whose write the earlier boot's log lost at the power cut (the cut
 * came after the write reached the disk, before its log entry); a never-written block fails
 * here, with the tag check's console line. */
static int readable(uint64_t b)
{
	static void *buf;
	int fd, ok;

	if (!buf && posix_memalign(&buf, BLK, BLK))
		return 0;
	fd = open("/dev/mapper/" DISK_MAPPING, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = pread(fd, buf, BLK, (off_t)(b * BLK)) == BLK;
	close(fd);
	return ok;
}

/* The tracer child: reads trace_pipe until the marker AUDIT_END, checks every read. */
static void tracer(unsigned dmmin, int done_fd)
{
	char buf[65536], line[512];
	size_t ll = 0;
	long reads = 0, writes = 0, viol = 0, other = 0;
	int fd = open(TRACE "/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC), end = 0;
	time_t limit = time(NULL) + 3600;

	if (fd < 0)
		_exit(2);
	while (!end && time(NULL) < limit) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(fd, buf, sizeof buf);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n && !end; i++) {
			unsigned ma, mi;
			unsigned long long sec, cnt;
			char rwbs[16], *e;

			if (buf[i] != '\n') {
				if (ll < sizeof line - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			if (strstr(line, "AUDIT_END")) {
				end = 1;
				break;
			}
			e = strstr(line, "block_bio_queue: ");
			if (!e ||
			    sscanf(e + 17, "%u,%u %15s %llu + %llu", &ma, &mi, rwbs, &sec, &cnt) !=
				5 ||
			    mi != dmmin || !cnt)
				continue;
			if (strchr(rwbs, 'D')) { /* discards: data unchanged below (log-writes) */
				other++;
				continue;
			}
			for (uint64_t b = sec / 8; b < (sec + cnt + 7) / 8 && b < nblocks; b++) {
				if (strchr(rwbs, 'W')) {
					bits[b >> 3] |= (uint8_t)(1u << (b & 7));
				} else if (strchr(rwbs, 'R') && !has(b)) {
					if (viol < 16)
						viol_blocks[viol] = b + 1;
					if (viol++ < 20)
						printf("@@VIOL block %llu (%s %llu + %llu) %s %s\n",
						       (unsigned long long)b, rwbs, sec, cnt,
						       readable(b) ? "readable" : "unreadable",
						       strrchr(line, '[') ? strrchr(line, '[')
									  : "");
				}
			}
			if (strchr(rwbs, 'W'))
				writes++;
			else if (strchr(rwbs, 'R'))
				reads++;
		}
	}
	printf("@@DATA trace_reads %ld\n@@DATA trace_writes %ld\n@@DATA trace_discards %ld\n"
	       "@@DATA trace_violations %ld\n",
	       reads, writes, other, viol);
	fflush(stdout);
	if (write(done_fd, end ? "E" : "T", 1) != 1)
		_exit(3);
	_exit(end ? 0 : 4);
}

static int trace_setup(void)
{
	char f[128];
	FILE *p = fopen("/proc/devices", "re");
	char l[128];
	int major = -1;

	while (p && fgets(l, sizeof l, p)) {
		int m;
		char name[64];
		if (sscanf(l, "%d %63s", &m, name) == 2 && !strcmp(name, "device-mapper"))
			major = m;
	}
	if (p)
		fclose(p);
	if (major < 0)
		return -ENODEV;
	if (mount("tracefs", TRACE, "tracefs", 0, NULL) < 0 && errno != EBUSY)
		return -errno;
	put(TRACE "/tracing_on", "0");
	put(TRACE "/buffer_size_kb", "32768");
	snprintf(f, sizeof f, "dev >= %d && dev < %d", major << 20, (major + 1) << 20);
	if (put(TRACE "/events/block/block_bio_queue/filter", f) < 0 ||
	    put(TRACE "/events/block/block_bio_queue/enable", "1") < 0)
		return -EIO;
	put(TRACE "/trace", "");
	return put(TRACE "/tracing_on", "1");
}

static int trace_overruns(void)
{
	char l[128];
	FILE *p = fopen(TRACE "/per_cpu/cpu0/stats", "re");
	long v = -1;

	while (p && fgets(l, sizeof l, p))
		if (!strncmp(l, "overrun: ", 9))
			v = atol(l + 9);
	if (p)
		fclose(p);
	return (int)v;
}

/* /dev/mapper/audit: dm-log-writes over /dev/mapper/state, its log on logdev. */
static int audit_create(const char *logdev, uint64_t sectors)
{
	char params[256];
	struct dm_task *t = dm_task_create(DM_DEVICE_CREATE);

	snprintf(params, sizeof params, "/dev/mapper/%s %s", DISK_MAPPING, logdev);
	struct dm_info info = {0};
	int ok;

	ok = t && dm_task_set_name(t, AUDIT) &&
	     dm_task_add_target(t, 0, sectors, "log-writes", params) && dm_task_run(t) &&
	     dm_task_get_info(t, &info) && info.exists;
	/* no udev here: the node is ours to make */
	if (ok && access(AUDITDEV, F_OK) != 0 &&
	    mknod(AUDITDEV, S_IFBLK | 0600, makedev(info.major, info.minor)) < 0)
		ok = 0;
	if (t)
		dm_task_destroy(t);
	return ok ? 0 : -EIO;
}

static int audit_remove(void)
{
	struct dm_task *t = dm_task_create(DM_DEVICE_REMOVE);
	int ok = t && dm_task_set_name(t, AUDIT) && dm_task_run(t);

	if (t)
		dm_task_destroy(t);
	return ok ? 0 : -EIO;
}

/* ---- the workload: a node's use of its state disk ---- */

static char *payload;

/* containerd: an image's layer unpacked (a tree of many files of many sizes, hard links, a
 * symlink, xattr-free), written then renamed into place, the snapshot synced once. */
static void image_pull(int img)
{
	char dir[128], p[256], q[256];
	int nfiles = 40 + (int)(rnd() % 80);

	snprintf(dir, sizeof dir, MNT "/containerd/snapshots/%d.tmp", img);
	mkdir(MNT "/containerd", 0755);
	mkdir(MNT "/containerd/snapshots", 0755);
	mkdir(dir, 0755);
	for (int i = 0; i < nfiles; i++) {
		uint64_t r = rnd();
		/* sizes: most small, some up to 2 MiB */
		size_t len = r % 4 == 0 ? (size_t)(rnd() % (2u << 20)) : (size_t)(rnd() % 16384);
		snprintf(p, sizeof p, "%s/d%d", dir, i % 7);
		mkdir(p, 0755);
		snprintf(p, sizeof p, "%s/d%d/f%d", dir, i % 7, i);
		wfile(p, payload + (r >> 40) % (1u << 20), len);
		if (i % 13 == 0) {
			snprintf(q, sizeof q, "%s/d%d/l%d", dir, i % 7, i);
			link(p, q);
			op();
		}
	}
	snprintf(p, sizeof p, "%s/d0/lnk", dir);
	symlink("f0", p);
	{
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			syncfs(fd);
			close(fd);
		}
	}
	snprintf(p, sizeof p, MNT "/containerd/snapshots/%d", img);
	rename(dir, p);
	op();
}

static int rm_cb(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(p);
	op();
	return 0;
}

static void image_delete(int img)
{
	char p[128];

	snprintf(p, sizeof p, MNT "/containerd/snapshots/%d", img);
	nftw(p, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* kubelet: small files written to a temporary name, fsynced, renamed (atomic writes). */
static void kubelet_files(int round)
{
	char p[128], t[128];

	mkdir(MNT "/kubelet", 0755);
	mkdir(MNT "/kubelet/pods", 0755);
	for (int i = 0; i < 20; i++) {
		int fd;
		size_t len = 100 + (size_t)(rnd() % 3000);
		snprintf(t, sizeof t, MNT "/kubelet/pods/.tmp%d", i);
		snprintf(p, sizeof p, MNT "/kubelet/pods/pod%d-%d", round, i);
		fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			continue;
		if (write(fd, payload + rnd() % 4096, len) < 0 || fsync(fd) < 0)
			printf("kubelet write: %s\n", strerror(errno));
		close(fd);
		rename(t, p);
		op();
	}
}

/* etcd: WAL segments preallocated with fallocate, appends of records each followed by
 * fdatasync, a segment cut (the old one truncated to its used size), old segments removed. */
static void etcd_wal(int round)
{
	char p[128];
	int fd;
	off_t off = 0;

	mkdir(MNT "/etcd", 0700);
	mkdir(MNT "/etcd/wal", 0700);
	snprintf(p, sizeof p, MNT "/etcd/wal/%04d.wal", round);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (fallocate(fd, 0, 0, 4 << 20) < 0)
		printf("fallocate: %s\n", strerror(errno));
	for (int i = 0; i < 150; i++) {
		size_t len = 64 + (size_t)(rnd() % 6000);
		if (pwrite(fd, payload + rnd() % 8192, len, off) != (ssize_t)len)
			break;
		off += (off_t)len;
		fdatasync(fd);
		op();
	}
	ftruncate(fd, off);
	fsync(fd);
	close(fd);
	op();
	snprintf(p, sizeof p, MNT "/etcd/wal/%04d.wal", round - 2);
	unlink(p);
	/* the snapshot file: written, then punched and zero-ranged in parts */
	snprintf(p, sizeof p, MNT "/etcd/snap%d", round);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, payload, 1 << 20) < 0 ||
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 65536) < 0 ||
		    fallocate(fd, FALLOC_FL_ZERO_RANGE, 200000, 100000) < 0 ||
		    fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20) < 0)
			printf("snapshot: %s\n", strerror(errno));
		fsync(fd);
		close(fd);
		op();
	}
}

/* Truncates (shrink, then extend past the end: a hole), and O_DIRECT writes and reads in
 * 4096-byte units, into a hole, a preallocated range and written blocks. */
static void direct_io(int round)
{
	char p[128];
	void *b;
	int fd;

	snprintf(p, sizeof p, MNT "/direct%d", round % 3);
	if (posix_memalign(&b, BLK, 16 * BLK))
		return;
	memcpy(b, payload, 16 * BLK);
	fd = open(p, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 64 * BLK) < 0 ||
		    pwrite(fd, b, 4 * BLK, 8 * BLK) < 0 || pwrite(fd, b, 16 * BLK, 128 * BLK) < 0 ||
		    pwrite(fd, b, BLK, 40 * BLK) < 0 || fdatasync(fd) < 0 ||
		    pread(fd, b, 16 * BLK, 0) < 0 || pread(fd, b, 16 * BLK, 120 * BLK) < 0 ||
		    ftruncate(fd, 100 * BLK + 1000) < 0 || ftruncate(fd, 300 * BLK) < 0 ||
		    pread(fd, b, 16 * BLK, 96 * BLK) < 0)
			printf("direct: %s\n", strerror(errno));
		close(fd);
		op();
	}
	free(b);
	/* a buffered partial write into a new block, then a read back after a drop of caches */
	snprintf(p, sizeof p, MNT "/partial%d", round);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (pwrite(fd, "x", 1, 5000) < 0 || pwrite(fd, "y", 1, 70000) < 0 || fsync(fd) < 0)
			printf("partial: %s\n", strerror(errno));
		close(fd);
		op();
	}
}

static void fstrim(void)
{
	struct fstrim_range r = {.start = 0, .len = UINT64_MAX, .minlen = 0};
	int fd = open(MNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		if (ioctl(fd, FITRIM, &r) < 0)
			printf("fstrim: %s\n", strerror(errno));
		else
			printf("fstrim: %llu bytes\n", (unsigned long long)r.len);
		close(fd);
		op();
	}
}

static void drop_caches(void)
{
	sync();
	put("/proc/sys/vm/drop_caches", "3");
}

static long files_read, bytes_read, read_errors;
static int read_cb(const char *p, const struct stat *st, int type, struct FTW *f)
{
	char buf[65536];
	ssize_t n;
	int fd;

	(void)f;
	if (type == FTW_D || type == FTW_DP) {
		DIR *d = opendir(p);
		if (d) {
			while (readdir(d))
				;
			closedir(d);
		}
		return 0;
	}
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		read_errors++;
		return 0;
	}
	while ((n = read(fd, buf, sizeof buf)) > 0)
		bytes_read += n;
	if (n < 0) {
		read_errors++;
		printf("read %s: %s\n", p, strerror(errno));
	}
	close(fd);
	files_read++;
	return 0;
}

static void workload(int rounds, int base)
{
	for (int r = 0; r < rounds; r++) {
		int round = base + r;
		printf("audit: round %d\n", round);
		image_pull(round);
		kubelet_files(round);
		etcd_wal(round);
		direct_io(round);
		if (round >= 2)
			image_delete(round - 2);
		if (r % 2 == 1) {
			fstrim();
			drop_caches();
			nftw(MNT, read_cb, 16, FTW_PHYS);
		}
	}
}

static struct secret *key_arg(void)
{
	const char *h = guest_arg("audit.key", "");
	uint8_t k[DISK_KEY_LEN];
	size_t n = 0;
	struct secret *s;

	if (hex_decode(h, strlen(h), k, sizeof k, &n) < 0 || n != sizeof k)
		return NULL;
	s = secret_from(k, sizeof k);
	secret_wipe(k, sizeof k);
	return s;
}

int main(void)
{
	const char *dev, *logdev, *seeddev, *boot, *mkfs;
	struct secret *key;
	struct disk d;
	struct stat st;
	uint64_t bytes = 0;
	int r, fd, pipefd[2], rounds, first, final;
	pid_t tp;
	char c = 0, ra_path[96] = "/dev/null";

	guest_start("guest_audit", 1);
	modules_load_list("/etc/modules.list");
	dev = guest_arg("audit.dev", "/dev/vda");
	logdev = guest_arg("audit.log", "/dev/vdb");
	seeddev = guest_arg("audit.seed", "/dev/vdc");
	boot = guest_arg("audit.boot", "first");
	first = !strcmp(boot, "first");
	final = !strcmp(guest_arg("audit.final", "0"), "1");
	rounds = atoi(guest_arg("audit.rounds", "4"));
	cut_at = atol(guest_arg("audit.cut", "-1"));
	rng_state += (uint64_t)atol(guest_arg("audit.rng", "1")) * 0x9e3779b97f4a7c15ull;
	key = key_arg();
	payload = malloc((2u << 20) + 65536);
	if (!key || !payload) {
		guest_result("args", 0, "audit.key");
		guest_done();
	}
	for (size_t i = 0; i < (2u << 20) + 65536; i += 8) {
		uint64_t v = rnd();
		memcpy(payload + i, &v, 8);
	}
	r = trace_setup();
	guest_result("trace_setup", r == 0, "%d", r);
	if (r < 0)
		guest_done();

	r = disk_open(&d, dev, NULL, DISK_KDF_MIN);
	if (first) {
		r = r == DISK_NEW ? disk_format_header(&d) : -EINVAL;
		/* no disk_wipe: the audit's point */
		put(TRACE "/trace", ""); /* the format's temporary mappings are not ext4's */
		r = r < 0 ? r : disk_format_finish(&d);
		r = r < 0 ? r : disk_set_key(&d, key);
		r = r < 0 ? r : disk_mark_initialized(&d);
		guest_result("format_no_wipe", r == 0, "%d", r);
	} else {
		put(TRACE "/trace", "");
		r = r == DISK_INITIALIZED ? disk_unlock(&d, key) : -EINVAL;
		guest_result("unlock", r == 0, "%d", r);
	}
	if (r < 0)
		guest_done();
	fd = open("/dev/mapper/" DISK_MAPPING, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &bytes) < 0)
		bytes = 0;
	if (fd >= 0)
		close(fd);
	nblocks = bytes / BLK;
	/* shared with the tracer child: the mutant's injected read picks a block it has not seen
	 * written */
	bits =
	    mmap(NULL, nblocks / 8 + 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	viol_blocks = mmap(NULL, 16 * sizeof *viol_blocks, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = open(seeddev, O_RDONLY | O_CLOEXEC);
	if (bits == MAP_FAILED || viol_blocks == MAP_FAILED || fd < 0 ||
	    read(fd, bits, nblocks / 8 + 1) != (ssize_t)(nblocks / 8 + 1)) {
		guest_result("seed", 0, "%s: %s", seeddev, strerror(errno));
		guest_done();
	}
	close(fd);
	r = audit_create(logdev, bytes / 512);
	guest_result("log_writes_device", r == 0 && stat(AUDITDEV, &st) == 0, "%d", r);
	if (r < 0 || stat(AUDITDEV, &st) < 0)
		guest_done();
	printf("@@DATA blocks %llu\n", (unsigned long long)nblocks);
	if (pipe2(pipefd, O_CLOEXEC) < 0 || (tp = fork()) < 0)
		guest_done();
	if (tp == 0)
		tracer(minor(st.st_rdev), pipefd[1]);

	if (first) {
		const char *e = guest_arg("audit.mkfs", DISK_MKFS_NO_WIPE);

		/* the agent's no-wipe format's one write before mkfs (disk_zero_for_mkfs), here
		 * through the recording layer; audit.zero=0: left out (a mutant) */
		r = strcmp(guest_arg("audit.zero", "1"), "0") ? disk_zero_for_mkfs(AUDITDEV) : 0;
		guest_result("zero_for_mkfs", r == 0, "%d", r);
		/* the agent's bounded journal on a device of its size (disk_mkfs_opts) */
		int j = bytes >= DISK_MKFS_JOURNAL_FROM;
		char *const with[] = {(char *)MKE2FS,
				      (char *)"-q",
				      (char *)"-F",
				      (char *)"-t",
				      (char *)"ext4",
				      (char *)"-E",
				      (char *)e,
				      (char *)(j ? "-J" : AUDITDEV),
				      (char *)(j ? DISK_MKFS_JOURNAL : NULL),
				      (char *)AUDITDEV,
				      NULL};
		char *const without[] = {
		    (char *)"mke2fs", (char *)"-q",	(char *)"-F", (char *)"-t",
		    (char *)"ext4",   (char *)AUDITDEV, NULL};
		mkfs = e;
		r = run(strcmp(e, "-") ? with : without);
		guest_result("mkfs", r == 0, "mke2fs -E %s%s%s: %d", mkfs, j ? " -J " : "",
			     j ? DISK_MKFS_JOURNAL : "", r);
	}
	mkdir(MNT, 0755);
	r = mount(AUDITDEV, MNT, "ext4", 0, NULL);
	guest_result("mount", r == 0, "%s", r ? strerror(errno) : "");
	if (r == 0) {
		int base = atoi(guest_arg("audit.base", "0"));
		const char *inj = guest_arg("audit.inject", "");

		workload(rounds, base);
		if (*inj) { /* the mutant: a read of a block never written */
			void *b = NULL;
			int f = open(AUDITDEV, O_RDONLY | O_DIRECT | O_CLOEXEC);
			ssize_t n = -1;
			uint64_t blk = nblocks - 1;
			sync();
			while (blk > 0 && has(blk))
				blk--;
			if (f >= 0 && !posix_memalign(&b, BLK, BLK))
				n = pread(f, b, BLK, (off_t)(blk * BLK));
			printf("audit: injected read of block %llu (never written): %zd (%s)\n",
			       (unsigned long long)blk, n, n < 0 ? strerror(errno) : "ok");
			free(b);
			if (f >= 0)
				close(f);
		}
		r = umount(MNT);
		guest_result("umount", r == 0, "%s", r ? strerror(errno) : "");
	}
	if (final) {
		char *const fsck[] = {(char *)E2FSCK, (char *)"-fn", (char *)AUDITDEV, NULL};
		char ra[96];
		/* the block device's own page-cache readahead (read_ahead_kb) reads past what a
		 * program reading the raw device asks for: off for e2fsck (docs/wipe.md) */
		snprintf(ra, sizeof ra, "/sys/dev/block/%u:%u/queue/read_ahead_kb",
			 major(st.st_rdev), minor(st.st_rdev));
		char old[32] = "";
		FILE *f = fopen(ra, "re");
		if (!f || !fgets(old, sizeof old, f))
			strcpy(old, "128");
		if (f)
			fclose(f);
		old[strcspn(old, "\n")] = 0;
		r = put(ra, guest_arg("audit.fsck_ra", "0"));
		guest_result("fsck_readahead_set", r == 0, "%s: %d (was %s)", ra, r, old);
		r = run(fsck);
		guest_result("e2fsck_clean", r == 0, "e2fsck -fn: %d", r);
		put(ra, old); /* the node's file reads with the kernel's readahead again */
		snprintf(ra_path, sizeof ra_path, "%s", ra);
		drop_caches();
		r = mount(AUDITDEV, MNT, "ext4", MS_RDONLY, NULL);
		guest_result("remount", r == 0, "%s", r ? strerror(errno) : "");
		if (r == 0) {
			nftw(MNT, read_cb, 16, FTW_PHYS);
			guest_result("read_every_file", read_errors == 0 && files_read > 0,
				     "%ld files, %ld bytes, %ld errors", files_read, bytes_read,
				     read_errors);
			umount(MNT);
		}
	}
	sync();
	if (final && viol_blocks[0] && access(DEBUGFS, X_OK) == 0) {
		/* what the blocks read before written are: their owners and bitmap state */
		char cmd[512] = "icheck";
		char *const dbg[] = {(char *)DEBUGFS, (char *)"-R", cmd, (char *)AUDITDEV, NULL};
		for (int i = 0; i < 16 && viol_blocks[i]; i++)
			snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %llu",
				 (unsigned long long)viol_blocks[i] - 1);
		put(ra_path, "0"); /* debugfs reads the raw device too */
		run(dbg);
		memcpy(cmd, "testb ", 6);
		run(dbg);
	}
	/* the tracer drains to the marker, then says so (bounded) */
	put(TRACE "/trace_marker", "AUDIT_END");
	{
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		r = poll(&p, 1, 600000) == 1 && read(pipefd[0], &c, 1) == 1 && c == 'E';
		guest_result("tracer_drained", r, "%c", c ? c : '-');
	}
	r = trace_overruns();
	guest_result("trace_no_overrun", r == 0, "overrun %d", r);
	printf("@@DATA ops %ld\n", ops);
	audit_remove();
	disk_close(&d);
	disk_deactivate(DISK_MAPPING);
	secret_free(key);
	guest_done();
}
