/* libFuzzer target: bcrypt hash parsing. The first 60 bytes are the hash (its cost pinned
 * to 04 when it has digits there, so the fuzzer spends its time on parsing), the rest the
 * password. A malformed hash is -EINVAL with a line; a parsed one compares. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hash[BCRYPT_HASH_LEN], err[128] = "";
	size_t n = size < BCRYPT_HASH_LEN ? size : BCRYPT_HASH_LEN;
	int r;

	memcpy(hash, data, n);
	if (n == BCRYPT_HASH_LEN && hash[4] >= '0' && hash[4] <= '9' && hash[5] >= '0' &&
	    hash[5] <= '9') {
		hash[4] = '0';
		hash[5] = '4';
	}
	r = bcrypt_check(hash, n, data + n, size - n, err, sizeof err);
	if (r == -EINVAL && strncmp(err, "bcrypt hash: ", 13))
		abort();
	if (r != 0 && r != -EINVAL && r != -EACCES)
		abort();
	return 0;
}
