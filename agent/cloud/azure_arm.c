/* Azure Resource Manager (azure_arm.h): the REST reference's calls
 * (learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/list,
 * .../virtual-machine-scale-set-vms/list, /rest/api/virtualnetwork/network-interface-in-vm-ss/
 * get-virtual-machine-scale-set-network-interface, /rest/api/load-balancer/load-balancers/list,
 * /rest/api/virtualnetwork/public-ip-addresses/get) with the managed identity's token
 * (learn.microsoft.com/entra/identity/managed-identities-azure-resources/
 * how-to-use-vm-token#get-a-token-using-http). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "azure_arm.h"
#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define TOKEN_PATH                                                         \
	"/metadata/identity/oauth2/token?api-version=2018-02-01&resource=" \
	"https%3A%2F%2Fmanagement.azure.com%2F"
#define TRIES_MAX 5

/* ---- parsers ---- */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

/* The string at o.key (NUL-free, shorter than cap) into out; "" and -ENOENT when absent or
 * not a string; -ENAMETOOLONG when too long. */
static int str_at(json_object *o, const char *key, char *out, size_t cap)
{
	json_object *v = member(o, key);
	size_t n;

	out[0] = '\0';
	if (!v || !json_object_is_type(v, json_type_string))
		return -ENOENT;
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || memchr(json_object_get_string(v), 0, n))
		return -ENAMETOOLONG;
	memcpy(out, json_object_get_string(v), n + 1);
	return 0;
}

/* A name that goes into a URL path: ARM's names of scale sets, VMs, NICs and public IPs are
 * letters, digits, '.', '_' and '-'. */
static int url_safe(const char *s)
{
	if (!s[0])
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

static const char *base_name(const char *id)
{
	const char *s = strrchr(id, '/');

	return s ? s + 1 : id;
}

int azure_parse_token(const char *body, size_t len, time_t now, struct secret **token,
		      time_t *expires_on, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len), *t;
	char exp[24], type[16];
	char *end;
	long long e;
	int r = 0;

	*token = NULL;
	if (!o || !json_object_is_type(o, json_type_object)) {
		r = errbuf_set(err, errlen, "azure: the token response is not a JSON object");
		goto out;
	}
	t = member(o, "access_token");
	if (!t || !json_object_is_type(t, json_type_string) || json_object_get_string_len(t) == 0 ||
	    json_object_get_string_len(t) > ARM_TOKEN_MAX) {
		r = errbuf_set(err, errlen, "azure: the token response has no usable access_token");
		goto out;
	}
	for (const char *p = json_object_get_string(t); *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			r = errbuf_set(err, errlen, "azure: the access_token is not printable");
			goto out;
		}
	if (str_at(o, "token_type", type, sizeof type) == 0 && strcasecmp(type, "Bearer")) {
		r = errbuf_set(err, errlen, "azure: token_type %s is not Bearer", type);
		goto out;
	}
	/* expires_on: a string of seconds (IMDS); a number is taken too */
	if (str_at(o, "expires_on", exp, sizeof exp) < 0) {
		json_object *n = member(o, "expires_on");

		if (!n || !json_object_is_type(n, json_type_int)) {
			r = errbuf_set(err, errlen, "azure: the token response has no expires_on");
			goto out;
		}
		snprintf(exp, sizeof exp, "%lld", (long long)json_object_get_int64(n));
	}
	errno = 0;
	e = strtoll(exp, &end, 10);
	if (errno || end == exp || *end || e <= 0) {
		r = errbuf_set(err, errlen, "azure: expires_on %.20s is not a time", exp);
		goto out;
	}
	if ((time_t)e <= now) {
		errbuf_set(err, errlen, "azure: the token expired at %lld", e);
		r = -EKEYEXPIRED;
		goto out;
	}
	*token = secret_from(json_object_get_string(t), (size_t)json_object_get_string_len(t));
	if (!*token)
		r = -ENOMEM;
	*expires_on = (time_t)e;
out:
	/* json-c's copy of the token: wiped before it is freed */
	t = member(o, "access_token");
	if (t && json_object_is_type(t, json_type_string))
		secret_wipe((char *)json_object_get_string(t),
			    (size_t)json_object_get_string_len(t));
	json_object_put(o);
	return r;
}

static int tag_is(json_object *item, const char *key, const char *want)
{
	char v[128];

	return want && str_at(member(item, "tags"), key, v, sizeof v) == 0 && !strcmp(v, want);
}

