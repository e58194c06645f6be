/* Secret buffers: sizes, copies, randomness, constant-time equality, wiping. */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "harness.h"

TEST(secret_new_is_zeroed_and_sized)
{
	struct secret *s = secret_new(48);

	CHECK(s);
	CHECK(s->len == 48);
	for (size_t i = 0; i < 48; i++)
		CHECK(s->bytes[i] == 0);
	secret_free(s);
}

TEST(secret_from_copies)
{
	_cleanup_secret_ struct secret *s = secret_from("abc", 3);

	CHECK(s && s->len == 3);
	CHECK_BYTES(s->bytes, "abc", 3);
}

TEST(secret_random_fills_and_differs)
{
	_cleanup_secret_ struct secret *a = NULL;
	_cleanup_secret_ struct secret *b = NULL;

	CHECK(secret_random(32, &a) == 0);
	CHECK(secret_random(32, &b) == 0);
	CHECK(a->len == 32 && b->len == 32);
	/* Two 256-bit draws collide with probability 2^-256. */
	CHECK(!secret_equal(a, b));
}

TEST(secret_equal_compares_length_and_bytes)
{
	_cleanup_secret_ struct secret *a = secret_from("key1", 4);
	_cleanup_secret_ struct secret *b = secret_from("key1", 4);
	_cleanup_secret_ struct secret *c = secret_from("key2", 4);
	_cleanup_secret_ struct secret *d = secret_from("key", 3);

	CHECK(a && b && c && d);
	CHECK(secret_equal(a, b));
	CHECK(!secret_equal(a, c));
	CHECK(!secret_equal(a, d));
}

TEST(secret_wipe_clears_memory)
{
	unsigned char buf[16];

	memset(buf, 0x5a, sizeof buf);
	secret_wipe(buf, sizeof buf);
	for (size_t i = 0; i < sizeof buf; i++)
		CHECK(buf[i] == 0);
}

/* secret_free must not be a no-op for NULL and the cleanup attribute must reset the pointer. */
TEST(secret_free_accepts_null_and_cleanup_resets)
{
	struct secret *s = secret_new(4);

	secret_free(NULL);
	CHECK(s);
	secret_freep(&s);
	CHECK(s == NULL);
}
