/* libFuzzer target: the strict DER reader, walked recursively over every constructed element
 * and every time it finds. An element it accepts must lie inside its parent, and re-encoding
 * its header with the writer must give back the same bytes (DER has one encoding). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/der.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct der_in in, int depth)
{
	uint8_t tag, hdr[8];
	struct der_in el, raw;

	if (depth > 32)
		return;
	while (in.len > 0) {
		struct der_in t = in;
		time_t when;

		if (der_next(&in, &tag, &el, &raw) < 0)
			return;
		if (raw.p < t.p || raw.p + raw.len > t.p + t.len ||
		    el.p + el.len != raw.p + raw.len)
			abort();
		{
			struct der_out d = {.p = hdr, .cap = sizeof hdr};
			size_t start = der_begin(&d);

			der_end(&d, start, tag); /* tag and the length of an empty element */
			if (el.len == 0 && (d.err || d.len != raw.len || memcmp(hdr, raw.p, d.len)))
				abort();
		}
		if (tag == DER_UTC_TIME || tag == DER_GENERALIZED_TIME)
			(void)der_time(&t, &when);
		if (tag & 0x20)
			walk(el, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	walk((struct der_in){data, size}, 0);
	return 0;
}
