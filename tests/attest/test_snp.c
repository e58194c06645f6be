/* The SEV-SNP validator on real AMD evidence (the recorded Azure report, its VCEK and chain,
 * the VLEK report whose signature does not verify) and the extended report's certificate
 * table. Evidence from ${CONSTEL_VECTORS:-../shared/vectors} (tests run from the repository
 * root); missing evidence is a failure, not a skip. The policy and TCB checks on reports of
 * a test chain: tests/attest/test_snp_report.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "attest/snp.h"
#include "base/base.h"
#include "harness.h"

/* the first CERTIFICATE block of a PEM file, DER */
static size_t load_pem(const char *rel, const char *from, uint8_t *out, size_t cap)
{
	size_t len, n = 0;
	char *t = (char *)harness_vector(rel, &len), *p;

	if (!t)
		return 0;
	p = from ? strstr(t, from) : t;
	if (!p || pem_decode(p, len - (size_t)(p - t), "CERTIFICATE", out, cap, &n) < 0)
		n = 0;
	free(t);
	return n;
}

static time_t t2024(void)
{
	return 1704067200; /* 2024-01-01T00:00:00Z */
}

TEST(snp_azure_report_accepted_with_vcek_pem_der_and_chain)
{
	size_t rl, dl, pl, al;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl),
		*der = harness_vector("snp-azure/vcek.cert", &dl);
	uint8_t pem[2048], ask[4096];
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p = 0;
	char err[256] = "";

	CHECK(rep && der && rl == 1204);
	pl = load_pem("snp-azure/vcek.pem", NULL, pem, sizeof pem);
	al = load_pem("snp-azure/certchain.pem", NULL, ask, sizeof ask);
	CHECK(pl == dl && al > 0);
	snp_verify_opts_init(&o);
	o.at = t2024();
	/* DER from KDS, no chain: the built-in ASK */
	if (snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err))
		return harness_fail(__FILE__, __LINE__, "DER: %s", err);
	CHECK(p == SNP_MILAN && r.version == 2 && r.vmpl == 0 && r.policy == 0x3001f);
	CHECK(r.guest_svn == 2 && SNP_SIGNER_KEY(r.signer_info) == SNP_KEY_VCEK);
	/* PEM from THIM with THIM's chain */
	o.chain[0] = ask;
	o.chain_len[0] = al;
	o.n_chain = 1;
	if (snp_verify(rep, rl, pem, pl, &o, &r, &p, err, sizeof err))
		return harness_fail(__FILE__, __LINE__, "PEM: %s", err);
	/* the report alone, without the 20 bytes after it */
	CHECK(snp_verify(rep, SNP_REPORT_LEN, pem, pl, &o, &r, &p, err, sizeof err) == 0);
	CHECK(snp_verify(rep, SNP_REPORT_LEN - 1, pem, pl, &o, &r, &p, err, sizeof err) < 0);
	free(rep);
	free(der);
}

TEST(snp_azure_report_fields_at_their_offsets)
{
	size_t rl;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl);
	struct snp_report r;
	struct snp_tcb t;
	char err[128];
	static const uint8_t chip[4] = {0x9e, 0x44, 0xaa, 0xef}, idk[4] = {0x57, 0xe2, 0x29, 0xe0};

	CHECK(rep && snp_report_parse(rep, rl, &r, err, sizeof err) == 0);
	CHECK_BYTES(r.chip_id, chip, 4);
	CHECK_BYTES(r.id_key_digest, idk, 4);
	snp_tcb_decode(SNP_MILAN, r.reported_tcb, &t);
	CHECK(t.bootloader == 2 && t.tee == 0 && t.snp == 6 && t.microcode == 0x5d);
	CHECK(r.signature_algo == 1 && r.sig_r[71] == 0 && r.sig_s[71] == 0);
	free(rep);
}

TEST(snp_azure_report_data_binds_runtime_data)
{
	size_t rl, dl;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl);
	uint8_t *rt = harness_vector("snp-azure/runtimedata.bin", &dl), h[32];
	br_sha256_context sc;

	CHECK(rep && rt && dl == 584);
	br_sha256_init(&sc);
	br_sha256_update(&sc, rt, dl);
	br_sha256_out(&sc, h);
	CHECK_BYTES(rep + 0x50, h, 32);
	rt[100] ^= 1;
	br_sha256_init(&sc);
	br_sha256_update(&sc, rt, dl);
	br_sha256_out(&sc, h);
	CHECK(memcmp(rep + 0x50, h, 32));
	free(rep);
	free(rt);
}

