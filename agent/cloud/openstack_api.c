/* OpenStack's Keystone v3, Nova and Neutron for the platform layer (openstack_api.h), from
 * docs.openstack.org/api-ref/identity/v3 (POST /v3/auth/tokens, password method, 201 with
 * X-Subject-Token, token.expires_at, token.catalog), docs.openstack.org/api-ref/compute
 * (GET /servers/detail?tags=, X-OpenStack-Nova-API-Version, servers_links rel next, addresses
 * with OS-EXT-IPS:type) and docs.openstack.org/api-ref/network/v2 (GET /v2.0/networks?tags=,
 * /v2.0/subnets?tags=). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "base/base.h"
#include "cloud.h"
#include "cloud/api_http.h"
#include "cloud/openstack_api.h"
#include "net/net.h"

/* ---- user_data ---- */
int os_parse_creds(const char *json, size_t len, struct os_creds *out, char *err, size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *pw;
	int r = 0;

	memset(out, 0, sizeof *out);
	if (!root)
		return errbuf_set(err, errlen, "openstack: user_data is not JSON");
	if (json_str_member(root, "openstack-auth-url", out->auth_url, sizeof out->auth_url) < 0 ||
	    (strncmp(out->auth_url, "https://", 8) && strncmp(out->auth_url, "http://", 7)))
		r = errbuf_set(err, errlen, "openstack: user_data without an openstack-auth-url");
	else if (json_str_member(root, "openstack-username", out->username, sizeof out->username) <
		     0 ||
		 !out->username[0])
		r = errbuf_set(err, errlen, "openstack: user_data without openstack-username");
	else if (json_str_member(root, "openstack-user-domain-name", out->user_domain,
				 sizeof out->user_domain) < 0 ||
		 !out->user_domain[0])
		r = errbuf_set(err, errlen,
			       "openstack: user_data without openstack-user-domain-name");
	else if (!(pw = json_member(root, "openstack-password", json_type_string)) ||
		 json_object_get_string_len(pw) == 0)
		r = errbuf_set(err, errlen, "openstack: user_data without openstack-password");
	else {
		size_t n = (size_t)json_object_get_string_len(pw);
		char *p = (char *)json_object_get_string(pw);

		if (!(out->password = secret_new(n + 1)))
			r = -ENOMEM;
		else
			memcpy(out->password->bytes, p, n);
		secret_wipe(p, n); /* json-c's copy */
	}
	json_object_put(root);
	if (r < 0)
		os_creds_free(out);
	return r;
}

void os_creds_free(struct os_creds *c)
{
	secret_freep(&c->password);
}

/* ---- answers ---- */
static time_t parse_utc(const char *s)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, se;

	/* "2026-11-27T03:00:00.000000Z" or "...Z" */
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6 || y < 1970 ||
	    mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
	    s[strlen(s) - 1] != 'Z')
		return (time_t)-1;
	tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
	tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = se;
	return timegm(&tm);
}

static int url_ok(const char *u)
{
	return (!strncmp(u, "https://", 8) || !strncmp(u, "http://", 7)) && !strpbrk(u, " \r\n");
}

int os_parse_token_body(const char *json, size_t len, time_t *expires_at, char *compute,
			size_t ccap, char *network, size_t ncap, char *err, size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *tok, *cat;
	char exp[64];
	int r = 0;

	compute[0] = network[0] = '\0';
	tok = json_member(root, "token", json_type_object);
	cat = json_member(tok, "catalog", json_type_array);
	if (!tok || json_str_member(tok, "expires_at", exp, sizeof exp) < 0 ||
	    (*expires_at = parse_utc(exp)) == (time_t)-1)
		r = errbuf_set(err, errlen, "openstack: the token has no expires_at");
	for (size_t i = 0; r == 0 && cat && i < json_object_array_length(cat); i++) {
		json_object *svc = json_object_array_get_idx(cat, i), *eps;
		char type[32], iface[16];
		char *dst;
		size_t cap;

		if (json_str_member(svc, "type", type, sizeof type) < 0)
			continue;
		if (!strcmp(type, "compute"))
			dst = compute, cap = ccap;
		else if (!strcmp(type, "network"))
			dst = network, cap = ncap;
		else
			continue;
		eps = json_member(svc, "endpoints", json_type_array);
		for (size_t k = 0; !dst[0] && eps && k < json_object_array_length(eps); k++) {
			json_object *ep = json_object_array_get_idx(eps, k);

			if (json_str_member(ep, "interface", iface, sizeof iface) < 0 ||
			    strcmp(iface, "public"))
				continue;
			if (json_str_member(ep, "url", dst, cap) < 0 || !url_ok(dst)) {
				dst[0] = '\0';
				r = errbuf_set(err, errlen, "openstack: the %s endpoint is no URL",
					       type);
			}
		}
	}
	if (r == 0 && (!compute[0] || !network[0]))
		r = errbuf_set(err, errlen,
			       "openstack: the token's catalog has no public %s endpoint",
			       !compute[0] ? "compute" : "network");
	json_object_put(root);
	return r;
}

