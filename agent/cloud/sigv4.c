/* AWS Signature Version 4, header form (docs/sigv4.md): the canonical request (method, URI
 * encoded and normalised path, sorted encoded query, lower-cased trimmed sorted headers, the
 * signed header list, the payload hash), the string to sign, the signing key's HMAC chain and
 * the Authorization header. Checked against the aws-c-auth SigV4 suite in
 * tests/cloud/test_sigv4.c. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <bearssl.h>

#include "cloud/sigv4.h"

struct wbuf {
	char *p;
	size_t len, cap;
	int overflow;
};

static void wb_put(struct wbuf *b, const void *s, size_t n)
{
	if (b->overflow || n > b->cap - b->len) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void wb_str(struct wbuf *b, const char *s)
{
	wb_put(b, s, strlen(s));
}

static void wb_chr(struct wbuf *b, char c)
{
	wb_put(b, &c, 1);
}

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static void wb_encode(struct wbuf *b, const char *src, size_t len, int keep_slash)
{
	static const char hexd[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			wb_chr(b, (char)c);
		} else {
			char e[3] = {'%', hexd[c >> 4], hexd[c & 15]};

			wb_put(b, e, 3);
		}
	}
}

ssize_t sigv4_uri_encode(const char *src, size_t len, int keep_slash, char *out, size_t cap)
{
	struct wbuf b = {out, 0, cap ? cap - 1 : 0, cap == 0};

	wb_encode(&b, src, len, keep_slash);
	if (b.overflow)
		return -ENOBUFS;
	out[b.len] = '\0';
	return (ssize_t)b.len;
}

/* Percent-decodes src[0..len) into out (len bytes at most); a '%' not followed by two hex
 * digits stays as it is, as AWS's own signers treat it. */
static size_t pct_decode(const char *src, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (src[i] == '%' && i + 2 < len && hex_digit(src[i + 1]) >= 0 &&
		    hex_digit(src[i + 2]) >= 0) {
			out[n++] = (char)(hex_digit(src[i + 1]) * 16 + hex_digit(src[i + 2]));
			i += 2;
		} else {
			out[n++] = src[i];
		}
	}
	return n;
}

/* The canonical URI: with normalisation, empty and "." segments dropped and ".." removing
 * the one before (RFC 3986 §5.2.4), a trailing slash kept; each byte then URI-encoded. */
static int canonical_path(struct wbuf *b, const char *path, int normalize)
{
	size_t plen = strlen(path);

	if (plen == 0 || path[0] != '/')
		return -EINVAL;
	if (!normalize) {
		wb_encode(b, path, plen, 1);
		return 0;
	}
	/* segment start offsets of the output path */
	const char *seg[128];
	size_t seglen[128];
	size_t nseg = 0;
	const char *p = path, *end = path + plen;

	while (p < end) {
		while (p < end && *p == '/')
			p++;
		const char *s = p;

		while (p < end && *p != '/')
			p++;
		size_t l = (size_t)(p - s);

		if (l == 0 || (l == 1 && s[0] == '.'))
			continue;
		if (l == 2 && s[0] == '.' && s[1] == '.') {
			if (nseg > 0)
				nseg--;
			continue;
		}
		if (nseg == 128)
			return -E2BIG;
		seg[nseg] = s;
		seglen[nseg++] = l;
	}
	wb_chr(b, '/');
	for (size_t i = 0; i < nseg; i++) {
		wb_encode(b, seg[i], seglen[i], 0);
		if (i + 1 < nseg)
			wb_chr(b, '/');
	}
	if (nseg > 0 && path[plen - 1] == '/')
		wb_chr(b, '/');
	return 0;
}

struct qparam {
	char *key, *val; /* encoded, NUL-terminated, in the scratch buffer */
};

static int qparam_cmp(const struct qparam *a, const struct qparam *b)
{
	int c = strcmp(a->key, b->key);

	return c ? c : strcmp(a->val, b->val);
}

/* The canonical query string: each name and value decoded, then URI-encoded, sorted by
 * name then value (byte order), joined with '&'. */
