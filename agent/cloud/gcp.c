/* GCP: the GCE metadata server (cloud.google.com/compute/docs/metadata/querying-metadata:
 * GET http://169.254.169.254/computeMetadata/v1/..., header "Metadata-Flavor: Google", plain
 * text values). It serves the name, zone, project, IP and the custom metadata item
 * constellation-init-secret-hash; the role and UID are labels, which only the compute API
 * serves. The state disk is the persistent disk attached as "state-disk". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
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

static int gcp_self(const struct cloud *cl, struct md_instance *self)
{
	char zone[128], project[64], *z;
	int r;

	if ((r = gce_get(cl, "instance/name", self->name, sizeof self->name)) < 0 ||
	    (r = gce_get(cl, "instance/zone", zone, sizeof zone)) < 0 ||
	    (r = gce_get(cl, "project/project-id", project, sizeof project)) < 0 ||
	    (r = gce_get(cl, "instance/network-interfaces/0/ip", self->vpc_ip,
			 sizeof self->vpc_ip)) < 0)
		return r;
	/* "projects/<number>/zones/<zone>": the client keeps the last element */
	z = strrchr(zone, '/') ? strrchr(zone, '/') + 1 : zone;
	if (!*z)
		return log_err(-EINVAL, "gcp: metadata instance/zone '%s' names no zone", zone);
	if (snprintf(self->provider_id, sizeof self->provider_id, "gce://%s/%s/%s", project, z,
		     self->name) >= (int)sizeof self->provider_id)
		return log_err(-ENAMETOOLONG, "gcp: the provider ID is too long");
	self->no_role = 1; /* a label: the compute API's */
	return 0;
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
    .init_secret_hash = gcp_hash,
    .state_disk = gcp_disk,
    .disk_wanted = "GCP's persistent disk state-disk (NVMe model nvme_card-pd with "
		   "\"device_name\":\"state-disk\" in Identify Namespace at 384, or SCSI Google "
		   "PersistentDisk with state-disk in VPD page 0x83)",
};
