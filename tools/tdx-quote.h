/* constel-verify tdx-quote: an Intel TDX quote v4 checked alone with Intel's collateral
 * from a folder or fetched from Intel's PCS into a cache (tdx-pcs.h, docs/tdx.md). Part of
 * constel-verify (included once, by tools/constel-verify.c, after snp-report.h whose snp_parse_time
 * it uses). */
#ifndef CONSTEL_TOOL_TDX_QUOTE_H
#define CONSTEL_TOOL_TDX_QUOTE_H

#include "attest/tdx.h"
#include "base/base.h"
#include "tdx-pcs.h"
#include "tool.h"

static const char tdx_usage[] =
    "usage: constel-verify tdx-quote --quote FILE [--tdx-collateral DIR] [--policy FILE]\n"
    "         [--intel-root PEM] [--at RFC3339] [--tdx-cache DIR] [--ca-bundle FILE]\n"
    "         [--pcs URL] [--pcs-certs URL]\n"
    "\n"
    "Checks an Intel TDX quote v4 (FILE, raw bytes): its PCK chain to Intel's SGX Root CA\n"
    "(built in), the PCK and root CA CRLs, the QE report's signature by the PCK and its binding\n"
    "of the attestation key, the quote's signature, the QE identity and the TCB info (each\n"
    "signed by Intel's TCB signing key, current at --at, default now) and the TCB level,\n"
    "which must be UpToDate.\n"
    "DIR holds Intel PCS's answers as files: tcbinfo.json, tcbinfo-issuer-chain.pem,\n"
    "qeidentity.json, qeidentity-issuer-chain.pem, pckcrl.der, pckcrl-issuer-chain.pem,\n"
    "rootcrl.der (docs/tdx.md says how to fetch them).\n"
    "Without --tdx-collateral they are fetched over https from Intel's PCS (--pcs, "
    "default\n" PCS_DEFAULT ", and --pcs-certs, default " PCS_CERTS_DEFAULT ")\n"
    "checked against --ca-bundle (default " CA_BUNDLE_DEFAULT "), into\n"
    "--tdx-cache DIR (default " PCS_CACHE_DEFAULT "), one folder per FMSPC, reused\n"
    "while every nextUpdate lies after --at.\n"
    "--policy FILE: JSON with the azure-tdx fields of Constellation's attestationConfig\n"
    "(qeSVN, pceSVN, teeTCBSVN, qeVendorID, mrSeam, xfam); a field left out is not checked.\n"
    "--intel-root PEM trusts that root instead of Intel's: for tests only.\n"
    "Prints a line starting OK. Exit codes: 0 valid, 1 refused (the last line says why),\n"
    "2 wrong command line.\n";

