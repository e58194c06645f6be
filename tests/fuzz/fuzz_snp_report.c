/* libFuzzer target: the SEV-SNP report (attest/snp_report.c) followed by its signer's
 * certificate (DER): the report parser, the VCEK/VLEK parser, snp_verify (which stops at the
 * chain: no fuzzed certificate is signed by AMD) and, as if chain and signature had passed,
 * the checks after them (snp_report_check) for each product. When the certificate does not
 * parse, its TCB and hardware ID are taken from the report so that the checks reach the
 * policy and minimums. Seed: a report and VCEK of a test chain (tests/attest/test_snp_report.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/snp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snp_report r;
	struct snp_signer_info si;
	struct snp_verify_opts o;
	enum snp_product p;
	char err[256];

	if (size > SNP_REPORT_LEN + 4096)
		return 0;
	snp_verify_opts_init(&o);
	o.at = 1704067200;
	(void)snp_verify(data, size, data + (size < SNP_REPORT_LEN ? size : SNP_REPORT_LEN),
			 size < SNP_REPORT_LEN ? 0 : size - SNP_REPORT_LEN, &o, &r, &p, err,
			 sizeof err);
	if (snp_report_parse(data, size, &r, err, sizeof err) < 0)
		return 0;
	if (snp_signer_parse(data + SNP_REPORT_LEN, size - SNP_REPORT_LEN, &si) < 0) {
		memset(&si, 0, sizeof si);
		for (int k = 1; k <= 9; k++)
			si.have_spl[k] = 1;
		si.hwid = r.chip_id;
		si.hwid_len = 64;
	}
	/* a minimum from the report's family ID: sometimes met, sometimes not */
	o.have_min_tcb = r.family_id[0] & 1;
	o.have_min_launch_tcb = r.family_id[0] & 2;
	memcpy(&o.min_tcb, r.family_id + 1, sizeof o.min_tcb);
	memcpy(&o.min_launch_tcb, r.family_id + 8, sizeof o.min_launch_tcb);
	o.vmpl = r.family_id[15] & 4 ? -1 : 0;
	for (p = SNP_MILAN; p <= SNP_TURIN; p++) {
		int own = si.hwid != r.chip_id;

		if (!own) { /* the certificate's TCB extensions: the reported TCB's bytes */
			static const int milan[8] = {1, 2, 4, 5, 6, 7, 3, 8};
			static const int turin[8] = {9, 1, 2, 3, 5, 6, 7, 8};

			memset(si.spl, 0, sizeof si.spl);
			for (int i = 0; i < 8; i++)
				si.spl[(p == SNP_TURIN ? turin : milan)[i]] =
				    (uint8_t)(r.reported_tcb >> 8 * i);
		}
		(void)snp_report_check(&r, p, &si, &o, err, sizeof err);
		if (strlen(err) >= sizeof err)
			abort();
	}
	return 0;
}
