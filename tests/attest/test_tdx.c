/* The TDX quote v4 verifier (attest/tdx_quote.c, tdx_verify.c) on a production quote from an
 * Intel Sapphire Rapids (E4) platform: tdx/tdx_prod_quote_SPR_E4.dat from
 * ${CONSTEL_VECTORS:-../shared/vectors} (tests run from the repository root); missing
 * evidence is a failure, not a skip. Its PCK certificate is valid 2022-09-20 to 2029-09-20;
 * go-tdx-guest checks it at 2023-07-01T01:00:00Z, and so do these tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "attest/tdx.h"
#include "attest/x509.h"
#include "base/base.h"
#include "harness.h"

#define QUOTE "tdx/tdx_prod_quote_SPR_E4.dat"
#define AT    1688173200 /* 2023-07-01T01:00:00Z */

static int verify(const uint8_t *b, size_t len, time_t at, char *err, size_t errlen)
{
	struct tdx_verify_opts o;
	struct tdx_quote q;

	tdx_verify_opts_init(&o);
	o.at = at;
	return tdx_verify(b, len, &o, &q, err, errlen);
}

TEST(tdx_prod_quote_verifies)
{
	size_t len;
	uint8_t *b = harness_vector(QUOTE, &len);
	struct tdx_verify_opts o;
	struct tdx_quote q;
	char err[256] = "";
	static const uint8_t intel_qe_vendor[16] = {0x93, 0x9a, 0x72, 0x33, 0xf7, 0x9c, 0x4c, 0xa9,
						    0x94, 0x0a, 0x0d, 0xb3, 0x95, 0x7f, 0x06, 0x07};

	CHECK(b);
	tdx_verify_opts_init(&o);
	o.at = AT;
	if (tdx_verify(b, len, &o, &q, err, sizeof err) < 0)
		return harness_fail(__FILE__, __LINE__, "refused: %s", err);
	CHECK(q.header.version == 4 && q.header.ak_type == 2 && q.header.tee_type == 0x81);
	CHECK_BYTES(q.header.qe_vendor_id, intel_qe_vendor, 16);
	/* the quote ends at 4935; go-tdx-guest's file has 39 unsigned bytes after it */
	CHECK(q.len == 4935 && len == 4974);
	CHECK(q.qe_auth_len == 32 && q.pck_pem_len == 3677);
	CHECK_BYTES(q.body.report_data, b + 48 + 520, 64);
	CHECK_BYTES(q.body.mr_td, b + 48 + 136, 48);
	CHECK_BYTES(q.body.rtmr[3], b + 48 + 328 + 3 * 48, 48);
	CHECK_BYTES(q.body.xfam, b + 48 + 128, 8);
	/* Intel's TDX QE: ISV product ID 2 */
	CHECK(q.qe_report.isv_prod_id == 2);
	free(b);
}

TEST(tdx_builtin_root_is_intels)
{
	static const char want[] =
	    "44a0196b2b99f889b8e149e95b807a350e7424964399e885a7cbb8ccfab674d3";
	uint8_t h[32], w[32];
	br_sha256_context sc;
	size_t len, dl;
	uint8_t *pem = harness_vector("tdx/pckcrl-issuer-chain.pem", &len), der[2048];
	const char *second;

	CHECK(pem);
	br_sha256_init(&sc);
	br_sha256_update(&sc, tdx_intel_sgx_root, tdx_intel_sgx_root_len);
	br_sha256_out(&sc, h);
	CHECK(harness_unhex(want, w, sizeof w) == 32);
	CHECK_BYTES(h, w, 32);
	/* the root PCS names in its issuer chains (the second certificate) */
	second = strstr(strstr((char *)pem, "-----END CERTIFICATE-----") + 1, "-----BEGIN");
	CHECK(second);
	CHECK(pem_decode(second, len - (size_t)((uint8_t *)second - pem), "CERTIFICATE", der,
			 sizeof der, &dl) == 0);
	CHECK(dl == tdx_intel_sgx_root_len);
	CHECK_BYTES(der, tdx_intel_sgx_root, dl);
	free(pem);
}

