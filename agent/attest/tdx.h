/* Intel TDX quotes, version 4 (tdx_quote.c), and their verification (tdx_verify.c).
 * Validators only: linked by tools/ and the tests, never by the agent.
 * Layout: Intel "TDX DCAP Quoting Library API", Appendix A.3 (Quote Format, version 4):
 * a 48-byte header, the 584-byte TD quote body, a u32 length, then the quote signature data
 * (ECDSA-256 signature, attestation key, certification data of type 6 = QE report
 * certification data, which holds the QE's SGX report, its signature, the QE authentication
 * data and certification data of type 5 = the PCK chain as PEM). All integers little-endian. */
#ifndef CONSTEL_ATTEST_TDX_H
#define CONSTEL_ATTEST_TDX_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TDX_HEADER_LEN	   48
#define TDX_BODY_LEN	   584
#define TDX_SIGNED_LEN	   (TDX_HEADER_LEN + TDX_BODY_LEN) /* the quote signature covers these */
#define TDX_QE_REPORT_LEN  384				   /* an SGX REPORTBODY */
#define TDX_QUOTE_VERSION  4
#define TDX_AK_ECDSA_P256  2
#define TDX_TEE_TYPE_TDX   0x81
#define TDX_CERT_PCK_CHAIN 5
#define TDX_CERT_QE_REPORT 6
#define TDX_QUOTE_MAX	   (64 * 1024) /* a real one is about 5 KB */

struct tdx_header {
	uint16_t version, ak_type;
	uint32_t tee_type;
	uint16_t qe_svn, pce_svn; /* "reserved" in the API document; go-tdx-guest names them */
	uint8_t qe_vendor_id[16];
	uint8_t user_data[20];
};

struct tdx_body {
	uint8_t tee_tcb_svn[16];     /* 0 */
	uint8_t mr_seam[48];	     /* 16 */
	uint8_t mr_signer_seam[48];  /* 64 */
	uint8_t seam_attributes[8];  /* 112 */
	uint8_t td_attributes[8];    /* 120 */
	uint8_t xfam[8];	     /* 128 */
	uint8_t mr_td[48];	     /* 136 */
	uint8_t mr_config_id[48];    /* 184 */
	uint8_t mr_owner[48];	     /* 232 */
	uint8_t mr_owner_config[48]; /* 280 */
	uint8_t rtmr[4][48];	     /* 328 */
	uint8_t report_data[64];     /* 520 */
};

/* The QE's SGX report body (SGX "REPORTBODY"), the fields the checks use. */
struct tdx_qe_report {
	uint8_t cpu_svn[16];	 /* 0 */
	uint32_t misc_select;	 /* 16 */
	uint8_t attributes[16];	 /* 48 */
	uint8_t mr_enclave[32];	 /* 64 */
	uint8_t mr_signer[32];	 /* 128 */
	uint16_t isv_prod_id;	 /* 256 */
	uint16_t isv_svn;	 /* 258 */
	uint8_t report_data[64]; /* 320 */
};

/* A parsed quote; the pointers point into the buffer given to tdx_quote_parse. */
struct tdx_quote {
	struct tdx_header header;
	struct tdx_body body;
	const uint8_t *signed_part;   /* header || body, TDX_SIGNED_LEN bytes */
	const uint8_t *sig;	      /* r || s, big-endian, 32 bytes each */
	const uint8_t *ak;	      /* the attestation key: x || y, 32 bytes each */
	const uint8_t *qe_report_raw; /* TDX_QE_REPORT_LEN bytes */
	struct tdx_qe_report qe_report;
	const uint8_t *qe_report_sig; /* r || s by the PCK key */
	const uint8_t *qe_auth;
	size_t qe_auth_len;
	const uint8_t *pck_pem; /* the PCK chain: PCK, Platform/Processor CA, Root CA, PEM */
	size_t pck_pem_len;
	size_t len;		/* where the quote ends; bytes after it are not signed */
	char qe_tcb_status[32]; /* set by tdx_verify when a QE identity was given */
	char tcb_status[32];	/* set by tdx_verify when a TCB info was given */
};

/* Parses a TDX quote v4 (header version 4, attestation key type 2 = ECDSA P-256, TEE type
 * 0x81, certification data type 6 holding type 5). Every length is checked against what
 * holds it; bytes after the signature data are ignored, as Intel's and Google's libraries
 * do. 0, or -EINVAL with one line in err naming the field. */
int tdx_quote_parse(const uint8_t *b, size_t len, struct tdx_quote *q, char *err, size_t errlen);

/* ---- verification (tdx_verify.c) ---- */
#define TDX_PCK_CHAIN_MAX 3 /* PCK, its CA, the root */

