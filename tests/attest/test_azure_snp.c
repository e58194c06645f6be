/* azure-sev-snp (attest/azure_snp.c, azure_snp_check.c) on the recorded Azure evidence
 * (${CONSTEL_VECTORS:-../shared/vectors}/snp-azure: report, VCEK, ASK+ARK, runtime data):
 * the HCL report the issuer reads (assembled from them as NV 0x01400001 holds it) and THIM's
 * answer give InstanceInfo byte for byte as Go's json.Marshal of Constellation's
 * snp.InstanceInfo (its SHA-256 measured with Go 1.x on the same inputs); the validator's
 * trusted-key hook accepts it for an AK whose modulus is the runtime data's HCLAkPub, under
 * each enforcement policy as Constellation's, and refuses a changed report, VCEK, runtime data
 * or AK. THIM and IMDS tag parsing, bounded. Missing evidence is a failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>
#include <json-c/json.h>
#include <tss2/tss2_mu.h>

#include "attest/azure_snp.h"
#include "attest/hcl.h"
#include "base/base.h"
#include "attest/azure_imds_fake.h"
#include "attest/maa_fake.h"
#include "harness.h"

#define AT_2024 1704067200 /* 2024-01-01T00:00:00Z: the recorded VCEK is valid */
/* SHA-256 of Go's json.Marshal(snp.InstanceInfo{ReportSigner: vcek.pem, CertChain:
 * certchain.pem, AttestationReport: the report, Azure: &{RuntimeData: runtimedata.bin}}):
 * 11137 bytes */
#define GO_INFO_SHA256 "15eaa516c900c97b521b080d2015c9ecfe23efc7ac69dba1377995037f7a6801"

struct ev {
	uint8_t *att, *rt, *vcek, *chain;
	size_t att_len, rt_len, vcek_len, chain_len;
	uint8_t hcl[2600];
	char thim[16384];
	size_t thim_len;
};

/* THIM's answer: the four fields Azure documents */
static int thim_of(struct ev *e)
{
	json_object *o = json_object_new_object();
	const char *s;

	json_object_object_add(o, "vcekCert",
			       json_object_new_string_len((char *)e->vcek, (int)e->vcek_len));
	json_object_object_add(o, "tcbm", json_object_new_string("DB18000000000002"));
	json_object_object_add(o, "certificateChain",
			       json_object_new_string_len((char *)e->chain, (int)e->chain_len));
	json_object_object_add(o, "cacheControl", json_object_new_string("86400"));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	e->thim_len = strlen(s);
	if (e->thim_len < sizeof e->thim)
		memcpy(e->thim, s, e->thim_len + 1);
	json_object_put(o);
	return e->thim_len < sizeof e->thim ? 0 : -1;
}

static int load(struct ev *e)
{
	memset(e, 0, sizeof *e);
	e->att = harness_vector("snp-azure/attestation.bin", &e->att_len);
	e->rt = harness_vector("snp-azure/runtimedata.bin", &e->rt_len);
	e->vcek = harness_vector("snp-azure/vcek.pem", &e->vcek_len);
	e->chain = harness_vector("snp-azure/certchain.pem", &e->chain_len);
	if (!e->att || !e->rt || !e->vcek || !e->chain || e->att_len != 1204 ||
	    HCL_RUNTIME_OFFSET + e->rt_len > sizeof e->hcl)
		return -1;
	/* NV 0x01400001: header "HCLA", version 2, report size, request type 2; the SNP report
	 * and the IGVM request header after it (as recorded), the runtime data, zeros */
	memcpy(e->hcl, "HCLA\x02\0\0\0", 8);
	e->hcl[8] = (uint8_t)((HCL_RUNTIME_OFFSET + e->rt_len) & 0xff);
	e->hcl[9] = (uint8_t)((HCL_RUNTIME_OFFSET + e->rt_len) >> 8);
	e->hcl[12] = 2;
	memcpy(e->hcl + HCL_HW_OFFSET, e->att, 1204);
	memcpy(e->hcl + HCL_RUNTIME_OFFSET, e->rt, e->rt_len);
	return thim_of(e);
}

