/* gcp-sev-snp end to end: swtpm provisioned as GCE's vTPM (vtpm_provision.h), the SNP report
 * from the fake configfs-tsm (tests/attest/fake_sev_tsm.py --signer vcek: VCEK and ASK in the
 * certificate table, signed by the test chain of tests/attest/snp-test/chain.sh), the GCE
 * metadata server faked by tests/cloud/fake_cloud.py and getShieldedInstanceIdentity by
 * tests/cloud/fake_gce_shielded.py, all on 127.0.0.1. The issuer's document is accepted by the
 * gcp-sev-snp validator with the test root; refused with AMD's roots, for another nonce (the
 * report then binds other extraData), and when GCE gives another key for the instance. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tss2/tss2_mu.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "base/der.h"
#include "harness.h"
#include "tpm/swtpm.h"
#include "vtpm_provision.h"

#define TOKEN "ya29.test-token"

static uint8_t doc[ATLS_DOC_MAX];
static size_t doc_len;

static int free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int p = 20000 + (int)(random() % 20000);

		if (swtpm_port_free(p))
			return p;
	}
	return -1;
}

static int wait_port(int port)
{
	for (int i = 0; i < 300; i++) {
		if (!swtpm_port_free(port))
			return 0;
		usleep(100 * 1000);
	}
	return -1;
}

/* argv with stdout to out_fd (-1: /dev/null). */
static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(devnull, 0);
		dup2(out_fd >= 0 ? out_fd : devnull, 1);
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

/* The RSA AK of a TPMT_PUBLIC as a PEM "PUBLIC KEY" file (what GCE's API answers). */
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

static char *slurp(const char *path)
{
	static char buf[3][8192];
	static int i;
	FILE *f = fopen(path, "r");
	size_t n;

	i = (i + 1) % 3;
	if (!f)
		return NULL;
	n = fread(buf[i], 1, sizeof buf[i] - 1, f);
	fclose(f);
	buf[i][n] = 0;
	return buf[i];
}

struct gcp {
	struct swtpm sw;
	char dir[64], meta[64], api[64], pemf[128], tsm[128], ark[4096];
	pid_t meta_pid, api_pid, tsm_pid;
	uint8_t ak[TPM_PUBLIC_MAX];
	size_t ak_len;
	struct vtpm_policy pol;
	uint8_t nonce[32], ud[32];
};

static int gcp_start(struct gcp *g)
{
	static const char cfg[] =
	    "{\"measurements\":{\"15\":{\"expected\":\"000000000000000000"
	    "0000000000000000000000000000000000000000000000\",\"warnOnly\":"
	    "false}},\"bootloaderVersion\":3,\"teeVersion\":0,\"snpVersion\":8,"
	    "\"microcodeVersion\":209,\"amdRootKey\":\"\"}";
	char listen1[64], listen2[64], inst[300], cmd[200], err[256], buf[8] = {0};
	int p1 = free_port(), p2, pp[2];
	struct pollfd pfd;
	struct tpm *t;

	memset(g, 0, sizeof *g);
	memset(g->nonce, 0x42, 32);
	memset(g->ud, 0x17, 32);
	harness_tmpdir(g->dir, "snp-gcp");
	snprintf(cmd, sizeof cmd, "bash tests/attest/snp-test/chain.sh %s", g->dir);
	if (system(cmd) != 0)
		return -1;
	snprintf(g->ark, sizeof g->ark, "%s", slurp(harness_path(g->dir, "ark.pem")));
	snprintf(g->tsm, sizeof g->tsm, "%s", harness_path(g->dir, "tsm"));
	if (mkdir(g->tsm, 0700) < 0 || pipe(pp) < 0)
		return -1;
	g->tsm_pid = spawn((char *[]){"python3", "tests/attest/fake_sev_tsm.py", g->tsm, g->dir,
				      "--signer", "vcek", NULL},
			   pp[1]);
	close(pp[1]);
	pfd.fd = pp[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 60000) != 1 || read(pp[0], buf, 5) != 5 || strcmp(buf, "ready")) {
		close(pp[0]);
		return -1;
	}
	close(pp[0]);
	if (swtpm_start(&g->sw) < 0 || vtpm_provision_gce(&g->sw.tcti) < 0 ||
	    tpm_open(&g->sw.tcti, &t, NULL, 0) < 0)
		return -1;
	if (tpm_ak_select(t, TPM_AK_SRC_GCE, g->ak, sizeof g->ak, &g->ak_len, NULL, 0) < 0) {
		tpm_close(t);
		return -1;
	}
	tpm_close(t);
	snprintf(g->pemf, sizeof g->pemf, "%s", harness_path(g->dir, "ak.pem"));
	if (ak_pem_file(g->ak, g->ak_len, g->pemf) < 0 || p1 < 0)
		return -1;
	snprintf(listen1, sizeof listen1, "127.0.0.1:%d", p1);
	snprintf(g->meta, sizeof g->meta, "http://127.0.0.1:%d", p1);
	g->meta_pid = spawn((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "gcp",
				       "--listen", listen1, NULL},
			    -1);
	if (wait_port(p1) < 0 || (p2 = free_port()) < 0)
		return -1;
	snprintf(listen2, sizeof listen2, "127.0.0.1:%d", p2);
	snprintf(g->api, sizeof g->api, "http://127.0.0.1:%d", p2);
	snprintf(inst, sizeof inst, "constel-test/europe-west3-b/constel-worker-0=%s", g->pemf);
	g->api_pid = spawn((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen",
				      listen2, "--token", TOKEN, "--instance", inst, NULL},
			   -1);
	if (wait_port(p2) < 0)
		return -1;
	setenv("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN, 1);
	g->pol.test_root = g->ark;
	g->pol.api = g->api;
	if (vtpm_policy_init(&g->pol, "gcp-sev-snp", cfg, sizeof cfg - 1, err, sizeof err) < 0) {
		fprintf(stderr, "policy: %s\n", err);
		return -1;
	}
	return 0;
}

