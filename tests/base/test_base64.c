/* Base64 in both alphabets: RFC 4648 vectors, the Go conventions on the Constellation wire,
 * strict rejection of malformed input and wiping of partial output. */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "harness.h"

static const char *rfc_in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
static const char *rfc_out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};

TEST(base64_rfc4648_vectors)
{
	char enc[16];
	unsigned char dec[16];
	size_t n;

	for (int i = 0; i < 7; i++) {
		CHECK(base64_encode(BASE64_STD, rfc_in[i], strlen(rfc_in[i]), enc, sizeof enc) ==
		      0);
		CHECK(!strcmp(enc, rfc_out[i]));
		CHECK(base64_decode(BASE64_STD, enc, strlen(enc), dec, sizeof dec, &n) == 0);
		CHECK(n == strlen(rfc_in[i]));
		CHECK_BYTES(dec, rfc_in[i], n);
	}
}

TEST(base64_alphabets_differ_in_62_and_63)
{
	const unsigned char in[] = {0xfb, 0xff, 0xbf};
	char enc[8];
	unsigned char dec[3];

	CHECK(base64_encode(BASE64_STD, in, 3, enc, sizeof enc) == 0);
	CHECK(!strcmp(enc, "+/+/"));
	CHECK(base64_encode(BASE64_URL, in, 3, enc, sizeof enc) == 0);
	CHECK(!strcmp(enc, "-_-_"));
	CHECK(base64_decode(BASE64_URL, "-_-_", 4, dec, 3, NULL) == 0);
	CHECK_BYTES(dec, in, 3);
	CHECK(base64_decode(BASE64_STD, "-_-_", 4, dec, 3, NULL) == -EINVAL);
	CHECK(base64_decode(BASE64_URL, "+/+/", 4, dec, 3, NULL) == -EINVAL);
}

/* A 32-byte aTLS nonce is 44 characters with one '=' (spec §1.2). */
TEST(base64_32_byte_nonce_is_44_chars_padded)
{
	unsigned char nonce[32] = {0};
	char enc[64];

	CHECK(base64_encoded_len(32) == 44);
	CHECK(base64_encode(BASE64_STD, nonce, 32, enc, sizeof enc) == 0);
	CHECK(strlen(enc) == 44 && enc[43] == '=' && enc[42] != '=');
}

TEST(base64_decode_rejects_malformed)
{
	static const char *bad[] = {
	    "Zg=",	/* length not a multiple of 4 */
	    "Zg",	/* unpadded, as Go's StdEncoding refuses */
	    "Z===",	/* three pads */
	    "Zg=a",	/* pad inside */
	    "=Zg=",	/* pad first */
	    "Zm9v\n",	/* white space */
	    "Zm 9",	/* white space */
	    "Zm9*",	/* not in the alphabet */
	    "Zg==Zg==", /* pad before the last quartet */
	    "====",
	};
	unsigned char out[16];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(base64_decode(BASE64_STD, bad[i], strlen(bad[i]), out, sizeof out, NULL) ==
		      -EINVAL);
}

TEST(base64_decode_accepts_nonzero_trailing_bits_like_go)
{
	unsigned char out[2];
	size_t n;

	/* "Zh==" has non-zero bits after the byte 'f'; Go's default decoder ignores them. */
	CHECK(base64_decode(BASE64_STD, "Zh==", 4, out, sizeof out, &n) == 0);
	CHECK(n == 1 && out[0] == 'f');
}

TEST(base64_decode_wipes_output_on_error)
{
	unsigned char out[6];

	memset(out, 0xaa, sizeof out);
	CHECK(base64_decode(BASE64_STD, "Zm9vYm*=", 8, out, sizeof out, NULL) == -EINVAL);
	for (size_t i = 0; i < 5; i++)
		CHECK(out[i] == 0);
}

TEST(base64_bounds)
{
	char enc[4];
	unsigned char dec[2];

	CHECK(base64_encode(BASE64_STD, "foo", 3, enc, sizeof enc) == -ENOBUFS);
	CHECK(base64_decode(BASE64_STD, "Zm9v", 4, dec, sizeof dec, NULL) == -ENOBUFS);
}

TEST(base64_round_trip_every_length_and_byte)
{
	unsigned char in[300], back[300];
	char enc[401];
	size_t n;

	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (unsigned char)(i * 7 + 3);
	for (size_t len = 0; len <= sizeof in; len++) {
		for (int a = BASE64_STD; a <= BASE64_URL; a++) {
			CHECK(base64_encode(a, in, len, enc, sizeof enc) == 0);
			CHECK(strlen(enc) == base64_encoded_len(len));
			CHECK(base64_decode(a, enc, strlen(enc), back, sizeof back, &n) == 0);
			CHECK(n == len);
			CHECK_BYTES(back, in, len);
		}
	}
}
