/* libFuzzer target: the metadata API's JSON bodies (/self, /peers, /endpoint). Fields are
 * bounded and NUL-terminated; refusals are one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow/flow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = malloc(size + 1), err[160], ep[64];
	struct md_instance self, peers[4];
	int n;

	if (!b)
		return 0;
	memcpy(b, data, size);
	b[size] = 0;
	if (md_parse_self(b, size, &self, err, sizeof err) == 0 &&
	    (strnlen(self.name, sizeof self.name) == sizeof self.name ||
	     strnlen(self.vpc_ip, sizeof self.vpc_ip) == sizeof self.vpc_ip))
		abort();
	if (md_parse_peers(b, size, peers, 4, &n, err, sizeof err) == 0 && (n < 0 || n > 4))
		abort();
	if (md_parse_endpoint(b, size, ep, sizeof ep, err, sizeof err) == 0 &&
	    strnlen(ep, sizeof ep) == sizeof ep)
		abort();
	free(b);
	return 0;
}
