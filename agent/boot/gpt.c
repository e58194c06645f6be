/* The GUID partition table, read for the roothash= convention of systemd and mkosi: the
 * kernel does not expose partition type GUIDs, so the partition of a given type and unique
 * GUID is found by reading the GPT of each whole disk (primary header at LBA 1, the backup at
 * the last LBA; both CRC32s checked; entry count and size bounded) and mapping the entry's
 * number to its partition device through sysfs. The parsing is pure (gpt_header_parse,
 * gpt_entries_find); the rest reads devices. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/base.h"
#include "boot.h"

#define GPT_HEADER_MIN 92

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t crc(const uint8_t *p, size_t len)
{
	uLong c = crc32(0L, Z_NULL, 0);

	while (len > 0) { /* zlib's length is a uInt */
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

int gpt_header_parse(const uint8_t *sec, size_t sector_size, uint64_t lba, struct gpt_header *h)
{
	uint8_t copy[GPT_SECTOR_MAX];
	uint32_t size;

	if (sector_size < 512 || sector_size > GPT_SECTOR_MAX || memcmp(sec, "EFI PART", 8))
		return -EBADMSG;
	size = le32(sec + 12);
	if (size < GPT_HEADER_MIN || size > sector_size)
		return -EBADMSG;
	memcpy(copy, sec, size);
	memset(copy + 16, 0, 4);
	if (crc(copy, size) != le32(sec + 16))
		return -EBADMSG;
	h->my_lba = le64(sec + 24);
	h->alt_lba = le64(sec + 32);
	h->entries_lba = le64(sec + 72);
	h->n_entries = le32(sec + 80);
	h->entry_size = le32(sec + 84);
	h->entries_crc = le32(sec + 88);
	/* entries_lba times the sector size must not overflow the read offset */
	if (h->my_lba != lba || h->entries_lba < 2 || h->entries_lba > (uint64_t)1 << 48 ||
	    h->n_entries == 0 || h->n_entries > GPT_ENTRIES_MAX || h->entry_size < GPT_ENTRY_MIN ||
	    h->entry_size > GPT_ENTRY_MAX || h->entry_size % 8)
		return -EBADMSG;
	return 0;
}

int gpt_entries_find(const struct gpt_header *h, const uint8_t *arr, size_t len,
		     const uint8_t type[16], const uint8_t uuid[16])
{
	size_t need = (size_t)h->n_entries * h->entry_size;
	int found = -ENOENT;

	if (h->n_entries > GPT_ENTRIES_MAX || h->entry_size < GPT_ENTRY_MIN ||
	    h->entry_size > GPT_ENTRY_MAX || len < need || crc(arr, need) != h->entries_crc)
		return -EBADMSG;
	for (uint32_t i = 0; i < h->n_entries; i++) {
		const uint8_t *e = arr + (size_t)i * h->entry_size;

		if (memcmp(e, type, 16) || memcmp(e + 16, uuid, 16))
			continue;
		if (le64(e + 32) > le64(e + 40))
			return -EBADMSG; /* first LBA after the last */
		if (found > 0)
			return -ENOTUNIQ; /* two partitions claim the same root hash */
		found = (int)i + 1;
	}
	return found;
}

