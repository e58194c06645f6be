/* HKDF-SHA256 (RFC 5869) on BearSSL's br_hkdf. Constellation derives every key with it:
 * disk keys, the measurement secret, the cluster ID and the SSH CA seed (spec §3). */
#include <errno.h>

#include <bearssl.h>

#include "base.h"

int hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len,
		const void *info, size_t info_len, void *out, size_t out_len)
{
	br_hkdf_context hc;

	if (out_len > 255 * 32 || (!ikm && ikm_len) || (!info && info_len))
		return -EINVAL;
	/* A missing salt is HashLen zero bytes; for HMAC that equals an empty key. */
	br_hkdf_init(&hc, &br_sha256_vtable, salt ? salt : BR_HKDF_NO_SALT, salt ? salt_len : 0);
	br_hkdf_inject(&hc, ikm, ikm_len);
	br_hkdf_flip(&hc);
	br_hkdf_produce(&hc, info, info_len, out, out_len);
	/* The context holds the PRK, which is as secret as the input key. */
	secret_wipe(&hc, sizeof hc);
	return 0;
}
