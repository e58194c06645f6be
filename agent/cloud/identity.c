/* The node's identity in the documents of the clouds' node-local endpoints: Azure IMDS's
 * /metadata/instance, AWS's instance identity document, OpenStack's meta_data.json and
 * user_data. Each parser takes the body as received (bounded by the client), keeps only the
 * fields Constellation reads (internal/cloud/<csp>/), and fails with one line naming the
 * field it missed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "base/base.h"
#include "cloud.h"

int cloud_role_parse(const char *s)
{
	if (!strcasecmp(s, "controlplane") || !strcasecmp(s, "control-plane"))
		return 1;
	if (!strcasecmp(s, "worker"))
		return 0;
	return -EINVAL;
}

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

static json_object *first(json_object *a)
{
	return a && json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0
		   ? json_object_array_get_idx(a, 0)
		   : NULL;
}

/* Azure's tagsList: [{"name": ..., "value": ...}]; the value of name into out. */
static int azure_tag(json_object *compute, const char *name, char *out, size_t cap)
{
	json_object *l = member(compute, "tagsList");
	char key[128];

	if (!l || !json_object_is_type(l, json_type_array))
		return -ENOENT;
	for (size_t i = 0; i < json_object_array_length(l); i++) {
		json_object *t = json_object_array_get_idx(l, i);

		if (json_str_member(t, "name", key, sizeof key) == 0 && !strcmp(key, name))
			return json_str_member(t, "value", out, cap);
	}
	return -ENOENT;
}

int azure_parse_imds(const char *body, size_t len, struct md_instance *self, char *uid,
		     size_t uidcap, char *hash, size_t hashcap, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len), *compute = member(o, "compute"), *ip;
	char rid[240], role[32];
	const char *miss = NULL;

	memset(self, 0, sizeof *self);
	ip = first(
	    member(member(first(member(member(o, "network"), "interface")), "ipv4"), "ipAddress"));
	if (!compute)
		miss = "compute";
	else if (json_str_member(member(compute, "osProfile"), "computerName", self->name,
				 sizeof self->name) < 0 &&
		 json_str_member(compute, "name", self->name, sizeof self->name) < 0)
		miss = "compute.osProfile.computerName";
	else if (json_str_member(compute, "resourceId", rid, sizeof rid) < 0 || rid[0] != '/')
		miss = "compute.resourceId";
	else if (json_str_member(ip, "privateIpAddress", self->vpc_ip, sizeof self->vpc_ip) < 0)
		miss = "network.interface[0].ipv4.ipAddress[0].privateIpAddress";
	else if (azure_tag(compute, "constellation-role", role, sizeof role) < 0 ||
		 cloud_role_parse(role) < 0)
		miss = "the tag constellation-role";
	else if (uid && azure_tag(compute, "constellation-uid", uid, uidcap) < 0)
		miss = "the tag constellation-uid";
	else if (hash && azure_tag(compute, "constellation-init-secret-hash", hash, hashcap) < 0)
		miss = "the tag constellation-init-secret-hash";
	json_object_put(o);
	if (miss)
		return errbuf_set(err, errlen, "azure: IMDS instance metadata without %s", miss);
	snprintf(self->provider_id, sizeof self->provider_id, "azure://%s", rid);
	self->control_plane = cloud_role_parse(role);
	return 0;
}

int aws_parse_identity(const char *body, size_t len, struct md_instance *self, char *err,
		       size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	char az[40];
	const char *miss = NULL;

	memset(self, 0, sizeof *self);
	if (json_str_member(o, "instanceId", self->name, sizeof self->name) < 0 ||
	    strncmp(self->name, "i-", 2))
		miss = "instanceId";
	else if (json_str_member(o, "availabilityZone", az, sizeof az) < 0 || !az[0] ||
		 strchr(az, '/'))
		miss = "availabilityZone";
	else if (json_str_member(o, "privateIp", self->vpc_ip, sizeof self->vpc_ip) < 0 ||
		 !self->vpc_ip[0])
		miss = "privateIp";
	json_object_put(o);
	if (miss)
		return errbuf_set(err, errlen, "aws: instance identity document without %s", miss);
	snprintf(self->provider_id, sizeof self->provider_id, "aws:///%s/%s", az, self->name);
	self->no_role = 1; /* a tag: EC2's API, not IMDS (metadata tags are disabled) */
	return 0;
}

int openstack_parse_meta(const char *body, size_t len, struct md_instance *self, char *uid,
			 size_t uidcap, char *hash, size_t hashcap, char *err, size_t errlen)
{
	json_object *o = json_parse_exact(body, len), *meta = member(o, "meta");
	char role[32];
	const char *miss = NULL;

	memset(self, 0, sizeof *self);
	if (json_str_member(o, "name", self->name, sizeof self->name) < 0 || !self->name[0])
		miss = "name";
	else if (json_str_member(o, "uuid", self->provider_id, sizeof self->provider_id) < 0 ||
		 !self->provider_id[0])
		miss = "uuid";
	else if (json_str_member(meta, "constellation-role", role, sizeof role) < 0 ||
		 cloud_role_parse(role) < 0)
		miss = "meta.constellation-role";
	else if (uid && json_str_member(meta, "constellation-uid", uid, uidcap) < 0)
		miss = "meta.constellation-uid";
	else if (hash && json_str_member(meta, "constellation-init-secret-hash", hash, hashcap) < 0)
		miss = "meta.constellation-init-secret-hash";
	json_object_put(o);
	if (miss)
		return errbuf_set(err, errlen, "openstack: meta_data.json without %s", miss);
	self->control_plane = cloud_role_parse(role);
	return 0;
}

int openstack_parse_user_data(const char *body, size_t len, char *host, size_t cap, char *err,
			      size_t errlen)
{
	json_object *o = json_parse_exact(body, len);
	int r = json_str_member(o, "openstack-load-balancer-endpoint", host, cap);

	json_object_put(o);
	if (r < 0 || !host[0] || strpbrk(host, " /\n"))
		return errbuf_set(err, errlen,
				  "openstack: user_data without openstack-load-balancer-endpoint");
	return 0;
}
