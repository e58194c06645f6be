/* The parsing half of the PCS client (tools/tdx-pcs.h): a header of an HTTP response found by
 * name and its URL-encoded value decoded (Intel's PCS sends each issuer chain as URL-encoded PEM
 * in a header such as TCB-Info-Issuer-Chain), a JSON answer's nextUpdate, a 429/503 answer's
 * Retry-After, the URI of a certificate's CRL distribution point and the rule for which of
 * those URIs are fetched. Pure functions on bytes, shared with tests/fuzz/fuzz_pcs_header.c. */
#ifndef CONSTEL_TOOL_PCS_PARSE_H
#define CONSTEL_TOOL_PCS_PARSE_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

#include "base/base.h" /* hex_digit */
#include "base/der.h"

#define PCS_INTEL_API_HOST   "api.trustedservices.intel.com"
#define PCS_INTEL_CERTS_HOST "certificates.trustedservices.intel.com"
#define PCS_URL_MAX	     512 /* a CRL distribution point's URI */

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

				if (e - v < 3 || (hi = hex_digit(head[v + 1])) < 0 ||
				    (lo = hex_digit(head[v + 2])) < 0)
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

/* Retry-After of an answer (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date (IMF-fixdate,
 * "Sun, 06 Nov 1994 08:49:37 GMT") taken against now; a date already past is 0. -ENOENT when
 * absent, -EINVAL when neither form (the caller then keeps its own back-off). *secs is at most
 * 999999999. */
static inline int pcs_retry_after(const char *head, size_t len, time_t now, unsigned *secs)
{
	static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	char v[64], m[4];
	size_t vlen, i;
	struct tm tm = {0};
	int d, y, hh, mm, ss, n = 0;
	time_t t;
	int r = pcs_header_decode(head, len, "Retry-After", v, sizeof v, &vlen);

	if (r < 0)
		return r == -ENOENT ? r : -EINVAL;
	for (i = 0; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
		;
	if (vlen && i == vlen) {
		if (vlen > 9)
			return -EINVAL;
		*secs = 0;
		for (i = 0; i < vlen; i++)
			*secs = *secs * 10 + (unsigned)(v[i] - '0');
		return 0;
	}
	/* "Www, DD Mon YYYY HH:MM:SS GMT", exactly 29 characters */
	if (vlen != 29 || v[3] != ',' ||
	    sscanf(v + 4, " %2d %3s %4d %2d:%2d:%2d GMT%n", &d, m, &y, &hh, &mm, &ss, &n) != 6 ||
	    n != 25)
		return -EINVAL;
	for (i = 0; i < 12 && strcmp(m, mon[i]); i++)
		;
	if (i == 12 || d < 1 || d > 31 || y < 1970 || y > 9999 || hh > 23 || mm > 59 || ss > 60)
		return -EINVAL;
	tm.tm_mday = d, tm.tm_mon = (int)i, tm.tm_year = y - 1900;
	tm.tm_hour = hh, tm.tm_min = mm, tm.tm_sec = ss;
	t = timegm(&tm);
	*secs = t <= now ? 0 : t - now > 999999999 ? 999999999u : (unsigned)(t - now);
	return 0;
}

/* The first URI of a CRL distribution points extension's value (RFC 5280 §4.2.1.13: SEQUENCE
 * OF DistributionPoint; distributionPoint [0] holds fullName [0] GeneralNames, whose
 * uniformResourceIdentifier [6] is an IA5String) into out, NUL-terminated. The URI must be
 * printable ASCII without spaces. -ENOENT when there is none, -EBADMSG when malformed,
 * -EFBIG when it does not fit in cap. */
static inline int pcs_cdp_uri(const uint8_t *val, size_t len, char *out, size_t cap)
{
	struct der_in in = {val, len}, dps, dp, dpn, names, name;
	uint8_t tag;

	if (der_expect(&in, DER_SEQUENCE, &dps, NULL) < 0 || in.len)
		return -EBADMSG;
	while (dps.len) {
		if (der_expect(&dps, DER_SEQUENCE, &dp, NULL) < 0 ||
		    der_next(&dp, &tag, &dpn, NULL) < 0)
			return -EBADMSG;
		if (tag != 0xa0) /* no distributionPoint, only reasons or cRLIssuer */
			continue;
		if (der_next(&dpn, &tag, &names, NULL) < 0)
			return -EBADMSG;
		if (tag != 0xa0) /* nameRelativeToCRLIssuer */
			continue;
		while (names.len) {
			if (der_next(&names, &tag, &name, NULL) < 0)
				return -EBADMSG;
			if (tag != 0x86)
				continue;
			if (name.len + 1 > cap)
				return -EFBIG;
			for (size_t i = 0; i < name.len; i++)
				if (name.p[i] < 0x21 || name.p[i] > 0x7e)
					return -EBADMSG;
			memcpy(out, name.p, name.len);
			out[name.len] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

/* The host (and port) of an https URL: its start and length. -EINVAL when not https:// or
 * without a host. */
static inline int pcs_url_host(const char *url, const char **host, size_t *hlen)
{
	if (strncmp(url, "https://", 8))
		return -EINVAL;
	*host = url + 8;
	*hlen = strcspn(*host, "/?#");
	return *hlen ? 0 : -EINVAL;
}

static inline int pcs_host_is(const char *host, size_t hlen, const char *want, size_t wlen)
{
	return hlen == wlen && !strncasecmp(host, want, wlen);
}

/* Which URL the root CA CRL is fetched from, for the URI of a CRL distribution point (read
 * from a certificate that is not checked yet when it is read): only https, and only Intel's
 * hosts or the hosts the caller configured. A URI on Intel's certificates host goes to certs
 * (--pcs-certs, Intel's by default) and one on Intel's API host to pcs (--pcs), the path kept:
 * a caching proxy or a test server given there gets the request too. A URI on the host of pcs
 * or certs is fetched as it is. Anything else: -EPERM (nothing fetched). -EFBIG when the URL
 * does not fit in cap. */
static inline int pcs_root_crl_url(const char *uri, const char *pcs, const char *certs, char *out,
				   size_t cap)
{
	const char *h, *ch, *ph;
	size_t hl, chl = 0, phl = 0;
	const char *base = NULL;
	int n;

	if (pcs_url_host(uri, &h, &hl) < 0)
		return -EPERM;
	if (pcs_host_is(h, hl, PCS_INTEL_CERTS_HOST, sizeof PCS_INTEL_CERTS_HOST - 1))
		base = certs;
	else if (pcs_host_is(h, hl, PCS_INTEL_API_HOST, sizeof PCS_INTEL_API_HOST - 1))
		base = pcs;
	else if (!((pcs_url_host(certs, &ch, &chl) == 0 && pcs_host_is(h, hl, ch, chl)) ||
		   (pcs_url_host(pcs, &ph, &phl) == 0 && pcs_host_is(h, hl, ph, phl))))
		return -EPERM;
	n = base ? snprintf(out, cap, "%s%s", base, h + hl) : snprintf(out, cap, "%s", uri);
	return n < 0 || (size_t)n >= cap ? -EFBIG : 0;
}

#endif
