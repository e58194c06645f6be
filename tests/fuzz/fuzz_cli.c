/* libFuzzer target: the agent's command line and TCTI strings. The input is split at NUL
 * bytes into at most 16 arguments. A successful parse must hand back pointers into argv
 * and a verbosity in range; an error must be one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[18], err[256];
	int argc = 1;
	struct cli c;
	size_t i = 0;

	if (size > 4096)
		return 0;
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = "constel-agent";
	while (i <= size && argc < 17) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	if (cli_parse(argc, argv, &c, err, sizeof err) == 0) {
		if (c.verbosity < -1 || c.verbosity > 2)
			abort();
		if (c.command && (c.argv + c.argc != argv + argc))
			abort();
		if (c.tpm.kind == TCTI_DEVICE && c.tpm.path[0] != '/')
			abort();
		if (c.tpm.kind == TCTI_SWTPM && (c.tpm.port == 0 || c.tpm.host[0] == '\0'))
			abort();
	} else if (strchr(err, '\n') || err[0] == '\0') {
		abort();
	}
	free(buf);
	return 0;
}
