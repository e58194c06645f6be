/* gcp-sev-snp's issuer side (OID 1.3.9900.3.2; Constellation's gcp/snp/issuer.go): the GCE
 * AK, and InstanceInfo = snp.InstanceInfo{AttestationReport, ReportSigner: the VCEK,
 * CertChain: the ASK if the host gives one, GCP: {zone, project_id, instance_name}} from an
 * extended report whose REPORT_DATA is extraData followed by 32 zero bytes (the TPM nonce
 * then covers the report; the report does not name the AK, GCE's API does). The names come
 * from the metadata server (GET <imds>/computeMetadata/v1/..., "Metadata-Flavor: Google"),
 * as cloud.google.com/go/compute/metadata reads them (the zone is the last part of
 * instance/zone). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/sev_guest.h"
#include "attest/snp_info.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "net/net.h"

#define GCE_TIMEOUT_MS 5000
#define GCE_BODY_MAX   1024

static int gce_get(const char *imds, const char *path, char *out, size_t cap, char *err,
		   size_t errlen)
{
	const struct http_req rq = {.headers = "Metadata-Flavor: Google\r\n"};
	struct http_response resp;
	char url[512];
	int r;

	if ((size_t)snprintf(url, sizeof url, "%s/computeMetadata/v1/%s", imds, path) >= sizeof url)
		return errbuf_set(err, errlen, "metadata URL too long"), -EINVAL;
	r = http_request(url, &rq, GCE_TIMEOUT_MS, GCE_BODY_MAX, &resp, err, errlen);
	if (r < 0)
		return r;
	r = 0;
	if (resp.status != 200) {
		r = -EIO;
		errbuf_set(err, errlen, "metadata %s: HTTP %d", path, resp.status);
	} else if (resp.len == 0 || resp.len >= cap || strlen(resp.body) != resp.len) {
		r = -EINVAL;
		errbuf_set(err, errlen, "metadata %s: not a short line", path);
	} else {
		memcpy(out, resp.body, resp.len + 1);
	}
	http_response_free(&resp);
	return r;
}

int gcp_snp_gce_info(const char *imds, struct snp_gce_info *g, char *err, size_t errlen)
{
	char zone[256], *slash;
	int r;

	memset(g, 0, sizeof *g);
	if ((r = gce_get(imds, "instance/name", g->instance_name, sizeof g->instance_name, err,
			 errlen)) < 0 ||
	    (r = gce_get(imds, "project/project-id", g->project_id, sizeof g->project_id, err,
			 errlen)) < 0 ||
	    (r = gce_get(imds, "instance/zone", zone, sizeof zone, err, errlen)) < 0)
		return r;
	/* "projects/<number>/zones/<zone>" */
	slash = strrchr(zone, '/');
	if (!slash || !slash[1] || strlen(slash + 1) >= sizeof g->zone)
		return errbuf_set(err, errlen,
				  "metadata instance/zone '%.64s' is not "
				  "projects/N/zones/ZONE",
				  zone),
		       -EINVAL;
	strcpy(g->zone, slash + 1);
	return 0;
}

static int gcp_snp_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			char *err, size_t errlen)
{
	uint8_t data[SEV_REPORT_DATA_LEN] = {0}, report[SEV_REPORT_LEN], *certs;
	const uint8_t *vcek, *ask = NULL;
	size_t certs_len, vcek_len, ask_len = 0;
	struct snp_gce_info g;
	int r;

	memcpy(data, in->extra, sizeof in->extra);
	if (!(certs = malloc(SEV_CERTS_MAX)))
		return -ENOMEM;
	r = sev_guest_ext_report(in->env->tsm_report, in->env->sev_guest, data, report, certs,
				 SEV_CERTS_MAX, &certs_len, err, errlen);
	if (r < 0)
		goto out;
	r = sev_cert_table_find(certs, certs_len, sev_guid_vcek, &vcek, &vcek_len, err, errlen);
	if (r == -ENOENT)
		errbuf_set(err, errlen, "the host's certificate table has no VCEK");
	if (r < 0)
		goto out;
	r = sev_cert_table_find(certs, certs_len, sev_guid_ask, &ask, &ask_len, err, errlen);
	if (r == -ENOENT)
		ask = NULL;
	else if (r < 0)
		goto out;
	if ((r = gcp_snp_gce_info(in->env->imds, &g, err, errlen)) < 0)
		goto out;
	r = snp_info_build(report, vcek, vcek_len, ask, ask_len, &g, out, cap, len);
	if (r < 0)
		errbuf_set(err, errlen, "InstanceInfo: %s",
			   r == -EINVAL ? "a GCE name with characters Go escapes" : strerror(-r));
out:
	free(certs);
	return r;
}

const struct vtpm_variant vtpm_gcp_sev_snp = {
    .name = "gcp-sev-snp",
    .oid = {0x2b, 0xcd, 0x2c, 0x03, 0x02}, /* 1.3.9900.3.2 */
    .oid_len = 5,
    .ak = VTPM_AK_GCE,
    .instance_info = gcp_snp_info,
};
