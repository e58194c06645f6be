/* The cluster-KMS URI and the key derivations of spec §3, with the spec's end-to-end values
 * for an all-zero master secret. */
#include <errno.h>
#include <string.h>

#include "flow/flow.h"
#include "harness.h"

TEST(kms_uri_round_trip_and_spec_values)
{
	uint8_t zero[32] = {0}, ms[32], cid[32], seed[32], want[32];
	char uri[256];
	struct kms k;

	CHECK(kms_uri(zero, zero, uri, sizeof uri) == 0);
	CHECK(!strcmp(uri, "kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=&"
			   "salt=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="));
	CHECK(kms_parse(uri, &k, NULL, 0) == 0);
	CHECK(kms_derive(&k, "measurementSecret", ms, 32) == 0);
	harness_unhex("54d67b1d917d3464757d9b699f3ee416c209a2270e3876da90535e4108898cdd", want, 32);
	CHECK_BYTES(ms, want, 32);
	CHECK(cluster_id_derive(ms, zero, 32, cid) == 0);
	harness_unhex("823267d1276b940d1f04b9fac150721f196bf1090e125684d4efd8416a691588", want, 32);
	CHECK_BYTES(cid, want, 32);
	CHECK(kms_derive(&k, "ca_emergency_ssh", seed, 32) == 0);
	harness_unhex("9e713c43390b642211dac2251376b4ac901635b197ccd2288393cc61bb73e127", want, 32);
	CHECK_BYTES(seed, want, 32);
	kms_free(&k);
}

TEST(kms_disk_key_lowercases_for_init_only)
{
	uint8_t ff[32], a[32], b[32], want[32];
	char uri[256];
	struct kms k;

	memset(ff, 0xff, sizeof ff);
	CHECK(kms_uri(ff, ff, uri, sizeof uri) == 0);
	CHECK(kms_parse(uri, &k, NULL, 0) == 0);
	/* HKDF0xFF of spec §3.5, reached from an upper-case UUID as the init server does. */
	CHECK(kms_disk_key(&k, "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", 1, a) == 0);
	harness_unhex("1484aa39d3415e906e07940ff215d8b1eee705d3027dba93306af4abff4f70be", want, 32);
	CHECK_BYTES(a, want, 32);
	CHECK(kms_disk_key(&k, "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", 0, b) == 0);
	CHECK(memcmp(a, b, 32) != 0);
	kms_free(&k);
}

TEST(kms_uri_is_decoded_like_go)
{
	struct kms k;

	/* percent-encoded '=' padding, decoded twice as Go's parser does */
	CHECK(kms_parse("kms://cluster-kms?salt=AAAA&key=AAAAAAAAAAAAAAAAAAAAAA%253D%253D", &k,
			NULL, 0) == 0);
	CHECK(k.key->len == 16 && k.salt->len == 3);
	kms_free(&k);
}

TEST(kms_uri_refusals_say_why)
{
	const char *bad[][2] = {
	    {"http://cluster-kms?key=AAAA&salt=AAAA", "scheme"},
	    {"kms://aws?key=AAAA&salt=AAAA", "cluster-kms"},
	    {"kms://cluster-kms?salt=AAAA", "no key"},
	    {"kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAA==", "no salt"},
	    {"kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAA==&salt=", "no salt"},
	    {"kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAA==&salt=A%2", "percent"},
	    {"kms://cluster-kms?key=AAAAAAAAAAAAAAAAAAAAAA==&salt=!!!!", "base64"},
	    {"kms://cluster-kms?key=AAAA&salt=AAAA", "16"},
	};
	char err[128];
	struct kms k;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (kms_parse(bad[i][0], &k, err, sizeof err) != -EINVAL ||
		    !strstr(err, bad[i][1])) {
			harness_fail(__FILE__, __LINE__, "'%s': got '%s'", bad[i][0], err);
			return;
		}
	}
	CHECK(kms_storage_check("storage://no-store", NULL, 0) == 0);
	CHECK(kms_storage_check("storage://aws", NULL, 0) == -EINVAL);
}
