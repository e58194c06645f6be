/* The vTPM core (vtpm.h) on swtpm provisioned as each cloud's vTPM (vtpm_provision.h): the
 * variant tables, NV reads in chunks, the AK by kind (owner, Azure's HCL AK at 0x81000003,
 * GCE's endorsement-hierarchy AK from the NV template), documents with InstanceInfo accepted by
 * the core validator and refused when one byte of InstanceInfo, the quote or the AK changes or
 * the variant's trusted key differs; qemu-vtpm's InstanceInfo stays null as Go writes it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "harness.h"
#include "tpm/swtpm.h"
#include "vtpm_provision.h"

static const char ii_json[] = "{\"zone\":\"z\",\"project_id\":\"p\",\"instance_name\":\"i\"}";

static int test_ii(const struct vtpm_issue *in, uint8_t *out, size_t cap, size_t *len, char *err,
		   size_t errlen)
{
	if (!in->tpm || !in->ak_len || sizeof ii_json - 1 > cap)
		return errbuf_set(err, errlen, "no TPM or AK for the hook");
	memcpy(out, ii_json, sizeof ii_json - 1);
	*len = sizeof ii_json - 1;
	return 0;
}

static struct vtpm_variant test_variant = {
    .name = "test-vtpm",
    .oid = {0x2b, 0xcd, 0x2c, 0x05, 0x7f},
    .oid_len = 5,
    .ak = VTPM_AK_OWNER,
    .instance_info = test_ii,
};

/* The key the "cloud API" trusts, and what the hooks saw. */
static uint8_t trusted_ak[TPM_PUBLIC_MAX];
static size_t trusted_ak_len;
static int cvm_calls;

static int test_trusted_key(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			    size_t errlen)
{
	(void)p;
	if (v->ak_len != trusted_ak_len || memcmp(v->ak_pub, trusted_ak, v->ak_len))
		return errbuf_set(err, errlen, "the AK is not the one the API gives");
	return 0;
}

static int test_cvm(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
		    size_t errlen)
{
	(void)p;
	cvm_calls++;
	if (v->instance_info_len != sizeof ii_json - 1 ||
	    memcmp(v->instance_info, ii_json, v->instance_info_len))
		return errbuf_set(err, errlen, "instance info is not the instance's");
	return 0;
}

static const struct vtpm_check test_check = {
    .name = "test-vtpm",
    .trusted_key = test_trusted_key,
    .validate_cvm = test_cvm,
};

struct fx {
	struct swtpm sw;
	struct vtpm_env env;
	struct vtpm_policy pol;
	uint8_t nonce[32], ud[32], *doc;
	size_t len;
};

static uint8_t docbuf[ATLS_DOC_MAX];

static int fx_start(struct fx *f, enum vtpm_ak_kind ak)
{
	memset(f, 0, sizeof *f);
	memset(f->nonce, 0x5a, sizeof f->nonce);
	memset(f->ud, 0xc3, sizeof f->ud);
	test_variant.ak = ak;
	vtpm_env_default(&f->env, &test_variant);
	f->env.event_log = NULL;
	f->pol.variant = &test_variant;
	f->pol.check = &test_check;
	f->doc = docbuf;
	if (swtpm_start(&f->sw) < 0)
		return -1;
	f->env.tcti = f->sw.tcti;
	return 0;
}

static int fx_issue(struct fx *f, char *err, size_t errlen)
{
	return vtpm_issue(&f->env, f->ud, f->nonce, sizeof f->nonce, f->doc, ATLS_DOC_MAX, &f->len,
			  err, errlen);
}

static int fx_validate(struct fx *f, const uint8_t *doc, size_t len, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t n = 0;
	int r = vtpm_validate(&f->pol, doc, len, f->nonce, sizeof f->nonce, ud, sizeof ud, &n, err,
			      errlen);

	if (r == 0 && (n != 32 || memcmp(ud, f->ud, 32)))
		return -1000;
	return r;
}

static void fx_stop(struct fx *f)
{
	swtpm_destroy(&f->sw);
}

/* The current AK of kind ak as the TPM layer reads it. */
static int ak_of(struct fx *f, enum tpm_ak_source src, uint8_t *pub, size_t *len, char *err,
		 size_t errlen)
{
	struct tpm *t;
	int r = tpm_open(&f->sw.tcti, &t, err, errlen);

	if (r < 0)
		return r;
	r = tpm_ak_select(t, src, pub, TPM_PUBLIC_MAX, len, err, errlen);
	tpm_close(t);
	return r;
}

