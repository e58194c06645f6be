/* libFuzzer target: the LUKS2 header check (a state disk is attacker-controlled input). The
 * input is laid out as a header: when it starts with the LUKS2 magic, the checksum is made
 * right first, so the fuzzer reaches the JSON checks; inputs of 32 KiB or more also carry a
 * secondary header in their second half, or, without a primary, at 16 KiB (the first offset
 * of the scan for a lost primary). Refusals carry one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "disk/disk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* hdr_size, hdr_offset, checksum_alg and the checksum made right, so the fuzzer reaches the
 * JSON checks */
static void fix_header(uint8_t *h, size_t hdr, size_t off)
{
	br_sha256_context c;

	for (int i = 0; i < 8; i++) {
		h[15 - i] = (uint8_t)(hdr >> (8 * i));
		h[263 - i] = (uint8_t)(off >> (8 * i));
	}
	memcpy(h + 72, "sha256", 7);
	memset(h + 448, 0, 64);
	br_sha256_init(&c);
	br_sha256_update(&c, h, hdr);
	br_sha256_out(&c, h + 448);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b;
	struct luks2_info info;
	char err[200] = "";
	int r;

	if (size > 65536)
		return 0;
	b = calloc(1, size < 16384 ? 16384 : size);
	if (!b)
		return 0;
	memcpy(b, data, size);
	if (size >= 16 && !memcmp(b, "LUKS\xba\xbe", 6)) {
		size_t n = size < 16384 ? 16384 : size;
		/* from 32 KiB on, the second half is a secondary header (when it says SKUL) */
		size_t hdr = (n >= 32768 ? n / 2 : n) / 4096 * 4096;

		fix_header(b, hdr, 0);
		if (hdr * 2 <= n && !memcmp(b + hdr, "SKUL\xba\xbe", 6))
			fix_header(b + hdr, hdr, hdr);
		size = n;
	} else if (size >= 32768 && !memcmp(b + 16384, "SKUL\xba\xbe", 6)) {
		/* no primary: the secondary at libcryptsetup's first scan offset */
		fix_header(b + 16384, 16384, 16384);
	}
	r = luks2_classify(b, size, &info, err, sizeof err);
	if (r < 0 && (r != -EINVAL || strncmp(err, "LUKS2 header: ", 14)))
		abort();
	if (r > DISK_INITIALIZED)
		abort();
	free(b);
	return 0;
}
