/* libFuzzer target: the gRPC message deframer over arbitrary bytes in arbitrary chunks (the
 * first byte sets the chunk size). Messages never exceed the limit and never read past the
 * input. */
#include <stdint.h>
#include <stdlib.h>

#include "rpc/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct grpc_deframer d;
	size_t chunk, off = 1;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 17 + 1;
	grpc_deframer_init(&d, 4096);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk, used;
		int r = grpc_deframer_push(&d, data + off, n, &used);

		if (r < 0)
			break;
		if (used > n)
			abort();
		off += used;
		if (r == 1) {
			size_t len;
			uint8_t *m = grpc_deframer_take(&d, &len);

			if (len > 4096)
				abort();
			rpc_free(m);
		} else if (used == 0) {
			abort(); /* no progress on non-empty input */
		}
	}
	grpc_deframer_free(&d);
	return 0;
}
