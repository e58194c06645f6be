/* libFuzzer target: the node-local endpoints' documents (Azure IMDS instance metadata, AWS's
 * identity document, OpenStack's meta_data.json and user_data) and Azure's goal state: fields
 * bounded and NUL-terminated, refusals one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/cloud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bounded(const struct md_instance *s)
{
	if (strnlen(s->name, sizeof s->name) == sizeof s->name ||
	    strnlen(s->vpc_ip, sizeof s->vpc_ip) == sizeof s->vpc_ip ||
	    strnlen(s->provider_id, sizeof s->provider_id) == sizeof s->provider_id)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = malloc(size + 1), err[160], uid[64], hash[80], host[64];
	struct azure_goal_state gs;
	struct md_instance s;

	if (!b)
		return 0;
	memcpy(b, data, size);
	b[size] = 0;
	if (azure_parse_imds(b, size, &s, uid, sizeof uid, hash, sizeof hash, err, sizeof err) == 0)
		bounded(&s);
	if (aws_parse_identity(b, size, &s, err, sizeof err) == 0)
		bounded(&s);
	if (openstack_parse_meta(b, size, &s, uid, sizeof uid, hash, sizeof hash, err,
				 sizeof err) == 0)
		bounded(&s);
	if (openstack_parse_user_data(b, size, host, sizeof host, err, sizeof err) == 0 &&
	    strnlen(host, sizeof host) == sizeof host)
		abort();
	free(b);
	/* the goal state without a terminating NUL: the parser keeps to len */
	b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	if (azure_parse_goal_state(b, size, &gs, err, sizeof err) == 0 &&
	    (!gs.incarnation[0] || !gs.container_id[0] || !gs.instance_id[0]))
		abort();
	free(b);
	return 0;
}
