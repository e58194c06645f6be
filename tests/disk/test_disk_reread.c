/* A host that answers the second read of the LUKS2 header differently (issue 23): the state
 * disk here is a file of a small FUSE filesystem this test serves itself over /dev/fuse (no
 * libfuse), "two-faced": every read is served from an initialized image that passes the
 * §6.2 check until a read starts at offset 0 a second time; from then on every read is
 * served from a copy whose secondary header says cipher_null with a higher sequence number
 * (the copy libcryptsetup would prefer). Reads go to the server every time (direct I/O: no
 * page cache between the two reads).
 *
 * disk_open must leave libcryptsetup holding the header it checked (aes, the key opens it),
 * never the cipher_null one; a disk whose first read is already the bad header is refused.
 * On the tree before the detached header, libcryptsetup read the disk again after the check
 * and loaded cipher_null. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libcryptsetup.h>
#include <linux/fuse.h>

#include "base/base.h"
#include "disk/disk.h"
#include "harness.h"
#include "luks_fixture.h"

#define FILE_INO 2
#define IMG_SIZE (20u << 20)

/* good copied to bad, whose secondary then says cipher_null, sequence number raised. */
static int make_bad(const char *good, const char *bad)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd,
		 "cp %s %s && python3 tests/disk/mutate_header.py %s "
		 "'d[\"segments\"][\"0\"][\"encryption\"] = \"cipher_null-ecb\"' secondary",
		 good, bad, bad);
	return system(cmd) == 0 ? 0 : -1;
}

static void reply(int fd, uint64_t unique, int error, const void *p, size_t len)
{
	uint8_t buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header h = {
	    .len = (uint32_t)(sizeof h + len), .error = error, .unique = unique};

	memcpy(buf, &h, sizeof h);
	if (len)
		memcpy(buf + sizeof h, p, len);
	if (write(fd, buf, sizeof h + len) < 0) {
		/* the kernel dropped the request (interrupted): nothing to do */
	}
}

static void fill_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof *a);
	a->ino = ino;
	a->nlink = 1;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
	} else {
		a->mode = S_IFREG | 0600;
		a->size = IMG_SIZE;
		a->blocks = IMG_SIZE / 512;
	}
}

/* The server: one file "disk" in the root directory, read only. good_first: the first read
 * at offset 0 (and what follows it) is served from good; 0: everything from bad. Returns when
 * the filesystem is unmounted. */
static void serve(int fd, int good, int bad, int good_first)
{
	static uint8_t in[FUSE_MIN_READ_BUFFER + (1u << 20)],
	    out[sizeof(struct fuse_out_header) + (1u << 20)];
	int zero_reads = good_first ? 0 : 1;

	for (;;) {
		ssize_t n = read(fd, in, sizeof in);
		struct fuse_in_header *h = (struct fuse_in_header *)in;
		void *arg = in + sizeof *h;

		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof *h)
			return; /* ENODEV: unmounted */
		switch (h->opcode) {
		case FUSE_INIT: {
			struct fuse_init_in *ii = arg;
			struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION,
						  .minor = ii->minor < FUSE_KERNEL_MINOR_VERSION
							       ? ii->minor
							       : FUSE_KERNEL_MINOR_VERSION,
						  .max_write = 4096,
						  .time_gran = 1};

			reply(fd, h->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out e = {0};

			if (h->nodeid != FUSE_ROOT_ID || strcmp(arg, "disk")) {
				reply(fd, h->unique, -ENOENT, NULL, 0);
				break;
			}
			e.nodeid = FILE_INO;
			fill_attr(&e.attr, FILE_INO);
			reply(fd, h->unique, 0, &e, sizeof e);
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a = {0};

			fill_attr(&a.attr, h->nodeid);
			reply(fd, h->unique, 0, &a, sizeof a);
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_in *oi = arg;
			struct fuse_open_out o = {.open_flags = FOPEN_DIRECT_IO};

			if ((oi->flags & O_ACCMODE) != O_RDONLY)
				reply(fd, h->unique, -EROFS, NULL, 0);
			else
				reply(fd, h->unique, 0, &o, sizeof o);
			break;
		}
		case FUSE_READ: {
			struct fuse_read_in *ri = arg;
			struct fuse_out_header oh = {.unique = h->unique};
			size_t want = ri->size < (1u << 20) ? ri->size : (1u << 20);
			ssize_t got;

			if (ri->offset == 0)
				zero_reads++;
			got = pread(zero_reads > 1 ? bad : good, out + sizeof oh, want,
				    (off_t)ri->offset);
			if (got < 0)
				got = 0;
			oh.len = (uint32_t)(sizeof oh + (size_t)got);
			memcpy(out, &oh, sizeof oh);
			if (write(fd, out, oh.len) < 0) {
				/* interrupted request */
			}
			break;
		}
		case FUSE_FLUSH:
		case FUSE_RELEASE:
		case FUSE_RELEASEDIR:
		case FUSE_FSYNC:
			reply(fd, h->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:
			break;
		case FUSE_DESTROY:
			reply(fd, h->unique, 0, NULL, 0);
			return;
		default:
			reply(fd, h->unique, -ENOSYS, NULL, 0);
		}
	}
}

