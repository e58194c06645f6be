/* libFuzzer target: the kernel command-line lookup (the command line is operator input). The
 * value found for a key is bounded and NUL-terminated. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"constel.csp", "constel.disk-kdf", "ip", "--", ""};
	char *c = malloc(size + 1), v[16];

	if (!c)
		return 0;
	memcpy(c, data, size);
	c[size] = 0;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		int r = cmdline_get(c, keys[i], v, sizeof v);

		if (r != 0 && r != 1 && r != -ENAMETOOLONG)
			abort();
		if (r == 1 && strlen(v) >= sizeof v)
			abort();
	}
	free(c);
	return 0;
}
