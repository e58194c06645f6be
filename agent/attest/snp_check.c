/* The validator sides of aws-sev-snp and gcp-sev-snp (tools only), as Constellation's
 * aws/snp/validator.go and gcp/snp/validator.go check a document before its quote: the
 * InstanceInfo (snp_info.c, Go's bytes only), the report against its signer, the signer's
 * chain to the policy's root (amdRootKey of the attestationConfig, or --amd-root for tests,
 * else AMD's built-in ARKs) with the ASK from the document or amdSigningKey, the policy
 * (no debug, VMPL 0, the launch TCB at least bootloaderVersion/teeVersion/snpVersion/
 * microcodeVersion, committed <= current, reported TCB = the signer's) and the variant's
 * REPORT_DATA: aws-sev-snp SHA-512 of the AK's PKIX DER with a VLEK as the signer,
 * gcp-sev-snp extraData and 32 zero bytes, then GCE's key for the AK. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "attest/snp.h"
#include "attest/snp_check.h"
#include "attest/snp_info.h"
#include "attest/vtpm.h"
#include "base/base.h"

#define CERT_MAX 4096

struct snp_policy {
	uint8_t ark[CERT_MAX]; /* the one root trusted, or none: AMD's built-in ones */
	size_t ark_len;
	uint8_t ask[CERT_MAX]; /* amdSigningKey, or none */
	size_t ask_len;
	int have_min_launch;
	struct snp_tcb min_launch;
};

static int pem_cert(const char *text, size_t len, uint8_t *der, size_t *der_len)
{
	return pem_decode(text, len, "CERTIFICATE", der, CERT_MAX, der_len);
}

