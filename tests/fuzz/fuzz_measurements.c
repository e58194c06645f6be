/* libFuzzer target: the expected-measurements JSON. Refusals carry one line; accepted
 * entries name PCRs 0-23 with 32- or 48-byte values, all the same length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct measurements m;
	char err[200] = "";

	if (measurements_parse((const char *)data, size, &m, err, sizeof err) != 0) {
		if (strncmp(err, "measurements: ", 14))
			abort();
		return 0;
	}
	for (size_t i = 0; i < m.n; i++)
		if (m.m[i].pcr < 0 || m.m[i].pcr >= 24 || (m.m[i].len != 32 && m.m[i].len != 48) ||
		    m.m[i].len != m.m[0].len)
			abort();
	return 0;
}
