/* libFuzzer target: the node-state file (read from the state disk on every reboot). Any input
 * is refused with one line or yields 32 salt bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t salt[32];
	char err[160] = "";
	int r = node_state_parse((const char *)data, size, salt, err, sizeof err);

	if (r < 0 && (r != -EINVAL || strncmp(err, "node state: ", 12) || strchr(err, '\n')))
		abort();
	return 0;
}
