/* Hex encoding: round trip, both cases on input, strict rejection, bounds. */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "harness.h"

TEST(hex_encode_is_lower_case)
{
	char out[9];

	CHECK(hex_encode("\x00\xab\xcd\xff", 4, out, sizeof out) == 0);
	CHECK(!strcmp(out, "00abcdff"));
}

TEST(hex_encode_needs_room_for_nul)
{
	char out[8];

	CHECK(hex_encode("\x00\xab\xcd\xff", 4, out, sizeof out) == -ENOBUFS);
}

TEST(hex_decode_accepts_both_cases)
{
	unsigned char out[4];
	size_t n = 0;

	CHECK(hex_decode("00AbcDfF", 8, out, sizeof out, &n) == 0);
	CHECK(n == 4);
	CHECK_BYTES(out, "\x00\xab\xcd\xff", 4);
}

TEST(hex_decode_rejects_odd_length_and_non_digits)
{
	unsigned char out[4] = {1, 2, 3, 4};
	size_t n = 99;

	CHECK(hex_decode("abc", 3, out, sizeof out, &n) == -EINVAL);
	CHECK(hex_decode("zz", 2, out, sizeof out, &n) == -EINVAL);
	CHECK(hex_decode("0g", 2, out, sizeof out, &n) == -EINVAL);
	CHECK(hex_decode("00 1", 4, out, sizeof out, &n) == -EINVAL);
	/* Nothing written on failure. */
	CHECK(n == 99);
	CHECK_BYTES(out, "\x01\x02\x03\x04", 4);
}

TEST(hex_decode_refuses_overflow)
{
	unsigned char out[2];

	CHECK(hex_decode("001122", 6, out, sizeof out, NULL) == -ENOBUFS);
}

TEST(hex_round_trip_all_bytes)
{
	unsigned char in[256], back[256];
	char txt[513];
	size_t n;

	for (int i = 0; i < 256; i++)
		in[i] = (unsigned char)i;
	CHECK(hex_encode(in, 256, txt, sizeof txt) == 0);
	CHECK(hex_decode(txt, 512, back, sizeof back, &n) == 0);
	CHECK(n == 256);
	CHECK_BYTES(back, in, 256);
}
