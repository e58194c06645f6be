/* The agent's command line: global options, then a command and its arguments.
 *   constel-agent [-v N] [--tpm TCTI] [--help] [--version] [COMMAND [ARG...]] */
#ifndef CONSTEL_CLI_H
#define CONSTEL_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "tpm/tpm.h"

/* Exit codes of every constel program. */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_RUN = 1, /* the command ran and failed; its last line says why */
	EXIT_USAGE = 2,	      /* the command line was wrong; nothing was done */
};

struct cli {
	int verbosity; /* -v N: -1 debug, 0 info, 1 warn, 2 error */
	struct tcti_spec tpm;
	const char *tpm_arg; /* the --tpm string as given, NULL when defaulted */
	bool help;
	bool version;
	const char *command; /* NULL when none was given */
	int argc;	     /* the command's own arguments */
	char **argv;
};

/* Parses argv[1..argc-1]. On -EINVAL, err holds one line (without the program name) saying
 * what was wrong; *ret is written only on success. */
int cli_parse(int argc, char **argv, struct cli *ret, char *err, size_t errlen);

/* A command's own options: "--name VALUE" or "--name=VALUE", each of opts (ended by a NULL
 * name) at most once by position; the last one given wins. Unknown options, stray arguments
 * and missing required ones are -EINVAL with one line in err. */
struct opt {
	const char *name; /* without the leading "--" */
	const char **val;
	int required;
};

int cli_opts_parse(int argc, char **argv, struct opt *opts, char *err, size_t errlen);

struct atls_issuer;
/* The issuer of an attestation variant (a vTPM variant quoting the TPM tpm, or the test-only
 * "dummy", with a warning); *marked is the TPM the node lock marks (NULL for dummy).
 * -EINVAL with one line in err for another variant. */
int cli_issuer(const char *variant, const struct tcti_spec *tpm, const struct atls_issuer **issuer,
	       const struct tcti_spec **marked, char *err, size_t errlen);
/* The event log the vTPM issuer cli_issuer picked reads instead of securityfs's (PID 1's
 * constel.event-log=; path must outlive the issuer). -ENOTSUP when it picked no vTPM variant. */
int cli_issuer_event_log(const char *path);

/* The host commands (commands.c), run with the parsed global options. Return an exit code. */
int cmd_join(const struct cli *c);		/* join, rejoin */
int cmd_serve(const struct cli *c);		/* serve-init, serve-recover */
int cmd_attest(const struct cli *c);		/* attest */
int cmd_disk_state(const struct cli *c);	/* disk-state */
int cmd_disk_prepare(const struct cli *c);	/* disk-prepare */
int cmd_net_dhcp(const struct cli *c);		/* net-dhcp */
int cmd_metadata(const struct cli *c);		/* metadata */
int cmd_install_component(const struct cli *c); /* install-component */
int cmd_state_disk(const struct cli *c);	/* state-disk */
int cmd_azure_ready(const struct cli *c);	/* azure-ready */
int cmd_node(const struct cli *c);		/* node (host mode) */

#endif
