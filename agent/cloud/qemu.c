/* QEMU's cloud: the metadata API of spec §5.2 (/self, /peers, /endpoint and /initsecrethash
 * over plain HTTP) and the state disk at /dev/vdb. As in Constellation the status is not judged,
 * the body is: it must parse as the shape each path returns, or the call fails with one line. Roles
 * are matched case-insensitively and "control-plane" is accepted, as the Go role parser does. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define MD_MAX_BODY   (1 << 20)
#define MD_TIMEOUT_MS 10000

static int copy_str(json_object *o, const char *key, char *out, size_t cap, int required)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		out[0] = 0;
		return required ? -EINVAL : 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap || memchr(json_object_get_string(v), 0, n))
		return -EINVAL;
	memcpy(out, json_object_get_string(v), n + 1);
	return 0;
}

static int instance_of(json_object *o, struct md_instance *in)
{
	char role[32];

	memset(in, 0, sizeof *in);
	if (!json_object_is_type(o, json_type_object) ||
	    copy_str(o, "Name", in->name, sizeof in->name, 1) < 0 ||
	    copy_str(o, "VPCIP", in->vpc_ip, sizeof in->vpc_ip, 1) < 0 ||
	    copy_str(o, "ProviderID", in->provider_id, sizeof in->provider_id, 0) < 0 ||
	    copy_str(o, "Role", role, sizeof role, 1) < 0)
		return -EINVAL;
	if (!strcasecmp(role, "ControlPlane") || !strcasecmp(role, "control-plane"))
		in->control_plane = 1;
	else if (strcasecmp(role, "Worker"))
		return -EINVAL;
	return 0;
}

int md_parse_self(const char *body, size_t len, struct md_instance *self, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int r = o ? instance_of(o, self) : -EINVAL;

	json_object_put(o);
	return r < 0 ? errbuf_set(err, errlen,
				  "metadata: /self is not an instance (Name, Role, VPCIP)")
		     : 0;
}

int md_parse_peers(const char *body, size_t len, struct md_instance *peers, int max, int *count,
		   char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int r = 0;

	*count = 0;
	if (!o || !json_object_is_type(o, json_type_array))
		r = -EINVAL;
	for (size_t i = 0; !r && i < json_object_array_length(o); i++) {
		struct md_instance in;

		if (instance_of(json_object_array_get_idx(o, i), &in) < 0)
			r = -EINVAL;
		else if (*count < max)
			peers[(*count)++] = in;
	}
	json_object_put(o);
	return r < 0 ? errbuf_set(err, errlen, "metadata: /peers is not a list of instances") : 0;
}

int md_parse_endpoint(const char *body, size_t len, char *out, size_t cap, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int r = -EINVAL;

	if (o && json_object_is_type(o, json_type_string) &&
	    (size_t)json_object_get_string_len(o) < cap && json_object_get_string_len(o) > 0 &&
	    !strpbrk(json_object_get_string(o), " /\n")) {
		memcpy(out, json_object_get_string(o), (size_t)json_object_get_string_len(o) + 1);
		r = 0;
	}
	json_object_put(o);
	return r < 0 ? errbuf_set(err, errlen, "metadata: /endpoint is not a JSON string") : 0;
}

/* GET base + path; the body in *resp. */
static int md_get(const char *base, const char *path, struct http_response *resp)
{
	char url[512];

	if (snprintf(url, sizeof url, "%s%s", base, path) >= (int)sizeof url)
		return log_err(-ENAMETOOLONG, "metadata: URL too long");
	return http_get(url, MD_TIMEOUT_MS, MD_MAX_BODY, resp);
}

/* What the parsers of /self, /peers and /endpoint take beside the body. */
struct md_parse {
	int (*parse)(const char *body, size_t len, const struct md_parse *p, char *err,
		     size_t errlen);
	struct md_instance *instances;
	int max, *count;
	char *out;
	size_t cap;
};

static int parse_self(const char *body, size_t len, const struct md_parse *p, char *err,
		      size_t errlen)
{
	return md_parse_self(body, len, p->instances, err, errlen);
}

static int parse_peers(const char *body, size_t len, const struct md_parse *p, char *err,
		       size_t errlen)
{
	return md_parse_peers(body, len, p->instances, p->max, p->count, err, errlen);
}

static int parse_endpoint(const char *body, size_t len, const struct md_parse *p, char *err,
			  size_t errlen)
{
	return md_parse_endpoint(body, len, p->out, p->cap, err, errlen);
}

/* GET base + path and parse the body; one line when either fails. */
static int md_fetch(const char *base, const char *path, const struct md_parse *p)
{
	struct http_response resp;
	char err[160];
	int r = md_get(base, path, &resp);

	if (r < 0)
		return r;
	r = p->parse(resp.body, resp.len, p, err, sizeof err);
	if (r < 0)
		log_error("%s (HTTP %d)", err, resp.status);
	http_response_free(&resp);
	return r;
}

int md_self(const char *base, struct md_instance *self)
{
	return md_fetch(base, "/self", &(struct md_parse){.parse = parse_self, .instances = self});
}

int md_peers(const char *base, struct md_instance *peers, int max, int *count)
{
	return md_fetch(base, "/peers",
			&(struct md_parse){
			    .parse = parse_peers, .instances = peers, .max = max, .count = count});
}

int md_endpoint(const char *base, char *out, size_t cap)
{
	return md_fetch(base, "/endpoint",
			&(struct md_parse){.parse = parse_endpoint, .out = out, .cap = cap});
}

int md_parse_bcrypt(const char *body, size_t len, char *out, size_t cap)
{
	size_t n = len;

	while (n && (body[n - 1] == '\n' || body[n - 1] == '\r'))
		n--;
	/* a bcrypt hash: "$2a$", "$2b$" or "$2y$", cost, 53 characters */
	if (n != 60 || strncmp(body, "$2", 2) || memchr(body, 0, n) || n >= cap)
		return -EINVAL;
	memcpy(out, body, n);
	out[n] = 0;
	return 0;
}

int md_init_secret_hash(const char *base, char *out, size_t cap)
{
	struct http_response resp;
	int r = md_get(base, "/initsecrethash", &resp);

	if (r < 0)
		return r;
	if ((r = md_parse_bcrypt(resp.body, resp.len, out, cap)) < 0)
		r = log_err(-EINVAL, "metadata: /initsecrethash is not a bcrypt hash (HTTP %d)",
			    resp.status);
	http_response_free(&resp);
	return r;
}

/* ---- the ops ---- */

static int qemu_self(const struct cloud *cl, struct md_instance *self)
{
	return md_self(cl->metadata, self);
}

static int qemu_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	return md_peers(cl->metadata, peers, max, count);
}

static int qemu_lb(const struct cloud *cl, char *host, size_t cap)
{
	return md_endpoint(cl->metadata, host, cap);
}

static int qemu_uid(const struct cloud *cl, char *out, size_t cap)
{
	(void)cl;
	if (cap)
		out[0] = 0; /* Constellation's QEMU provider has none */
	return 0;
}

static int qemu_hash(const struct cloud *cl, char *out, size_t cap)
{
	return md_init_secret_hash(cl->metadata, out, cap);
}

const struct cloud_ops cloud_qemu = {
    .name = "qemu",
    .self = qemu_self,
    .peers = qemu_peers,
    .lb_endpoint = qemu_lb,
    .uid = qemu_uid,
    .init_secret_hash = qemu_hash,
    .state_disk = disk_scan_virtio,
    .disk_wanted = "the virtio disk vdb",
};
