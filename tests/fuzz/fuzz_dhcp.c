/* libFuzzer target: DHCP replies (anyone on the link can send them). The input is an IPv4
 * packet; when it is long enough the transaction id and MAC are made to match, so the option
 * parser is reached. A refusal is one line. The input is also given whole to the classless
 * routes parser (options 121 and 249, RFC 3442): at most DHCP_ROUTES_MAX routes, each of a
 * width up to 32 with no destination bits past it. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	uint8_t *p = malloc(size ? size : 1);
	struct dhcp_reply r;
	char err[128] = "";
	int rc;

	if (!p)
		return 0;
	memcpy(p, data, size);
	if (size >= 28 + 44) {
		memcpy(p + 28 + 4, "\x01\x02\x03\x04", 4);
		memcpy(p + 28 + 28, mac, 6);
	}
	rc = dhcp_parse(p, size, 0x01020304, mac, &r, err, sizeof err);
	if (rc < 0 && (rc != -EINVAL || strncmp(err, "dhcp: ", 6) || strchr(err, '\n')))
		abort();
	if (rc == 0 && (r.type < 1 || r.type > 8))
		abort();
	if (rc == 0 && (r.nroutes > DHCP_ROUTES_MAX || (r.mtu && r.mtu < 68)))
		abort();
	memset(&r, 0, sizeof r);
	rc = dhcp_parse_classless(data, size, &r, err, sizeof err);
	if (rc < 0 && (rc != -EINVAL || strncmp(err, "dhcp: ", 6)))
		abort();
	if (r.nroutes > DHCP_ROUTES_MAX || (rc == 0 && !r.nroutes))
		abort();
	for (unsigned i = 0; i < r.nroutes; i++) {
		uint32_t m =
		    r.routes[i].prefix ? htonl(0xffffffffu << (32 - r.routes[i].prefix)) : 0;

		if (r.routes[i].prefix > 32 || (r.routes[i].dst & ~m))
			abort();
	}
	free(p);
	return 0;
}
