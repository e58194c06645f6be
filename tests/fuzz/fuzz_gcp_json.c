/* libFuzzer target: the readers of GCE's answers (agent/cloud/gcp_api.c): an Instance, an
 * InstanceList, a ZoneList, a ForwardingRuleList, Google's error shape and the metadata
 * server's token document (flat reader writing into a secret). The first byte picks the
 * reader. Whatever is read must be NUL-terminated within its field and counts within bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cloud/gcp_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gcp_instance in[8];
	static char zones[4][64];
	char next[GCP_PAGE_TOKEN_MAX + 1], err[256], host[64], port[8], msg[128], reason[32];
	const char *x = (const char *)data + 1;
	int n = 0, found = 0;

	if (size < 1 || size > GCP_MAX_BODY)
		return 0;
	switch (data[0] % 6) {
	case 0:
		if (gcp_parse_instance(x, size - 1, in, err, sizeof err) == 0 &&
		    (!in[0].name[0] || strlen(in[0].name) >= sizeof in[0].name ||
		     strlen(in[0].vpc_ip) >= sizeof in[0].vpc_ip ||
		     strlen(in[0].init_secret_hash) >= sizeof in[0].init_secret_hash))
			abort();
		break;
	case 1:
		if (gcp_parse_instance_list(x, size - 1, in, 8, &n, next, sizeof next, err,
					    sizeof err) == 0 &&
		    (n < 0 || n > 8 || strlen(next) >= sizeof next))
			abort();
		break;
	case 2:
		if (gcp_parse_zone_list(x, size - 1, zones, 4, &n, next, sizeof next, err,
					sizeof err) == 0) {
			if (n < 0 || n > 4)
				abort();
			for (int i = 0; i < n; i++)
				if (!zones[i][0] || strchr(zones[i], '/'))
					abort();
		}
		break;
	case 3:
		if (gcp_parse_forwarding_rules(x, size - 1, host, sizeof host, port, sizeof port,
					       &found, next, sizeof next, err, sizeof err) == 0 &&
		    found && (!host[0] || !port[0] || strspn(port, "0123456789") != strlen(port)))
			abort();
		break;
	case 4:
		if (gcp_parse_error(x, size - 1, msg, sizeof msg, reason, sizeof reason) == 0 &&
		    (strlen(msg) >= sizeof msg || strlen(reason) >= sizeof reason))
			abort();
		break;
	default: {
		struct gcp_token t;

		if (gcp_parse_token(x, size - 1, 1000, &t, err, sizeof err) == 0) {
			if (!t.access_token || !t.access_token->bytes[0] || t.expires_ms < 1000)
				abort();
			gcp_token_free(&t);
		}
		break;
	}
	}
	return 0;
}
