/* The SEV-SNP part of the validators of aws-sev-snp and gcp-sev-snp (snp_check.c, tools
 * only). */
#ifndef CONSTEL_ATTEST_SNP_CHECK_H
#define CONSTEL_ATTEST_SNP_CHECK_H

#include <stdint.h>

#include "attest/snp.h"
#include "attest/vtpm.h"

/* Checks v's InstanceInfo (snp.InstanceInfo, GCP part present iff want_gcp) and its report
 * under p (policy_init of the variant done): the chain, signature, policy, VMPL 0, minimum
 * launch TCB, REPORT_DATA = report_data, and with want_vlek a VLEK as the signer. 0 (and
 * *ret, if not NULL) or -EINVAL with one line in err naming the check. */
int snp_check_document(const struct vtpm_policy *p, const struct vtpm_view *v,
		       const uint8_t report_data[64], int want_vlek, int want_gcp,
		       struct snp_report *ret, char *err, size_t errlen);

#endif
