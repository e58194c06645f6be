/* Test helper: a swtpm provisioned as a cloud's vTPM, on tpm2-tss SYS directly (the TPM layer
 * of the agent only reads). Use from a C test after swtpm_start (tests/tpm/swtpm.h):
 *
 *   Azure (AK_HCL): vtpm_provision_hcl_ak(&sw.tcti, pub, sizeof pub, &pub_len) makes an RSA-2048
 *     restricted signing key in the owner hierarchy and persists it at 0x81000003, where the
 *     HCL keeps its AK, and returns its marshalled TPMT_PUBLIC (what the document's ak_pub
 *     holds; put its modulus into the HCL report's runtime data); then
 *     vtpm_provision_nv(&sw.tcti, 0x01400001, report, len) writes the HCL report the test
 *     built into NV index 0x01400001 (owner read/write, as the HCL's index).
 *   GCE (AK_GCE): vtpm_provision_gce(&sw.tcti) writes go-tpm-tools' AKTemplateRSA, marshalled
 *     as a TPMT_PUBLIC (tpm2.Public.Encode), into NV index 0x01c10001, where GCE's vTPM keeps
 *     its AK template; the AK is then a primary key of the endorsement hierarchy made from it
 *     (the same key for the same TPM seed, as on GCE).
 *   vtpm_provision_nv also writes any other index (undefining it first when it exists).
 * swtpm's libtpms (0.9) holds at most 2048 bytes in one NV index (MAX_NV_INDEX_SIZE), so a
 * test's HCL report must fit in that (Azure's index is 2600 bytes, zero-padded after the
 * runtime data). Each returns 0 or -1 with one line on stderr. Azure does not publish its AK's
 * template: the attributes here are those of a TCG attestation key (fixedTPM, fixedParent,
 * sensitiveDataOrigin, userWithAuth, noDA, restricted, sign; RSASSA with SHA-256). */
#ifndef CONSTEL_TEST_VTPM_PROVISION_H
#define CONSTEL_TEST_VTPM_PROVISION_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_mu.h>
#include <tss2/tss2_sys.h>
#include <tss2/tss2_tcti_swtpm.h>

#include "base/base.h"
#include "base/der.h"
#include "tpm/tpm.h"

#define VTPM_HCL_REPORT_NV 0x01400001u

/* The RSA key of a marshalled TPMT_PUBLIC as a PEM "PUBLIC KEY" (an RSA SubjectPublicKeyInfo:
 * what GCE's getShieldedInstanceIdentity answers as signingKey.ekPub), exponent 0 read as
 * 65537 as TPM 2.0 defines it. The PEM's length, or -1 (not RSA, or too long for cap). */
static inline int vtpm_prov_rsa_pem(const uint8_t *pub, size_t len, char *pem, size_t cap)
{
	static const uint8_t rsa_oid[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
	uint8_t der[600], zero = 0, e[4];
	struct der_out d = {.p = der, .cap = sizeof der};
	size_t off = 0, spki, alg, bits, key;
	TPMT_PUBLIC ak;
	uint32_t exp;

	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(pub, len, &off, &ak) != TSS2_RC_SUCCESS ||
	    ak.type != TPM2_ALG_RSA)
		return -1;
	exp = ak.parameters.rsaDetail.exponent ? ak.parameters.rsaDetail.exponent : 65537;
	e[0] = (uint8_t)(exp >> 24), e[1] = (uint8_t)(exp >> 16), e[2] = (uint8_t)(exp >> 8);
	e[3] = (uint8_t)exp;
	spki = der_begin(&d);
	alg = der_begin(&d);
	der_put_tlv(&d, DER_OID, rsa_oid, sizeof rsa_oid);
	der_put_tlv(&d, DER_NULL, NULL, 0);
	der_end(&d, alg, DER_SEQUENCE);
	bits = der_begin(&d);
	der_put_raw(&d, &zero, 1);
	key = der_begin(&d);
	der_put_uint(&d, ak.unique.rsa.buffer, ak.unique.rsa.size);
	der_put_uint(&d, e, 4);
	der_end(&d, key, DER_SEQUENCE);
	der_end(&d, bits, DER_BIT_STRING);
	der_end(&d, spki, DER_SEQUENCE);
	return d.err ? -1 : pem_encode("PUBLIC KEY", der, d.len, pem, cap);
}

