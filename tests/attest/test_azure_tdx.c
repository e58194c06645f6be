/* azure-tdx (attest/azure_tdx.c issuer, azure_tdx_verify.c validator): the recorded Azure
 * HCL report (tdx-azure/hclreport.bin from ${CONSTEL_VECTORS:-../shared/vectors}; missing is
 * a failure) parses as Constellation's issuer reads it and its REPORTDATA binds its runtime
 * data; every offset is checked; InstanceInfo is byte for byte what Go's encoding/json makes;
 * the IMDS answer is unpadded base64url. End to end: swtpm provisioned as Azure's TDX vTPM
 * (the HCL AK at 0x81000003, an HCL report of type 4 this test makes whose REPORTDATA binds
 * runtime data naming that AK, in NV 0x01400001) and the fake IMDS /acc/tdquote
 * (fake_tdquote.py, which signs with the test Intel chain of tdx-test/): the document is
 * accepted with the test root and collateral, and refused with Intel's root, with a tampered
 * quote, or when the runtime data names another key. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bearssl.h>
#include <tss2/tss2_mu.h>

#include "attest/attest.h"
#include "attest/azure_tdx.h"
#include "attest/hcl.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "harness.h"
#include "net/net.h"
#include "tpm/swtpm.h"
#include "attest/vtpm_fixture.h"

extern const struct vtpm_variant vtpm_azure_tdx;

TEST(azure_tdx_recorded_hcl_report_parses_and_binds)
{
	size_t len, rl;
	uint8_t *b = harness_vector("tdx-azure/hclreport.bin", &len);
	const uint8_t *td, *rt;
	char err[256] = "";

	CHECK(b != NULL);
	if (!b)
		return;
	if (azure_tdx_hcl_parse(b, len, &td, &rt, &rl, err, sizeof err) < 0)
		harness_fail(__FILE__, __LINE__, "refused: %s", err);
	CHECK(td == b + 32 && rt == b + 1236 && rl > 0 && rl <= len - 1236);
	/* the TDREPORT's REPORTDATA (REPORTMACSTRUCT offset 128) binds the runtime data */
	CHECK(hcl_check_runtime_hash(rt, rl, td + 128, err, sizeof err) == 0);
	b[1236 + rl / 2] ^= 1;
	CHECK(hcl_check_runtime_hash(rt, rl, td + 128, err, sizeof err) < 0);
	b[1236 + rl / 2] ^= 1;
	/* every length short of the runtime data's end is refused with one line */
	for (size_t n = 0; n < 1236 + rl; n++)
		if (azure_tdx_hcl_parse(b, n, &td, &rt, &rl, err, sizeof err) != -EINVAL ||
		    strchr(err, '\n')) {
			harness_fail(__FILE__, __LINE__, "length %zu accepted", n);
			break;
		}
	/* an SEV-SNP report (type 2) is refused */
	b[1224] = 2;
	CHECK(azure_tdx_hcl_parse(b, len, &td, &rt, &rl, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "HCL report type 2, not 4"));
	b[1224] = 4;
	/* a runtime data size past the end */
	b[1232] = 0xff;
	b[1233] = 0xff;
	CHECK(azure_tdx_hcl_parse(b, len, &td, &rt, &rl, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "past the report"));
	free(b);
}

TEST(azure_tdx_instance_info_as_go_marshals_it)
{
	static const uint8_t q[] = {0xfb, 0xff, 0x00, 0x01}, rt[] = "{\"keys\":[]}";
	static const char want[] = "{\"AttestationReport\":\"+/8AAQ==\",\"RuntimeData\":"
				   "\"eyJrZXlzIjpbXX0=\"}";
	uint8_t out[128], *pq, *pr;
	size_t len, ql, rl;
	char err[200];

	CHECK(azure_tdx_instance_info(q, sizeof q, rt, sizeof rt - 1, out, sizeof out, &len) == 0);
	CHECK(len == sizeof want - 1 && !memcmp(out, want, len));
	CHECK(azure_tdx_instance_info(q, sizeof q, rt, sizeof rt - 1, out, len, &len) == -ENOBUFS);
	CHECK(azure_tdx_instance_info_parse((const uint8_t *)want, sizeof want - 1, &pq, &ql, &pr,
					    &rl, err, sizeof err) == 0);
	CHECK(ql == sizeof q && !memcmp(pq, q, ql) && rl == sizeof rt - 1 && !memcmp(pr, rt, rl));
	free(pq);
	free(pr);
	CHECK(azure_tdx_instance_info_parse((const uint8_t *)"{\"AttestationReport\":\"AA==\"}", 28,
					    &pq, &ql, &pr, &rl, err, sizeof err) < 0);
	CHECK(strstr(err, "no RuntimeData"));
	/* a document without InstanceInfo (null in Go's JSON) */
	CHECK(azure_tdx_instance_info_parse(NULL, 0, &pq, &ql, &pr, &rl, err, sizeof err) < 0);
	CHECK(strstr(err, "no InstanceInfo"));
}

