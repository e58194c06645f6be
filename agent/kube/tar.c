/* A streaming tar reader (ustar, GNU long names, PAX path/linkpath): bytes go in as they come
 * out of the gunzip, entries come out through callbacks. It only parses; what an entry may
 * do on disk is decided by its caller (components.c). Every header is checked (checksum,
 * octal fields, sizes) and refused with one line; it is fuzzed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kube.h"

enum { T_HEADER, T_DATA, T_PAD, T_LONG, T_END };

static int octal(const uint8_t *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (n && (p[0] & 0x80)) /* base-256: GNU's form for large values */
		return -EINVAL;
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (v >> 60)
			return -EINVAL;
		v = v << 3 | (uint64_t)(p[i] - '0');
	}
	for (; i < n; i++)
		if (p[i] != ' ' && p[i] != 0)
			return -EINVAL;
	*out = v;
	return 0;
}

void tar_init(struct tar_reader *t, const struct tar_ops *ops, void *ctx)
{
	memset(t, 0, sizeof *t);
	t->ops = ops;
	t->ctx = ctx;
}

/* PAX records "LEN key=value\n": path and linkpath are used, others ignored. LEN is decimal
 * digits only (no blanks, no sign), then one space; it counts the whole record, which must
 * lie inside the header data. Every offset is checked before it is used. */
static int pax(struct tar_reader *t, char *err, size_t errlen)
{
	size_t i = 0;

	while (i < t->long_len) {
		const char *rec = t->long_buf + i, *key, *eq, *end;
		size_t avail = t->long_len - i, n = 0, d = 0, l;

		/* TAR_MAX_LONG has 4 digits: at most 5 keeps n far from overflowing */
		while (d < avail && d < 5 && rec[d] >= '0' && rec[d] <= '9')
			n = n * 10 + (size_t)(rec[d++] - '0');
		/* digits, a space, a key of at least one byte, '=', '\n': n >= d + 4 */
		if (!d || d >= avail || rec[d] != ' ' || n < d + 4 || n > avail ||
		    rec[n - 1] != '\n')
			return errbuf_set(err, errlen, "tar: bad PAX record at offset %zu", i);
		key = rec + d + 1;
		end = rec + n - 1; /* the '\n'; key < end */
		eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return errbuf_set(err, errlen, "tar: bad PAX record at offset %zu", i);
		l = (size_t)(end - (eq + 1));
		if ((size_t)(eq - key) == 4 && !memcmp(key, "path", 4)) {
			if (l >= sizeof t->pax_path || memchr(eq + 1, 0, l))
				return errbuf_set(err, errlen, "tar: bad or too long PAX path");
			memcpy(t->pax_path, eq + 1, l);
			t->pax_path[l] = 0;
		} else if ((size_t)(eq - key) == 8 && !memcmp(key, "linkpath", 8)) {
			if (l >= sizeof t->pax_link || memchr(eq + 1, 0, l))
				return errbuf_set(err, errlen, "tar: bad or too long PAX linkpath");
			memcpy(t->pax_link, eq + 1, l);
			t->pax_link[l] = 0;
		}
		i += n;
	}
	return 0;
}