static int parse_v4(const char *s, uint8_t ip[4])
{
	unsigned a, b, c, d;
	char tail;

	if (sscanf(s, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 ||
	    c > 255 || d > 255 || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL;
	ip[0] = (uint8_t)a, ip[1] = (uint8_t)b, ip[2] = (uint8_t)c, ip[3] = (uint8_t)d;
	return 0;
}

static int in_prefix(const uint8_t a[4], const uint8_t net[4], int prefix)
{
	uint32_t x = (uint32_t)a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
	uint32_t n = (uint32_t)net[0] << 24 | net[1] << 16 | net[2] << 8 | net[3];
	uint32_t m = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);

	return (x & m) == (n & m);
}

static int next_link(json_object *root, const char *key, char *next, size_t cap, char *err,
		     size_t errlen)
{
	json_object *links = json_member(root, key, json_type_array);

	next[0] = '\0';
	for (size_t i = 0; links && i < json_object_array_length(links); i++) {
		json_object *l = json_object_array_get_idx(links, i);
		char rel[16];

		if (json_str_member(l, "rel", rel, sizeof rel) < 0 || strcmp(rel, "next"))
			continue;
		if (json_str_member(l, "href", next, cap) < 0 || !url_ok(next)) {
			next[0] = '\0';
			return errbuf_set(err, errlen, "openstack: a bad next link");
		}
	}
	return 0;
}

int os_parse_servers(const char *json, size_t len, const uint8_t cidr_ip[4], int prefix,
		     struct os_server *out, int max, int *count, char *next, size_t next_cap,
		     char *err, size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *srvs;
	int r = 0;

	srvs = json_member(root, "servers", json_type_array);
	if (!srvs) {
		json_object_put(root);
		return errbuf_set(err, errlen, "openstack: the servers answer has no servers");
	}
	for (size_t i = 0; r == 0 && i < json_object_array_length(srvs); i++) {
		json_object *s = json_object_array_get_idx(srvs, i), *tags, *addrs;
		struct os_server v = {.role = -1};

		/* Constellation skips a server without name, ID, tags or role, or without a fixed
		 * IPv4 address in the cluster's subnet */
		if (json_str_member(s, "name", v.name, sizeof v.name) < 0 || !v.name[0] ||
		    json_str_member(s, "id", v.id, sizeof v.id) < 0 || !v.id[0] ||
		    !(tags = json_member(s, "tags", json_type_array)))
			continue;
		for (size_t k = 0; k < json_object_array_length(tags); k++) {
			json_object *t = json_object_array_get_idx(tags, k);
			const char *ts = json_object_is_type(t, json_type_string)
					     ? json_object_get_string(t)
					     : "";

			if (!strncmp(ts, "constellation-role-", 19)) {
				v.role = cloud_role_parse(ts + 19);
				break;
			}
		}
		if (v.role < 0)
			continue;
		addrs = json_member(s, "addresses", json_type_object);
		json_object_object_foreach(addrs ? addrs : s, netname, list)
		{
			(void)netname;
			if (!addrs || !json_object_is_type(list, json_type_array))
				continue;
			for (size_t k = 0; !v.vpc_ip[0] && k < json_object_array_length(list);
			     k++) {
				json_object *a = json_object_array_get_idx(list, k), *ver;
				char type[16], ip[48];
				uint8_t b[4];

				if (json_str_member(a, "OS-EXT-IPS:type", type, sizeof type) < 0 ||
				    strcmp(type, "fixed") ||
				    !(ver = json_member(a, "version", json_type_int)) ||
				    json_object_get_int(ver) != 4 ||
				    json_str_member(a, "addr", ip, sizeof ip) < 0 ||
				    parse_v4(ip, b) < 0 || !in_prefix(b, cidr_ip, prefix))
					continue;
				memcpy(v.vpc_ip, ip, sizeof ip);
			}
			if (v.vpc_ip[0])
				break;
		}
		if (!v.vpc_ip[0])
			continue;
		if (*count >= max)
			r = errbuf_set(err, errlen, "openstack: more than %d servers", max),
			r = -ENOSPC;
		else
			out[(*count)++] = v;
	}
	if (r == 0)
		r = next_link(root, "servers_links", next, next_cap, err, errlen);
	json_object_put(root);
	return r;
}

int os_parse_networks(const char *json, size_t len, char *name, size_t cap, char *err,
		      size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *nets;
	int r = 0;

	nets = json_member(root, "networks", json_type_array);
	if (!nets)
		r = errbuf_set(err, errlen, "openstack: the networks answer has no networks");
	else if (json_object_array_length(nets) != 1)
		r = errbuf_set(err, errlen, "openstack: expected exactly one network, got %zu",
			       json_object_array_length(nets)),
		r = -ENOENT;
	else if (json_str_member(json_object_array_get_idx(nets, 0), "name", name, cap) < 0)
		r = errbuf_set(err, errlen, "openstack: the network has no name");
	json_object_put(root);
	return r;
}

int os_parse_subnets(const char *json, size_t len, const char *name, uint8_t ip[4], int *prefix,
		     char *err, size_t errlen)
{
	json_object *root = json_parse_exact(json, len), *subs;
	char cidr[64] = "", n[256];
	int r = -ENOENT;

	subs = json_member(root, "subnets", json_type_array);
	for (size_t i = 0; subs && i < json_object_array_length(subs); i++) {
		json_object *s = json_object_array_get_idx(subs, i);

		if (json_str_member(s, "name", n, sizeof n) == 0 && !strcmp(n, name)) {
			r = json_str_member(s, "cidr", cidr, sizeof cidr) < 0 ? -EINVAL : 0;
			break;
		}
	}
	json_object_put(root);
	if (!subs)
		return errbuf_set(err, errlen, "openstack: the subnets answer has no subnets");
	if (r == -ENOENT) {
		errbuf_set(err, errlen, "openstack: no subnet named %.64s", name);
		return -ENOENT;
	}
	char *slash = strchr(cidr, '/');
	char *end;
	long p;

	if (r < 0 || !slash)
		return errbuf_set(err, errlen, "openstack: the subnet's CIDR is bad");
	*slash = '\0';
	p = strtol(slash + 1, &end, 10);
	if (parse_v4(cidr, ip) < 0 || *end || end == slash + 1 || p < 0 || p > 32)
		return errbuf_set(err, errlen, "openstack: the subnet's CIDR is no IPv4 prefix");
	*prefix = (int)p;
	return 0;
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

/* JSON string text of s (quotes and backslashes escaped, control characters refused). */
static int json_put(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < ' ')
			return -EINVAL;
		if (*n + 2 >= cap)
			return -E2BIG;
		if (c == '"' || c == '\\')
			out[(*n)++] = '\\';
		out[(*n)++] = (char)c;
	}
	return 0;
}