static int list_item(json_object *it, enum azure_list_kind kind, const char *uid, void *out,
		     int max, int *count, char *err, size_t errlen)
{
	json_object *props = member(it, "properties");

	if (kind == AZURE_LIST_SCALE_SETS) {
		char(*names)[96] = out, name[96];

		if (!tag_is(it, "constellation-uid", uid) || str_at(it, "name", name, sizeof name))
			return 0;
		if (!url_safe(name))
			return errbuf_set(err, errlen, "a scale set's name is not a plain name");
		if (*count >= max)
			return errbuf_set(err, errlen, "more than %d scale sets", max), -ENOSPC;
		memcpy(names[(*count)++], name, sizeof name);
		return 0;
	}
	if (kind == AZURE_LIST_VMS) {
		struct azure_vm vm = {0}, *vms = out;
		json_object *nics = member(member(props, "networkProfile"), "networkInterfaces");
		char nic[sizeof vm.id];

		if (str_at(it, "instanceId", vm.instance_id, sizeof vm.instance_id) < 0)
			return 0; /* Constellation skips a VM without one */
		if (str_at(it, "id", vm.id, sizeof vm.id) < 0 ||
		    str_at(member(props, "osProfile"), "computerName", vm.name, sizeof vm.name) < 0)
			return errbuf_set(err, errlen, "VM %s has no id or computerName",
					  vm.instance_id);
		if (str_at(member(it, "tags"), "constellation-role", vm.role, sizeof vm.role) ==
		    -ENAMETOOLONG)
			return errbuf_set(err, errlen, "VM %s: role tag too long", vm.instance_id);
		if (!nics || !json_object_is_type(nics, json_type_array) ||
		    json_object_array_length(nics) == 0 ||
		    str_at(json_object_array_get_idx(nics, 0), "id", nic, sizeof nic) < 0 ||
		    strlen(base_name(nic)) >= sizeof vm.nic || !base_name(nic)[0])
			return errbuf_set(err, errlen, "VM %s has no network interface",
					  vm.instance_id);
		snprintf(vm.nic, sizeof vm.nic, "%.95s", base_name(nic));
		if (!url_safe(vm.instance_id) || !url_safe(vm.nic))
			return errbuf_set(err, errlen,
					  "a VM's instanceId or NIC is not a plain name");
		if (*count >= max)
			return errbuf_set(err, errlen, "more than %d VMs", max), -ENOSPC;
		vms[(*count)++] = vm;
		return 0;
	}
	/* AZURE_LIST_LBS */
	struct azure_lb lb = {0}, *lbs = out;
	json_object *fes = member(props, "frontendIPConfigurations");
	char pip[sizeof lb.pip * 4];

	if (!tag_is(it, "constellation-uid", uid))
		return 0;
	for (size_t i = 0;
	     fes && json_object_is_type(fes, json_type_array) && i < json_object_array_length(fes);
	     i++) {
		json_object *fp = member(json_object_array_get_idx(fes, i), "properties");

		if (!lb.pip[0] &&
		    str_at(member(fp, "publicIPAddress"), "id", pip, sizeof pip) == 0 &&
		    strlen(base_name(pip)) < sizeof lb.pip && url_safe(base_name(pip)))
			snprintf(lb.pip, sizeof lb.pip, "%.95s", base_name(pip));
		if (!lb.private_ip[0])
			str_at(fp, "privateIPAddress", lb.private_ip, sizeof lb.private_ip);
	}
	if (*count < max)
		lbs[(*count)++] = lb;
	return 0;
}

int azure_parse_list(const char *body, size_t len, enum azure_list_kind kind, const char *uid,
		     void *out, int max, int *count, char *next, size_t next_cap, char *err,
		     size_t errlen)
{
	json_object *o = json_parse_exact(body, len), *v;
	int r = 0;

	next[0] = '\0';
	if (!o || !json_object_is_type(o, json_type_object)) {
		r = errbuf_set(err, errlen, "the list is not a JSON object");
		goto out;
	}
	v = member(o, "value");
	if (!v || !json_object_is_type(v, json_type_array)) {
		r = errbuf_set(err, errlen, "the list has no value array");
		goto out;
	}
	for (size_t i = 0; r == 0 && i < json_object_array_length(v); i++)
		r = list_item(json_object_array_get_idx(v, i), kind, uid, out, max, count, err,
			      errlen);
	if (r == 0 && member(o, "nextLink") &&
	    !json_object_is_type(member(o, "nextLink"), json_type_null) &&
	    str_at(o, "nextLink", next, next_cap) < 0)
		r = errbuf_set(err, errlen, "nextLink is not a string of at most %zu bytes",
			       next_cap - 1);
out:
	json_object_put(o);
	return r;
}