/* Every single-bit flip in [from, to) refused. */
static int flips_refused(uint8_t *b, size_t len, size_t from, size_t to, const char *what)
{
	char err[256];

	for (size_t i = from; i < to; i++)
		for (int k = 0; k < 8; k++) {
			b[i] ^= (uint8_t)(1 << k);
			if (verify(b, len, AT, err, sizeof err) == 0) {
				harness_fail(__FILE__, __LINE__,
					     "%s: byte %zu bit %d flipped: accepted", what, i, k);
				return 0;
			}
			b[i] ^= (uint8_t)(1 << k);
		}
	if (verify(b, len, AT, err, sizeof err) < 0) {
		harness_fail(__FILE__, __LINE__, "%s: unflipped refused: %s", what, err);
		return 0;
	}
	return 1;
}

TEST(tdx_every_flip_of_header_body_and_signature_refused)
{
	size_t len;
	uint8_t *b = harness_vector(QUOTE, &len);

	CHECK(b);
	CHECK(flips_refused(b, len, 0, TDX_SIGNED_LEN, "header/body"));
	/* the length, the signature r || s, the attestation key */
	CHECK(flips_refused(b, len, TDX_SIGNED_LEN, TDX_SIGNED_LEN + 4 + 128, "signature"));
	free(b);
}

TEST(tdx_every_flip_of_qe_report_and_its_signature_refused)
{
	size_t len, qe = TDX_SIGNED_LEN + 4 + 128 + 6;
	uint8_t *b = harness_vector(QUOTE, &len);

	CHECK(b);
	/* the certification data header, the QE report, its signature, the QE auth data and
	 * the PCK chain's header */
	CHECK(flips_refused(b, len, qe - 6, qe + TDX_QE_REPORT_LEN + 64 + 2 + 32 + 6, "qe report"));
	free(b);
}

static int refused_with(uint8_t *b, size_t len, time_t at, const char *want)
{
	char err[256] = "";

	if (verify(b, len, at, err, sizeof err) == 0) {
		harness_fail(__FILE__, __LINE__, "accepted, wanted \"%s\"", want);
		return 0;
	}
	if (!strstr(err, want)) {
		harness_fail(__FILE__, __LINE__, "refused with \"%s\", wanted \"%s\"", err, want);
		return 0;
	}
	return 1;
}

TEST(tdx_refusals_name_the_check)
{
	size_t len;
	uint8_t *b = harness_vector(QUOTE, &len);
	struct tdx_verify_opts o;
	struct tdx_quote q;
	char err[256];

	CHECK(b);
	/* validity: before the PCK (2022-09-20) and after it (2029-09-20) */
	CHECK(refused_with(b, len, 1640995200 /* 2022-01-01 */,
			   "the PCK certificate is not valid at the time"));
	CHECK(refused_with(b, len, 1893456000 /* 2030-01-01 */,
			   "the PCK certificate is not valid at the time"));
	/* the header */
	b[0] = 3;
	CHECK(refused_with(b, len, AT, "header version 3, not 4"));
	b[0] = 4;
	b[2] = 3;
	CHECK(refused_with(b, len, AT, "attestation key type 3"));
	b[2] = 2;
	b[4] = 0;
	CHECK(refused_with(b, len, AT, "TEE type 0x0, not 0x81"));
	b[4] = 0x81;
	/* a signature of the right form that is not the quote's */
	b[TDX_SIGNED_LEN + 4 + 5] ^= 1;
	CHECK(refused_with(b, len, AT, "the quote's ECDSA P-256 signature does not verify"));
	b[TDX_SIGNED_LEN + 4 + 5] ^= 1;
	/* the QE report */
	b[TDX_SIGNED_LEN + 4 + 128 + 6 + 100] ^= 1;
	CHECK(refused_with(b, len, AT, "qe report: its signature does not verify"));
	b[TDX_SIGNED_LEN + 4 + 128 + 6 + 100] ^= 1;
	/* the QE auth data */
	b[TDX_SIGNED_LEN + 4 + 128 + 6 + 384 + 64 + 2] ^= 1;
	CHECK(refused_with(b, len, AT, "qe report: its report data is not SHA-256"));
	b[TDX_SIGNED_LEN + 4 + 128 + 6 + 384 + 64 + 2] ^= 1;
	/* every truncation refused, with a length named */
	for (size_t n = 0; n < 4935; n++)
		if (verify(b, n, AT, err, sizeof err) == 0)
			return harness_fail(__FILE__, __LINE__, "truncated to %zu: accepted", n);
	CHECK(refused_with(b, 600, AT, "shorter than header and body"));
	CHECK(refused_with(b, 700, AT, "signature data of 4299 bytes, only 64 follow"));
	/* another root */
	tdx_verify_opts_init(&o);
	o.at = AT;
	o.root = b; /* not a certificate */
	o.root_len = 100;
	CHECK(tdx_verify(b, len, &o, &q, err, sizeof err) < 0);
	CHECK(strstr(err, "the trusted root is not"));
	CHECK(verify(b, len, AT, err, sizeof err) == 0);
	free(b);
}

