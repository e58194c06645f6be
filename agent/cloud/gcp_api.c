/* GCE Compute REST for the platform layer (gcp_api.h): the service account's token, the calls
 * with retries, and bounded readers of the answers. Paths and shapes from
 * cloud.google.com/compute/docs/reference/rest/v1 (instances.get, instances.list, zones.list,
 * globalForwardingRules.list, forwardingRules.list; "filter", "pageToken", "nextPageToken")
 * and cloud.google.com/compute/docs/access/create-enable-service-accounts-for-instances
 * (the token from the metadata server). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "base/base.h"
#include "cloud/api_http.h"
#include "cloud/gcp_api.h"
#include "net/net.h"

/* ---- readers ---- */
static int next_token(json_object *root, char *next, size_t cap, char *err, size_t errlen)
{
	int r = json_str_member(root, "nextPageToken", next, cap);

	if (r == -ENOENT) {
		next[0] = '\0';
		return 0;
	}
	if (r < 0 || !next[0])
		return errbuf_set(err, errlen, "gcp: nextPageToken is not a string of at most %zu",
				  cap - 1);
	return 0;
}

static int instance_of(json_object *in, struct gcp_instance *out, char *err, size_t errlen)
{
	json_object *labels, *nics, *items;
	int r;

	memset(out, 0, sizeof *out);
	if (!json_object_is_type(in, json_type_object))
		return errbuf_set(err, errlen, "gcp: an instance is not an object");
	if ((r = json_str_member(in, "name", out->name, sizeof out->name)) < 0)
		return errbuf_set(err, errlen, "gcp: instance %s name",
				  r == -ENOENT ? "without a" : "with a bad");
	labels = json_member(in, "labels", json_type_object);
	if (labels) {
		if (json_str_member(labels, GCP_LABEL_ROLE, out->role, sizeof out->role) == -EINVAL)
			return errbuf_set(err, errlen, "gcp: instance %s: bad label %s", out->name,
					  GCP_LABEL_ROLE);
		r = json_str_member(labels, GCP_LABEL_UID, out->uid, sizeof out->uid);
		if (r == -EINVAL)
			return errbuf_set(err, errlen, "gcp: instance %s: bad label %s", out->name,
					  GCP_LABEL_UID);
		out->has_uid = r == 0;
	}
	/* networkInterfaces[name == "nic0"].networkIP (convertToInstanceMetadata) */
	nics = json_member(in, "networkInterfaces", json_type_array);
	for (size_t i = 0; nics && i < json_object_array_length(nics); i++) {
		json_object *nic = json_object_array_get_idx(nics, i);
		char name[16];

		if (json_str_member(nic, "name", name, sizeof name) < 0 || strcmp(name, "nic0"))
			continue;
		if (json_str_member(nic, "networkIP", out->vpc_ip, sizeof out->vpc_ip) < 0 ||
		    !out->vpc_ip[0])
			return errbuf_set(err, errlen, "gcp: instance %s: nic0 without a networkIP",
					  out->name);
	}
	/* metadata.items[key == constellation-init-secret-hash].value */
	items =
	    json_member(json_member(in, "metadata", json_type_object), "items", json_type_array);
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *it = json_object_array_get_idx(items, i);
		char key[64];

		if (json_str_member(it, "key", key, sizeof key) < 0 ||
		    strcmp(key, GCP_ITEM_INIT_SECRET_HASH))
			continue;
		if (json_str_member(it, "value", out->init_secret_hash,
				    sizeof out->init_secret_hash) < 0)
			return errbuf_set(err, errlen, "gcp: instance %s: bad metadata item %s",
					  out->name, GCP_ITEM_INIT_SECRET_HASH);
		out->has_init_secret_hash = 1;
	}
	return 0;
}

