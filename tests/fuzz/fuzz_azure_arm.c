/* libFuzzer target: the readers of ARM's and IMDS's answers (agent/cloud/azure_arm.c): the
 * managed identity's token, the list pages of scale sets, VMs and load balancers, one VM, a network
 * interface, a public IP address, ARM's error body, a provider ID.
 * The first byte picks the reader. Whatever is read must be NUL-terminated within its field
 * and the counts within their bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cloud/azure_arm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct azure_vm vms[4];
	static struct azure_lb lbs[2];
	static char sets[4][96], next[4096];
	char err[200], a[64], b[96], c[96], d[16], ip[48], code[64], msg[128];
	const char *x = (const char *)data + 1;
	size_t len = size - 1;
	int n = 0;

	if (size < 1 || size > ARM_MAX_BODY)
		return 0;
	switch (data[0] % 8) {
	case 0: {
		struct secret *t;
		time_t exp;

		if (azure_parse_token(x, len, 1000000000, &t, &exp, err, sizeof err) == 0) {
			if (!t || t->len == 0 || exp <= 1000000000)
				abort();
			secret_free(t);
		}
		break;
	}
	case 1:
		if (azure_parse_list(x, len, AZURE_LIST_SCALE_SETS, "c0ffee42", sets, 4, &n, next,
				     sizeof next, err, sizeof err) == 0 &&
		    (n < 0 || n > 4 || strlen(next) >= sizeof next))
			abort();
		break;
	case 2:
		if (azure_parse_list(x, len, AZURE_LIST_VMS, NULL, vms, 4, &n, next, sizeof next,
				     err, sizeof err) == 0) {
			if (n < 0 || n > 4)
				abort();
			for (int i = 0; i < n; i++)
				if (!vms[i].instance_id[0] || !vms[i].nic[0] ||
				    strlen(vms[i].nic) >= sizeof vms[i].nic)
					abort();
		}
		/* the same bytes as one VM (virtualMachineScaleSetVMs.Get) */
		if (azure_parse_vm(x, len, &vms[0], err, sizeof err) == 0 &&
		    (!vms[0].instance_id[0] || !vms[0].nic[0] || !vms[0].name[0]))
			abort();
		break;
	case 3:
		if (azure_parse_list(x, len, AZURE_LIST_LBS, "c0ffee42", lbs, 2, &n, next,
				     sizeof next, err, sizeof err) == 0 &&
		    (n < 0 || n > 2))
			abort();
		break;
	case 4:
		if (azure_parse_nic(x, len, ip, sizeof ip, err, sizeof err) == 0 &&
		    (!ip[0] || strlen(ip) >= sizeof ip))
			abort();
		break;
	case 5:
		if (azure_parse_public_ip(x, len, ip, sizeof ip, err, sizeof err) == 0 && !ip[0])
			abort();
		break;
	case 6:
		if (azure_parse_arm_error(x, len, code, sizeof code, msg, sizeof msg) == 0 &&
		    (strlen(code) >= sizeof code || strlen(msg) >= sizeof msg))
			abort();
		break;
	default: {
		char pid[512];

		if (len >= sizeof pid || memchr(x, 0, len))
			return 0;
		memcpy(pid, x, len);
		pid[len] = '\0';
		if (azure_split_provider_id(pid, a, sizeof a, b, sizeof b, c, sizeof c, d,
					    sizeof d) == 0 &&
		    (!a[0] || !b[0] || !c[0] || !d[0]))
			abort();
	}
	}
	return 0;
}
