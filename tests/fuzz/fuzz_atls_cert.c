/* libFuzzer target: the Go-like certificate check of aTLS peers (strict DER, serial,
 * validity, extensions). Whatever passes must name an SPKI and extensions inside the input. */
#include <stdint.h>
#include <stdlib.h>

#include "atls/conn_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct atls_cert_info ci;
	char err[200];

	if (size > ATLS_PEER_CERT_MAX)
		return 0;
	if (atls_cert_check(data, size, 1800000000, &ci, err, sizeof err) != 0)
		return 0;
	if (ci.spki < data || ci.spki + ci.spki_len > data + size || ci.n_ext > ATLS_EXT_MAX)
		abort();
	for (size_t i = 0; i < ci.n_ext; i++)
		if (ci.ext[i].value + ci.ext[i].value_len > data + size)
			abort();
	return 0;
}
