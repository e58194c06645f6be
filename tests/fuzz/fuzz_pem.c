/* libFuzzer target: PEM decoding (CA certificates and keys the join service reads) and the
 * CA loader behind it. Whatever decodes must fit the buffer; refusals carry one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ca ca;
	uint8_t out[4096];
	char *text = malloc(size + 1), err[200] = "";
	size_t n = sizeof out + 1;
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	r = pem_decode(text, size, "CERTIFICATE", out, sizeof out, &n);
	if (r == 0 && n > sizeof out)
		abort();
	if (ca_load(text, size, text, size, &ca, err, sizeof err) < 0 && strncmp(err, "CA: ", 4))
		abort();
	ca_wipe(&ca);
	free(text);
	return 0;
}
