/* Test helper: one swtpm provisioned as a cloud provisions its vTPM, with the fakes of that
 * cloud's interfaces around it on 127.0.0.1, for the issuers' tests and make bench
 * (tests/bench/attest_bench.c). Run from the repository's top (as tests/run.sh does).
 *
 *   vtpm_fx_start(f, "gcp-sev-snp", nonce_byte, ud_byte) sets up everything the variant's
 *     issuer reads and fills f->env; vtpm_fx_issue makes a document; vtpm_fx_stop ends it all.
 *   The parts, for tests that vary one of them:
 *     vtpm_fx_begin        a folder and a swtpm (qemu-vtpm, aws-*: the agent makes its AK)
 *     vtpm_fx_gce          GCE's AK template in NV (vtpm_provision.h), the GCE AK as ak.pem,
 *                          the metadata server (tests/cloud/fake_cloud.py --csp gcp) and
 *                          getShieldedInstanceIdentity (tests/cloud/fake_gce_shielded.py)
 *     vtpm_fx_shielded_other_key  that API giving another key for the instance
 *     vtpm_fx_gce_boot     GCE's PCR 0 firmware events (version, NonHostInfo with technology
 *                          tech, separator) into PCR 0 and as a crypto-agile log (the env's)
 *     vtpm_fx_event_log    a crypto-agile event log of the events given
 *     vtpm_fx_tsm          the test AMD chain (snp-test/chain.sh) and the fake configfs-tsm
 *                          (fake_sev_tsm.py, FUSE) signing with it; no /dev/sev-guest
 *     vtpm_fx_aws          AWS IMDSv2 (tests/cloud/fake_cloud.py --csp aws)
 *     vtpm_fx_azure        Azure's HCL AK, THIM in the fake Azure IMDS (azure_imds_fake.h)
 *     vtpm_fx_azure_report an HCL report (azure_snp_test.py) naming a key, in NV
 *     vtpm_fx_tdx_hcl      an HCL report of a TDX VM, and fake_tdquote.py as /acc/tdquote
 * Each returns 0 or -1 and says why on stderr. */
#ifndef CONSTEL_TEST_VTPM_FIXTURE_H
#define CONSTEL_TEST_VTPM_FIXTURE_H

#include <sys/mount.h>
#include <sys/stat.h>

#include <bearssl.h>
#include <tss2/tss2_mu.h>

#include "attest/attest.h"
#include "attest/azure_imds_fake.h"
#include "attest/hcl.h"
#include "attest/vtpm.h"
#include "attest/vtpm_provision.h"
#include "base/base.h"
#include "base/der.h"
#include "fake_proc.h"
#include "harness.h"
#include "tpm/swtpm.h"

#define VTPM_FX_GCE_TOKEN    "ya29.test-token"
#define VTPM_FX_GCE_INSTANCE "constel-test/europe-west3-b/constel-worker-0"
#define VTPM_FX_HCL_REPORT   2048 /* azure_snp_test.py's HCL report: what swtpm's NV holds */

struct vtpm_fx {
	struct swtpm sw;
	struct vtpm_env env;
	struct imds_fake imds; /* azure-sev-snp */
	char dir[64], meta[64], api[64], pemf[128], tsm[128], root[4096];
	char log[128], no_sev_guest[128], no_tsm[128]; /* the env's paths */
	pid_t meta_pid, api_pid, tsm_pid, tdx_pid;
	uint8_t ak[TPM_PUBLIC_MAX], nonce[32], ud[32];
	size_t ak_len;
};

static inline int vtpm_fx_fail(const char *what)
{
	fprintf(stderr, "vtpm_fixture: %s\n", what);
	return -1;
}

/* The whole file into buf (less than cap bytes, NUL-terminated), its length into *len. */
static inline int vtpm_fx_read(const char *path, void *buf, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	((char *)buf)[n] = '\0';
	*len = n;
	return n < cap - 1 ? 0 : -1;
}

