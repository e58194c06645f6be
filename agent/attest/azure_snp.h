/* azure-sev-snp (Constellation's internal/attestation/azure/snp): the vTPM document with the
 * HCL AK (persistent 0x81000003) and, as InstanceInfo, Go's encoding/json of
 *   snp.InstanceInfo{ReportSigner: VCEK PEM, CertChain: ASK+ARK PEM, AttestationReport: the
 *   1184-byte SNP report of the HCL report, Azure: {RuntimeData, MAAToken}, GCP: nil}
 * i.e. {"ReportSigner":b64,"CertChain":b64,"AttestationReport":b64,
 *       "Azure":{"RuntimeData":b64,"MAAToken":""},"GCP":null}.
 * The issuer (azure_snp.c, in the agent) reads the HCL report from NV 0x01400001 and the VCEK
 * and chain from Azure IMDS THIM; the validator (azure_snp_check.c, tools only) checks the
 * report's chain and signature, the policy of the attestationConfig and the HCL binding of
 * the document's AK; under MAAFallback an unlisted ID key digest is accepted with an MAA token
 * for the handshake's nonce (maa.h). The issuer gets that token from the VM's MAA
 * (azure_maa.c) when its constellation-maa-url tag is set. */
#ifndef CONSTEL_ATTEST_AZURE_SNP_H
#define CONSTEL_ATTEST_AZURE_SNP_H

#include <stddef.h>
#include <stdint.h>

#include "attest/vtpm.h"

#define AZURE_THIM_PATH	    "/metadata/THIM/amd/certification"
#define AZURE_IMDS_INSTANCE "/metadata/instance?api-version=2021-02-01&format=json"
#define AZURE_THIM_MAX	    (64u << 10)	 /* THIM's answer: ~8 KiB (VCEK + ASK + ARK PEM) */
#define AZURE_IMDS_MAX	    (256u << 10) /* IMDS instance metadata */
#define AZURE_MAA_TAG	    "constellation-maa-url"
#define AZURE_SNP_INFO_MAX  (64u << 10) /* an InstanceInfo the validator accepts */

/* THIM's answer {"vcekCert", "certificateChain", "tcbm", "cacheControl"}: the two PEM texts
 * (field names matched as Go's encoding/json does, case-insensitively; both non-empty), in
 * malloc'd copies. */
struct azure_thim {
	char *vcek, *chain;
	size_t vcek_len, chain_len;
};
int azure_thim_parse(const char *body, size_t len, struct azure_thim *t, char *err, size_t errlen);
void azure_thim_free(struct azure_thim *t);

/* The value of the tag constellation-maa-url in IMDS instance metadata (compute.tagsList);
 * "" when absent. */
int azure_imds_maa_url(const char *body, size_t len, char *url, size_t cap, char *err,
		       size_t errlen);

/* InstanceInfo as Go marshals it, from the HCL report (NV 0x01400001's bytes; report type 2
 * required) and THIM's answer; the runtime data is as go-azguestattestation cuts it: from
 * 0x4d4 to the first NUL. */
int azure_snp_info_build(const uint8_t *hcl, size_t hcl_len, const struct azure_thim *t,
			 uint8_t *out, size_t cap, size_t *len, char *err, size_t errlen);

/* What the issuer does after reading the HCL report: THIM's answer and the MAA tag from the
 * IMDS at imds ("http://169.254.169.254"; "Metadata: true", status 200 demanded, bodies
 * bounded), then azure_snp_info_build. A set constellation-maa-url tag is refused here (no
 * TPM to make the token with: azure_snp_info_fetch_maa). */
int azure_snp_info_fetch(const char *imds, const uint8_t *hcl, size_t hcl_len, uint8_t *out,
			 size_t cap, size_t *len, char *err, size_t errlen);
/* The same with what an MAA token needs (m's tpm, extra, ak_pub, event_log; the rest is
 * filled here): a set constellation-maa-url tag gets the token from that MAA
 * (azure_maa_token) into Azure.MAAToken. */
struct azure_maa_in;
int azure_snp_info_fetch_maa(const char *imds, const uint8_t *hcl, size_t hcl_len,
			     const struct azure_maa_in *m, uint8_t *out, size_t cap, size_t *len,
			     char *err, size_t errlen);

/* The MAA token of go-azguestattestation's NewParameters + GetEncryptedToken + DecryptToken
 * (azure_maa.c): the AzureGuest evidence (quote of PCRs 0-7 by the selected HCL AK over
 * extra, the AK certificate of NV 0x01C101D0, the PCR-bound key certified by the AK, the SNP
 * report, VCEK and chain, runtime data, the event log cut to PCRs 0-7) POSTed to
 * <maa_url>/attest/AzureGuest (https: the system's CA bundle), the answer decrypted inside the
 * TPM. 0 with a malloc'd token (only base64url characters and dots), or a negative errno with
 * one line in err. */
struct tpm;
struct azure_maa_in {
	struct tpm *tpm;
	const char *maa_url;
	const uint8_t *extra;  /* 32 bytes: the nonce claim */
	const uint8_t *ak_pub; /* the HCL AK's marshalled TPMT_PUBLIC */
	size_t ak_len;
	const uint8_t *hcl; /* NV 0x01400001's bytes */
	size_t hcl_len;
	const struct azure_thim *thim;
	const char *event_log; /* path; NULL or missing: none (the Spec ID event alone) */
};
int azure_maa_token(const struct azure_maa_in *in, char **token, char *err, size_t errlen);

/* The validator's reading of InstanceInfo (as Go's json.Unmarshal into snp.InstanceInfo:
 * keys case-insensitive, unknown keys ignored, null as absent), malloc'd. */
struct azure_snp_info {
	uint8_t *signer, *chain, *report, *runtime;
	size_t signer_len, chain_len, report_len, runtime_len;
	char *maa_token;
	int have_azure;
};
int azure_snp_info_parse(const uint8_t *json, size_t len, struct azure_snp_info *in, char *err,
			 size_t errlen);
void azure_snp_info_free(struct azure_snp_info *in);

extern const struct vtpm_variant vtpm_azure_sev_snp;
extern const struct vtpm_check vtpm_check_azure_sev_snp;

#endif