TEST(tdx_quote_parse_bounds)
{
	uint8_t q[TDX_SIGNED_LEN + 4 + 128 + 6 + 384 + 64 + 2 + 6 + 1] = {0};
	struct tdx_quote tq;
	char err[256];
	size_t n = sizeof q, o = TDX_SIGNED_LEN;
	uint32_t sd = (uint32_t)(n - o - 4), cd = sd - 128 - 6;

	q[0] = 4;
	q[2] = 2;
	q[4] = 0x81;
	q[o] = (uint8_t)sd;
	q[o + 1] = (uint8_t)(sd >> 8);
	o += 4 + 128;
	q[o] = 6;
	q[o + 2] = (uint8_t)cd;
	q[o + 3] = (uint8_t)(cd >> 8);
	o += 6 + 384 + 64;
	o += 2; /* no auth data */
	q[o] = 5;
	q[o + 2] = 1;
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == 0);
	CHECK(tq.pck_pem_len == 1 && tq.qe_auth_len == 0 && tq.len == n);
	/* an auth data length past the end */
	q[o - 2] = 9;
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "QE authentication data of 9 bytes, only 7 left"));
	q[o - 2] = 0;
	/* a PCK chain length that is not what is left */
	q[o + 2] = 2;
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "PCK chain of 2 bytes, the certification data leaves 1"));
	q[o + 2] = 1;
	q[o] = 1;
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "QE certification data type 1, not 5"));
	q[o] = 5;
	/* the outer certification data length */
	q[TDX_SIGNED_LEN + 4 + 128 + 2] ^= 1;
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "certification data of"));
	q[TDX_SIGNED_LEN + 4 + 128 + 2] ^= 1;
	/* a signature data length of 4 GiB */
	memset(q + TDX_SIGNED_LEN, 0xff, 4);
	CHECK(tdx_quote_parse(q, n, &tq, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "signature data of 4294967295 bytes"));
	/* too large */
	CHECK(tdx_quote_parse(q, TDX_QUOTE_MAX + 1, &tq, err, sizeof err) == -EINVAL);
}

/* The PCK chain: every single-bit flip of each certificate's DER (written back as the same
 * PEM, 64-character lines as Intel's) refused. */
TEST(tdx_every_flip_of_the_pck_chain_refused)
{
	size_t len, off, dl, pl;
	uint8_t *b = harness_vector(QUOTE, &len), der[2048];
	char pem[4096], err[256];
	struct tdx_verify_opts o;
	struct tdx_quote q;
	int certs = 0;

	CHECK(b);
	tdx_verify_opts_init(&o);
	o.at = AT;
	CHECK(tdx_verify(b, len, &o, &q, err, sizeof err) == 0);
	off = (size_t)(q.pck_pem - b);
	for (char *s = (char *)b + off; (s = strstr(s, "-----BEGIN")); s++, certs++) {
		int n;

		CHECK(pem_decode(s, len - (size_t)((uint8_t *)s - b), "CERTIFICATE", der,
				 sizeof der, &dl) == 0);
		n = pem_encode("CERTIFICATE", der, dl, pem, sizeof pem);
		CHECK(n > 0);
		pl = (size_t)n;
		/* the same text: a flip of the DER is a flip of this PEM block */
		CHECK(!memcmp(s, pem, pl));
		for (size_t i = 0; i < dl; i++)
			for (int k = 0; k < 8; k++) {
				der[i] ^= (uint8_t)(1 << k);
				CHECK(pem_encode("CERTIFICATE", der, dl, pem, sizeof pem) == n);
				memcpy(s, pem, pl);
				if (tdx_verify(b, len, &o, &q, err, sizeof err) == 0)
					return harness_fail(__FILE__, __LINE__,
							    "certificate %d byte %zu bit %d "
							    "flipped: accepted",
							    certs + 1, i, k);
				der[i] ^= (uint8_t)(1 << k);
			}
		CHECK(pem_encode("CERTIFICATE", der, dl, pem, sizeof pem) == n);
		memcpy(s, pem, pl);
	}
	CHECK(certs == 3);
	CHECK(tdx_verify(b, len, &o, &q, err, sizeof err) == 0);
	free(b);
}