int gcp_parse_instance(const char *json, size_t len, struct gcp_instance *out, char *err,
		       size_t errlen)
{
	json_object *root = json_parse_exact(json, len);
	int r;

	if (!root)
		return errbuf_set(err, errlen, "gcp: the instance is not JSON");
	r = instance_of(root, out, err, errlen);
	json_object_put(root);
	return r;
}

/* A list page: its "items" (absent when empty) and "nextPageToken". */
static json_object *list_page(const char *json, size_t len, const char *kind, json_object **items,
			      char *next, size_t next_cap, char *err, size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *v;

	if (!root || !json_object_is_type(root, json_type_object)) {
		errbuf_set(err, errlen, "gcp: the %s is not a JSON object", kind);
		json_object_put(root);
		return NULL;
	}
	*items = NULL;
	if (json_object_object_get_ex(root, "items", &v)) {
		if (!json_object_is_type(v, json_type_array)) {
			errbuf_set(err, errlen, "gcp: the %s's items is not an array", kind);
			json_object_put(root);
			return NULL;
		}
		*items = v;
	}
	if (next_token(root, next, next_cap, err, errlen) < 0) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

int gcp_parse_instance_list(const char *json, size_t len, struct gcp_instance *out, int max,
			    int *count, char *next, size_t next_cap, char *err, size_t errlen)
{
	json_object *items,
	    *root = list_page(json, len, "InstanceList", &items, next, next_cap, err, errlen);
	int r = 0;

	if (!root)
		return -EINVAL;
	for (size_t i = 0; items && i < json_object_array_length(items) && r == 0; i++) {
		if (*count >= max)
			r = errbuf_set(err, errlen, "gcp: more than %d instances", max),
			r = -ENOSPC;
		else if ((r = instance_of(json_object_array_get_idx(items, i), &out[*count], err,
					  errlen)) == 0)
			(*count)++;
	}
	json_object_put(root);
	return r;
}

int gcp_parse_zone_list(const char *json, size_t len, char (*zones)[64], int max, int *count,
			char *next, size_t next_cap, char *err, size_t errlen)
{
	json_object *items,
	    *root = list_page(json, len, "ZoneList", &items, next, next_cap, err, errlen);
	int r = 0;

	if (!root)
		return -EINVAL;
	for (size_t i = 0; items && i < json_object_array_length(items) && r == 0; i++) {
		char name[64];

		/* a zone without a name is skipped, as Constellation's zones() does */
		if (json_str_member(json_object_array_get_idx(items, i), "name", name,
				    sizeof name) < 0 ||
		    !name[0] || strchr(name, '/'))
			continue;
		if (*count >= max)
			r = errbuf_set(err, errlen, "gcp: more than %d zones", max), r = -ENOSPC;
		else
			memcpy(zones[(*count)++], name, sizeof name);
	}
	json_object_put(root);
	return r;
}

int gcp_parse_forwarding_rules(const char *json, size_t len, char *host, size_t host_cap,
			       char *port, size_t port_cap, int *found, char *next, size_t next_cap,
			       char *err, size_t errlen)
{
	json_object *items,
	    *root = list_page(json, len, "ForwardingRuleList", &items, next, next_cap, err, errlen);
	char range[32];
	int r = 0;

	*found = 0;
	if (!root)
		return -EINVAL;
	if (items && json_object_array_length(items) > 0) {
		json_object *fr = json_object_array_get_idx(items, 0);
		size_t n;

		/* Constellation: the first rule; its IPAddress and portRange's first port */
		if (json_str_member(fr, "IPAddress", host, host_cap) < 0 || !host[0])
			r = errbuf_set(err, errlen, "gcp: the forwarding rule has no IPAddress");
		else if (json_str_member(fr, "portRange", range, sizeof range) < 0)
			r = errbuf_set(err, errlen, "gcp: the forwarding rule has no portRange");
		else if ((n = strcspn(range, "-")) == 0 || n >= port_cap ||
			 strspn(range, "0123456789") != n)
			r = errbuf_set(err, errlen, "gcp: the forwarding rule's portRange is bad");
		else
			memcpy(port, range, n), port[n] = '\0', *found = 1;
	}
	json_object_put(root);
	return r;
}

int gcp_parse_error(const char *json, size_t len, char *msg, size_t msg_cap, char *reason,
		    size_t reason_cap)
{
	json_object *root = json_parse_exact(json, len), *e, *errs;

	msg[0] = reason[0] = '\0';
	e = json_member(root, "error", json_type_object);
	if (!e) {
		json_object_put(root);
		return -ENOENT;
	}
	if (json_str_member(e, "message", msg, msg_cap) < 0)
		msg[0] = '\0';
	errs = json_member(e, "errors", json_type_array);
	if (!errs || json_object_array_length(errs) == 0 ||
	    json_str_member(json_object_array_get_idx(errs, 0), "reason", reason, reason_cap) < 0)
		if (json_str_member(e, "status", reason, reason_cap) < 0)
			reason[0] = '\0';
	for (char *p = msg; *p; p++) /* one line */
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = ' ';
	for (char *p = reason; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			*p = '?';
	json_object_put(root);
	return 0;
}

/* ---- the token: a flat object of strings, numbers, true, false and null ---- */
static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* A string at *p: its raw bytes [*s, *s + *n) (escapes not decoded); -EINVAL when bad. */
static int raw_string(const char **p, const char *end, const char **s, size_t *n)
{
	const char *q = *p;

	if (q >= end || *q != '"')
		return -EINVAL;
	*s = ++q;
	while (q < end && *q != '"') {
		if ((unsigned char)*q < ' ')
			return -EINVAL;
		if (*q == '\\' && ++q >= end)
			return -EINVAL;
		q++;
	}
	if (q >= end)
		return -EINVAL;
	*n = (size_t)(q - *s);
	*p = q + 1;
	return 0;
}

/* [s, e) holds only what a JSON number holds (the body is not NUL-terminated here) */
static int number(const char *s, const char *e)
{
	for (; s < e; s++)
		if (!strchr("-+.eE0123456789", *s) || !*s)
			return 0;
	return 1;
}

int gcp_parse_token(const char *json, size_t len, uint64_t now_ms, struct gcp_token *out, char *err,
		    size_t errlen)
{
	const char *p = json, *end = json + len, *k, *v;
	size_t kn, vn;
	long long expires = -1;
	int bearer = 0;

	memset(out, 0, sizeof *out);
	p = ws(p, end);
	if (p >= end || *p++ != '{')
		return errbuf_set(err, errlen, "gcp: the token document is not a JSON object");
	p = ws(p, end);
	if (p < end && *p == '}')
		goto done;
	for (;;) {
		p = ws(p, end);
		if (raw_string(&p, end, &k, &kn) < 0)
			goto bad;
		p = ws(p, end);
		if (p >= end || *p++ != ':')
			goto bad;
		p = ws(p, end);
		if (p < end && *p == '"') {
			if (raw_string(&p, end, &v, &vn) < 0)
				goto bad;
			if (kn == 12 && !memcmp(k, "access_token", 12)) {
				if (out->access_token || vn == 0 || vn > GCP_TOKEN_MAX ||
				    memchr(v, '\\', vn) || memchr(v, ' ', vn)) {
					errbuf_set(err, errlen,
						   "gcp: the token's access_token is "
						   "not one printable word");
					goto fail;
				}
				if (!(out->access_token = secret_new(vn + 1))) {
					errbuf_set(err, errlen, "gcp: out of memory");
					goto fail;
				}
				memcpy(out->access_token->bytes, v, vn);
			} else if (kn == 10 && !memcmp(k, "token_type", 10)) {
				bearer = vn == 6 && !memcmp(v, "Bearer", 6);
			}
		} else {
			const char *s = p;

			while (p < end && *p != ',' && *p != '}' && *p != ' ' && *p != '\n' &&
			       *p != '\r' && *p != '\t')
				p++;
			if (p == s)
				goto bad;
			if (kn == 10 && !memcmp(k, "expires_in", 10)) {
				expires = 0;
				for (const char *d = s; d < p; d++) {
					if (*d < '0' || *d > '9' || expires > 100000000)
						goto bad;
					expires = expires * 10 + (*d - '0');
				}
			} else if (!((p - s == 4 &&
				      (!memcmp(s, "true", 4) || !memcmp(s, "null", 4))) ||
				     (p - s == 5 && !memcmp(s, "false", 5)) || number(s, p))) {
				goto bad;
			}
		}
		p = ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		goto bad;
	}
done:
	if (ws(p, end) != end)
		goto bad;
	if (!out->access_token || expires < 0 || !bearer) {
		errbuf_set(err, errlen, "gcp: the token document lacks %s",
			   !out->access_token ? "access_token"
			   : expires < 0      ? "expires_in"
					      : "token_type Bearer");
		goto fail;
	}
	out->expires_ms = now_ms + (uint64_t)expires * 1000;
	return 0;
bad:
	errbuf_set(err, errlen, "gcp: the token document is not a flat JSON object");
fail:
	gcp_token_free(out);
	return -EINVAL;
}

void gcp_token_free(struct gcp_token *t)
{
	secret_freep(&t->access_token);
	t->expires_ms = 0;
}

void gcp_api_free(struct gcp_api *api)
{
	gcp_token_free(&api->token);
}

/* ---- calls ---- */
static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int retryable(int r, int status)
{
	return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -EHOSTUNREACH || r == -ENETUNREACH ||
	       r == -ECONNRESET || r == -EPIPE || (r == 0 && (status == 429 || status >= 500));
}

/* The token from the metadata server, when there is none or it expires within
 * GCP_TOKEN_REFRESH_MS. */
static int token_get(struct gcp_api *api, uint64_t deadline)
{
	static const char hdr[] = "Metadata-Flavor: Google\r\n";
	struct secret *h = secret_from(hdr, sizeof hdr);
	struct http_response resp;
	char url[512], err[256] = "";
	int r = -ETIMEDOUT, backoff = api->backoff_ms > 0 ? api->backoff_ms : 100;
	int attempts = api->max_attempts > 0 ? api->max_attempts : 1;

	if (api->token.access_token &&
	    monotonic_ms() + GCP_TOKEN_REFRESH_MS < api->token.expires_ms) {
		secret_free(h);
		return 0;
	}
	gcp_token_free(&api->token);
	if (!h)
		return -ENOMEM;
	snprintf(url, sizeof url, "%s/computeMetadata/v1/instance/service-accounts/default/token",
		 api->metadata);
	for (int i = 1; i <= attempts; i++) {
		uint64_t now = monotonic_ms();

		if (now >= deadline)
			break;
		r = api_http("GET", url, h, NULL, 0, GCP_TOKEN_MAX, NULL, (int)(deadline - now),
			     &resp, err, sizeof err);
		if (r == 0 && resp.status == 200) {
			api->token_reads++;
			r = gcp_parse_token(resp.body, resp.len, monotonic_ms(), &api->token, err,
					    sizeof err);
			secret_wipe(resp.body, resp.len);
			http_response_free(&resp);
			secret_free(h);
			return r < 0 ? log_err(r, "%s", err) : 0;
		}
		int status = r == 0 ? resp.status : 0;

		if (r == 0) {
			snprintf(err, sizeof err, "HTTP %d", status);
			secret_wipe(resp.body, resp.len);
			http_response_free(&resp);
			r = -EPROTO;
		}
		if (!retryable(r == -EPROTO ? 0 : r, status) || i == attempts ||
		    monotonic_ms() + (uint64_t)backoff >= deadline)
			break;
		sleep_ms(backoff);
		backoff *= 2;
	}
	secret_free(h);
	return log_err(r, "gcp: the service account's token from the metadata server: %s", err);
}

/* One GET of the compute API with the bearer token: 0 with a 200 answer, else one line. */
static int compute_get(struct gcp_api *api, const char *call, const char *permission,
		       const char *url, struct http_response *resp)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)api->timeout_ms;
	int attempts = api->max_attempts > 0 ? api->max_attempts : 1;
	int backoff = api->backoff_ms > 0 ? api->backoff_ms : 100, reauth = 0, r;
	const struct ca_bundle *ca = api->ca;
	char err[256], msg[256], reason[64];

	for (int attempt = 1;; attempt++) {
		struct secret *h;
		uint64_t now;
		int status;

		if ((r = token_get(api, deadline)) < 0)
			return r;
		const char *tok = (const char *)api->token.access_token->bytes;
		size_t hl = strlen(tok) + 32;

		if (!(h = secret_new(hl)))
			return -ENOMEM;
		snprintf((char *)h->bytes, hl, "Authorization: Bearer %s\r\n", tok);
		now = monotonic_ms();
		err[0] = '\0';
		r = now >= deadline ? -ETIMEDOUT
				    : api_http("GET", url, h, NULL, 0, GCP_MAX_BODY, ca,
					       (int)(deadline - now), resp, err, sizeof err);
		secret_free(h);
		if (r == 0 && resp->status == 200)
			return 0;
		status = r == 0 ? resp->status : 0;
		msg[0] = reason[0] = '\0';
		if (r == 0) {
			gcp_parse_error(resp->body, resp->len, msg, sizeof msg, reason,
					sizeof reason);
			http_response_free(resp);
			if (status == 401 && !reauth++) {
				/* expired or revoked: one new token, at once */
				gcp_token_free(&api->token);
				attempt--;
				continue;
			}
			if (status == 403 && strcmp(reason, "rateLimitExceeded") &&
			    strcmp(reason, "userRateLimitExceeded"))
				return log_err(-EACCES,
					       "gcp: %s: the service account lacks the IAM "
					       "permission %s (403 %s)",
					       call, permission, reason[0] ? reason : "forbidden");
			if (status == 404)
				return log_err(-ENOENT, "gcp: %s: 404 %.200s", call, msg);
			if (!retryable(0, status) && status != 403)
				return log_err(-EPROTO, "gcp: %s: HTTP %d %s: %.200s", call, status,
					       reason[0] ? reason : "(no reason)", msg);
			snprintf(err, sizeof err, "HTTP %d %s", status, reason);
		} else if (!retryable(r, 0)) {
			return log_err(r, "gcp: %s: %s", call, err);
		}
		if (attempt >= attempts)
			return log_err(r < 0 ? r : -EAGAIN,
				       "gcp: %s: gave up after %d attempts: %s", call, attempt,
				       err);
		if (monotonic_ms() + (uint64_t)backoff >= deadline)
			return log_err(-ETIMEDOUT, "gcp: %s: no time left for attempt %d (%s)",
				       call, attempt + 1, err);
		log_warn("gcp: %s: %s, attempt %d in %d ms", call, err, attempt + 1, backoff);
		sleep_ms(backoff);
		backoff = backoff < 10000 ? backoff * 2 : backoff;
	}
}