TEST(azure_tdx_tdquote_answer_is_unpadded_base64url)
{
	uint8_t q[16];
	size_t ql;
	char err[200];
	static const char ok[] = "{\"quote\":\"-_8AAQ\"}", padded[] = "{\"quote\":\"-_8AAQ==\"}",
			  none[] = "{\"error\":\"x\"}";

	CHECK(azure_tdx_tdquote_answer(ok, sizeof ok - 1, q, sizeof q, &ql, err, sizeof err) == 0);
	CHECK(ql == 4 && q[0] == 0xfb && q[1] == 0xff && q[2] == 0 && q[3] == 1);
	CHECK(azure_tdx_tdquote_answer(padded, sizeof padded - 1, q, sizeof q, &ql, err,
				       sizeof err) < 0);
	CHECK(azure_tdx_tdquote_answer(none, sizeof none - 1, q, sizeof q, &ql, err, sizeof err) <
	      0);
	CHECK(strstr(err, "no {\"quote\": string}"));
	CHECK(azure_tdx_tdquote_answer(ok, sizeof ok - 1, q, 3, &ql, err, sizeof err) < 0);
}

/* ---- end to end ---- */

struct e2e {
	struct vtpm_fx fx;
	struct vtpm_policy pol;
};

static uint8_t doc[ATLS_DOC_MAX];

/* swtpm with the HCL AK and a TDX HCL report (naming another key: other_key), the fake IMDS
 * quoting it (tamper: the quote changed after signing). */
static int e2e_start(struct e2e *e, int tamper, int other_key)
{
	memset(&e->pol, 0, sizeof e->pol);
	if (vtpm_fx_begin(&e->fx, "azure-tdx", 0x11, 0x22) < 0)
		return -1;
	return vtpm_fx_tdx_hcl(&e->fx, tamper, other_key) < 0 ? -2 : 0;
}

static void e2e_stop(struct e2e *e)
{
	vtpm_fx_stop(&e->fx);
}

static int e2e_validate(struct e2e *e, const uint8_t *d, size_t len, const char *root, char *err,
			size_t errlen)
{
	uint8_t ud[64];
	size_t n = 0;
	int r;

	memset(&e->pol, 0, sizeof e->pol);
	e->pol.collateral = "tests/attest/tdx-test";
	if (root) {
		static char pem[4096];
		FILE *f = fopen(root, "r");
		size_t k = f ? fread(pem, 1, sizeof pem - 1, f) : 0;

		if (f)
			fclose(f);
		pem[k] = '\0';
		e->pol.test_root = pem; /* the PEM text, as tools/tool.h gives it */
	} else
		e->pol.test_root = NULL;
	e->pol.at = 1798761600; /* 2027-01-01, within the test collateral */
	r = vtpm_policy_init(&e->pol, "azure-tdx", NULL, 0, err, errlen);
	if (r < 0)
		return r;
	r = vtpm_validate(&e->pol, d, len, e->fx.nonce, sizeof e->fx.nonce, ud, sizeof ud, &n, err,
			  errlen);
	vtpm_policy_free(&e->pol);
	if (r == 0 && (n != 32 || memcmp(ud, e->fx.ud, 32)))
		return -1000;
	return r;
}

/* a fetcher as the tools' (tools/tdx-pcs.h): the folder fetch_dir for a quote that parses */
static int fetch_calls;
static const char *fetch_dir;
static int fake_fetch(const struct vtpm_policy *p, const uint8_t *quote, size_t len, char *dir,
		      size_t cap, char *err, size_t errlen)
{
	struct tdx_quote q;

	(void)p;
	fetch_calls++;
	if (tdx_quote_parse(quote, len, &q, err, errlen) < 0)
		return -EINVAL;
	if (!fetch_dir)
		return errbuf_set(err, errlen, "pcs: GET test: HTTP 404");
	snprintf(dir, cap, "%s", fetch_dir);
	return 0;
}

