/* The component installer of spec §9: fetch (data: URLs decoded in place, http:// and https://
 * through the agent's HTTP client with redirects followed, the https chain checked against
 * the CA bundle of the root the components are installed into; retried on network errors
 * and the statuses Constellation retries, never on a refused certificate or redirect),
 * verify "sha256:<hex>" (an empty hash skips it, as in Go, with a warning), then install:
 * a plain file with mode 0544, or a gzip'd tar extracted below install_path.
 *
 * Extraction never leaves install_path: names and link targets with a ".." element or an
 * absolute target are refused, every path is walked from the install directory with
 * O_NOFOLLOW (a symlink planted by an earlier entry cannot redirect a later one), files are
 * created with O_NOFOLLOW. Symlinks follow tar's meaning (a link at Name pointing to Linkname);
 * Constellation's installer creates them the other way round, which no component uses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bearssl.h>
#include <zlib.h>

#include "base/base.h"
#include "kube.h"
#include "net/net.h"

#define COMPONENT_MAX	   (1ull << 30)
#define FETCH_RETRY_MS	   10
#define FETCH_ATTEMPTS_MAX 3000

int data_url_decode(const char *url, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	const char *comma, *data;
	size_t n, meta;
	uint8_t *buf;
	int b64;

	if (strncmp(url, "data:", 5) || !(comma = strchr(url + 5, ',')))
		return errbuf_set(err, errlen, "data URL: not data:[type][;base64],DATA");
	meta = (size_t)(comma - (url + 5));
	b64 = meta >= 7 && !strncmp(comma - 7, ";base64", 7);
	data = comma + 1;
	n = strlen(data);
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	if (b64) {
		if (base64_decode(BASE64_STD, data, n, buf, n + 1, len) < 0) {
			free(buf);
			return errbuf_set(err, errlen, "data URL: bad base64");
		}
	} else {
		size_t o = 0;

		for (size_t i = 0; i < n; i++) {
			if (data[i] != '%') {
				buf[o++] = (uint8_t)data[i];
				continue;
			}
			if (i + 2 >= n || hex_digit(data[i + 1]) < 0 ||
			    hex_digit(data[i + 2]) < 0) {
				free(buf);
				return errbuf_set(err, errlen, "data URL: bad percent escape");
			}
			buf[o++] = (uint8_t)(hex_digit(data[i + 1]) << 4 | hex_digit(data[i + 2]));
			i += 2;
		}
		*len = o;
	}
	*out = buf;
	return 0;
}

static int retryable(int status)
{
	return status == 408 || status == 425 || status == 429 || status == 502 || status == 503 ||
	       status == 504;
}

/* Errors of http_fetch that another attempt cannot cure. */
static int permanent(int r)
{
	return r == -EKEYREJECTED || r == -ELOOP || r == -EPERM || r == -ENOKEY || r == -EINVAL ||
	       r == -EFBIG || r == -ENOMEM;
}

/* The CA bundle, read at the first https:// need and kept for the process: parsing Debian's
 * (about 145 certificates) takes about 35 ms, and a node installs several components. A
 * bundle that could not be read is tried again at the next need. */
static struct ca_bundle bundle;
static char bundle_path[4096];

static const struct ca_bundle *bundle_get(const char *path, char *err, size_t errlen)
{
	if (bundle.n && !strcmp(bundle_path, path))
		return &bundle;
	ca_bundle_free(&bundle);
	bundle_path[0] = 0;
	if (ca_bundle_load(path, &bundle, err, errlen) < 0)
		return NULL;
	snprintf(bundle_path, sizeof bundle_path, "%s", path);
	if (bundle.skipped)
		log_warn("component: CA bundle %s: %u certificates skipped (not decodable), %zu "
			 "used",
			 path, bundle.skipped, bundle.n);
	return &bundle;
}

/* The component's bytes in *buf (malloc'd). ca_path: the bundle for https://, read when the
 * URL or a redirect is https; one that cannot be read fails the fetch with its reason. */
