/* bcrypt against published vectors (OpenBSD's and Openwall's crypt_blowfish test set), our
 * own round trip, and every malformed-hash refusal. Go-made hashes are checked in the
 * interop tests. */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "harness.h"

static int check(const char *hash, const char *pw)
{
	return bcrypt_check(hash, strlen(hash), pw, strlen(pw), NULL, 0);
}

TEST(bcrypt_matches_published_vectors)
{
	CHECK(check("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW", "U*U") == 0);
	CHECK(check("$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK", "U*U*") == 0);
	CHECK(check("$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a", "U*U*U") == 0);
	CHECK(check("$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy", "") == 0);
}

TEST(bcrypt_ignores_key_bytes_after_72)
{
	char pw[100], hash[BCRYPT_HASH_LEN + 1];
	uint8_t salt[16] = {1, 2, 3};

	memset(pw, 'a', sizeof pw);
	CHECK(bcrypt_hash(pw, 72, 4, salt, hash) == 0);
	CHECK(bcrypt_check(hash, strlen(hash), pw, 99, NULL, 0) == 0);
	CHECK(bcrypt_check(hash, strlen(hash), pw, 71, NULL, 0) == -EACCES);
}

TEST(bcrypt_round_trip_and_mismatch)
{
	uint8_t secret[32], salt[16];
	char hash[BCRYPT_HASH_LEN + 1];

	for (int i = 0; i < 32; i++)
		secret[i] = (uint8_t)(i * 7); /* raw bytes, with a NUL inside */
	memset(salt, 0x5a, sizeof salt);
	CHECK(bcrypt_hash(secret, sizeof secret, 6, salt, hash) == 0);
	CHECK(strlen(hash) == BCRYPT_HASH_LEN && !strncmp(hash, "$2a$06$", 7));
	CHECK(bcrypt_check(hash, strlen(hash), secret, sizeof secret, NULL, 0) == 0);
	secret[31] ^= 1;
	CHECK(bcrypt_check(hash, strlen(hash), secret, sizeof secret, NULL, 0) == -EACCES);
	CHECK(bcrypt_check(hash, strlen(hash), secret, 0, NULL, 0) == -EACCES);
}

TEST(bcrypt_refuses_malformed_hashes)
{
	const char *bad[] = {
	    "",
	    "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe",   /* short */
	    "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeWW", /* long */
	    "$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* version */
	    "$1a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* version */
	    "$2a$5x$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* cost */
	    "$2a$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* cost low */
	    "$2a$31$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* cost high */
	    "$2a$05$CCCCCCCCCCCCCCCCCCCC*.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",  /* salt */
	    "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvy=eW",  /* digest */
	    "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0X\0uQYb4YMJKvyOeW", /* NUL */
	};
	char err[128];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (bcrypt_check(bad[i], i == 10 ? 60 : strlen(bad[i]), "U*U", 3, err,
				 sizeof err) != -EINVAL ||
		    strncmp(err, "bcrypt hash: ", 13)) {
			harness_fail(__FILE__, __LINE__, "case %zu accepted or unclear: '%s'", i,
				     err);
			return;
		}
	}
}