static int canonical_query(struct wbuf *b, const char *query)
{
	if (!query || !*query)
		return 0;
	size_t qlen = strlen(query);

	if (qlen > 4096)
		return -E2BIG;
	/* decoded bytes never exceed the input; encoded ones at most three times that */
	char dec[4096];
	char scratch[3 * 4096 + 2 * SIGV4_MAX_QUERY_PARAMS];
	struct wbuf s = {scratch, 0, sizeof(scratch), 0};
	struct qparam qp[SIGV4_MAX_QUERY_PARAMS];
	size_t n = 0;
	const char *p = query, *end = query + qlen;

	while (p <= end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;

		if (pe > p) {
			const char *eq = memchr(p, '=', (size_t)(pe - p));
			const char *ke = eq ? eq : pe;
			size_t dl;

			if (n == SIGV4_MAX_QUERY_PARAMS)
				return -E2BIG;
			qp[n].key = scratch + s.len;
			dl = pct_decode(p, (size_t)(ke - p), dec);
			wb_encode(&s, dec, dl, 0);
			wb_chr(&s, '\0');
			qp[n].val = scratch + s.len;
			if (eq) {
				dl = pct_decode(eq + 1, (size_t)(pe - eq - 1), dec);
				wb_encode(&s, dec, dl, 0);
			}
			wb_chr(&s, '\0');
			if (s.overflow)
				return -E2BIG;
			n++;
		}
		p = pe + 1;
	}
	/* insertion sort: n is small and bounded */
	for (size_t i = 1; i < n; i++) {
		struct qparam t = qp[i];
		size_t j = i;

		while (j > 0 && qparam_cmp(&qp[j - 1], &t) > 0) {
			qp[j] = qp[j - 1];
			j--;
		}
		qp[j] = t;
	}
	for (size_t i = 0; i < n; i++) {
		if (i)
			wb_chr(b, '&');
		wb_str(b, qp[i].key);
		wb_chr(b, '=');
		wb_str(b, qp[i].val);
	}
	return 0;
}

struct hent {
	char name[64]; /* lower-cased */
	const char *value;
	size_t value_len;
};

static int is_tchar(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c);
}

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A header value trimmed, with each run of white space (obs-fold line breaks included) as
 * one space. */
static void wb_header_value(struct wbuf *b, const char *v, size_t len)
{
	size_t i = 0;

	while (i < len && is_ws(v[i]))
		i++;
	while (len > i && is_ws(v[len - 1]))
		len--;
	for (; i < len; i++) {
		if (is_ws(v[i])) {
			while (i + 1 < len && is_ws(v[i + 1]))
				i++;
			wb_chr(b, ' ');
		} else {
			wb_chr(b, v[i]);
		}
	}
}

static int add_hent(struct hent *h, size_t *n, const char *name, const char *value, size_t vlen,
		    char *err, size_t errlen)
{
	size_t nl = strlen(name);

	if (*n == SIGV4_MAX_HEADERS + 3)
		return -E2BIG;
	if (nl == 0 || nl >= sizeof(h->name))
		return errbuf_set(err, errlen, "sigv4: header name of %zu bytes", nl);
	for (size_t i = 0; i < nl; i++) {
		if (!is_tchar((unsigned char)name[i]))
			return errbuf_set(err, errlen, "sigv4: bad header name %s", name);
		h[*n].name[i] = (char)tolower((unsigned char)name[i]);
	}
	h[*n].name[nl] = '\0';
	for (size_t i = 0; i < vlen; i++) {
		unsigned char c = (unsigned char)value[i];

		if ((c < 0x20 && !is_ws((char)c)) || c == 0x7f)
			return errbuf_set(err, errlen, "sigv4: control character in header %s",
					  name);
	}
	h[*n].value = value;
	h[*n].value_len = vlen;
	(*n)++;
	return 0;
}

static void hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
			unsigned char out[32])
{
	br_hmac_key_context kc;
	br_hmac_context hc;

	br_hmac_key_init(&kc, &br_sha256_vtable, key, klen);
	br_hmac_init(&hc, &kc, 0);
	br_hmac_update(&hc, msg, mlen);
	br_hmac_out(&hc, out);
	secret_wipe(&kc, sizeof(kc));
	secret_wipe(&hc, sizeof(hc));
}