static void unload(struct ev *e)
{
	free(e->att);
	free(e->rt);
	free(e->vcek);
	free(e->chain);
}

static int info_of(const struct ev *e, uint8_t *out, size_t cap, size_t *len)
{
	struct azure_thim t;
	char err[256];
	int r;

	if (azure_thim_parse(e->thim, e->thim_len, &t, err, sizeof err) < 0) {
		fprintf(stderr, "thim: %s\n", err);
		return -1;
	}
	r = azure_snp_info_build(e->hcl, sizeof e->hcl, &t, out, cap, len, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "build: %s\n", err);
	azure_thim_free(&t);
	return r;
}

TEST(azure_snp_instance_info_is_gos_marshalling)
{
	static uint8_t info[65536];
	struct ev e;
	size_t len;
	uint8_t d[32];
	char hex[65];
	br_sha256_context sc;

	CHECK(load(&e) == 0);
	CHECK(info_of(&e, info, sizeof info, &len) == 0);
	/* the fields in Go's order, nil GCP as null, an empty MAAToken as "" */
	CHECK(len > 64 && !memcmp(info, "{\"ReportSigner\":\"LS0tLS1CRUdJTi", 31));
	CHECK(memmem(info, len, "\",\"Azure\":{\"RuntimeData\":\"eyJrZXlzIjpb", 37) != NULL);
	CHECK(len > 28 && !memcmp(info + len - 28, "\",\"MAAToken\":\"\"},\"GCP\":null}", 28));
	br_sha256_init(&sc);
	br_sha256_update(&sc, info, len);
	br_sha256_out(&sc, d);
	hex_encode(d, 32, hex, sizeof hex);
	/* Go: json.Marshal(snp.InstanceInfo{...}) of the same inputs */
	CHECK(!strcmp(hex, GO_INFO_SHA256));
	if (strcmp(hex, GO_INFO_SHA256))
		fprintf(stderr, "sha256 %s, %zu bytes\n", hex, len);
	/* bounded: a buffer one byte short is refused */
	{
		size_t l2;
		struct azure_thim t;
		char err[200];

		CHECK(azure_thim_parse(e.thim, e.thim_len, &t, err, sizeof err) == 0);
		CHECK(azure_snp_info_build(e.hcl, sizeof e.hcl, &t, info, len - 1, &l2, err,
					   sizeof err) < 0);
		CHECK(strstr(err, "longer than") != NULL);
		/* a TDX HCL report is refused */
		e.hcl[HCL_IGVM_OFFSET + 8] = 4;
		CHECK(azure_snp_info_build(e.hcl, sizeof e.hcl, &t, info, sizeof info, &l2, err,
					   sizeof err) < 0);
		azure_thim_free(&t);
	}
	unload(&e);
}

/* ---- the validator's trusted-key hook ---- */

/* The AK as a marshalled TPMT_PUBLIC (RSA-2048, e 65537 as 0) whose modulus is the runtime
 * data's keys[0].n: the stand-in for the HCL AK the recorded runtime data names. */
static size_t ak_pub_of(const uint8_t *rt, size_t rt_len, uint8_t *out, size_t cap)
{
	const char *p = memmem(rt, rt_len, "\"n\":\"", 5), *q;
	char padded[1400];
	size_t n, l, off = 0;
	TPMT_PUBLIC pub = {0};

	if (!p)
		return 0;
	p += 5;
	q = memchr(p, '"', rt_len - (size_t)(p - (const char *)rt));
	if (!q || (l = (size_t)(q - p)) + 3 > sizeof padded)
		return 0;
	memcpy(padded, p, l);
	while (l % 4)
		padded[l++] = '=';
	if (base64_decode(BASE64_URL, padded, l, pub.unique.rsa.buffer,
			  sizeof pub.unique.rsa.buffer, &n) < 0)
		return 0;
	pub.unique.rsa.size = (uint16_t)n;
	pub.type = TPM2_ALG_RSA;
	pub.nameAlg = TPM2_ALG_SHA256;
	pub.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
			       TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH |
			       TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_SIGN_ENCRYPT;
	pub.parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
	pub.parameters.rsaDetail.scheme.scheme = TPM2_ALG_RSASSA;
	pub.parameters.rsaDetail.scheme.details.rsassa.hashAlg = TPM2_ALG_SHA256;
	pub.parameters.rsaDetail.keyBits = 2048;
	if (Tss2_MU_TPMT_PUBLIC_Marshal(&pub, out, cap, &off) != TSS2_RC_SUCCESS)
		return 0;
	return off;
}