static int header(struct tar_reader *t, char *err, size_t errlen)
{
	const uint8_t *h = t->hdr;
	uint64_t sum, mode, size, want = 0;
	struct tar_entry *e = &t->entry;
	int zero = 1;

	for (int i = 0; i < 512; i++)
		zero &= h[i] == 0;
	if (zero) { /* the end: two zero blocks, but one is enough to stop */
		t->state = T_END;
		return 0;
	}
	for (int i = 0; i < 512; i++)
		want += (i >= 148 && i < 156) ? ' ' : h[i];
	if (octal(h + 148, 8, &sum) < 0 || sum != want)
		return errbuf_set(err, errlen, "tar: header checksum mismatch");
	if (octal(h + 100, 8, &mode) < 0 || octal(h + 124, 12, &size) < 0)
		return errbuf_set(err, errlen, "tar: bad mode or size field");
	if (size > TAR_MAX_FILE)
		return errbuf_set(err, errlen, "tar: entry of %llu bytes is too large",
				  (unsigned long long)size);
	memset(e, 0, sizeof *e);
	e->type = h[156] ? (char)h[156] : '0';
	e->mode = (unsigned)(mode & 07777);
	e->size = size;
	t->remaining = size;
	t->pad = (512 - size % 512) % 512;
	if (e->type == 'L' || e->type == 'K' || e->type == 'x') {
		if (size >= TAR_MAX_LONG)
			return errbuf_set(err, errlen, "tar: long name record too large");
		t->long_type = e->type;
		t->long_len = 0;
		t->state = size ? T_LONG : T_PAD;
		if (!size)
			t->state = t->pad ? T_PAD : T_HEADER;
		return 0;
	}
	if (e->type == 'g') { /* global PAX header: nothing we use */
		t->state = size ? T_DATA : T_HEADER;
		t->skip = 1;
		return 0;
	}
	/* the name: GNU or PAX long name, else ustar prefix + name */
	if (t->pax_path[0]) {
		snprintf(e->name, sizeof e->name, "%s", t->pax_path);
	} else if (t->gnu_name[0]) {
		snprintf(e->name, sizeof e->name, "%s", t->gnu_name);
	} else {
		char prefix[157] = "", name[101];

		if (!memcmp(h + 257, "ustar", 5) && h[345])
			snprintf(prefix, sizeof prefix, "%.155s/", (const char *)h + 345);
		snprintf(name, sizeof name, "%.100s", (const char *)h);
		snprintf(e->name, sizeof e->name, "%s%s", prefix, name);
	}
	if (t->pax_link[0])
		snprintf(e->link, sizeof e->link, "%s", t->pax_link);
	else if (t->gnu_link[0])
		snprintf(e->link, sizeof e->link, "%s", t->gnu_link);
	else
		snprintf(e->link, sizeof e->link, "%.100s", (const char *)h + 157);
	t->pax_path[0] = t->pax_link[0] = t->gnu_name[0] = t->gnu_link[0] = 0;
	if (!e->name[0])
		return errbuf_set(err, errlen, "tar: entry without a name");
	if ((e->type == '5' || e->type == '2') && size)
		return errbuf_set(err, errlen, "tar: %s entry with data",
				  e->type == '5' ? "directory" : "link");
	t->skip = 0;
	t->seen_any = 1;
	if (t->ops->entry && t->ops->entry(t->ctx, e, err, errlen) < 0)
		return -EINVAL;
	t->state = size ? T_DATA : (t->pad ? T_PAD : T_HEADER);
	if (!size && t->ops->done && t->ops->done(t->ctx, e, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

static int long_done(struct tar_reader *t, char *err, size_t errlen)
{
	char *dst = t->long_type == 'L' ? t->gnu_name : t->gnu_link;
	size_t l = t->long_len;

	t->long_buf[l] = 0;
	if (t->long_type == 'x')
		return pax(t, err, errlen);
	while (l && t->long_buf[l - 1] == 0)
		l--;
	if (l >= sizeof t->gnu_name || memchr(t->long_buf, 0, l))
		return errbuf_set(err, errlen, "tar: bad GNU long name");
	memcpy(dst, t->long_buf, l);
	dst[l] = 0;
	return 0;
}

int tar_feed(struct tar_reader *t, const uint8_t *p, size_t n, char *err, size_t errlen)
{
	while (n) {
		size_t k;

		switch (t->state) {
		case T_END:
			return 0; /* whatever follows the end marker is ignored */
		case T_HEADER:
			k = 512 - t->hlen < n ? 512 - t->hlen : n;
			memcpy(t->hdr + t->hlen, p, k);
			t->hlen += k, p += k, n -= k;
			if (t->hlen == 512) {
				t->hlen = 0;
				if (header(t, err, errlen) < 0)
					return -EINVAL;
			}
			break;
		case T_LONG:
			k = t->remaining < n ? (size_t)t->remaining : n;
			memcpy(t->long_buf + t->long_len, p, k);
			t->long_len += k, t->remaining -= k, p += k, n -= k;
			if (!t->remaining) {
				if (long_done(t, err, errlen) < 0)
					return -EINVAL;
				t->state = t->pad ? T_PAD : T_HEADER;
			}
			break;
		case T_DATA:
			k = t->remaining < n ? (size_t)t->remaining : n;
			if (!t->skip && t->ops->data && t->ops->data(t->ctx, p, k, err, errlen) < 0)
				return -EINVAL;
			t->remaining -= k, p += k, n -= k;
			if (!t->remaining) {
				if (!t->skip && t->ops->done &&
				    t->ops->done(t->ctx, &t->entry, err, errlen) < 0)
					return -EINVAL;
				t->state = t->pad ? T_PAD : T_HEADER;
			}
			break;
		case T_PAD:
			k = t->pad < n ? (size_t)t->pad : n;
			t->pad -= k, p += k, n -= k;
			if (!t->pad)
				t->state = T_HEADER;
			break;
		}
	}
	return 0;
}

int tar_finish(struct tar_reader *t, char *err, size_t errlen)
{
	if (t->state == T_END || (t->state == T_HEADER && t->hlen == 0 && t->seen_any))
		return 0;
	if (t->state == T_HEADER && t->hlen == 0)
		return errbuf_set(err, errlen, "tar: empty archive");
	return errbuf_set(err, errlen, "tar: archive ends inside an entry");
}