static inline int vtpm_fx_write(const char *path, const void *b, size_t n)
{
	FILE *o = fopen(path, "wb");
	int ok = o && fwrite(b, 1, n, o) == n;

	if (o && fclose(o))
		ok = 0;
	return ok ? 0 : -1;
}

/* The RSA AK of a TPMT_PUBLIC as a PEM "PUBLIC KEY" file (what GCE's API answers). */
static inline int vtpm_fx_ak_pem_file(const uint8_t *pub, size_t len, const char *path)
{
	char pem[1200];
	int n = vtpm_prov_rsa_pem(pub, len, pem, sizeof pem);

	return n < 0 ? -1 : vtpm_fx_write(path, pem, (size_t)n);
}

/* The AK's modulus, base64url without padding (a JWK's n). */
static inline int vtpm_fx_ak_n(const uint8_t *ak, size_t ak_len, char *out, size_t cap)
{
	TPMT_PUBLIC pub;
	size_t off = 0, n;

	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(ak, ak_len, &off, &pub) != TSS2_RC_SUCCESS ||
	    base64_encode(BASE64_URL, pub.unique.rsa.buffer, pub.unique.rsa.size, out, cap) < 0)
		return -1;
	for (n = strlen(out); n && out[n - 1] == '='; n--)
		out[n - 1] = 0;
	return 0;
}

static inline int vtpm_fx_begin(struct vtpm_fx *f, const char *variant, int nonce_byte, int ud_byte)
{
	memset(f, 0, sizeof *f);
	memset(f->nonce, nonce_byte, sizeof f->nonce);
	memset(f->ud, ud_byte, sizeof f->ud);
	harness_tmpdir(f->dir, "vtpm-fx");
	vtpm_env_default(&f->env, vtpm_variant_find(variant));
	if (!f->env.variant)
		return vtpm_fx_fail("no such variant");
	if (swtpm_start(&f->sw) < 0)
		return vtpm_fx_fail("swtpm did not start");
	f->env.tcti = f->sw.tcti;
	f->env.event_log = NULL;
	snprintf(f->no_sev_guest, sizeof f->no_sev_guest, "%s",
		 harness_path(f->dir, "no-sev-guest"));
	snprintf(f->no_tsm, sizeof f->no_tsm, "%s", harness_path(f->dir, "no-tsm"));
	f->env.sev_guest = f->no_sev_guest;
	f->env.tsm_report = f->no_tsm;
	return 0;
}

/* getShieldedInstanceIdentity answering with the key in pemf for the test's instance; its URL
 * into api. */
static inline pid_t vtpm_fx_shielded(const char *pemf, char *api, size_t cap)
{
	char inst[300];
	int port;
	pid_t pid;

	snprintf(inst, sizeof inst, VTPM_FX_GCE_INSTANCE "=%s", pemf);
	pid = fake_serve((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen", NULL,
				    "--token", VTPM_FX_GCE_TOKEN, "--instance", inst, NULL},
			 3, "127.0.0.1:%d", &port);
	if (pid > 0)
		snprintf(api, cap, "http://127.0.0.1:%d", port);
	return pid;
}

/* Another getShieldedInstanceIdentity that gives another key (the AK with its last byte
 * changed) for the instance: ak.pem is rewritten for it. */
static inline pid_t vtpm_fx_shielded_other_key(struct vtpm_fx *f, char *api, size_t cap)
{
	uint8_t other[TPM_PUBLIC_MAX];

	memcpy(other, f->ak, f->ak_len);
	other[f->ak_len - 1] ^= 1;
	if (vtpm_fx_ak_pem_file(other, f->ak_len, f->pemf) < 0)
		return -1;
	return vtpm_fx_shielded(f->pemf, api, cap);
}