static int has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s (want %s)\n", err, want);
	return 0;
}

/* A copy of doc with the base64 value of every "key":"..." changed in its first character. */
static uint8_t *flip_b64(const uint8_t *doc, size_t len, const char *key)
{
	static uint8_t c[ATLS_DOC_MAX + 1];
	char *p;

	if (len >= sizeof c)
		return NULL;
	memcpy(c, doc, len);
	c[len] = '\0';
	p = strstr((char *)c, key);
	if (!p)
		return NULL;
	for (; p; p = strstr(p, key)) {
		p += strlen(key);
		*p = *p == 'A' ? 'B' : 'A';
	}
	return c;
}

TEST(vtpm_variant_tables_find_qemu_vtpm_and_name_the_known_ones)
{
	const struct vtpm_variant *v = vtpm_variant_find("qemu-vtpm");

	CHECK(v && v->ak == VTPM_AK_OWNER && v->oid_len == 5 && v->oid[4] == 0x01);
	CHECK(vtpm_check_find("qemu-vtpm") && !vtpm_check_find("nope"));
	CHECK(!vtpm_variant_find("nope") && !vtpm_variant_find(NULL));
	CHECK(strstr(vtpm_variant_names(), "qemu-vtpm"));
	CHECK(strstr(vtpm_check_names(), "qemu-vtpm"));
}