/* Percent-encoding of a query value (RFC 3986 unreserved kept). */
static int qenc(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			if (n + 1 >= cap)
				return -ENAMETOOLONG;
			out[n++] = (char)c;
		} else {
			if (n + 3 >= cap)
				return -ENAMETOOLONG;
			n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
		}
	}
	out[n] = '\0';
	return 0;
}

/* A path element from outside (project, zone, name, region): letters, digits, '-', '_', '.',
 * ':' (domain-scoped projects) only. */
static int element_ok(const char *s)
{
	return s[0] && strlen(s) < 128 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") ==
		   strlen(s);
}

static const char *base(const struct gcp_api *api)
{
	return api->compute ? api->compute : GCP_COMPUTE_URL;
}

int gcp_get_instance(struct gcp_api *api, const char *project, const char *zone, const char *name,
		     struct gcp_instance *out)
{
	struct http_response resp;
	char url[1024], err[256];
	int r;

	if (!element_ok(project) || !element_ok(zone) || !element_ok(name))
		return log_err(-EINVAL, "gcp: instances.get: bad project, zone or name");
	snprintf(url, sizeof url, "%s/compute/v1/projects/%s/zones/%s/instances/%s", base(api),
		 project, zone, name);
	if ((r = compute_get(api, "instances.get", "compute.instances.get", url, &resp)) < 0)
		return r;
	if ((r = gcp_parse_instance(resp.body, resp.len, out, err, sizeof err)) < 0)
		log_error("gcp: instances.get: %s", err);
	http_response_free(&resp);
	return r;
}

