/* libFuzzer target: the P-256 signature check (base/p256.c) on outside input: an uncompressed
 * point (65 bytes), a SHA-256 hash value (32), then an ASN.1 signature. It must agree with
 * BearSSL's ec_p256_m31 check, which refuses the hash value 0 (hogweed does not). */
#include <stdint.h>
#include <stdlib.h>

#include <bearssl.h>

#include "base/p256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	br_ec_public_key pk = {BR_EC_secp256r1, (unsigned char *)data, P256_POINT_LEN};
	uint8_t any = 0;
	int ours, theirs;

	if (size < P256_POINT_LEN + 32 || size > P256_POINT_LEN + 32 + 200)
		return 0;
	ours = p256_verify_asn1(data, P256_POINT_LEN, data + P256_POINT_LEN, 32,
				data + P256_POINT_LEN + 32, size - P256_POINT_LEN - 32);
	theirs =
	    (int)br_ecdsa_i31_vrfy_asn1(&br_ec_p256_m31, data + P256_POINT_LEN, 32, &pk,
					data + P256_POINT_LEN + 32, size - P256_POINT_LEN - 32);
	for (size_t i = 0; i < 32; i++)
		any |= data[P256_POINT_LEN + i];
	if (ours != theirs && any)
		abort();
	return 0;
}
