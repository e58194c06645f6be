/* libFuzzer target: the outside inputs of azure-tdx (attest/azure_tdx.c, azure_tdx_verify.c):
 * the first byte picks one of
 *   0: the HCL report of a TDX VM as the issuer reads it from NV 0x01400001 (type, runtime
 *      data size and offsets), then the runtime data binding and keys[0] (hcl.c);
 *   1: IMDS's /acc/tdquote answer ({"quote": unpadded base64url}), the quote then parsed;
 *   2: InstanceInfo as a validator gets it ({"AttestationReport", "RuntimeData"}), the
 *      quote then parsed and the binding checked.
 * Seeds: a synthetic HCL report of type 4, an answer and an InstanceInfo holding the test
 * quote of tests/attest/tdx-test/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/azure_tdx.h"
#include "attest/hcl.h"
#include "attest/tdx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t quote[TDX_QUOTE_MAX];
	static const uint8_t n[256] = {0xc5, 1, 2, 3};
	const uint8_t *td, *rt;
	uint8_t *q, *r;
	size_t rl, ql;
	struct tdx_quote tq;
	char err[256];

	if (size < 1 || size > 256 * 1024)
		return 0;
	switch (data[0] % 3) {
	case 0:
		if (azure_tdx_hcl_parse(data + 1, size - 1, &td, &rt, &rl, err, sizeof err) < 0)
			return 0;
		if (td != data + 1 + AZURE_TDX_TDREPORT_OFF || rt < data + 1 ||
		    rt + rl > data + size)
			abort();
		hcl_check_runtime_hash(rt, rl, td + 128, err, sizeof err);
		hcl_check_ak(rt, rl, n, sizeof n, 0, err, sizeof err);
		break;
	case 1:
		if (azure_tdx_tdquote_answer((const char *)data + 1, size - 1, quote, sizeof quote,
					     &ql, err, sizeof err) < 0)
			return 0;
		if (ql > sizeof quote)
			abort();
		tdx_quote_parse(quote, ql, &tq, err, sizeof err);
		break;
	default:
		if (azure_tdx_instance_info_parse(data + 1, size - 1, &q, &ql, &r, &rl, err,
						  sizeof err) < 0)
			return 0;
		if (tdx_quote_parse(q, ql, &tq, err, sizeof err) == 0)
			hcl_check_runtime_hash(r, rl, tq.body.report_data, err, sizeof err);
		free(q);
		free(r);
		break;
	}
	if (strlen(err) >= sizeof err)
		abort();
	return 0;
}