TEST(vtpm_nv_read_reads_a_large_index_in_chunks_and_refuses_with_one_line)
{
	struct fx f;
	struct tpm *t;
	uint8_t want[2000], got[4096];
	size_t n = 0;
	char err[200] = "";

	for (size_t i = 0; i < sizeof want; i++)
		want[i] = (uint8_t)(i * 7 + 3);
	CHECK(fx_start(&f, VTPM_AK_OWNER) == 0);
	CHECK(vtpm_provision_nv(&f.sw.tcti, VTPM_HCL_REPORT_NV, want, sizeof want) == 0);
	CHECK(tpm_open(&f.sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_nv_read(t, VTPM_HCL_REPORT_NV, got, sizeof got, &n, err, sizeof err) == 0);
	CHECK(n == sizeof want);
	CHECK_BYTES(got, want, sizeof want);
	CHECK(tpm_nv_read(t, VTPM_HCL_REPORT_NV, got, 100, &n, err, sizeof err) == -ENOBUFS);
	CHECK(has(err, "holds 2000 bytes"));
	CHECK(tpm_nv_read(t, 0x01400002, got, sizeof got, &n, err, sizeof err) == -ENOENT);
	CHECK(has(err, "0x01400002 is not defined"));
	tpm_close(t);
	fx_stop(&f);
}

TEST(vtpm_document_with_instance_info_is_accepted_and_refused_when_a_byte_changes)
{
	struct fx f;
	char err[400] = "", b64[256];
	uint8_t *c;

	CHECK(fx_start(&f, VTPM_AK_OWNER) == 0);
	CHECK(fx_issue(&f, err, sizeof err) == 0);
	CHECK(ak_of(&f, TPM_AK_SRC_OWNER, trusted_ak, &trusted_ak_len, err, sizeof err) == 0);
	/* InstanceInfo is Go's []byte: base64 of the JSON */
	base64_encode(BASE64_STD, (const uint8_t *)ii_json, sizeof ii_json - 1, b64, sizeof b64);
	f.doc[f.len] = '\0';
	CHECK(strstr((char *)f.doc, "\"InstanceInfo\":\""));
	CHECK(strstr((char *)f.doc, b64));
	cvm_calls = 0;
	if (fx_validate(&f, f.doc, f.len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	CHECK(cvm_calls == 1);
	/* one byte of InstanceInfo: the quote's nonce no longer matches */
	CHECK((c = flip_b64(f.doc, f.len, "\"InstanceInfo\":\"")));
	CHECK(fx_validate(&f, c, f.len, err, sizeof err) == -EINVAL);
	CHECK(has(err, "test-vtpm: no quote verifies") && has(err, "nonce does not match"));
	/* one byte of each quote */
	CHECK((c = flip_b64(f.doc, f.len, "\"quote\":\"")));
	CHECK(fx_validate(&f, c, f.len, err, sizeof err) == -EINVAL);
	CHECK(has(err, "test-vtpm: no quote verifies"));
	/* one byte of the AK: the trusted-key check refuses before the quotes */
	CHECK((c = flip_b64(f.doc, f.len, "\"ak_pub\":\"")));
	CHECK(fx_validate(&f, c, f.len, err, sizeof err) == -EINVAL);
	CHECK(has(err, "test-vtpm: "));
	/* the AK of the document is not the API's */
	trusted_ak[trusted_ak_len - 1] ^= 1;
	CHECK(fx_validate(&f, f.doc, f.len, err, sizeof err) == -EINVAL);
	CHECK(has(err, "test-vtpm: the AK is not the one the API gives"));
	fx_stop(&f);
}

TEST(vtpm_qemu_vtpm_document_keeps_instance_info_null)
{
	struct fx f;
	char err[300] = "";

	CHECK(fx_start(&f, VTPM_AK_OWNER) == 0);
	f.env.variant = vtpm_variant_find("qemu-vtpm");
	CHECK(fx_issue(&f, err, sizeof err) == 0);
	f.doc[f.len] = '\0';
	CHECK(strstr((char *)f.doc,
		     "\"TeeAttestation\":null},\"InstanceInfo\":null,\"UserData\":\""));
	fx_stop(&f);
}

TEST(vtpm_hcl_ak_is_read_never_made_and_signs_the_quotes)
{
	struct fx f;
	char err[300] = "";
	uint8_t pub[TPM_PUBLIC_MAX];
	size_t pub_len;

	CHECK(fx_start(&f, VTPM_AK_HCL) == 0);
	/* absent: one line naming the handle, and nothing made */
	CHECK(fx_issue(&f, err, sizeof err) == -ENOENT);
	CHECK(has(err, "test-vtpm: tpm: no attestation key at persistent handle 0x81000003"));
	CHECK(ak_of(&f, TPM_AK_SRC_HCL, pub, &pub_len, err, sizeof err) == -ENOENT);
	CHECK(vtpm_provision_hcl_ak(&f.sw.tcti, trusted_ak, sizeof trusted_ak, &trusted_ak_len) ==
	      0);
	CHECK(ak_of(&f, TPM_AK_SRC_HCL, pub, &pub_len, err, sizeof err) == 0);
	CHECK(pub_len == trusted_ak_len);
	CHECK_BYTES(pub, trusted_ak, pub_len);
	CHECK(fx_issue(&f, err, sizeof err) == 0);
	if (fx_validate(&f, f.doc, f.len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "HCL-AK document refused: %s", err);
	/* the owner AK is another key: a document under it is not the HCL AK's */
	test_variant.ak = VTPM_AK_OWNER;
	CHECK(fx_issue(&f, err, sizeof err) == 0);
	CHECK(fx_validate(&f, f.doc, f.len, err, sizeof err) == -EINVAL);
	CHECK(has(err, "the AK is not the one the API gives"));
	fx_stop(&f);
}

TEST(vtpm_gce_ak_comes_from_the_nv_template_and_is_the_same_each_time)
{
	struct fx f;
	char err[300] = "";
	uint8_t a[TPM_PUBLIC_MAX], b[TPM_PUBLIC_MAX];
	size_t al, bl;

	CHECK(fx_start(&f, VTPM_AK_GCE) == 0);
	CHECK(fx_issue(&f, err, sizeof err) == -ENOENT);
	CHECK(has(err, "test-vtpm: tpm: NV index 0x01c10001 is not defined"));
	CHECK(vtpm_provision_gce(&f.sw.tcti) == 0);
	CHECK(ak_of(&f, TPM_AK_SRC_GCE, a, &al, err, sizeof err) == 0);
	CHECK(ak_of(&f, TPM_AK_SRC_GCE, b, &bl, err, sizeof err) == 0);
	CHECK(al == bl && al == 24 + 256);
	CHECK_BYTES(a, b, al);
	memcpy(trusted_ak, a, al);
	trusted_ak_len = al;
	CHECK(fx_issue(&f, err, sizeof err) == 0);
	if (fx_validate(&f, f.doc, f.len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "GCE-AK document refused: %s", err);
	/* issuing again leaves no transient object behind (swtpm has 3 slots) */
	for (int i = 0; i < 4; i++)
		CHECK(fx_issue(&f, err, sizeof err) == 0);
	fx_stop(&f);
}
