/* libFuzzer target: a redirect's Location resolved against the URL it came from
 * (http_location_resolve), both from the input ("BASE\nLOCATION"). A result must be a URL the
 * client would fetch: http[s]://, NUL-terminated inside the buffer, nothing below a space. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1), *nl, out[512];

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = 0;
	nl = strchr(in, '\n');
	if (nl) {
		*nl = 0;
		if (http_location_resolve(in, nl + 1, out, sizeof out) == 0) {
			if (strlen(out) >= sizeof out ||
			    (strncmp(out, "http://", 7) && strncmp(out, "https://", 8)))
				abort();
			for (const char *p = out; *p; p++)
				if ((unsigned char)*p <= ' ' || *p == 0x7f)
					abort();
		}
	}
	free(in);
	return 0;
}
