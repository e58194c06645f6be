/* The control-plane APIs' transport (api_http.h): agent/net's TCP dial and TLS client, HTTP/1.1
 * with Connection: close, the response parsed by http_parse_response. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "cloud/api_http.h"
#include "cloud/cloud.h"
#include "net/net.h"

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	struct pollfd pf = {.fd = fd, .events = ev};
	uint64_t now = monotonic_ms();

	if (now >= deadline)
		return -ETIMEDOUT;
	if (poll(&pf, 1, (int)(deadline - now)) < 0)
		return errno == EINTR ? 0 : -errno;
	return 0;
}

static int plain_write(int fd, const uint8_t *p, size_t n, uint64_t deadline, char *err,
		       size_t errlen)
{
	for (size_t off = 0; off < n;) {
		ssize_t k;
		int r = wait_fd(fd, POLLOUT, deadline);

		if (r < 0)
			return errbuf_set(err, errlen, "sending: %s", strerror(-r)), r;
		k = send(fd, p + off, n - off, MSG_NOSIGNAL);
		if (k < 0 && errno != EAGAIN && errno != EINTR) {
			r = -errno;
			errbuf_set(err, errlen, "send: %s", strerror(-r));
			return r;
		}
		if (k > 0)
			off += (size_t)k;
	}
	return 0;
}

/* The one exchange behind both entry points: hdrs (hl bytes, the token's) as given; with own
 * the Host and Accept lines are ours (AWS signs its own Host line, so it brings it). */
static int exchange(const char *method, const char *url, const uint8_t *hdrs, size_t hl, int own,
		    const void *body, size_t body_len, size_t max, const struct ca_bundle *ca,
		    int timeout_ms, struct http_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int tls = !strncmp(url, "https://", 8);
	const char *h = url + (tls ? 8 : 7);
	size_t n = strcspn(h, "/?"), len = 0, limit = max + 16384;
	char host[256], hostport[300], port[8];
	struct tls_client *tc = NULL;
	struct secret *req = NULL;
	char *buf = NULL;
	int fd = -1, r = 0, w;

	memset(resp, 0, sizeof *resp);
	if ((!tls && strncmp(url, "http://", 7)) || n == 0 || n >= sizeof host)
		return errbuf_set(err, errlen, "bad URL");
	snprintf(hostport, sizeof hostport, "%.*s%s", (int)n, h,
		 memchr(h, ':', n) && h[0] != '[' ? "" : (tls ? ":443" : ":80"));
	if (hostport_split(hostport, host, sizeof host, port, sizeof port) < 0)
		return errbuf_set(err, errlen, "bad URL");
	if (tls && !ca) {
		errbuf_set(err, errlen, "https without a CA bundle");
		return -ENOKEY;
	}
	req = secret_new(strlen(url) + hl + body_len + 512);
	if (!req)
		return -ENOMEM;
	if (own)
		w = snprintf((char *)req->bytes, req->len, "%s %s%s HTTP/1.1\r\nHost: %.*s\r\n",
			     method ? method : "GET", h[n] == '/' ? "" : "/", h + n, (int)n, h);
	else
		w = snprintf((char *)req->bytes, req->len, "%s %s%s HTTP/1.1\r\n",
			     method ? method : "GET", h[n] == '/' ? "" : "/", h + n);
	if (w < 0 || (size_t)w + hl >= req->len) {
		r = errbuf_set(err, errlen, "request too long");
		goto out;
	}
	if (hl)
		memcpy(req->bytes + w, hdrs, hl);
	w += (int)hl;
	if (body || (method && strcmp(method, "GET")))
		w += snprintf((char *)req->bytes + w, req->len - (size_t)w,
			      "Content-Length: %zu\r\n", body_len);
	w += snprintf((char *)req->bytes + w, req->len - (size_t)w,
		      "User-Agent: constel-agent\r\n%sConnection: close\r\n\r\n",
		      own ? "Accept: application/json\r\n" : "");
	if ((size_t)w + body_len > req->len) {
		r = errbuf_set(err, errlen, "request too long");
		goto out;
	}
	if (body_len)
		memcpy(req->bytes + w, body, body_len);
	fd = tcp_dial(hostport, timeout_ms, err, errlen);
	if (fd < 0) {
		r = fd;
		fd = -1;
		goto out;
	}
	if (tls && (r = tls_client_open(fd, host, ca, deadline, &tc, err, errlen)) < 0)
		goto out;
	r = tc ? tls_client_write(tc, req->bytes, (size_t)w + body_len, deadline, err, errlen)
	       : plain_write(fd, req->bytes, (size_t)w + body_len, deadline, err, errlen);
	if (r < 0)
		goto out;
	if (!(buf = malloc(limit + 1))) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t k;

		if (len == limit) {
			r = -EFBIG;
			errbuf_set(err, errlen, "%s: answer larger than %zu bytes", hostport, max);
			goto out;
		}
		if (tc) {
			k = tls_client_read(tc, buf + len, limit - len, deadline, err, errlen);
		} else {
			if ((r = wait_fd(fd, POLLIN, deadline)) < 0) {
				errbuf_set(err, errlen, "%s: reading: %s", hostport, strerror(-r));
				goto out;
			}
			k = read(fd, buf + len, limit - len);
			if (k < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (k < 0) {
				k = -errno;
				errbuf_set(err, errlen, "%s: read: %s", hostport, strerror(errno));
			}
		}
		if (k < 0) {
			r = (int)k;
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	if ((r = http_parse_response(buf, len, &resp->status, &resp->body, &resp->len, err,
				     errlen)) < 0)
		goto out;
	if (resp->len > max) {
		r = -EFBIG;
		errbuf_set(err, errlen, "%s: body larger than %zu bytes", hostport, max);
		goto out;
	}
	resp->body[resp->len] = '\0';
	resp->buf = buf;
	buf = NULL;
out:
	if (buf) {
		secret_wipe(buf, len);
		free(buf);
	}
	if (r < 0)
		memset(resp, 0, sizeof *resp);
	tls_client_free(tc);
	if (fd >= 0)
		close(fd);
	secret_free(req);
	return r;
}

int api_http(const char *method, const char *url, const struct secret *headers, const void *body,
	     size_t body_len, size_t max, const struct ca_bundle *ca, int timeout_ms,
	     struct http_response *resp, char *err, size_t errlen)
{
	size_t hl = headers ? strnlen((const char *)headers->bytes, headers->len) : 0;

	return exchange(method, url, headers ? headers->bytes : NULL, hl, 1, body, body_len, max,
			ca, timeout_ms, resp, err, errlen);
}

int cloud_api_request(const char *method, const struct ca_bundle *ca, const char *url,
		      const char *headers, const void *body, size_t body_len, size_t max,
		      int timeout_ms, struct http_response *resp, char *err, size_t errlen)
{
	return exchange(method, url, (const uint8_t *)headers, strlen(headers), 0, body, body_len,
			max, ca, timeout_ms, resp, err, errlen);
}

const struct ca_bundle *api_ca_bundle(const char *path)
{
	static struct ca_bundle b;
	static char loaded[256];
	char err[256];

	if (!path)
		path = CA_BUNDLE_DEFAULT;
	if (b.n && !strcmp(loaded, path))
		return &b;
	ca_bundle_free(&b);
	memset(&b, 0, sizeof b);
	if (ca_bundle_load(path, &b, err, sizeof err) < 0) {
		log_error("cloud: the CA bundle for the cloud's API: %s", err);
		return NULL;
	}
	snprintf(loaded, sizeof loaded, "%s", path);
	return &b;
}
