/* PID 1's mounts: the early pseudo file systems, the wait for entropy, the real root (with
 * dm-verity through libcryptsetup), the §4 bind mounts of the state disk and switch_root.
 * Everything here changes the machine: only PID 1 calls it, tests run it inside QEMU. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcryptsetup.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot.h"
#include "disk/disk.h"

#define VERITY_NAME	  "root"
#define ROOT_WAIT_MS	  5000
#define RM_MAX_DEPTH	  64
#define VERITY_READ_CHUNK (1 << 20)
/* the GPT partition types of systemd's Discoverable Partitions Specification */
#define GPT_ROOT_X86_64	       "4f68bce3-e8cd-4db1-96e7-fbcaf984b709"
#define GPT_ROOT_X86_64_VERITY "2c7357ed-ebd2-46d9-aec1-23d437ec2bf5"

/* A mount point is a directory on another device than its parent (or the root itself). */
static int is_mount_point(const char *path)
{
	char parent[PATH_MAX];
	struct stat a, b;

	if (snprintf(parent, sizeof parent, "%s/..", path) >= (int)sizeof parent)
		return 0;
	if (stat(path, &a) < 0 || stat(parent, &b) < 0)
		return 0;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

static const struct early_mount {
	const char *src, *target, *fstype;
	unsigned long flags;
	const char *data;
	mode_t mode;
} early[] = {
    {"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, 0555},
    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, 0555},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", 0755},
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,ptmxmode=0666", 0755},
    {"tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", 01777},
    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", 0755},
    {"securityfs", "/sys/kernel/security", "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
     0755},
    {"cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate", 0755},
};

int boot_early_mounts(void)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof early / sizeof early[0]; i++) {
		const struct early_mount *m = &early[i];

		/* /sys/kernel/security and /sys/fs/cgroup exist once sysfs is mounted */
		if (mkdir(m->target, m->mode) < 0 && errno != EEXIST) {
			log_err(-errno, "mounts: mkdir %s", m->target);
			failed++;
			continue;
		}
		if (is_mount_point(m->target))
			continue;
		if (mount(m->src, m->target, m->fstype, m->flags, m->data) < 0 && errno != EBUSY) {
			log_err(-errno, "mounts: %s on %s", m->fstype, m->target);
			failed++;
		}
	}
	return failed;
}

int boot_configfs_mount(void)
{
	const char *t = "/sys/kernel/config"; /* sysfs makes it once configfs is in the kernel */

	if (is_mount_point(t))
		return 0;
	if (mount("configfs", t, "configfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 &&
	    errno != EBUSY)
		return log_err(-errno, "mounts: configfs on %s (configfs-tsm)", t);
	log_info("mounts: configfs on %s (configfs-tsm for the SNP report)", t);
	return 0;
}

int boot_entropy_wait(int timeout_ms)
{
	uint64_t t0 = monotonic_ms(), now;
	unsigned char b;
	int fd;

	if (getrandom(&b, 1, GRND_NONBLOCK) == 1)
		return 1;
	if (errno != EAGAIN)
		return log_err(-errno, "entropy: getrandom");
	log_info("entropy: the kernel's random pool is not ready yet, waiting up to %d ms",
		 timeout_ms);
	/* /dev/random turns readable once the pool is ready; without it, poll getrandom */
	fd = open("/dev/random", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	while ((now = monotonic_ms()) - t0 < (uint64_t)timeout_ms) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = 0;

		if (fd >= 0)
			n = poll(&p, 1, timeout_ms - (int)(now - t0));
		else
			nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000L}, NULL);
		if (getrandom(&b, 1, GRND_NONBLOCK) == 1) {
			log_info("entropy: ready after %llu ms",
				 (unsigned long long)(monotonic_ms() - t0));
			if (fd >= 0)
				close(fd);
			return 0;
		}
		if (n > 0 && fd >= 0) { /* readable or an error, yet not ready: stop polling it */
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	log_error("entropy: the kernel's random pool is still not ready after %d ms", timeout_ms);
	return -ETIMEDOUT;
}

/* Block devices may still be probing (virtio-scsi, USB); the wait is bounded. */
static int wait_for_path(const char *path, int timeout_ms)
{
	uint64_t t0 = monotonic_ms();

	while (access(path, F_OK) < 0) {
		if (errno != ENOENT || monotonic_ms() - t0 >= (uint64_t)timeout_ms)
			return -errno;
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000L}, NULL);
	}
	return 0;
}

