/* azure-sev-snp's validator (azure_snp.h), as Constellation's
 * internal/attestation/azure/snp/validator.go getTrustedKey: the SNP report of InstanceInfo
 * checked with its VCEK, the ASK of the document's chain (or amdSigningKey of the
 * attestationConfig, or the built-in ones) and the ARK of the attestationConfig (amdRootKey;
 * --amd-root in tests; else AMD's built-in roots); no debug, VMPL 0, the minimum TCB and launch
 * TCB of the configuration, provisional firmware permitted; the ID key digest against
 * firmwareSignerConfig.acceptedKeyDigests with its enforcement policy; the HCL binding:
 * REPORT_DATA[0:32] = SHA-256(runtime data) and the runtime data's keys[0] is the document's
 * AK. Tools only: the agent references nothing here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest/azure_snp.h"
#include "attest/hcl.h"
#include "attest/maa.h"
#include "attest/snp.h"
#include "base/base.h"

#define CERT_MAX 4096

/* Constellation's idkeydigest.DefaultList: the digest of Azure's ID key */
static const uint8_t default_digest[48] = {
    0x03, 0x56, 0x21, 0x58, 0x82, 0xa8, 0x25, 0x27, 0x9a, 0x85, 0xb3, 0x00, 0xb0, 0xb7, 0x42, 0x93,
    0x1d, 0x11, 0x3b, 0xf7, 0xe3, 0x2d, 0xde, 0x2e, 0x50, 0xff, 0xde, 0x7e, 0xc7, 0x43, 0xca, 0x49,
    0x1e, 0xcd, 0xd7, 0xf3, 0x36, 0xdc, 0x28, 0xa6, 0xe0, 0xb2, 0xbb, 0x57, 0xaf, 0x7a, 0x44, 0xa3};

enum enforcement { ENF_EQUAL = 1, ENF_MAA_FALLBACK, ENF_WARN_ONLY };

struct az_policy {
	uint8_t (*digests)[48];
	size_t n_digests;
	enum enforcement enf;
	int have_min;
	struct snp_tcb min;
	uint8_t *ark, *ask; /* DER, from amdRootKey / amdSigningKey */
	size_t ark_len, ask_len;
	char *maa_url; /* firmwareSignerConfig.maaURL, NULL: none */
};

/* ---- InstanceInfo ---- */