static int tdx_quote_main(int argc, char **argv)
{
	const char *qpath = NULL, *dir = NULL, *ppath = NULL, *rpath = NULL, *at = NULL;
	struct pcs_opts po = {NULL, NULL, NULL, NULL, 0};
	char cdir[4096];
	struct tdx_verify_opts o;
	struct tdx_collateral c;
	struct tdx_policy pol;
	struct tdx_quote q;
	char err[512], *quote = NULL, *text = NULL, mrtd[97], rd[129];
	static uint8_t root[8192];
	size_t qlen, tlen, root_len = 0;
	int r;

	for (int i = 1; i < argc; i++) {
		const char **dst = NULL;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return fputs(tdx_usage, stdout), 0;
		if (!strcmp(argv[i], "--quote"))
			dst = &qpath;
		else if (!strcmp(argv[i], "--tdx-collateral"))
			dst = &dir;
		else if (!strcmp(argv[i], "--policy"))
			dst = &ppath;
		else if (!strcmp(argv[i], "--intel-root"))
			dst = &rpath;
		else if (!strcmp(argv[i], "--at"))
			dst = &at;
		else if (!strcmp(argv[i], "--tdx-cache"))
			dst = &po.cache;
		else if (!strcmp(argv[i], "--ca-bundle"))
			dst = &po.ca_bundle;
		else if (!strcmp(argv[i], "--pcs"))
			dst = &po.pcs;
		else if (!strcmp(argv[i], "--pcs-certs"))
			dst = &po.certs;
		else
			return fprintf(stderr,
				       "constel-verify: tdx-quote: unknown argument '%.64s'\n",
				       argv[i]),
			       2;
		if (i + 1 == argc)
			return fprintf(stderr, "constel-verify: %s needs a value\n", argv[i]), 2;
		if (*dst)
			return fprintf(stderr, "constel-verify: %s given twice\n", argv[i]), 2;
		*dst = argv[++i];
	}
	if (!qpath)
		return fprintf(stderr, "constel-verify: tdx-quote needs --quote (see --help)\n"), 2;
	tdx_verify_opts_init(&o);
	if (at && snp_parse_time(at, &o.at) < 0)
		return fprintf(stderr, "constel-verify: --at: YYYY-MM-DDTHH:MM:SSZ\n"), 2;
	if (rpath) {
		if ((r = tool_read_file(rpath, &text, &tlen)) < 0)
			return fprintf(stderr, "constel-verify: %s: %s\n", rpath, strerror(-r)), 1;
		r = pem_decode(text, tlen, "CERTIFICATE", root, sizeof root, &root_len);
		free(text);
		if (r < 0)
			return fprintf(stderr, "constel-verify: %s: no PEM certificate\n", rpath),
			       1;
		o.root = root;
		o.root_len = root_len;
	}
	if (ppath) {
		if ((r = tool_read_file(ppath, &text, &tlen)) < 0)
			return fprintf(stderr, "constel-verify: %s: %s\n", ppath, strerror(-r)), 1;
		r = tdx_policy_parse(text, tlen, &pol, err, sizeof err);
		free(text);
		if (r < 0)
			return fprintf(stderr, "constel-verify: %s: %s\n", ppath, err), 1;
	}
	if ((r = tool_read_file_max(qpath, TDX_QUOTE_MAX, &quote, &qlen)) < 0)
		return fprintf(stderr, "constel-verify: %s: %s\n", qpath,
			       r == -EFBIG ? "larger than a TDX quote can be" : strerror(-r)),
		       1;
	po.at = o.at;
	po.pcs = po.pcs ? po.pcs : PCS_DEFAULT;
	po.certs = po.certs ? po.certs : PCS_CERTS_DEFAULT;
	po.cache = po.cache ? po.cache : PCS_CACHE_DEFAULT;
	po.ca_bundle = po.ca_bundle ? po.ca_bundle : CA_BUNDLE_DEFAULT;
	if (!dir && (r = pcs_collateral(&po, (const uint8_t *)quote, qlen, cdir, sizeof cdir, err,
					sizeof err)) < 0) {
		free(quote);
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	}
	if (!dir)
		dir = cdir;
	if ((r = tdx_collateral_load(dir, &c, err, sizeof err)) < 0) {
		free(quote);
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	}
	tdx_collateral_opts(&c, &o);
	r = tdx_verify((const uint8_t *)quote, qlen, &o, &q, err, sizeof err);
	if (r == 0 && ppath)
		r = tdx_policy_check(&q, &pol, err, sizeof err);
	tdx_collateral_free(&c);
	if (r < 0) {
		free(quote);
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	}
	hex_encode(q.body.mr_td, 48, mrtd, sizeof mrtd);
	hex_encode(q.body.report_data, 64, rd, sizeof rd);
	printf("OK tdx quote: tcb=%s qe_tcb=%s policy=%s mrtd=%s report_data=%s\n", q.tcb_status,
	       q.qe_tcb_status, ppath ? "held" : "none", mrtd, rd);
	free(quote);
	return 0;
}

#endif
