/* libFuzzer target: the kernel command line (operator input): the key lookup, the node's
 * configuration from it (constel.*, root=, ip=) and ip= on its own. Values found are bounded
 * and NUL-terminated; a refusal comes with one line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "flow/node.h"
#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"constel.csp", "constel.disk-kdf", "ip", "--", ""};
	char *c = malloc(size + 1), v[16], arena[512], err[256];
	struct node_config cfg;
	struct ip_config ic;
	int r;

	if (!c)
		return 0;
	memcpy(c, data, size);
	c[size] = 0;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		r = cmdline_get(c, keys[i], v, sizeof v);
		if (r != 0 && r != 1 && r != -ENAMETOOLONG)
			abort();
		if (r == 1 && strlen(v) >= sizeof v)
			abort();
	}
	node_config_defaults(&cfg);
	err[0] = '\0';
	r = node_config_cmdline(&cfg, c, arena, sizeof arena, err, sizeof err);
	if (r < 0 && (r != -EINVAL || !err[0] || strlen(err) >= sizeof err))
		abort();
	if (r == 0 && (cfg.n_join > NODE_MAX_JOIN || cfg.reboot_delay_s < 0))
		abort();
	err[0] = '\0';
	r = ip_config_parse(c, &ic, err, sizeof err);
	if (r < 0 && (r != -EINVAL || !err[0]))
		abort();
	if (r == 0 && strlen(ic.ifname) >= sizeof ic.ifname)
		abort();
	free(c);
	return 0;
}