static int fetch(const char *url, const char *ca_path, int timeout_ms, uint8_t **buf, size_t *len)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms, quiet_until = 0;
	const struct ca_bundle *ca = NULL;
	char err[300] = "", caerr[300] = "";
	int r = 0;

	if (!strncmp(url, "data:", 5)) {
		r = data_url_decode(url, buf, len, err, sizeof err);
		return r < 0 ? log_err(r, "component: %s", err) : 0;
	}
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return log_err(-EPROTONOSUPPORT,
			       "component: %.200s: only data:, http:// and https:// URLs", url);
	if (!strncmp(url, "https://", 8) && !(ca = bundle_get(ca_path, caerr, sizeof caerr)))
		return log_err(-ENOKEY, "component: %.200s: %s", url, caerr);
	for (int attempt = 1; attempt <= FETCH_ATTEMPTS_MAX; attempt++) {
		struct http_response resp;
		uint64_t now = monotonic_ms();

		if (now >= deadline)
			break;
		r = http_fetch(url, ca, (int)(deadline - now), COMPONENT_MAX, &resp, err,
			       sizeof err);
		if (r == -ENOKEY && !ca) { /* an http:// URL redirected to https:// */
			if (!(ca = bundle_get(ca_path, caerr, sizeof caerr)))
				return log_err(-ENOKEY, "component: %.200s: %s: %s", url, err,
					       caerr);
			continue;
		}
		if (r == 0 && resp.status == 200) {
			*buf = (uint8_t *)resp.buf;
			memmove(*buf, resp.body, resp.len);
			*len = resp.len;
			return 0;
		}
		if (r == 0 && !retryable(resp.status)) {
			log_error("component: %.200s: HTTP %d", url, resp.status);
			http_response_free(&resp);
			return -EIO;
		}
		if (r == 0) {
			log_info("component: %.200s: HTTP %d, retrying", url, resp.status);
			http_response_free(&resp);
		} else if (permanent(r)) {
			log_error("component: %.200s: %s", url, err);
			return r;
		} else if (monotonic_ms() >= quiet_until) { /* network errors: a line every 10 s */
			log_info("component: %.200s: %s, retrying", url, err);
			quiet_until = monotonic_ms() + 10000;
		}
		usleep(FETCH_RETRY_MS * 1000);
	}
	return log_err(-ETIMEDOUT, "component: %.200s: not fetched within %d s%s%s%s", url,
		       timeout_ms / 1000, r < 0 ? " (" : "", r < 0 ? err : "", r < 0 ? ")" : "");
}

/* A relative path of entry names without "..": "a/b" from "./a/b" or "/a/b"; NULL when it
 * has a ".." element or is empty after cleaning. */
static const char *clean(const char *name)
{
	const char *p;

	while (name[0] == '/' || (name[0] == '.' && name[1] == '/'))
		name += name[0] == '/' ? 1 : 2;
	for (p = name; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2))
			return NULL;
		p += n;
		while (*p == '/')
			p++;
	}
	return name;
}

/* Opens (creating with 0755) every directory of rel below rootfd without following links and
 * returns the parent's fd; *last points at the final element. */
static int walk(int rootfd, const char *rel, char *copy, size_t cap, const char **last)
{
	char *p, *slash;
	int fd = dup(rootfd);

	if (fd < 0 || strlen(rel) >= cap)
		return fd < 0 ? -errno : (close(fd), -ENAMETOOLONG);
	strcpy(copy, rel);
	for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
		int next;

		*slash = 0;
		if (!*p || !strcmp(p, ".")) {
			continue;
		}
		next = openat(fd, p, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_RDONLY);
		if (next < 0 && errno == ENOENT && mkdirat(fd, p, 0755) == 0)
			next = openat(fd, p, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_RDONLY);
		if (next < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		close(fd);
		fd = next;
	}
	*last = p;
	return fd;
}

struct extract {
	int rootfd;
	int fd; /* the regular file being written */
	const char *dest;
	unsigned entries;
};

static int x_entry(void *ctx, const struct tar_entry *e, char *err, size_t errlen)
{
	struct extract *x = ctx;
	const char *rel = clean(e->name), *last = NULL;
	char copy[1100];
	int dirfd, r = 0;

	if (!rel)
		return errbuf_set(err, errlen, "tar: '%.200s' leaves the install path", e->name);
	if (++x->entries > 100000)
		return errbuf_set(err, errlen, "tar: more than 100000 entries");
	if (!*rel || !strcmp(rel, ".")) /* the archive's root directory */
		return e->type == '5' ? 0 : errbuf_set(err, errlen, "tar: entry without a name");
	if (e->type == '2' && (e->link[0] == '/' || !clean(e->link) || !e->link[0]))
		return errbuf_set(err, errlen,
				  "tar: link '%.200s' -> '%.200s' leaves the install path", e->name,
				  e->link);
	if (e->type != '0' && e->type != '7' && e->type != '5' && e->type != '2')
		return errbuf_set(err, errlen, "tar: '%.200s': entry type '%c' not supported",
				  e->name, e->type > ' ' && e->type < 127 ? e->type : '?');
	dirfd = walk(x->rootfd, rel, copy, sizeof copy, &last);
	if (dirfd < 0)
		return errbuf_set(err, errlen, "tar: '%.200s': %s (a link on the way?)", e->name,
				  strerror(-dirfd));
	if (!*last) { /* "dir/": walk made it */
		close(dirfd);
		return 0;
	}
	switch (e->type) {
	case '5':
		if (mkdirat(dirfd, last, e->mode & 0544) < 0 && errno != EEXIST)
			r = -errno;
		break;
	case '2':
		if (symlinkat(e->link, dirfd, last) < 0)
			r = -errno;
		break;
	default:
		x->fd = openat(dirfd, last, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			       e->mode & 07777);
		if (x->fd < 0)
			r = -errno;
	}
	close(dirfd);
	if (r < 0)
		return errbuf_set(err, errlen, "tar: '%.200s': %s", e->name, strerror(-r));
	return 0;
}