/* A []byte field: absent or null -> none; a string -> its std base64 decoding. */
static int bytes_field(json_object *o, const char *name, uint8_t **out, size_t *len)
{
	json_object *v = json_member_go(o, name);
	size_t n;

	*out = NULL;
	*len = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	n = (size_t)json_object_get_string_len(v);
	if (!(*out = malloc(n / 4 * 3 + 3)))
		return -ENOMEM;
	if (base64_decode(BASE64_STD, json_object_get_string(v), n, *out, n / 4 * 3 + 3, len) < 0) {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

void azure_snp_info_free(struct azure_snp_info *in)
{
	free(in->signer);
	free(in->chain);
	free(in->report);
	free(in->runtime);
	free(in->maa_token);
	memset(in, 0, sizeof *in);
}

int azure_snp_info_parse(const uint8_t *json, size_t len, struct azure_snp_info *in, char *err,
			 size_t errlen)
{
	json_object *root, *az, *tok;
	const char *bad = NULL;
	int r = 0;

	memset(in, 0, sizeof *in);
	if (len > AZURE_SNP_INFO_MAX || !(root = json_parse_exact((const char *)json, len)) ||
	    !json_object_is_type(root, json_type_object)) {
		if (len <= AZURE_SNP_INFO_MAX && root)
			json_object_put(root);
		return errbuf_set(err, errlen, "InstanceInfo (%zu bytes) is not a JSON object",
				  len);
	}
	if ((r = bytes_field(root, "ReportSigner", &in->signer, &in->signer_len)) < 0)
		bad = "ReportSigner";
	else if ((r = bytes_field(root, "CertChain", &in->chain, &in->chain_len)) < 0)
		bad = "CertChain";
	else if ((r = bytes_field(root, "AttestationReport", &in->report, &in->report_len)) < 0)
		bad = "AttestationReport";
	az = json_member_go(root, "Azure");
	if (!bad && az) {
		if (!json_object_is_type(az, json_type_object)) {
			bad = "Azure";
			r = -EINVAL;
		} else if ((r = bytes_field(az, "RuntimeData", &in->runtime, &in->runtime_len)) <
			   0) {
			bad = "Azure.RuntimeData";
		} else if ((tok = json_member_go(az, "MAAToken")) &&
			   !json_object_is_type(tok, json_type_string)) {
			bad = "Azure.MAAToken";
			r = -EINVAL;
		} else {
			in->have_azure = 1;
			if (tok && !(in->maa_token = strdup(json_object_get_string(tok))))
				r = -ENOMEM;
		}
	}
	json_object_put(root);
	if (r < 0) {
		azure_snp_info_free(in);
		return r == -ENOMEM ? r
				    : errbuf_set(err, errlen, "InstanceInfo: %s is not base64 text",
						 bad ? bad : "a field");
	}
	return 0;
}

/* ---- the policy (attestationConfig of azure-sev-snp) ---- */

static int pem_cert(const char *text, size_t len, uint8_t **der, size_t *der_len)
{
	int r;

	if (!(*der = malloc(CERT_MAX)))
		return -ENOMEM;
	if ((r = pem_decode(text, len, "CERTIFICATE", *der, CERT_MAX, der_len)) < 0) {
		free(*der);
		*der = NULL;
	}
	return r;
}

/* amdRootKey / amdSigningKey: a PEM string, "" or absent for none */
static int cert_field(json_object *root, const char *name, uint8_t **der, size_t *len, char *err,
		      size_t errlen)
{
	json_object *v = json_member_go(root, name);

	if (!v || json_object_is_type(v, json_type_null) ||
	    (json_object_is_type(v, json_type_string) && !json_object_get_string_len(v)))
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    pem_cert(json_object_get_string(v), (size_t)json_object_get_string_len(v), der, len) <
		0)
		return errbuf_set(err, errlen, "config: %s is not a PEM certificate", name);
	return 0;
}

/* bootloaderVersion etc.: a number 0-255 (the CLI resolves "latest" before the join service
 * sees the configuration) */
static int version_field(json_object *root, const char *name, uint8_t *out, int *have, char *err,
			 size_t errlen)
{
	json_object *v = json_member_go(root, name);
	int64_t n;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 0 || n > 255)
		return errbuf_set(err, errlen,
				  "config: %s is not a number 0-255 (\"latest\" must "
				  "be resolved first)",
				  name);
	*out = (uint8_t)n;
	*have = 1;
	return 0;
}

static int signer_config(json_object *fsc, struct az_policy *a, char *err, size_t errlen)
{
	json_object *d = json_member_go(fsc, "acceptedKeyDigests"),
		    *e = json_member_go(fsc, "enforcementPolicy"),
		    *u = json_member_go(fsc, "maaURL");
	size_t n, got;

	if (u && !json_object_is_type(u, json_type_null)) {
		if (!json_object_is_type(u, json_type_string) ||
		    (size_t)json_object_get_string_len(u) > 512)
			return errbuf_set(err, errlen, "config: maaURL is not a URL");
		if (json_object_get_string_len(u) &&
		    !(a->maa_url = strdup(json_object_get_string(u))))
			return -ENOMEM;
	}

	if (d && json_object_is_type(d, json_type_string)) { /* the legacy form: one digest */
		if (!(a->digests = calloc(1, 48)))
			return -ENOMEM;
		if (hex_decode(json_object_get_string(d), (size_t)json_object_get_string_len(d),
			       a->digests[0], 48, &got) < 0 ||
		    got != 48)
			return errbuf_set(err, errlen,
					  "config: acceptedKeyDigests: not a 48-byte "
					  "hex digest");
		a->n_digests = 1;
	} else if (d && json_object_is_type(d, json_type_array)) {
		n = json_object_array_length(d);
		if (n > 64)
			return errbuf_set(err, errlen, "config: more than 64 acceptedKeyDigests");
		a->digests = calloc(n ? n : 1, 48);
		if (!a->digests)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			json_object *s = json_object_array_get_idx(d, i);

			if (!json_object_is_type(s, json_type_string) ||
			    hex_decode(json_object_get_string(s),
				       (size_t)json_object_get_string_len(s), a->digests[i], 48,
				       &got) < 0 ||
			    got != 48)
				return errbuf_set(
				    err, errlen,
				    "config: acceptedKeyDigests[%zu] is not a 48-byte "
				    "hex digest",
				    i);
		}
		a->n_digests = n;
	} else if (d && !json_object_is_type(d, json_type_null)) {
		return errbuf_set(err, errlen, "config: acceptedKeyDigests is not a list");
	}
	if (!e)
		return 0;
	if (json_object_is_type(e, json_type_boolean)) { /* legacy enforceIdKeyDigest */
		a->enf = json_object_get_boolean(e) ? ENF_EQUAL : ENF_WARN_ONLY;
	} else if (json_object_is_type(e, json_type_string) &&
		   !strcasecmp(json_object_get_string(e), "equal")) {
		a->enf = ENF_EQUAL;
	} else if (json_object_is_type(e, json_type_string) &&
		   !strcasecmp(json_object_get_string(e), "maafallback")) {
		a->enf = ENF_MAA_FALLBACK;
	} else if (json_object_is_type(e, json_type_string) &&
		   !strcasecmp(json_object_get_string(e), "warnonly")) {
		a->enf = ENF_WARN_ONLY;
	} else {
		return errbuf_set(err, errlen,
				  "config: enforcementPolicy is not Equal, "
				  "MAAFallback or WarnOnly");
	}
	return 0;
}

