/* libFuzzer target: the dummy attestation document parser. What parses must re-issue to a
 * document that parses to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/attest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ud[DUMMY_FIELD_MAX], nb[DUMMY_FIELD_MAX], doc[DUMMY_DOC_MAX], got[32];
	size_t udl, nbl, n;
	char err[128];

	if (attest_dummy_parse(data, size, ud, &udl, nb, &nbl, err, sizeof err) != 0)
		return 0;
	if (udl != 32)
		return 0;
	if (attest_dummy_issuer.issue(NULL, ud, nb, nbl, doc, sizeof doc, &n, err, sizeof err))
		abort();
	if (attest_dummy_validator.validate(NULL, doc, n, nb, nbl, got, err, sizeof err) ||
	    memcmp(got, ud, 32))
		abort();
	return 0;
}