/* A listing's page URL: path, filter, pageToken. */
static int page_url(char *url, size_t cap, const struct gcp_api *api, const char *path,
		    const char *filter, const char *page)
{
	char f[512], t[3 * GCP_PAGE_TOKEN_MAX + 1];

	if (qenc(f, sizeof f, filter) < 0 || qenc(t, sizeof t, page) < 0)
		return -ENAMETOOLONG;
	if (snprintf(url, cap, "%s/compute/v1/projects/%s?filter=%s%s%s", base(api), path, f,
		     page[0] ? "&pageToken=" : "", t) >= (int)cap)
		return -ENAMETOOLONG;
	return 0;
}

int gcp_list_zones(struct gcp_api *api, const char *project, const char *region, char (*zones)[64],
		   int max, int *count)
{
	char path[300], filter[160], next[GCP_PAGE_TOKEN_MAX + 1] = "", err[256];
	char *url = malloc(8192);
	int r = 0, pages = 0;

	*count = 0;
	if (!url)
		return -ENOMEM;
	if (!element_ok(project) || !element_ok(region)) {
		free(url);
		return log_err(-EINVAL, "gcp: zones.list: bad project or region");
	}
	snprintf(path, sizeof path, "%s/zones", project);
	snprintf(filter, sizeof filter, "name = \"%s*\"", region);
	do {
		struct http_response resp;

		if (++pages > GCP_MAX_PAGES) {
			r = log_err(-E2BIG, "gcp: zones.list: more than %d pages", GCP_MAX_PAGES);
			break;
		}
		if ((r = page_url(url, 8192, api, path, filter, next)) < 0 ||
		    (r = compute_get(api, "zones.list", "compute.zones.list", url, &resp)) < 0)
			break;
		r = gcp_parse_zone_list(resp.body, resp.len, zones, max, count, next, sizeof next,
					err, sizeof err);
		http_response_free(&resp);
		if (r < 0)
			log_error("gcp: zones.list: %s", err);
	} while (r == 0 && next[0]);
	free(url);
	return r;
}