static inline int vtpm_fx_gce(struct vtpm_fx *f)
{
	struct tpm *t;
	int port, r;

	if (vtpm_provision_gce(&f->sw.tcti) < 0 || tpm_open(&f->sw.tcti, &t, NULL, 0) < 0)
		return -1;
	r = tpm_ak_select(t, TPM_AK_SRC_GCE, f->ak, sizeof f->ak, &f->ak_len, NULL, 0);
	tpm_close(t);
	if (r < 0)
		return vtpm_fx_fail("no GCE AK");
	snprintf(f->pemf, sizeof f->pemf, "%s", harness_path(f->dir, "ak.pem"));
	if (vtpm_fx_ak_pem_file(f->ak, f->ak_len, f->pemf) < 0)
		return vtpm_fx_fail("ak.pem not written");
	f->meta_pid =
	    fake_serve((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "gcp",
				  "--listen", NULL, "--set", "name=constel-worker-0", NULL},
		       5, "127.0.0.1:%d", &port);
	if (f->meta_pid < 0)
		return -1;
	snprintf(f->meta, sizeof f->meta, "http://127.0.0.1:%d", port);
	f->env.imds = f->meta;
	f->api_pid = vtpm_fx_shielded(f->pemf, f->api, sizeof f->api);
	if (f->api_pid < 0)
		return -1;
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", VTPM_FX_GCE_TOKEN, 1);
	return 0;
}

static inline void vtpm_fx_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One event of a firmware log: what TPM2_PCR_Event(pcr, data) extends. */
struct vtpm_fx_event {
	uint32_t pcr, type;
	const void *data;
	size_t len;
};

/* A crypto-agile log of the events (the Spec ID event, then each with its digests in four
 * banks) into log; its length, or 0 when it does not fit cap. */
static inline size_t vtpm_fx_event_log(const struct vtpm_fx_event *ev, size_t n, uint8_t *log,
				       size_t cap)
{
	static const struct {
		uint16_t alg, size;
		const br_hash_class *h;
	} algs[] = {{0x0004, 20, &br_sha1_vtable},
		    {0x000B, 32, &br_sha256_vtable},
		    {0x000C, 48, &br_sha384_vtable},
		    {0x000D, 64, &br_sha512_vtable}};
	size_t need = 32 + 28 + 16 + 1;
	uint8_t *p = log;

	for (size_t e = 0; e < n; e++)
		need += 12 + 4 * 2 + 20 + 32 + 48 + 64 + 4 + ev[e].len;
	if (need > cap)
		return 0;
	memset(log, 0, need);
	vtpm_fx_le32(p + 4, 3); /* EV_NO_ACTION; PCR 0; SHA-1 digest zero */
	vtpm_fx_le32(p + 28, 28 + 16 + 1);
	memcpy(p + 32, "Spec ID Event03", 16);
	p[32 + 16 + 4 + 1] = 2; /* spec version 2.0 */
	p[32 + 16 + 7] = 2;	/* uintnSize */
	vtpm_fx_le32(p + 32 + 24, 4);
	for (int i = 0; i < 4; i++) {
		p[32 + 28 + 4 * i] = (uint8_t)algs[i].alg;
		p[32 + 30 + 4 * i] = (uint8_t)algs[i].size;
	}
	p += 32 + 28 + 16 + 1;
	for (size_t e = 0; e < n; e++) {
		vtpm_fx_le32(p, ev[e].pcr);
		vtpm_fx_le32(p + 4, ev[e].type);
		vtpm_fx_le32(p + 8, 4);
		p += 12;
		for (int i = 0; i < 4; i++) {
			br_hash_compat_context h;

			p[0] = (uint8_t)algs[i].alg;
			p[1] = 0;
			algs[i].h->init(&h.vtable);
			algs[i].h->update(&h.vtable, ev[e].data, ev[e].len);
			algs[i].h->out(&h.vtable, p + 2);
			p += 2 + algs[i].size;
		}
		vtpm_fx_le32(p, (uint32_t)ev[e].len);
		memcpy(p + 4, ev[e].data, ev[e].len);
		p += 4 + ev[e].len;
	}
	return (size_t)(p - log);
}

/* GCE's PCR 0 events as its firmware measures them (version, NonHostInfo with technology
 * tech, separator): into the TPM and, as a log, into dir/log, the env's event log. */
