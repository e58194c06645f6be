/* The qemu-vtpm validator with several PCR banks, on documents signed with the fixed test AK
 * (qemu_test_ak.h): the measurements are read from the SHA-256 quote (as Go does), and that
 * quote must itself pass the signature, nonce and digest checks even when another bank's
 * quote is the one that verified first. A SHA-256 quote whose PCR map was changed after
 * signing, whose signature is broken, or whose nonce is another must not carry the
 * measurements on the strength of a SHA-384 quote. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"
#include "attest/qemu_test_ak.h"
#include "harness.h"

struct fixture {
	uint8_t ud[ATLS_USER_DATA_LEN], nonce[32], tpm_nonce[32];
	struct tpm_quote q[3]; /* SHA-256, SHA-384, SHA-1 */
	struct measurements m;
	uint8_t doc[65536];
	size_t doc_len;
};

/* PCR i of bank alg holds bytes i + alg; PCR 15 expected as the SHA-256 bank has it. */
static int setup(struct fixture *f)
{
	static const uint16_t algs[3] = {TPM_ALG_SHA256, TPM_ALG_SHA384, TPM_ALG_SHA1};

	memset(f, 0, sizeof *f);
	for (int i = 0; i < 32; i++) {
		f->ud[i] = (uint8_t)(0x40 + i);
		f->nonce[i] = (uint8_t)(7 * i);
	}
	qemu_vtpm_tpm_nonce(f->ud, f->nonce, sizeof f->nonce, f->tpm_nonce);
	for (int b = 0; b < 3; b++) {
		for (int i = 0; i < TPM_PCRS; i++)
			memset(f->q[b].values[i], i + algs[b], TPM_DIGEST_MAX);
		if (test_ak_quote(&f->q[b], algs[b], f->tpm_nonce) < 0)
			return -1;
	}
	f->m.n = 1;
	f->m.m[0].pcr = 15;
	f->m.m[0].len = 32;
	memcpy(f->m.m[0].expected, f->q[0].values[15], 32);
	return 0;
}

/* Validates the document of quotes q[first..first+n-1] (in that order). */
static int validate(struct fixture *f, const struct tpm_quote *qs, size_t n, char *err,
		    size_t errlen)
{
	uint8_t ak[512], got[64];
	size_t ak_len, got_len;

	if (test_ak_public(ak, sizeof ak, &ak_len) < 0 ||
	    qemu_vtpm_document(ak, ak_len, qs, n, NULL, 0, f->ud, f->doc, sizeof f->doc,
			       &f->doc_len) < 0)
		return -100;
	return qemu_vtpm_validate(f->doc, f->doc_len, f->nonce, sizeof f->nonce, &f->m, got,
				  sizeof got, &got_len, err, errlen);
}

static int has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

TEST(qemu_banks_sha256_and_sha384_both_verify_and_the_measurement_matches)
{
	struct fixture *f = malloc(sizeof *f);
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	CHECK(validate(f, f->q, 2, err, sizeof err) == 0);
	free(f);
}

TEST(qemu_banks_a_wrong_measurement_on_the_verified_sha256_quote_is_refused)
{
	struct fixture *f = malloc(sizeof *f);
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	f->m.m[0].expected[0] ^= 1;
	CHECK(validate(f, f->q, 2, err, sizeof err) == -EINVAL);
	CHECK(has(err, "measurement validation failed: PCR 15"));
	free(f);
}

/* The bypass: the SHA-384 quote verifies; the SHA-256 quote's PCR map says what the verifier
 * expects, but its signed digest is over other values. */
TEST(qemu_banks_sha256_values_changed_after_signing_are_refused_when_sha384_verifies)
{
	struct fixture *f = malloc(sizeof *f);
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	memset(f->q[0].values[15], 0xee, 32); /* the claim */
	memcpy(f->m.m[0].expected, f->q[0].values[15], 32);
	CHECK(validate(f, f->q, 2, err, sizeof err) == -EINVAL);
	CHECK(has(err, "SHA-256 quote that holds the measurements does not verify"));
	CHECK(has(err, "PCR values do not match the quoted digest"));
	free(f);
}

TEST(qemu_banks_sha256_quote_with_a_broken_signature_is_refused_when_sha384_verifies)
{
	struct fixture *f = malloc(sizeof *f);
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	f->q[0].sig[f->q[0].sig_len - 1] ^= 1;
	CHECK(validate(f, f->q, 2, err, sizeof err) == -EINVAL);
	CHECK(has(err, "quote signature does not verify"));
	free(f);
}

TEST(qemu_banks_sha256_quote_for_another_nonce_is_refused_when_sha384_verifies)
{
	struct fixture *f = malloc(sizeof *f);
	uint8_t other[32];
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	memset(other, 0x55, sizeof other);
	CHECK(test_ak_quote(&f->q[0], TPM_ALG_SHA256, other) == 0);
	CHECK(validate(f, f->q, 2, err, sizeof err) == -EINVAL);
	CHECK(has(err, "quote nonce does not match ours"));
	free(f);
}

/* Only the SHA-1 quote verifies (the SHA-256 one is forged): SHA-1 is never accepted, so
 * nothing verifies, right measurements or not. */
TEST(qemu_banks_only_the_sha1_quote_verifying_is_refused)
{
	struct fixture *f = malloc(sizeof *f);
	struct tpm_quote *qs = NULL;
	char err[400] = "";

	CHECK(f && setup(f) == 0);
	qs = malloc(2 * sizeof *qs);
	CHECK(qs);
	qs[0] = f->q[2];
	qs[1] = f->q[0];
	qs[1].sig[qs[1].sig_len - 1] ^= 1;
	CHECK(validate(f, qs, 2, err, sizeof err) == -EINVAL);
	CHECK(has(err, "no quote verifies"));
	memset(f->m.m[0].expected, 0xee, 32);
	memset(qs[1].values[15], 0xee, 32);
	CHECK(validate(f, qs, 2, err, sizeof err) == -EINVAL);
	free(qs);
	free(f);
}
