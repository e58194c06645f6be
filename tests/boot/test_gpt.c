/* The GPT reader of the roothash= convention: headers and entry arrays built here (both
 * CRC32s right, then broken one at a time), the GUID byte order checked against sfdisk's,
 * and mkosi 14's derivation (the root hash's first 128 bits the root partition's UUID, its
 * last 128 bits the verity partition's) found on an image sfdisk wrote. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "boot/boot.h"
#include "flow/node.h"
#include "harness.h"

#define ROOT_TYPE   "4f68bce3-e8cd-4db1-96e7-fbcaf984b709"
#define VERITY_TYPE "2c7357ed-ebd2-46d9-aec1-23d437ec2bf5"

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* The CRC32s of a header (at lba) and its n entries of size bytes, made right. */
static void fix(uint8_t hdr[512], const uint8_t *arr, uint32_t n, uint32_t size, uint64_t lba)
{
	memcpy(hdr, "EFI PART", 8);
	put32(hdr + 8, 0x00010000);
	put32(hdr + 12, 92);
	put64(hdr + 24, lba);
	put64(hdr + 72, 2);
	put32(hdr + 80, n);
	put32(hdr + 84, size);
	put32(hdr + 88, n * size <= 128 * 128 ? (uint32_t)crc32(0, arr, n * size) : 0);
	put32(hdr + 16, 0);
	put32(hdr + 16, (uint32_t)crc32(0, hdr, 92));
}

static uint8_t root_t[16], verity_t[16], id_a[16], id_b[16];

/* 128 entries: #3 the root of id_a, #7 the verity partition of id_b */
static void table(uint8_t hdr[512], uint8_t arr[128 * 128])
{
	memset(hdr, 0, 512);
	memset(arr, 0, 128 * 128);
	gpt_guid_parse(ROOT_TYPE, root_t);
	gpt_guid_parse(VERITY_TYPE, verity_t);
	gpt_guid_parse("01234567-89ab-cdef-0123-456789abcdef", id_a);
	gpt_guid_parse("fedcba9876543210fedcba9876543210", id_b);
	memcpy(arr + 2 * 128, root_t, 16);
	memcpy(arr + 2 * 128 + 16, id_a, 16);
	put64(arr + 2 * 128 + 32, 2048);
	put64(arr + 2 * 128 + 40, 4095);
	memcpy(arr + 6 * 128, verity_t, 16);
	memcpy(arr + 6 * 128 + 16, id_b, 16);
	put64(arr + 6 * 128 + 32, 4096);
	put64(arr + 6 * 128 + 40, 4200);
	fix(hdr, arr, 128, 128, 1);
}

TEST(gpt_guid_is_stored_mixed_endian)
{
	static const uint8_t want[16] = {0xe3, 0xbc, 0x68, 0x4f, 0xcd, 0xe8, 0xb1, 0x4d,
					 0x96, 0xe7, 0xfb, 0xca, 0xf9, 0x84, 0xb7, 0x09};
	static const uint8_t plain[16] = {0x4f, 0x68, 0xbc, 0xe3, 0xe8, 0xcd, 0x4d, 0xb1,
					  0x96, 0xe7, 0xfb, 0xca, 0xf9, 0x84, 0xb7, 0x09};
	uint8_t g[16], h[16];

	CHECK(gpt_guid_parse(ROOT_TYPE, g) == 0);
	CHECK_BYTES(g, want, 16);
	gpt_guid_from_bytes(plain, h);
	CHECK_BYTES(h, want, 16);
	CHECK(gpt_guid_parse("4f68bce3e8cd4db196e7fbcaf984b709", h) == 0);
	CHECK_BYTES(h, want, 16);
	CHECK(gpt_guid_parse("4f68bce3-e8cd-4db1-96e7-fbcaf984b70", h) == -EINVAL);
	CHECK(gpt_guid_parse("4f68bce3-e8cd-4db1-96e7-fbcaf984b7090", h) == -EINVAL);
	CHECK(gpt_guid_parse("4f68bce3-e8cd-4db1-96e7-fbcaf984b7g9", h) == -EINVAL);
	CHECK(gpt_guid_parse("4f68bce-3e8cd-4db1-96e7-fbcaf984b709", h) == -EINVAL);
}

