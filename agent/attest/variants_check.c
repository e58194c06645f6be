/* The validator's side of every TPM-based attestation variant (vtpm.h), by name, for tools
 * and tests only (the agent never validates). One line per variant in each list below, in the order
 * of the names; each placeholder comment is the line its owner replaces (the blank lines keep
 * concurrent additions apart in a merge). */
#include <stdio.h>
#include <string.h>

#include "vtpm.h"

extern const struct vtpm_check vtpm_check_aws_nitro_tpm;

extern const struct vtpm_check vtpm_check_aws_sev_snp;

extern const struct vtpm_check vtpm_check_azure_sev_snp;

extern const struct vtpm_check vtpm_check_azure_tdx;

extern const struct vtpm_check vtpm_check_gcp_sev_es;

extern const struct vtpm_check vtpm_check_gcp_sev_snp;

extern const struct vtpm_check vtpm_check_qemu_vtpm;

static const struct vtpm_check *const checks[] = {
    &vtpm_check_aws_nitro_tpm,

    &vtpm_check_aws_sev_snp,

    &vtpm_check_azure_sev_snp,

    &vtpm_check_azure_tdx,

    &vtpm_check_gcp_sev_es,

    &vtpm_check_gcp_sev_snp,

    &vtpm_check_qemu_vtpm,
};

#define N_CHECKS (sizeof checks / sizeof checks[0])

const struct vtpm_check *vtpm_check_find(const char *name)
{
	for (size_t i = 0; name && i < N_CHECKS; i++)
		if (!strcmp(checks[i]->name, name))
			return checks[i];
	return NULL;
}

const char *vtpm_check_names(void)
{
	static char names[N_CHECKS * 24];
	size_t used = 0;

	if (names[0])
		return names;
	for (size_t i = 0; i < N_CHECKS && used < sizeof names; i++)
		used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
					 checks[i]->name);
	return names;
}
