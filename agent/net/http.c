/* A small HTTP/1.1 GET client for the metadata API and components: one request per connection
 * ("Connection: close"), over TCP or TLS (https.c), the response read to the end within a
 * deadline and a size bound, then parsed: status line, headers (Content-Length or chunked),
 * body. The parser works on a buffer and is fuzzed; nothing from the response is trusted
 * beyond it. http_fetch follows redirects within one deadline for the whole chain.
 *
 * Over TLS the end of the body is the server's EOF even without close_notify (many servers
 * skip it); a truncation is still caught by Content-Length or the chunked framing, and a
 * component's bytes by their sha256. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/base.h"
#include "net.h"

struct url {
	int tls;
	char host[256]; /* without brackets */
	char hostport[300];
	char hosthdr[280]; /* the Host header: the authority as the URL gave it */
	char path[1024];
};

/* "http[s]://HOST[:PORT][/PATH]" (no user info, nothing that could split the request line). */
static int url_parse(const char *url, struct url *u)
{
	const char *h, *slash;
	char port[8];
	size_t n;

	memset(u, 0, sizeof *u);
	if (!strncmp(url, "http://", 7))
		h = url + 7;
	else if (!strncmp(url, "https://", 8))
		h = url + 8, u->tls = 1;
	else
		return -EINVAL;
	n = strcspn(h, "/?#");
	slash = h + n;
	if (n == 0 || n >= sizeof u->hosthdr || memchr(h, '@', n))
		return -EINVAL;
	memcpy(u->hosthdr, h, n);
	u->hosthdr[n] = 0;
	if (u->hosthdr[0] == '[' ? !strstr(u->hosthdr, "]:") : !strchr(u->hosthdr, ':'))
		snprintf(u->hostport, sizeof u->hostport, "%s:%s", u->hosthdr,
			 u->tls ? "443" : "80");
	else
		snprintf(u->hostport, sizeof u->hostport, "%s", u->hosthdr);
	if (hostport_split(u->hostport, u->host, sizeof u->host, port, sizeof port) < 0 ||
	    !u->host[0])
		return -EINVAL;
	if (snprintf(u->path, sizeof u->path, "%s%s", *slash == '/' ? "" : "/", slash) >=
	    (int)sizeof u->path)
		return -EINVAL;
	*strchrnul(u->path, '#') = 0; /* a fragment is not sent */
	for (const char *p = u->path; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	for (const char *p = u->hosthdr; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	return 0;
}

int http_url_split(const char *url, char *hostport, size_t hcap, char *path, size_t pcap)
{
	struct url u;

	if (url_parse(url, &u) < 0 || u.tls || strlen(u.hostport) >= hcap || strlen(u.path) >= pcap)
		return -EINVAL;
	strcpy(hostport, u.hostport);
	strcpy(path, u.path);
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

/* One connection: plain TCP, or TLS on top when tls is set. */
struct stream {
	int fd;
	struct tls_client *tls;
	const char *hostport;
};

static int stream_write(struct stream *st, const char *p, size_t n, uint64_t deadline, char *err,
			size_t errlen)
{
	if (st->tls)
		return tls_client_write(st->tls, p, n, deadline, err, errlen);
	for (size_t off = 0; off < n;) { /* the socket is non-blocking */
		struct pollfd pf = {.fd = st->fd, .events = POLLOUT};
		uint64_t now = monotonic_ms();
		ssize_t k;

		if (now >= deadline) {
			errbuf_set(err, errlen, "%s: timed out sending the request", st->hostport);
			return -ETIMEDOUT;
		}
		if (poll(&pf, 1, (int)(deadline - now)) <= 0)
			continue;
		k = send(st->fd, p + off, n - off, MSG_NOSIGNAL);
		if (k < 0 && errno != EAGAIN && errno != EINTR) {
			int r = -errno;

			errbuf_set(err, errlen, "%s: send: %s", st->hostport, strerror(-r));
			return r;
		}
		if (k > 0)
			off += (size_t)k;
	}
	return 0;
}

/* Some bytes, 0 at the end, or -errno with one line in err. */
static ssize_t stream_read(struct stream *st, char *p, size_t cap, uint64_t deadline, char *err,
			   size_t errlen)
{
	if (st->tls)
		return tls_client_read(st->tls, p, cap, deadline, err, errlen);
	for (;;) {
		struct pollfd pf = {.fd = st->fd, .events = POLLIN};
		uint64_t now = monotonic_ms();
		ssize_t k;

		if (now >= deadline) {
			errbuf_set(err, errlen, "%s: timed out reading the response", st->hostport);
			return -ETIMEDOUT;
		}
		if (poll(&pf, 1, (int)(deadline - now)) <= 0)
			continue;
		k = read(st->fd, p, cap);
		if (k >= 0)
			return k;
		if (errno != EAGAIN && errno != EINTR) {
			int r = -errno;

			errbuf_set(err, errlen, "%s: read: %s", st->hostport, strerror(-r));
			return r;
		}
	}
}

/* Extra header lines are ours, but values in them may come from outside (a token): each line
 * "Name: value\r\n", printable, so nothing can split the request. */
static int headers_ok(const char *h)
{
	while (*h) {
		const char *eol = strstr(h, "\r\n"), *colon = strchr(h, ':');

		if (!eol || !colon || colon > eol || colon == h)
			return 0;
		for (const char *p = h; p < eol; p++)
			if ((unsigned char)*p < ' ' || *p == 0x7f)
				return 0;
		h = eol + 2;
	}
	return 1;
}

/* One request of u within deadline: 0 with *resp, or -errno with one line in err. */
static int request(const struct url *u, const struct http_req *rq, const struct ca_bundle *ca,
		   uint64_t deadline, size_t max, struct http_response *resp, char *err,
		   size_t errlen)
{
	struct stream st = {.fd = -1, .hostport = u->hostport};
	size_t len = 0, limit = max + 16384, cap = limit < 65536 ? limit : 65536; /* + headers */
	const char *method = rq && rq->method ? rq->method : "GET";
	const char *extra = rq && rq->headers ? rq->headers : "";
	size_t blen = rq && rq->body ? rq->body_len : 0, reqcap = 1536 + strlen(extra) + blen;
	uint64_t now = monotonic_ms();
	char *req = NULL, *buf = NULL, clen[48] = "";
	int n, r;

	memset(resp, 0, sizeof *resp);
	if (u->tls && !ca) {
		errbuf_set(err, errlen, "%s: https without a CA bundle", u->hostport);
		return -ENOKEY;
	}
	if (strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(method) || !method[0] ||
	    !headers_ok(extra)) {
		errbuf_set(err, errlen, "%s: a malformed request", u->hostport);
		return -EINVAL;
	}
	if (now >= deadline) {
		errbuf_set(err, errlen, "%s: no time left", u->hostport);
		return -ETIMEDOUT;
	}
	st.fd = tcp_dial(u->hostport, (int)(deadline - now), err, errlen);
	if (st.fd == -EINVAL) /* the name did not resolve (yet): worth another try */
		return -EHOSTUNREACH;
	if (st.fd < 0)
		return st.fd;
	if (u->tls && (r = tls_client_open(st.fd, u->host, ca, deadline, &st.tls, err, errlen)) < 0)
		goto out;
	if (strcmp(method, "GET"))
		snprintf(clen, sizeof clen, "Content-Length: %zu\r\n", blen);
	req = malloc(reqcap);
	if (!req) {
		r = -ENOMEM;
		goto out;
	}
	n = snprintf(req, reqcap,
		     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: constel-agent\r\n"
		     "Accept: */*\r\n%s%sConnection: close\r\n\r\n",
		     method, u->path, u->hosthdr, extra, clen);
	if (n < 0 || (size_t)n + blen >= reqcap) {
		r = errbuf_set(err, errlen, "%s: request too long", u->hostport);
		goto out;
	}
	if (blen)
		memcpy(req + n, rq->body, blen);
	if ((r = stream_write(&st, req, (size_t)n + blen, deadline, err, errlen)) < 0)
		goto out;
	buf = malloc(cap + 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t k;

		if (len == cap && cap < limit) { /* grow by doubling up to the limit */
			size_t ncap = cap * 2 < limit ? cap * 2 : limit;
			char *nb = realloc(buf, ncap + 1);

			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb, cap = ncap;
		}
		if (len == limit) {
			errbuf_set(err, errlen, "%s: response larger than allowed", u->hostport);
			r = -EFBIG;
			goto out;
		}
		k = stream_read(&st, buf + len, cap - len, deadline, err, errlen);
		if (k < 0) {
			r = (int)k;
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	buf[len] = 0;
	r = http_parse_response(buf, len, &resp->status, &resp->body, &resp->len, err, errlen);
	if (r == 0 && resp->len > max) {
		errbuf_set(err, errlen, "%s: body larger than allowed", u->hostport);
		r = -EFBIG;
	}
	if (r < 0) {
		char why[200];

		snprintf(why, sizeof why, "%s", err ? err : "");
		errbuf_set(err, errlen, "%s: %s", u->hostport, why);
		r = r == -EFBIG ? r : -EBADMSG;
		goto out;
	}
	resp->body[resp->len] = 0; /* in the buffer: the body never grows in place */
	resp->buf = buf;
	buf = NULL;
out:
	free(buf);
	free(req);
	if (r < 0)
		memset(resp, 0, sizeof *resp);
	tls_client_free(st.tls);
	close(st.fd);
	return r;
}

int http_get(const char *url, int timeout_ms, size_t max, struct http_response *resp)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	char err[256] = "";
	struct url u;
	int r;

	memset(resp, 0, sizeof *resp);
	if (url_parse(url, &u) < 0 || u.tls)
		return log_err(-EINVAL, "http: '%.200s' is not an http://HOST[:PORT]/PATH URL",
			       url);
	r = request(&u, NULL, NULL, deadline, max, resp, err, sizeof err);
	if (r < 0)
		log_error("http: GET %.200s: %s", url, err); /* err says why */
	return r;
}

int http_request(const char *url, const struct http_req *rq, int timeout_ms, size_t max,
		 struct http_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	struct url u;

	memset(resp, 0, sizeof *resp);
	if (url_parse(url, &u) < 0 || u.tls)
		return errbuf_set(err, errlen, "'%.200s' is not an http://HOST[:PORT]/PATH URL",
				  url);
	return request(&u, rq, NULL, deadline, max, resp, err, errlen);
}

/* The value of header name in the head of a parsed response (buf up to body), trimmed. */
static int header_value(const char *buf, const char *body, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);

	for (const char *line = strchr(buf, '\n'); line && line < body; line = strchr(line, '\n')) {
		const char *v, *e;

		line++;
		if (line >= body || strncasecmp(line, name, nl) || line[nl] != ':')
			continue;
		v = line + nl + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = strchr(v, '\r');
		if (!e || e > body)
			return -EINVAL;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - v) >= cap || e == v)
			return -EINVAL;
		memcpy(out, v, (size_t)(e - v));
		out[e - v] = 0;
		return 0;
	}
	return -ENOENT;
}

int http_location_resolve(const char *base, const char *loc, char *out, size_t cap)
{
	struct url b, t;
	int n;

	if (url_parse(base, &b) < 0)
		return -EINVAL;
	for (const char *p = loc; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	if (!strncmp(loc, "http://", 7) || !strncmp(loc, "https://", 8))
		n = snprintf(out, cap, "%s", loc);
	else if (!strncmp(loc, "//", 2)) /* scheme-relative */
		n = snprintf(out, cap, "%s:%s", b.tls ? "https" : "http", loc);
	else if (loc[0] == '/')
		n = snprintf(out, cap, "%s://%s%s", b.tls ? "https" : "http", b.hosthdr, loc);
	else if (strchr(loc, ':') && strcspn(loc, ":") < strcspn(loc, "/?#"))
		return -EINVAL; /* another scheme */
	else if (loc[0] == '?') /* a new query for the same path */
		n = snprintf(out, cap, "%s://%s%.*s%s", b.tls ? "https" : "http", b.hosthdr,
			     (int)strcspn(b.path, "?"), b.path, loc);
	else { /* relative to the base path's directory (RFC 3986 5.2.3, without dot segments) */
		size_t dir = strcspn(b.path, "?");

		while (dir > 0 && b.path[dir - 1] != '/')
			dir--;
		n = snprintf(out, cap, "%s://%s%.*s%s", b.tls ? "https" : "http", b.hosthdr,
			     (int)dir, b.path, loc);
	}
	if (n < 0 || (size_t)n >= cap)
		return -EINVAL;
	*strchrnul(out, '#') = 0;
	return url_parse(out, &t) < 0 ? -EINVAL : 0;
}

static int is_redirect(int status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

int http_fetch(const char *url, const struct ca_bundle *ca, int timeout_ms, size_t max,
	       struct http_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	char cur[2048], next[2048], loc[2048];
	struct url u;

	memset(resp, 0, sizeof *resp);
	if (snprintf(cur, sizeof cur, "%s", url) >= (int)sizeof cur || url_parse(cur, &u) < 0)
		return errbuf_set(err, errlen, "'%.200s' is not an http[s]://HOST[:PORT]/PATH URL",
				  url);
	for (int hop = 0;; hop++) {
		struct url nu;
		int r = request(&u, NULL, ca, deadline, max, resp, err, errlen);

		if (r < 0 || !is_redirect(resp->status))
			return r;
		if (hop == HTTP_REDIRECTS_MAX) {
			http_response_free(resp);
			errbuf_set(err, errlen, "%s: more than %d redirects", u.hostport,
				   HTTP_REDIRECTS_MAX);
			return -ELOOP;
		}
		r = header_value(resp->buf, resp->body, "Location", loc, sizeof loc);
		if (r == 0)
			r = http_location_resolve(cur, loc, next, sizeof next);
		if (r < 0) {
			errbuf_set(err, errlen, "%s: HTTP %d with %s Location", u.hostport,
				   resp->status, r == -ENOENT ? "no" : "an unusable");
			http_response_free(resp);
			return -EINVAL;
		}
		http_response_free(resp);
		url_parse(next, &nu);
		if (u.tls && !nu.tls) {
			errbuf_set(err, errlen, "%s: redirect from https to http refused (%.200s)",
				   u.hostport, next);
			return -EPERM;
		}
		memcpy(cur, next, sizeof cur);
		u = nu;
	}
}

void http_response_free(struct http_response *resp)
{
	free(resp->buf);
	memset(resp, 0, sizeof *resp);
}
