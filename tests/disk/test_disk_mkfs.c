/* disk_mkfs_opts, the ext4 of a first boot, on sparse image files with the host's mke2fs: the
 * options the no-wipe disk's safety depends on (docs/wipe.md, the audit) are what mke2fs
 * actually made (the journal written whole, no inode tables, the journal's size bounded), and
 * what it writes does not grow with the disk: a 16 GiB image gets the journal of a 1 GiB one.
 * Skipped (PASS with a note) without /sbin/mke2fs and dumpe2fs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "disk/disk.h"
#include "harness.h"

#define MKE2FS "/sbin/mke2fs"

static int have_tools(void)
{
	return access(MKE2FS, X_OK) == 0 && system("command -v dumpe2fs >/dev/null 2>&1") == 0;
}

/* a sparse image of size bytes made by disk_mkfs_opts; its allocated bytes in *used */
static int mkfs_image(char *path, size_t len, uint64_t size, int no_wipe, uint64_t *used)
{
	struct stat st;
	int fd;

	snprintf(path, len, "/tmp/constel-mkfs-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	if (disk_mkfs_opts(MKE2FS, path, no_wipe) < 0 || stat(path, &st) < 0)
		return -EIO;
	*used = (uint64_t)st.st_blocks * 512;
	return 0;
}

/* the value of a dumpe2fs -h line ("Total journal size:  32M"), or "" */
static void dumpe2fs(const char *path, const char *key, char *out, size_t len)
{
	char cmd[512], line[512];
	FILE *p;

	out[0] = '\0';
	snprintf(cmd, sizeof cmd, "dumpe2fs -h %s 2>/dev/null", path);
	if (!(p = popen(cmd, "r")))
		return;
	while (fgets(line, sizeof line, p))
		if (!strncmp(line, key, strlen(key))) {
			char *v = line + strlen(key);

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, len, "%s", v);
		}
	pclose(p);
}

TEST(disk_mkfs_no_wipe_journal_is_bounded_and_written_whole)
{
	char small[64], big[64], js[64], jb[64], feat[512];
	uint64_t us = 0, ub = 0;

	if (!have_tools()) {
		printf("---- no %s or dumpe2fs: skipped\n", MKE2FS);
		return;
	}
	CHECK(mkfs_image(small, sizeof small, 1ull << 30, 1, &us) == 0);
	CHECK(mkfs_image(big, sizeof big, 16ull << 30, 1, &ub) == 0);
	dumpe2fs(small, "Total journal size:", js, sizeof js);
	dumpe2fs(big, "Total journal size:", jb, sizeof jb);
	printf("---- journal %s at 1 GiB, %s at 16 GiB; written %llu and %llu KiB\n", js, jb,
	       (unsigned long long)(us >> 10), (unsigned long long)(ub >> 10));
	CHECK(!strcmp(js, "32M") && !strcmp(jb, "32M"));
	/* lazy_journal_init=0: the journal is written (a replay reads past the last commit) */
	CHECK(us >= (32ull << 20) && ub >= (32ull << 20));
	/* lazy_itable_init=1, the bounded journal: 16 GiB writes at most 8 MiB more than 1 GiB
	 * (mke2fs's default journal alone is 112 MiB more) */
	CHECK(ub < us + (8ull << 20));
	/* no discard, the inode tables left to the kernel: the group descriptors say so */
	dumpe2fs(big, "Filesystem features:", feat, sizeof feat);
	CHECK(strstr(feat, "has_journal") && strstr(feat, "metadata_csum"));
	unlink(small);
	unlink(big);
}

TEST(disk_mkfs_small_no_wipe_disk_keeps_mke2fs_own_journal_size)
{
	char small[64], js[64];
	uint64_t us = 0;

	if (!have_tools())
		return;
	/* the node tests' 128 MiB disks: a 32 MiB journal would not fit well; mke2fs's own 4M */
	CHECK(mkfs_image(small, sizeof small, 128ull << 20, 1, &us) == 0);
	dumpe2fs(small, "Total journal size:", js, sizeof js);
	CHECK(strcmp(js, "32M") != 0 && js[0]);
	unlink(small);
}

TEST(disk_mkfs_with_the_wipe_keeps_mke2fs_defaults)
{
	char big[64], jb[64];
	uint64_t ub = 0;

	if (!have_tools())
		return;
	CHECK(mkfs_image(big, sizeof big, 16ull << 30, 0, &ub) == 0);
	dumpe2fs(big, "Total journal size:", jb, sizeof jb);
	CHECK(strcmp(jb, "32M") != 0 && jb[0]);
	unlink(big);
}