struct vcase {
	struct vtpm_policy p;
	struct vtpm_view v;
	uint8_t ak[1024];
	char config[1024];
	char err[512];
};

/* config: NULL for none, else a format with one %s (the report's ID key digest, hex) */
static int policy(struct vcase *c, const struct ev *e, const char *config)
{
	char digest[97];

	memset(&c->p, 0, sizeof c->p);
	c->p.check = &vtpm_check_azure_sev_snp;
	c->p.at = AT_2024;
	if (config) {
		hex_encode(e->att + 0xe0, 48, digest, sizeof digest);
		snprintf(c->config, sizeof c->config, config, digest);
		c->p.config = c->config;
		c->p.config_len = strlen(c->config);
	}
	c->err[0] = 0;
	return c->p.check->policy_init(&c->p, c->err, sizeof c->err);
}

static int check(struct vcase *c, const uint8_t *info, size_t len, const uint8_t *ak, size_t ak_len)
{
	memset(&c->v, 0, sizeof c->v);
	c->v.instance_info = info;
	c->v.instance_info_len = len;
	c->v.ak_pub = ak;
	c->v.ak_len = ak_len;
	c->err[0] = 0;
	return c->p.check->trusted_key(&c->p, &c->v, c->err, sizeof c->err);
}

#define EQUAL                                                                                \
	"{\"measurements\":{},\"bootloaderVersion\":2,\"teeVersion\":0,\"snpVersion\":6,"    \
	"\"microcodeVersion\":93,\"firmwareSignerConfig\":{\"acceptedKeyDigests\":[\"%s\"]," \
	"\"enforcementPolicy\":\"Equal\"}}"

TEST(azure_snp_recorded_evidence_accepted_by_policy)
{
	static uint8_t info[65536];
	static struct vcase c;
	struct ev e;
	size_t len, akl;

	CHECK(load(&e) == 0);
	CHECK(info_of(&e, info, sizeof info, &len) == 0);
	CHECK((akl = ak_pub_of(e.rt, e.rt_len, c.ak, sizeof c.ak)) > 0);
	/* Equal with the report's digest listed, the recorded TCB as the minimum */
	CHECK(policy(&c, &e, EQUAL) == 0);
	CHECK(check(&c, info, len, c.ak, akl) == 0);
	if (c.err[0])
		fprintf(stderr, "refused: %s\n", c.err);
	c.p.check->policy_free(&c.p);
	/* a minimum above the report's TCB is refused */
	CHECK(policy(&c, &e,
		     "{\"snpVersion\":7,\"firmwareSignerConfig\":{\"acceptedKeyDigests\":"
		     "[\"%s\"],\"enforcementPolicy\":\"equal\"}}") == 0);
	CHECK(check(&c, info, len, c.ak, akl) < 0);
	c.p.check->policy_free(&c.p);
	/* Constellation's defaults (DefaultList, MAAFallback): this report's digest is not
	 * Azure's current one, and there is no MAA URL to fall back to: refused, saying so */
	CHECK(policy(&c, &e, NULL) == 0);
	CHECK(check(&c, info, len, c.ak, akl) < 0);
	CHECK(strstr(c.err, "MAAFallback") != NULL);
	c.p.check->policy_free(&c.p);
	/* Equal with the default list: refused */
	CHECK(policy(&c, &e, "{\"firmwareSignerConfig\":{\"enforcementPolicy\":\"Equal\"}}") == 0);
	CHECK(check(&c, info, len, c.ak, akl) < 0);
	CHECK(strstr(c.err, "ID") != NULL || strstr(c.err, "id") != NULL);
	c.p.check->policy_free(&c.p);
	/* WarnOnly: accepted (with a warning) */
	CHECK(policy(&c, &e, "{\"firmwareSignerConfig\":{\"enforcementPolicy\":\"WarnOnly\"}}") ==
	      0);
	CHECK(check(&c, info, len, c.ak, akl) == 0);
	c.p.check->policy_free(&c.p);
	/* bad configurations are refused at policy_init */
	CHECK(policy(&c, &e, "{\"snpVersion\":\"latest\"}") < 0);
	CHECK(policy(&c, &e, "{\"firmwareSignerConfig\":{\"enforcementPolicy\":\"sometimes\"}}") <
	      0);
	CHECK(policy(&c, &e, "{\"firmwareSignerConfig\":{\"acceptedKeyDigests\":[\"00\"]}}") < 0);
	CHECK(policy(&c, &e, "{\"amdRootKey\":\"not a certificate\"}") < 0);
	unload(&e);
}

