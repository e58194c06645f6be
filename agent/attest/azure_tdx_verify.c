/* azure-tdx, the validator's side (tools and tests only; the agent links no verifier). As
 * Constellation's internal/attestation/azure/tdx/validator.go, before the TPM quote check:
 * the TD quote of InstanceInfo verified with Intel's collateral (tdx_verify: PCK chain to
 * Intel's SGX Root CA or --intel-root, CRLs, QE identity, TCB info) and the attestationConfig
 * policy (qeSVN, pceSVN, teeTCBSVN, qeVendorID, mrSeam, xfam), then the HCL AK binding:
 * SHA-256(RuntimeData) == the quote's REPORTDATA[0:32] and RuntimeData's keys[0] == the
 * document's AK. Collateral from --tdx-collateral DIR, or, without it, from the policy's
 * tdx_fetch hook with the quote (the tools fetch it from Intel's PCS: tools/tdx-pcs.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest/azure_tdx.h"
#include "attest/hcl.h"
#include "attest/tdx.h"
#include "attest/vtpm.h"
#include "base/base.h"

struct azure_tdx_priv {
	struct tdx_policy pol;
	struct tdx_collateral coll;
	uint8_t root[4096];
	size_t root_len;
};

static int b64_member(struct json_object *o, const char *k, uint8_t **out, size_t *len, char *err,
		      size_t errlen)
{
	struct json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return errbuf_set(err, errlen, "InstanceInfo has no %s string", k);
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	*out = malloc(n / 4 * 3 + 3);
	if (!*out)
		return -ENOMEM;
	if (base64_decode(BASE64_STD, s, n, *out, n / 4 * 3 + 3, len) < 0) {
		free(*out);
		*out = NULL;
		return errbuf_set(err, errlen, "InstanceInfo's %s is not base64", k);
	}
	return 0;
}

int azure_tdx_instance_info_parse(const uint8_t *ii, size_t len, uint8_t **quote, size_t *qlen,
				  uint8_t **runtime, size_t *rlen, char *err, size_t errlen)
{
	struct json_object *o;
	int r;

	*quote = *runtime = NULL;
	if (!ii || !len)
		return errbuf_set(err, errlen, "the document has no InstanceInfo");
	if (len > VTPM_INSTANCE_INFO_MAX)
		return errbuf_set(err, errlen, "InstanceInfo of %zu bytes", len);
	o = json_parse_exact((const char *)ii, len);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return errbuf_set(err, errlen, "InstanceInfo is not a JSON object");
	}
	r = b64_member(o, "AttestationReport", quote, qlen, err, errlen);
	if (r == 0)
		r = b64_member(o, "RuntimeData", runtime, rlen, err, errlen);
	json_object_put(o);
	if (r < 0) {
		free(*quote);
		*quote = NULL;
	}
	return r;
}

static int trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
		       size_t errlen)
{
	struct azure_tdx_priv *pr = p->priv;
	struct tdx_verify_opts o;
	struct tdx_collateral fetched = {0};
	struct tdx_quote q;
	char dir[4096];
	uint8_t *quote, *rt;
	size_t ql, rl, off = 0;
	TPMT_PUBLIC ak;
	int r;

	if ((r = azure_tdx_instance_info_parse(v->instance_info, v->instance_info_len, &quote, &ql,
					       &rt, &rl, err, errlen)) < 0)
		return r;
	tdx_verify_opts_init(&o);
	if (p->at)
		o.at = p->at;
	if (pr->root_len) {
		o.root = pr->root;
		o.root_len = pr->root_len;
	}
	if (!p->collateral) {
		/* the quote names the collateral it needs (its PCK's FMSPC and CA) */
		if ((r = p->tdx_fetch(p, quote, ql, dir, sizeof dir, err, errlen)) < 0 ||
		    (r = tdx_collateral_load(dir, &fetched, err, errlen)) < 0)
			goto out;
		tdx_collateral_opts(&fetched, &o);
	} else
		tdx_collateral_opts(&pr->coll, &o);
	if ((r = tdx_verify(quote, ql, &o, &q, err, errlen)) < 0 ||
	    (r = tdx_policy_check(&q, &pr->pol, err, errlen)) < 0 ||
	    (r = hcl_check_runtime_hash(rt, rl, q.body.report_data, err, errlen)) < 0)
		goto out;
	r = -EINVAL;
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(v->ak_pub, v->ak_len, &off, &ak) != TSS2_RC_SUCCESS ||
	    off != v->ak_len || ak.type != TPM2_ALG_RSA) {
		errbuf_set(err, errlen, "the document's AK is not an RSA TPMT_PUBLIC");
		goto out;
	}
	r = hcl_check_ak(rt, rl, ak.unique.rsa.buffer, ak.unique.rsa.size,
			 ak.parameters.rsaDetail.exponent, err, errlen);
out:
	tdx_collateral_free(&fetched);
	free(quote);
	free(rt);
	return r;
}

static int policy_init(struct vtpm_policy *p, char *err, size_t errlen)
{
	struct azure_tdx_priv *pr = calloc(1, sizeof *pr);
	int r;

	if (!pr)
		return -ENOMEM;
	p->priv = pr;
	if (p->config &&
	    (r = tdx_policy_parse(p->config, p->config_len, &pr->pol, err, errlen)) < 0)
		goto fail;
	/* the PEM text of --intel-root (tools/tool.h reads the file) */
	if (p->test_root && pem_decode(p->test_root, strlen(p->test_root), "CERTIFICATE", pr->root,
				       sizeof pr->root, &pr->root_len) < 0) {
		r = errbuf_set(err, errlen, "--intel-root: no PEM certificate");
		goto fail;
	}
	if (!p->collateral && !p->tdx_fetch) {
		r = errbuf_set(
		    err, errlen,
		    "Intel's collateral is needed: give --tdx-collateral DIR, or let the "
		    "tools fetch it from PCS (docs/tdx.md)");
		goto fail;
	}
	if (p->collateral && (r = tdx_collateral_load(p->collateral, &pr->coll, err, errlen)) < 0)
		goto fail;
	return 0;
fail:
	free(pr);
	p->priv = NULL;
	return r;
}

static void policy_free(struct vtpm_policy *p)
{
	struct azure_tdx_priv *pr = p->priv;

	if (pr)
		tdx_collateral_free(&pr->coll);
	free(pr);
	p->priv = NULL;
}

const struct vtpm_check vtpm_check_azure_tdx = {
    .name = "azure-tdx",
    .enforced = "4,8,9,11,12,13,15",
    .trusted_key = trusted_key,
    .policy_init = policy_init,
    .policy_free = policy_free,
};