int gcp_list_instances(struct gcp_api *api, const char *project, const char *region,
		       const char *uid, struct gcp_instance *out, int max, int *count,
		       char (*zones)[64], int *zone_of)
{
	char path[300], filter[160], next[GCP_PAGE_TOKEN_MAX + 1], err[256];
	int nz = 0, r;
	char *url;

	*count = 0;
	if (!element_ok(uid))
		return log_err(-EINVAL, "gcp: the cluster's UID '%.80s' is not a label value", uid);
	if ((r = gcp_list_zones(api, project, region, zones, GCP_MAX_ZONES, &nz)) < 0)
		return r;
	if (nz == 0)
		return log_err(-ENOENT, "gcp: zones.list: no zone in region %s", region);
	if (!(url = malloc(8192)))
		return -ENOMEM;
	snprintf(filter, sizeof filter, "labels.%s:%s", GCP_LABEL_UID, uid);
	for (int z = 0; z < nz && r == 0; z++) {
		int pages = 0;

		snprintf(path, sizeof path, "%s/zones/%s/instances", project, zones[z]);
		next[0] = '\0';
		do {
			struct http_response resp;
			int before = *count;

			if (++pages > GCP_MAX_PAGES) {
				r = log_err(-E2BIG, "gcp: instances.list in %s: more than %d pages",
					    zones[z], GCP_MAX_PAGES);
				break;
			}
			if ((r = page_url(url, 8192, api, path, filter, next)) < 0 ||
			    (r = compute_get(api, "instances.list", "compute.instances.list", url,
					     &resp)) < 0)
				break;
			r = gcp_parse_instance_list(resp.body, resp.len, out, max, count, next,
						    sizeof next, err, sizeof err);
			http_response_free(&resp);
			if (r < 0)
				log_error("gcp: instances.list in %s: %s", zones[z], err);
			for (int i = before; zone_of && i < *count; i++)
				zone_of[i] = z;
		} while (r == 0 && next[0]);
	}
	free(url);
	return r;
}

