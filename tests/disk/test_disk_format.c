/* disk_format(), the one place that formats, on image files (host mode: no device-mapper)
 * made by cryptsetup: it reads the header again right before formatting and refuses a disk
 * whose primary header is gone while the secondary says initialized, even when the caller
 * believes the disk is new; the image stays byte-identical. A truly new image is formatted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "base/base.h"
#include "disk/disk.h"
#include "harness.h"
#include "luks_fixture.h"

static int zero_at(const char *path, long off)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd,
		 "dd if=/dev/zero of=%s bs=4096 seek=%ld count=1 conv=notrunc 2>/dev/null", path,
		 off / 4096);
	return system(cmd) == 0 ? 0 : -1;
}

static int digest(const char *path, uint8_t out[32])
{
	static uint8_t buf[1 << 16];
	br_sha256_context h;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	br_sha256_init(&h);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		br_sha256_update(&h, buf, n);
	fclose(f);
	br_sha256_out(&h, out);
	return 0;
}

/* A struct disk as disk_open would leave it for a new disk, without reading the header. */
static void as_new(struct disk *d, const char *path)
{
	memset(d, 0, sizeof *d);
	snprintf(d->path, sizeof d->path, "%s", path);
	snprintf(d->name, sizeof d->name, "constel-format-test");
	d->state = DISK_NEW;
	d->no_dm = 1;
}

TEST(disk_format_refuses_a_zeroed_primary_whose_secondary_says_initialized)
{
	char dir[64];
	const char *img;
	uint8_t before[32], after[32];
	struct disk d;
	int r;

	harness_tmpdir(dir, "format");
	img = harness_path(dir, "a.img");
	CHECK(luks_fixture_initialized(img) == 0 && zero_at(img, 0) == 0 &&
	      digest(img, before) == 0);
	as_new(&d, img);
	r = disk_format(&d);
	disk_close(&d);
	CHECK(r == -EEXIST);
	CHECK(digest(img, after) == 0);
	CHECK_BYTES(after, before, 32);
	harness_rmtree(dir);
}

TEST(disk_format_refuses_when_no_header_copy_is_intact)
{
	char dir[64];
	const char *img;
	uint8_t before[32], after[32];
	struct disk d;
	FILE *f;
	int r;

	harness_tmpdir(dir, "format");
	img = harness_path(dir, "b.img");
	CHECK(luks_fixture_initialized(img) == 0);
	/* one byte in each JSON area: both checksums fail, the magic stays */
	CHECK((f = fopen(img, "r+b")) != NULL);
	fseek(f, 5000, SEEK_SET);
	fputc('X', f);
	fseek(f, 16384 + 5000, SEEK_SET);
	fputc('X', f);
	fclose(f);
	CHECK(digest(img, before) == 0);
	as_new(&d, img);
	r = disk_format(&d);
	disk_close(&d);
	CHECK(r == -EINVAL);
	CHECK(digest(img, after) == 0);
	CHECK_BYTES(after, before, 32);
	harness_rmtree(dir);
}

TEST(disk_format_formats_an_image_without_any_header)
{
	char dir[64], cmd[256];
	const char *img;
	struct disk d;
	int r;

	harness_tmpdir(dir, "format");
	img = harness_path(dir, "c.img");
	snprintf(cmd, sizeof cmd, "truncate -s 20M %s", img);
	CHECK(system(cmd) == 0);
	as_new(&d, img);
	r = disk_format(&d);
	disk_close(&d);
	CHECK(r == 0);
	CHECK(disk_classify(img, NULL, cmd, sizeof cmd) == DISK_NOT_INITIALIZED);
	harness_rmtree(dir);
}

/* Bytes this process has read so far (/proc/self/io rchar), or -1. */
static long long rchar(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/self/io", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "rchar: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The boot reads the header twice (the disk phase, again before activation): an intact header
 * is decided from its two copies (2 x 16 KiB here), not from 8 MiB; a damaged copy still makes
 * the whole area be read and decided as before. */
TEST(disk_classify_reads_only_both_copies_of_an_intact_header)
{
	char dir[64], err[256];
	struct luks2_info info = {0};
	const char *img;
	long long before;
	int r;

	harness_tmpdir(dir, "format");
	img = harness_path(dir, "d.img");
	CHECK(luks_fixture_initialized(img) == 0);
	before = rchar();
	r = disk_classify(img, &info, err, sizeof err);
	CHECK(r == DISK_INITIALIZED && !info.damaged && info.hdr_size == 16384);
	CHECK(before >= 0 && rchar() - before <= 64 * 1024);
	/* the secondary zeroed: the primary alone decides, the whole area read, damaged said */
	CHECK(zero_at(img, 16384) == 0);
	before = rchar();
	r = disk_classify(img, &info, err, sizeof err);
	CHECK(r == DISK_INITIALIZED && info.damaged);
	CHECK(rchar() - before >= 2LL * LUKS2_HDR_MAX);
	/* the primary zeroed too: no copy, a new disk */
	CHECK(zero_at(img, 0) == 0);
	CHECK(disk_classify(img, &info, err, sizeof err) == DISK_NEW);
	harness_rmtree(dir);
}