int azure_parse_vm(const char *body, size_t len, struct azure_vm *vm, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int n = 0, r;

	if (!o || !json_object_is_type(o, json_type_object))
		r = errbuf_set(err, errlen, "the VM is not a JSON object");
	else if ((r = list_item(o, AZURE_LIST_VMS, NULL, vm, 1, &n, err, errlen)) == 0 && n == 0)
		r = errbuf_set(err, errlen, "the VM has no instanceId");
	json_object_put(o);
	return r;
}

int azure_parse_nic(const char *body, size_t len, char *ip, size_t cap, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len), *cfgs;
	int r = -EINVAL;

	ip[0] = '\0';
	cfgs = member(member(o, "properties"), "ipConfigurations");
	for (size_t i = 0; cfgs && json_object_is_type(cfgs, json_type_array) &&
			   i < json_object_array_length(cfgs);
	     i++) {
		json_object *p = member(json_object_array_get_idx(cfgs, i), "properties");
		json_object *prim = member(p, "primary");
		char v[48];

		if (str_at(p, "privateIPAddress", v, sizeof v) < 0 || !v[0])
			continue;
		if (!ip[0] || (prim && json_object_get_boolean(prim))) {
			snprintf(ip, cap, "%s", v);
			r = strlen(v) < cap ? 0 : -ENAMETOOLONG;
		}
		if (prim && json_object_get_boolean(prim))
			break;
	}
	json_object_put(o);
	if (r < 0) {
		ip[0] = '\0';
		return errbuf_set(err, errlen, "the network interface has no private IP address");
	}
	return 0;
}

int azure_parse_public_ip(const char *body, size_t len, char *ip, size_t cap, char *err,
			  size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int r = str_at(member(o, "properties"), "ipAddress", ip, cap);

	json_object_put(o);
	if (r < 0 || !ip[0])
		return errbuf_set(err, errlen, "the public IP address has no ipAddress");
	return 0;
}

int azure_parse_arm_error(const char *body, size_t len, char *code, size_t code_cap, char *msg,
			  size_t msg_cap)
{
	json_object *o = json_parse_exact(body, len), *e = member(o, "error");
	int r = -ENOENT;

	code[0] = msg[0] = '\0';
	if (e && str_at(e, "code", code, code_cap) == 0) {
		if (str_at(e, "message", msg, msg_cap) == -ENAMETOOLONG) {
			json_object *m = member(e, "message");

			snprintf(msg, msg_cap, "%.*s", (int)(msg_cap - 1),
				 json_object_get_string(m));
		}
		r = 0;
	}
	json_object_put(o);
	return r;
}

/* s: "/subscriptions/S/resourceGroups/RG/providers/..." -> the segment after word */
static int segment(const char *s, const char *word, char *out, size_t cap)
{
	size_t wl = strlen(word);

	for (const char *p = s; (p = strchr(p, '/')); p++)
		if (!strncasecmp(p + 1, word, wl) && p[1 + wl] == '/') {
			const char *v = p + 2 + wl;
			size_t n = strcspn(v, "/");

			if (n == 0 || n >= cap)
				return -EINVAL;
			memcpy(out, v, n);
			out[n] = '\0';
			return 0;
		}
	return -EINVAL;
}