static int verity_open(const struct boot_root *r, const unsigned char *hash, size_t len)
{
	struct crypt_params_verity params = {.hash_area_offset = r->hash_offset};
	const char *hash_dev = r->hash_dev && r->hash_dev[0] ? r->hash_dev : r->dev;
	struct crypt_device *cd;
	int ret;

	if (hash_dev != r->dev && (ret = wait_for_path(hash_dev, ROOT_WAIT_MS)) < 0)
		return log_err(ret, "root: verity hash device %s", hash_dev);
	disk_crypt_log_setup();
	/* the metadata (verity superblock) device first, the data device second */
	if ((ret = crypt_init_data_device(&cd, hash_dev, r->dev)) < 0)
		return log_err(ret, "root: verity: opening %s and %s", hash_dev, r->dev);
	if ((ret = crypt_load(cd, CRYPT_VERITY, &params)) < 0) {
		log_err(ret, "root: verity: no superblock on %s at offset %llu", hash_dev,
			(unsigned long long)r->hash_offset);
	} else if ((ret = crypt_activate_by_volume_key(cd, VERITY_NAME, (const char *)hash, len,
						       CRYPT_ACTIVATE_READONLY)) < 0) {
		/* -EPERM is the kernel's (or libcryptsetup's) root hash mismatch */
		log_err(ret, "root: verity: activating %s with the given root hash%s", r->dev,
			ret == -EPERM ? " (hash mismatch)" : "");
	} else {
		log_info("root: verity: %s (hashes on %s) opened as /dev/mapper/%s", r->dev,
			 hash_dev, VERITY_NAME);
	}
	crypt_free(cd);
	return ret < 0 ? ret : 0;
}

static void verity_close(void)
{
	int r = crypt_deactivate_by_name(NULL, VERITY_NAME, 0);

	if (r < 0 && r != -ENODEV)
		log_err(r, "root: closing /dev/mapper/%s", VERITY_NAME);
}

/* Every block of dev read once: dm-verity checks each against the tree, so a changed block
 * anywhere is an EIO here, before anything on the root is trusted. Bounded by the device. */
static int verity_read_all(const char *dev)
{
	uint64_t t0 = monotonic_ms(), off = 0;
	int fd = open(dev, O_RDONLY | O_CLOEXEC), ret = 0;
	char *buf = malloc(VERITY_READ_CHUNK);
	ssize_t n = 0;

	if (fd < 0 || !buf) {
		ret = fd < 0 ? -errno : -ENOMEM;
		log_err(ret, "root: verity: reading %s", dev);
		goto out;
	}
	while ((n = pread(fd, buf, VERITY_READ_CHUNK, (off_t)off)) > 0)
		off += (uint64_t)n;
	if (n < 0) {
		ret = -errno;
		log_error("root: verity: a block of the root near byte %llu does not match the "
			  "root hash (%s): the root is refused",
			  (unsigned long long)off, strerror(-ret));
		goto out;
	}
	/* the checked pages are not needed again before the mount reads them */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	log_info("root: verity: all %llu MiB of the root match the root hash (%llu ms)",
		 (unsigned long long)(off >> 20), (unsigned long long)(monotonic_ms() - t0));
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* roothash=: the partition of type (GPT_ROOT_X86_64 or its verity type) whose unique GUID is
 * the 16 bytes at id, into dev (one line when there is none). */
static int gpt_auto_find(const char *type, const char *what, const unsigned char *id, char *dev,
			 size_t cap)
{
	uint8_t t[16], u[16];
	char s[40];
	int r;

	gpt_guid_parse(type, t);
	gpt_guid_from_bytes(id, u);
	r = gpt_find_partition(t, u, dev, cap, ROOT_WAIT_MS);
	if (r == 0) {
		log_info("root: roothash=: the %s partition is %s", what, dev);
		return 0;
	}
	snprintf(s, sizeof s,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", id[0],
		 id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11],
		 id[12], id[13], id[14], id[15]);
	if (r == -ENOTUNIQ)
		log_error("root: roothash=: more than one %s partition has PARTUUID %s: refused",
			  what, s);
	else
		log_error("root: roothash= does not name this machine's root: no %s partition "
			  "(type %s) with PARTUUID %s on any disk within %d s",
			  what, type, s, ROOT_WAIT_MS / 1000);
	return r < 0 ? r : -ENOENT;
}

