/* The TPM layer and the qemu-vtpm issuer against swtpm: banks and PCR reads, the PCR 15
 * marking value of spec §3.3, the refusal to attest after marking, the AK of §2.4 persisting
 * across TPM restarts and made anew after the state is wiped. The Go side checks the
 * documents in tests/interop/test_qemu_vtpm_go.sh. */
#include <errno.h>
#include <string.h>

#include "attest/attest.h"
#include "harness.h"
#include "tpm/swtpm.h"
#include "tpm/tpm.h"

TEST(tpm_banks_include_sha256_with_24_pcrs_and_pcr15_zero)
{
	struct swtpm sw = {0};
	struct tpm *t = NULL;
	struct tpm_bank banks[TPM_BANKS_MAX];
	uint8_t v[TPM_PCRS][TPM_DIGEST_MAX], zero[32] = {0};
	size_t n = 0, dlen = 0;
	int sha256 = -1;

	CHECK(swtpm_start(&sw) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_banks(t, banks, TPM_BANKS_MAX, &n) == 0);
	for (size_t i = 0; i < n; i++)
		if (banks[i].alg == TPM_ALG_SHA256)
			sha256 = (int)i;
	CHECK(sha256 >= 0 && banks[sha256].pcrs == 0xffffff);
	CHECK(tpm_pcr_read(t, TPM_ALG_SHA256, 0xffffff, v, &dlen) == 0 && dlen == 32);
	CHECK_BYTES(v[15], zero, 32);
	tpm_close(t);
	swtpm_destroy(&sw);
}

TEST(tpm_pcr15_marking_with_the_spec_cluster_id)
{
	struct swtpm sw = {0};
	struct tpm *t = NULL;
	struct qemu_vtpm cfg;
	struct atls_issuer is;
	uint8_t cid[32], want[32], v[TPM_PCRS][TPM_DIGEST_MAX], ud[32] = {0}, nonce[32] = {0};
	uint8_t doc[4096];
	size_t dlen, len;
	char err[200] = "";

	CHECK(swtpm_start(&sw) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	/* cluster ID and PCR 15 for the all-zero master secret and salt (spec §3.5) */
	harness_unhex("823267d1276b940d1f04b9fac150721f196bf1090e125684d4efd8416a691588", cid, 32);
	harness_unhex("739f5470af0ec8615323225d31cb09f458f93c24a94c7fb491b8b3973cb89f89", want, 32);
	CHECK(tpm_pcr_event(t, 15, cid, sizeof cid) == 0);
	CHECK(tpm_pcr_read(t, TPM_ALG_SHA256, 1u << 15, v, &dlen) == 0);
	CHECK_BYTES(v[15], want, 32);
	tpm_close(t);
	/* After marking, the issuer refuses by construction. */
	cfg = (struct qemu_vtpm){.tcti = sw.tcti, .event_log = NULL};
	qemu_vtpm_issuer(&is, &cfg);
	CHECK(is.issue(is.ctx, ud, nonce, sizeof nonce, doc, sizeof doc, &len, err, sizeof err) ==
	      -EINVAL);
	CHECK(strstr(err, "PCR 15 is not zero") != NULL);
	swtpm_destroy(&sw);
}

TEST(tpm_ak_persists_across_restarts_and_is_new_after_a_wipe)
{
	struct swtpm sw = {0};
	struct tpm *t = NULL;
	uint8_t a[TPM_PUBLIC_MAX], b[TPM_PUBLIC_MAX], c[TPM_PUBLIC_MAX];
	size_t al, bl, cl;
	/* the template of spec §2.4, then the 256-byte modulus */
	static const uint8_t tmpl[] = {0x00, 0x01, 0x00, 0x0b, 0x00, 0x05, 0x00, 0x72,
				       0x00, 0x00, 0x00, 0x10, 0x00, 0x14, 0x00, 0x0b,
				       0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00};

	CHECK(swtpm_start(&sw) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_ak(t, a, sizeof a, &al) == 0);
	tpm_close(t);
	CHECK(al == sizeof tmpl + 256);
	CHECK_BYTES(a, tmpl, sizeof tmpl);
	swtpm_stop(&sw);
	CHECK(swtpm_start(&sw) == 0); /* same state directory */
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_ak(t, b, sizeof b, &bl) == 0);
	tpm_close(t);
	CHECK(bl == al);
	CHECK_BYTES(b, a, al);
	swtpm_destroy(&sw); /* wipes the state: a new owner seed, so a new key */
	CHECK(swtpm_start(&sw) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_ak(t, c, sizeof c, &cl) == 0);
	tpm_close(t);
	CHECK(cl == al && memcmp(c, a, al) != 0);
	swtpm_destroy(&sw);
}

/* A foreign key at the AK handle (planted with tpm2-tools) is evicted and replaced. */
TEST(tpm_ak_replaces_a_foreign_key_at_its_handle)
{
	struct swtpm sw = {0};
	struct tpm *t = NULL;
	uint8_t a[TPM_PUBLIC_MAX];
	size_t al;
	char cmd[512];
	static const uint8_t tmpl[] = {0x00, 0x01, 0x00, 0x0b, 0x00, 0x05, 0x00, 0x72};

	CHECK(swtpm_start(&sw) == 0);
	snprintf(cmd, sizeof cmd,
		 "tpm2_createprimary -Q -C o -G ecc -c %s/ecc.ctx -T swtpm:host=127.0.0.1,port=%d "
		 "&& tpm2_evictcontrol -Q -C o -c %s/ecc.ctx 0x81008F01 "
		 "-T swtpm:host=127.0.0.1,port=%d >/dev/null 2>&1",
		 sw.dir, sw.port, sw.dir, sw.port);
	CHECK(system(cmd) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_ak(t, a, sizeof a, &al) == 0);
	tpm_close(t);
	CHECK(al == 24 + 256);
	CHECK_BYTES(a, tmpl, sizeof tmpl);
	swtpm_destroy(&sw);
}

TEST(tpm_open_fails_with_a_line_when_nothing_listens)
{
	struct tcti_spec s = {.kind = TCTI_SWTPM, .port = 1};
	struct tpm *t = NULL;
	char err[200] = "";
	uint8_t pub[TPM_PUBLIC_MAX];
	size_t len;
	int r;

	strcpy(s.host, "127.0.0.1");
	r = tpm_open(&s, &t, err, sizeof err);
	if (r < 0)
		CHECK(!strncmp(err, "tpm: ", 5));
	if (r == 0) { /* some TCTIs connect lazily: the first command must fail then */
		r = tpm_ak(t, pub, sizeof pub, &len);
		tpm_close(t);
	}
	CHECK(r < 0);
}
