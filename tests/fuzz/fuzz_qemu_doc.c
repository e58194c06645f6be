/* libFuzzer target: the qemu-vtpm document parser and validator (JSON, base64, TPM
 * structures, event log) on arbitrary input, half of the time with measurements. Nothing
 * made up verifies, so every input must be refused with one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t nonce[32];
	static struct measurements m = {.n = 1, .m = {{.pcr = 15, .len = 32}}};
	uint8_t ud[64];
	size_t n;
	char err[400] = "";
	int r;

	if (size > 65536)
		return 0;
	r = qemu_vtpm_validate(data, size, nonce, sizeof nonce, size % 2 ? &m : NULL, ud, sizeof ud,
			       &n, err, sizeof err);
	if (r == 0 || (r == -EINVAL && !err[0]))
		abort();
	return 0;
}
