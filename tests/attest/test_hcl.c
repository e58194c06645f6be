/* Azure's HCL report reader (attest/hcl.c) on real evidence: the recorded Azure TDX HCL
 * report (NV 0x01400001, 2600 bytes) and an SNP HCL report assembled from the recorded Azure
 * SNP report, its IGVM request header and runtime data; the REPORT_DATA binding, the AK in
 * keys[0], and their refusals. Evidence from ${CONSTEL_VECTORS:-../shared/vectors}; missing
 * evidence is a failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/hcl.h"
#include "attest/snp.h"
#include "base/base.h"
#include "harness.h"

/* keys[0].n of the runtime data, decoded (the test's stand-in for the vTPM's AK) */
static size_t ak_modulus(const struct hcl_report *h, uint8_t *out, size_t cap)
{
	const char *p = memmem(h->runtime, h->runtime_len, "\"n\":\"", 5), *q;
	char padded[1400];
	size_t n, l;

	if (!p)
		return 0;
	p += 5;
	q = memchr(p, '"', h->runtime_len - (size_t)(p - (const char *)h->runtime));
	if (!q || (l = (size_t)(q - p)) + 3 > sizeof padded)
		return 0;
	memcpy(padded, p, l);
	while (l % 4)
		padded[l++] = '=';
	if (base64_decode(BASE64_URL, padded, l, out, cap, &n) < 0)
		return 0;
	return n;
}

TEST(hcl_azure_tdx_report_parsed_and_bound)
{
	size_t len, nl;
	uint8_t *b = harness_vector("tdx-azure/hclreport.bin", &len), n[512];
	struct hcl_report h;
	char err[200] = "";

	CHECK(b && len == 2600);
	if (hcl_report_parse(b, len, &h, err, sizeof err))
		return harness_fail(__FILE__, __LINE__, "%s", err);
	CHECK(h.version == 2 && h.report_size == 2436 && h.report_type == HCL_TYPE_TDX);
	CHECK(h.hw == b + 0x20 && h.hw_len == 1024 && h.hash_type == 1);
	CHECK(h.runtime == b + 0x4d4 && h.runtime_len == 1200);
	CHECK(hcl_check_binding(&h, err, sizeof err) == 0);
	nl = ak_modulus(&h, n, sizeof n);
	CHECK(nl == 256);
	CHECK(hcl_check_ak(h.runtime, h.runtime_len, n, nl, 0, err, sizeof err) == 0);
	CHECK(hcl_check_ak(h.runtime, h.runtime_len, n, nl, 65537, err, sizeof err) == 0);
	CHECK(hcl_check_ak(h.runtime, h.runtime_len, n, nl, 3, err, sizeof err) < 0);
	CHECK(strstr(err, "exponent"));
	n[100] ^= 1;
	CHECK(hcl_check_ak(h.runtime, h.runtime_len, n, nl, 0, err, sizeof err) < 0);
	CHECK(strstr(err, "modulus"));
	/* one byte of the runtime data, of REPORT_DATA */
	b[0x4d4 + 600] ^= 0x20;
	CHECK(hcl_report_parse(b, len, &h, err, sizeof err) == 0);
	CHECK(hcl_check_binding(&h, err, sizeof err) < 0);
	b[0x4d4 + 600] ^= 0x20;
	b[0x20 + 0x80 + 31] ^= 1;
	CHECK(hcl_report_parse(b, len, &h, err, sizeof err) == 0);
	CHECK(hcl_check_binding(&h, err, sizeof err) < 0);
	b[0x20 + 0x80 + 31] ^= 1;
	/* malformed */
	CHECK(hcl_report_parse(b, 0x4d3, &h, err, sizeof err) < 0);
	CHECK(hcl_report_parse(b, 0x4d4 + 1199, &h, err, sizeof err) < 0);
	b[0] = 'X';
	CHECK(hcl_report_parse(b, len, &h, err, sizeof err) < 0);
	b[0] = 'H';
	b[0x4c0 + 8] = 3;
	CHECK(hcl_report_parse(b, len, &h, err, sizeof err) < 0);
	free(b);
}

TEST(hcl_azure_snp_report_assembled_parsed_bound_and_verified)
{
	size_t al, rl, dl, nl;
	uint8_t *a = harness_vector("snp-azure/attestation.bin", &al),
		*rt = harness_vector("snp-azure/runtimedata.bin", &rl);
	uint8_t *vcek = harness_vector("snp-azure/vcek.cert", &dl), b[4096] = {0}, n[512];
	struct hcl_report h;
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p;
	char err[200] = "";
	uint32_t size;

	CHECK(a && rt && vcek && al == 1204 && rl == 584);
	size = 0x4d4 + (uint32_t)rl;
	memcpy(b, "HCLA\2\0\0\0", 8);
	memcpy(b + 8, &size, 4); /* little-endian host */
	memcpy(b + 0x20, a, al); /* report, then the IGVM request header */
	memcpy(b + 0x4d4, rt, rl);
	if (hcl_report_parse(b, size + 100, &h, err, sizeof err))
		return harness_fail(__FILE__, __LINE__, "%s", err);
	CHECK(h.report_type == HCL_TYPE_SNP && h.hw_len == 1184 && h.runtime_len == 584);
	CHECK(hcl_check_binding(&h, err, sizeof err) == 0);
	CHECK(hcl_check_runtime_hash(rt, rl, a + 0x50, err, sizeof err) == 0);
	nl = ak_modulus(&h, n, sizeof n);
	CHECK(nl == 256 && hcl_check_ak(h.runtime, h.runtime_len, n, nl, 0, err, sizeof err) == 0);
	snp_verify_opts_init(&o);
	o.at = 1704067200;
	CHECK(snp_verify(h.hw, h.hw_len, vcek, dl, &o, &r, &p, err, sizeof err) == 0);
	/* a runtime data that is not JSON, keys[0] that is not HCLAkPub */
	CHECK(hcl_check_ak((const uint8_t *)"{\"keys\":[]}", 11, n, nl, 0, err, sizeof err) < 0);
	CHECK(hcl_check_ak((const uint8_t *)"{\"keys\":[{\"kid\":\"HCLEkPub\",\"kty\":\"RSA\"}]}",
			   41, n, nl, 0, err, sizeof err) < 0);
	CHECK(hcl_check_ak((const uint8_t *)"{\"keys\"", 7, n, nl, 0, err, sizeof err) < 0);
	free(a);
	free(rt);
	free(vcek);
}