/* InstanceInfo of e with the MAA token tok (Go's json.Marshal of the string: the token's
 * characters need no escaping) */
static int info_with_token(const struct ev *e, const char *tok, uint8_t *out, size_t cap,
			   size_t *len)
{
	static const char tail[] = "\",\"MAAToken\":\"\"},\"GCP\":null}";
	size_t n;

	if (info_of(e, out, cap, len) < 0 || *len < sizeof tail - 1 ||
	    memcmp(out + *len - (sizeof tail - 1), tail, sizeof tail - 1) ||
	    (n = *len - (sizeof tail - 1)) + strlen(tok) + sizeof tail > cap)
		return -1;
	*len = n + (size_t)snprintf((char *)out + n, cap - n,
				    "\",\"MAAToken\":\"%s\"},\"GCP\":null}", tok);
	return 0;
}

TEST(azure_snp_unlisted_id_key_accepted_by_an_maa_token_for_this_nonce)
{
	static uint8_t info[65536];
	static struct vcase c;
	struct maa_fake f = {0};
	struct ev e;
	size_t len, akl;
	char cfg[256], *tok;
	static const uint8_t zero[32];
	char zero_nonce[64];

	CHECK(load(&e) == 0);
	CHECK((akl = ak_pub_of(e.rt, e.rt_len, c.ak, sizeof c.ak)) > 0);
	CHECK(maa_fake_start(&f) == 0);
	/* the default list and policy (MAAFallback), the MAA of the configuration */
	snprintf(cfg, sizeof cfg, "{\"firmwareSignerConfig\":{\"maaURL\":\"%s\"}}", f.base);
	CHECK(policy(&c, &e, cfg) == 0);
	/* check() validates for extra data of 32 zero bytes */
	CHECK((tok = maa_fake_token(
		   &f, "{\"nonce\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}")) != NULL);
	base64_encode(BASE64_STD, zero, sizeof zero, zero_nonce, sizeof zero_nonce);
	CHECK(!strcmp(zero_nonce, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="));
	CHECK(tok && info_with_token(&e, tok, info, sizeof info, &len) == 0);
	CHECK(check(&c, info, len, c.ak, akl) == 0);
	if (c.err[0])
		fprintf(stderr, "refused: %s\n", c.err);
	free(tok);
	/* a token for another handshake's nonce */
	CHECK((tok = maa_fake_token(
		   &f, "{\"nonce\":\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}")) != NULL);
	CHECK(tok && info_with_token(&e, tok, info, sizeof info, &len) == 0);
	CHECK(check(&c, info, len, c.ak, akl) == -EKEYREJECTED);
	CHECK(strstr(c.err, "nonce") != NULL);
	free(tok);
	/* no token in the document */
	CHECK(info_of(&e, info, sizeof info, &len) == 0);
	CHECK(check(&c, info, len, c.ak, akl) < 0);
	CHECK(strstr(c.err, "MAA token") != NULL);
	c.p.check->policy_free(&c.p);
	/* Equal: the token does not help an unlisted digest */
	snprintf(cfg, sizeof cfg,
		 "{\"firmwareSignerConfig\":{\"maaURL\":\"%s\",\"enforcementPolicy\":\"Equal\"}}",
		 f.base);
	CHECK(policy(&c, &e, cfg) == 0);
	CHECK((tok = maa_fake_token(
		   &f, "{\"nonce\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}")) != NULL);
	CHECK(tok && info_with_token(&e, tok, info, sizeof info, &len) == 0);
	CHECK(check(&c, info, len, c.ak, akl) < 0);
	free(tok);
	c.p.check->policy_free(&c.p);
	CHECK(policy(&c, &e, "{\"firmwareSignerConfig\":{\"maaURL\":7}}") < 0);
	maa_fake_stop(&f);
	unload(&e);
}

/* Builds InstanceInfo from e after mutate changed it, and checks it under EQUAL. */
static int refused_after(struct ev *e, struct vcase *c, const uint8_t *ak, size_t akl)
{
	static uint8_t info[65536];
	size_t len;
	int r;

	if (info_of(e, info, sizeof info, &len) < 0)
		return 1; /* the issuer refused it */
	if (policy(c, e, EQUAL) < 0)
		return 0;
	r = check(c, info, len, ak, akl);
	c->p.check->policy_free(&c->p);
	return r < 0;
}

TEST(azure_snp_changed_report_vcek_runtime_data_or_ak_refused)
{
	static struct vcase c;
	struct ev e;
	size_t akl, n = 0, bad = 0;
	uint8_t ak2[1024];

	CHECK(load(&e) == 0);
	CHECK((akl = ak_pub_of(e.rt, e.rt_len, c.ak, sizeof c.ak)) > 0);
	CHECK(!refused_after(&e, &c, c.ak, akl));
	/* the report: signed bytes and signature, every 13th byte (every bit of every byte is
	 * test_snp's) */
	for (size_t i = 0; i < 0x2a0 + 144; i += 13, n++) {
		e.hcl[HCL_HW_OFFSET + i] ^= 0x01;
		if (!refused_after(&e, &c, c.ak, akl)) {
			if (!bad++)
				fprintf(stderr, "report byte %zu changed: accepted\n", i);
		}
		e.hcl[HCL_HW_OFFSET + i] ^= 0x01;
	}
	CHECK(bad == 0 && n > 60);
	/* the runtime data: every byte (a change keeps it JSON or not: both refused) */
	for (size_t i = 0; i < e.rt_len; i++) {
		uint8_t *b = e.hcl + HCL_RUNTIME_OFFSET + i;

		*b ^= 0x02;
		if (*b && !refused_after(&e, &c, c.ak, akl) && !bad++)
			fprintf(stderr, "runtime data byte %zu changed: accepted\n", i);
		*b ^= 0x02;
	}
	CHECK(bad == 0);
	/* the VCEK: bytes of its PEM body (base64 letters stay letters: A<->B etc.) */
	for (size_t i = 40; i + 40 < e.vcek_len; i += 23) {
		char *s = (char *)e.vcek + i;
		char o = *s;

		if (*s == '\n' || *s == '=' || *s == '+' || *s == '/')
			continue;
		*s = *s == 'A' ? 'B' : 'A';
		CHECK(thim_of(&e) == 0);
		if (!refused_after(&e, &c, c.ak, akl) && !bad++)
			fprintf(stderr, "VCEK PEM byte %zu changed: accepted\n", i);
		*s = o;
	}
	CHECK(thim_of(&e) == 0);
	CHECK(bad == 0);
	CHECK(!refused_after(&e, &c, c.ak, akl));
	/* the AK: one byte of its modulus, or its exponent */
	memcpy(ak2, c.ak, akl);
	ak2[akl - 100] ^= 0x80;
	CHECK(refused_after(&e, &c, ak2, akl));
	CHECK(strstr(c.err, "modulus") != NULL);
	unload(&e);
}

#define S(lit) lit, strlen(lit)

TEST(azure_snp_thim_and_tags_parsed_bounded)
{
	struct azure_thim t;
	char err[200], url[64];
	static char big[AZURE_THIM_MAX + 2];
	const char *tags = "{\"compute\":{\"tagsList\":[{\"name\":\"constellation-role\",\"value\":"
			   "\"worker\"},{\"name\":\"constellation-maa-url\",\"value\":"
			   "\"https://maa.example\"}]}}";

	/* field names as Go matches them: case-insensitively */
	CHECK(azure_thim_parse(S("{\"VCEKCERT\":\"a\",\"certificatechain\":\"b\"}"), &t, err,
			       sizeof err) == 0);
	CHECK(t.vcek_len == 1 && t.vcek[0] == 'a' && t.chain_len == 1);
	azure_thim_free(&t);
	CHECK(azure_thim_parse(S("{\"vcekCert\":\"a\"}"), &t, err, sizeof err) < 0);
	CHECK(strstr(err, "certificateChain") != NULL);
	CHECK(azure_thim_parse(S("{\"vcekCert\":\"\",\"certificateChain\":\"b\"}"), &t, err,
			       sizeof err) < 0);
	CHECK(azure_thim_parse(S("[1]"), &t, err, sizeof err) < 0);
	CHECK(azure_thim_parse(S("{\"vcekCert\":\"a\","), &t, err, sizeof err) < 0);
	memset(big, ' ', sizeof big);
	big[0] = '{';
	big[sizeof big - 1] = '}';
	CHECK(azure_thim_parse(big, sizeof big, &t, err, sizeof err) < 0);
	CHECK(azure_imds_maa_url(tags, strlen(tags), url, sizeof url, err, sizeof err) == 0);
	CHECK(!strcmp(url, "https://maa.example"));
	CHECK(azure_imds_maa_url(tags, strlen(tags), url, 8, err, sizeof err) < 0);
	CHECK(azure_imds_maa_url(S("{\"compute\":{}}"), url, sizeof url, err, sizeof err) == 0);
	CHECK(url[0] == 0);
	CHECK(azure_imds_maa_url(S("{\"compute\":"), url, sizeof url, err, sizeof err) < 0);
}

/* ---- the issuer against the fake IMDS (tests/cloud/fake_cloud.py --csp azure) ---- */

static int fake_start_vectors(struct imds_fake *f, int thim, const char *maa)
{
	const char *v = getenv("CONSTEL_VECTORS");
	char vcek[512], chain[512];

	if (!v || !*v)
		v = "../shared/vectors";
	snprintf(vcek, sizeof vcek, "%s/snp-azure/vcek.pem", v);
	snprintf(chain, sizeof chain, "%s/snp-azure/certchain.pem", v);
	return imds_fake_start(f, thim ? vcek : NULL, thim ? chain : NULL, maa);
}

TEST(azure_snp_issuer_reads_thim_and_the_maa_tag_from_imds)
{
	static uint8_t info[65536], want[65536];
	struct ev e;
	struct imds_fake f;
	size_t len, wlen;
	char err[512];

	CHECK(load(&e) == 0);
	CHECK(info_of(&e, want, sizeof want, &wlen) == 0);
	/* THIM and no tag: the document's InstanceInfo */
	CHECK(fake_start_vectors(&f, 1, NULL) == 0);
	CHECK(azure_snp_info_fetch(f.base, e.hcl, sizeof e.hcl, info, sizeof info, &len, err,
				   sizeof err) == 0);
	CHECK(len == wlen && !memcmp(info, want, len));
	imds_fake_stop(&f);
	/* the tag set: refused, naming MAA */
	CHECK(fake_start_vectors(&f, 1, "https://maa.example") == 0);
	CHECK(azure_snp_info_fetch(f.base, e.hcl, sizeof e.hcl, info, sizeof info, &len, err,
				   sizeof err) < 0);
	CHECK(strstr(err, "MAA is not supported") != NULL);
	imds_fake_stop(&f);
	/* no THIM (a VM that is not confidential): refused with the status */
	CHECK(fake_start_vectors(&f, 0, NULL) == 0);
	CHECK(azure_snp_info_fetch(f.base, e.hcl, sizeof e.hcl, info, sizeof info, &len, err,
				   sizeof err) < 0);
	CHECK(fake_has(err, "status 404"));
	imds_fake_stop(&f);
	/* nothing listening */
	CHECK(azure_snp_info_fetch("http://127.0.0.1:1", e.hcl, sizeof e.hcl, info, sizeof info,
				   &len, err, sizeof err) < 0);
	unload(&e);
}
