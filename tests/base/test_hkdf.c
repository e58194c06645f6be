/* HKDF-SHA256 against every vector of spec §3.5 (Constellation's testvector.go and RFC 5869)
 * and the end-to-end values derived from an all-zero master secret. */
#include <errno.h>
#include <string.h>

#include <bearssl.h>

#include "base/base.h"
#include "harness.h"

static void fill(unsigned char *b, size_t n, unsigned start)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(start + i);
}

static int check_vector(const char *file, int line, const unsigned char *secret, size_t slen,
			const unsigned char *salt, size_t saltlen, const void *info, size_t infolen,
			const char *want_hex)
{
	unsigned char want[128], got[128];
	size_t n = harness_unhex(want_hex, want, sizeof want);

	if (hkdf_sha256(secret, slen, salt, saltlen, info, infolen, got, n) != 0) {
		harness_fail(file, line, "hkdf_sha256 returned an error");
		return 0;
	}
	return harness_check_bytes(file, line, got, want, n);
}

#define VECTOR(...)                                                 \
	do {                                                        \
		if (!check_vector(__FILE__, __LINE__, __VA_ARGS__)) \
			return;                                     \
	} while (0)

TEST(hkdf_vector_zero)
{
	unsigned char s[32] = {0}, salt[32] = {0};
	const char *info = "key-00000000-0000-0000-0000-000000000000";

	VECTOR(s, 32, salt, 32, info, strlen(info),
	       "2b5c829f691bfd4232f8aac464bccc07e605c7c8e82cbca09837e86d0b6d0665");
}

TEST(hkdf_vector_0xff)
{
	unsigned char s[32], salt[32];
	const char *info = "key-ffffffff-ffff-ffff-ffff-ffffffffffff";

	memset(s, 0xff, 32);
	memset(salt, 0xff, 32);
	VECTOR(s, 32, salt, 32, info, strlen(info),
	       "1484aa39d3415e906e07940ff215d8b1eee705d3027dba93306af4abff4f70be");
}

TEST(hkdf_vector_cluster_id)
{
	unsigned char s[32], salt[32];

	fill(s, 32, 0x00);
	fill(salt, 32, 0x20);
	VECTOR(s, 32, salt, 32, "key-clusterID", 13,
	       "128c164378fe8767f998fbdfe4b4d6463ec5ae1b664ea5999bc27417607ae9b6");
}

TEST(hkdf_vector_measurement_secret)
{
	unsigned char s[32], salt[32];

	fill(s, 32, 0x40);
	fill(salt, 32, 0x60);
	VECTOR(s, 32, salt, 32, "key-measurementSecret", 21,
	       "4790578891f3fe6cc22cb661ecdc1b7e33121b1287546a52ba33a9136719c213");
}

TEST(hkdf_vector_rfc5869_case1)
{
	unsigned char s[22], salt[13], info[10];

	memset(s, 0x0b, sizeof s);
	fill(salt, sizeof salt, 0x00);
	fill(info, sizeof info, 0xf0);
	VECTOR(
	    s, sizeof s, salt, sizeof salt, info, sizeof info,
	    "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
}

TEST(hkdf_vector_rfc5869_case2)
{
	unsigned char s[80], salt[80], info[80];

	fill(s, 80, 0x00);
	fill(salt, 80, 0x60);
	fill(info, 80, 0xb0);
	VECTOR(s, 80, salt, 80, info, 80,
	       "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271c"
	       "b41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
}

TEST(hkdf_vector_rfc5869_case3_no_salt_no_info)
{
	unsigned char s[22];

	memset(s, 0x0b, sizeof s);
	VECTOR(
	    s, sizeof s, NULL, 0, NULL, 0,
	    "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
}

/* Go's hkdf treats a nil salt and an empty one alike; so must we. */
TEST(hkdf_empty_salt_equals_no_salt)
{
	unsigned char s[22], a[42], b[42];

	memset(s, 0x0b, sizeof s);
	CHECK(hkdf_sha256(s, sizeof s, NULL, 0, NULL, 0, a, sizeof a) == 0);
	CHECK(hkdf_sha256(s, sizeof s, "", 0, NULL, 0, b, sizeof b) == 0);
	CHECK_BYTES(a, b, sizeof a);
}

TEST(hkdf_rejects_output_longer_than_255_blocks)
{
	static unsigned char out[255 * 32 + 1];

	CHECK(hkdf_sha256("k", 1, NULL, 0, NULL, 0, out, 255 * 32) == 0);
	CHECK(hkdf_sha256("k", 1, NULL, 0, NULL, 0, out, sizeof out) == -EINVAL);
}

/* Spec §3.5, end to end: master key, master salt and measurement salt all 00x32. */
TEST(hkdf_end_to_end_cluster_values)
{
	unsigned char master[32] = {0}, salt[32] = {0}, msalt[32] = {0};
	unsigned char msecret[32], cluster_id[32], seed[32], want[32], pcr[64], h[32];
	br_sha256_context sc;

	CHECK(hkdf_sha256(master, 32, salt, 32, "key-measurementSecret", 21, msecret, 32) == 0);
	harness_unhex("54d67b1d917d3464757d9b699f3ee416c209a2270e3876da90535e4108898cdd", want, 32);
	CHECK_BYTES(msecret, want, 32);

	CHECK(hkdf_sha256(msecret, 32, msalt, 32, "key-clusterID", 13, cluster_id, 32) == 0);
	harness_unhex("823267d1276b940d1f04b9fac150721f196bf1090e125684d4efd8416a691588", want, 32);
	CHECK_BYTES(cluster_id, want, 32);

	/* PCR 15 after TPM2_PCR_Event(15, clusterID): extend of a zero PCR by H(clusterID). */
	memset(pcr, 0, 32);
	br_sha256_init(&sc);
	br_sha256_update(&sc, cluster_id, 32);
	br_sha256_out(&sc, pcr + 32);
	br_sha256_init(&sc);
	br_sha256_update(&sc, pcr, 64);
	br_sha256_out(&sc, h);
	harness_unhex("739f5470af0ec8615323225d31cb09f458f93c24a94c7fb491b8b3973cb89f89", want, 32);
	CHECK_BYTES(h, want, 32);

	CHECK(hkdf_sha256(master, 32, salt, 32, "key-ca_emergency_ssh", 20, seed, 32) == 0);
	harness_unhex("9e713c43390b642211dac2251376b4ac901635b197ccd2288393cc61bb73e127", want, 32);
	CHECK_BYTES(seed, want, 32);
}