TEST(gpt_finds_the_entry_of_type_and_uuid)
{
	static uint8_t hdr[512], arr[128 * 128];
	struct gpt_header h;

	table(hdr, arr);
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == 0);
	CHECK(h.n_entries == 128 && h.entry_size == 128 && h.entries_lba == 2);
	CHECK(gpt_entries_find(&h, arr, sizeof arr, root_t, id_a) == 3);
	CHECK(gpt_entries_find(&h, arr, sizeof arr, verity_t, id_b) == 7);
	/* the type must match too, and the UUID */
	CHECK(gpt_entries_find(&h, arr, sizeof arr, verity_t, id_a) == -ENOENT);
	CHECK(gpt_entries_find(&h, arr, sizeof arr, root_t, id_b) == -ENOENT);
}

TEST(gpt_refuses_bad_crcs_and_bounds)
{
	static uint8_t hdr[512], arr[128 * 128];
	struct gpt_header h;

	table(hdr, arr);
	hdr[40] ^= 1; /* the header's CRC no longer matches */
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
	table(hdr, arr);
	CHECK(gpt_header_parse(hdr, 512, 2, &h) == -EBADMSG); /* not where it says it is */
	CHECK(gpt_header_parse(hdr, 256, 1, &h) == -EBADMSG);
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == 0);
	arr[5 * 128 + 100] ^= 1; /* the array's CRC no longer matches */
	CHECK(gpt_entries_find(&h, arr, sizeof arr, root_t, id_a) == -EBADMSG);
	arr[5 * 128 + 100] ^= 1;
	CHECK(gpt_entries_find(&h, arr, sizeof arr - 1, root_t, id_a) == -EBADMSG); /* short */
	fix(hdr, arr, 2000, 128, 1); /* too many entries */
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
	fix(hdr, arr, 16, 64, 1); /* entries too small */
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
	fix(hdr, arr, 16, 132, 1); /* not a multiple of 8 */
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
	put32(hdr + 12, 600); /* header larger than its sector */
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
	fix(hdr, arr, 128, 128, 1);
	memcpy(hdr, "EFI PARS", 8);
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == -EBADMSG);
}

TEST(gpt_refuses_two_partitions_for_one_root_hash_and_inverted_extents)
{
	static uint8_t hdr[512], arr[128 * 128];
	struct gpt_header h;

	table(hdr, arr);
	memcpy(arr + 9 * 128, arr + 2 * 128, 128);
	fix(hdr, arr, 128, 128, 1);
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == 0);
	CHECK(gpt_entries_find(&h, arr, sizeof arr, root_t, id_a) == -ENOTUNIQ);
	table(hdr, arr);
	put64(arr + 2 * 128 + 40, 100); /* last LBA before the first */
	fix(hdr, arr, 128, 128, 1);
	CHECK(gpt_header_parse(hdr, 512, 1, &h) == 0);
	CHECK(gpt_entries_find(&h, arr, sizeof arr, root_t, id_a) == -EBADMSG);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* An image as mkosi 14 lays it out (sfdisk, uuid=UUID(roothash[:32]) for the root and
 * UUID(roothash[-32:]) for its verity partition), read back from a file, also through the
 * backup header when the primary is zeroed. */
