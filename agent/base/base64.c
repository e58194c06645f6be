/* Base64 with '=' padding in the standard and the URL-safe alphabet (RFC 4648 §4, §5).
 * The character mapping uses masks instead of branches or table lookups (the technique of
 * libsodium's codecs), because the input is often a key. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static int char62(enum base64_alphabet a)
{
	return a == BASE64_URL ? '-' : '+';
}

static int char63(enum base64_alphabet a)
{
	return a == BASE64_URL ? '_' : '/';
}

/* (lo <= x && x <= hi) ? -1 : 0, without a branch. Needs 0 <= lo, hi < 256, 0 <= x < 256. */
static int in_range(int x, int lo, int hi)
{
	return ((lo - 1 - x) & (x - hi - 1)) >> 8;
}

static char encode_char(enum base64_alphabet a, int v)
{
	int c62 = char62(a), c63 = char63(a), d = 'A';

	d += in_range(v, 26, 63) & ('a' - 26 - 'A');
	d += in_range(v, 52, 63) & (('0' - 52) - ('a' - 26));
	d += in_range(v, 62, 63) & ((c62 - 62) - ('0' - 52));
	d += in_range(v, 63, 63) & ((c63 - 63) - (c62 - 62));
	return (char)(v + d);
}

/* The 6-bit value of c, or -1 when c is not in the alphabet. */
static int decode_char(enum base64_alphabet a, unsigned char c)
{
	int x = c, v = -1;

	v += in_range(x, 'A', 'Z') & (x - 'A' + 1);
	v += in_range(x, 'a', 'z') & (x - 'a' + 26 + 1);
	v += in_range(x, '0', '9') & (x - '0' + 52 + 1);
	v += in_range(x, char62(a), char62(a)) & (62 + 1);
	v += in_range(x, char63(a), char63(a)) & (63 + 1);
	return v;
}

int base64_encode(enum base64_alphabet a, const void *src, size_t len, char *out, size_t cap)
{
	const unsigned char *p = src;
	size_t o = 0, i = 0;

	if (len > (SIZE_MAX - 3) / 4 * 3 || cap < base64_encoded_len(len) + 1)
		return -ENOBUFS;
	for (; len - i >= 3; i += 3) {
		unsigned w = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];

		out[o++] = encode_char(a, (int)(w >> 18));
		out[o++] = encode_char(a, (int)(w >> 12 & 63));
		out[o++] = encode_char(a, (int)(w >> 6 & 63));
		out[o++] = encode_char(a, (int)(w & 63));
	}
	if (len - i == 1) {
		out[o++] = encode_char(a, p[i] >> 2);
		out[o++] = encode_char(a, (p[i] & 3) << 4);
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		unsigned w = (unsigned)p[i] << 8 | p[i + 1];

		out[o++] = encode_char(a, (int)(w >> 10));
		out[o++] = encode_char(a, (int)(w >> 4 & 63));
		out[o++] = encode_char(a, (int)(w << 2 & 63));
		out[o++] = '=';
	}
	out[o] = '\0';
	return 0;
}

int base64_decode(enum base64_alphabet a, const char *src, size_t srclen, void *out, size_t cap,
		  size_t *ret_len)
{
	unsigned char *o = out;
	size_t pad = 0, n, j = 0;
	int bad = 0;

	if (srclen % 4)
		return -EINVAL;
	if (srclen >= 4 && src[srclen - 1] == '=')
		pad = src[srclen - 2] == '=' ? 2 : 1;
	n = srclen / 4 * 3 - pad;
	if (n > cap)
		return -ENOBUFS;

	for (size_t i = 0; i < srclen; i += 4) {
		int v[4];
		/* Only the last quartet may hold padding, and only in its last one or two places.
		 */
		size_t q = i + 4 == srclen ? 4 - pad : 4;

		/* A -1 (all bits set) makes bad negative for good; valid values keep it >= 0. */
		for (size_t k = 0; k < 4; k++) {
			v[k] = k < q ? decode_char(a, (unsigned char)src[i + k]) : 0;
			bad |= v[k];
		}
		unsigned w = (unsigned)(v[0] & 63) << 18 | (unsigned)(v[1] & 63) << 12 |
			     (unsigned)(v[2] & 63) << 6 | (unsigned)(v[3] & 63);
		o[j++] = (unsigned char)(w >> 16);
		if (q > 2)
			o[j++] = (unsigned char)(w >> 8);
		if (q > 3)
			o[j++] = (unsigned char)w;
	}
	if (bad < 0) {
		secret_wipe(out, n);
		return -EINVAL;
	}
	if (ret_len)
		*ret_len = n;
	return 0;
}

int pem_encode(const char *label, const void *der, size_t len, char *out, size_t cap)
{
	size_t b64len = base64_encoded_len(len), o;
	char *b64 = malloc(b64len + 1);
	int n, r = -ENOBUFS;

	if (!b64)
		return -ENOMEM;
	base64_encode(BASE64_STD, der, len, b64, b64len + 1);
	n = snprintf(out, cap, "-----BEGIN %s-----\n", label);
	if (n < 0 || (size_t)n >= cap)
		goto out;
	o = (size_t)n;
	for (size_t i = 0; i < b64len; i += 64) {
		size_t l = b64len - i < 64 ? b64len - i : 64;

		if (o + l + 1 >= cap)
			goto out;
		memcpy(out + o, b64 + i, l);
		o += l;
		out[o++] = '\n';
	}
	n = snprintf(out + o, cap - o, "-----END %s-----\n", label);
	if (n < 0 || (size_t)n >= cap - o)
		goto out;
	r = (int)(o + (size_t)n);
out:
	secret_wipe(b64, b64len + 1);
	free(b64);
	return r;
}

int pem_decode(const char *text, size_t len, const char *label, uint8_t *out, size_t cap,
	       size_t *ret_len)
{
	char begin[80], end[80];
	const char *b, *e, *p;
	char *body;
	size_t n = 0;
	int r;

	snprintf(begin, sizeof begin, "-----BEGIN %s-----", label);
	snprintf(end, sizeof end, "-----END %s-----", label);
	b = memmem(text, len, begin, strlen(begin));
	if (!b)
		return -ENOENT;
	b += strlen(begin);
	e = memmem(b, len - (size_t)(b - text), end, strlen(end));
	if (!e)
		return -EINVAL;
	body = malloc((size_t)(e - b) + 1);
	if (!body)
		return -ENOMEM;
	for (p = b; p < e; p++)
		if (*p != '\n' && *p != '\r' && *p != ' ' && *p != '\t')
			body[n++] = *p;
	r = base64_decode(BASE64_STD, body, n, out, cap, ret_len);
	secret_wipe(body, n);
	free(body);
	return r;
}
