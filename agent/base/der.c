/* DER writer and strict reader (der.h). The reader accepts only what Go's encoding/asn1
 * and crypto/x509 accept for the same input, so a certificate we pass, Go passes too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "der.h"

/* ---- writer ---- */

static size_t len_octets(size_t n)
{
	return n < 0x80 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x1000000 ? 4 : 5;
}

static void put_len(uint8_t *p, size_t n)
{
	size_t k = len_octets(n);

	if (k == 1) {
		p[0] = (uint8_t)n;
		return;
	}
	p[0] = (uint8_t)(0x80 | (k - 1));
	for (size_t i = 1; i < k; i++)
		p[i] = (uint8_t)(n >> (8 * (k - 1 - i)));
}

void der_put_raw(struct der_out *d, const void *src, size_t n)
{
	if (d->err || n > d->cap - d->len) {
		d->err = -ENOBUFS;
		return;
	}
	if (n)
		memcpy(d->p + d->len, src, n);
	d->len += n;
}

void der_put_tlv(struct der_out *d, uint8_t tag, const void *src, size_t n)
{
	uint8_t h[6];

	h[0] = tag;
	put_len(h + 1, n);
	der_put_raw(d, h, 1 + len_octets(n));
	der_put_raw(d, src, n);
}

/* A constructed element: der_begin() remembers where its content starts, der_end() inserts the tag
 * and length in front of it. */
size_t der_begin(const struct der_out *d)
{
	return d->len;
}

void der_end(struct der_out *d, size_t start, uint8_t tag)
{
	size_t n = d->len - start, h = 1 + len_octets(n);

	if (d->err || h > d->cap - d->len) {
		d->err = -ENOBUFS;
		return;
	}
	memmove(d->p + start + h, d->p + start, n);
	d->p[start] = tag;
	put_len(d->p + start + 1, n);
	d->len += h;
}

/* An INTEGER from unsigned big-endian bytes, minimally encoded and positive. */
void der_put_uint(struct der_out *d, const uint8_t *b, size_t n)
{
	size_t start;

	while (n > 1 && b[0] == 0) {
		b++;
		n--;
	}
	start = der_begin(d);
	if (b[0] & 0x80)
		der_put_raw(d, "", 1);
	der_put_raw(d, b, n);
	der_end(d, start, 0x02);
}

void der_put_time(struct der_out *d, time_t t)
{
	struct tm tm;
	char s[20];

	long long y;

	gmtime_r(&t, &tm);
	y = tm.tm_year + 1900LL;
	/* RFC 5280: UTCTime through 2049, GeneralizedTime from 2050 on. snprintf, not strftime
	 * (strftime and the time-zone code it pulls in are 4 KiB of the agent): the digits are
	 * strftime's "%y%m%d%H%M%SZ" and "%Y%m%d%H%M%SZ". */
	if (y < 2050)
		snprintf(s, sizeof s, "%02lld", llabs(y % 100));
	else
		snprintf(s, sizeof s, y >= 10000 ? "+%lld" : "%04lld", y);
	snprintf(s + strlen(s), sizeof s - strlen(s), "%02d%02d%02d%02d%02dZ", tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	der_put_tlv(d, y < 2050 ? 0x17 : 0x18, s, strlen(s));
}

/* ---- reader ---- */

/* Reads one element; *el gets its content, *raw (when not NULL) the whole TLV. */
int der_next(struct der_in *in, uint8_t *tag, struct der_in *el, struct der_in *raw)
{
	size_t n, hl = 2;

	if (in->len < 2)
		return -EBADMSG;
	*tag = in->p[0];
	if ((*tag & 0x1f) == 0x1f)
		return -EBADMSG; /* high tag numbers never appear in what we parse */
	n = in->p[1];
	if (n & 0x80) {
		size_t k = n & 0x7f;

		if (k == 0 || k > 4 || in->len < 2 + k)
			return -EBADMSG; /* indefinite or absurd */
		n = 0;
		for (size_t i = 0; i < k; i++)
			n = n << 8 | in->p[2 + i];
		if (n < 0x80 || (k > 1 && in->p[2] == 0))
			return -EBADMSG; /* not minimal */
		hl += k;
	}
	if (n > in->len - hl)
		return -EBADMSG;
	if (raw) {
		raw->p = in->p;
		raw->len = hl + n;
	}
	el->p = in->p + hl;
	el->len = n;
	in->p += hl + n;
	in->len -= hl + n;
	return 0;
}

int der_expect(struct der_in *in, uint8_t want, struct der_in *el, struct der_in *raw)
{
	uint8_t tag;
	struct der_in save = *in;

	if (der_next(in, &tag, el, raw) < 0)
		return -EBADMSG;
	if (tag != want) {
		*in = save;
		return -ENOENT;
	}
	return 0;
}

static int digits(const uint8_t *p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ, as Go's parser requires. */
int der_time(struct der_in *in, time_t *ret)
{
	struct der_in el;
	uint8_t tag;
	struct tm tm = {0};
	const uint8_t *s;
	int y;

	if (der_next(in, &tag, &el, NULL) < 0)
		return -EBADMSG;
	s = el.p;
	if (tag == 0x17 && el.len == 13) {
		y = digits(s, 2);
		if (y < 0)
			return -EBADMSG;
		tm.tm_year = (y < 50 ? 2000 + y : 1900 + y) - 1900;
		s += 2;
	} else if (tag == 0x18 && el.len == 15) {
		y = digits(s, 4);
		if (y < 0)
			return -EBADMSG;
		tm.tm_year = y - 1900;
		s += 4;
	} else {
		return -EBADMSG;
	}
	tm.tm_mon = digits(s, 2) - 1;
	tm.tm_mday = digits(s + 2, 2);
	tm.tm_hour = digits(s + 4, 2);
	tm.tm_min = digits(s + 6, 2);
	tm.tm_sec = digits(s + 8, 2);
	if (s[10] != 'Z' || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
	    tm.tm_sec > 60)
		return -EBADMSG;
	*ret = timegm(&tm);
	return 0;
}

int der_oid_is(const struct der_in *oid, const uint8_t *want, size_t n)
{
	return oid->len == n && !memcmp(oid->p, want, n);
}
