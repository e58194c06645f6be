/* vtpm-provision: a node's swtpm state provisioned as a cloud provisions its vTPM, before the
 * QEMU boot (qemu-tests/cloud-cluster.sh's cloud_variant_tpm), with the logic of
 * tests/attest/vtpm_provision.h (one copy for the unit tests and the boots):
 *
 *   vtpm-provision TCTI hcl-ak          Azure's HCL AK at 0x81000003; prints its modulus
 *                                       (base64url, no padding: the runtime data's JWK n)
 *   vtpm-provision TCTI nv INDEX FILE   FILE's bytes into NV INDEX (hex; e.g. the HCL report
 *                                       into 0x01400001)
 *   vtpm-provision TCTI gce             GCE's AK template into NV 0x01c10001; prints the
 *                                       AK made from it (a primary key of the endorsement
 *                                       hierarchy, as the agent makes it) as a PEM "PUBLIC
 *                                       KEY": getShieldedInstanceIdentity's signingKey.ekPub
 *
 * TCTI: swtpm:host=127.0.0.1,port=N (swtpm's command port, started with --flags
 * not-need-init,startup-clear). Each ends with TPM2_Shutdown(CLEAR), so the state swtpm
 * keeps is an orderly one. Exit 0, or 1 with one line on stderr; 2 wrong command line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_provision.h"
#include "base/base.h"
#include "base/der.h"
#include "tpm/tpm.h"

static int shutdown_clear(const struct tcti_spec *t)
{
	struct vtpm_prov p;
	int r;

	if (vtpm_prov_open(t, &p) < 0)
		return -1;
	r = vtpm_prov_rc("Shutdown(CLEAR)", Tss2_Sys_Shutdown(p.sys, NULL, TPM2_SU_CLEAR, NULL));
	vtpm_prov_close(&p);
	return r;
}

static int hcl_ak(const struct tcti_spec *t)
{
	uint8_t pub[TPM_PUBLIC_MAX];
	size_t len = 0, off = 0, n;
	TPMT_PUBLIC ak;
	char b64[600];

	if (vtpm_provision_hcl_ak(t, pub, sizeof pub, &len) < 0)
		return -1;
	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(pub, len, &off, &ak) != TSS2_RC_SUCCESS ||
	    base64_encode(BASE64_URL, ak.unique.rsa.buffer, ak.unique.rsa.size, b64, sizeof b64) <
		0) {
		fprintf(stderr, "vtpm-provision: the HCL AK's public area does not parse\n");
		return -1;
	}
	for (n = strlen(b64); n && b64[n - 1] == '='; n--)
		b64[n - 1] = 0;
	printf("%s\n", b64);
	return 0;
}

/* GCE's AK template into NV, then the AK made from it as GCE's API gives it (an RSA
 * SubjectPublicKeyInfo in PEM). */
static int gce(const struct tcti_spec *t)
{
	uint8_t pub[TPM_PUBLIC_MAX];
	size_t len = 0;
	struct tpm *tpm;
	char pem[1200], err[200];
	int n;

	if (vtpm_provision_gce(t) < 0)
		return -1;
	if (tpm_open(t, &tpm, err, sizeof err) < 0 ||
	    tpm_ak_select(tpm, TPM_AK_SRC_GCE, pub, sizeof pub, &len, err, sizeof err) < 0) {
		fprintf(stderr, "vtpm-provision: the GCE AK: %s\n", err);
		return -1;
	}
	tpm_close(tpm);
	if ((n = vtpm_prov_rsa_pem(pub, len, pem, sizeof pem)) < 0) {
		fprintf(stderr,
			"vtpm-provision: the GCE AK is not an RSA key in a PEM of %zu bytes\n",
			sizeof pem);
		return -1;
	}
	fwrite(pem, 1, (size_t)n, stdout);
	return 0;
}

static int nv(const struct tcti_spec *t, const char *index, const char *path)
{
	static uint8_t buf[TPM_NV_MAX + 1];
	char *end;
	unsigned long i = strtoul(index, &end, 16);
	FILE *f = fopen(path, "rb");
	size_t len;

	if (!f) {
		fprintf(stderr, "vtpm-provision: %s: cannot open\n", path);
		return -1;
	}
	len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if (*end || i < 0x01000000ul || i > 0x01fffffful || len == 0 || len > TPM_NV_MAX) {
		fprintf(stderr, "vtpm-provision: want an NV index 0x01xxxxxx and 1..%d bytes\n",
			TPM_NV_MAX);
		return -1;
	}
	return vtpm_provision_nv(t, (uint32_t)i, buf, len);
}

int main(int argc, char **argv)
{
	struct tcti_spec t;
	char err[200];
	int r;

	if (argc < 3 || tcti_spec_parse(argv[1], &t, err, sizeof err) < 0 || t.kind != TCTI_SWTPM) {
		fprintf(stderr,
			"usage: vtpm-provision swtpm:host=H,port=N hcl-ak | nv INDEX FILE | "
			"gce\n");
		return 2;
	}
	if (!strcmp(argv[2], "hcl-ak") && argc == 3)
		r = hcl_ak(&t);
	else if (!strcmp(argv[2], "nv") && argc == 5)
		r = nv(&t, argv[3], argv[4]);
	else if (!strcmp(argv[2], "gce") && argc == 3)
		r = gce(&t);
	else
		return fprintf(stderr, "vtpm-provision: unknown command\n"), 2;
	if (r == 0)
		r = shutdown_clear(&t);
	return r == 0 ? 0 : 1;
}
