/* libFuzzer target: the cluster-KMS URI parser (input from the network, in InitRequest and
 * RecoverMessage). Refusals carry one line; an accepted URI has a key of at least 16 bytes
 * and a non-empty salt, and keys derive from it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow/flow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char uri[600], err[128] = "";
	struct kms k;
	uint8_t out[32];

	if (size >= sizeof uri)
		return 0;
	memcpy(uri, data, size);
	uri[size] = '\0';
	if (kms_parse(uri, &k, err, sizeof err) != 0) {
		if (!err[0])
			abort();
		return 0;
	}
	if (k.key->len < 16 || k.salt->len == 0 || kms_derive(&k, "measurementSecret", out, 32))
		abort();
	kms_free(&k);
	return 0;
}
