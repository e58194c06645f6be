/* Azure's HCL report: what the paravisor (HCL) of an Azure confidential VM leaves in vTPM NV
 * index 0x01400001. Layout (little-endian): a 32-byte header ("HCLA", version, report size,
 * request type), the hardware report at 0x20 in a 1184-byte area (SEV-SNP report, or a TDX
 * TDREPORT of 1024 bytes), the IGVM request data at 0x4c0 (data size, version, report type
 * 2 SNP / 4 TDX, hash type 1 SHA-256, variable data size) and the runtime data (JSON) after
 * it at 0x4d4. The hardware report's REPORT_DATA[0:32] is the SHA-256 of the runtime data,
 * whose keys[0] is the vTPM's attestation key (HCLAkPub). Used by the azure-sev-snp and
 * azure-tdx validators (and issuers, which send the SNP report and runtime data). */
#ifndef CONSTEL_ATTEST_HCL_H
#define CONSTEL_ATTEST_HCL_H

#include <stddef.h>
#include <stdint.h>

#define HCL_NV_INDEX	   0x01400001u
#define HCL_HW_OFFSET	   0x20
#define HCL_HW_AREA	   1184
#define HCL_IGVM_OFFSET	   0x4c0
#define HCL_RUNTIME_OFFSET 0x4d4
#define HCL_RUNTIME_MAX	   (64u << 10)

enum { HCL_TYPE_SNP = 2, HCL_TYPE_TDX = 4 };

struct hcl_report {
	uint32_t version, report_size, request_type;
	uint32_t report_type, hash_type; /* from the IGVM request data */
	const uint8_t *hw;		 /* the SNP report (1184 B) or TDREPORT (1024 B) */
	size_t hw_len;
	const uint8_t *report_data; /* the hardware report's REPORT_DATA (64 B) */
	const uint8_t *runtime;	    /* runtime data, up to its first NUL (as Go cuts it) */
	size_t runtime_len;
};

/* Parses b (the NV index's bytes; padding after the report is ignored). -EINVAL with one
 * line in err for a wrong magic, a size outside b, an unknown report type. */
int hcl_report_parse(const uint8_t *b, size_t len, struct hcl_report *h, char *err, size_t errlen);
/* REPORT_DATA[0:32] == SHA-256(runtime data) (hash type 1; others refused). */
int hcl_check_binding(const struct hcl_report *h, char *err, size_t errlen);
/* The same binding for runtime data and a REPORT_DATA given apart (azure-sev-snp's
 * InstanceInfo carries them so). */
int hcl_check_runtime_hash(const uint8_t *runtime, size_t len, const uint8_t report_data[64],
			   char *err, size_t errlen);
/* The runtime data's keys[0] (JSON: kid "HCLAkPub", kty "RSA", n and e base64url) is the RSA
 * key n (big-endian) with exponent e (0 means 65537, as in a TPMT_PUBLIC). */
int hcl_check_ak(const uint8_t *runtime, size_t len, const uint8_t *n, size_t nlen, uint32_t e,
		 char *err, size_t errlen);

#endif