/* The header value of name in a raw response (headers before body), into a new secret. */
static struct secret *header_secret(const struct http_response *resp, const char *name)
{
	const char *p = resp->buf, *end = resp->body;
	size_t nl = strlen(name);

	while (p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			break;
		if ((size_t)(eol - p) > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1, *e = eol;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == '\r' || e[-1] == ' '))
				e--;
			if (e == v || e - v > 8192)
				return NULL;
			for (const char *q = v; q < e; q++)
				if ((unsigned char)*q <= ' ' || *q == 0x7f)
					return NULL;
			struct secret *s = secret_new((size_t)(e - v) + 1);

			if (s)
				memcpy(s->bytes, v, (size_t)(e - v));
			return s;
		}
		p = eol + 1;
	}
	return NULL;
}

static int token_get(struct os_api *api, uint64_t deadline)
{
	struct secret *body = NULL, *hdr = NULL;
	struct http_response resp;
	char url[300], err[256] = "";
	int r = -ETIMEDOUT, backoff = api->backoff_ms > 0 ? api->backoff_ms : 100;
	int attempts = api->max_attempts > 0 ? api->max_attempts : 1;
	size_t n = 0, cap;
	static const char ct[] = "Content-Type: application/json\r\n";

	if (api->token && time(NULL) + OS_TOKEN_REFRESH_S < api->expires_at)
		return 0;
	secret_freep(&api->token);
	if (!api->creds.password)
		return log_err(-ENOKEY, "openstack: no credentials from user_data");
	/* auth_url is Keystone's v3 base, e.g. https://keystone.example:5000/v3 */
	n = strlen(api->creds.auth_url);
	snprintf(url, sizeof url, "%s%sauth/tokens", api->creds.auth_url,
		 n && api->creds.auth_url[n - 1] == '/' ? "" : "/");
	n = 0;
	cap = 512 + 2 * (strlen(api->creds.username) + strlen(api->creds.user_domain) +
			 api->creds.password->len);
	body = secret_new(cap);
	hdr = secret_from(ct, sizeof ct);
	if (!body || !hdr) {
		r = -ENOMEM;
		goto out;
	}
	char *b = (char *)body->bytes;
	const char *pw = (const char *)api->creds.password->bytes;

	n = (size_t)snprintf(b, cap,
			     "{\"auth\":{\"identity\":{\"methods\":[\"password\"],\"password\":"
			     "{\"user\":{\"name\":\"");
	if (json_put(b, cap, &n, api->creds.username, strlen(api->creds.username)) < 0 ||
	    (n += (size_t)snprintf(b + n, cap - n, "\",\"domain\":{\"name\":\"")) >= cap ||
	    json_put(b, cap, &n, api->creds.user_domain, strlen(api->creds.user_domain)) < 0 ||
	    (n += (size_t)snprintf(b + n, cap - n, "\"},\"password\":\"")) >= cap ||
	    json_put(b, cap, &n, pw, strlen(pw)) < 0 ||
	    (n += (size_t)snprintf(b + n, cap - n, "\"}}}}}")) >= cap) {
		r = log_err(-EINVAL,
			    "openstack: the credentials of user_data do not fit a request");
		goto out;
	}
	for (int i = 1; i <= attempts; i++) {
		uint64_t now = monotonic_ms();
		int status;

		if (now >= deadline)
			break;
		r = api_http("POST", url, hdr, b, n, OS_API_MAX_BODY, api->ca,
			     (int)(deadline - now), &resp, err, sizeof err);
		status = r == 0 ? resp.status : 0;
		if (r == 0 && status == 201) {
			api->token = header_secret(&resp, "X-Subject-Token");
			r = api->token ? os_parse_token_body(resp.body, resp.len, &api->expires_at,
							     api->compute, sizeof api->compute,
							     api->network, sizeof api->network, err,
							     sizeof err)
				       : errbuf_set(err, sizeof err, "no X-Subject-Token");
			/* the raw answer holds the token in its headers */
			secret_wipe(resp.buf, (size_t)(resp.body - resp.buf) + resp.len);
			http_response_free(&resp);
			if (r < 0) {
				secret_freep(&api->token);
				log_error("openstack: Keystone POST /auth/tokens: %s", err);
			} else {
				api->token_reads++;
			}
			goto out;
		}
		if (r == 0) {
			http_response_free(&resp);
			if (status == 401) {
				r = log_err(-EACCES,
					    "openstack: Keystone POST /auth/tokens: 401: the user "
					    "%.64s in domain %.64s of user_data is refused (name, "
					    "domain or password)",
					    api->creds.username, api->creds.user_domain);
				goto out;
			}
			snprintf(err, sizeof err, "HTTP %d", status);
			r = -EPROTO;
		}
		if (!retryable(r == -EPROTO ? 0 : r, status) || i == attempts ||
		    monotonic_ms() + (uint64_t)backoff >= deadline)
			break;
		sleep_ms(backoff);
		backoff *= 2;
	}
	r = log_err(r, "openstack: Keystone POST /auth/tokens: %s", err);
out:
	secret_free(body);
	secret_free(hdr);
	return r;
}

