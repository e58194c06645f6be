/* libFuzzer target: what azure-sev-snp's issuer reads from Azure IMDS (attest/azure_snp.c):
 * the first byte picks THIM's answer ({vcekCert, certificateChain, ...}, then InstanceInfo
 * built from it and a fixed synthetic SNP HCL report) or the instance metadata whose
 * compute.tagsList may name constellation-maa-url. Seeds: a THIM answer with small fake PEM
 * texts, an instance metadata with the tag. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/azure_snp.h"
#include "attest/hcl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t hcl[HCL_RUNTIME_OFFSET + 64], out[65536];
	static const char rt[] = "{\"keys\":[]}";
	struct azure_thim t;
	char err[256], url[128];
	size_t len;

	if (!size)
		return 0;
	if (data[0] & 1) {
		if (azure_imds_maa_url((const char *)data + 1, size - 1, url, sizeof url, err,
				       sizeof err) == 0 &&
		    strlen(url) >= sizeof url)
			abort();
		return 0;
	}
	if (azure_thim_parse((const char *)data + 1, size - 1, &t, err, sizeof err) < 0)
		return 0;
	if (!t.vcek_len || !t.chain_len)
		abort();
	memcpy(hcl, "HCLA\x02\0\0\0", 8);
	hcl[8] = (uint8_t)(HCL_RUNTIME_OFFSET + sizeof rt - 1);
	hcl[9] = (uint8_t)((HCL_RUNTIME_OFFSET + sizeof rt - 1) >> 8);
	hcl[HCL_IGVM_OFFSET] = 20 + sizeof rt - 1;
	hcl[HCL_IGVM_OFFSET + 4] = 1;
	hcl[HCL_IGVM_OFFSET + 8] = 2;
	hcl[HCL_IGVM_OFFSET + 12] = 1;
	hcl[HCL_IGVM_OFFSET + 16] = sizeof rt - 1;
	memcpy(hcl + HCL_RUNTIME_OFFSET, rt, sizeof rt - 1);
	if (azure_snp_info_build(hcl, sizeof hcl, &t, out, sizeof out, &len, err, sizeof err) ==
		0 &&
	    len > sizeof out)
		abort();
	azure_thim_free(&t);
	return 0;
}