int boot_mount_root(const struct boot_root *root)
{
	static const char *const guesses[] = {"ext4", "erofs", "squashfs", NULL};
	struct boot_root b = *root, *r = &b;
	const char *const given[] = {r->fstype, NULL};
	const char *const *types = r->fstype && r->fstype[0] ? given : guesses;
	char data_dev[PATH_MAX], hash_dev[PATH_MAX];
	const int verity = r->roothash_hex && r->roothash_hex[0];
	unsigned char hash[64];
	size_t len = 0;
	const char *dev;
	int ret = -EINVAL;

	if (verity &&
	    (hex_decode(r->roothash_hex, strlen(r->roothash_hex), hash, sizeof hash, &len) < 0 ||
	     len < 16)) {
		log_error("root: the verity root hash is not 16 to 64 bytes of hex");
		return -EINVAL;
	}
	if (verity && r->gpt_auto && (!r->dev || !r->dev[0])) {
		if ((ret = gpt_auto_find(GPT_ROOT_X86_64, "root", hash, data_dev,
					 sizeof data_dev)) < 0)
			return ret;
		r->dev = data_dev;
	}
	if (verity && r->gpt_auto && (!r->hash_dev || !r->hash_dev[0])) {
		if ((ret = gpt_auto_find(GPT_ROOT_X86_64_VERITY, "root verity", hash + len - 16,
					 hash_dev, sizeof hash_dev)) < 0)
			return ret;
		r->hash_dev = hash_dev;
	}
	if (!r->dev || !r->dev[0] || !r->target || !r->target[0]) {
		log_error("root: no device or no target given");
		return -EINVAL;
	}
	dev = r->dev;
	if ((ret = wait_for_path(r->dev, ROOT_WAIT_MS)) < 0)
		return log_err(ret, "root: %s", r->dev);
	if ((ret = mkdir_parents(r->target, 0755)) < 0)
		return log_err(ret, "root: mkdir %s", r->target);
	if (verity) {
		if ((ret = verity_open(r, hash, len)) < 0)
			return ret;
		dev = "/dev/mapper/" VERITY_NAME;
		if (r->full_check && (ret = verity_read_all(dev)) < 0) {
			verity_close();
			return ret;
		}
	}
	for (size_t i = 0; types[i]; i++) {
		if (mount(dev, r->target, types[i], MS_RDONLY, NULL) == 0) {
			log_info("root: %s (%s) mounted read-only at %s", dev, types[i], r->target);
			return 0;
		}
		/* EINVAL: not this type; ENODEV: type unknown to the kernel; else: give up */
		ret = -errno;
		if (ret != -EINVAL && ret != -ENODEV)
			break;
	}
	log_err(ret, "root: mounting %s read-only at %s as %s%s%s", dev, r->target, types[0],
		types == guesses ? ", erofs or squashfs" : "",
		verity && ret == -EIO ? " (a block does not match the root hash)" : "");
	if (dev != r->dev)
		verity_close();
	return ret;
}

static const char *const state_binds[][2] = {
    {"var", "/var"},
    {"kubernetes", "/etc/kubernetes"},
    {"etccni", "/etc/cni"},
    {"opt", "/opt"},
};
#define N_STATE_BINDS (sizeof state_binds / sizeof state_binds[0])

