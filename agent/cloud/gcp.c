/* GCP: the GCE metadata server (cloud.google.com/compute/docs/metadata/querying-metadata:
 * GET http://169.254.169.254/computeMetadata/v1/..., header "Metadata-Flavor: Google", plain
 * text values). It serves the name, zone, project, IP and the custom metadata item
 * constellation-init-secret-hash; the role and UID are labels, the control planes instances
 * and the load balancer a forwarding rule, which only the Compute API serves (gcp_api.h,
 * with the service account's token from the metadata server). The state disk is the
 * persistent disk attached as "state-disk". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
#include "cloud/api_http.h"
#include "cloud/gcp_api.h"
#include "net/net.h"

#define GCE_HDR	     "Metadata-Flavor: Google\r\n"
#define GCE_MAX_BODY 4096

/* The text value at path, one line, printable. */
static int gce_get(const struct cloud *cl, const char *path, char *out, size_t cap)
{
	struct http_response resp;
	char url[512];
	int r;

	snprintf(url, sizeof url, "%s/computeMetadata/v1/%s", cl->metadata, path);
	if ((r = cloud_http(cl, "GET", url, GCE_HDR, NULL, 0, GCE_MAX_BODY, &resp)) < 0)
		return r;
	r = 0;
	for (size_t i = 0; i < resp.len; i++)
		if ((unsigned char)resp.body[i] < ' ' || resp.body[i] == 0x7f)
			r = -EINVAL;
	if (r < 0 || resp.len == 0 || resp.len >= cap)
		r = log_err(-EINVAL, "gcp: metadata %s is not a short line of text", path);
	else
		memcpy(out, resp.body, resp.len + 1);
	http_response_free(&resp);
	return r;
}

/* Where the node is: its name, zone and project from the metadata server. */
static int whereami(const struct cloud *cl, char *name, size_t ncap, char *zone, size_t zcap,
		    char *project, size_t pcap)
{
	char z[128], *last;
	int r;

	if ((r = gce_get(cl, "instance/name", name, ncap)) < 0 ||
	    (r = gce_get(cl, "instance/zone", z, sizeof z)) < 0 ||
	    (r = gce_get(cl, "project/project-id", project, pcap)) < 0)
		return r;
	/* "projects/<number>/zones/<zone>": the client keeps the last element */
	last = strrchr(z, '/') ? strrchr(z, '/') + 1 : z;
	if (!*last || strlen(last) >= zcap)
		return log_err(-EINVAL, "gcp: metadata instance/zone '%s' names no zone", z);
	memcpy(zone, last, strlen(last) + 1);
	return 0;
}

/* The Compute API's client, one per process (one thread): its token is kept between calls. */
static struct gcp_api *api_of(const struct cloud *cl)
{
	static struct gcp_api api;
	static char metadata[256], compute[256];

	snprintf(metadata, sizeof metadata, "%s", cl->metadata);
	snprintf(compute, sizeof compute, "%s", cl->api ? cl->api : GCP_COMPUTE_URL);
	api.metadata = metadata;
	api.compute = compute;
	api.ca = strncmp(compute, "https://", 8) ? NULL : api_ca_bundle(cl->ca_bundle);
	api.timeout_ms = cl->timeout_ms > 0 ? cl->timeout_ms : 10000;
	api.max_attempts = 5;
	api.backoff_ms = 200;
	return &api;
}

/* The node's own instance from the Compute API (instances.get). */
static int own_instance(const struct cloud *cl, char *project, size_t pcap, char *zone, size_t zcap,
			struct gcp_instance *in)
{
	char name[64];
	int r;

	if ((r = whereami(cl, name, sizeof name, zone, zcap, project, pcap)) < 0)
		return r;
	return gcp_get_instance(api_of(cl), project, zone, name, in);
}

static int gcp_self(const struct cloud *cl, struct md_instance *self)
{
	char zone[64], project[64];
	struct gcp_instance in;
	int r;

	if ((r = whereami(cl, self->name, sizeof self->name, zone, sizeof zone, project,
			  sizeof project)) < 0 ||
	    (r = gce_get(cl, "instance/network-interfaces/0/ip", self->vpc_ip,
			 sizeof self->vpc_ip)) < 0)
		return r;
	if (snprintf(self->provider_id, sizeof self->provider_id, "gce://%s/%s/%s", project, zone,
		     self->name) >= (int)sizeof self->provider_id)
		return log_err(-ENAMETOOLONG, "gcp: the provider ID is too long");
	/* the role is a label: the Compute API's; without it the command line's stands in */
	self->no_role = 1;
	if (gcp_get_instance(api_of(cl), project, zone, self->name, &in) == 0) {
		self->no_role = 0;
		self->control_plane = cloud_role_parse(in.role) == 1;
		if (in.vpc_ip[0])
			snprintf(self->vpc_ip, sizeof self->vpc_ip, "%s", in.vpc_ip);
		log_info("gcp: %s: role %s, UID %s from the Compute API (instances.get)",
			 self->name, in.role, in.has_uid ? in.uid : "none");
	}
	return 0;
}