int azure_split_provider_id(const char *pid, char *sub, size_t subcap, char *rg, size_t rgcap,
			    char *ss, size_t sscap, char *inst, size_t instcap)
{
	if (strncmp(pid, "azure://", 8) || segment(pid + 8, "subscriptions", sub, subcap) < 0 ||
	    segment(pid + 8, "resourceGroups", rg, rgcap) < 0 ||
	    segment(pid + 8, "virtualMachineScaleSets", ss, sscap) < 0 ||
	    segment(pid + 8, "virtualMachines", inst, instcap) < 0)
		return -EINVAL;
	for (const char *p = pid; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#' || *p == '%')
			return -EINVAL;
	return 0;
}

/* ---- the client ---- */
static struct {
	struct secret *token;
	time_t expires_on;
	struct ca_bundle ca;
	int have_ca;
} st;

static void token_drop(void)
{
	secret_free(st.token);
	st.token = NULL;
}

static int token(const struct cloud *cl)
{
	struct http_response resp;
	struct secret *t;
	time_t exp;
	char url[384], err[160];
	int r;

	if (st.token && st.expires_on - time(NULL) > ARM_TOKEN_REFRESH_S)
		return 0;
	snprintf(url, sizeof url, "%s%s", cl->metadata, TOKEN_PATH);
	if ((r = cloud_http(cl, "GET", url, "Metadata: true\r\n", NULL, 0, ARM_TOKEN_MAX + 4096,
			    &resp)) < 0)
		return log_err(r, "azure: no managed identity token from IMDS");
	r = azure_parse_token(resp.body, resp.len, time(NULL), &t, &exp, err, sizeof err);
	secret_wipe(resp.buf, (size_t)(resp.body - resp.buf) + resp.len);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "%s", err);
	token_drop();
	st.token = t;
	st.expires_on = exp;
	log_info("azure: managed identity token until %lld", (long long)exp);
	return 0;
}

static const char *arm_base(const struct cloud *cl)
{
	return cl->api ? cl->api : ARM_URL;
}

/* Seconds of a Retry-After header in the head of resp, else -1. */
static int retry_after(const struct http_response *resp)
{
	const char *p = resp->buf;

	while (p && p < resp->body) {
		const char *eol = strstr(p, "\r\n");

		if (!eol || eol >= resp->body)
			break;
		if (!strncasecmp(p, "Retry-After:", 12)) {
			long v = strtol(p + 12, NULL, 10);

			return v < 0 ? -1 : v > 3600 ? 3600 : (int)v;
		}
		p = eol + 2;
	}
	return -1;
}

/* GET url (absolute) with the bearer token: 0 with a 200 in *resp. what and permission name
 * the call in the one line of a failure. */
static int arm_get(const struct cloud *cl, const char *url, const char *what,
		   const char *permission, size_t max, struct http_response *resp)
{
	uint64_t end = monotonic_ms() + (uint64_t)cl->timeout_ms;
	char host[256], err[256] = "", code[64], msg[256];
	const char *h = strstr(url, "://");
	int r = -ETIMEDOUT, wait = 500, reauth = 0;

	if (!h || strcspn(h + 3, "/") >= sizeof host)
		return log_err(-EINVAL, "azure: %s: bad URL", what);
	snprintf(host, sizeof host, "%.*s", (int)strcspn(h + 3, "/"), h + 3);
	if (!st.have_ca && !strncmp(url, "https://", 8)) {
		const char *path = cl->ca_bundle ? cl->ca_bundle : CA_BUNDLE_DEFAULT;

		if ((r = ca_bundle_load(path, &st.ca, err, sizeof err)) < 0)
			return log_err(r, "azure: %s", err);
		st.have_ca = 1;
	}
	for (int i = 1; i <= TRIES_MAX + reauth; i++) {
		struct secret *hdr;
		uint64_t now = monotonic_ms();
		int status, ra;

		if (now >= end)
			break;
		if ((r = token(cl)) < 0)
			return r;
		hdr = secret_new(st.token->len + sizeof host + 64);
		if (!hdr)
			return -ENOMEM;
		snprintf((char *)hdr->bytes, hdr->len,
			 "Host: %s\r\nAuthorization: Bearer %.*s\r\nAccept: application/json\r\n",
			 host, (int)st.token->len, (const char *)st.token->bytes);
		r = cloud_api_request("GET", st.have_ca ? &st.ca : NULL, url, (char *)hdr->bytes,
				      NULL, 0, max, (int)(end - now), resp, err, sizeof err);
		secret_free(hdr);
		if (r < 0) {
			if (r != -ECONNREFUSED && r != -ETIMEDOUT && r != -ECONNRESET &&
			    r != -EHOSTUNREACH && r != -ENETUNREACH && r != -EPIPE)
				return log_err(r, "azure: %s: %s", what, err);
			snprintf(msg, sizeof msg, "%s", err);
			status = 0;
		} else if ((status = resp->status) == 200) {
			return 0;
		} else {
			if (azure_parse_arm_error(resp->body, resp->len, code, sizeof code, msg,
						  sizeof msg) < 0)
				snprintf(code, sizeof code, "(no ARM error)");
			ra = retry_after(resp);
			http_response_free(resp);
			if (status == 401 && !reauth) {
				/* a token ARM no longer takes: one new token, one more try */
				log_warn("azure: %s: HTTP 401 %s; fetching a new token", what,
					 code);
				token_drop();
				reauth = 1;
				continue;
			}
			if (status == 403 && !strcmp(code, "AuthorizationFailed"))
				return log_err(
				    -EACCES,
				    "azure: %s: the managed identity lacks the permission "
				    "%s (AuthorizationFailed)",
				    what, permission);
			if (status != 429 && status < 500)
				return log_err(status == 404 ? -ENOENT : -EPROTO,
					       "azure: %s: HTTP %d %s: %.160s", what, status, code,
					       msg);
			if (ra >= 0)
				wait = (ra > ARM_RETRY_AFTER_MAX_S ? ARM_RETRY_AFTER_MAX_S : ra) *
				       1000;
			snprintf(msg, sizeof msg, "HTTP %d %s", status, code);
		}
		if (i >= TRIES_MAX + reauth || monotonic_ms() + (uint64_t)wait >= end) {
			r = r < 0 ? r : -EAGAIN;
			return log_err(r, "azure: %s: %s (after %d attempts)", what, msg, i);
		}
		log_debug("azure: %s: %s; again in %d ms", what, msg, wait);
		poll(NULL, 0, wait);
		wait = wait * 2 > 8000 ? 8000 : wait * 2;
	}
	return log_err(-ETIMEDOUT, "azure: %s: no time left", what);
}

