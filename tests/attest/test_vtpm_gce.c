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
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bearssl.h>
#include <tss2/tss2_mu.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "base/der.h"
#include "harness.h"
#include "tpm/swtpm.h"
#include "vtpm_provision.h"

#define TOKEN "ya29.test-token"

static uint8_t doc[ATLS_DOC_MAX], ev_log[1024];
static size_t doc_len, ev_len;

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* GCE's PCR 0 events as its firmware measures them. */
static size_t gce_events(uint8_t tech, uint8_t data[3][64], size_t len[3], uint32_t type[3])
{
	static const char ver[] = "GCE Virtual Firmware v1";

	for (size_t i = 0; i < sizeof ver; i++) { /* UCS-2 with the terminator */
		data[0][2 * i] = (uint8_t)ver[i];
		data[0][2 * i + 1] = 0;
	}
	len[0] = 2 * sizeof ver;
	type[0] = 0x8;
	memset(data[1], 0, 32);
	memcpy(data[1], "GCE NonHostInfo\0", 16);
	data[1][16] = tech;
	len[1] = 32;
	type[1] = 0x11;
	memset(data[2], 0, 4);
	len[2] = 4;
	type[2] = 0x4;
	return 3;
}

/* A crypto-agile log (four banks) of the events, and the same events into PCR 0. */
static int boot_gce(const struct tcti_spec *tc, uint8_t tech)
{
	static const struct {
		uint16_t alg, size;
		const br_hash_class *h;
	} algs[] = {{0x0004, 20, &br_sha1_vtable},
		    {0x000B, 32, &br_sha256_vtable},
		    {0x000C, 48, &br_sha384_vtable},
		    {0x000D, 64, &br_sha512_vtable}};
	uint8_t data[3][64], *p = ev_log;
	size_t len[3], n = gce_events(tech, data, len, (uint32_t[3]){0});
	uint32_t type[3];
	struct tpm *t;

	gce_events(tech, data, len, type);
	memset(ev_log, 0, sizeof ev_log);
	le32(p + 4, 3);
	le32(p + 28, 28 + 16 + 1);
	memcpy(p + 32, "Spec ID Event03", 16);
	p[32 + 16 + 4 + 1] = 2;
	p[32 + 16 + 7] = 2;
	le32(p + 32 + 24, 4);
	for (int i = 0; i < 4; i++) {
		p[32 + 28 + 4 * i] = (uint8_t)algs[i].alg;
		p[32 + 30 + 4 * i] = (uint8_t)algs[i].size;
	}
	p += 32 + 28 + 16 + 1;
	if (tpm_open(tc, &t, NULL, 0) < 0)
		return -1;
	for (size_t e = 0; e < n; e++) {
		le32(p, 0);
		le32(p + 4, type[e]);
		le32(p + 8, 4);
		p += 12;
		for (int i = 0; i < 4; i++) {
			br_hash_compat_context h;

			p[0] = (uint8_t)algs[i].alg;
			p[1] = 0;
			algs[i].h->init(&h.vtable);
			algs[i].h->update(&h.vtable, data[e], len[e]);
			algs[i].h->out(&h.vtable, p + 2);
			p += 2 + algs[i].size;
		}
		le32(p, (uint32_t)len[e]);
		memcpy(p + 4, data[e], len[e]);
		p += 4 + len[e];
		if (tpm_pcr_event(t, 0, data[e], len[e]) < 0) {
			tpm_close(t);
			return -1;
		}
	}
	tpm_close(t);
	ev_len = (size_t)(p - ev_log);
	return 0;
}

/* The RSA AK of a TPMT_PUBLIC as a PEM "PUBLIC KEY" file. */
static int ak_pem_file(const uint8_t *pub, size_t len, const char *path)
{
	static const uint8_t rsa_oid[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
	static const uint8_t e65537[] = {1, 0, 1};
	TPMT_PUBLIC ak;
	uint8_t der[600], zero = 0;
	struct der_out d = {.p = der, .cap = sizeof der};
	size_t off = 0, spki, alg, bits, key;
	char pem[1200];
	FILE *f;
	int n;

	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(pub, len, &off, &ak) != TSS2_RC_SUCCESS)
		return -1;
	spki = der_begin(&d);
	alg = der_begin(&d);
	der_put_tlv(&d, DER_OID, rsa_oid, sizeof rsa_oid);
	der_put_tlv(&d, DER_NULL, NULL, 0);
	der_end(&d, alg, DER_SEQUENCE);
	bits = der_begin(&d);
	der_put_raw(&d, &zero, 1);
	key = der_begin(&d);
	der_put_uint(&d, ak.unique.rsa.buffer, ak.unique.rsa.size);
	der_put_uint(&d, e65537, sizeof e65537);
	der_end(&d, key, DER_SEQUENCE);
	der_end(&d, bits, DER_BIT_STRING);
	der_end(&d, spki, DER_SEQUENCE);
	if (d.err || (n = pem_encode("PUBLIC KEY", der, d.len, pem, sizeof pem)) < 0)
		return -1;
	f = fopen(path, "w");
	if (!f)
		return -1;
	fwrite(pem, 1, (size_t)n, f);
	return fclose(f);
}