static inline int vtpm_fx_gce_boot(struct vtpm_fx *f, uint8_t tech)
{
	static const char ver[] = "GCE Virtual Firmware v1";
	uint8_t ucs2[2 * sizeof ver] = {0}, nhi[32] = "GCE NonHostInfo", sep[4] = {0};
	uint8_t ev_log[1024];
	const struct vtpm_fx_event ev[3] = {
	    {0, 0x8, ucs2, sizeof ucs2}, {0, 0x11, nhi, sizeof nhi}, {0, 0x4, sep, sizeof sep}};
	size_t len;
	struct tpm *t;

	for (size_t i = 0; i < sizeof ver; i++) /* UCS-2 with the terminator */
		ucs2[2 * i] = (uint8_t)ver[i];
	nhi[16] = tech;
	len = vtpm_fx_event_log(ev, 3, ev_log, sizeof ev_log);
	if (!len || tpm_open(&f->sw.tcti, &t, NULL, 0) < 0)
		return -1;
	for (size_t e = 0; e < 3; e++)
		if (tpm_pcr_event(t, ev[e].pcr, ev[e].data, ev[e].len) < 0) {
			tpm_close(t);
			return -1;
		}
	tpm_close(t);
	snprintf(f->log, sizeof f->log, "%s", harness_path(f->dir, "log"));
	f->env.event_log = f->log;
	return vtpm_fx_write(f->log, ev_log, len);
}

/* signer: "vcek" or "vlek" (the fake's default, as AWS signs). */
static inline int vtpm_fx_tsm(struct vtpm_fx *f, const char *signer)
{
	char cmd[200], buf[16];
	size_t len;

	snprintf(cmd, sizeof cmd, "bash tests/attest/snp-test/chain.sh %s", f->dir);
	if (system(cmd) != 0)
		return vtpm_fx_fail("snp-test/chain.sh failed");
	if (vtpm_fx_read(harness_path(f->dir, "ark.pem"), f->root, sizeof f->root, &len) < 0)
		return vtpm_fx_fail("no ark.pem");
	snprintf(f->tsm, sizeof f->tsm, "%s", harness_path(f->dir, "tsm"));
	if (mkdir(f->tsm, 0700) < 0)
		return -1;
	f->tsm_pid = fake_start_line((char *[]){"python3", "tests/attest/fake_sev_tsm.py", f->tsm,
						f->dir, "--signer", (char *)signer, NULL},
				     buf, sizeof buf);
	if (f->tsm_pid < 0 || strncmp(buf, "ready", 5))
		return vtpm_fx_fail("fake_sev_tsm.py did not say ready");
	f->env.tsm_report = f->tsm;
	return 0;
}

static inline int vtpm_fx_aws(struct vtpm_fx *f)
{
	int port;

	f->meta_pid = fake_serve((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "aws",
					    "--listen", NULL, NULL},
				 5, "127.0.0.1:%d", &port);
	if (f->meta_pid < 0)
		return -1;
	snprintf(f->meta, sizeof f->meta, "http://127.0.0.1:%d", port);
	f->env.imds = f->meta;
	return 0;
}

/* Runtime data naming key n (base64url) as HCLAkPub, the test chain (its ARK into root) and
 * the HCL report made for it, written into NV 0x01400001; tweak, when >= 0, flips a bit of
 * that HCL report's byte. */
