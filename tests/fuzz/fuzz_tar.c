/* libFuzzer target: the streaming tar reader (component archives come from the network).
 * Every header's checksum is made right first (walking the input as the reader will: header,
 * data rounded to 512), so the fuzzer gets past the checksum to the fields, the GNU long
 * names and the PAX records; the corpus seeds PAX archives. The input is fed in pieces of
 * varying size, as gunzip hands them over; entry names are NUL-terminated and refusals are
 * one line. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_entry(void *ctx, const struct tar_entry *e, char *err, size_t errlen)
{
	(void)ctx, (void)err, (void)errlen;
	if (strnlen(e->name, sizeof e->name) == sizeof e->name ||
	    strnlen(e->link, sizeof e->link) == sizeof e->link)
		abort();
	return 0;
}

/* The checksum field of every header set to the sum of its bytes (field as blanks). */
static void fix_checksums(uint8_t *b, size_t size)
{
	size_t off = 0;

	while (off + 512 <= size) {
		uint8_t *h = b + off;
		uint64_t sum = 0, len = 0;
		int zero = 1;

		for (int i = 0; i < 512; i++)
			zero &= h[i] == 0;
		if (zero) {
			off += 512;
			continue;
		}
		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += h[i];
		snprintf((char *)h + 148, 8, "%06o", (unsigned)sum);
		h[155] = ' ';
		for (int i = 124; i < 136 && h[i] >= '0' && h[i] <= '7'; i++)
			len = len << 3 | (uint64_t)(h[i] - '0');
		if (len > size)
			break;
		off += 512 + (size_t)(len + 511) / 512 * 512;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tar_ops ops = {on_entry, NULL, NULL};
	struct tar_reader *t = malloc(sizeof *t);
	char err[256] = "";
	size_t off = 0, step = size ? (size_t)data[0] % 700 + 1 : 1;
	int r = 0;

	uint8_t *b = size ? malloc(size) : NULL;

	if (!t || (size && !b)) {
		free(t);
		free(b);
		return 0;
	}
	if (size)
		memcpy(b, data, size);
	fix_checksums(b, size);
	data = b;
	tar_init(t, &ops, NULL);
	while (off < size && r == 0) {
		size_t n = size - off < step ? size - off : step;

		r = tar_feed(t, data + off, n, err, sizeof err);
		off += n;
	}
	if (r == 0)
		r = tar_finish(t, err, sizeof err);
	if (r < 0 && (r != -EINVAL || strncmp(err, "tar: ", 5) || strchr(err, '\n')))
		abort();
	free(t);
	free(b);
	return 0;
}