static int free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int p = 20000 + (int)(random() % 12000); /* below the ephemeral ports */

		if (swtpm_port_free(p))
			return p;
	}
	return -1;
}

/* Something accepts connections on 127.0.0.1:port. */
static int listening(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

/* Starts a fake server: argv[slot] becomes fmt with a free port; a server that exits (the port
 * was taken meanwhile) is started again on another, at most 8 times, each given 30 s (python3
 * on a loaded machine). Its pid, or -1; the port in *port. */
static pid_t serve(char **argv, int slot, const char *fmt, int *port)
{
	static char arg[8][64];
	static int next;
	char *a = arg[next++ % 8];

	for (int tries = 0; tries < 8; tries++) {
		int p = free_port(), st;
		pid_t pid;

		if (p < 0)
			return -1;
		snprintf(a, 64, fmt, p);
		argv[slot] = a;
		pid = spawn(argv);
		for (int i = 0; i < 300 && pid > 0; i++) {
			if (listening(p) && waitpid(pid, &st, WNOHANG) == 0) {
				*port = p;
				return pid;
			}
			if (waitpid(pid, &st, WNOHANG) == pid) {
				pid = -1; /* it exited: another port */
				break;
			}
			usleep(100 * 1000);
		}
		if (pid > 0) {
			reap(pid);
			return -1;
		}
	}
	return -1;
}

struct gce {
	struct swtpm sw;
	char dir[64], meta[64], api[64], pemf[128];
	pid_t meta_pid, api_pid;
	uint8_t ak[TPM_PUBLIC_MAX];
	size_t ak_len;
	struct vtpm_policy pol;
	uint8_t nonce[32], ud[32];
};

static int gce_start(struct gce *g)
{
	char inst[300];
	int p1, p2;
	struct tpm *t;

	memset(g, 0, sizeof *g);
	memset(g->nonce, 0x42, 32);
	memset(g->ud, 0x17, 32);
	harness_tmpdir(g->dir, "vtpm-gce");
	if (swtpm_start(&g->sw) < 0 || vtpm_provision_gce(&g->sw.tcti) < 0 ||
	    tpm_open(&g->sw.tcti, &t, NULL, 0) < 0)
		return -1;
	if (tpm_ak_select(t, TPM_AK_SRC_GCE, g->ak, sizeof g->ak, &g->ak_len, NULL, 0) < 0) {
		tpm_close(t);
		return -1;
	}
	tpm_close(t);
	snprintf(g->pemf, sizeof g->pemf, "%s", harness_path(g->dir, "ak.pem"));
	if (ak_pem_file(g->ak, g->ak_len, g->pemf) < 0)
		return -1;
	g->meta_pid = serve((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "gcp",
				       "--listen", NULL, "--set", "name=constel-worker-0", NULL},
			    5, "127.0.0.1:%d", &p1);
	if (g->meta_pid < 0)
		return -1;
	snprintf(g->meta, sizeof g->meta, "http://127.0.0.1:%d", p1);
	snprintf(inst, sizeof inst, "constel-test/europe-west3-b/constel-worker-0=%s", g->pemf);
	g->api_pid = serve((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen",
				      NULL, "--token", TOKEN, "--instance", inst, NULL},
			   3, "127.0.0.1:%d", &p2);
	if (g->api_pid < 0)
		return -1;
	snprintf(g->api, sizeof g->api, "http://127.0.0.1:%d", p2);
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	g->pol.variant = vtpm_variant_find("gcp-sev-es");
	g->pol.check = vtpm_check_find("gcp-sev-es");
	g->pol.api = g->api;
	return g->pol.variant && g->pol.check ? 0 : -1;
}

static void gce_stop(struct gce *g)
{
	reap(g->meta_pid);
	reap(g->api_pid);
	swtpm_destroy(&g->sw);
	harness_rmtree(g->dir);
}

static int issue(struct gce *g, char *err, size_t errlen)
{
	struct vtpm_env env;
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s", harness_path(g->dir, "log"));
	f = fopen(path, "w");
	if (!f)
		return -1;
	fwrite(ev_log, 1, ev_len, f);
	fclose(f);
	vtpm_env_default(&env, g->pol.variant);
	env.tcti = g->sw.tcti;
	env.event_log = path;
	env.imds = g->meta;
	return vtpm_issue(&env, g->ud, g->nonce, 32, doc, sizeof doc, &doc_len, err, errlen);
}

static int validate(struct gce *g, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t n;

	return vtpm_validate(&g->pol, doc, doc_len, g->nonce, 32, ud, sizeof ud, &n, err, errlen);
}

static int has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s (want %s)\n", err, want);
	return 0;
}

