/* libFuzzer target: the iPAddress check of https://ADDRESS (x509_has_ip_san) on a server's
 * certificate, which arrives before anything about it is verified. The first 4 bytes are the
 * address looked for; the rest is the DER. */
#include <stdint.h>
#include <stdlib.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	if ((unsigned)x509_has_ip_san(data + 4, size - 4, data, 4) > 1)
		abort();
	(void)x509_has_ip_san(data + 4, size - 4, data, size >= 20 ? 16 : 4);
	return 0;
}