/* Every page of a list (at most ARM_MAX_PAGES); a nextLink must stay on the API's host. */
static int arm_list(const struct cloud *cl, const char *path, const char *what,
		    const char *permission, enum azure_list_kind kind, const char *uid, void *out,
		    int max, int *count)
{
	static char url[4096], next[4096];
	const char *base = arm_base(cl);
	char err[160];
	int r;

	snprintf(url, sizeof url, "%s%s", base, path);
	for (int page = 1;; page++) {
		struct http_response resp;

		if (page > ARM_MAX_PAGES)
			return log_err(-E2BIG, "azure: %s: more than %d pages", what,
				       ARM_MAX_PAGES);
		if ((r = arm_get(cl, url, what, permission, ARM_MAX_BODY, &resp)) < 0)
			return r;
		r = azure_parse_list(resp.body, resp.len, kind, uid, out, max, count, next,
				     sizeof next, err, sizeof err);
		http_response_free(&resp);
		if (r < 0)
			return log_err(r == -ENOSPC ? r : -EBADMSG, "azure: %s: %s", what, err);
		if (!next[0])
			return 0;
		if (strncmp(next, base, strlen(base)) || next[strlen(base)] != '/')
			return log_err(-EBADMSG, "azure: %s: a nextLink off %s", what, base);
		memcpy(url, next, sizeof url);
	}
}

static int ids(const char *pid, char *sub, char *rg, char *ss, char *inst)
{
	if (azure_split_provider_id(pid, sub, 64, rg, 96, ss, 96, inst, 16) < 0)
		return log_err(-EINVAL, "azure: %.200s is no scale-set VM's provider ID", pid);
	return 0;
}

/* The private IP of VM inst of scale set ss from its NIC (api-version 2018-10-01). */
static int vm_nic_ip(const struct cloud *cl, const char *sub, const char *rg, const char *ss,
		     const struct azure_vm *vm, char *ip, size_t cap)
{
	struct http_response resp;
	char url[1024], what[192], err[160];
	int r;

	snprintf(url, sizeof url,
		 "%s/subscriptions/%s/resourceGroups/%s/providers/"
		 "Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%s/"
		 "networkInterfaces/%s?api-version=" ARM_API_VMSS_NIC,
		 arm_base(cl), sub, rg, ss, vm->instance_id, vm->nic);
	snprintf(what, sizeof what, "get network interface %.60s of %.60s/%s", vm->nic, ss,
		 vm->instance_id);
	if ((r = arm_get(cl, url, what,
			 "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/"
			 "networkInterfaces/read",
			 1 << 20, &resp)) < 0)
		return r;
	r = azure_parse_nic(resp.body, resp.len, ip, cap, err, sizeof err);
	http_response_free(&resp);
	return r < 0 ? log_err(-EBADMSG, "azure: %s: %s", what, err) : 0;
}

int azure_arm_list(const struct cloud *cl, const char *provider_id, const char *uid,
		   struct azure_vm *vms, char (*ips)[48], int max, int *count)
{
	char sub[64], rg[96], ss0[96], inst[16], path[768], what[192];
	char sets[ARM_MAX_SCALE_SETS][96];
	int n_sets = 0, r;