/* A Certificate of Constellation's config: a PEM string, "" for none. */
static int config_cert(struct json_object *cfg, const char *key, uint8_t *der, size_t *der_len,
		       char *err, size_t errlen)
{
	struct json_object *v;

	*der_len = 0;
	if (!json_object_object_get_ex(cfg, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return errbuf_set(err, errlen, "attestationConfig: %s is not a PEM string", key),
		       -EINVAL;
	if (json_object_get_string_len(v) == 0)
		return 0;
	if (pem_cert(json_object_get_string(v), (size_t)json_object_get_string_len(v), der,
		     der_len) < 0)
		return errbuf_set(err, errlen, "attestationConfig: %s: no PEM CERTIFICATE", key),
		       -EINVAL;
	return 0;
}

/* An AttestationVersion[uint8]: a number 0-255 ("latest" is the CLI's to resolve). */
static int config_version(struct json_object *cfg, const char *key, uint8_t *out, int *have,
			  char *err, size_t errlen)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(cfg, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return errbuf_set(err, errlen,
				  "attestationConfig: %s is not a number 0-255 (\"latest\" must be "
				  "resolved first, as the CLI does)",
				  key),
		       -EINVAL;
	n = json_object_get_int64(v);
	if (n < 0 || n > 255)
		return errbuf_set(err, errlen, "attestationConfig: %s %lld is not 0-255", key,
				  (long long)n),
		       -EINVAL;
	*out = (uint8_t)n;
	*have = 1;
	return 0;
}

static int snp_policy_init(struct vtpm_policy *p, char *err, size_t errlen)
{
	struct snp_policy *sp = calloc(1, sizeof *sp);
	struct json_object *cfg = NULL;
	int r = 0;

	if (!sp)
		return -ENOMEM;
	if (p->config) {
		cfg = json_parse_exact(p->config, p->config_len);
		if (!cfg || !json_object_is_type(cfg, json_type_object)) {
			errbuf_set(err, errlen, "attestationConfig: not a JSON object");
			r = -EINVAL;
			goto out;
		}
		if ((r = config_cert(cfg, "amdRootKey", sp->ark, &sp->ark_len, err, errlen)) < 0 ||
		    (r = config_cert(cfg, "amdSigningKey", sp->ask, &sp->ask_len, err, errlen)) <
			0 ||
		    (r = config_version(cfg, "bootloaderVersion", &sp->min_launch.bootloader,
					&sp->have_min_launch, err, errlen)) < 0 ||
		    (r = config_version(cfg, "teeVersion", &sp->min_launch.tee,
					&sp->have_min_launch, err, errlen)) < 0 ||
		    (r = config_version(cfg, "snpVersion", &sp->min_launch.snp,
					&sp->have_min_launch, err, errlen)) < 0 ||
		    (r = config_version(cfg, "microcodeVersion", &sp->min_launch.microcode,
					&sp->have_min_launch, err, errlen)) < 0)
			goto out;
	}
	/* --amd-root: the PEM text of the one root to trust instead (tests) */
	if (p->test_root &&
	    pem_cert(p->test_root, strlen(p->test_root), sp->ark, &sp->ark_len) < 0) {
		errbuf_set(err, errlen, "--amd-root: no PEM CERTIFICATE");
		r = -EINVAL;
	}
out:
	json_object_put(cfg);
	if (r < 0)
		free(sp);
	else
		p->priv = sp;
	return r;
}

static void snp_policy_free(struct vtpm_policy *p)
{
	free(p->priv);
	p->priv = NULL;
}

int snp_check_document(const struct vtpm_policy *p, const struct vtpm_view *v,
		       const uint8_t report_data[64], int want_vlek, int want_gcp,
		       struct snp_report *ret, char *err, size_t errlen)
{
	const struct snp_policy *sp = p->priv;
	struct snp_info *ii = malloc(sizeof *ii);
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product prod;
	char e[256];
	int rc;

	if (!ii)
		return -ENOMEM;
	if (!sp) {
		rc = errbuf_set(err, errlen, "no policy (policy_init not run)");
		goto out;
	}
	if ((rc = snp_info_parse(v->instance_info, v->instance_info_len, ii, e, sizeof e)) < 0) {
		errbuf_set(err, errlen, "%s", e);
		goto out;
	}
	if (ii->have_gcp != want_gcp) {
		rc = errbuf_set(err, errlen, "InstanceInfo: GCP is %s",
				want_gcp ? "null" : "not null");
		goto out;
	}
	snp_verify_opts_init(&o);
	if (p->at)
		o.at = p->at;
	if (sp->ark_len) {
		o.ark = sp->ark;
		o.ark_len = sp->ark_len;
	}
	/* the document's ASK before the configured one, as AttestationWithCerts */
	if (ii->ask_len) {
		o.chain[o.n_chain] = ii->ask;
		o.chain_len[o.n_chain++] = ii->ask_len;
	}
	if (sp->ask_len) {
		o.chain[o.n_chain] = sp->ask;
		o.chain_len[o.n_chain++] = sp->ask_len;
	}
	o.vmpl = 0;
	o.report_data = report_data;
	o.have_min_launch_tcb = sp->have_min_launch;
	o.min_launch_tcb = sp->min_launch;
	rc = snp_verify(ii->report, sizeof ii->report, ii->signer, ii->signer_len, &o, &r, &prod, e,
			sizeof e);
	if (rc < 0) {
		errbuf_set(err, errlen, "%s", e);
		rc = -EINVAL;
		goto out;
	}
	if (want_vlek && SNP_SIGNER_KEY(r.signer_info) != SNP_KEY_VLEK) {
		rc = errbuf_set(err, errlen, "the report is not signed by a VLEK");
		goto out;
	}
	if (ret)
		*ret = r;
	rc = 0;
out:
	free(ii);
	return rc;
}

static int aws_trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			   size_t errlen)
{
	uint8_t rd[64];
	char e[200];

	if (snp_ak_digest(v->ak_pub, v->ak_len, rd, e, sizeof e) < 0)
		return errbuf_set(err, errlen, "%s", e);
	return snp_check_document(p, v, rd, 1, 0, NULL, err, errlen);
}

const struct vtpm_check vtpm_check_aws_sev_snp = {
    .name = "aws-sev-snp",
    .enforced = "4,8,9,11,12,13,15",
    .trusted_key = aws_trusted_key,
    .validate_cvm = NULL,
    .policy_init = snp_policy_init,
    .policy_free = snp_policy_free,
};

extern const struct vtpm_check vtpm_check_gcp_sev_es;

/* gcp-sev-snp: the SNP checks with REPORT_DATA = extraData || 32 zero bytes, then the AK must
 * be GCE's key for the instance the GCP part names (gcp-sev-es's getShieldedInstanceIdentity
 * check, given the GCEInstanceInfo JSON it reads), as Constellation's getTrustedKey. */
static int gcp_trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			   size_t errlen)
{
	uint8_t rd[64] = {0};
	struct snp_info *ii;
	struct vtpm_view gv;
	char gce[3 * SNP_INFO_GCE_MAX + 64];
	int r, n;

	memcpy(rd, v->extra, sizeof v->extra);
	if ((r = snp_check_document(p, v, rd, 0, 1, NULL, err, errlen)) < 0)
		return r;
	if (!(ii = malloc(sizeof *ii)))
		return -ENOMEM;
	r = snp_info_parse(v->instance_info, v->instance_info_len, ii, err, errlen);
	if (r == 0) {
		n = snprintf(gce, sizeof gce,
			     "{\"zone\":\"%s\",\"project_id\":\"%s\",\"instance_name\":\"%s\"}",
			     ii->gcp.zone, ii->gcp.project_id, ii->gcp.instance_name);
		gv = *v;
		gv.instance_info = (const uint8_t *)gce;
		gv.instance_info_len = (size_t)n;
		r = vtpm_check_gcp_sev_es.trusted_key(p, &gv, err, errlen);
	}
	free(ii);
	return r;
}

const struct vtpm_check vtpm_check_gcp_sev_snp = {
    .name = "gcp-sev-snp",
    .enforced = "4,8,9,11,12,13,15",
    .trusted_key = gcp_trusted_key,
    .validate_cvm = NULL,
    .policy_init = snp_policy_init,
    .policy_free = snp_policy_free,
};
