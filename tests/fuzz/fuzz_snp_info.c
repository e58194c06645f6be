/* libFuzzer target: snp.InstanceInfo (attest/snp_info.c) as aws-sev-snp and gcp-sev-snp send
 * it: JSON with base64 of PEM certificates, the report and the GCP names, read strictly (the
 * text is rebuilt and must be the input). What it accepts must rebuild to the same bytes, and
 * its certificates must fit their buffers; the same bytes also go through the agent's
 * certificate-table lookup (sev_cert_table_find), whose finds must lie inside the input after
 * the entries. Seed: an aws-sev-snp and a gcp-sev-snp InstanceInfo with a test VLEK/VCEK. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/sev_guest.h"
#include "attest/snp_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct snp_info ii;
	static uint8_t again[SNP_INFO_MAX];
	const uint8_t *d;
	size_t n, l;
	char err[256];

	if (size > SNP_INFO_MAX + 16)
		return 0;
	if (snp_info_parse(data, size, &ii, err, sizeof err) == 0) {
		if (ii.signer_len == 0 || ii.signer_len > sizeof ii.signer ||
		    ii.ask_len > sizeof ii.ask)
			abort();
		if (snp_info_build(ii.report, ii.signer, ii.signer_len, ii.ask_len ? ii.ask : NULL,
				   ii.ask_len, ii.have_gcp ? &ii.gcp : NULL, again, sizeof again,
				   &n) != 0 ||
		    n != size || memcmp(again, data, size))
			abort();
	}
	if (sev_cert_table_find(data, size, sev_guid_vlek, &d, &l, err, sizeof err) == 0 &&
	    (d < data + 24 || l == 0 || l > size || d + l > data + size))
		abort();
	return 0;
}
