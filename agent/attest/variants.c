/* The issuer's side of every TPM-based attestation variant (vtpm.h), by name. One line per
 * variant in each list below, in the order of the names; each placeholder comment is the
 * line its owner replaces (the blank lines keep concurrent additions apart in a merge). */
#include <stdio.h>
#include <string.h>

#include "vtpm.h"

extern const struct vtpm_variant vtpm_aws_nitro_tpm;

extern const struct vtpm_variant vtpm_aws_sev_snp;

extern const struct vtpm_variant vtpm_azure_sev_snp;

extern const struct vtpm_variant vtpm_azure_tdx;

extern const struct vtpm_variant vtpm_gcp_sev_es;

extern const struct vtpm_variant vtpm_gcp_sev_snp;

extern const struct vtpm_variant vtpm_qemu_vtpm;

static const struct vtpm_variant *const variants[] = {
    &vtpm_aws_nitro_tpm,

    &vtpm_aws_sev_snp,

    &vtpm_azure_sev_snp,

    &vtpm_azure_tdx,

    &vtpm_gcp_sev_es,

    &vtpm_gcp_sev_snp,

    &vtpm_qemu_vtpm,
};

#define N_VARIANTS (sizeof variants / sizeof variants[0])

const struct vtpm_variant *vtpm_variant_find(const char *name)
{
	for (size_t i = 0; name && i < N_VARIANTS; i++)
		if (!strcmp(variants[i]->name, name))
			return variants[i];
	return NULL;
}

const char *vtpm_variant_names(void)
{
	static char names[N_VARIANTS * 24];
	size_t used = 0;

	if (names[0])
		return names;
	for (size_t i = 0; i < N_VARIANTS && used < sizeof names; i++)
		used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
					 variants[i]->name);
	return names;
}
