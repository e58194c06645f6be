/* gcp-sev-es end to end: swtpm provisioned as GCE's vTPM (the AK template in NV 0x01c10001),
 * PCR 0 extended with GCE's firmware events (version, NonHostInfo, separator) and the matching
 * event log, the GCE metadata server faked by tests/cloud/fake_cloud.py and
 * getShieldedInstanceIdentity by tests/cloud/fake_gce_shielded.py, both on 127.0.0.1. The
 * issuer's InstanceInfo is checked byte for byte against Go's encoding of GCEInstanceInfo;
 * the validator accepts the document and refuses it when the API's key differs, InstanceInfo
 * names another instance, the token is missing, or the platform is not AMD SEV. Then the real
 * GCE attestation recorded by go-tpm-tools (vectors/tpm-gce, nonce 0x9009) verifies: quotes,
 * event log and the GCE platform (firmware version and AMD SEV) from its PCR 0 events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_fixture.h"

#define TOKEN VTPM_FX_GCE_TOKEN

static uint8_t doc[ATLS_DOC_MAX];
static size_t doc_len;

/* swtpm as GCE's vTPM with PCR 0 and the log of GCE's firmware for technology tech, the
 * metadata server and GCE's API; the gcp-sev-es policy against that API. */
static int gce_start(struct vtpm_fx *g, struct vtpm_policy *pol, uint8_t tech)
{
	if (vtpm_fx_begin(g, "gcp-sev-es", 0x42, 0x17) < 0 || vtpm_fx_gce(g) < 0 ||
	    vtpm_fx_gce_boot(g, tech) < 0)
		return -1;
	memset(pol, 0, sizeof *pol);
	pol->variant = g->env.variant;
	pol->check = vtpm_check_find("gcp-sev-es");
	pol->api = g->api;
	return pol->check ? 0 : -1;
}

static int validate(struct vtpm_fx *g, const struct vtpm_policy *pol, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t n;

	return vtpm_validate(pol, doc, doc_len, g->nonce, 32, ud, sizeof ud, &n, err, errlen);
}