struct twoface {
	char dir[64], mnt[256], path[300];
	pid_t pid;
};

/* Mounts the two-faced file at tf->path, served by a child process. */
static int twoface_start(struct twoface *tf, const char *good, const char *bad, int good_first)
{
	char opts[128];
	int fd, g, b;

	snprintf(tf->mnt, sizeof tf->mnt, "%s", harness_path(tf->dir, "mnt"));
	snprintf(tf->path, sizeof tf->path, "%s/disk", tf->mnt);
	if (mkdir(tf->mnt, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fprintf(stderr, "/dev/fuse: %s\n", strerror(errno)), -errno;
	snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("twoface", tf->mnt, "fuse.twoface", MS_NOSUID | MS_NODEV, opts) < 0) {
		int e = errno;

		fprintf(stderr, "mounting FUSE at %s: %s\n", tf->mnt, strerror(e));
		close(fd);
		return -e;
	}
	g = open(good, O_RDONLY | O_CLOEXEC);
	b = open(bad, O_RDONLY | O_CLOEXEC);
	tf->pid = g >= 0 && b >= 0 ? fork() : -1;
	if (tf->pid == 0) {
		serve(fd, g, b, good_first);
		_exit(0);
	}
	close(fd);
	if (g >= 0)
		close(g);
	if (b >= 0)
		close(b);
	if (tf->pid < 0) {
		umount2(tf->mnt, MNT_DETACH);
		return -EIO;
	}
	return 0;
}

static void twoface_stop(struct twoface *tf)
{
	int status;

	umount2(tf->mnt, MNT_DETACH);
	kill(tf->pid, SIGTERM);
	waitpid(tf->pid, &status, 0);
}

TEST(disk_open_loads_the_header_it_checked_not_a_second_read)
{
	struct twoface tf = {0};
	struct disk d;
	char good[300], bad[300], cipher[32] = "";
	int r, key = -1;

	harness_tmpdir(tf.dir, "reread");
	snprintf(good, sizeof good, "%s", harness_path(tf.dir, "good.img"));
	snprintf(bad, sizeof bad, "%s", harness_path(tf.dir, "bad.img"));
	CHECK(luks_fixture_initialized(good) == 0);
	CHECK(make_bad(good, bad) == 0);
	CHECK(disk_classify(bad, NULL, NULL, 0) == -EINVAL); /* the check refuses it */
	CHECK(twoface_start(&tf, good, bad, 1) == 0);
	r = disk_open(&d, tf.path, "constel-reread-test", DISK_KDF_MIN);
	if (r == DISK_INITIALIZED && d.cd) {
		const char *c = crypt_get_cipher(d.cd);

		snprintf(cipher, sizeof cipher, "%s", c ? c : "(none)");
		key = disk_check_key(&d, "pass", 4);
	}
	fprintf(stderr, "disk_open %d, libcryptsetup's cipher '%s', key check %d\n", r, cipher,
		key);
	disk_close(&d);
	twoface_stop(&tf);
	harness_rmtree(tf.dir);
	/* refusing would be right too; loading anything but the checked header is not */
	CHECK(r == -EINVAL || (r == DISK_INITIALIZED && !strcmp(cipher, "aes")));
	CHECK(r != DISK_INITIALIZED || key == 0);
}

TEST(disk_open_refuses_a_bad_header_on_the_first_read)
{
	struct twoface tf = {0};
	struct disk d;
	char good[300], bad[300];
	int r, loaded;

	harness_tmpdir(tf.dir, "reread-bad");
	snprintf(good, sizeof good, "%s", harness_path(tf.dir, "good.img"));
	snprintf(bad, sizeof bad, "%s", harness_path(tf.dir, "bad.img"));
	CHECK(luks_fixture_initialized(good) == 0);
	CHECK(make_bad(good, bad) == 0);
	CHECK(twoface_start(&tf, good, bad, 0) == 0);
	r = disk_open(&d, tf.path, "constel-reread-test", DISK_KDF_MIN);
	loaded = d.cd != NULL;
	disk_close(&d);
	twoface_stop(&tf);
	harness_rmtree(tf.dir);
	CHECK(r == -EINVAL && !loaded);
}