static int first_rule(struct gcp_api *api, const char *call, const char *path, const char *uid,
		      char *host, size_t host_cap, char *port, size_t port_cap)
{
	char filter[200], next[GCP_PAGE_TOKEN_MAX + 1] = "", err[256];
	char *url = malloc(8192);
	int r = 0, pages = 0, found = 0;

	if (!url)
		return -ENOMEM;
	snprintf(filter, sizeof filter, "(labels.%s:%s) AND (labels.constellation-use:kubernetes)",
		 GCP_LABEL_UID, uid);
	do {
		struct http_response resp;

		if (++pages > GCP_MAX_PAGES) {
			r = log_err(-E2BIG, "gcp: %s: more than %d pages", call, GCP_MAX_PAGES);
			break;
		}
		if ((r = page_url(url, 8192, api, path, filter, next)) < 0 ||
		    (r = compute_get(api, call, "compute.forwardingRules.list", url, &resp)) < 0)
			break;
		r = gcp_parse_forwarding_rules(resp.body, resp.len, host, host_cap, port, port_cap,
					       &found, next, sizeof next, err, sizeof err);
		http_response_free(&resp);
		if (r < 0)
			log_error("gcp: %s: %s", call, err);
	} while (r == 0 && !found && next[0]);
	free(url);
	return r < 0 ? r : found ? 0 : -ENOENT;
}