static void policy_free(struct vtpm_policy *p)
{
	struct az_policy *a = p->priv;

	if (!a)
		return;
	free(a->digests);
	free(a->ark);
	free(a->ask);
	free(a->maa_url);
	free(a);
	p->priv = NULL;
}

static int policy_init(struct vtpm_policy *p, char *err, size_t errlen)
{
	struct az_policy *a = calloc(1, sizeof *a);
	json_object *root = NULL, *fsc;
	uint8_t bl = 0, tee = 0, snp = 0, uc = 0;
	int r = 0;

	if (!a)
		return -ENOMEM;
	p->priv = a;
	a->enf = ENF_MAA_FALLBACK; /* Constellation's default configuration */
	if (p->config) {
		root = json_parse_exact(p->config, p->config_len);
		if (!root || !json_object_is_type(root, json_type_object)) {
			r = errbuf_set(err, errlen, "config: not a JSON object");
			goto out;
		}
		if ((r = version_field(root, "bootloaderVersion", &bl, &a->have_min, err, errlen)) <
			0 ||
		    (r = version_field(root, "teeVersion", &tee, &a->have_min, err, errlen)) < 0 ||
		    (r = version_field(root, "snpVersion", &snp, &a->have_min, err, errlen)) < 0 ||
		    (r = version_field(root, "microcodeVersion", &uc, &a->have_min, err, errlen)) <
			0 ||
		    (r = cert_field(root, "amdRootKey", &a->ark, &a->ark_len, err, errlen)) < 0 ||
		    (r = cert_field(root, "amdSigningKey", &a->ask, &a->ask_len, err, errlen)) < 0)
			goto out;
		if ((fsc = json_member_go(root, "firmwareSignerConfig")) &&
		    (r = signer_config(fsc, a, err, errlen)) < 0)
			goto out;
	}
	a->min = (struct snp_tcb){.bootloader = bl, .tee = tee, .snp = snp, .microcode = uc};
	if (!a->digests) {
		if (!(a->digests = malloc(48))) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(a->digests[0], default_digest, 48);
		a->n_digests = 1;
	}
out:
	if (root)
		json_object_put(root);
	if (r < 0)
		policy_free(p);
	return r;
}

/* ---- the check ---- */

