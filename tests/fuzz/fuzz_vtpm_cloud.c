/* libFuzzer target: what the vTPM variants parse from the clouds. The first byte picks:
 * even, the PCR 0 platform of gcp-sev-es's validator (gce_platform) on an event log; odd, the
 * IMDS identity document re-encoded as Go encodes it (aws-nitro-tpm's issuer). Refusals carry
 * one line; an accepted document is a JSON object within its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[4096];
	char err[200] = "";
	long ver;
	int tech;
	size_t n = 0;

	if (size < 1)
		return 0;
	if (data[0] % 2 == 0) {
		if (gce_platform(data + 1, size - 1, &ver, &tech, err, sizeof err) < 0) {
			if (!err[0] || strchr(err, '\n'))
				abort();
		} else if (tech < -1 || tech > 255 || ver < -1) {
			abort();
		}
		return 0;
	}
	if (aws_identity_document_go((const char *)data + 1, size - 1, out, sizeof out, &n, err,
				     sizeof err) == 0) {
		if (n < 2 || n > sizeof out || out[0] != '{' || out[n - 1] != '}')
			abort();
	} else if (!err[0] || strchr(err, '\n')) {
		abort();
	}
	return 0;
}