struct tdx_verify_opts {
	time_t at;	     /* every certificate valid at this time */
	const uint8_t *root; /* DER: trust only this root (tests); NULL: Intel's SGX Root CA */
	size_t root_len;
	/* CRLs, DER as PCS serves them; NULL: not checked. The PCK CRL of the PCK's CA (PCS
	 * "pckcrl", signed by the Platform or Processor CA of the quote's chain) and the root
	 * CA's CRL (signed by the root). Each must be current at o->at. */
	const uint8_t *pck_crl, *root_crl;
	size_t pck_crl_len, root_crl_len;
	/* PCS's SGX-PCK-CRL-Issuer-Chain (PEM: the PCK's CA, the root); NULL: not checked. Its
	 * CA must be byte for byte the quote's, its root the trusted one. */
	const char *pck_crl_chain;
	size_t pck_crl_chain_len;
	/* QE identity: the body of PCS's qe/identity answer (JSON) and its
	 * SGX-Enclave-Identity-Issuer-Chain (PEM: Intel SGX TCB Signing, the root); NULL: not
	 * checked. */
	const char *qe_identity, *qe_identity_chain;
	size_t qe_identity_len, qe_identity_chain_len;
	int allow_qe_out_of_date; /* accept a QE TCB level other than UpToDate (not Revoked) */
	/* TCB info: the body of PCS's tdx/certification/v4/tcb answer (JSON) and its
	 * TCB-Info-Issuer-Chain (PEM); NULL: not checked. */
	const char *tcb_info, *tcb_info_chain;
	size_t tcb_info_len, tcb_info_chain_len;
};
void tdx_verify_opts_init(struct tdx_verify_opts *o);

/* Verifies a quote's signatures: the PCK chain from its certification data to the SGX Root
 * CA (ECDSA P-256 SHA-256, validity at o->at), the QE report's signature by the PCK, the QE
 * report data binding the attestation key and QE authentication data, and the quote's
 * signature over header and body by the attestation key; with the CRLs given, that neither
 * the PCK nor its CA is revoked. Not yet: TCB info, QE identity, policy (docs/tdx.md). 0, or
 * -EINVAL with one line in err. */
int tdx_verify(const uint8_t *b, size_t len, const struct tdx_verify_opts *o, struct tdx_quote *q,
	       char *err, size_t errlen);

/* The policy of Constellation's attestationConfig for azure-tdx (go-tdx-guest's validate
 * options): minimum QE SVN and PCE SVN (quote header), minimum TEE TCB SVN (each of its 16
 * bytes), and, when set, the exact QE vendor ID, MRSEAM and XFAM. */
struct tdx_policy {
	uint16_t min_qe_svn, min_pce_svn;
	uint8_t min_tee_tcb_svn[16];
	uint8_t qe_vendor_id[16], mr_seam[48], xfam[8];
	int has_qe_vendor_id, has_mr_seam, has_xfam;
};

/* Parses the policy from JSON as Constellation's config holds it: {"qeSVN": N, "pceSVN": N,
 * "teeTCBSVN": "<32 hex>", "qeVendorID": "<32 hex>", "mrSeam": "<96 hex>", "xfam": "<16
 * hex>"}; other keys are ignored; a field left out is not checked (SVNs: 0); "latest" is
 * refused (the CLI resolves it before the config reaches a validator). 0, or -EINVAL with
 * one line naming the field. */
int tdx_policy_parse(const char *json, size_t len, struct tdx_policy *p, char *err, size_t errlen);

/* The policy against a quote tdx_verify accepted. 0, or -EACCES with one line naming the
 * field, the quote's value and the policy's. */
int tdx_policy_check(const struct tdx_quote *q, const struct tdx_policy *p, char *err,
		     size_t errlen);

/* ---- collateral from a folder (tdx_collateral.c), validators only ----
 * The answers of Intel's PCS saved as files, the bodies as PCS sends them and each
 * issuer chain as the PEM of its header: tcbinfo.json (tdx/certification/v4/tcb),
 * tcbinfo-issuer-chain.pem, qeidentity.json (tdx/certification/v4/qe/identity),
 * qeidentity-issuer-chain.pem, pckcrl.der (sgx/certification/v4/pckcrl, DER),
 * pckcrl-issuer-chain.pem and rootcrl.der (the SGX Root CA's CRL). All seven required. */
enum {
	TDX_COLL_TCBINFO,
	TDX_COLL_TCBINFO_CHAIN,
	TDX_COLL_QEID,
	TDX_COLL_QEID_CHAIN,
	TDX_COLL_PCKCRL,
	TDX_COLL_PCKCRL_CHAIN,
	TDX_COLL_ROOTCRL,
	TDX_COLL_N
};
struct tdx_collateral {
	char *f[TDX_COLL_N]; /* NUL-terminated */
	size_t len[TDX_COLL_N];
};
extern const char *const tdx_collateral_names[TDX_COLL_N];

/* Reads the seven files of dir, each bounded in size (TCB info 256 KiB, QE identity 64 KiB,
 * chains 16 KiB, CRLs 1 MiB). 0, or a negative errno with one line in err naming the file. */
int tdx_collateral_load(const char *dir, struct tdx_collateral *c, char *err, size_t errlen);
void tdx_collateral_free(struct tdx_collateral *c);
/* Points o's CRLs, chains, QE identity and TCB info at c. */
void tdx_collateral_opts(const struct tdx_collateral *c, struct tdx_verify_opts *o);

/* Intel's SGX Root CA certificate, DER (tdx_roots.c). */
extern const uint8_t tdx_intel_sgx_root[];
extern const size_t tdx_intel_sgx_root_len;

#endif