static int trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
		       size_t errlen)
{
	const struct az_policy *a = p->priv;
	struct azure_snp_info in;
	struct snp_verify_opts o;
	struct snp_report rep;
	enum snp_product prod;
	uint8_t *signer = NULL, *chain[2] = {0}, *root = NULL;
	size_t signer_len = 0, chain_len[2], root_len = 0, off = 0, nc = 0;
	TPMT_PUBLIC ak;
	int r, listed = 0;

	if (!a)
		return errbuf_set(err, errlen, "no policy (policy_init not run)");
	if ((r = azure_snp_info_parse(v->instance_info, v->instance_info_len, &in, err, errlen)) <
	    0)
		return r;
	if (!in.signer_len) {
		r = errbuf_set(err, errlen,
			       "InstanceInfo has no VCEK (ReportSigner); fetching it "
			       "from AMD KDS is not supported");
		goto out;
	}
	if (pem_cert((const char *)in.signer, in.signer_len, &signer, &signer_len) < 0) {
		r = errbuf_set(err, errlen, "InstanceInfo's ReportSigner is not a PEM certificate");
		goto out;
	}
	/* the document's chain: its first two certificates, tried as intermediates only (the
	 * root is never the document's) */
	for (const char *s = (const char *)in.chain, *end = s ? s + in.chain_len : NULL;
	     s && nc < 2;) {
		const char *e = memmem(s, (size_t)(end - s), "-----END CERTIFICATE-----", 25);

		if (!e)
			break;
		e += 25;
		if (pem_cert(s, (size_t)(e - s), &chain[nc], &chain_len[nc]) == 0)
			nc++;
		s = e;
	}
	snp_verify_opts_init(&o);
	if (p->at)
		o.at = p->at;
	for (size_t i = 0; i < nc; i++) {
		o.chain[o.n_chain] = chain[i];
		o.chain_len[o.n_chain++] = chain_len[i];
	}
	if (a->ask) {
		o.chain[o.n_chain] = a->ask;
		o.chain_len[o.n_chain++] = a->ask_len;
	}
	if (p->test_root) {
		/* the PEM text of --amd-root (the tools read the file) */
		if (pem_cert(p->test_root, strlen(p->test_root), &root, &root_len) < 0) {
			r = errbuf_set(err, errlen, "--amd-root: no PEM certificate");
			goto out;
		}
		o.ark = root;
		o.ark_len = root_len;
	} else if (a->ark) {
		o.ark = a->ark;
		o.ark_len = a->ark_len;
	}
	o.have_min_tcb = o.have_min_launch_tcb = a->have_min;
	o.min_tcb = o.min_launch_tcb = a->min;
	if (a->enf == ENF_EQUAL) {
		o.id_key_digests = (const uint8_t(*)[48])a->digests;
		o.n_id_key_digests = a->n_digests;
	}
	if ((r = snp_verify(in.report, in.report_len, signer, signer_len, &o, &rep, &prod, err,
			    errlen)) < 0)
		goto out;
	for (size_t i = 0; i < a->n_digests; i++)
		listed |= !memcmp(rep.id_key_digest, a->digests[i], 48);
	if (!in.have_azure) {
		r = errbuf_set(err, errlen, "InstanceInfo has no Azure part (runtime data)");
		goto out;
	}
	/* Go's checkIDKeyDigest: an unlisted digest falls back to the MAA token whose nonce
	 * claim is this handshake's extra data; a fresh token, so judged at the clock's time
	 * (as Go), not at --at */
	if (!listed && a->enf == ENF_MAA_FALLBACK &&
	    (r = maa_validate(p->maa_url ? p->maa_url : a->maa_url,
			      in.maa_token ? in.maa_token : "", time(NULL), v->extra,
			      sizeof v->extra, err, errlen)) < 0)
		goto out;
	if (!listed && a->enf == ENF_WARN_ONLY)
		log_warn("azure-sev-snp: the report's ID key digest is not an accepted one "
			 "(enforcement policy WarnOnly: accepted)");
	if ((r = hcl_check_runtime_hash(in.runtime, in.runtime_len, rep.report_data, err, errlen)) <
	    0)
		goto out;
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(v->ak_pub, v->ak_len, &off, &ak) != TSS2_RC_SUCCESS ||
	    off != v->ak_len || ak.type != TPM2_ALG_RSA) {
		r = errbuf_set(err, errlen, "ak_pub is not an RSA TPMT_PUBLIC");
		goto out;
	}
	r = hcl_check_ak(in.runtime, in.runtime_len, ak.unique.rsa.buffer, ak.unique.rsa.size,
			 ak.parameters.rsaDetail.exponent, err, errlen);
out:
	free(signer);
	free(chain[0]);
	free(chain[1]);
	free(root);
	azure_snp_info_free(&in);
	return r;
}

const struct vtpm_check vtpm_check_azure_sev_snp = {
    .name = "azure-sev-snp",
    .enforced = "4,8,9,11,12,13,15",
    .trusted_key = trusted_key,
    .policy_init = policy_init,
    .policy_free = policy_free,
};
