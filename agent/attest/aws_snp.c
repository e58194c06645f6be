/* aws-sev-snp's issuer side (OID 1.3.9900.2.2; Constellation's aws/snp/issuer.go): the AK of
 * the owner hierarchy as qemu-vtpm's, and InstanceInfo = snp.InstanceInfo{AttestationReport,
 * ReportSigner: the VLEK} from an extended report whose REPORT_DATA is SHA-512 of the AK's
 * PKIX DER, so the report binds the key that signs the quotes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attest/sev_guest.h"
#include "attest/snp_info.h"
#include "attest/vtpm.h"
#include "base/base.h"

static int aws_snp_info(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len,
			char *err, size_t errlen)
{
	uint8_t data[SEV_REPORT_DATA_LEN], report[SEV_REPORT_LEN], *certs;
	const uint8_t *vlek;
	size_t certs_len, vlek_len;
	int r;

	if ((r = snp_ak_digest(in->ak_pub, in->ak_len, data, err, errlen)) < 0)
		return r;
	if (!(certs = malloc(SEV_CERTS_MAX)))
		return -ENOMEM;
	r = sev_guest_ext_report(in->env->tsm_report, in->env->sev_guest, data, report, certs,
				 SEV_CERTS_MAX, &certs_len, err, errlen);
	if (r < 0)
		goto out;
	r = sev_cert_table_find(certs, certs_len, sev_guid_vlek, &vlek, &vlek_len, err, errlen);
	if (r == -ENOENT)
		errbuf_set(err, errlen, "the host's certificate table has no VLEK");
	if (r < 0)
		goto out;
	r = snp_info_build(report, vlek, vlek_len, NULL, 0, NULL, out, cap, len);
	if (r < 0)
		errbuf_set(err, errlen, "InstanceInfo: %s", strerror(-r));
out:
	free(certs);
	return r;
}

const struct vtpm_variant vtpm_aws_sev_snp = {
    .name = "aws-sev-snp",
    .oid = {0x2b, 0xcd, 0x2c, 0x02, 0x02}, /* 1.3.9900.2.2 */
    .oid_len = 5,
    .ak = VTPM_AK_OWNER,
    .instance_info = aws_snp_info,
};
