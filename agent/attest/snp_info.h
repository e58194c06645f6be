/* Constellation's snp.InstanceInfo (internal/attestation/snp/snp.go) as Go's encoding/json
 * writes it, for aws-sev-snp and gcp-sev-snp: the builder for the agent's issuers, the
 * strict reader for the validators, and the AK digest aws-sev-snp binds into REPORT_DATA.
 *   {"ReportSigner":<b64 PEM>,"CertChain":<b64 PEM>|null,"AttestationReport":<b64>,
 *    "Azure":null,"GCP":{"zone":..,"project_id":..,"instance_name":..}|null}
 * ([]byte is standard padded base64, nil []byte and nil pointers null; the GCP part is
 * go-tpm-tools' attest.GCEInstanceInfo, whose empty strings are omitted). */
#ifndef CONSTEL_ATTEST_SNP_INFO_H
#define CONSTEL_ATTEST_SNP_INFO_H

#include <stddef.h>
#include <stdint.h>

#define SNP_INFO_REPORT_LEN 1184
#define SNP_INFO_CERT_MAX   4096  /* one DER certificate (VCEK/VLEK/ASK are about 1.4 KiB) */
#define SNP_INFO_GCE_MAX    128	  /* each GCE name, as GCE bounds them (63, zone 32) */
#define SNP_INFO_MAX	    16384 /* the whole InstanceInfo JSON */

struct snp_gce_info {
	char zone[SNP_INFO_GCE_MAX];
	char project_id[SNP_INFO_GCE_MAX];
	char instance_name[SNP_INFO_GCE_MAX];
};

/* Writes the JSON; ask may be NULL (CertChain null), gcp NULL (GCP null). 0 with *len, or
 * -ENOBUFS, or -EINVAL for a GCE name with a character Go would escape (not expected of GCE:
 * refused rather than guessed). */
int snp_info_build(const uint8_t report[SNP_INFO_REPORT_LEN], const uint8_t *signer,
		   size_t signer_len, const uint8_t *ask, size_t ask_len,
		   const struct snp_gce_info *gcp, uint8_t *out, size_t cap, size_t *len);

/* What the reader gives. */
struct snp_info {
	uint8_t report[SNP_INFO_REPORT_LEN];
	uint8_t signer[SNP_INFO_CERT_MAX]; /* DER of ReportSigner's PEM */
	size_t signer_len;
	uint8_t ask[SNP_INFO_CERT_MAX]; /* DER of CertChain's first PEM (the ASK), or none */
	size_t ask_len;
	int have_gcp;
	struct snp_gce_info gcp;
};

/* Reads InstanceInfo strictly: exactly the five keys, in Go's order and Go's bytes (the text
 * is rebuilt and compared), one certificate in ReportSigner, none or one (the ASK, as GCP's
 * issuer writes it) in CertChain, Azure null. -EINVAL with one line in err. */
int snp_info_parse(const uint8_t *json, size_t len, struct snp_info *ii, char *err, size_t errlen);

/* SHA-512 of the PKIX DER (x509.MarshalPKIXPublicKey) of an RSA TPMT_PUBLIC (the AK):
 * aws-sev-snp's REPORT_DATA. -EINVAL with one line in err for another key. */
int snp_ak_digest(const uint8_t *tpmt_public, size_t len, uint8_t out[64], char *err,
		  size_t errlen);

/* gcp-sev-snp (gcp_snp.c): the GCE names from the metadata server at imds
 * ("http://169.254.169.254"), as the Go metadata client reads them. */
int gcp_snp_gce_info(const char *imds, struct snp_gce_info *g, char *err, size_t errlen);

#endif
