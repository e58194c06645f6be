/* libFuzzer target: a SCSI disk's VPD page 0x83 (GCP's persistent-disk name in a designator):
 * every designator length is checked against the page's own length and the bytes read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/cloud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1); /* exactly size: ASan sees any overread */
	char name[64];

	if (!p)
		return 0;
	memcpy(p, data, size);
	if (gcp_vpd83_device_name(p, size, name, sizeof name) == 0 &&
	    (strnlen(name, sizeof name) == 0 || strnlen(name, sizeof name) == sizeof name))
		abort();
	free(p);
	return 0;
}