/* Every single-bit flip in the signed bytes and in r and s is refused. */
TEST(snp_azure_report_every_bit_flip_refused)
{
	size_t rl, dl;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl),
		*der = harness_vector("snp-azure/vcek.cert", &dl);
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p;
	char err[256];

	CHECK(rep && der);
	snp_verify_opts_init(&o);
	o.at = t2024();
	for (size_t i = 0; i < SNP_SIGNED_LEN + 2 * SNP_SIG_COMP; i++)
		for (int b = 0; b < 8; b++) {
			rep[i] ^= (uint8_t)(1 << b);
			if (snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == 0)
				return harness_fail(__FILE__, __LINE__,
						    "report byte 0x%zx bit %d flipped: accepted", i,
						    b);
			rep[i] ^= (uint8_t)(1 << b);
		}
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == 0);
	free(rep);
	free(der);
}

TEST(snp_azure_vcek_every_bit_flip_refused)
{
	size_t rl, dl;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl),
		*der = harness_vector("snp-azure/vcek.cert", &dl);
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p;
	char err[256];

	CHECK(rep && der && dl == 1360);
	snp_verify_opts_init(&o);
	o.at = t2024();
	for (size_t i = 0; i < dl; i++)
		for (int b = 0; b < 8; b++) {
			der[i] ^= (uint8_t)(1 << b);
			if (snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == 0)
				return harness_fail(__FILE__, __LINE__,
						    "VCEK byte %zu bit %d flipped: accepted", i, b);
			der[i] ^= (uint8_t)(1 << b);
		}
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == 0);
	free(rep);
	free(der);
}

TEST(snp_azure_refusals_name_the_check)
{
	size_t rl, dl;
	uint8_t *rep = harness_vector("snp-azure/attestation.bin", &rl),
		*der = harness_vector("snp-azure/vcek.cert", &dl);
	uint8_t milan_ark_other[1];
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p;
	char err[256] = "";

	CHECK(rep && der);
	snp_verify_opts_init(&o);
	o.at = 1924992000; /* 2031-01-01: the VCEK has expired */
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "validity: the VCEK"));
	o.at = t2024();
	o.vmpl = 1;
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "vmpl"));
	o.vmpl = 0;
	o.have_min_launch_tcb = 1;
	o.min_launch_tcb.snp = 7;
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "launch TCB"));
	o.have_min_launch_tcb = 0;
	/* another root only (--ark): the Genoa ARK does not sign Milan's ASK */
	o.ark = snp_builtins[1].ark;
	o.ark_len = snp_builtins[1].ark_len;
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "chain"));
	o.ark = milan_ark_other;
	o.ark_len = 0;
	CHECK(snp_verify(rep, rl, der, dl, &o, &r, &p, err, sizeof err) == -EINVAL);
	free(rep);
	free(der);
}

TEST(snp_vlek_report_with_bad_signature_refused)
{
	size_t hl, rl, vl;
	char *hex = (char *)harness_vector("snp-azure/report-vlek-bad-signature.hex", &hl);
	uint8_t rep[SNP_REPORT_LEN + 8], vlek[2048];
	struct snp_verify_opts o;
	struct snp_report r;
	enum snp_product p;
	char err[256] = "";

	CHECK(hex);
	while (hl && (hex[hl - 1] == '\n' || hex[hl - 1] == '\r'))
		hl--;
	CHECK(hex_decode(hex, hl, rep, sizeof rep, &rl) == 0 && rl == SNP_REPORT_LEN);
	vl = load_pem("snp-azure/vlek-for-bad-report.pem", NULL, vlek, sizeof vlek);
	CHECK(vl > 0);
	snp_verify_opts_init(&o);
	o.at = t2024();
	CHECK(snp_verify(rep, rl, vlek, vl, &o, &r, &p, err, sizeof err) == -EINVAL);
	CHECK(SNP_SIGNER_KEY(r.signer_info) == SNP_KEY_VLEK);
	if (!strstr(err, "signature"))
		return harness_fail(__FILE__, __LINE__, "refused for another reason: %s", err);
	free(hex);
}

