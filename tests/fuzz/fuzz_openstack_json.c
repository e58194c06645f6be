/* libFuzzer target: the readers of OpenStack's answers (agent/cloud/openstack_api.c):
 * user_data's credentials, Keystone's token body, Nova's servers page, Neutron's networks
 * and subnets. The first byte picks the reader. Whatever is read must be NUL-terminated within
 * its field and counts within bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cloud/openstack_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct os_server srv[8];
	static const uint8_t net[4] = {192, 168, 178, 0};
	char next[512], err[256], a[256], b[256], name[64];
	const char *x = (const char *)data + 1;
	uint8_t ip[4];
	int n = 0, prefix = 0;
	time_t exp;

	if (size < 1 || size > OS_API_MAX_BODY)
		return 0;
	switch (data[0] % 5) {
	case 0: {
		struct os_creds c;

		if (os_parse_creds(x, size - 1, &c, err, sizeof err) == 0) {
			if (!c.password || !c.username[0] || !c.auth_url[0])
				abort();
			os_creds_free(&c);
		}
		break;
	}
	case 1:
		if (os_parse_token_body(x, size - 1, &exp, a, sizeof a, b, sizeof b, err,
					sizeof err) == 0 &&
		    (!a[0] || !b[0]))
			abort();
		break;
	case 2:
		if (os_parse_servers(x, size - 1, net, 24, srv, 8, &n, next, sizeof next, err,
				     sizeof err) == 0) {
			if (n < 0 || n > 8)
				abort();
			for (int i = 0; i < n; i++)
				if (!srv[i].name[0] || !srv[i].vpc_ip[0] || srv[i].role < 0 ||
				    strncmp(srv[i].vpc_ip, "192.168.178.", 12))
					abort();
		}
		break;
	case 3:
		if (os_parse_networks(x, size - 1, name, sizeof name, err, sizeof err) == 0 &&
		    strlen(name) >= sizeof name)
			abort();
		break;
	default:
		if (os_parse_subnets(x, size - 1, "constell-net", ip, &prefix, err, sizeof err) ==
			0 &&
		    (prefix < 0 || prefix > 32))
			abort();
		break;
	}
	return 0;
}