static int gcp_uid(const struct cloud *cl, char *out, size_t cap)
{
	char zone[64], project[64];
	struct gcp_instance in;
	int r;

	if ((r = own_instance(cl, project, sizeof project, zone, sizeof zone, &in)) < 0)
		return r;
	if (!in.has_uid || !in.uid[0])
		return log_err(-ENOENT, "gcp: instance %s has no label %s", in.name, GCP_LABEL_UID);
	if (strlen(in.uid) >= cap)
		return log_err(-ENAMETOOLONG, "gcp: the label %s is too long", GCP_LABEL_UID);
	memcpy(out, in.uid, strlen(in.uid) + 1);
	return 0;
}

static int gcp_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	char zone[64], project[64], region[64], zones[GCP_MAX_ZONES][64];
	struct gcp_instance own, *all;
	int n = 0, r, *zone_of;

	if ((r = own_instance(cl, project, sizeof project, zone, sizeof zone, &own)) < 0)
		return r;
	if (!own.has_uid || !own.uid[0])
		return log_err(-ENOENT, "gcp: instance %s has no label %s", own.name,
			       GCP_LABEL_UID);
	if (gcp_region_of_zone(zone, region, sizeof region) < 0)
		return log_err(-EINVAL, "gcp: zone %s is not REGION-X", zone);
	all = calloc((size_t)max, sizeof *all);
	zone_of = calloc((size_t)max, sizeof *zone_of);
	if (!all || !zone_of) {
		free(all);
		free(zone_of);
		return -ENOMEM;
	}
	r = gcp_list_instances(api_of(cl), project, region, own.uid, all, max, &n, zones, zone_of);
	for (int i = 0; r == 0 && i < n; i++) {
		struct md_instance *p = &peers[*count];

		memset(p, 0, sizeof *p);
		snprintf(p->name, sizeof p->name, "%s", all[i].name);
		snprintf(p->provider_id, sizeof p->provider_id, "gce://%s/%s/%s", project,
			 zones[zone_of[i]], all[i].name);
		snprintf(p->vpc_ip, sizeof p->vpc_ip, "%s", all[i].vpc_ip);
		p->control_plane = cloud_role_parse(all[i].role) == 1;
		(*count)++;
	}
	free(all);
	free(zone_of);
	return r;
}

static int gcp_lb(const struct cloud *cl, char *host, size_t cap)
{
	char zone[64], project[64], region[64], port[8];
	struct gcp_instance own;
	int r;

	if ((r = own_instance(cl, project, sizeof project, zone, sizeof zone, &own)) < 0)
		return r;
	if (!own.has_uid || !own.uid[0])
		return log_err(-ENOENT, "gcp: instance %s has no label %s", own.name,
			       GCP_LABEL_UID);
	if (gcp_region_of_zone(zone, region, sizeof region) < 0)
		return log_err(-EINVAL, "gcp: zone %s is not REGION-X", zone);
	if ((r = gcp_lb_endpoint(api_of(cl), project, region, own.uid, host, cap, port,
				 sizeof port)) == 0)
		log_info("gcp: load balancer %s (port %s) from the Compute API's forwarding rule",
			 host, port);
	return r;
}

static int gcp_hash(const struct cloud *cl, char *out, size_t cap)
{
	char v[128];
	int r = gce_get(cl, "instance/attributes/constellation-init-secret-hash", v, sizeof v);

	if (r < 0)
		return r;
	if (md_parse_bcrypt(v, strlen(v), out, cap) < 0)
		return log_err(-EINVAL, "gcp: constellation-init-secret-hash is not a bcrypt hash");
	return 0;
}

static int gcp_disk(const struct cloud *cl, char *out, size_t cap)
{
	return disk_scan_gcp(cl, "state-disk", out, cap);
}

const struct cloud_ops cloud_gcp = {
    .name = "gcp",
    .self = gcp_self,
    .peers = gcp_peers,
    .lb_endpoint = gcp_lb,
    .uid = gcp_uid,
    .init_secret_hash = gcp_hash,
    .state_disk = gcp_disk,
    .disk_wanted = "GCP's persistent disk state-disk (NVMe model nvme_card-pd with "
		   "\"device_name\":\"state-disk\" in Identify Namespace at 384, or SCSI Google "
		   "PersistentDisk with state-disk in VPD page 0x83)",
};
