/* The TPM layer, on tpm2-tss's SYS API with password authorisation (no sessions, so no
 * crypto inside the TSS). A TCTI string names the transport the way tpm2-tools and tpm2-tss
 * do: "device:/dev/tpmrm0" in the VM, "swtpm:host=H,port=P" on the host. It offers what the
 * attestation of spec §2 needs: the allocated PCR banks, PCR_Read, PCR_Event (the PCR 15
 * marking of §5.3), the attestation key of §2.4 and Quote. Every command's duration is
 * logged at debug level. */
#ifndef CONSTEL_TPM_H
#define CONSTEL_TPM_H

#include <stddef.h>
#include <stdint.h>

#define TCTI_DEFAULT  "device:/dev/tpmrm0"
#define TCTI_PATH_MAX 256
#define TCTI_HOST_MAX 64

enum tcti_kind {
	TCTI_DEVICE,
	TCTI_SWTPM,
};

struct tcti_spec {
	enum tcti_kind kind;
	char path[TCTI_PATH_MAX]; /* device: absolute path of the character device */
	char host[TCTI_HOST_MAX]; /* swtpm: host of the command port */
	uint16_t port;		  /* swtpm: command port; the control port is port+1 */
};

/* Parses a TCTI string. "device" alone (or "device:") means /dev/tpmrm0; "swtpm" alone
 * means host=127.0.0.1,port=2321, as tpm2-tss defaults. On -EINVAL, err (if not NULL)
 * holds one line saying what is wrong; *ret is written only on success. */
int tcti_spec_parse(const char *s, struct tcti_spec *ret, char *err, size_t errlen);

/* ---- the TPM (tpm.c) ---- */
#define TPM_PCRS	  24
#define TPM_DIGEST_MAX	  64
#define TPM_BANKS_MAX	  4
#define TPM_AK_HANDLE	  0x81008F01u /* go-tpm-tools' DefaultAKRSAHandle */
#define TPM_ALG_SHA1	  0x0004
#define TPM_ALG_SHA256	  0x000B
#define TPM_ALG_SHA384	  0x000C
#define TPM_ALG_SHA512	  0x000D
#define TPM_PUBLIC_MAX	  1024 /* a marshalled TPMT_PUBLIC */
#define TPM_ATTEST_MAX	  1024 /* a TPMS_ATTEST */
#define TPM_SIGNATURE_MAX 1024 /* a marshalled TPMT_SIGNATURE */

struct tpm;

struct tpm_bank {
	uint16_t alg;  /* TPM_ALG_SHA256, ... */
	uint32_t pcrs; /* bit i: PCR i is allocated */
	size_t digest_len;
};

struct tpm_quote {
	uint16_t alg;
	uint32_t pcrs;
	uint8_t values[TPM_PCRS][TPM_DIGEST_MAX]; /* read after the quote, checked against it */
	size_t digest_len;
	uint8_t attest[TPM_ATTEST_MAX]; /* TPMS_ATTEST, as the TPM returned it */
	size_t attest_len;
	uint8_t sig[TPM_SIGNATURE_MAX]; /* TPMT_SIGNATURE, marshalled */
	size_t sig_len;
};

/* Opens the TPM behind spec. -errno and one line in err on failure. */
int tpm_open(const struct tcti_spec *spec, struct tpm **ret, char *err, size_t errlen);
void tpm_close(struct tpm *t);
/* The allocated, non-empty PCR banks (GetCapability TPM_CAP_PCRS). */
int tpm_banks(struct tpm *t, struct tpm_bank *banks, size_t cap, size_t *n);
/* Reads every PCR of mask in bank alg (at most 8 per command). */
int tpm_pcr_read(struct tpm *t, uint16_t alg, uint32_t mask,
		 uint8_t values[TPM_PCRS][TPM_DIGEST_MAX], size_t *digest_len);