static int x_data(void *ctx, const uint8_t *p, size_t n, char *err, size_t errlen)
{
	struct extract *x = ctx;

	while (n) {
		ssize_t k = write(x->fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return errbuf_set(err, errlen, "tar: writing: %s", strerror(errno));
		p += k, n -= (size_t)k;
	}
	return 0;
}

static int x_done(void *ctx, const struct tar_entry *e, char *err, size_t errlen)
{
	struct extract *x = ctx;

	(void)e, (void)err, (void)errlen;
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
	return 0;
}

static int extract(const uint8_t *gz, size_t len, const char *dest)
{
	static const struct tar_ops ops = {x_entry, x_data, x_done};
	struct extract x = {.fd = -1, .dest = dest};
	struct tar_reader *t = malloc(sizeof *t);
	uint8_t out[65536];
	z_stream z = {0};
	char err[512] = "";
	int r = 0, zr = Z_OK;

	if (!t)
		return -ENOMEM;
	if ((r = mkdir_parents(dest, 0755)) < 0 ||
	    (x.rootfd = open(dest, O_DIRECTORY | O_CLOEXEC | O_RDONLY)) < 0) {
		free(t);
		return log_err(r < 0 ? r : -errno, "component: %s", dest);
	}
	tar_init(t, &ops, &x);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) { /* gzip only */
		r = -ENOMEM;
		goto out;
	}
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len; /* components are below 4 GiB (COMPONENT_MAX) */
	while (zr != Z_STREAM_END) {
		z.next_out = out;
		z.avail_out = sizeof out;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			snprintf(err, sizeof err, "not a gzip stream (zlib: %s)",
				 z.msg ? z.msg : "truncated");
			r = -EINVAL;
			break;
		}
		if (tar_feed(t, out, sizeof out - z.avail_out, err, sizeof err) < 0) {
			r = -EINVAL;
			break;
		}
	}
	if (!r && tar_finish(t, err, sizeof err) < 0)
		r = -EINVAL;
	inflateEnd(&z);
out:
	x_done(&x, NULL, NULL, 0);
	close(x.rootfd);
	free(t);
	if (r < 0)
		return log_err(r, "component: extracting into %s: %s", dest, err);
	return 0;
}

int component_install(const struct component *c, const char *root, int timeout_ms)
{
	return component_install_ca(c, root, NULL, timeout_ms);
}

int component_install_ca(const struct component *c, const char *root, const char *ca_bundle,
			 int timeout_ms)
{
	char dest[4096], ca[4096], hex[65];
	uint8_t *buf = NULL, sum[32];
	size_t len = 0;
	int r;

	if (c->install_path[0] != '/' || !clean(c->install_path))
		return log_err(-EINVAL,
			       "component: install path '%.200s' must be absolute without ..",
			       c->install_path);
	if (snprintf(dest, sizeof dest, "%s%s", root ? root : "", c->install_path) >=
	    (int)sizeof dest)
		return log_err(-ENAMETOOLONG, "component: install path too long");
	if (ca_bundle)
		snprintf(ca, sizeof ca, "%s", ca_bundle);
	else if (snprintf(ca, sizeof ca, "%s" CA_BUNDLE_DEFAULT, root ? root : "") >=
		 (int)sizeof ca)
		return log_err(-ENAMETOOLONG, "component: CA bundle path too long");
	if ((r = fetch(c->url, ca, timeout_ms, &buf, &len)) < 0)
		return r;
	if (c->hash && c->hash[0]) {
		br_sha256_context h;
		char want[72];

		br_sha256_init(&h);
		br_sha256_update(&h, buf, len);
		br_sha256_out(&h, sum);
		hex_encode(sum, 32, hex, sizeof hex);
		snprintf(want, sizeof want, "sha256:%s", hex);
		if (strcmp(want, c->hash)) {
			free(buf);
			return log_err(-EBADMSG, "component: %s: hash %s, want %.80s",
				       c->install_path, want, c->hash);
		}
	} else {
		log_warn("component: %s: no hash given, not verified", c->install_path);
	}
	r = c->extract ? extract(buf, len, dest) : write_file_replace(dest, buf, len, 0544);
	free(buf);
	if (r < 0 && !c->extract)
		return log_err(r, "component: writing %s", dest);
	if (r == 0)
		log_info("component: installed %s (%zu bytes%s)", c->install_path, len,
			 c->extract ? ", extracted" : "");
	return r;
}
