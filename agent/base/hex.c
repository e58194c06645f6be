/* Hexadecimal encoding, strict on input: an even number of hex digits and nothing else. */
#include <errno.h>

#include "base.h"

int hex_encode(const void *src, size_t len, char *out, size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = src;

	if (len > (SIZE_MAX - 1) / 2 || cap < 2 * len + 1)
		return -ENOBUFS;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * len] = '\0';
	return 0;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hex_decode(const char *src, size_t srclen, void *out, size_t cap, size_t *ret_len)
{
	unsigned char *o = out;

	if (srclen % 2)
		return -EINVAL;
	if (srclen / 2 > cap)
		return -ENOBUFS;
	/* Validate everything before writing, so a bad input leaves out untouched. */
	for (size_t i = 0; i < srclen; i++)
		if (hex_digit(src[i]) < 0)
			return -EINVAL;
	for (size_t i = 0; i < srclen; i += 2)
		o[i / 2] = (unsigned char)(hex_digit(src[i]) << 4 | hex_digit(src[i + 1]));
	if (ret_len)
		*ret_len = srclen / 2;
	return 0;
}