TEST(gpt_reads_an_sfdisk_image_with_mkosi_partition_uuids)
{
	static const char hash[] =
	    "c483bf66d41dba29a11c4417321ab459f8d5f8e1c66d2081d45fe6893059b909";
	unsigned char hb[32];
	uint8_t t[16], v[16], u1[16], u2[16];
	char dir[64], u1s[40], u2s[40];
	const char *img;

	if (system("command -v sfdisk >/dev/null") != 0) {
		printf("FAIL gpt_reads_an_sfdisk_image_with_mkosi_partition_uuids: no sfdisk "
		       "(apt-get install fdisk)\n");
		return;
	}
	harness_unhex(hash, hb, sizeof hb);
	/* Python's str(uuid.UUID(h[:32])): the hex as it stands, 8-4-4-4-12, no bits forced */
	snprintf(u1s, sizeof u1s, "%.8s-%.4s-%.4s-%.4s-%.12s", hash, hash + 8, hash + 12, hash + 16,
		 hash + 20);
	snprintf(u2s, sizeof u2s, "%.8s-%.4s-%.4s-%.4s-%.12s", hash + 32, hash + 40, hash + 44,
		 hash + 48, hash + 52);
	harness_tmpdir(dir, "gpt");
	img = harness_path(dir, "disk.img");
	CHECK(sh("truncate -s 16M %s && printf 'label: gpt\\nsize=4M, type=" ROOT_TYPE
		 ", uuid=%s\\nsize=2M, type=" VERITY_TYPE ", uuid=%s\\n' | sfdisk -q %s",
		 img, u1s, u2s, img) == 0);
	gpt_guid_parse(ROOT_TYPE, t);
	gpt_guid_parse(VERITY_TYPE, v);
	gpt_guid_from_bytes(hb, u1);
	gpt_guid_from_bytes(hb + 16, u2);
	CHECK(gpt_disk_find(img, t, u1) == 1);
	CHECK(gpt_disk_find(img, v, u2) == 2);
	CHECK(gpt_disk_find(img, v, u1) == -ENOENT);
	/* the primary header gone: the backup at the last LBA answers */
	CHECK(sh("dd if=/dev/zero of=%s bs=512 seek=1 count=1 conv=notrunc status=none", img) == 0);
	CHECK(gpt_disk_find(img, v, u2) == 2);
	CHECK(sh("truncate -s 15M %s", img) == 0); /* and now no header at all */
	CHECK(gpt_disk_find(img, v, u2) == -EBADMSG);
	harness_rmtree(dir);
}

TEST(roothash_on_the_command_line_names_the_gpt_root)
{
	static const char h[] = "c483bf66d41dba29a11c4417321ab459f8d5f8e1c66d2081d45fe6893059b909";
	char cmd[512], arena[1024], err[256];
	struct node_config c;

	node_config_defaults(&c);
	snprintf(cmd, sizeof cmd, "console=ttyS0 roothash=%s", h);
	CHECK(node_config_cmdline(&c, cmd, arena, sizeof arena, err, sizeof err) == 0);
	CHECK(c.root_gpt_auto == 1 && c.verity_roothash && !strcmp(c.verity_roothash, h));
	CHECK(!c.real_root && !c.verity_lazy);
	/* root= stays an override of the data device */
	node_config_defaults(&c);
	snprintf(cmd, sizeof cmd, "root=/dev/vdc roothash=%s constel.verity.check=mount", h);
	CHECK(node_config_cmdline(&c, cmd, arena, sizeof arena, err, sizeof err) == 0);
	CHECK(c.root_gpt_auto == 1 && !strcmp(c.real_root, "/dev/vdc") && c.verity_lazy);
	/* refused: not hex, too short for two 128-bit halves, a second different hash */
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "roothash=xyz", arena, sizeof arena, err, sizeof err) ==
	      -EINVAL);
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "roothash=c483bf66d41dba29a11c4417321ab459", arena,
				  sizeof arena, err, sizeof err) == -EINVAL);
	node_config_defaults(&c);
	snprintf(cmd, sizeof cmd, "roothash=%s constel.verity.roothash=%.62s00", h, h);
	CHECK(node_config_cmdline(&c, cmd, arena, sizeof arena, err, sizeof err) == -EINVAL);
	node_config_defaults(&c);
	snprintf(cmd, sizeof cmd, "roothash=%s constel.verity.check=some", h);
	CHECK(node_config_cmdline(&c, cmd, arena, sizeof arena, err, sizeof err) == -EINVAL);
	/* without roothash= nothing is looked for on the disks */
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "root=/dev/vda", arena, sizeof arena, err, sizeof err) == 0);
	CHECK(!c.root_gpt_auto && !c.verity_roothash);
}