int gpt_guid_parse(const char *s, uint8_t out[16])
{
	uint8_t b[16];
	size_t n = 0;

	for (size_t i = 0; s[i]; i++) {
		int hi, lo;

		if (s[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23))
			continue;
		if (n == 16 || (hi = hex_digit(s[i])) < 0 || !s[i + 1] ||
		    (lo = hex_digit(s[i + 1])) < 0)
			return -EINVAL;
		b[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (n != 16)
		return -EINVAL;
	gpt_guid_from_bytes(b, out);
	return 0;
}

void gpt_guid_from_bytes(const uint8_t b[16], uint8_t out[16])
{
	/* the string's (and systemd's sd_id128's) order to the GPT's: the first three fields
	 * little-endian, the last two as they are */
	static const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};

	for (int i = 0; i < 16; i++)
		out[i] = b[order[i]];
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* One header (at lba) and its entries; the partition number, -ENOENT, or another -errno. */
static int disk_find_at(int fd, size_t ss, uint64_t lba, const uint8_t type[16],
			const uint8_t uuid[16])
{
	uint8_t sec[GPT_SECTOR_MAX];
	struct gpt_header h;
	uint8_t *arr;
	size_t len;
	int r;

	if ((r = read_at(fd, sec, ss, lba * ss)) < 0 ||
	    (r = gpt_header_parse(sec, ss, lba, &h)) < 0)
		return r;
	len = (size_t)h.n_entries * h.entry_size;
	if (!(arr = malloc(len)))
		return -ENOMEM;
	if ((r = read_at(fd, arr, len, h.entries_lba * ss)) == 0)
		r = gpt_entries_find(&h, arr, len, type, uuid);
	free(arr);
	return r;
}

int gpt_disk_find(const char *disk, const uint8_t type[16], const uint8_t uuid[16])
{
	uint64_t size = 0;
	int fd, ss = 512, r;

	if ((fd = open(disk, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return -errno;
	if (ioctl(fd, BLKSSZGET, &ss) < 0 || ss < 512 || ss > GPT_SECTOR_MAX)
		ss = 512;
	if (ioctl(fd, BLKGETSIZE64, &size) < 0) { /* an image file */
		off_t end = lseek(fd, 0, SEEK_END);

		size = end > 0 ? (uint64_t)end : 0;
	}
	r = disk_find_at(fd, (size_t)ss, 1, type, uuid);
	/* the backup header at the last LBA, when the primary is unreadable or broken */
	if ((r == -EBADMSG || r == -EIO) && size / (uint64_t)ss > 2)
		r = disk_find_at(fd, (size_t)ss, size / (uint64_t)ss - 1, type, uuid);
	close(fd);
	return r;
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read_full(fd, buf, cap);
	close(fd);
	return n;
}

/* The partition numbered partno of the disk named disk: its /dev path into dev. */
static int part_dev(const char *disk, int partno, char *dev, size_t cap)
{
	char path[PATH_MAX], num[16];
	struct dirent *e;
	DIR *d;
	int r = -ENOENT;

	snprintf(path, sizeof path, "/sys/class/block/%s", disk);
	if (!(d = opendir(path)))
		return -errno;
	while ((e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof path, "/sys/class/block/%s/%s/partition", disk,
			     e->d_name) >= (int)sizeof path ||
		    (n = read_small(path, num, sizeof num - 1)) <= 0)
			continue;
		num[n] = '\0';
		if (atoi(num) != partno)
			continue;
		r = snprintf(dev, cap, "/dev/%s", e->d_name) < (int)cap ? 0 : -ENAMETOOLONG;
		break;
	}
	closedir(d);
	return r;
}

/* One pass over the whole disks: 0 with the device in dev, -ENOENT, -ENOTUNIQ. */
static int scan(const uint8_t type[16], const uint8_t uuid[16], char *dev, size_t cap)
{
	char path[PATH_MAX], disk[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir("/sys/class/block");
	int r = -ENOENT;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int p;

		if (e->d_name[0] == '.' ||
		    snprintf(path, sizeof path, "/sys/class/block/%s/partition", e->d_name) >=
			(int)sizeof path ||
		    access(path, F_OK) == 0) /* a partition, not a disk */
			continue;
		snprintf(disk, sizeof disk, "/dev/%s", e->d_name);
		if ((p = gpt_disk_find(disk, type, uuid)) == -ENOTUNIQ) {
			r = p;
			break;
		}
		if (p <= 0)
			continue;
		if (r == 0) { /* a second disk holds it too */
			r = -ENOTUNIQ;
			break;
		}
		if (part_dev(e->d_name, p, dev, cap) == 0)
			r = 0;
	}
	closedir(d);
	return r;
}

int gpt_find_partition(const uint8_t type[16], const uint8_t uuid[16], char *dev, size_t cap,
		       int timeout_ms)
{
	uint64_t t0 = monotonic_ms();
	int r;

	/* disks may still be probing, and their partitions appear after the disk: bounded */
	while ((r = scan(type, uuid, dev, cap)) == -ENOENT &&
	       monotonic_ms() - t0 < (uint64_t)timeout_ms)
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000000L}, NULL);
	return r;
}
