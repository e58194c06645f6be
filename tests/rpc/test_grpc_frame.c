/* gRPC message framing: the 5-byte prefix, byte-at-a-time delivery, and refusals that
 * happen before any allocation of the announced size. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rpc/rpc.h"

TEST(grpc_frame_one_byte_at_a_time)
{
	const uint8_t in[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0};
	struct grpc_deframer d;
	size_t used, len, got = 0;
	uint8_t *m;

	grpc_deframer_init(&d, 16);
	for (size_t i = 0; i < sizeof in; i++) {
		int r = grpc_deframer_push(&d, in + i, 1, &used);

		CHECK(r >= 0 && used == 1);
		if (r == 1) {
			m = grpc_deframer_take(&d, &len);
			if (got == 0)
				CHECK(len == 3 && !memcmp(m, "abc", 3));
			else
				CHECK(len == 0);
			rpc_free(m);
			got++;
		}
	}
	CHECK(got == 2);
	grpc_deframer_free(&d);
}

TEST(grpc_frame_refuses_compressed_and_oversized)
{
	const uint8_t compressed[] = {1, 0, 0, 0, 1, 'x'};
	const uint8_t huge[] = {0, 0xff, 0xff, 0xff, 0xff};
	struct grpc_deframer d;
	size_t used;

	grpc_deframer_init(&d, GRPC_MAX_MESSAGE);
	CHECK(grpc_deframer_push(&d, compressed, sizeof compressed, &used) == -EPROTONOSUPPORT);
	grpc_deframer_free(&d);
	grpc_deframer_init(&d, GRPC_MAX_MESSAGE);
	CHECK(grpc_deframer_push(&d, huge, sizeof huge, &used) == -EMSGSIZE);
	CHECK(d.msg == NULL);
	grpc_deframer_free(&d);
}
