/* libFuzzer target: the JoinService's PKCS#10 parser (input from any attested node).
 * Refusals carry one line; an accepted request has O=system:nodes and a system:node: CN,
 * and its raw subject and key lie inside the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csr_info c;
	char err[200] = "";

	if (csr_parse(data, size, &c, err, sizeof err) != 0) {
		if (strncmp(err, "certificate request: ", 21))
			abort();
		return 0;
	}
	if (strcmp(c.org, "system:nodes") || strncmp(c.cn, "system:node:", 12) ||
	    c.subject < data || c.subject + c.subject_len > data + size || c.spki < data ||
	    c.spki + c.spki_len > data + size)
		abort();
	return 0;
}
