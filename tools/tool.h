/* What the host tools share: the peer validator (qemu-vtpm against a measurements file, or
 * the test-only dummy variant), reading small files. Static functions in a header because
 * each tool is one program of one source file. */
#ifndef CONSTEL_TOOL_H
#define CONSTEL_TOOL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/attest.h"
#include "base/base.h"
#include "cli.h"

/* Reads a whole file of at most max bytes into a NUL-terminated buffer; -EFBIG when it is
 * larger (nothing is cut off silently). */
static inline int tool_read_file_max(const char *path, size_t max, char **ret, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = max < 65536 ? max : 65536, n = 0;
	char *b, *nb;

	if (fd < 0)
		return -errno;
	b = malloc(cap + 1);
	for (;;) {
		ssize_t r;

		if (!b) {
			close(fd);
			return -ENOMEM;
		}
		if (n == cap) {
			if (cap == max) { /* one byte more would not fit */
				char c;

				r = read(fd, &c, 1);
				if (r == 0)
					break;
				free(b);
				close(fd);
				return r < 0 ? -errno : -EFBIG;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			nb = realloc(b, cap + 1);
			if (!nb)
				free(b);
			b = nb;
			continue;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(b);
			close(fd);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*ret = b;
	*len = n;
	return 0;
}

/* A small file (configuration, keys, hashes): at most 1 MiB. */
static inline int tool_read_file(const char *path, char **ret, size_t *len)
{
	return tool_read_file_max(path, 1 << 20, ret, len);
}

/* The validators for --attestation V and --measurements FILE. */
static inline int tool_validator(const char *variant, const char *mpath, struct measurements *m,
				 struct atls_validator *v, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!strcmp(variant, "dummy")) {
		log_warn("attestation variant dummy proves nothing about the node: for tests only");
		*v = attest_dummy_validator;
		return 0;
	}
	if (strcmp(variant, "qemu-vtpm"))
		return errbuf_set(err, errlen, "unknown attestation variant '%.32s'", variant);
	if (!mpath)
		return errbuf_set(err, errlen, "qemu-vtpm needs --measurements FILE");
	r = tool_read_file(mpath, &text, &len);
	if (r < 0)
		return errbuf_set(err, errlen, "%s: %s", mpath, strerror(-r));
	r = measurements_parse(text, len, m, err, errlen);
	free(text);
	if (r < 0)
		return r;
	qemu_vtpm_validator(v, m);
	return 0;
}

#endif
