/* MAA's PCR-bound decryption key (tpm_pcr_key_certify / tpm_pcr_key_decrypt) on swtpm: the
 * template of go-azguestattestation's maa/tpm.go (RSA 2048, decrypt, fixedTPM, fixedParent,
 * sensitiveDataOrigin, noDA, authPolicy PolicyPCR over PCRs 0-7), certified by the AK with a
 * signature that verifies; what is encrypted RSAES-PKCS1-v1_5 to it decrypts inside the TPM,
 * and no longer once a PCR of the policy changed. */
#include <errno.h>
#include <string.h>

#include <bearssl.h>
#include <tss2/tss2_mu.h>

#include "harness.h"
#include "tpm/swtpm.h"
#include "tpm/tpm.h"

/* RSAES-PKCS1-v1_5 (RFC 8017 §7.2.1) of m to (n, e), as MAA encrypts the token's key */
static int pkcs1_encrypt(const TPM2B_PUBLIC_KEY_RSA *n, const uint8_t *m, size_t mlen, uint8_t *out)
{
	static const uint8_t e[] = {0x01, 0x00, 0x01};
	br_rsa_public_key pk = {(unsigned char *)n->buffer, n->size, (unsigned char *)e, 3};
	size_t k = n->size, ps = k - mlen - 3;

	out[0] = 0;
	out[1] = 2;
	for (size_t i = 0; i < ps; i++)
		out[2 + i] = (uint8_t)(0x5a + i % 0x80) | 1;
	out[2 + ps] = 0;
	memcpy(out + 3 + ps, m, mlen);
	return br_rsa_i31_public(out, k, &pk) ? 0 : -1;
}

TEST(tpm_pcr_key_certified_by_the_ak_decrypts_until_a_pcr_changes)
{
	struct swtpm sw = {0};
	struct tpm *t = NULL;
	uint8_t pcrs[TPM_PCRS][TPM_DIGEST_MAX], digest[32], akpub[TPM_PUBLIC_MAX];
	uint8_t pub[TPM_PUBLIC_MAX], info[TPM_ATTEST_MAX], sig[512], ct[256], pt[256], h[32];
	uint8_t secret[32];
	size_t dlen, akl, pl, il, sl, ptl, off = 0;
	TPMT_PUBLIC ak, key;
	TPMS_ATTEST att;
	br_sha256_context sc;
	char err[256] = "";

	for (size_t i = 0; i < sizeof secret; i++)
		secret[i] = (uint8_t)(i * 13 + 7);
	CHECK(swtpm_start(&sw) == 0);
	CHECK(tpm_open(&sw.tcti, &t, NULL, 0) == 0);
	CHECK(tpm_ak_select(t, TPM_AK_SRC_OWNER, akpub, sizeof akpub, &akl, err, sizeof err) == 0);
	CHECK(Tss2_MU_TPMT_PUBLIC_Unmarshal(akpub, akl, &off, &ak) == TSS2_RC_SUCCESS);
	CHECK(tpm_pcr_event(t, 4, "boot", 4) == 0);
	CHECK(tpm_pcr_read(t, TPM_ALG_SHA256, 0xff, pcrs, &dlen) == 0 && dlen == 32);
	br_sha256_init(&sc);
	for (int i = 0; i < 8; i++)
		br_sha256_update(&sc, pcrs[i], 32);
	br_sha256_out(&sc, digest);

	CHECK(tpm_pcr_key_certify(t, 0xff, digest, pub, sizeof pub, &pl, info, sizeof info, &il,
				  sig, sizeof sig, &sl, err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "certify: %s\n", err);
	off = 0;
	CHECK(Tss2_MU_TPMT_PUBLIC_Unmarshal(pub, pl, &off, &key) == TSS2_RC_SUCCESS && off == pl);
	CHECK(key.type == TPM2_ALG_RSA && key.nameAlg == TPM2_ALG_SHA256);
	CHECK(key.objectAttributes ==
	      (TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
	       TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_NODA));
	CHECK(key.authPolicy.size == 32 && key.unique.rsa.size == 256);
	CHECK(key.parameters.rsaDetail.symmetric.algorithm == TPM2_ALG_NULL &&
	      key.parameters.rsaDetail.scheme.scheme == TPM2_ALG_NULL);
	/* TPM2_Certify's TPMS_ATTEST, signed RSASSA SHA-256 by the AK */
	off = 0;
	CHECK(Tss2_MU_TPMS_ATTEST_Unmarshal(info, il, &off, &att) == TSS2_RC_SUCCESS);
	CHECK(att.magic == TPM2_GENERATED_VALUE && att.type == TPM2_ST_ATTEST_CERTIFY);
	br_sha256_init(&sc);
	br_sha256_update(&sc, info, il);
	br_sha256_out(&sc, digest + 0);
	{
		static const uint8_t e[] = {0x01, 0x00, 0x01};
		br_rsa_public_key pk = {ak.unique.rsa.buffer, ak.unique.rsa.size,
					(unsigned char *)e, 3};

		CHECK(sl == ak.unique.rsa.size &&
		      br_rsa_i31_pkcs1_vrfy(sig, sl, BR_HASH_OID_SHA256, 32, &pk, h) &&
		      !memcmp(h, digest, 32));
	}
	/* the digest again (the buffer held the attest hash) */
	br_sha256_init(&sc);
	for (int i = 0; i < 8; i++)
		br_sha256_update(&sc, pcrs[i], 32);
	br_sha256_out(&sc, digest);

	CHECK(pkcs1_encrypt(&key.unique.rsa, secret, sizeof secret, ct) == 0);
	CHECK(tpm_pcr_key_decrypt(t, 0xff, digest, ct, 256, pt, sizeof pt, &ptl, err, sizeof err) ==
	      0);
	if (err[0])
		fprintf(stderr, "decrypt: %s\n", err);
	CHECK(ptl == sizeof secret && !memcmp(pt, secret, sizeof secret));
	/* a PCR of the policy changes: the same key is no longer usable */
	CHECK(tpm_pcr_event(t, 7, "later", 5) == 0);
	err[0] = 0;
	CHECK(tpm_pcr_key_decrypt(t, 0xff, digest, ct, 256, pt, sizeof pt, &ptl, err, sizeof err) ==
	      -EIO);
	CHECK(strstr(err, "tpm:") != NULL);
	tpm_close(t);
	swtpm_destroy(&sw);
}
