/* libFuzzer target: a GUID partition table (a disk's bytes: outside input). The input is a
 * 512-byte header sector and an entry array; the target writes the array's CRC32 into the
 * header and then the header's own CRC32 (size field bounded to the sector first), so every
 * input reaches the bounds checks and the entry parsing. A result is a valid 1-based entry
 * number or one of the documented errors. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "boot/boot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[512], type[16], uuid[16];
	struct gpt_header h;
	const uint8_t *arr;
	size_t len, need;
	uint32_t hsize, n, esize;
	int r;

	if (size < 512 + 32)
		return 0;
	memcpy(hdr, data, 512);
	/* the type and UUID looked for are the array's first entry's, so matches happen */
	arr = data + 512;
	len = size - 512;
	memcpy(type, arr, 16);
	memcpy(uuid, arr + 16, 16);
	n = (uint32_t)hdr[80] | (uint32_t)hdr[81] << 8 | (uint32_t)hdr[82] << 16 |
	    (uint32_t)hdr[83] << 24;
	esize = (uint32_t)hdr[84] | (uint32_t)hdr[85] << 8 | (uint32_t)hdr[86] << 16 |
		(uint32_t)hdr[87] << 24;
	need = (size_t)n * esize;
	put32(hdr + 88, (uint32_t)crc32(0, arr, (uInt)(need <= len ? need : len)));
	hsize = (uint32_t)hdr[12] | (uint32_t)hdr[13] << 8;
	if (hsize >= 92 && hsize <= 512) {
		put32(hdr + 12, hsize);
		put32(hdr + 16, 0);
		put32(hdr + 16, (uint32_t)crc32(0, hdr, hsize));
	}
	if (gpt_header_parse(hdr, 512, 1, &h) < 0)
		return 0;
	if (h.n_entries < 1 || h.n_entries > GPT_ENTRIES_MAX || h.entry_size < GPT_ENTRY_MIN ||
	    h.entry_size > GPT_ENTRY_MAX)
		abort(); /* the header check must bound what the array read uses */
	r = gpt_entries_find(&h, arr, len, type, uuid);
	if (r == 0 || (r > 0 && (uint32_t)r > h.n_entries) ||
	    (r < 0 && r != -ENOENT && r != -ENOTUNIQ && r != -EBADMSG))
		abort();
	return 0;
}
