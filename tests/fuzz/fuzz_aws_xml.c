/* libFuzzer target: the bounded readers of AWS's answers (agent/cloud/aws_api.c): the XML of
 * DescribeInstances and DescribeLoadBalancers, the JSON of GetResources, the error bodies,
 * IMDS's credentials document.
 * The first byte picks the reader. Whatever is read must be NUL-terminated within its field
 * and the counts within their bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/aws_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct aws_instance in[8];
	static char names[4][256];
	char next[AWS_MAX_TEXT], err[200], code[64], msg[128];
	const char *x = (const char *)data + 1;
	int n = 0;

	if (size < 1 || size > AWS_MAX_BODY)
		return 0;
	switch (data[0] % 5) {
	case 0:
		if (aws_parse_describe_instances(x, size - 1, in, 8, &n, next, sizeof next, err,
						 sizeof err) == 0) {
			if (n < 0 || n > 8 || strlen(next) >= sizeof next)
				abort();
			for (int i = 0; i < n; i++)
				if (!in[i].id[0] || strlen(in[i].id) >= sizeof in[i].id ||
				    strlen(in[i].role) >= sizeof in[i].role)
					abort();
		}
		break;
	case 1:
		if (aws_parse_describe_load_balancers(x, size - 1, names, 4, &n, next, sizeof next,
						      err, sizeof err) == 0 &&
		    (n < 0 || n > 4))
			abort();
		break;
	case 2:
		if (aws_parse_get_resources(x, size - 1, names, 4, &n, next, sizeof next, err,
					    sizeof err) == 0 &&
		    (n < 0 || n > 4))
			abort();
		break;
	case 3: {
		struct aws_credentials c;

		if (aws_parse_credentials(x, size - 1, 1000000000, &c, err, sizeof err) == 0) {
			if (!c.secret_key || !c.token || strlen(c.access_key_id) == 0)
				abort();
			aws_credentials_free(&c);
		}
		break;
	}
	default: /* an error body, or DescribeImages (the same input for both) */
		if (aws_parse_error(x, size - 1, code, sizeof code, msg, sizeof msg) == 0 &&
		    (strlen(code) >= sizeof code || strlen(msg) >= sizeof msg))
			abort();
		if (aws_parse_describe_images_tpm(x, size - 1, &n, code, sizeof code) == 0 &&
		    (n < 0 || strlen(code) >= sizeof code))
			abort();
		break;
	}
	return 0;
}