TEST(gcp_sev_es_document_from_swtpm_and_fakes_is_accepted_and_refused_as_go_does)
{
	static const char ii[] =
	    "{\"zone\":\"europe-west3-b\",\"project_id\":\"constel-test\",\"instance_name\":"
	    "\"constel-worker-0\"}";
	char err[400] = "", b64[200];
	struct gce g;
	uint8_t *p;
	int r;

	CHECK(gce_start(&g) == 0);
	CHECK(boot_gce(&g.sw.tcti, 1) == 0);
	if (issue(&g, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	doc[doc_len] = '\0';
	base64_encode(BASE64_STD, (const uint8_t *)ii, sizeof ii - 1, b64, sizeof b64);
	CHECK(strstr((char *)doc, b64)); /* Go's bytes, in Go's order */
	if (validate(&g, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	/* no token: the API refuses */
	unsetenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	r = validate(&g, err, sizeof err);
	if (r != -EINVAL)
		harness_fail(__FILE__, __LINE__, "no token: %d %s", r, err);
	CHECK(has(err, "gcp-sev-es: getShieldedInstanceIdentity of constel-test/europe-west3-b/"
		       "constel-worker-0: HTTP 401"));
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	/* another API (on another port) gives another key for the instance */
	{
		uint8_t other[TPM_PUBLIC_MAX];
		char inst[300], api2[64];
		int p2;
		pid_t pid;

		memcpy(other, g.ak, g.ak_len);
		other[g.ak_len - 1] ^= 1;
		CHECK(ak_pem_file(other, g.ak_len, g.pemf) == 0);
		snprintf(inst, sizeof inst, "constel-test/europe-west3-b/constel-worker-0=%s",
			 g.pemf);
		pid = serve((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen",
				       NULL, "--token", TOKEN, "--instance", inst, NULL},
			    3, "127.0.0.1:%d", &p2);
		CHECK(pid > 0);
		snprintf(api2, sizeof api2, "http://127.0.0.1:%d", p2);
		g.pol.api = api2;
		r = validate(&g, err, sizeof err);
		g.pol.api = g.api;
		reap(pid);
		CHECK(r == -EINVAL);
		CHECK(has(err, "gcp-sev-es: the AK is not the signing key GCE gives"));
	}
	/* InstanceInfo naming another instance (and so another nonce) */
	p = (uint8_t *)strstr((char *)doc, b64);
	CHECK(p);
	p[4] = p[4] == 'A' ? 'B' : 'A';
	CHECK(validate(&g, err, sizeof err) == -EINVAL);
	CHECK(has(err, "gcp-sev-es: "));
	gce_stop(&g);
}

TEST(gcp_sev_es_refuses_a_platform_that_is_not_amd_sev)
{
	char err[400] = "";
	struct gce g;

	CHECK(gce_start(&g) == 0);
	CHECK(boot_gce(&g.sw.tcti, 2) == 0); /* AMD SEV-ES in NonHostInfo, not what es checks */
	CHECK(issue(&g, err, sizeof err) == 0);
	CHECK(validate(&g, err, sizeof err) == -EINVAL);
	CHECK(has(err, "gcp-sev-es: GCE confidential technology is 2, not AMD SEV (1)"));
	gce_stop(&g);
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
	CHECK(ak_pem_file(ak.p, ak.len, pemf) == 0);
	snprintf(inst, sizeof inst, "p/us-central1-a/cos=%s", pemf);
	pid = serve((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen", NULL,
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
	CHECK(has(err, "nonce does not match"));
	reap(pid);
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
	CHECK(has(err, "forged"));
	free(a);
}
