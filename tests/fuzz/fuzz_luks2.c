/* libFuzzer target: the LUKS2 header check (a state disk is attacker-controlled input). The
 * input is laid out as a header: when it starts with the LUKS2 magic, the checksum is made
 * right first, so the fuzzer reaches the JSON checks. Refusals carry one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "disk/disk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		br_sha256_context h;
		size_t n = size < 16384 ? 16384 : size;

		memset(b + 8, 0, 8); /* hdr_size: the buffer rounded down to 4 KiB */
		for (int i = 0; i < 8; i++)
			b[15 - i] = (uint8_t)((n / 4096 * 4096) >> (8 * i));
		memcpy(b + 72, "sha256", 7);
		memset(b + 448, 0, 64);
		br_sha256_init(&h);
		br_sha256_update(&h, b, n / 4096 * 4096);
		br_sha256_out(&h, b + 448);
		size = n;
	}
	r = luks2_classify(b, size, &info, err, sizeof err);
	if (r < 0 && (r != -EINVAL || strncmp(err, "LUKS2 header: ", 14)))
		abort();
	if (r > DISK_INITIALIZED)
		abort();
	free(b);
	return 0;
}