/* One GET with the token: 0 with a 200 answer, else one line naming the call. */
static int os_get(struct os_api *api, const char *call, const char *policy, const char *url,
		  struct http_response *resp)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)api->timeout_ms;
	int attempts = api->max_attempts > 0 ? api->max_attempts : 1;
	int backoff = api->backoff_ms > 0 ? api->backoff_ms : 100, reauth = 0, r;
	char err[256];

	for (int attempt = 1;; attempt++) {
		struct secret *h;
		uint64_t now;
		int status;

		if ((r = token_get(api, deadline)) < 0)
			return r;
		size_t hl = api->token->len + 128;

		if (!(h = secret_new(hl)))
			return -ENOMEM;
		snprintf((char *)h->bytes, hl,
			 "X-Auth-Token: %s\r\nX-OpenStack-Nova-API-Version: " OS_NOVA_MICROVERSION
			 "\r\n",
			 (const char *)api->token->bytes);
		now = monotonic_ms();
		err[0] = '\0';
		r = now >= deadline ? -ETIMEDOUT
				    : api_http("GET", url, h, NULL, 0, OS_API_MAX_BODY, api->ca,
					       (int)(deadline - now), resp, err, sizeof err);
		secret_free(h);
		if (r == 0 && resp->status == 200)
			return 0;
		status = r == 0 ? resp->status : 0;
		if (r == 0) {
			http_response_free(resp);
			if (status == 401 && !reauth++) {
				secret_freep(&api->token); /* expired or revoked: one new token */
				attempt--;
				continue;
			}
			if (status == 403)
				return log_err(
				    -EACCES,
				    "openstack: %s: the user of user_data is not allowed "
				    "%s (403)",
				    call, policy);
			if (!retryable(0, status))
				return log_err(-EPROTO, "openstack: %s: HTTP %d", call, status);
			snprintf(err, sizeof err, "HTTP %d", status);
		} else if (!retryable(r, 0)) {
			return log_err(r, "openstack: %s: %s", call, err);
		}
		if (attempt >= attempts)
			return log_err(r < 0 ? r : -EAGAIN,
				       "openstack: %s: gave up after %d attempts: %s", call,
				       attempt, err);
		if (monotonic_ms() + (uint64_t)backoff >= deadline)
			return log_err(-ETIMEDOUT,
				       "openstack: %s: no time left for attempt %d (%s)", call,
				       attempt + 1, err);
		log_warn("openstack: %s: %s, attempt %d in %d ms", call, err, attempt + 1, backoff);
		sleep_ms(backoff);
		backoff = backoff < 10000 ? backoff * 2 : backoff;
	}
}

