/* constel-verify snp-report: a SEV-SNP attestation report checked alone, for people who
 * hold one (docs/snp.md). Part of constel-verify (one program, one source file: this header
 * is included once, by tools/constel-verify.c). */
#ifndef CONSTEL_TOOL_SNP_REPORT_H
#define CONSTEL_TOOL_SNP_REPORT_H

#include <bearssl.h>

#include "attest/snp.h"
#include "base/base.h"
#include "tool.h"

static const char snp_usage[] =
    "usage: constel-verify snp-report --report FILE --signer CERT [--chain PEM] [--ark PEM]\n"
    "         [--at RFC3339] [--vmpl N|any] [--min-tcb TCB] [--min-launch-tcb TCB]\n"
    "         [--report-data HEX] [--runtime-data FILE] [--id-key-digests HEX[,HEX...]]\n"
    "\n"
    "Checks a SEV-SNP attestation report: its ECDSA P-384 signature by the VCEK or VLEK in\n"
    "CERT (PEM or DER), that certificate's chain to AMD's root key (ARK) of Milan, Genoa or\n"
    "Turin (built in; --chain adds ASK/ASVK certificates, PEM), the validity of every\n"
    "certificate at --at (default: now), the certificate's TCB and chip ID against the report,\n"
    "committed <= current TCB, the guest policy (no debugging, no migration agent, no CXL) and\n"
    "the VMPL (default 0).\n"
    "FILE holds the report raw, or as hex or base64 text; bytes past its 1184 are ignored.\n"
    "TCB: bl=N,tee=N,snp=N,ucode=N[,fmc=N]: the current, committed and reported TCB must be at\n"
    "least --min-tcb, the launch TCB at least --min-launch-tcb.\n"
    "--report-data HEX: REPORT_DATA must be these bytes followed by zeros (at most 64).\n"
    "--runtime-data FILE: REPORT_DATA[0:32] must be the SHA-256 of FILE (Azure's HCL binding).\n"
    "--id-key-digests: ID_KEY_DIGEST must be one of these 48-byte values (hex, comma between).\n"
    "--ark PEM trusts that root instead of AMD's: for tests only.\n"
    "Prints a line starting OK. Exit codes: 0 valid, 1 refused (the last line says why),\n"
    "2 wrong command line.\n";

/* RFC 3339 in UTC: YYYY-MM-DDTHH:MM:SSZ */
static int snp_parse_time(const char *s, time_t *ret)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, se, n = -1;

	if (strlen(s) != 20 ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 ||
	    n != 20 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
	    y < 1970 || h < 0 || mi < 0 || se < 0)
		return -EINVAL;
	for (int i = 0; i < 20; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && i != 19 &&
		    (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	*ret = timegm(&tm);
	return 0;
}

/* The report: raw bytes, or hex or base64 text (white space between is dropped). */
static int snp_load_report(const char *path, uint8_t *out, size_t cap, size_t *len)
{
	char *b, *t;
	size_t n, m = 0;
	int r, text = 1;

	if ((r = tool_read_file(path, &b, &n)) < 0)
		return r;
	t = malloc(n + 1);
	if (!t) {
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '+' || c == '/' || c == '=' || c == '-' || c == '_')) {
			text = 0;
			break;
		}
		t[m++] = (char)c;
	}
	t[m] = '\0';
	if (!text) {
		if (n > cap)
			n = cap;
		memcpy(out, b, n);
		*len = n;
		r = 0;
	} else if (hex_decode(t, m, out, cap, len) == 0) {
		r = 0;
	} else {
		r = base64_decode(strchr(t, '-') || strchr(t, '_') ? BASE64_URL : BASE64_STD, t, m,
				  out, cap, len);
		if (r < 0)
			r = -EBADMSG;
	}
	free(t);
	free(b);
	return r;
}

