/* libFuzzer target: the OpenSSH private-key parser. Refusals carry one line; a key it
 * accepts is consistent (its public half derives from its seed) and formats again to a text
 * that parses to the same key. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ssh_key k, back;
	char err[128] = "", text[1024];

	if (size > 8192)
		return 0;
	if (ssh_key_parse((const char *)data, size, &k, err, sizeof err) != 0) {
		if (strncmp(err, "ssh key: ", 9))
			abort();
		return 0;
	}
	if (ssh_key_format(&k, text, sizeof text) != 0 ||
	    ssh_key_parse(text, strlen(text), &back, NULL, 0) != 0 || memcmp(&k, &back, sizeof k))
		abort();
	return 0;
}