/* e2e_validate without the collateral folder, with fake_fetch */
static int e2e_validate_fetch(struct e2e *e, const uint8_t *d, size_t len, const char *root,
			      char *err, size_t errlen)
{
	static char pem[4096];
	FILE *f = fopen(root, "r");
	size_t k = f ? fread(pem, 1, sizeof pem - 1, f) : 0;
	uint8_t ud[64];
	size_t n = 0;
	int r;

	if (f)
		fclose(f);
	pem[k] = '\0';
	memset(&e->pol, 0, sizeof e->pol);
	e->pol.test_root = pem;
	e->pol.tdx_fetch = fake_fetch;
	e->pol.at = 1798761600;
	r = vtpm_policy_init(&e->pol, "azure-tdx", NULL, 0, err, errlen);
	if (r < 0)
		return r;
	r = vtpm_validate(&e->pol, d, len, e->fx.nonce, sizeof e->fx.nonce, ud, sizeof ud, &n, err,
			  errlen);
	vtpm_policy_free(&e->pol);
	return r;
}

/* constel-verify --attestation azure-tdx with the test root and collateral on doc: its
 * output holds want. */
static int tool_verify_with(struct e2e *e, const uint8_t *d, size_t len, const char *coll,
			    const char *want)
{
	const char *b = getenv("BUILD");
	char path[] = "/tmp/constel-azure-tdx-doc-XXXXXX", cmd[1024], out[512] = "", nonce[65];
	int fd = mkstemp(path), ok;
	FILE *p;

	if (fd < 0)
		return 0;
	ok = write(fd, d, len) == (ssize_t)len;
	close(fd);
	hex_encode(e->fx.nonce, sizeof e->fx.nonce, nonce, sizeof nonce);
	snprintf(cmd, sizeof cmd,
		 "%s/tools/constel-verify --attestation azure-tdx --nonce %s %s "
		 "--intel-root tests/attest/tdx-test/root-test.pem --at "
		 "2027-01-01T00:00:00Z %s 2>&1",
		 b && *b ? b : "build", nonce, coll, path);
	p = ok ? popen(cmd, "r") : NULL;
	if (p) {
		size_t k = fread(out, 1, sizeof out - 1, p);

		out[k] = '\0';
		ok = pclose(p) != -1 && strstr(out, want) != NULL;
	} else
		ok = 0;
	unlink(path);
	if (!ok)
		fprintf(stderr, "constel-verify said: %s (want %s)\n", out, want);
	return ok;
}

static int tool_verify(struct e2e *e, const uint8_t *d, size_t len, const char *want)
{
	return tool_verify_with(e, d, len, "--tdx-collateral tests/attest/tdx-test", want);
}

/* constel-verify --attestation azure-tdx without --tdx-collateral: the tools' PCS client with
 * a cache that already holds the quote's folder (current at --at: no request; the PCS URL
 * points nowhere), then with an empty cache (it fetches: here it stops at the missing CA
 * bundle, before any request, with one line). */
static int tool_verify_pcs(struct e2e *e, const uint8_t *d, size_t len)
{
	char dir[] = "/tmp/constel-azure-tdx-pcs-XXXXXX", cmd[512], args[512];
	int ok;

	if (!mkdtemp(dir))
		return 0;
	snprintf(cmd, sizeof cmd,
		 "mkdir -p %s/cache/50806f000000-platform && cp tests/attest/tdx-test/*.json "
		 "tests/attest/tdx-test/*.pem tests/attest/tdx-test/*.der "
		 "%s/cache/50806f000000-platform/",
		 dir, dir);
	ok = system(cmd) == 0;
	snprintf(args, sizeof args,
		 "--tdx-cache %s/cache --pcs https://127.0.0.1:1 --pcs-certs https://127.0.0.1:1 "
		 "--ca-bundle %s/none.pem",
		 dir, dir);
	ok = ok && tool_verify_with(e, d, len, args, "OK user_data=2222222222222222");
	snprintf(args, sizeof args,
		 "--tdx-cache %s/empty --pcs https://127.0.0.1:1 --ca-bundle %s/none.pem", dir,
		 dir);
	ok = ok && tool_verify_with(e, d, len, args, "none.pem: No such file");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		ok = 0;
	return ok;
}

/* CHECK leaves the function: each phase is its own function, and the caller stops the
 * swtpm and the fake whatever happened. */
