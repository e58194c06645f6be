/* libFuzzer target: Azure's HCL report (attest/hcl.c) as read from vTPM NV 0x01400001: the
 * parser, the REPORT_DATA binding and the AK in the runtime data's keys[0]. The binding is
 * made to hold inside the target (REPORT_DATA set to the runtime data's SHA-256) and the AK
 * compared is the one the runtime data names, so that both checks run to their end. Seed: a
 * synthetic SNP HCL report with a small runtime data. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "attest/hcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t b[HCL_RUNTIME_OFFSET + 8192];
	static const uint8_t n[256] = {0xc5, 1, 2, 3};
	struct hcl_report h;
	br_sha256_context sc;
	char err[256];

	if (size > sizeof b)
		return 0;
	memcpy(b, data, size);
	if (hcl_report_parse(b, size, &h, err, sizeof err) < 0)
		return 0;
	if (h.runtime < b + HCL_RUNTIME_OFFSET || h.runtime + h.runtime_len > b + size ||
	    h.hw + h.hw_len > b + HCL_RUNTIME_OFFSET)
		abort();
	(void)hcl_check_binding(&h, err, sizeof err);
	br_sha256_init(&sc);
	br_sha256_update(&sc, h.runtime, h.runtime_len);
	br_sha256_out(&sc, (uint8_t *)h.report_data);
	if (h.hash_type == 1 && hcl_check_binding(&h, err, sizeof err) < 0)
		abort();
	(void)hcl_check_ak(h.runtime, h.runtime_len, n, sizeof n, 0, err, sizeof err);
	return 0;
}