static int path_join(char *out, size_t cap, const char *a, const char *sep, const char *b)
{
	if ((size_t)snprintf(out, cap, "%s%s%s", a, sep, b) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

int boot_root_read_files(const char *root, const char *const *paths)
{
	char path[PATH_MAX], *buf = malloc(VERITY_READ_CHUNK);
	int ret = buf ? 0 : -ENOMEM;

	for (size_t i = 0; ret == 0 && paths[i]; i++) {
		ssize_t n;
		int fd;

		if (path_join(path, sizeof path, root, "", paths[i]) < 0 ||
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue; /* not on this root: nothing to run from it */
		while ((n = read(fd, buf, VERITY_READ_CHUNK)) > 0)
			;
		if (n < 0) {
			ret = -errno;
			log_err(ret, "root: %s does not match the root hash: the root is refused",
				paths[i]);
		}
		close(fd);
	}
	free(buf);
	return ret;
}

static int bind_one(const char *state, const char *newroot, size_t i)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct stat st;
	int r;

	if ((r = path_join(src, sizeof src, state, "/", state_binds[i][0])) < 0 ||
	    (r = path_join(dst, sizeof dst, newroot, "", state_binds[i][1])) < 0)
		return log_err(r, "binds: %s%s", newroot, state_binds[i][1]);
	if ((r = mkdir_parents(src, 0755)) < 0)
		return log_err(r, "binds: mkdir %s", src);
	if (lstat(dst, &st) < 0) {
		if (errno != ENOENT)
			return log_err(-errno, "binds: %s", dst);
		if ((r = mkdir_parents(dst, 0755)) == -EROFS) {
			log_error("binds: %s is missing and the root is read-only", dst);
			return -ENOENT;
		}
		if (r < 0)
			return log_err(r, "binds: mkdir %s", dst);
	} else if (!S_ISDIR(st.st_mode)) {
		/* a symlink would be followed in the initramfs, not in newroot */
		log_error("binds: %s is not a directory", dst);
		return -ENOTDIR;
	}
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return log_err(-errno, "binds: %s on %s", src, dst);
	return 0;
}

int boot_bind_state(const char *state, const char *newroot)
{
	char dst[PATH_MAX];
	int r;

	for (size_t i = 0; i < N_STATE_BINDS; i++) {
		if ((r = bind_one(state, newroot, i)) == 0)
			continue;
		while (i-- > 0)
			if (path_join(dst, sizeof dst, newroot, "", state_binds[i][1]) == 0)
				umount2(dst, MNT_DETACH);
		return r;
	}
	log_info("binds: /var, /etc/kubernetes, /etc/cni and /opt of %s are on %s", newroot, state);
	return 0;
}

/* Deletes what is inside dirfd (which it closes), staying on dev: a directory on another
 * device is a mount point and is left alone, with everything in it. Counts removed entries. */
static void remove_children(int dirfd, dev_t dev, int depth, unsigned *count)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;

	if (!d) {
		close(dirfd);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;
		int isdir, fd;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		isdir = S_ISDIR(st.st_mode);
		if (isdir) {
			if (depth >= RM_MAX_DEPTH)
				continue;
			fd = openat(dirfd, e->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			/* fstat the opened directory: a mount raced onto it is not ours */
			if (fstat(fd, &st) < 0 || st.st_dev != dev) {
				close(fd);
				continue;
			}
			remove_children(fd, dev, depth + 1, count);
		}
		if (unlinkat(dirfd, e->d_name, isdir ? AT_REMOVEDIR : 0) == 0)
			(*count)++;
	}
	closedir(d);
}

static int move_api_mounts(const char *newroot, dev_t rootdev)
{
	static const char *const api[] = {"/dev", "/proc", "/sys", "/run"};
	char dst[PATH_MAX];
	struct stat st;
	int r;

	for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
		if (stat(api[i], &st) < 0 || st.st_dev == rootdev)
			continue; /* not mounted: nothing to carry over */
		if ((r = path_join(dst, sizeof dst, newroot, "", api[i])) < 0)
			return log_err(r, "switch_root: %s%s", newroot, api[i]);
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			return log_err(-errno, "switch_root: mkdir %s", dst);
		if (mount(api[i], dst, NULL, MS_MOVE, NULL) < 0)
			return log_err(-errno, "switch_root: moving %s to %s", api[i], dst);
	}
	return 0;
}

int boot_switch_root(const char *newroot)
{
	struct statfs sfs;
	struct stat root, nr;
	unsigned count = 0;
	int oldroot, r;

	if (getpid() != 1) {
		log_error("switch_root: refused: not PID 1");
		return -EPERM;
	}
	if (statfs("/", &sfs) < 0)
		return log_err(-errno, "switch_root: statfs /");
	/* the files deleted below must be the initramfs's, never a disk's */
	if (sfs.f_type != RAMFS_MAGIC && sfs.f_type != TMPFS_MAGIC) {
		log_error("switch_root: refused: / is not the initramfs (ramfs or tmpfs)");
		return -EINVAL;
	}
	if (stat("/", &root) < 0 || stat(newroot, &nr) < 0)
		return log_err(-errno, "switch_root: stat %s", newroot);
	if (!S_ISDIR(nr.st_mode) || nr.st_dev == root.st_dev) {
		log_error("switch_root: refused: %s is not a mount point", newroot);
		return -EINVAL;
	}
	if ((r = move_api_mounts(newroot, root.st_dev)) < 0)
		return r;
	oldroot = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (oldroot < 0)
		return log_err(-errno, "switch_root: open /");
	if (chdir(newroot) < 0 || mount(newroot, "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0) {
		r = log_err(-errno, "switch_root: making %s the root", newroot);
		close(oldroot);
		return r;
	}
	/* Only now, with the new root in place, free the initramfs's memory: the old root is
	 * reachable through oldroot alone, and the moved mounts left only empty directories. */
	remove_children(oldroot, root.st_dev, 0, &count);
	log_info("switch_root: %s is the root now; %u initramfs entries freed", newroot, count);
	return 0;
}
