/* libFuzzer target: the join ticket as the node decodes it (network input from the join
 * service): the control-plane files and components through their callbacks into owned
 * memory, the 32-byte key checks, the file-name check. A refusal comes with one line; what is
 * accepted has safe names and bounded counts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow/flow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ticket t;
	char err[256] = "";
	int r;

	if (size > (1 << 20))
		return 0;
	r = ticket_decode(data, size, &t, err, sizeof err);
	if (r < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	if (t.n_files > TICKET_MAX_FILES || t.comps.n > TICKET_MAX_COMPONENTS)
		abort();
	for (int i = 0; i < t.n_files; i++)
		if (t.files[i].name[0] == '/' || strstr(t.files[i].name, ".."))
			abort();
	ticket_free(&t);
	return 0;
}
