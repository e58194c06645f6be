/* constel-verify: checks a vTPM attestation document the way the Go validator does
 * (spec §2.6–2.7) against our nonce and expected measurements, for any vTPM variant.
 *   constel-verify --nonce HEX [--measurements FILE] [--user-data HEX] [--attestation V]
 *                  [--amd-root PEM] [--intel-root PEM] [--tdx-collateral DIR] [--at T]
 *                  [--api URL] DOC
 * Prints "OK user_data=<hex>"; exit 0 valid, 1 refused (one line says why), 2 usage.
 *   constel-verify snp-report --report FILE --signer CERT [...]
 * checks a SEV-SNP report alone (docs/snp.md); same output and exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/attest.h"
#include "attest/snp.h"
#include "base/base.h"
#include "deps_versions.h"
#include "tool.h"

static const char usage[] =
    "usage: constel-verify --nonce HEX [--measurements FILE] [--user-data HEX]\n"
    "                      [--attestation V] [...] DOC\n"
    "\n"
    "Checks the attestation document of variant V (default qemu-vtpm) in DOC (as\n"
    "`constel-agent attest` prints it) against the nonce it was made for: the variant's\n"
    "trusted key and checks, the quotes' signatures, nonce and PCR digests, the event log,\n"
    "and, with --measurements, the expected PCR values (JSON as in the\n"
    "Constellation config: {\"4\": {\"expected\": \"<hex>\", \"warnOnly\": false}, ...}).\n"
    "--user-data also requires the document to vouch for exactly these bytes.\n"
    "Exit codes: 0 valid, 1 refused (the last line says why), 2 wrong command line.\n"
    "\n"
    "constel-verify snp-report --help: checks a SEV-SNP attestation report alone.\n"
    "constel-verify tdx-quote --help: checks an Intel TDX quote alone.\n";

/* A file without its trailing line ends; documents and measurements are far below 64 MiB. */
static int read_all(const char *path, char **ret, size_t *len)
{
	int r = tool_read_file_max(path, 64u << 20, ret, len);

	while (r == 0 && *len && ((*ret)[*len - 1] == '\n' || (*ret)[*len - 1] == '\r'))
		(*ret)[--*len] = '\0';
	return r;
}

#include "snp-report.h"
#include "tdx-quote.h"

int main(int argc, char **argv)
{
	const char *nonce_hex = NULL, *ud_hex = NULL, *docpath = NULL;
	static struct tool_attest a = {.variant = "qemu-vtpm"};
	struct opt aopts[] = {TOOL_ATTEST_OPTS(&a), {NULL, NULL, 0}};
	uint8_t nonce[64], want_ud[64], ud[64];
	size_t nonce_len, want_len = 0, ud_len, len;
	char err[512], hex[130], *doc;
	int r;

	log_set_program("constel-verify");
	if (argc > 1 && !strcmp(argv[1], "snp-report"))
		return snp_report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "tdx-quote"))
		return tdx_quote_main(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++) {
		const char **dst = NULL;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return fputs(usage, stdout), tool_attest_usage(stdout), 0;
		if (!strcmp(argv[i], "--version"))
			return printf("constel-verify %s\n", CONSTEL_VERSION), 0;
		if (!strcmp(argv[i], "--nonce"))
			dst = &nonce_hex;
		else if (!strcmp(argv[i], "--user-data"))
			dst = &ud_hex;
		for (struct opt *o = aopts; !dst && o->name; o++)
			if (!strncmp(argv[i], "--", 2) && !strcmp(argv[i] + 2, o->name))
				dst = o->val;
		if (dst)
			;
		else if (argv[i][0] == '-')
			return fprintf(stderr, "constel-verify: unknown option '%.64s'\n", argv[i]),
			       2;
		else if (!docpath) {
			docpath = argv[i];
			continue;
		} else
			return fprintf(stderr, "constel-verify: more than one DOC\n"), 2;
		if (i + 1 == argc)
			return fprintf(stderr, "constel-verify: %s needs a value\n", argv[i]), 2;
		*dst = argv[++i];
	}
	if (!nonce_hex || !docpath)
		return fprintf(stderr,
			       "constel-verify: --nonce and DOC are required (see --help)\n"),
		       2;
	if (hex_decode(nonce_hex, strlen(nonce_hex), nonce, sizeof nonce, &nonce_len) < 0 ||
	    !nonce_len)
		return fprintf(stderr, "constel-verify: --nonce: 1 to 64 bytes in hex\n"), 2;
	if (ud_hex && hex_decode(ud_hex, strlen(ud_hex), want_ud, sizeof want_ud, &want_len) < 0)
		return fprintf(stderr, "constel-verify: --user-data: hex, at most 64 bytes\n"), 2;
	if (!vtpm_check_find(a.variant))
		return fprintf(stderr, "constel-verify: unknown attestation variant '%.32s' (%s)\n",
			       a.variant, vtpm_check_names()),
		       2;
	if (tool_policy(&a, err, sizeof err) < 0)
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	if ((r = read_all(docpath, &doc, &len)) < 0)
		return fprintf(stderr, "constel-verify: %s: %s\n", docpath, strerror(-r)), 1;
	r = vtpm_validate(&a.p, (uint8_t *)doc, len, nonce, nonce_len, ud, sizeof ud, &ud_len, err,
			  sizeof err);
	free(doc);
	if (r < 0)
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	if (ud_hex && (ud_len != want_len || memcmp(ud, want_ud, ud_len)))
		return fprintf(stderr,
			       "constel-verify: the document vouches for other user data\n"),
		       1;
	hex_encode(ud, ud_len, hex, sizeof hex);
	printf("OK user_data=%s\n", hex);
	return 0;
}
