/* The agent's command line: options, values in both spellings, commands and their
 * arguments, and one clear line for each kind of mistake. */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "harness.h"

#define ARGV(...)	   ((char *[]){"constel-agent", __VA_ARGS__, NULL})
#define ARGC(...)	   ((int)(sizeof((char *[]){"constel-agent", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(c, err, ...) cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (c), err, sizeof err)

TEST(cli_defaults)
{
	char *argv[] = {"constel-agent", NULL};
	struct cli c;
	char err[128];

	CHECK(cli_parse(1, argv, &c, err, sizeof err) == 0);
	CHECK(c.verbosity == 0);
	CHECK(c.tpm.kind == TCTI_DEVICE && !strcmp(c.tpm.path, "/dev/tpmrm0"));
	CHECK(c.tpm_arg == NULL);
	CHECK(c.command == NULL && !c.help && !c.version);
}

TEST(cli_verbosity_spellings)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "-v", "-1") == 0 && c.verbosity == -1);
	CHECK(PARSE(&c, err, "-v2") == 0 && c.verbosity == 2);
	CHECK(PARSE(&c, err, "-v", "1", "version") == 0 && c.verbosity == 1);
	CHECK(!strcmp(c.command, "version"));
}

TEST(cli_verbosity_out_of_range)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "-v", "3") == -EINVAL);
	CHECK(!strcmp(err, "option -v: level must be -1, 0, 1 or 2, got '3'"));
	CHECK(PARSE(&c, err, "-v", "x") == -EINVAL);
	CHECK(PARSE(&c, err, "-v", "-2") == -EINVAL);
	CHECK(PARSE(&c, err, "-v", "10") == -EINVAL);
	CHECK(PARSE(&c, err, "-v") == -EINVAL);
	CHECK(!strcmp(err, "option -v needs a level (-1, 0, 1 or 2)"));
}

TEST(cli_tpm_both_spellings)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "--tpm", "swtpm:host=127.0.0.1,port=2400") == 0);
	CHECK(c.tpm.kind == TCTI_SWTPM && c.tpm.port == 2400);
	CHECK(PARSE(&c, err, "--tpm=device:/dev/tpm0") == 0);
	CHECK(c.tpm.kind == TCTI_DEVICE && !strcmp(c.tpm.path, "/dev/tpm0"));
	CHECK(!strcmp(c.tpm_arg, "device:/dev/tpm0"));
}

TEST(cli_tpm_errors_name_the_option)
{
	struct cli c;
	char err[160];

	CHECK(PARSE(&c, err, "--tpm", "mssim:") == -EINVAL);
	CHECK(!strcmp(err, "option --tpm: unknown TPM transport 'mssim' (device, swtpm)"));
	CHECK(PARSE(&c, err, "--tpm") == -EINVAL);
	CHECK(!strncmp(err, "option --tpm needs a TCTI", 25));
}

TEST(cli_unknown_option_is_one_line)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "--frobnicate") == -EINVAL);
	CHECK(!strcmp(err, "unknown option '--frobnicate' (see --help)"));
	CHECK(strchr(err, '\n') == NULL);
	CHECK(PARSE(&c, err, "--tpmx") == -EINVAL);
	CHECK(PARSE(&c, err, "--helpme") == -EINVAL);
}

TEST(cli_command_takes_the_rest)
{
	char *argv[] = {"constel-agent", "-v", "0", "attest", "--nonce", "00", "-v", NULL};
	struct cli c;
	char err[128];

	CHECK(cli_parse(7, argv, &c, err, sizeof err) == 0);
	CHECK(!strcmp(c.command, "attest"));
	CHECK(c.argc == 3 && c.argv == argv + 4);
	CHECK(!strcmp(c.argv[0], "--nonce") && !strcmp(c.argv[2], "-v"));
}

TEST(cli_double_dash_ends_options)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "--", "-v") == 0);
	CHECK(c.command && !strcmp(c.command, "-v") && c.argc == 0);
}

TEST(cli_help_and_version_flags)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "-h") == 0 && c.help);
	CHECK(PARSE(&c, err, "--version") == 0 && c.version);
	CHECK(PARSE(&c, err, "-V") == 0 && c.version);
}

/* An argument may hold anything; the error that quotes it must still be one line. */
TEST(cli_errors_quoting_input_stay_one_line)
{
	struct cli c;
	char err[128];

	CHECK(PARSE(&c, err, "--bad\noption\r\x1b") == -EINVAL);
	CHECK(!strcmp(err, "unknown option '--bad?option?\?' (see --help)"));
	CHECK(PARSE(&c, err, "--tpm", "swtpm:host\n=x") == -EINVAL);
	CHECK(strchr(err, '\n') == NULL);
}
