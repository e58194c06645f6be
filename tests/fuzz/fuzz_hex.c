/* libFuzzer target: hex decoding. Whatever decodes must re-encode to the same text,
 * case aside. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char out[2048];
	char enc[4097];
	size_t n;

	if (size > 4096)
		return 0;
	if (hex_decode((const char *)data, size, out, sizeof out, &n) != 0)
		return 0;
	if (n * 2 != size || hex_encode(out, n, enc, sizeof enc) != 0)
		abort();
	for (size_t i = 0; i < size; i++)
		if (tolower(data[i]) != enc[i])
			abort();
	return 0;
}