/* The CRLs of the recorded collateral (tdx/pckcrl: thisUpdate 2023-06-08, nextUpdate
 * 2023-07-08 07:27:52Z; tdx/rootcrl.der: 2023-04-03 to 2024-04-02). */
static int verify_crls(uint8_t *b, size_t len, uint8_t *pck, size_t pl, uint8_t *root, size_t rl,
		       time_t at, char *err, size_t errlen)
{
	struct tdx_verify_opts o;
	struct tdx_quote q;

	tdx_verify_opts_init(&o);
	o.at = at;
	o.pck_crl = pck;
	o.pck_crl_len = pl;
	o.root_crl = root;
	o.root_crl_len = rl;
	return tdx_verify(b, len, &o, &q, err, errlen);
}

TEST(tdx_crls_checked)
{
	size_t len, pl, rl;
	uint8_t *b = harness_vector(QUOTE, &len), *pck = harness_vector("tdx/pckcrl", &pl),
		*root = harness_vector("tdx/rootcrl.der", &rl);
	char err[256] = "";

	CHECK(b && pck && root);
	if (verify_crls(b, len, pck, pl, root, rl, AT, err, sizeof err) < 0)
		return harness_fail(__FILE__, __LINE__, "refused: %s", err);
	/* after the PCK CRL's nextUpdate, before its thisUpdate */
	CHECK(verify_crls(b, len, pck, pl, root, rl, 1688860800 /* 2023-07-09 */, err, sizeof err) <
	      0);
	CHECK(strstr(err, "the PCK CRL's nextUpdate has passed"));
	CHECK(verify_crls(b, len, pck, pl, root, rl, 1686009600 /* 2023-06-06 */, err, sizeof err) <
	      0);
	CHECK(strstr(err, "the PCK CRL's thisUpdate is after"));
	/* the two swapped */
	CHECK(verify_crls(b, len, root, rl, pck, pl, AT, err, sizeof err) < 0);
	CHECK(strstr(err, "the root CA CRL is not issued by"));
	/* every byte of either changed */
	for (size_t i = 0; i < pl; i++) {
		pck[i] ^= 0x01;
		if (verify_crls(b, len, pck, pl, root, rl, AT, err, sizeof err) == 0)
			return harness_fail(__FILE__, __LINE__,
					    "PCK CRL byte %zu changed: accepted", i);
		pck[i] ^= 0x01;
	}
	for (size_t i = 0; i < rl; i++) {
		root[i] ^= 0x80;
		if (verify_crls(b, len, pck, pl, root, rl, AT, err, sizeof err) == 0)
			return harness_fail(__FILE__, __LINE__,
					    "root CA CRL byte %zu changed: accepted", i);
		root[i] ^= 0x80;
	}
	CHECK(verify_crls(b, len, pck, pl, root, rl, AT, err, sizeof err) == 0);
	free(b);
	free(pck);
	free(root);
}

TEST(tdx_crl_revoked_serials)
{
	size_t pl;
	uint8_t *pck = harness_vector("tdx/pckcrl", &pl), s1[20], s2[20];
	struct x509_crl crl;
	struct der_in listed = {s1, sizeof s1}, ours = {s2, sizeof s2};

	CHECK(pck);
	CHECK(x509_crl_parse(pck, pl, &crl) == 0);
	/* the first of its 44 entries, and the production quote's PCK */
	CHECK(harness_unhex("6fc34e5023e728923435d61aa4b83c618166ad35", s1, sizeof s1) == 20);
	CHECK(harness_unhex("bba6c175d838b8df3900cc3411f24f512d104102", s2, sizeof s2) == 20);
	CHECK(x509_crl_revokes(&crl, &listed));
	CHECK(!x509_crl_revokes(&crl, &ours));
	s1[19] ^= 1;
	CHECK(!x509_crl_revokes(&crl, &listed));
	free(pck);
}

