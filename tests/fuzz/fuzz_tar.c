/* libFuzzer target: the streaming tar reader (component archives come from the network).
 * The input is fed in pieces of varying size, as gunzip hands them over; entry names are
 * NUL-terminated and refusals are one line. */
#include <errno.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tar_ops ops = {on_entry, NULL, NULL};
	struct tar_reader *t = malloc(sizeof *t);
	char err[256] = "";
	size_t off = 0, step = size ? (size_t)data[0] % 700 + 1 : 1;
	int r = 0;

	if (!t)
		return 0;
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
	return 0;
}
