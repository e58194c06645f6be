/* libFuzzer target: HTTP responses (the metadata server and component URLs are network
 * input). A body the parser returns lies inside the input; refusals are one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = malloc(size + 1), *body, err[128] = "";
	size_t len;
	int status, r;

	if (!b)
		return 0;
	memcpy(b, data, size);
	b[size] = 0;
	r = http_parse_response(b, size, &status, &body, &len, err, sizeof err);
	if (r < 0 && (r != -EINVAL || strncmp(err, "http: ", 6) || strchr(err, '\n')))
		abort();
	if (r == 0 && (body < b || body + len > b + size || status < 100 || status > 599))
		abort();
	free(b);
	return 0;
}