static void phase_accept(struct e2e *e)
{
	static const char *root = "tests/attest/tdx-test/root-test.pem";
	struct http_response resp = {0};
	struct http_req rq = {.method = "POST", .body = "{}", .body_len = 2};
	char err[400] = "", url[96], *p;
	size_t len;

	/* the fake demands Metadata: true as IMDS does */
	snprintf(url, sizeof url, "%s/acc/tdquote", e->fx.meta);
	CHECK(http_request(url, &rq, 10000, 4096, &resp, err, sizeof err) == 0);
	CHECK(resp.status == 400 && strstr(resp.body, "metadata header"));
	http_response_free(&resp);

	if (vtpm_issue(&e->fx.env, e->fx.ud, e->fx.nonce, sizeof e->fx.nonce, doc, sizeof doc - 1,
		       &len, err, sizeof err) < 0) {
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
		return;
	}
	if (e2e_validate(e, doc, len, root, err, sizeof err) != 0) {
		harness_fail(__FILE__, __LINE__, "document refused: %s", err);
		return;
	}
	/* the same through constel-verify --attestation azure-tdx (tools/) */
	CHECK(tool_verify(e, doc, len, "OK user_data=2222222222222222"));
	CHECK(tool_verify_pcs(e, doc, len));
	/* without the folder, the fetcher (the tools': Intel's PCS) gets the document's quote
	 * and its folder is used; its refusal is the validator's */
	fetch_calls = 0;
	fetch_dir = "tests/attest/tdx-test";
	if (e2e_validate_fetch(e, doc, len, root, err, sizeof err) != 0) {
		harness_fail(__FILE__, __LINE__, "refused with the fetcher's folder: %s", err);
		return;
	}
	CHECK(fetch_calls == 1);
	fetch_dir = NULL;
	CHECK(e2e_validate_fetch(e, doc, len, root, err, sizeof err) < 0);
	CHECK(fake_has(err, "pcs: GET test: HTTP 404"));
	/* Intel's built-in root refuses the test chain */
	CHECK(e2e_validate(e, doc, len, NULL, err, sizeof err) < 0);
	CHECK(fake_has(err,
		       "azure-tdx: tdx: pck chain: the root is not the trusted Intel SGX Root CA"));
	/* a changed character of InstanceInfo (the base64 of the JSON holding the quote) */
	doc[len] = '\0';
	p = strstr((char *)doc, "\"InstanceInfo\":\"");
	CHECK(p != NULL);
	p += strlen("\"InstanceInfo\":\"") + 200;
	*p = *p == 'A' ? 'B' : 'A';
	CHECK(e2e_validate(e, doc, len, root, err, sizeof err) < 0);
	*p = *p == 'A' ? 'B' : 'A';
	/* without the collateral folder and without a fetcher: one line asking for either */
	memset(&e->pol, 0, sizeof e->pol);
	CHECK(vtpm_policy_init(&e->pol, "azure-tdx", NULL, 0, err, sizeof err) < 0);
	CHECK(fake_has(err, "give --tdx-collateral DIR, or let the tools fetch it from PCS"));
}

static void phase_refuse(struct e2e *e, const char *want)
{
	char err[400] = "";
	size_t len;

	if (vtpm_issue(&e->fx.env, e->fx.ud, e->fx.nonce, sizeof e->fx.nonce, doc, sizeof doc - 1,
		       &len, err, sizeof err) < 0) {
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
		return;
	}
	CHECK(e2e_validate(e, doc, len, "tests/attest/tdx-test/root-test.pem", err, sizeof err) <
	      0);
	CHECK(fake_has(err, want));
	CHECK(tool_verify(e, doc, len, want));
}

TEST(azure_tdx_end_to_end_on_swtpm_and_fake_imds)
{
	struct e2e e;
	int r;

	if ((r = e2e_start(&e, 0, 0)) == 0)
		phase_accept(&e);
	else
		harness_fail(__FILE__, __LINE__, "set-up failed (%d)", r);
	e2e_stop(&e);
	/* the IMDS quote changed after signing */
	if ((r = e2e_start(&e, 1, 0)) == 0)
		phase_refuse(&e,
			     "tdx: signature: the quote's ECDSA P-256 signature does not verify");
	else
		harness_fail(__FILE__, __LINE__, "set-up failed (%d)", r);
	e2e_stop(&e);
	/* runtime data that names another key than the HCL AK */
	if ((r = e2e_start(&e, 0, 1)) == 0)
		phase_refuse(&e, "hcl: HCLAkPub's modulus is not the quoting AK's");
	else
		harness_fail(__FILE__, __LINE__, "set-up failed (%d)", r);
	e2e_stop(&e);
}