TEST(gcp_sev_es_document_from_swtpm_and_fakes_is_accepted_and_refused_as_go_does)
{
	static const char ii[] =
	    "{\"zone\":\"europe-west3-b\",\"project_id\":\"constel-test\",\"instance_name\":"
	    "\"constel-worker-0\"}";
	char err[400] = "", b64[200];
	struct vtpm_fx g;
	struct vtpm_policy pol;
	uint8_t *p;
	int r;

	CHECK(gce_start(&g, &pol, 1) == 0);
	if (vtpm_fx_issue(&g, doc, sizeof doc, &doc_len, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	doc[doc_len] = '\0';
	base64_encode(BASE64_STD, (const uint8_t *)ii, sizeof ii - 1, b64, sizeof b64);
	CHECK(strstr((char *)doc, b64)); /* Go's bytes, in Go's order */
	if (validate(&g, &pol, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	/* no token: the API refuses */
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	r = validate(&g, &pol, err, sizeof err);
	if (r != -EINVAL)
		harness_fail(__FILE__, __LINE__, "no token: %d %s", r, err);
	CHECK(fake_has(err,
		       "gcp-sev-es: getShieldedInstanceIdentity of constel-test/europe-west3-b/"
		       "constel-worker-0: HTTP 401"));
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	/* another API (on another port) gives another key for the instance */
	{
		char api2[64];
		pid_t pid = vtpm_fx_shielded_other_key(&g, api2, sizeof api2);

		CHECK(pid > 0);
		pol.api = api2;
		r = validate(&g, &pol, err, sizeof err);
		pol.api = g.api;
		fake_reap(pid);
		CHECK(r == -EINVAL);
		CHECK(fake_has(err, "gcp-sev-es: the AK is not the signing key GCE gives"));
	}
	/* InstanceInfo naming another instance (and so another nonce) */
	p = (uint8_t *)strstr((char *)doc, b64);
	CHECK(p);
	p[4] = p[4] == 'A' ? 'B' : 'A';
	CHECK(validate(&g, &pol, err, sizeof err) == -EINVAL);
	CHECK(fake_has(err, "gcp-sev-es: "));
	vtpm_fx_stop(&g);
}

/* A PEM file's text as a JSON string's content (newlines escaped). */
static int pem_json(const char *path, char *out, size_t cap)
{
	char pem[1200];
	size_t len, n = 0;

	if (vtpm_fx_read(path, pem, sizeof pem - 1, &len) < 0)
		return -1;
	for (size_t i = 0; i < len && n + 3 < cap; i++) {
		if (pem[i] == '\n')
			out[n++] = '\\', out[n++] = 'n';
		else
			out[n++] = pem[i];
	}
	out[n] = '\0';
	return n + 3 < cap ? 0 : -1;
}

/* The fake the cluster boots use (tests/cloud/fake_gce_api.py: metadata server and Compute
 * API in one), over https with its test CA as --ca-bundle: its getShieldedInstanceIdentity
 * gives the AK for the instance, a configured token is accepted, and its first answer carries
 * another key: the validator refuses that one naming the AK check and accepts the next (the
 * GCP cluster's refused join, qemu-tests/cloud-cluster.sh). */
TEST(gcp_sev_es_validator_against_fake_gce_api_refuses_another_key_then_accepts_the_ak)
{
	static char state[8192];
	char err[400] = "", pem[1200], other[1200], path[128], api[64], ca[128];
	uint8_t ak2[TPM_PUBLIC_MAX];
	struct fake_api f = {0};
	struct vtpm_fx g;
	struct vtpm_policy pol;
	int n, r;

	CHECK(gce_start(&g, &pol, 1) == 0);
	CHECK(vtpm_fx_issue(&g, doc, sizeof doc, &doc_len, err, sizeof err) == 0);
	CHECK(pem_json(g.pemf, pem, sizeof pem) == 0);
	memcpy(ak2, g.ak, g.ak_len);
	ak2[g.ak_len - 1] ^= 1;
	snprintf(path, sizeof path, "%s", harness_path(g.dir, "other.pem"));
	CHECK(vtpm_fx_ak_pem_file(ak2, g.ak_len, path) == 0 &&
	      pem_json(path, other, sizeof other) == 0);
	n = snprintf(
	    state, sizeof state,
	    "{\"project\": \"constel-test\", \"self\": \"constel-worker-0\", "
	    "\"instances\": [{\"name\": \"constel-worker-0\", \"zone\": \"europe-west3-b\", "
	    "\"networkIP\": \"10.42.1.101\", \"signing_key\": \"%s\"}], "
	    "\"access_tokens\": [\"" TOKEN "\"], \"other_signing_key\": \"%s\", "
	    "\"other_key_first\": 1}",
	    pem, other);
	CHECK(n > 0 && (size_t)n < sizeof state);
	CHECK(fake_api_start(&f, "tests/cloud/fake_gce_api.py", "gce-es", state, 1) == 0 &&
	      f.tls_port > 0);
	snprintf(api, sizeof api, "https://localhost:%d", f.tls_port);
	snprintf(ca, sizeof ca, "%s", harness_path(f.dir, "ca.pem"));
	pol.api = api;
	pol.ca_bundle = ca;
	r = validate(&g, &pol, err, sizeof err);
	if (r != -EINVAL ||
	    !fake_has(err, "gcp-sev-es: the AK is not the signing key GCE gives for "
			   "constel-test/europe-west3-b/constel-worker-0"))
		harness_fail(__FILE__, __LINE__, "first answer (another key): %d %s", r, err);
	if (validate(&g, &pol, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "second answer (the AK) refused: %s", err);
	CHECK(fake_api_log_count(&f, "getShieldedInstanceIdentity") == 2);
	/* the system's anchors do not know the fake's CA */
	pol.ca_bundle = NULL;
	CHECK(validate(&g, &pol, err, sizeof err) < 0 &&
	      fake_has(err, "getShieldedInstanceIdentity"));
	pol.ca_bundle = ca;
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	r = validate(&g, &pol, err, sizeof err);
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	CHECK(r == -EINVAL && fake_has(err, "getShieldedInstanceIdentity of constel-test/"
					    "europe-west3-b/constel-worker-0: HTTP 401"));
	fake_api_stop(&f);
	vtpm_fx_stop(&g);
}

TEST(gcp_sev_es_refuses_a_platform_that_is_not_amd_sev)
{
	char err[400] = "";
	struct vtpm_fx g;
	struct vtpm_policy pol;

	/* AMD SEV-ES in NonHostInfo, not what es checks */
	CHECK(gce_start(&g, &pol, 2) == 0);
	CHECK(vtpm_fx_issue(&g, doc, sizeof doc, &doc_len, err, sizeof err) == 0);
	CHECK(validate(&g, &pol, err, sizeof err) == -EINVAL);
	CHECK(fake_has(err, "gcp-sev-es: GCE confidential technology is 2, not AMD SEV (1)"));
	vtpm_fx_stop(&g);
}

/* ---- the recorded GCE attestation (go-tpm-tools' attest.Attestation protobuf) ---- */
struct pb {
	const uint8_t *p;
	size_t len;
};

static int pb_next(struct pb *b, uint32_t *field, uint64_t *v, struct pb *sub)
{
	uint64_t key = 0, x = 0;
	int shift = 0;

	if (!b->len)
		return 0;
	for (;; shift += 7) {
		if (!b->len || shift > 63)
			return -1;
		key |= (uint64_t)(b->p[0] & 0x7f) << shift;
		b->len--;
		if (!(*b->p++ & 0x80))
			break;
	}
	for (shift = 0;; shift += 7) {
		if (!b->len || shift > 63)
			return -1;
		x |= (uint64_t)(b->p[0] & 0x7f) << shift;
		b->len--;
		if (!(*b->p++ & 0x80))
			break;
	}
	*field = (uint32_t)(key >> 3);
	*v = x;
	if ((key & 7) == 2) {
		if (x > b->len)
			return -1;
		sub->p = b->p;
		sub->len = (size_t)x;
		b->p += x;
		b->len -= (size_t)x;
	} else if ((key & 7) != 0) {
		return -1;
	}
	return 1;
}

static struct tpm_quote rq[4];

TEST(gcp_sev_es_recorded_gce_attestation_verifies_as_go_tpm_tools_verifies_it)
{
	static const uint8_t nonce[] = {0x90, 0x09};
	static const char rii[] =
	    "{\"zone\":\"us-central1-a\",\"project_id\":\"p\",\"instance_name\":\"cos\"}";
	size_t len, nq = 0;
	uint8_t *pbuf = harness_vector("tpm-gce/gce-cos-85-nonce9009.pb", &len), ud[32] = {0};
	struct pb b = {pbuf, len}, s, ak = {0}, ev = {0};
	struct vtpm_policy pol = {0};
	char dir[64], pemf[128], api[64], inst[300], err[400] = "";
	uint32_t f;
	uint64_t v;
	pid_t pid;
	int port, r;

	CHECK(pbuf);
	while ((r = pb_next(&b, &f, &v, &s)) > 0) {
		struct pb q = s, qs;

		if (f == 1)
			ak = s;
		if (f == 3)
			ev = s;
		if (f != 2 || nq == 4)
			continue;
		memset(&rq[nq], 0, sizeof rq[nq]);
		while (pb_next(&q, &f, &v, &qs) > 0) {
			struct pb pcrs = qs, e;

			if (f == 1 && qs.len <= sizeof rq[nq].attest) {
				memcpy(rq[nq].attest, qs.p, qs.len);
				rq[nq].attest_len = qs.len;
			}
			if (f == 2 && qs.len <= sizeof rq[nq].sig) {
				memcpy(rq[nq].sig, qs.p, qs.len);
				rq[nq].sig_len = qs.len;
			}
			while (f == 3 && pb_next(&pcrs, &f, &v, &e) > 0) {
				struct pb ent = e, val = {0};
				uint32_t idx = 99;

				if (f == 1) {
					rq[nq].alg = (uint16_t)v;
					rq[nq].digest_len = tpm_alg_digest_len((uint16_t)v);
				}
				if (f == 2) {
					uint32_t g;
					struct pb x;

					while (pb_next(&ent, &g, &v, &x) > 0) {
						if (g == 1)
							idx = (uint32_t)v;
						if (g == 2)
							val = x;
					}
				}
				if (idx < TPM_PCRS && val.len && val.len <= TPM_DIGEST_MAX) {
					memcpy(rq[nq].values[idx], val.p, val.len);
					rq[nq].pcrs |= 1u << idx;
				}
				f = 3;
			}
		}
		nq++;
	}
	CHECK(r == 0 && ak.len && ev.len && nq == 3);
	CHECK(vtpm_document(ak.p, ak.len, rq, nq, ev.p, ev.len, (const uint8_t *)rii, strlen(rii),
			    ud, doc, sizeof doc, &doc_len) == 0);
	/* the API's key for that instance is the recorded AK */
	harness_tmpdir(dir, "vtpm-gce-rec");
	snprintf(pemf, sizeof pemf, "%s", harness_path(dir, "ak.pem"));
	CHECK(vtpm_fx_ak_pem_file(ak.p, ak.len, pemf) == 0);
	snprintf(inst, sizeof inst, "p/us-central1-a/cos=%s", pemf);
	pid = fake_serve((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen", NULL,
				    "--token", TOKEN, "--instance", inst, NULL},
			 3, "127.0.0.1:%d", &port);
	CHECK(pid > 0);
	snprintf(api, sizeof api, "http://127.0.0.1:%d", port);
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	pol.variant = vtpm_variant_find("gcp-sev-es");
	pol.check = vtpm_check_find("gcp-sev-es");
	pol.api = api;
	r = vtpm_validate_raw(&pol, doc, doc_len, nonce, sizeof nonce, err, sizeof err);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "recorded GCE attestation refused: %s", err);
	/* another nonce: refused */
	CHECK(vtpm_validate_raw(&pol, doc, doc_len, (const uint8_t *)"\x90\x08", 2, err,
				sizeof err) == -EINVAL);
	CHECK(fake_has(err, "nonce does not match"));
	fake_reap(pid);
	harness_rmtree(dir);
	free(pbuf);
}

/* The recorded GCE firmware event logs (go-tpm-tools' test data): the platform as go-tpm-tools
 * reads it, AMD SEV on the COS 85 confidential VM, SEV-SNP on the Ubuntu 24.04 one. */
TEST(gce_platform_of_recorded_gce_event_logs)
{
	size_t len;
	uint8_t *a = harness_vector("tpm-gce/cos-85-amd-sev.bin", &len);
	char err[200] = "";
	long ver = -1;
	int tech = -1;

	CHECK(a);
	if (gce_platform(a, len, &ver, &tech, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "cos-85: %s", err);
	free(a);
	CHECK(ver >= 1 && tech == 1);
	a = harness_vector("tpm-gce/ubuntu-2404-amd-sevsnp.bin", &len);
	CHECK(a);
	if (gce_platform(a, len, &ver, &tech, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "ubuntu-2404: %s", err);
	/* one byte of the NonHostInfo data: its digest no longer matches, a forged event */
	for (size_t i = 0; i + 16 < len; i++)
		if (!memcmp(a + i, "GCE NonHostInfo", 15)) {
			a[i + 16] ^= 1;
			break;
		}
	CHECK(ver >= 1 && tech == 4);
	CHECK(gce_platform(a, len, &ver, &tech, err, sizeof err) == -EINVAL);
	CHECK(fake_has(err, "forged"));
	free(a);
}
