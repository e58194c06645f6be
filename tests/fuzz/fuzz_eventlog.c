/* libFuzzer target: the crypto-agile event log replay, for every bank. Refusals carry one
 * line; a replay marks only PCRs 0-23 and gives digests of the bank's length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/eventlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t algs[] = {0x0004, 0x000B, 0x000C, 0x000D};
	struct eventlog_pcrs out;
	char err[160];

	for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
		err[0] = '\0';
		if (eventlog_replay(data, size, algs[i], &out, err, sizeof err) != 0) {
			if (strncmp(err, "event log: ", 11))
				abort();
			continue;
		}
		if (out.digest_len == 0 || out.digest_len > EVENTLOG_DIGEST_MAX)
			abort();
	}
	return 0;
}
