/* The prefix's zlib and libdm as the agent links them (tests/deps/test_deps_tables.sh): their
 * tables and directories, which deps/build.sh moves out of the file into .bss, hold what the
 * stored ones held.
 *   tables_check dm        prints dm_dir() and dm_sysfs_dir()
 *   tables_check gunzip    inflates the gzip stream on stdin (zlib checks its CRC-32) and
 *                          prints the output's length and CRC-32, and crc32("123456789") */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdevmapper.h>
#include <zlib.h>

static int gunzip(void)
{
	static unsigned char in[1 << 22], out[65536];
	size_t n = fread(in, 1, sizeof in, stdin);
	z_stream z = {0};
	unsigned long total = 0, crc = crc32(0L, Z_NULL, 0);
	int r = Z_OK;

	if (n == sizeof in || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return 1;
	z.next_in = in;
	z.avail_in = (uInt)n;
	while (r != Z_STREAM_END) {
		z.next_out = out;
		z.avail_out = sizeof out;
		r = inflate(&z, Z_NO_FLUSH);
		if (r != Z_OK && r != Z_STREAM_END) {
			printf("inflate: %d %s\n", r, z.msg ? z.msg : "");
			return 1;
		}
		crc = crc32(crc, out, (uInt)(sizeof out - z.avail_out));
		total += sizeof out - z.avail_out;
	}
	inflateEnd(&z);
	printf("%lu %08lx %08lx\n", total, crc,
	       crc32(crc32(0L, Z_NULL, 0), (const unsigned char *)"123456789", 9));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "dm")) {
		printf("%s %s\n", dm_dir(), dm_sysfs_dir());
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "gunzip"))
		return gunzip();
	fprintf(stderr, "usage: tables_check dm|gunzip\n");
	return 2;
}
