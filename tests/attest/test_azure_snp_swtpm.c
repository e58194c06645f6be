/* azure-sev-snp end to end on swtpm provisioned as Azure's vTPM (vtpm_provision.h): the HCL
 * AK at 0x81000003, an HCL report in NV 0x01400001 whose SNP report a test AMD chain signed
 * (tests/attest/azure_snp_test.py) with REPORT_DATA = SHA-256 of runtime data naming that AK,
 * THIM of the fake IMDS serving the test VCEK and chain. The issuer's document is accepted by
 * vtpm_validate (policy Equal with the report's ID key digest, the test ARK as --amd-root) and
 * by constel-verify --attestation azure-sev-snp ($BUILD/tools, built first); refused when a byte of
 * InstanceInfo changes, when the HCL report's SNP report or runtime data changes, when the runtime
 * data names another AK, under Constellation's default digests without an MAA; with the MAA tag
 * set, the token made in the TPM (fake MAA: maa_fake.h) and accepted under MAAFallback. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/azure_snp.h"
#include "attest/vtpm_fixture.h"
#include "attest/maa_fake.h"

#define ZERO64 "0000000000000000000000000000000000000000000000000000000000000000"
#define PCR(n) "\"" #n "\":{\"expected\":\"" ZERO64 "\",\"warnOnly\":false}"
#define MEAS   "{" PCR(4) "," PCR(8) "," PCR(9) "," PCR(11) "," PCR(12) "," PCR(13) "," PCR(15) "}"
#define DIGEST                                                                                     \
	"5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" \
	"5a5a5a5a"
#define CONFIG_EQUAL                                                                            \
	"{\"measurements\":" MEAS ",\"bootloaderVersion\":3,\"teeVersion\":0,\"snpVersion\":8," \
	"\"microcodeVersion\":209,\"firmwareSignerConfig\":{\"acceptedKeyDigests\":[\"" DIGEST  \
	"\"],\"enforcementPolicy\":\"Equal\"},\"amdRootKey\":\"\"}"
#define CONFIG_DEFAULT "{\"measurements\":" MEAS "}"

struct fx {
	struct vtpm_fx v;
	size_t len;
};

static uint8_t doc[ATLS_DOC_MAX + 1];

/* Runtime data naming key n and an HCL report for it (vtpm_fixture.h) in NV 0x01400001. */
static int provision(struct fx *f, const char *n_b64url, long tweak)
{
	return vtpm_fx_azure_report(&f->v.sw.tcti, f->v.dir, n_b64url, tweak, f->v.root,
				    sizeof f->v.root);
}

static int ak_n(const struct fx *f, char *out, size_t cap)
{
	return vtpm_fx_ak_n(f->v.ak, f->v.ak_len, out, cap);
}

static int fx_start(struct fx *f, const char *maa)
{
	f->len = 0;
	return vtpm_fx_begin(&f->v, "azure-sev-snp", 0x5a, 0xc3) < 0 ? -1
								     : vtpm_fx_azure(&f->v, maa);
}

static void fx_stop(struct fx *f)
{
	vtpm_fx_stop(&f->v);
}

static int issue(struct fx *f, char *err, size_t errlen)
{
	return vtpm_issue(&f->v.env, f->v.ud, f->v.nonce, sizeof f->v.nonce, doc, ATLS_DOC_MAX,
			  &f->len, err, errlen);
}

static int validate(struct fx *f, const char *config, const uint8_t *d, size_t len, char *err,
		    size_t errlen)
{
	struct vtpm_policy p;
	uint8_t ud[64];
	size_t n = 0;
	int r;

	memset(&p, 0, sizeof p);
	p.test_root = f->v.root;
	if ((r = vtpm_policy_init(&p, "azure-sev-snp", config, strlen(config), err, errlen)) < 0)
		return r;
	r = vtpm_validate(&p, d, len, f->v.nonce, sizeof f->v.nonce, ud, sizeof ud, &n, err,
			  errlen);
	vtpm_policy_free(&p);
	if (r == 0 && (n != 32 || memcmp(ud, f->v.ud, 32)))
		return -1000;
	return r;
}

/* constel-verify --attestation azure-sev-snp on the document: its exit code, and the first
 * line of its output that is no warning in out */
static char verify_args[128]; /* more options for constel-verify */