	*count = 0;
	if ((r = ids(provider_id, sub, rg, ss0, inst)) < 0)
		return r;
	snprintf(path, sizeof path,
		 "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
		 "virtualMachineScaleSets?api-version=" ARM_API_COMPUTE,
		 sub, rg);
	if ((r = arm_list(cl, path, "list scale sets",
			  "Microsoft.Compute/virtualMachineScaleSets/read", AZURE_LIST_SCALE_SETS,
			  uid, sets, ARM_MAX_SCALE_SETS, &n_sets)) < 0)
		return r;
	for (int s = 0; s < n_sets; s++) {
		int first = *count;

		snprintf(path, sizeof path,
			 "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
			 "virtualMachineScaleSets/%s/virtualMachines?api-version=" ARM_API_COMPUTE,
			 sub, rg, sets[s]);
		snprintf(what, sizeof what, "list the VMs of scale set %s", sets[s]);
		if ((r = arm_list(cl, path, what,
				  "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
				  AZURE_LIST_VMS, NULL, vms, max, count)) < 0)
			return r;
		for (int v = first; v < *count; v++)
			if ((r = vm_nic_ip(cl, sub, rg, sets[s], &vms[v], ips[v], 48)) < 0)
				return r;
	}
	return 0;
}

int azure_arm_self(const struct cloud *cl, const char *provider_id, struct azure_vm *vm, char *ip,
		   size_t cap)
{
	char sub[64], rg[96], ss[96], inst[16], url[1024], what[192], err[160];
	struct http_response resp;
	int r;

	if ((r = ids(provider_id, sub, rg, ss, inst)) < 0)
		return r;
	snprintf(url, sizeof url,
		 "%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
		 "virtualMachineScaleSets/%s/virtualMachines/%s?api-version=" ARM_API_COMPUTE,
		 arm_base(cl), sub, rg, ss, inst);
	snprintf(what, sizeof what, "get VM %s of scale set %.96s", inst, ss);
	if ((r = arm_get(cl, url, what,
			 "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
			 ARM_MAX_BODY, &resp)) < 0)
		return r;
	r = azure_parse_vm(resp.body, resp.len, vm, err, sizeof err);
	http_response_free(&resp);
	if (r < 0)
		return log_err(-EBADMSG, "azure: %s: %s", what, err);
	return vm_nic_ip(cl, sub, rg, ss, vm, ip, cap);
}

int azure_arm_lb(const struct cloud *cl, const char *provider_id, const char *uid, char *host,
		 size_t cap)
{
	char sub[64], rg[96], ss[96], inst[16], path[768], err[160];
	struct azure_lb lbs[1];
	struct http_response resp;
	int n = 0, r;

	if ((r = ids(provider_id, sub, rg, ss, inst)) < 0)
		return r;
	snprintf(path, sizeof path,
		 "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/loadBalancers"
		 "?api-version=" ARM_API_NETWORK,
		 sub, rg);
	if ((r = arm_list(cl, path, "list load balancers", "Microsoft.Network/loadBalancers/read",
			  AZURE_LIST_LBS, uid, lbs, 1, &n)) < 0)
		return r;
	if (n == 0)
		return log_err(-ENOENT, "azure: no load balancer tagged constellation-uid=%s in %s",
			       uid, rg);
	/* Constellation: the public IP first, else the frontend's private IP */
	if (lbs[0].pip[0]) {
		char url[1024];

		snprintf(url, sizeof url,
			 "%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/"
			 "publicIPAddresses/%s?api-version=" ARM_API_NETWORK,
			 arm_base(cl), sub, rg, lbs[0].pip);
		r = arm_get(cl, url, "get the load balancer's public IP address",
			    "Microsoft.Network/publicIPAddresses/read", 1 << 20, &resp);
		if (r == 0) {
			r = azure_parse_public_ip(resp.body, resp.len, host, cap, err, sizeof err);
			http_response_free(&resp);
			if (r == 0)
				return 0;
			log_warn("azure: public IP %s: %s", lbs[0].pip, err);
		}
	}
	if (!lbs[0].private_ip[0] || strlen(lbs[0].private_ip) >= cap)
		return log_err(-ENOENT, "azure: the load balancer has neither a public nor a "
					"private frontend IP");
	snprintf(host, cap, "%s", lbs[0].private_ip);
	return 0;
}
