/* libFuzzer target: decoding the server nonce from a CertificateRequest DN (spec §1.3). */
#include <stdint.h>
#include <stdlib.h>

#include "atls/atls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t nonce[64];
	size_t n;
	char err[200];

	if (atls_nonce_dn_decode(data, size, nonce, sizeof nonce, &n, err, sizeof err) == 0 &&
	    n > sizeof nonce)
		abort();
	return 0;
}