static int cli_verify(struct fx *f, const char *config, char *out, size_t cap)
{
	const char *b = getenv("BUILD");
	char cmd[1024], docp[128], cfgp[128], arkp[128], nonce[65], ud[65], line[512];
	FILE *p;
	int st;

	snprintf(docp, sizeof docp, "%s/doc.json", f->v.dir);
	snprintf(cfgp, sizeof cfgp, "%s/config.json", f->v.dir);
	snprintf(arkp, sizeof arkp, "%s/ark.pem", f->v.dir);
	if (vtpm_fx_write(docp, doc, f->len) < 0 || vtpm_fx_write(cfgp, config, strlen(config)) < 0)
		return -1;
	hex_encode(f->v.nonce, 32, nonce, sizeof nonce);
	hex_encode(f->v.ud, 32, ud, sizeof ud);
	snprintf(cmd, sizeof cmd,
		 "%s/tools/constel-verify --attestation azure-sev-snp --nonce %s --user-data %s "
		 "--measurements %s --amd-root %s %s %s 2>&1",
		 b && *b ? b : "build", nonce, ud, cfgp, arkp, verify_args, docp);
	if (!(p = popen(cmd, "r")))
		return -1;
	out[0] = 0;
	while (fgets(line, sizeof line, p))
		if (!out[0] && !strstr(line, "warn"))
			snprintf(out, cap, "%s", line);
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The agent's own command line: constel-agent --tpm swtpm:... attest --attestation
 * azure-sev-snp --imds URL, its document into doc (f->len); the exit code. */
static int cli_attest(struct fx *f)
{
	const char *b = getenv("BUILD");
	char cmd[1024], docp[128], nonce[65], ud[65];
	size_t len;
	int st;

	snprintf(docp, sizeof docp, "%s/agent-doc.json", f->v.dir);
	hex_encode(f->v.nonce, 32, nonce, sizeof nonce);
	hex_encode(f->v.ud, 32, ud, sizeof ud);
	snprintf(cmd, sizeof cmd,
		 "%s/test/constel-agent --tpm swtpm:host=%s,port=%u attest --attestation "
		 "azure-sev-snp --imds %s --event-log /nonexistent --nonce %s --user-data %s "
		 ">%s 2>%s/agent.log",
		 b && *b ? b : "build", f->v.sw.tcti.host, (unsigned)f->v.sw.tcti.port,
		 f->v.imds.base, nonce, ud, docp, f->v.dir);
	st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (vtpm_fx_read(docp, doc, sizeof doc, &len) < 0)
		return -1;
	while (len && doc[len - 1] == '\n')
		len--;
	f->len = len;
	return 0;
}

TEST(azure_snp_swtpm_document_accepted_and_refused_when_a_part_changes)
{
	static struct fx f;
	char err[512] = "", n[400], *p;

	CHECK(fx_start(&f, NULL) == 0);
	CHECK(ak_n(&f, n, sizeof n) == 0);
	CHECK(provision(&f, n, -1) == 0);
	CHECK(issue(&f, err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "issue: %s\n", err);
	if (validate(&f, CONFIG_EQUAL, doc, f.len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "azure-sev-snp document refused: %s", err);
	/* the same by the command line tool */
	CHECK(cli_verify(&f, CONFIG_EQUAL, err, sizeof err) == 0);
	CHECK(fake_has(err, "OK user_data="));
	CHECK(cli_verify(&f, CONFIG_DEFAULT, err, sizeof err) == 1);
	CHECK(fake_has(err, "MAAFallback"));
	/* with an MAA (--maa-url) the fallback asks it, and a document without a token fails */
	{
		struct maa_fake m = {0};

		CHECK(maa_fake_start(&m) == 0);
		snprintf(verify_args, sizeof verify_args, "--maa-url %s", m.base);
		CHECK(cli_verify(&f, CONFIG_DEFAULT, err, sizeof err) == 1);
		CHECK(fake_has(err, "MAA token: empty"));
		verify_args[0] = 0;
		maa_fake_stop(&m);
	}
	/* the agent's attest command makes one too */
	CHECK(cli_attest(&f) == 0);
	CHECK(cli_verify(&f, CONFIG_EQUAL, err, sizeof err) == 0);
	CHECK(fake_has(err, "OK user_data="));
	CHECK(issue(&f, err, sizeof err) == 0);
	/* Constellation's defaults: this ID key digest is not Azure's; MAAFallback unsupported */
	CHECK(validate(&f, CONFIG_DEFAULT, doc, f.len, err, sizeof err) < 0);
	CHECK(fake_has(err, "MAAFallback"));
	/* one byte of InstanceInfo (its base64 in the document): the quote's nonce breaks */
	doc[f.len] = 0;
	CHECK((p = strstr((char *)doc, "\"InstanceInfo\":\"")) != NULL);
	p += 16 + 40;
	*p = *p == 'A' ? 'B' : 'A';
	CHECK(validate(&f, CONFIG_EQUAL, doc, f.len, err, sizeof err) < 0);
	*p = *p == 'B' ? 'A' : 'B';
	/* the SNP report's measurement byte (signed): the report's signature */
	CHECK(provision(&f, n, HCL_HW_OFFSET + 0x90) == 0);
	CHECK(issue(&f, err, sizeof err) == 0);
	CHECK(validate(&f, CONFIG_EQUAL, doc, f.len, err, sizeof err) < 0);
	CHECK(fake_has(err, "signature"));
	/* the runtime data after the report was made: its hash */
	CHECK(provision(&f, n, HCL_RUNTIME_OFFSET + 3) == 0);
	CHECK(issue(&f, err, sizeof err) == 0);
	CHECK(validate(&f, CONFIG_EQUAL, doc, f.len, err, sizeof err) < 0);
	CHECK(fake_has(err, "SHA-256 of the runtime data"));
	/* runtime data (and a report bound to it) naming another key than the quoting AK */
	n[10] = n[10] == 'A' ? 'B' : 'A';
	CHECK(provision(&f, n, -1) == 0);
	CHECK(issue(&f, err, sizeof err) == 0);
	CHECK(validate(&f, CONFIG_EQUAL, doc, f.len, err, sizeof err) < 0);
	CHECK(fake_has(err, "modulus"));
	fx_stop(&f);
}

/* The fake's last AzureGuest request through tests/interop/maarequest (Go, offline, GOPATH
 * mode): 0 when it prints OK. */
static int go_request_check(struct fx *f, const struct maa_fake *m)
{
	struct http_response resp = {0};
	char url[128], path[128], cmd[1024], line[256] = "";
	FILE *p;
	int st;

	snprintf(url, sizeof url, "%s/test/last-request", m->base);
	snprintf(path, sizeof path, "%s/maa-request.json", f->v.dir);
	if (http_get(url, 10000, 1 << 20, &resp) < 0 || resp.status != 200 ||
	    vtpm_fx_write(path, resp.body, resp.len) < 0) {
		http_response_free(&resp);
		return -1;
	}
	http_response_free(&resp);
	snprintf(cmd, sizeof cmd,
		 "cd tests/interop/maarequest && GO111MODULE=off GOPROXY=off GOFLAGS= "
		 "GOCACHE=%s/gocache GOPATH=%s/gopath go run main.go <%s 2>&1",
		 f->v.dir, f->v.dir, path);
	if (!(p = popen(cmd, "r")))
		return -1;
	if (!fgets(line, sizeof line, p))
		line[0] = 0;
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	if (strncmp(line, "OK ", 3) || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "maarequest: %s", line);
		return -1;
	}
	return 0;
}

TEST(azure_snp_swtpm_maa_token_made_in_the_tpm_and_accepted_under_maafallback)
{
	static struct fx f;
	static const char akcert[] = "the HCL AK's certificate (DER on Azure)";
	struct maa_fake m = {0};
	char err[512] = "", n[400], cfg[1024], *p;

	CHECK(maa_fake_start(&m) == 0);
	CHECK(fx_start(&f, m.base) == 0);
	CHECK(ak_n(&f, n, sizeof n) == 0);
	CHECK(provision(&f, n, -1) == 0);
	/* no AK certificate in NV 0x01C101D0: no document, one line */
	CHECK(issue(&f, err, sizeof err) < 0);
	CHECK(fake_has(err, "0x01c101d0") || fake_has(err, "1c101d0"));
	CHECK(vtpm_provision_nv(&f.v.sw.tcti, 0x01C101D0, akcert, sizeof akcert - 1) == 0);
	err[0] = 0;
	CHECK(issue(&f, err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "issue: %s\n", err);
	doc[f.len] = 0;
	CHECK((p = strstr((char *)doc, "\"InstanceInfo\":\"")) != NULL);
	/* the request was Go's encoding of go-azguestattestation's AttestationInfo, byte for
	 * byte (tests/interop/maarequest, standard library only) */
	CHECK(go_request_check(&f, &m) == 0);
	/* the default policy (MAAFallback, this report's digest unlisted) with the MAA */
	snprintf(cfg, sizeof cfg,
		 "{\"measurements\":" MEAS ",\"firmwareSignerConfig\":{\"maaURL\":\"%s\"}}",
		 m.base);
	err[0] = 0;
	CHECK(validate(&f, cfg, doc, f.len, err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "validate: %s\n", err);
	/* and by the command line tool with --maa-url */
	snprintf(verify_args, sizeof verify_args, "--maa-url %s", m.base);
	CHECK(cli_verify(&f, CONFIG_DEFAULT, err, sizeof err) == 0);
	CHECK(fake_has(err, "OK user_data="));
	verify_args[0] = 0;
	/* an MAA that does not answer: no document, one line naming it */
	maa_fake_stop(&m);
	CHECK(issue(&f, err, sizeof err) < 0);
	CHECK(fake_has(err, "AzureGuest") || fake_has(err, "127.0.0.1"));
	fx_stop(&f);
}