/* The recorded QE identity (tdx/sample_qeIdentity_response: TD_QE v2, issued 2023-06-08,
 * nextUpdate 2023-07-08T07:24:59Z, ISVSVN 4 UpToDate) with its PCS issuer chain. */
static int verify_qe_id(uint8_t *b, size_t len, const char *id, size_t il, const char *chain,
			size_t cl, time_t at, char *err, size_t errlen, char *status)
{
	struct tdx_verify_opts o;
	struct tdx_quote q;
	int r;

	tdx_verify_opts_init(&o);
	o.at = at;
	o.qe_identity = id;
	o.qe_identity_len = il;
	o.qe_identity_chain = chain;
	o.qe_identity_chain_len = cl;
	r = tdx_verify(b, len, &o, &q, err, errlen);
	if (status)
		strcpy(status, q.qe_tcb_status);
	return r;
}

TEST(tdx_qe_identity_checked)
{
	size_t len, il, cl, pl;
	uint8_t *b = harness_vector(QUOTE, &len),
		*id = harness_vector("tdx/sample_qeIdentity_response", &il),
		*chain = harness_vector("tdx/qeidentity-issuer-chain.pem", &cl),
		*pck = harness_vector("tdx/pckcrl-issuer-chain.pem", &pl);
	char err[256] = "", status[32] = "";

	CHECK(b && id && chain && pck);
	if (verify_qe_id(b, len, (char *)id, il, (char *)chain, cl, AT, err, sizeof err, status) <
	    0)
		return harness_fail(__FILE__, __LINE__, "refused: %s", err);
	CHECK(!strcmp(status, "UpToDate"));
	/* after its nextUpdate */
	CHECK(verify_qe_id(b, len, (char *)id, il, (char *)chain, cl, 1688801100, err, sizeof err,
			   NULL) < 0);
	CHECK(strstr(err, "qe identity: its nextUpdate 2023-07-08T07:24:59Z has passed"));
	/* signed by another chain (the PCK CRL's: Platform CA, not TCB Signing) */
	CHECK(verify_qe_id(b, len, (char *)id, il, (char *)pck, pl, AT, err, sizeof err, NULL) < 0);
	CHECK(strstr(err, "not an Intel SGX TCB Signing certificate"));
	/* every byte changed */
	for (size_t i = 0; i < il; i++) {
		id[i] ^= 0x01;
		if (verify_qe_id(b, len, (char *)id, il, (char *)chain, cl, AT, err, sizeof err,
				 NULL) == 0)
			return harness_fail(__FILE__, __LINE__,
					    "QE identity byte %zu changed: accepted", i);
		id[i] ^= 0x01;
	}
	/* the QE's ISVSVN below the level: the QE report is signed, so the identity asks more */
	{
		char *l = strstr((char *)id, "\"isvsvn\":4");

		CHECK(l);
		l[9] = '5';
		CHECK(verify_qe_id(b, len, (char *)id, il, (char *)chain, cl, AT, err, sizeof err,
				   NULL) < 0);
		CHECK(strstr(err, "its signature does not verify"));
		l[9] = '4';
	}
	CHECK(verify_qe_id(b, len, (char *)id, il, (char *)chain, cl, AT, err, sizeof err, NULL) ==
	      0);
	free(b);
	free(id);
	free(chain);
	free(pck);
}

/* The recorded TCB info (tdx/sample_tcbInfo_response: TDX v3, FMSPC 50806f000000, nextUpdate
 * 2023-07-18T08:42:58Z) with its PCS issuer chain. Its signature, FMSPC, PCE ID and TDX
 * module hold for the production quote, but both its TCB levels ask for more than the quote's
 * platform has (docs/tdx.md), so Intel's level selection finds none: refused, saying so. */
static int verify_tcb(uint8_t *b, size_t len, const char *ti, size_t tl, const char *chain,
		      size_t cl, time_t at, char *err, size_t errlen)
{
	struct tdx_verify_opts o;
	struct tdx_quote q;

	tdx_verify_opts_init(&o);
	o.at = at;
	o.tcb_info = ti;
	o.tcb_info_len = tl;
	o.tcb_info_chain = chain;
	o.tcb_info_chain_len = cl;
	return tdx_verify(b, len, &o, &q, err, errlen);
}

