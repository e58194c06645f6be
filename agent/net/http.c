/* A small HTTP/1.1 GET client for the metadata API and http:// components: one request per
 * connection ("Connection: close"), the response read to the end within a deadline and a
 * size bound, then parsed: status line, headers (Content-Length or chunked), body. The
 * parser works on a buffer and is fuzzed; nothing from the response is trusted beyond it. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base.h"
#include "net.h"

int http_url_split(const char *url, char *hostport, size_t hcap, char *path, size_t pcap)
{
	const char *h, *slash;
	size_t n;

	if (strncmp(url, "http://", 7))
		return -EINVAL;
	h = url + 7;
	slash = strchr(h, '/');
	n = slash ? (size_t)(slash - h) : strlen(h);
	if (n == 0 || n >= hcap || memchr(h, '@', n) || strlen(slash ? slash : "/") >= pcap)
		return -EINVAL;
	memcpy(hostport, h, n);
	hostport[n] = 0;
	if (!strchr(hostport, ':')) { /* the default port */
		if (n + 3 >= hcap)
			return -EINVAL;
		strcat(hostport, ":80");
	}
	snprintf(path, pcap, "%s", slash ? slash : "/");
	for (const char *p = path; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL; /* nothing that could split the request line */
	return 0;
}

/* Decodes a chunked body in place; returns its length or -EINVAL. */
static ssize_t unchunk(char *b, size_t len, char *err, size_t errlen)
{
	size_t in = 0, out = 0;

	for (;;) {
		char *end;
		unsigned long n;
		char *crlf = memmem(b + in, len - in, "\r\n", 2);

		if (!crlf)
			return errbuf_set(err, errlen, "http: chunk size line missing");
		errno = 0;
		/* hex digits first: strtoul would take blanks, a sign or "0x" */
		n = hex_digit(b[in]) >= 0 ? strtoul(b + in, &end, 16) : (end = b + in, 0);
		if (end == b + in || errno || (end != crlf && *end != ';') ||
		    (b[in] == '0' && (b[in + 1] == 'x' || b[in + 1] == 'X')))
			return errbuf_set(err, errlen, "http: bad chunk size");
		in = (size_t)(crlf - b) + 2;
		if (n == 0)
			return (ssize_t)out; /* trailers, if any, are ignored */
		if (n > len - in || len - in - n < 2 || memcmp(b + in + n, "\r\n", 2))
			return errbuf_set(err, errlen, "http: chunk overruns the response");
		memmove(b + out, b + in, n);
		out += n;
		in += n + 2;
	}
}

int http_parse_response(char *buf, size_t len, int *status, char **body, size_t *body_len,
			char *err, size_t errlen)
{
	char *hend = memmem(buf, len, "\r\n\r\n", 4), *line, *next;
	size_t blen, clen = (size_t)-1;
	int chunked = 0, code;

	if (!hend)
		return errbuf_set(err, errlen, "http: no end of headers");
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) || (buf[7] != '0' && buf[7] != '1') ||
	    buf[8] != ' ' || buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' ||
	    buf[11] < '0' || buf[11] > '9')
		return errbuf_set(err, errlen, "http: bad status line");
	code = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	for (line = (char *)memchr(buf, '\n', (size_t)(hend - buf) + 2) + 1; line < hend + 2;
	     line = next) {
		char *eol = memmem(line, (size_t)(hend + 2 - line), "\r\n", 2);
		char *colon;

		if (!eol)
			break;
		next = eol + 2;
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon)
			continue;
		if ((size_t)(colon - line) == 14 && !strncasecmp(line, "Content-Length", 14)) {
			char *v = colon + 1, *e;
			unsigned long long n;

			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			errno = 0;
			n = v < eol && *v >= '0' && *v <= '9' ? strtoull(v, &e, 10) : (e = v, 0);
			while (e < eol && (*e == ' ' || *e == '\t'))
				e++;
			if (errno || e != eol || e == v || n >= (size_t)-1)
				return errbuf_set(err, errlen, "http: bad Content-Length");
			clen = (size_t)n;
		} else if ((size_t)(colon - line) == 17 &&
			   !strncasecmp(line, "Transfer-Encoding", 17)) {
			chunked = memmem(colon, (size_t)(eol - colon), "chunked", 7) != NULL;
		}
	}
	*body = hend + 4;
	blen = len - (size_t)(*body - buf);
	if (chunked) {
		ssize_t n = unchunk(*body, blen, err, errlen);

		if (n < 0)
			return (int)n;
		blen = (size_t)n;
	} else if (clen != (size_t)-1) {
		if (clen > blen)
			return errbuf_set(err, errlen,
					  "http: body shorter than its Content-Length");
		blen = clen;
	}
	*body_len = blen;
	*status = code;
	return 0;
}

int http_get(const char *url, int timeout_ms, size_t max, struct http_response *resp)
{
	char hostport[300], path[1024], req[1536], err[256];
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	size_t len = 0, limit = max + 16384, cap = limit < 65536 ? limit : 65536; /* + headers */
	int fd, n, r;
	char *buf;

	memset(resp, 0, sizeof *resp);
	if (http_url_split(url, hostport, sizeof hostport, path, sizeof path) < 0)
		return log_err(-EINVAL, "http: '%.200s' is not an http://HOST[:PORT]/PATH URL",
			       url);
	fd = tcp_dial(hostport, timeout_ms, err, sizeof err);
	if (fd < 0)
		return log_err(fd, "http: GET %.200s: %s", url, err);
	n = snprintf(req, sizeof req,
		     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: constel-agent\r\n"
		     "Accept: */*\r\nConnection: close\r\n\r\n",
		     path, hostport);
	buf = malloc(cap + 1);
	r = buf ? 0 : -ENOMEM;
	for (int off = 0; !r && off < n;) { /* the socket is non-blocking */
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		ssize_t k;

		if (monotonic_ms() >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (poll(&p, 1, (int)(deadline - monotonic_ms())) <= 0)
			continue;
		k = write(fd, req + off, (size_t)(n - off));
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			r = -errno;
		else if (k > 0)
			off += (int)k;
	}
	while (!r) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = monotonic_ms();
		ssize_t k;

		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		if (len == cap && cap < limit) { /* grow by doubling up to the limit */
			size_t ncap = cap * 2 < limit ? cap * 2 : limit;
			char *nb = realloc(buf, ncap + 1);

			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb, cap = ncap;
		}
		k = read(fd, buf + len, cap - len);
		if (k == 0)
			break;
		if (k < 0) {
			if (errno != EAGAIN && errno != EINTR)
				r = -errno;
			continue;
		}
		len += (size_t)k;
		if (len == limit)
			r = -EFBIG;
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return log_err(r, "http: GET %.200s%s", url,
			       r == -EFBIG ? ": response larger than allowed" : "");
	}
	buf[len] = 0;
	r = http_parse_response(buf, len, &resp->status, &resp->body, &resp->len, err, sizeof err);
	if (r < 0 || resp->len > max) {
		free(buf);
		memset(resp, 0, sizeof *resp);
		return log_err(-EBADMSG, "http: GET %.200s: %s", url,
			       r < 0 ? err : "body larger than allowed");
	}
	resp->body[resp->len] = 0; /* in the buffer: the body never grows in place */
	resp->buf = buf;
	return 0;
}

void http_response_free(struct http_response *resp)
{
	free(resp->buf);
	memset(resp, 0, sizeof *resp);
}
