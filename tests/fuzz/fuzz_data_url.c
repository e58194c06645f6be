/* libFuzzer target: RFC 2397 data: URLs (components carry JSON patches this way). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *u = malloc(size + 1), err[160] = "";
	uint8_t *out = NULL;
	size_t len = 0;
	int r;

	if (!u)
		return 0;
	memcpy(u, data, size);
	u[size] = 0;
	r = data_url_decode(u, &out, &len, err, sizeof err);
	if (r < 0 && (r != -EINVAL || strncmp(err, "data URL: ", 10) || strchr(err, '\n')))
		abort();
	if (r == 0 && len > strlen(u))
		abort();
	free(out);
	free(u);
	return 0;
}