static inline int vtpm_fx_azure_report(const struct tcti_spec *t, const char *dir,
				       const char *n_b64url, long tweak, char *root, size_t cap)
{
	char cmd[512], rt[1024], path[160];
	uint8_t hcl[VTPM_FX_HCL_REPORT + 2];
	size_t len;

	snprintf(rt, sizeof rt,
		 "{\"keys\":[{\"kid\":\"HCLAkPub\",\"key_ops\":[\"sign\"],\"kty\":\"RSA\",\"e\":"
		 "\"AQAB\",\"n\":\"%s\"}],\"vm-configuration\":{\"console-enabled\":true,"
		 "\"secure-boot\":true,\"tpm-enabled\":true,\"vmUniqueId\":"
		 "\"5E3C1E43-7A26-4B7D-A1C5-6A3B6A7D3F21\"}}",
		 n_b64url);
	snprintf(path, sizeof path, "%s/rt.json", dir);
	if (vtpm_fx_write(path, rt, strlen(rt)) < 0)
		return -1;
	snprintf(cmd, sizeof cmd, "python3 tests/attest/azure_snp_test.py %s %s", dir, path);
	if (system(cmd) != 0)
		return vtpm_fx_fail("azure_snp_test.py failed");
	snprintf(path, sizeof path, "%s/hcl.bin", dir);
	if (vtpm_fx_read(path, hcl, sizeof hcl, &len) < 0 || len != VTPM_FX_HCL_REPORT)
		return vtpm_fx_fail("hcl.bin is not 2048 bytes");
	if (tweak >= 0)
		hcl[tweak] ^= 0x01;
	snprintf(path, sizeof path, "%s/ark.pem", dir);
	if (vtpm_fx_read(path, root, cap, &len) < 0)
		return vtpm_fx_fail("no ark.pem");
	return vtpm_provision_nv(t, HCL_NV_INDEX, hcl, VTPM_FX_HCL_REPORT);
}

/* The HCL AK, and THIM of the fake IMDS serving the test VCEK and chain (maa, when not NULL,
 * the VM's constellation-maa-url tag); the HCL report is vtpm_fx_azure_report's. */
static inline int vtpm_fx_azure(struct vtpm_fx *f, const char *maa)
{
	char vcek[160], chain[160];

	if (vtpm_provision_hcl_ak(&f->sw.tcti, f->ak, sizeof f->ak, &f->ak_len) < 0)
		return -1;
	snprintf(vcek, sizeof vcek, "%s/vcek.pem", f->dir);
	snprintf(chain, sizeof chain, "%s/chain.pem", f->dir);
	if (imds_fake_start(&f->imds, vcek, chain, maa) < 0)
		return -1;
	f->env.imds = f->imds.base;
	return 0;
}

/* ... and an HCL report naming the AK. */
static inline int vtpm_fx_azure_hcl(struct vtpm_fx *f)
{
	char n[400];

	if (vtpm_fx_azure(f, NULL) < 0 || vtpm_fx_ak_n(f->ak, f->ak_len, n, sizeof n) < 0)
		return -1;
	return vtpm_fx_azure_report(&f->sw.tcti, f->dir, n, -1, f->root, sizeof f->root);
}

/* An HCL report of a TDX VM as Azure's paravisor leaves it (the offsets the issuer reads):
 * "HCLA" header, a TDREPORT whose REPORTDATA[0:32] is SHA-256 of the runtime data, report
 * type 4, the runtime data (JSON naming the AK, or another key, as HCLAkPub) at 1236. */
static inline size_t vtpm_fx_tdx_report(uint8_t *b, size_t cap, const uint8_t *ak_pub,
					size_t ak_len, int other_key)
{
	TPMT_PUBLIC ak;
	size_t off = 0, rl;
	char n64[400], *rt = (char *)b + 1236;
	br_sha256_context sc;

	if (Tss2_MU_TPMT_PUBLIC_Unmarshal(ak_pub, ak_len, &off, &ak) != TSS2_RC_SUCCESS)
		return 0;
	if (other_key)
		ak.unique.rsa.buffer[10] ^= 1;
	base64_encode(BASE64_URL, ak.unique.rsa.buffer, ak.unique.rsa.size, n64, sizeof n64);
	for (size_t i = strlen(n64); i && n64[i - 1] == '='; i--)
		n64[i - 1] = '\0';
	memset(b, 0, cap);
	memcpy(b, "HCLA", 4);
	rl = (size_t)snprintf(rt, cap - 1236,
			      "{\"keys\":[{\"kid\":\"HCLAkPub\",\"key_ops\":[\"sign\"],\"kty\":"
			      "\"RSA\",\"e\":\"AQAB\",\"n\":\"%s\"}],\"vm-configuration\":{}}",
			      n64);
	b[1224] = 4;	       /* report type TDX */
	b[1232] = (uint8_t)rl; /* runtime data size */
	b[1233] = (uint8_t)(rl >> 8);
	br_sha256_init(&sc);
	br_sha256_update(&sc, rt, rl);
	br_sha256_out(&sc, b + 32 + 128); /* TDREPORT REPORTDATA */
	return 1236 + rl;
}

