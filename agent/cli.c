/* Global option parsing. Hand-written rather than getopt: getopt permutes argv under glibc
 * and not under musl, and the test build must behave exactly like the shipped one. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

static int parse_verbosity(const char *v, int *ret)
{
	if (!strcmp(v, "-1"))
		*ret = -1;
	else if (v[0] >= '0' && v[0] <= '2' && v[1] == '\0')
		*ret = v[0] - '0';
	else
		return -EINVAL;
	return 0;
}

/* Matches "--name VALUE", "--name=VALUE" (and "-vVALUE" for short names). *i advances past
 * a separate value. Returns 1 on a match with *ret set, 0 when arg is another option,
 * -EINVAL when the value is missing. */
static int option_value(const char *name, int argc, char **argv, int *i, const char **ret)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=' && name[1] == '-') {
		*ret = arg + n + 1;
		return 1;
	}
	if (arg[n] != '\0') {
		if (name[1] == '-')
			return 0;
		*ret = arg + n; /* -v2 */
		return 1;
	}
	if (*i + 1 >= argc)
		return -EINVAL;
	*ret = argv[++*i];
	return 1;
}

int cli_parse(int argc, char **argv, struct cli *ret, char *err, size_t errlen)
{
	struct cli c = {.verbosity = 0};
	char terr[160];
	const char *v;
	int i, r;

	r = tcti_spec_parse(TCTI_DEFAULT, &c.tpm, NULL, 0);
	if (r < 0)
		return errbuf_set(err, errlen, "internal: default TCTI does not parse");
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0')
			break;
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			c.help = true;
			continue;
		}
		if (!strcmp(arg, "-V") || !strcmp(arg, "--version")) {
			c.version = true;
			continue;
		}
		if ((r = option_value("-v", argc, argv, &i, &v)) != 0) {
			if (r < 0)
				return errbuf_set(err, errlen,
						  "option -v needs a level (-1, 0, 1 or 2)");
			if (parse_verbosity(v, &c.verbosity) < 0)
				return errbuf_set(
				    err, errlen,
				    "option -v: level must be -1, 0, 1 or 2, got '%.32s'", v);
			continue;
		}
		if ((r = option_value("--tpm", argc, argv, &i, &v)) != 0) {
			if (r < 0)
				return errbuf_set(err, errlen,
						  "option --tpm needs a TCTI (e.g. %s)",
						  TCTI_DEFAULT);
			if (tcti_spec_parse(v, &c.tpm, terr, sizeof terr) < 0)
				return errbuf_set(err, errlen, "option --tpm: %s", terr);
			c.tpm_arg = v;
			continue;
		}
		return errbuf_set(err, errlen, "unknown option '%.64s' (see --help)", arg);
	}
	if (i < argc) {
		c.command = argv[i];
		c.argc = argc - i - 1;
		c.argv = argv + i + 1;
	}
	*ret = c;
	return 0;
}

int cli_opts_parse(int argc, char **argv, struct opt *opts, char *err, size_t errlen)
{
	size_t n;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq;
		size_t k;

		if (strncmp(a, "--", 2))
			return errbuf_set(err, errlen, "unexpected argument '%.64s'", a);
		a += 2;
		eq = strchr(a, '=');
		k = eq ? (size_t)(eq - a) : strlen(a);
		for (n = 0; opts[n].name; n++)
			if (strlen(opts[n].name) == k && !strncmp(opts[n].name, a, k))
				break;
		if (!opts[n].name)
			return errbuf_set(err, errlen, "unknown option '--%.64s'", a);
		if (eq) {
			*opts[n].val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return errbuf_set(err, errlen, "option --%s needs a value",
						  opts[n].name);
			*opts[n].val = argv[++i];
		}
	}
	for (n = 0; opts[n].name; n++)
		if (opts[n].required && !*opts[n].val)
			return errbuf_set(err, errlen, "option --%s is required", opts[n].name);
	return 0;
}
