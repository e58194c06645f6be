/* gcp-sev-es (OID 1.3.9900.3.1), the issuer's side: the vTPM core with GCE's AK (a primary key
 * of the endorsement hierarchy from the template in NV 0x01c10001) and InstanceInfo =
 * Go's encoding/json of go-tpm-tools' attest.GCEInstanceInfo as Constellation fills it from the
 * metadata server: {"zone":..,"project_id":..,"instance_name":..} (the protobuf's json tags,
 * field order zone, project_id, project_number, instance_name, instance_id, every field
 * omitempty; the numbers are not set). The values come from
 * GET <imds>/computeMetadata/v1/{instance/zone, project/project-id, instance/name} with
 * "Metadata-Flavor: Google" (the zone answer is "projects/N/zones/Z": Z is kept, as Go's
 * metadata.Zone() does). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attest.h"
#include "base/base.h"
#include "net/net.h"
#include "vtpm.h"

#define GCE_VALUE_MAX  256
#define GCE_TIMEOUT_MS 5000

/* Names GCE gives zones, projects ("example.com:proj" included) and instances: nothing a JSON
 * string or a URL path would have to escape. */
static int name_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.' || *s == ':'))
			return 0;
	return 1;
}

static int gce_get(const char *imds, const char *path, char *out, char *err, size_t errlen)
{
	static const struct http_req rq = {.headers = "Metadata-Flavor: Google\r\n"};
	struct http_response resp;
	char url[256], why[200];
	size_t n;
	int r;

	snprintf(url, sizeof url, "%s/computeMetadata/v1/%s", imds, path);
	r = http_request(url, &rq, GCE_TIMEOUT_MS, GCE_VALUE_MAX * 2, &resp, why, sizeof why);
	if (r < 0)
		return errbuf_set(err, errlen, "metadata %s: %s", path, why), r;
	n = resp.len;
	while (n && (resp.body[n - 1] == '\n' || resp.body[n - 1] == ' '))
		n--;
	if (resp.status != 200 || n >= GCE_VALUE_MAX) {
		http_response_free(&resp);
		return errbuf_set(err, errlen, "metadata %s: HTTP %d (%zu bytes)", path,
				  resp.status, n);
	}
	memcpy(out, resp.body, n);
	out[n] = '\0';
	http_response_free(&resp);
	return 0;
}

static int put_field(char *out, size_t cap, size_t *len, const char *key, const char *v)
{
	int n;

	if (!*v) /* omitempty */
		return 0;
	n = snprintf(out + *len, cap - *len, "%s\"%s\":\"%s\"", *len > 1 ? "," : "", key, v);
	if (n < 0 || (size_t)n >= cap - *len)
		return -ENOBUFS;
	*len += (size_t)n;
	return 0;
}

static int instance_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			 char *err, size_t errlen)
{
	char zone[GCE_VALUE_MAX], project[GCE_VALUE_MAX], name[GCE_VALUE_MAX], *z;
	size_t n = 1;
	int r;

	if ((r = gce_get(in->env->imds, "instance/zone", zone, err, errlen)) < 0 ||
	    (r = gce_get(in->env->imds, "project/project-id", project, err, errlen)) < 0 ||
	    (r = gce_get(in->env->imds, "instance/name", name, err, errlen)) < 0)
		return r;
	z = strrchr(zone, '/');
	z = z ? z + 1 : zone;
	if (!name_ok(z) || !name_ok(project) || !name_ok(name))
		return errbuf_set(err, errlen,
				  "metadata: zone, project or instance name has characters GCE "
				  "does not give");
	if (cap < 2)
		return -ENOBUFS;
	out[0] = '{';
	if ((r = put_field((char *)out, cap, &n, "zone", z)) < 0 ||
	    (r = put_field((char *)out, cap, &n, "project_id", project)) < 0 ||
	    (r = put_field((char *)out, cap, &n, "instance_name", name)) < 0 || n + 1 >= cap)
		return errbuf_set(err, errlen, "instance info larger than %zu bytes", cap);
	out[n++] = '}';
	*len = n;
	return 0;
}

const struct vtpm_variant vtpm_gcp_sev_es = {
    .name = "gcp-sev-es",
    .oid = {0x2b, 0xcd, 0x2c, 0x03, 0x01}, /* 1.3.9900.3.1 */
    .oid_len = 5,
    .ak = VTPM_AK_GCE,
    .instance_info = instance_info,
};