struct vtpm_prov {
	TSS2_TCTI_CONTEXT *tcti;
	TSS2_SYS_CONTEXT *sys;
};

static const TSS2L_SYS_AUTH_COMMAND vtpm_prov_pw = {
    .count = 1,
    .auths = {{.sessionHandle = TPM2_RS_PW}},
};

static inline void vtpm_prov_close(struct vtpm_prov *p)
{
	if (p->sys) {
		Tss2_Sys_Finalize(p->sys);
		free(p->sys);
	}
	if (p->tcti) {
		Tss2_Tcti_Finalize(p->tcti);
		free(p->tcti);
	}
	memset(p, 0, sizeof *p);
}

static inline int vtpm_prov_open(const struct tcti_spec *t, struct vtpm_prov *p)
{
	TSS2_ABI_VERSION abi = TSS2_ABI_VERSION_CURRENT;
	char conf[TCTI_HOST_MAX + 32];
	size_t size = 0;

	memset(p, 0, sizeof *p);
	snprintf(conf, sizeof conf, "host=%s,port=%u", t->host, t->port);
	if (t->kind != TCTI_SWTPM || Tss2_Tcti_Swtpm_Init(NULL, &size, conf) != TSS2_RC_SUCCESS ||
	    !(p->tcti = calloc(1, size)) ||
	    Tss2_Tcti_Swtpm_Init(p->tcti, &size, conf) != TSS2_RC_SUCCESS) {
		free(p->tcti);
		p->tcti = NULL;
		fprintf(stderr, "vtpm_provision: cannot open swtpm at %s\n", conf);
		return -1;
	}
	size = Tss2_Sys_GetContextSize(0);
	p->sys = calloc(1, size);
	if (!p->sys || Tss2_Sys_Initialize(p->sys, size, p->tcti, &abi) != TSS2_RC_SUCCESS) {
		vtpm_prov_close(p);
		fprintf(stderr, "vtpm_provision: SYS context setup failed\n");
		return -1;
	}
	return 0;
}

static inline int vtpm_prov_rc(const char *what, TSS2_RC rc)
{
	if (rc == TSS2_RC_SUCCESS)
		return 0;
	fprintf(stderr, "vtpm_provision: %s failed: rc 0x%x\n", what, rc);
	return -1;
}

/* NV index with data, owner (and index) read/write with the empty password. */
static inline int vtpm_provision_nv(const struct tcti_spec *t, uint32_t index, const void *data,
				    size_t len)
{
	struct vtpm_prov p;
	TPM2B_AUTH auth = {0};
	TPM2B_NV_PUBLIC pub = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	int r = -1;

	if (len > TPM_NV_MAX * 2 || vtpm_prov_open(t, &p) < 0)
		return -1;
	/* an index left from an earlier run of the same TPM state goes first */
	Tss2_Sys_NV_UndefineSpace(p.sys, TPM2_RH_OWNER, index, &vtpm_prov_pw, &rsp);
	pub.nvPublic.nvIndex = index;
	pub.nvPublic.nameAlg = TPM2_ALG_SHA256;
	pub.nvPublic.attributes = TPMA_NV_OWNERWRITE | TPMA_NV_OWNERREAD | TPMA_NV_AUTHWRITE |
				  TPMA_NV_AUTHREAD | TPMA_NV_NO_DA;
	pub.nvPublic.dataSize = (UINT16)len;
	if (vtpm_prov_rc("NV_DefineSpace",
			 Tss2_Sys_NV_DefineSpace(p.sys, TPM2_RH_OWNER, &vtpm_prov_pw, &auth, &pub,
						 &rsp)) < 0)
		goto out;
	for (size_t off = 0; off < len;) {
		TPM2B_MAX_NV_BUFFER b = {0};
		size_t n = len - off < 256 ? len - off : 256; /* below any TPM's NV buffer */

		b.size = (UINT16)n;
		memcpy(b.buffer, (const uint8_t *)data + off, n);
		if (vtpm_prov_rc("NV_Write",
				 Tss2_Sys_NV_Write(p.sys, TPM2_RH_OWNER, index, &vtpm_prov_pw, &b,
						   (UINT16)off, &rsp)) < 0)
			goto out;
		off += n;
	}
	r = 0;
out:
	vtpm_prov_close(&p);
	return r;
}