TEST(snp_builtin_roots_are_amds_and_self_signed)
{
	size_t n;
	uint8_t der[4096];
	static const char *const files[3][2] = {
	    {"amd/ask_ark_milan.pem", "amd/ask_ark_milan_vlek.pem"},
	    {"amd/ask_ark_genoa.pem", "amd/ask_ark_genoa_vlek.pem"},
	    {"amd/ask_ark_turin_vcek.pem", "amd/ask_ark_turin_vlek.pem"}};

	for (int i = 0; i < 3; i++) {
		const struct snp_builtin *b = &snp_builtins[i];

		n = load_pem(files[i][0], NULL, der, sizeof der);
		CHECK(n == b->ask_len && !memcmp(der, b->ask, n));
		n = load_pem(files[i][1], NULL, der, sizeof der);
		CHECK(n == b->asvk_len && !memcmp(der, b->asvk, n));
		/* the ARK: the second block */
		n = load_pem(files[i][0], "-----END CERTIFICATE-----\n-----BEGIN", der, sizeof der);
		if (!n)
			n = load_pem(files[i][0], "-----END CERTIFICATE-----\r\n-----BEGIN", der,
				     sizeof der);
		CHECK(n == b->ark_len && !memcmp(der, b->ark, n));
	}
}

static void put_entry(uint8_t *t, const char *guid_hex, uint32_t off, uint32_t len)
{
	harness_unhex(guid_hex, t, 16);
	for (int i = 0; i < 4; i++) {
		t[16 + i] = (uint8_t)(off >> 8 * i);
		t[20 + i] = (uint8_t)(len >> 8 * i);
	}
}

TEST(snp_cert_table_parsed_bounded)
{
	uint8_t t[200] = {0};
	struct snp_cert_entry e[SNP_CERT_TABLE_MAX];
	size_t n;
	char err[160];

	put_entry(t, "63da758de6644564adc5f4b93be8accd", 72, 100);
	put_entry(t + 24, "4ab7b379bbac4fe4a02f05aef327c782", 172, 28);
	CHECK(snp_cert_table_parse(t, sizeof t, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) == 0);
	CHECK(n == 2 && e[0].kind == SNP_CERT_VCEK && e[1].kind == SNP_CERT_ASK);
	CHECK(e[0].der == t + 72 && e[0].len == 100 && e[1].der == t + 172 && e[1].len == 28);
	/* an empty table */
	CHECK(snp_cert_table_parse(t + 48, 24, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) == 0 &&
	      n == 0);
	/* past the end, into the entries, no terminator, too many, the same GUID twice */
	CHECK(snp_cert_table_parse(t, 199, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0);
	put_entry(t + 24, "4ab7b379bbac4fe4a02f05aef327c782", 60, 28);
	CHECK(snp_cert_table_parse(t, sizeof t, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0);
	put_entry(t + 24, "63da758de6644564adc5f4b93be8accd", 172, 28);
	CHECK(snp_cert_table_parse(t, sizeof t, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0);
	CHECK(strstr(err, "twice"));
	put_entry(t + 24, "4ab7b379bbac4fe4a02f05aef327c782", 172, 28);
	CHECK(snp_cert_table_parse(t, 40, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0);
	CHECK(snp_cert_table_parse(t, sizeof t, e, 1, &n, err, sizeof err) < 0);
	put_entry(t + 24, "4ab7b379bbac4fe4a02f05aef327c782", 0xffffffffu, 2);
	CHECK(snp_cert_table_parse(t, sizeof t, e, SNP_CERT_TABLE_MAX, &n, err, sizeof err) < 0);
}

TEST(snp_tcb_layouts_of_milan_and_turin)
{
	struct snp_tcb t;

	snp_tcb_decode(SNP_MILAN, 0xd1080000000a0302ull, &t);
	CHECK(t.bootloader == 2 && t.tee == 3 && t.snp == 8 && t.microcode == 0xd1 && !t.fmc);
	snp_tcb_decode(SNP_TURIN, 0xd1000000080a0302ull, &t);
	CHECK(t.fmc == 2 && t.bootloader == 3 && t.tee == 0x0a && t.snp == 8 &&
	      t.microcode == 0xd1);
}

TEST(snp_tcb_option_parsed_strictly)
{
	struct snp_tcb t;

	CHECK(snp_tcb_parse("bl=2,tee=0,snp=6,ucode=93", &t) == 0);
	CHECK(t.bootloader == 2 && t.snp == 6 && t.microcode == 93 && !t.fmc);
	CHECK(snp_tcb_parse("fmc=1,snp=255", &t) == 0 && t.fmc == 1 && t.snp == 255);
	CHECK(snp_tcb_parse("", &t) < 0);
	CHECK(snp_tcb_parse("bl=256", &t) < 0);
	CHECK(snp_tcb_parse("bl=1,bl=2", &t) < 0);
	CHECK(snp_tcb_parse("bl=1,", &t) < 0);
	CHECK(snp_tcb_parse("bl=", &t) < 0);
	CHECK(snp_tcb_parse("xx=1", &t) < 0);
	CHECK(snp_tcb_parse("bl=00001", &t) < 0);
}
