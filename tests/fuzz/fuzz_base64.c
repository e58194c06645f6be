/* libFuzzer target: base64 decoding in both alphabets. Besides not crashing, whatever
 * decodes must re-encode to a string that decodes to the same bytes, and the decoded length
 * must be what the encoded length promises. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char out[4096], back[4096];
	char enc[8192];
	size_t n, m;

	if (size > 4096)
		return 0;
	for (int a = BASE64_STD; a <= BASE64_URL; a++) {
		if (base64_decode(a, (const char *)data, size, out, sizeof out, &n) != 0)
			continue;
		if (n > size / 4 * 3 || n + 2 < size / 4 * 3)
			abort();
		if (base64_encode(a, out, n, enc, sizeof enc) != 0)
			abort();
		if (strlen(enc) != size)
			abort();
		if (base64_decode(a, enc, size, back, sizeof back, &m) != 0 || m != n ||
		    memcmp(out, back, n))
			abort();
	}
	return 0;
}