TEST(tdx_tcb_info_checked)
{
	size_t len, tl, cl;
	uint8_t *b = harness_vector(QUOTE, &len),
		*ti = harness_vector("tdx/sample_tcbInfo_response", &tl),
		*chain = harness_vector("tdx/tcbinfo-issuer-chain.pem", &cl);
	char err[256] = "";
	static const char none[] =
	    "tdx: tcb info: no TCB level that the platform reaches (PCK "
	    "CPU SVN 3,3,2,2,2,1,0,2..., PCE SVN 11, TEE TCB SVN 03000400...)";

	CHECK(b && ti && chain);
	CHECK(verify_tcb(b, len, (char *)ti, tl, (char *)chain, cl, AT, err, sizeof err) < 0);
	if (strcmp(err, none))
		return harness_fail(__FILE__, __LINE__, "refused with \"%s\"", err);
	/* after its nextUpdate */
	CHECK(verify_tcb(b, len, (char *)ti, tl, (char *)chain, cl, 1689670979, err, sizeof err) <
	      0);
	CHECK(strstr(err, "tcb info: its nextUpdate 2023-07-18T08:42:58Z has passed"));
	/* every byte changed: refused before the level selection */
	for (size_t i = 0; i < tl; i++) {
		ti[i] ^= 0x01;
		if (verify_tcb(b, len, (char *)ti, tl, (char *)chain, cl, AT, err, sizeof err) ==
			0 ||
		    !strcmp(err, none))
			return harness_fail(__FILE__, __LINE__,
					    "TCB info byte %zu changed: not refused by its "
					    "signature (%s)",
					    i, err);
		ti[i] ^= 0x01;
	}
	free(b);
	free(ti);
	free(chain);
}

/* Intel's level selection on test collateral (tests/attest/tdx-test/make.py): a quote through
 * a test chain whose PCK carries SGX extensions, TCB infos signed by a test TCB signing key. */
static uint8_t *fixture(const char *name, size_t *len)
{
	char path[256];
	FILE *f;
	uint8_t *b = malloc(8192);

	snprintf(path, sizeof path, "tests/attest/tdx-test/%s", name);
	f = fopen(path, "rb");
	if (!f || !b) {
		if (f)
			fclose(f);
		free(b);
		return NULL;
	}
	*len = fread(b, 1, 8192, f);
	fclose(f);
	return b;
}

TEST(tdx_tcb_level_selection)
{
	size_t ql, rl, cl, ul, ol;
	uint8_t *q = fixture("quote.dat", &ql), *root = fixture("root.der", &rl),
		*chain = fixture("tcbinfo-issuer-chain.pem", &cl),
		*up = fixture("tcbinfo-uptodate.json", &ul),
		*out = fixture("tcbinfo-outofdate.json", &ol);
	struct tdx_verify_opts o;
	struct tdx_quote tq;
	char err[256] = "";

	CHECK(q && root && chain && up && out);
	tdx_verify_opts_init(&o);
	o.at = 1798761600; /* 2027-01-01 */
	o.root = root;
	o.root_len = rl;
	o.tcb_info_chain = (char *)chain;
	o.tcb_info_chain_len = cl;
	o.tcb_info = (char *)up;
	o.tcb_info_len = ul;
	if (tdx_verify(q, ql, &o, &tq, err, sizeof err) < 0)
		return harness_fail(__FILE__, __LINE__, "refused: %s", err);
	CHECK(!strcmp(tq.tcb_status, "UpToDate"));
	/* the first level asks for SGX component 1 = 6: the second, OutOfDate, is chosen */
	o.tcb_info = (char *)out;
	o.tcb_info_len = ol;
	CHECK(tdx_verify(q, ql, &o, &tq, err, sizeof err) < 0);
	CHECK(!strcmp(tq.tcb_status, "OutOfDate"));
	CHECK(strstr(err, "the platform's TCB level is OutOfDate"));
	/* the built-in root refuses the test chain */
	o.root = NULL;
	o.tcb_info = (char *)up;
	o.tcb_info_len = ul;
	CHECK(tdx_verify(q, ql, &o, &tq, err, sizeof err) < 0);
	CHECK(strstr(err, "not the trusted Intel SGX Root CA"));
	free(q);
	free(root);
	free(chain);
	free(up);
	free(out);
}