/* A certificate: PEM (the first CERTIFICATE block) or DER. */
static int snp_load_cert(const char *path, uint8_t *out, size_t cap, size_t *len)
{
	char *b;
	size_t n;
	int r;

	if ((r = tool_read_file(path, &b, &n)) < 0)
		return r;
	if (strstr(b, "-----BEGIN ")) {
		r = pem_decode(b, n, "CERTIFICATE", out, cap, len);
	} else if (n > cap) {
		r = -EFBIG;
	} else {
		memcpy(out, b, n);
		*len = n;
	}
	free(b);
	return r;
}

int snp_report_main(int argc, char **argv);
int snp_report_main(int argc, char **argv)
{
	const char *rpath = NULL, *spath = NULL, *cpath = NULL, *apath = NULL, *at = NULL;
	const char *vmpl = NULL, *mtcb = NULL, *mltcb = NULL, *rdhex = NULL, *rtpath = NULL;
	const char *idk = NULL;
	static uint8_t idks[16][48];
	static uint8_t report[8192], signer[8192], ark[8192], chain[SNP_CHAIN_MAX][8192];
	uint8_t want_rd[64] = {0}, mhex[97], rdh[129];
	size_t rlen, slen, alen, rdlen;
	struct snp_verify_opts o;
	struct snp_report rep;
	enum snp_product p;
	char err[512], *text;
	size_t tlen;
	int r;

	snp_verify_opts_init(&o);
	for (int i = 1; i < argc; i++) {
		static const char *const names[] = {
		    "--report",	     "--signer",       "--chain",	  "--ark",
		    "--at",	     "--vmpl",	       "--min-tcb",	  "--min-launch-tcb",
		    "--report-data", "--runtime-data", "--id-key-digests"};
		const char **dsts[] = {&rpath, &spath, &cpath, &apath,	&at, &vmpl,
				       &mtcb,  &mltcb, &rdhex, &rtpath, &idk};
		size_t k;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return fputs(snp_usage, stdout), 0;
		for (k = 0; k < sizeof names / sizeof names[0]; k++)
			if (!strcmp(argv[i], names[k]))
				break;
		if (k == sizeof names / sizeof names[0])
			return fprintf(stderr,
				       "constel-verify: snp-report: unknown argument '%.64s'\n",
				       argv[i]),
			       2;
		if (i + 1 == argc)
			return fprintf(stderr, "constel-verify: %s needs a value\n", argv[i]), 2;
		if (*dsts[k])
			return fprintf(stderr, "constel-verify: %s given twice\n", argv[i]), 2;
		*dsts[k] = argv[++i];
	}
	if (!rpath || !spath)
		return fprintf(stderr, "constel-verify: snp-report needs --report and --signer "
				       "(see snp-report --help)\n"),
		       2;
	if (at && snp_parse_time(at, &o.at) < 0)
		return fprintf(stderr, "constel-verify: --at: YYYY-MM-DDTHH:MM:SSZ\n"), 2;
	if (vmpl && !strcmp(vmpl, "any"))
		o.vmpl = -1;
	else if (vmpl && (vmpl[0] < '0' || vmpl[0] > '3' || vmpl[1]))
		return fprintf(stderr, "constel-verify: --vmpl: 0 to 3 or any\n"), 2;
	else if (vmpl)
		o.vmpl = vmpl[0] - '0';
	if (mtcb && snp_tcb_parse(mtcb, &o.min_tcb) < 0)
		return fprintf(stderr,
			       "constel-verify: --min-tcb: bl=N,tee=N,snp=N,ucode=N[,fmc=N]\n"),
		       2;
	o.have_min_tcb = !!mtcb;
	if (mltcb && snp_tcb_parse(mltcb, &o.min_launch_tcb) < 0)
		return fprintf(
			   stderr,
			   "constel-verify: --min-launch-tcb: bl=N,tee=N,snp=N,ucode=N[,fmc=N]\n"),
		       2;
	o.have_min_launch_tcb = !!mltcb;
	if (rdhex) {
		if (hex_decode(rdhex, strlen(rdhex), want_rd, sizeof want_rd, &rdlen) < 0)
			return fprintf(stderr, "constel-verify: --report-data: hex, at most 64 "
					       "bytes\n"),
			       2;
		o.report_data = want_rd;
	}

	for (const char *q = idk; q && *q;) {
		size_t l = strcspn(q, ","), got;

		if (o.n_id_key_digests == 16 ||
		    hex_decode(q, l, idks[o.n_id_key_digests], 48, &got) < 0 || got != 48 ||
		    (q[l] == ',' && !q[l + 1]))
			return fprintf(stderr,
				       "constel-verify: --id-key-digests: up to 16 values of 48 "
				       "bytes in hex, comma between\n"),
			       2;
		o.n_id_key_digests++;
		q += l + (q[l] == ',');
	}
	o.id_key_digests = idks;
	if ((r = snp_load_report(rpath, report, sizeof report, &rlen)) < 0)
		return fprintf(stderr,
			       "constel-verify: %s: not a report (raw, hex or base64): %s\n", rpath,
			       strerror(-r)),
		       1;
	if ((r = snp_load_cert(spath, signer, sizeof signer, &slen)) < 0)
		return fprintf(stderr, "constel-verify: %s: no certificate: %s\n", spath,
			       strerror(-r)),
		       1;
	if (apath) {
		log_warn("--ark: trusting %s instead of AMD's roots: for tests only", apath);
		if ((r = snp_load_cert(apath, ark, sizeof ark, &alen)) < 0)
			return fprintf(stderr, "constel-verify: %s: no certificate: %s\n", apath,
				       strerror(-r)),
			       1;
		o.ark = ark;
		o.ark_len = alen;
	}
	if (cpath) {
		const char *pos;

		if ((r = tool_read_file(cpath, &text, &tlen)) < 0)
			return fprintf(stderr, "constel-verify: %s: %s\n", cpath, strerror(-r)), 1;
		for (pos = text; (pos = strstr(pos, "-----BEGIN CERTIFICATE-----")); pos++) {
			if (o.n_chain == SNP_CHAIN_MAX) {
				free(text);
				return fprintf(stderr,
					       "constel-verify: %s: more than %d certificates\n",
					       cpath, SNP_CHAIN_MAX),
				       1;
			}
			r = pem_decode(pos, tlen - (size_t)(pos - text), "CERTIFICATE",
				       chain[o.n_chain], sizeof chain[0], &o.chain_len[o.n_chain]);
			if (r < 0) {
				free(text);
				return fprintf(stderr, "constel-verify: %s: certificate %zu: %s\n",
					       cpath, o.n_chain + 1, strerror(-r)),
				       1;
			}
			o.chain[o.n_chain] = chain[o.n_chain];
			o.n_chain++;
		}
		free(text);
		if (!o.n_chain)
			return fprintf(stderr, "constel-verify: %s: no PEM certificate\n", cpath),
			       1;
	}

	r = snp_verify(report, rlen, signer, slen, &o, &rep, &p, err, sizeof err);
	if (r < 0)
		return fprintf(stderr, "constel-verify: %s\n", err), 1;
	if (rtpath) {
		uint8_t h[32];
		br_sha256_context sc;

		if ((r = tool_read_file_max(rtpath, 64u << 10, &text, &tlen)) < 0)
			return fprintf(stderr, "constel-verify: %s: %s\n", rtpath, strerror(-r)), 1;
		br_sha256_init(&sc);
		br_sha256_update(&sc, text, tlen);
		br_sha256_out(&sc, h);
		free(text);
		if (memcmp(h, rep.report_data, 32))
			return fprintf(stderr,
				       "constel-verify: snp: report data: REPORT_DATA[0:32] "
				       "is not the SHA-256 of the runtime data\n"),
			       1;
	}
	hex_encode(rep.measurement, sizeof rep.measurement, (char *)mhex, sizeof mhex);
	hex_encode(rep.report_data, sizeof rep.report_data, (char *)rdh, sizeof rdh);
	printf("OK snp %s %s version=%u vmpl=%u measurement=%s report_data=%s\n",
	       snp_product_name(p),
	       SNP_SIGNER_KEY(rep.signer_info) == SNP_KEY_VLEK ? "VLEK" : "VCEK", rep.version,
	       rep.vmpl, (char *)mhex, (char *)rdh);
	return 0;
}

#endif
