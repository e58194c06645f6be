/* Wipe-on-free buffers for key material. The memory is mlock()ed when the kernel allows it
 * (so it is not swapped out) and cleared with explicit_bzero, which the compiler may not
 * drop, before it is returned to the allocator. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "base.h"

struct secret *secret_new(size_t len)
{
	struct secret *s;

	if (len > SIZE_MAX - sizeof *s)
		return NULL;
	s = calloc(1, sizeof *s + len);
	if (!s)
		return NULL;
	/* Best effort: without CAP_IPC_LOCK the limit may refuse it; the wipe still holds. */
	(void)mlock(s, sizeof *s + len);
	s->len = len;
	return s;
}

struct secret *secret_from(const void *src, size_t len)
{
	struct secret *s = secret_new(len);

	if (s && len)
		memcpy(s->bytes, src, len);
	return s;
}

int random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int secret_random(size_t len, struct secret **ret)
{
	struct secret *s = secret_new(len);
	int r;

	if (!s)
		return -ENOMEM;
	r = random_bytes(s->bytes, len);
	if (r < 0) {
		secret_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int secret_equal(const struct secret *a, const struct secret *b)
{
	unsigned char diff = 0;

	if (a->len != b->len)
		return 0;
	for (size_t i = 0; i < a->len; i++)
		diff |= a->bytes[i] ^ b->bytes[i];
	return diff == 0;
}

void secret_wipe(void *p, size_t len)
{
	if (p && len)
		explicit_bzero(p, len);
}

void secret_free(struct secret *s)
{
	size_t total;

	if (!s)
		return;
	total = sizeof *s + s->len;
	explicit_bzero(s, total);
	(void)munlock(s, total);
	free(s);
}
