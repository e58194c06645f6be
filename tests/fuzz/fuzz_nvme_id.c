/* libFuzzer target: the NVMe identify pages a disk hands the boot (GCP's Identify Namespace
 * vendor JSON, AWS's Identify Controller block-device name): a name found is bounded,
 * NUL-terminated and only [A-Za-z0-9_-]. Shorter inputs are padded with zeros. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/cloud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *name)
{
	size_t n = strnlen(name, 64);

	if (n == 0 || n == 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789-_") != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t page[NVME_ID_SIZE] = {0};
	char name[64];

	memcpy(page, data, size < sizeof page ? size : sizeof page);
	if (gcp_nvme_device_name(page, name, sizeof name) == 0)
		check(name);
	if (aws_ebs_device_name(page, name, sizeof name) == 0)
		check(name);
	return 0;
}