int sigv4_signing_key(const struct secret *secret_key, const char *date, const char *region,
		      const char *service, struct secret **ret)
{
	struct secret *k0 = secret_new(4 + secret_key->len);
	struct secret *k = secret_new(32);

	if (!k0 || !k) {
		secret_free(k0);
		secret_free(k);
		return -ENOMEM;
	}
	memcpy(k0->bytes, "AWS4", 4);
	memcpy(k0->bytes + 4, secret_key->bytes, secret_key->len);
	hmac_sha256(k0->bytes, k0->len, date, strlen(date), k->bytes);
	secret_free(k0);
	hmac_sha256(k->bytes, 32, region, strlen(region), k->bytes);
	hmac_sha256(k->bytes, 32, service, strlen(service), k->bytes);
	hmac_sha256(k->bytes, 32, "aws4_request", 12, k->bytes);
	*ret = k;
	return 0;
}

static int scope_field_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SIGV4_MAX_SCOPE_FIELD)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return 0;
	return 1;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
	br_sha256_context c;
	unsigned char h[32];

	br_sha256_init(&c);
	br_sha256_update(&c, data, len);
	br_sha256_out(&c, h);
	hex_encode(h, 32, out, 65);
}

int sigv4_sign(const struct sigv4_request *req, const struct sigv4_creds *creds,
	       struct sigv4_result *out, char *canon, size_t canon_cap, char *sts, size_t sts_cap,
	       char *err, size_t errlen)
{
	struct hent h[SIGV4_MAX_HEADERS + 3];
	size_t nh = 0;
	struct tm tm;
	char date[9], scope[3 * SIGV4_MAX_SCOPE_FIELD + 32], signed_hdrs[SIGV4_MAX_HEADERS * 65];
	char sts_buf[256], canon_hash[65];
	int have_host = 0, r;
	struct sigv4_result res;
	const struct secret *tok = creds->session_token;

	if (!creds->access_key_id || !creds->secret_key ||
	    strlen(creds->access_key_id) > SIGV4_MAX_KEY_ID)
		return errbuf_set(err, errlen, "sigv4: no credentials");
	for (const char *c = creds->access_key_id; *c; c++)
		if (!isalnum((unsigned char)*c))
			return errbuf_set(err, errlen, "sigv4: bad access key id");
	if (!scope_field_ok(req->region) || !scope_field_ok(req->service))
		return errbuf_set(err, errlen, "sigv4: bad region or service");
	if (req->n_headers > SIGV4_MAX_HEADERS)
		return -E2BIG;
	if (!gmtime_r(&req->when, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1970)
		return errbuf_set(err, errlen, "sigv4: bad signing time");
	memset(&res, 0, sizeof(res));
	if (snprintf(res.amz_date, sizeof(res.amz_date), "%04d%02d%02dT%02d%02d%02dZ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		     tm.tm_sec) != 16)
		return errbuf_set(err, errlen, "sigv4: bad signing time");
	memcpy(date, res.amz_date, 8);
	date[8] = '\0';
	snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date, req->region, req->service);
	sha256_hex(req->body ? req->body : "", req->body ? req->body_len : 0, res.content_sha256);

	for (size_t i = 0; i < req->n_headers; i++) {
		const char *nm = req->headers[i].name;

		if (!strcasecmp(nm, "x-amz-date") || !strcasecmp(nm, "authorization") ||
		    !strcasecmp(nm, "x-amz-security-token") ||
		    ((req->flags & SIGV4_CONTENT_SHA256) &&
		     !strcasecmp(nm, "x-amz-content-sha256")))
			return errbuf_set(err, errlen, "sigv4: header %s is the signer's", nm);
		if (!strcasecmp(nm, "host"))
			have_host = 1;
		r = add_hent(h, &nh, nm, req->headers[i].value, strlen(req->headers[i].value), err,
			     errlen);
		if (r < 0)
			return r;
	}
	if (!have_host)
		return errbuf_set(err, errlen, "sigv4: no Host header");
	r = add_hent(h, &nh, "x-amz-date", res.amz_date, strlen(res.amz_date), err, errlen);
	if (r == 0 && tok && !(req->flags & SIGV4_TOKEN_UNSIGNED))
		r = add_hent(h, &nh, "x-amz-security-token", (const char *)tok->bytes, tok->len,
			     err, errlen);
	if (r == 0 && (req->flags & SIGV4_CONTENT_SHA256))
		r = add_hent(h, &nh, "x-amz-content-sha256", res.content_sha256, 64, err, errlen);
	if (r < 0)
		return r;
	/* stable sort by name: values of a repeated header keep their order */
	for (size_t i = 1; i < nh; i++) {
		struct hent t = h[i];
		size_t j = i;

		while (j > 0 && strcmp(h[j - 1].name, t.name) > 0) {
			h[j] = h[j - 1];
			j--;
		}
		h[j] = t;
	}

	struct secret *cr = secret_new(SIGV4_MAX_CANONICAL);

	if (!cr)
		return -ENOMEM;
	struct wbuf c = {(char *)cr->bytes, 0, cr->len, 0};
	struct wbuf sh = {signed_hdrs, 0, sizeof(signed_hdrs) - 1, 0};

	wb_str(&c, req->method);
	wb_chr(&c, '\n');
	r = canonical_path(&c, req->path ? req->path : "", !(req->flags & SIGV4_NO_NORMALIZE));
	if (r < 0) {
		secret_free(cr);
		return r == -EINVAL ? errbuf_set(err, errlen, "sigv4: bad path") : r;
	}
	wb_chr(&c, '\n');
	r = canonical_query(&c, req->query);
	if (r < 0) {
		secret_free(cr);
		return r;
	}
	wb_chr(&c, '\n');
	for (size_t i = 0; i < nh; i++) {
		if (i > 0 && !strcmp(h[i].name, h[i - 1].name)) {
			wb_chr(&c, ',');
		} else {
			if (i > 0) {
				wb_chr(&c, '\n');
				wb_chr(&sh, ';');
			}
			wb_str(&c, h[i].name);
			wb_chr(&c, ':');
			wb_str(&sh, h[i].name);
		}
		wb_header_value(&c, h[i].value, h[i].value_len);
	}
	wb_str(&c, "\n\n");
	sh.p[sh.len] = '\0';
	wb_str(&c, signed_hdrs);
	wb_chr(&c, '\n');
	wb_str(&c, res.content_sha256);
	if (c.overflow || sh.overflow) {
		secret_free(cr);
		return -E2BIG;
	}
	sha256_hex(c.p, c.len, canon_hash);
	if (canon) {
		if (canon_cap <= c.len) {
			secret_free(cr);
			return -ENOBUFS;
		}
		memcpy(canon, c.p, c.len);
		canon[c.len] = '\0';
	}
	secret_free(cr);

	r = snprintf(sts_buf, sizeof(sts_buf), "AWS4-HMAC-SHA256\n%s\n%s\n%s", res.amz_date, scope,
		     canon_hash);
	if (r < 0 || (size_t)r >= sizeof(sts_buf))
		return -E2BIG;
	if (sts) {
		if (sts_cap <= (size_t)r)
			return -ENOBUFS;
		memcpy(sts, sts_buf, (size_t)r + 1);
	}

	struct secret *key = NULL;
	unsigned char sig[32];

	r = sigv4_signing_key(creds->secret_key, date, req->region, req->service, &key);
	if (r < 0)
		return r;
	hmac_sha256(key->bytes, key->len, sts_buf, strlen(sts_buf), sig);
	secret_free(key);
	hex_encode(sig, 32, res.signature, sizeof(res.signature));
	r = snprintf(res.authorization, sizeof(res.authorization),
		     "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		     creds->access_key_id, scope, signed_hdrs, res.signature);
	if (r < 0 || (size_t)r >= sizeof(res.authorization))
		return -E2BIG;
	*out = res;
	return 0;
}
