/* libFuzzer target: azure-sev-snp's InstanceInfo as the validator reads it
 * (attest/azure_snp_check.c): Go-style JSON field matching, base64 of every []byte field, then
 * the whole trusted-key hook (the VCEK's PEM, the chain's PEM blocks, the SNP report's parse
 * and chain to AMD's built-in roots, the ID key digest policy, the HCL binding) under a fixed
 * configuration and AK. Seed: a synthetic InstanceInfo (small fake PEM texts, a zero report,
 * a runtime data with keys[0]). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/azure_snp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char config[] =
	    "{\"snpVersion\":1,\"firmwareSignerConfig\":{\"enforcementPolicy\":\"WarnOnly\"}}";
	/* a marshalled TPMT_PUBLIC prefix is enough for the hook to try it */
	static const uint8_t ak[] = {0x00, 0x01, 0x00, 0x0b, 0x00, 0x05, 0x00, 0x72, 0x00,
				     0x00, 0x00, 0x10, 0x00, 0x14, 0x00, 0x0b, 0x08, 0x00,
				     0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc5, 0x01};
	struct azure_snp_info in;
	struct vtpm_policy p;
	struct vtpm_view v;
	char err[256];

	if (azure_snp_info_parse(data, size, &in, err, sizeof err) < 0)
		return 0;
	if (in.report_len && !in.report)
		abort();
	azure_snp_info_free(&in);
	memset(&p, 0, sizeof p);
	p.check = &vtpm_check_azure_sev_snp;
	p.config = config;
	p.config_len = sizeof config - 1;
	p.at = 1704067200;
	if (p.check->policy_init(&p, err, sizeof err) < 0)
		abort();
	memset(&v, 0, sizeof v);
	v.instance_info = data;
	v.instance_info_len = size;
	v.ak_pub = ak;
	v.ak_len = sizeof ak;
	(void)p.check->trusted_key(&p, &v, err, sizeof err);
	p.check->policy_free(&p);
	return 0;
}
