/* The parsing half of the PCS client (tools/tdx-pcs.h): a header of an HTTP response found by
 * name and its URL-encoded value decoded (Intel's PCS sends each issuer chain as URL-encoded PEM
 * in a header such as TCB-Info-Issuer-Chain), and a JSON answer's nextUpdate. Pure functions on
 * bytes, shared with tests/fuzz/fuzz_pcs_header.c. */
#ifndef CONSTEL_TOOL_PCS_PARSE_H
#define CONSTEL_TOOL_PCS_PARSE_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

static inline int pcs_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of header name (case-insensitive) in the header block head[0..len) (the status
 * line, then "Name: value\r\n" lines), URL-decoded (%XX; '+' is kept: base64 holds it) into
 * out, NUL-terminated. -ENOENT when absent, -EINVAL for a bad escape or a NUL, -EFBIG when it
 * does not fit in cap. */
static inline int pcs_header_decode(const char *head, size_t len, const char *name, char *out,
				    size_t cap, size_t *out_len)
{
	size_t nlen = strlen(name), i = 0;

	/* skip the status line */
	while (i < len && head[i] != '\n')
		i++;
	while (i < len) {
		size_t s = ++i, e, v, o = 0;

		while (i < len && head[i] != '\n')
			i++;
		e = i; /* the line is head[s..e), maybe with a trailing \r */
		if (e > s && head[e - 1] == '\r')
			e--;
		if (e - s <= nlen || head[s + nlen] != ':' || strncasecmp(head + s, name, nlen))
			continue;
		v = s + nlen + 1;
		while (v < e && (head[v] == ' ' || head[v] == '\t'))
			v++;
		while (e > v && (head[e - 1] == ' ' || head[e - 1] == '\t'))
			e--;
		for (; v < e; v++) {
			int c = (unsigned char)head[v];

			if (c == '%') {
				int hi, lo;

				if (e - v < 3 || (hi = pcs_hexval(head[v + 1])) < 0 ||
				    (lo = pcs_hexval(head[v + 2])) < 0)
					return -EINVAL;
				c = hi << 4 | lo;
				v += 2;
			}
			if (c == 0)
				return -EINVAL;
			if (o + 1 >= cap)
				return -EFBIG;
			out[o++] = (char)c;
		}
		out[o] = '\0';
		*out_len = o;
		return 0;
	}
	return -ENOENT;
}

/* The first "nextUpdate" string value of a JSON text (tcbInfo and enclaveIdentity hold one
 * each) into out (cap >= 32). -ENOENT when there is none. */
static inline int pcs_json_next_update(const char *json, size_t len, char *out, size_t cap)
{
	static const char key[] = "\"nextUpdate\"";
	size_t k = sizeof key - 1;

	for (size_t i = 0; i + k <= len; i++) {
		size_t j, o = 0;

		if (memcmp(json + i, key, k))
			continue;
		j = i + k;
		while (j < len &&
		       (json[j] == ' ' || json[j] == '\n' || json[j] == '\r' || json[j] == '\t'))
			j++;
		if (j >= len || json[j++] != ':')
			return -ENOENT;
		while (j < len &&
		       (json[j] == ' ' || json[j] == '\n' || json[j] == '\r' || json[j] == '\t'))
			j++;
		if (j >= len || json[j++] != '"')
			return -ENOENT;
		while (j < len && json[j] != '"') {
			if (o + 1 >= cap)
				return -EFBIG;
			out[o++] = json[j++];
		}
		if (j >= len)
			return -ENOENT;
		out[o] = '\0';
		return 0;
	}
	return -ENOENT;
}

#endif