/* TPM2_PCR_Event: extends pcr in every bank with the digest of data (at most 1024 bytes). */
int tpm_pcr_event(struct tpm *t, uint32_t pcr, const void *data, size_t len);
/* The RSA attestation key of spec §2.4 at TPM_AK_HANDLE: reused when its public area
 * matches the template, else created (and a mismatching key evicted). *pub gets the
 * marshalled TPMT_PUBLIC. */
int tpm_ak(struct tpm *t, uint8_t *pub, size_t cap, size_t *pub_len);
/* Where the attestation key comes from (the TPM-based attestation variants). */
enum tpm_ak_source {
	TPM_AK_SRC_OWNER = 1, /* tpm_ak: go-tpm-tools AttestationKeyRSA at TPM_AK_HANDLE */
	TPM_AK_SRC_HCL,	      /* Azure's HCL AK at TPM_HCL_AK_HANDLE: read, never made */
	TPM_AK_SRC_GCE,	      /* a primary key in the endorsement hierarchy from the TPMT_PUBLIC
				 template in NV TPM_GCE_AK_TEMPLATE_NV (GceAttestationKeyRSA) */
};
#define TPM_HCL_AK_HANDLE      0x81000003u
#define TPM_GCE_AK_TEMPLATE_NV 0x01c10001u
#define TPM_NV_MAX	       4096 /* the largest NV index read (the HCL report: ~2.6 KB) */

/* Reads NV index index whole (NV_ReadPublic for its size, then NV_Read in chunks of the
 * TPM's TPM_PT_NV_BUFFER_MAX), authorised by the owner (TPMA_NV_OWNERREAD) or else by the
 * index itself, with the empty password, as go-tpm's NVReadEx. -ENOENT when the index is
 * not defined, -ENOBUFS when it holds more than cap bytes; one line in err. */
int tpm_nv_read(struct tpm *t, uint32_t index, uint8_t *buf, size_t cap, size_t *len, char *err,
		size_t errlen);
/* Selects the attestation key of src for the quotes that follow and returns its marshalled
 * TPMT_PUBLIC. A transient key (TPM_AK_SRC_GCE) is flushed by the next selection or by
 * tpm_close. */
int tpm_ak_select(struct tpm *t, enum tpm_ak_source src, uint8_t *pub, size_t cap, size_t *pub_len,
		  char *err, size_t errlen);
/* Quotes bank alg over mask with qualifying data under the selected AK (tpm_ak_select;
 * TPM_AK_HANDLE when none was selected), then reads the PCRs and checks them
 * against the quote's digest (a PCR that changed in between fails with -EAGAIN). */
int tpm_quote(struct tpm *t, uint16_t alg, uint32_t mask, const uint8_t *qdata, size_t qlen,
	      struct tpm_quote *q);
/* MAA's PCR-bound decryption key (go-azguestattestation maa/tpm.go): RSA 2048 in the null
 * hierarchy, authPolicy PolicyPCR(SHA-256 bank, mask, digest = SHA-256 of those PCR values),
 * never leaving the TPM. tpm_pcr_key_certify: its marshalled TPMT_PUBLIC, the TPMS_ATTEST of
 * TPM2_Certify by the selected AK (RSASSA SHA-256) and the signature's bytes.
 * tpm_pcr_key_decrypt: RSAES-PKCS1-v1_5 decryption under a PolicyPCR session (the PCRs must
 * still hold the digest). 0, or a negative errno with one line in err. */
int tpm_pcr_key_certify(struct tpm *t, uint32_t mask, const uint8_t digest[32], uint8_t *pub,
			size_t cap, size_t *pub_len, uint8_t *info, size_t icap, size_t *info_len,
			uint8_t *sig, size_t scap, size_t *sig_len, char *err, size_t errlen);
int tpm_pcr_key_decrypt(struct tpm *t, uint32_t mask, const uint8_t digest[32], const uint8_t *ct,
			size_t ct_len, uint8_t *pt, size_t cap, size_t *pt_len, char *err,
			size_t errlen);
/* Digest length of a TPM hash algorithm, or 0. */
size_t tpm_alg_digest_len(uint16_t alg);

#endif