/* go-tpm-tools' AKTemplateRSA (FlagSignerDefault: sign, restricted, userWithAuth, fixedTPM,
 * fixedParent, sensitiveDataOrigin; RSASSA-SHA256; 2048 bits; exponent 0). */
static inline void vtpm_prov_ak_template(TPMT_PUBLIC *p, int no_da)
{
	memset(p, 0, sizeof *p);
	p->type = TPM2_ALG_RSA;
	p->nameAlg = TPM2_ALG_SHA256;
	p->objectAttributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_RESTRICTED |
			      TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			      TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
			      (no_da ? TPMA_OBJECT_NODA : 0);
	p->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	p->parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSASSA;
	p->parameters.rsaDetail.scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256;
	p->parameters.rsaDetail.keyBits = 2048;
}

static inline int vtpm_provision_gce(const struct tcti_spec *t)
{
	TPMT_PUBLIC tmpl;
	uint8_t buf[TPM_PUBLIC_MAX];
	size_t off = 0;

	vtpm_prov_ak_template(&tmpl, 0);
	if (Tss2_MU_TPMT_PUBLIC_Marshal(&tmpl, buf, sizeof buf, &off) != TSS2_RC_SUCCESS)
		return -1;
	return vtpm_provision_nv(t, TPM_GCE_AK_TEMPLATE_NV, buf, off);
}

static inline int vtpm_provision_hcl_ak(const struct tcti_spec *t, uint8_t *pub, size_t cap,
					size_t *pub_len)
{
	struct vtpm_prov p;
	TPM2B_PUBLIC in = {0}, out = {0};
	TPM2B_NAME name = {.size = sizeof name.name};
	TPM2B_SENSITIVE_CREATE sens = {0};
	TPM2B_DATA outside = {0};
	TPML_PCR_SELECTION pcrs = {0};
	TPM2B_CREATION_DATA cdata = {0};
	TPM2B_DIGEST chash = {.size = sizeof chash.buffer};
	TPMT_TK_CREATION ticket = {0};
	TSS2L_SYS_AUTH_RESPONSE rsp;
	TPM2_HANDLE obj;
	size_t off = 0;
	int r = -1;

	if (vtpm_prov_open(t, &p) < 0)
		return -1;
	Tss2_Sys_EvictControl(p.sys, TPM2_RH_OWNER, TPM_HCL_AK_HANDLE, &vtpm_prov_pw,
			      TPM_HCL_AK_HANDLE, &rsp); /* one from an earlier run */
	vtpm_prov_ak_template(&in.publicArea, 1);
	/* unique: a primary key's seed input, so that it is not the owner AK of 0x81008F01 */
	in.publicArea.unique.rsa.size = 4;
	memcpy(in.publicArea.unique.rsa.buffer, "HCL!", 4);
	if (vtpm_prov_rc("CreatePrimary(HCL AK)",
			 Tss2_Sys_CreatePrimary(p.sys, TPM2_RH_OWNER, &vtpm_prov_pw, &sens, &in,
						&outside, &pcrs, &obj, &out, &cdata, &chash,
						&ticket, &name, &rsp)) < 0)
		goto out;
	r = vtpm_prov_rc("EvictControl(0x81000003)",
			 Tss2_Sys_EvictControl(p.sys, TPM2_RH_OWNER, obj, &vtpm_prov_pw,
					       TPM_HCL_AK_HANDLE, &rsp));
	Tss2_Sys_FlushContext(p.sys, obj);
	if (r == 0 &&
	    Tss2_MU_TPMT_PUBLIC_Marshal(&out.publicArea, pub, cap, &off) != TSS2_RC_SUCCESS)
		r = -1;
	*pub_len = off;
out:
	vtpm_prov_close(&p);
	return r;
}

#endif