/* The HCL AK, its TDX HCL report, and fake_tdquote.py (tamper: quotes changed after signing)
 * as IMDS. */
static inline int vtpm_fx_tdx_hcl(struct vtpm_fx *f, int tamper, int other_key)
{
	uint8_t hcl[2048];
	char line[32];
	size_t hl;

	if (vtpm_provision_hcl_ak(&f->sw.tcti, f->ak, sizeof f->ak, &f->ak_len) < 0)
		return -1;
	hl = vtpm_fx_tdx_report(hcl, sizeof hcl, f->ak, f->ak_len, other_key);
	if (!hl || vtpm_provision_nv(&f->sw.tcti, HCL_NV_INDEX, hcl, hl) < 0)
		return -1;
	f->tdx_pid = fake_start_line(
	    (char *[]){"python3", "tests/attest/fake_tdquote.py", tamper ? "--tamper" : NULL, NULL},
	    line, sizeof line);
	if (f->tdx_pid < 0 || atoi(line) <= 0)
		return -1;
	snprintf(f->meta, sizeof f->meta, "http://127.0.0.1:%d", atoi(line));
	f->env.imds = f->meta;
	return 0;
}

static inline void vtpm_fx_stop(struct vtpm_fx *f)
{
	fake_reap(f->meta_pid);
	fake_reap(f->api_pid);
	fake_reap(f->tdx_pid);
	imds_fake_stop(&f->imds);
	if (f->tsm_pid > 0) {
		fake_reap(f->tsm_pid);
		umount2(f->tsm, MNT_DETACH);
	}
	f->meta_pid = f->api_pid = f->tsm_pid = f->tdx_pid = 0;
	swtpm_destroy(&f->sw);
	if (f->dir[0])
		harness_rmtree(f->dir);
	f->dir[0] = '\0';
}

/* Everything variant's issuer reads, as on its cloud. */
static inline int vtpm_fx_start(struct vtpm_fx *f, const char *variant, int nonce_byte, int ud_byte)
{
	int r = vtpm_fx_begin(f, variant, nonce_byte, ud_byte);

	if (r == 0 && !strcmp(variant, "gcp-sev-es"))
		r = vtpm_fx_gce(f) < 0 ? -1 : vtpm_fx_gce_boot(f, 1);
	else if (r == 0 && !strcmp(variant, "gcp-sev-snp"))
		r = vtpm_fx_gce(f) < 0 ? -1 : vtpm_fx_tsm(f, "vcek");
	else if (r == 0 && !strcmp(variant, "aws-nitro-tpm"))
		r = vtpm_fx_aws(f);
	else if (r == 0 && !strcmp(variant, "aws-sev-snp"))
		r = vtpm_fx_tsm(f, "vlek");
	else if (r == 0 && !strcmp(variant, "azure-sev-snp"))
		r = vtpm_fx_azure_hcl(f);
	else if (r == 0 && !strcmp(variant, "azure-tdx"))
		r = vtpm_fx_tdx_hcl(f, 0, 0);
	return r;
}

static inline int vtpm_fx_issue(struct vtpm_fx *f, uint8_t *doc, size_t cap, size_t *len, char *err,
				size_t errlen)
{
	return vtpm_issue(&f->env, f->ud, f->nonce, sizeof f->nonce, doc, cap, len, err, errlen);
}

#endif