static void gcp_stop(struct gcp *g)
{
	vtpm_policy_free(&g->pol);
	reap(g->meta_pid);
	reap(g->api_pid);
	reap(g->tsm_pid);
	umount2(g->tsm, MNT_DETACH);
	swtpm_destroy(&g->sw);
	harness_rmtree(g->dir);
}

static int issue(struct gcp *g, char *err, size_t errlen)
{
	struct vtpm_env env;

	vtpm_env_default(&env, g->pol.variant);
	env.tcti = g->sw.tcti;
	env.event_log = harness_path(g->dir, "no-event-log");
	env.imds = g->meta;
	env.tsm_report = g->tsm;
	env.sev_guest = harness_path(g->dir, "no-sev-guest");
	return vtpm_issue(&env, g->ud, g->nonce, 32, doc, sizeof doc, &doc_len, err, errlen);
}

static int validate(struct gcp *g, const uint8_t *nonce, char *err, size_t errlen)
{
	uint8_t ud[64];
	size_t n;

	return vtpm_validate(&g->pol, doc, doc_len, nonce, 32, ud, sizeof ud, &n, err, errlen);
}

static int has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s (want %s)\n", err, want);
	return 0;
}

TEST(gcp_sev_snp_document_from_swtpm_and_fakes_accepted_and_refused)
{
	char err[400] = "";
	uint8_t other[32];
	struct gcp g;
	const char *root;

	CHECK(gcp_start(&g) == 0);
	if (issue(&g, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	if (validate(&g, g.nonce, err, sizeof err) != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	/* Go reads InstanceInfo as snp.InstanceInfo, byte for byte (tests/interop atlspeer) */
	{
		char cmd[512], peer[256] = "";
		FILE *f = popen("tests/interop/build-atlspeer.sh 2>/dev/null", "r");

		CHECK(f && fgets(peer, sizeof peer, f));
		pclose(f);
		peer[strcspn(peer, "\n")] = 0;
		f = fopen(harness_path(g.dir, "doc.json"), "w");
		CHECK(f);
		fwrite(doc, 1, doc_len, f);
		fclose(f);
		snprintf(cmd, sizeof cmd, "%s verify-ii --variant gcp-sev-snp --doc %s >&2", peer,
			 harness_path(g.dir, "doc.json"));
		CHECK(system(cmd) == 0);
	}
	/* another nonce: extraData differs, so does the report's REPORT_DATA */
	memset(other, 0x43, sizeof other);
	CHECK(validate(&g, other, err, sizeof err) == -EINVAL);
	/* AMD's roots do not trust the test chain */
	root = g.pol.test_root;
	vtpm_policy_free(&g.pol);
	g.pol.test_root = NULL;
	CHECK(g.pol.check->policy_init(&g.pol, err, sizeof err) == 0);
	CHECK(validate(&g, g.nonce, err, sizeof err) == -EINVAL);
	CHECK(has(err, "gcp-sev-snp: snp: chain"));
	vtpm_policy_free(&g.pol);
	g.pol.test_root = root;
	CHECK(g.pol.check->policy_init(&g.pol, err, sizeof err) == 0);
	/* GCE (another API, on another port) gives another key for the instance */
	{
		uint8_t ak2[TPM_PUBLIC_MAX];
		char listen2[64], inst[300], api2[64];
		int p2 = free_port();
		pid_t pid;

		memcpy(ak2, g.ak, g.ak_len);
		ak2[g.ak_len - 1] ^= 1;
		CHECK(ak_pem_file(ak2, g.ak_len, g.pemf) == 0 && p2 > 0);
		snprintf(listen2, sizeof listen2, "127.0.0.1:%d", p2);
		snprintf(api2, sizeof api2, "http://127.0.0.1:%d", p2);
		snprintf(inst, sizeof inst, "constel-test/europe-west3-b/constel-worker-0=%s",
			 g.pemf);
		pid = spawn((char *[]){"python3", "tests/cloud/fake_gce_shielded.py", "--listen",
				       listen2, "--token", TOKEN, "--instance", inst, NULL},
			    -1);
		CHECK(wait_port(p2) == 0);
		g.pol.api = api2;
		CHECK(validate(&g, g.nonce, err, sizeof err) == -EINVAL);
		g.pol.api = g.api;
		reap(pid);
		CHECK(has(err, "the AK is not the signing key GCE gives"));
	}
	gcp_stop(&g);
}