static int prefix_of(const char *url, const char *base)
{
	return !strncmp(url, base, strlen(base));
}

int os_list_servers(struct os_api *api, const char *uid, struct os_server *out, int max, int *count)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)api->timeout_ms;
	struct http_response resp;
	char tag[160], url[2048], next[2048], netname[256], err[256];
	uint8_t cidr[4];
	int prefix, r, pages = 0;

	*count = 0;
	if (!uid[0] || strlen(uid) > 100 ||
	    strspn(uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
		strlen(uid))
		return log_err(-EINVAL, "openstack: the cluster's UID is no tag value");
	snprintf(tag, sizeof tag, "constellation-uid-%s", uid);
	if ((r = token_get(api, deadline)) < 0)
		return r;
	/* Neutron: the one network tagged with the UID, its subnet of the same name */
	snprintf(url, sizeof url, "%s%sv2.0/networks?tags=%s", api->network,
		 api->network[strlen(api->network) - 1] == '/' ? "" : "/", tag);
	if ((r = os_get(api, "Neutron GET /v2.0/networks", "get_network", url, &resp)) < 0)
		return r;
	r = os_parse_networks(resp.body, resp.len, netname, sizeof netname, err, sizeof err);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "%s", err);
	snprintf(url, sizeof url, "%s%sv2.0/subnets?tags=%s", api->network,
		 api->network[strlen(api->network) - 1] == '/' ? "" : "/", tag);
	if ((r = os_get(api, "Neutron GET /v2.0/subnets", "get_subnet", url, &resp)) < 0)
		return r;
	r = os_parse_subnets(resp.body, resp.len, netname, cidr, &prefix, err, sizeof err);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "%s", err);
	/* Nova: the servers tagged with the UID, every next link followed */
	snprintf(url, sizeof url, "%s%sservers/detail?tags=%s", api->compute,
		 api->compute[strlen(api->compute) - 1] == '/' ? "" : "/", tag);
	for (;;) {
		if (++pages > OS_API_MAX_PAGES)
			return log_err(-E2BIG,
				       "openstack: Nova GET /servers/detail: more than %d pages",
				       OS_API_MAX_PAGES);
		if ((r = os_get(api, "Nova GET /servers/detail", "os_compute_api:servers:detail",
				url, &resp)) < 0)
			return r;
		r = os_parse_servers(resp.body, resp.len, cidr, prefix, out, max, count, next,
				     sizeof next, err, sizeof err);
		http_response_free(&resp);
		if (r < 0)
			return log_err(r, "%s", err);
		if (!next[0])
			break;
		/* the token goes nowhere but the catalog's compute endpoint */
		if (!prefix_of(next, api->compute))
			return log_err(-EPERM, "openstack: Nova's next link leaves %s",
				       api->compute);
		snprintf(url, sizeof url, "%s", next);
	}
	if (*count == 0)
		return log_err(-ENOENT, "openstack: no server of the cluster %s found", uid);
	return 0;
}

void os_api_free(struct os_api *api)
{
	secret_freep(&api->token);
	os_creds_free(&api->creds);
}