int gcp_lb_endpoint(struct gcp_api *api, const char *project, const char *region, const char *uid,
		    char *host, size_t host_cap, char *port, size_t port_cap)
{
	char path[300];
	int r;

	if (!element_ok(project) || !element_ok(region) || !element_ok(uid))
		return log_err(-EINVAL, "gcp: forwarding rules: bad project, region or UID");
	snprintf(path, sizeof path, "%s/global/forwardingRules", project);
	r = first_rule(api, "globalForwardingRules.list", path, uid, host, host_cap, port,
		       port_cap);
	if (r != -ENOENT)
		return r;
	snprintf(path, sizeof path, "%s/regions/%s/forwardingRules", project, region);
	r = first_rule(api, "forwardingRules.list", path, uid, host, host_cap, port, port_cap);
	if (r == -ENOENT)
		log_error("gcp: no global or regional forwarding rule labelled %s=%s and "
			  "constellation-use=kubernetes",
			  GCP_LABEL_UID, uid);
	return r;
}

int gcp_region_of_zone(const char *zone, char *out, size_t cap)
{
	const char *a = strchr(zone, '-'), *b = a ? strchr(a + 1, '-') : NULL;

	/* Constellation: exactly three '-'-separated parts */
	if (!a || !b || strchr(b + 1, '-') || a == zone || b == a + 1 || !b[1] ||
	    (size_t)(b - zone) >= cap)
		return -EINVAL;
	memcpy(out, zone, (size_t)(b - zone));
	out[b - zone] = '\0';
	return 0;
}
