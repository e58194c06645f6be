/* azure-tdx (azure_tdx.c: issuer, in the agent; azure_tdx_verify.c: validator, tools only).
 * The parts apart from the TPM and the network, for tests and fuzzing. */
#ifndef CONSTEL_ATTEST_AZURE_TDX_H
#define CONSTEL_ATTEST_AZURE_TDX_H

#include <stddef.h>
#include <stdint.h>

#include "attest/tdx.h"

/* The HCL report of a TDX VM (Constellation's azure/tdx/issuer.go offsets) */
#define AZURE_TDX_TDREPORT_OFF	  32
#define AZURE_TDX_TDREPORT_LEN	  1024
#define AZURE_TDX_HCL_TYPE_OFF	  (1216 + 8)
#define AZURE_TDX_HCL_RT_SIZE_OFF (1216 + 16)
#define AZURE_TDX_HCL_RT_OFF	  (1216 + 20)
#define AZURE_TDX_HCL_TYPE_TDX	  4

/* The TDREPORT and runtime data of an HCL report (type 4 required; every offset and the
 * runtime data size checked against len). Pointers into b. 0, or -EINVAL with one line. */
int azure_tdx_hcl_parse(const uint8_t *b, size_t len, const uint8_t **tdreport,
			const uint8_t **runtime, size_t *runtime_len, char *err, size_t errlen);
/* IMDS's /acc/tdquote answer {"quote": "<base64url, unpadded>"} decoded into quote. */
int azure_tdx_tdquote_answer(const char *body, size_t len, uint8_t *quote, size_t cap,
			     size_t *quote_len, char *err, size_t errlen);
/* InstanceInfo as Go marshals it; -ENOBUFS when it does not fit cap. */
int azure_tdx_instance_info(const uint8_t *quote, size_t qlen, const uint8_t *runtime, size_t rlen,
			    uint8_t *out, size_t cap, size_t *len);
/* The validator's parse of InstanceInfo: both fields required, standard base64; the
 * pointers are malloc'd (free both). */
int azure_tdx_instance_info_parse(const uint8_t *ii, size_t len, uint8_t **quote, size_t *qlen,
				  uint8_t **runtime, size_t *rlen, char *err, size_t errlen);

#endif
