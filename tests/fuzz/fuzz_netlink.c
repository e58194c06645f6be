/* libFuzzer target: the rtnetlink link-dump parser. Malformed dumps are refused with one line;
 * names are always NUL-terminated. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_link l[4];
	char err[128] = "";
	int count = 0, done = 0, rc;
	void *p = malloc(size ? size : 1); /* aligned, as the kernel's buffer is */

	if (!p)
		return 0;
	memcpy(p, data, size);
	rc = nl_parse_links(p, size, l, 4, &count, &done, err, sizeof err);
	if (rc < 0 && (strncmp(err, "netlink: ", 9) || strchr(err, '\n')))
		abort();
	for (int i = 0; rc == 0 && i < count && i < 4; i++)
		if (strnlen(l[i].name, sizeof l[i].name) == sizeof l[i].name)
			abort();
	free(p);
	return 0;
}
