/* The SEV-SNP issuers' pieces against a fake configfs-tsm (tests/attest/fake_sev_tsm.py, a FUSE
 * file system with the kernel's semantics, signing with a test AMD chain made by
 * tests/attest/snp-test/chain.sh): sev_guest_ext_report, the certificate table, InstanceInfo
 * as Go writes it, and the validators' SNP checks (aws-sev-snp's and gcp-sev-snp's) accepting
 * what the issuer made with the test root and refusing any changed byte. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/qemu_test_ak.h"
#include "attest/sev_guest.h"
#include "attest/snp_check.h"
#include "attest/snp_info.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "fake_proc.h"
#include "harness.h"

extern const struct vtpm_check vtpm_check_aws_sev_snp;
extern const struct vtpm_variant vtpm_gcp_sev_snp;

static char chain_dir[64];

static int chain(void)
{
	char cmd[256];

	if (chain_dir[0])
		return 0;
	harness_tmpdir(chain_dir, "snpi");
	snprintf(cmd, sizeof cmd, "bash tests/attest/snp-test/chain.sh %s", chain_dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "chain.sh failed (%s/openssl.log)\n", chain_dir);
		return -1;
	}
	return 0;
}

struct fake {
	pid_t pid;
	char mnt[128];
};

/* Runs argv (a python3 fake) and waits for its "ready" line (60 s): its pid, or -1. */
static pid_t spawn_ready(const char *const argv[])
{
	char line[16];
	pid_t pid = fake_start_line((char *const *)argv, line, sizeof line);

	if (pid > 0 && strncmp(line, "ready", 5)) {
		fake_reap(pid);
		return -1;
	}
	return pid;
}

/* Starts the fake on chain_dir/mnt-N with these options. */
static int fake_start(struct fake *f, const char *o1, const char *o2)
{
	static int n;
	const char *argv[8] = {"python3", "tests/attest/fake_sev_tsm.py", NULL, NULL};
	int i = 4;

	if (chain() < 0)
		return -1;
	snprintf(f->mnt, sizeof f->mnt, "%s/mnt-%d", chain_dir, n++);
	if (mkdir(f->mnt, 0700) < 0)
		return -1;
	argv[2] = f->mnt;
	argv[3] = chain_dir;
	if (o1)
		argv[i++] = o1;
	if (o2)
		argv[i++] = o2;
	f->pid = spawn_ready(argv);
	return f->pid > 0 ? 0 : -1;
}

static void fake_stop(struct fake *f)
{
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	umount2(f->mnt, MNT_DETACH);
	rmdir(f->mnt);
}

static uint8_t ak[TPM_PUBLIC_MAX];
static size_t ak_len;

/* An issued InstanceInfo of aws-sev-snp (VLEK, REPORT_DATA = SHA-512 of the test AK) from the
 * fake at mnt. */
static int issue_aws(const char *mnt, uint8_t *info, size_t cap, size_t *len, char *err)
{
	static uint8_t certs[SEV_CERTS_MAX];
	uint8_t rd[64], report[SEV_REPORT_LEN];
	const uint8_t *vlek;
	size_t certs_len, vlek_len;
	int r;

	if (test_ak_public(ak, sizeof ak, &ak_len) < 0 ||
	    snp_ak_digest(ak, ak_len, rd, err, 256) < 0)
		return -1;
	r = sev_guest_ext_report(mnt, "/nonexistent/sev-guest", rd, report, certs, sizeof certs,
				 &certs_len, err, 256);
	if (r < 0)
		return r;
	if ((r = sev_cert_table_find(certs, certs_len, sev_guid_vlek, &vlek, &vlek_len, err, 256)) <
	    0)
		return r;
	return snp_info_build(report, vlek, vlek_len, NULL, 0, NULL, info, cap, len);
}

/* The policy of check c: --amd-root (the test ARK) when test_root, and the attestationConfig
 * {"amdSigningKey": <the test ASVK or ASK PEM>} as the join service passes it. */
static int policy(struct vtpm_policy *p, const struct vtpm_check *c, int test_root,
		  const char *ask_name)
{
	static char cfg[8192];
	char pem[4096], e[256];
	size_t o;
	FILE *f = fopen(harness_path(chain_dir, ask_name), "r");
	size_t n = f ? fread(pem, 1, sizeof pem - 1, f) : 0;

	if (f)
		fclose(f);
	pem[n] = 0;
	o = (size_t)snprintf(cfg, sizeof cfg, "{\"amdSigningKey\":\"");
	for (size_t i = 0; i < n && o < sizeof cfg - 8; i++)
		o += (size_t)snprintf(cfg + o, sizeof cfg - o, pem[i] == '\n' ? "\\n" : "%c",
				      pem[i]);
	o += (size_t)snprintf(cfg + o, sizeof cfg - o, "\",\"bootloaderVersion\":3}");
	memset(p, 0, sizeof *p);
	p->check = c;
	p->config = cfg;
	p->config_len = o;
	p->test_root = NULL;
	if (test_root) {
		static char ark[4096];
		FILE *a = fopen(harness_path(chain_dir, "ark.pem"), "r");
		size_t k = a ? fread(ark, 1, sizeof ark - 1, a) : 0;

		if (a)
			fclose(a);
		ark[k] = 0;
		p->test_root = ark;
	}
	if (c->policy_init(p, e, sizeof e) < 0) {
		fprintf(stderr, "policy_init: %s\n", e);
		return -1;
	}
	return 0;
}

static int aws_check(const struct vtpm_policy *p, const uint8_t *info, size_t len,
		     const uint8_t *akp, size_t akl, char *err)
{
	struct vtpm_view v = {
	    .instance_info = info, .instance_info_len = len, .ak_pub = akp, .ak_len = akl};

	return vtpm_check_aws_sev_snp.trusted_key(p, &v, err, 256);
}

TEST(snp_ak_digest_is_sha512_of_go_pkix)
{
	/* python3 cryptography: SHA-512 of the SubjectPublicKeyInfo DER of (test_ak_n, 65537),
	 * the bytes Go's x509.MarshalPKIXPublicKey writes */
	uint8_t want[64], got[64];
	char err[256];

	harness_unhex("a8a1e8b1a265b3f4750604ce6c27c9afc63aee947a3fb5938d1147f491411ef7179ed7a"
		      "5332334265c357eca46cc925751f2eb994ab1be6344cf47288cfe89ac",
		      want, sizeof want);
	CHECK(test_ak_public(ak, sizeof ak, &ak_len) == 0);
	CHECK(snp_ak_digest(ak, ak_len, got, err, sizeof err) == 0);
	CHECK_BYTES(got, want, 64);
}

TEST(snp_tsm_aws_issued_info_accepted_and_every_change_refused)
{
	static uint8_t info[SNP_INFO_MAX], bad[SNP_INFO_MAX];
	struct snp_info *ii = malloc(sizeof *ii);
	struct vtpm_policy p, builtin;
	struct fake f;
	size_t len, blen;
	uint8_t other_ak[TPM_PUBLIC_MAX];
	char err[256];
	int r;

	CHECK(ii);
	CHECK(fake_start(&f, NULL, NULL) == 0);
	r = issue_aws(f.mnt, info, sizeof info, &len, err);
	fake_stop(&f);
	if (r < 0)
		fprintf(stderr, "issue: %s\n", err);
	CHECK(r == 0);
	CHECK(policy(&p, &vtpm_check_aws_sev_snp, 1, "asvk.pem") == 0);
	r = aws_check(&p, info, len, ak, ak_len, err);
	if (r < 0)
		fprintf(stderr, "check: %s\n", err);
	CHECK(r == 0);
	/* AMD's roots do not trust the test chain */
	CHECK(policy(&builtin, &vtpm_check_aws_sev_snp, 0, "asvk.pem") == 0);
	CHECK(aws_check(&builtin, info, len, ak, ak_len, err) == -EINVAL);
	vtpm_check_aws_sev_snp.policy_free(&builtin);
	/* another AK: the report does not bind it */
	memcpy(other_ak, ak, ak_len);
	other_ak[ak_len - 1] ^= 1;
	CHECK(aws_check(&p, info, len, other_ak, ak_len, err) == -EINVAL);
	CHECK(strstr(err, "report data") || strstr(err, "REPORT_DATA"));
	/* one changed byte anywhere in the report (signed part, signature) or the VLEK */
	CHECK(snp_info_parse(info, len, ii, err, sizeof err) == 0);
	for (size_t i = 0; i < SNP_INFO_REPORT_LEN + ii->signer_len; i += 7) {
		struct snp_info m = *ii;

		if (i < SNP_INFO_REPORT_LEN)
			m.report[i] ^= 0x01;
		else
			m.signer[i - SNP_INFO_REPORT_LEN] ^= 0x01;
		if (i >= 0x2a0 + 2 * 72 && i < SNP_INFO_REPORT_LEN)
			continue; /* after the signature: reserved, unsigned */
		CHECK(snp_info_build(m.report, m.signer, m.signer_len, NULL, 0, NULL, bad,
				     sizeof bad, &blen) == 0);
		if (aws_check(&p, bad, blen, ak, ak_len, err) != -EINVAL) {
			fprintf(stderr, "byte %zu changed and accepted\n", i);
			CHECK(0);
		}
	}
	/* the InstanceInfo's own bytes: a space, a key's case, a GCP part */
	memcpy(bad, info, len);
	bad[len - 1] = ' ';
	CHECK(aws_check(&p, bad, len, ak, ak_len, err) == -EINVAL);
	memcpy(bad, info, len);
	bad[2] = 'r'; /* "reportSigner": Go would read it, but Go does not write it */
	CHECK(aws_check(&p, bad, len, ak, ak_len, err) == -EINVAL);
	CHECK(strstr(err, "ReportSigner") != NULL);
	{
		struct snp_gce_info g = {"z", "p", "n"};

		CHECK(snp_info_build(ii->report, ii->signer, ii->signer_len, NULL, 0, &g, bad,
				     sizeof bad, &blen) == 0);
		CHECK(aws_check(&p, bad, blen, ak, ak_len, err) == -EINVAL);
		CHECK(strstr(err, "GCP") != NULL);
	}
	vtpm_check_aws_sev_snp.policy_free(&p);
	free(ii);
}

TEST(snp_tsm_aws_vcek_refused)
{
	static uint8_t certs[SEV_CERTS_MAX], info[SNP_INFO_MAX];
	struct vtpm_policy p;
	struct fake f;
	uint8_t rd[64], report[SEV_REPORT_LEN];
	const uint8_t *vcek;
	size_t certs_len, vcek_len, len;
	char err[256];

	CHECK(test_ak_public(ak, sizeof ak, &ak_len) == 0);
	CHECK(snp_ak_digest(ak, ak_len, rd, err, sizeof err) == 0);
	CHECK(fake_start(&f, "--signer", "vcek") == 0);
	CHECK(sev_guest_ext_report(f.mnt, NULL, rd, report, certs, sizeof certs, &certs_len, err,
				   sizeof err) == 0);
	fake_stop(&f);
	CHECK(sev_cert_table_find(certs, certs_len, sev_guid_vlek, &vcek, &vcek_len, err,
				  sizeof err) == -ENOENT);
	CHECK(sev_cert_table_find(certs, certs_len, sev_guid_vcek, &vcek, &vcek_len, err,
				  sizeof err) == 0);
	CHECK(snp_info_build(report, vcek, vcek_len, NULL, 0, NULL, info, sizeof info, &len) == 0);
	/* with the VCEK's ASK configured, the chain holds: refused only for being no VLEK */
	CHECK(policy(&p, &vtpm_check_aws_sev_snp, 1, "ask.pem") == 0);
	CHECK(aws_check(&p, info, len, ak, ak_len, err) == -EINVAL);
	vtpm_check_aws_sev_snp.policy_free(&p);
	CHECK(strstr(err, "not signed by a VLEK") != NULL);
}

TEST(snp_tsm_generation_race_retried_then_refused)
{
	static uint8_t certs[SEV_CERTS_MAX];
	uint8_t rd[64] = {1}, report[SEV_REPORT_LEN];
	size_t certs_len;
	struct fake f;
	char err[256];
	int r;

	CHECK(fake_start(&f, "--race", "1") == 0);
	r = sev_guest_ext_report(f.mnt, NULL, rd, report, certs, sizeof certs, &certs_len, err,
				 sizeof err);
	fake_stop(&f);
	CHECK(r == 0);
	CHECK(!memcmp(report + 0x50, rd, 64));
	CHECK(fake_start(&f, "--race", "9") == 0);
	r = sev_guest_ext_report(f.mnt, NULL, rd, report, certs, sizeof certs, &certs_len, err,
				 sizeof err);
	fake_stop(&f);
	CHECK(r == -EAGAIN);
	CHECK(strstr(err, "generation") != NULL);
}

TEST(snp_tsm_other_provider_refused)
{
	static uint8_t certs[SEV_CERTS_MAX];
	uint8_t rd[64] = {0}, report[SEV_REPORT_LEN];
	size_t certs_len;
	struct fake f;
	char err[256];
	int r;

	CHECK(fake_start(&f, "--provider", "tdx_guest") == 0);
	r = sev_guest_ext_report(f.mnt, NULL, rd, report, certs, sizeof certs, &certs_len, err,
				 sizeof err);
	fake_stop(&f);
	CHECK(r == -ENODEV);
	CHECK(strstr(err, "tdx_guest") != NULL);
}

TEST(snp_no_tsm_falls_to_the_device)
{
	static uint8_t certs[SEV_CERTS_MAX];
	uint8_t rd[64] = {0}, report[SEV_REPORT_LEN];
	size_t certs_len;
	char err[256];

	CHECK(sev_guest_ext_report("/nonexistent/tsm", "/nonexistent/sev-guest", rd, report, certs,
				   sizeof certs, &certs_len, err, sizeof err) == -ENOENT);
	CHECK(strstr(err, "/nonexistent/sev-guest") != NULL);
	CHECK(strstr(err, "sev-guest module") != NULL);
}

TEST(snp_cert_table_find_bounded)
{
	uint8_t t[24 * 3 + 8] = {0};
	const uint8_t *d;
	size_t l;
	char err[256];

	memcpy(t, sev_guid_vlek, 16);
	t[16] = 48; /* offset just after the end entry */
	t[20] = 8;
	CHECK(sev_cert_table_find(t, 56, sev_guid_vlek, &d, &l, err, sizeof err) == 0);
	CHECK(d == t + 48 && l == 8);
	CHECK(sev_cert_table_find(t, 56, sev_guid_vcek, &d, &l, err, sizeof err) == -ENOENT);
	CHECK(sev_cert_table_find(t, 55, sev_guid_vlek, &d, &l, err, sizeof err) == -EBADMSG);
	t[16] = 24; /* inside the entries */
	CHECK(sev_cert_table_find(t, 56, sev_guid_vlek, &d, &l, err, sizeof err) == -EBADMSG);
	CHECK(sev_cert_table_find(t, 40, sev_guid_vlek, &d, &l, err, sizeof err) == -EBADMSG);
}

TEST(snp_info_json_is_gos)
{
	/* Go: json.Marshal(snp.InstanceInfo{AttestationReport: []byte{1}..., ReportSigner: PEM,
	 * GCP: &attest.GCEInstanceInfo{Zone, ProjectId, InstanceName}}) with an empty name
	 * omitted (omitempty) */
	uint8_t report[SNP_INFO_REPORT_LEN] = {0}, out[SNP_INFO_MAX];
	const uint8_t der[3] = {1, 2, 3};
	struct snp_gce_info g = {"us-central1-a", "proj", ""};
	const char *want_head = "{\"ReportSigner\":\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFRSUQK"
				"LS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\",\"CertChain\":null,"
				"\"AttestationReport\":\"AAAA";
	const char *want_tail = "AAA=\",\"Azure\":null,\"GCP\":{\"zone\":\"us-central1-a\","
				"\"project_id\":\"proj\"}}";
	size_t len;

	CHECK(snp_info_build(report, der, 3, NULL, 0, &g, out, sizeof out, &len) == 0);
	CHECK(len > strlen(want_head) + strlen(want_tail));
	CHECK(!memcmp(out, want_head, strlen(want_head)));
	CHECK(!memcmp(out + len - strlen(want_tail), want_tail, strlen(want_tail)));
	strcpy(g.instance_name, "a<b");
	CHECK(snp_info_build(report, der, 3, NULL, 0, &g, out, sizeof out, &len) == -EINVAL);
}

__attribute__((destructor)) static void cleanup(void)
{
	if (chain_dir[0])
		harness_rmtree(chain_dir);
}

TEST(snp_info_fuzz_seeds_parse)
{
	/* the fuzz target's seeds reach past the parser (made from the test chain with python) */
	static uint8_t buf[SNP_INFO_MAX + 1];
	static struct snp_info ii;
	const char *names[2] = {"tests/fuzz/corpus/fuzz_snp_info/aws",
				"tests/fuzz/corpus/fuzz_snp_info/gcp"};
	char err[256];

	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(names[i], "rb");
		size_t n;

		CHECK(f != NULL);
		n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		if (snp_info_parse(buf, n, &ii, err, sizeof err) < 0)
			fprintf(stderr, "%s: %s\n", names[i], err);
		CHECK(snp_info_parse(buf, n, &ii, err, sizeof err) == 0);
		CHECK(ii.have_gcp == i);
		CHECK(i == 0 || (ii.ask_len > 0 && !strcmp(ii.gcp.instance_name, "node-0")));
	}
}

/* A free loopback port (bound and released: the fake binds it right after). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t l = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

TEST(snp_tsm_gcp_issued_info_accepted_and_bound_to_extra_data)
{
	static uint8_t info[SNP_INFO_MAX];
	static struct snp_info ii;
	struct vtpm_env env;
	struct vtpm_issue in;
	struct vtpm_policy p;
	struct vtpm_view v;
	struct fake f;
	char listen[32], imds[64], err[256];
	uint8_t rd[64] = {0};
	const char *md[8] = {
	    "python3", "tests/cloud/fake_cloud.py", "--csp", "gcp", "--listen", listen, NULL};
	size_t len;
	pid_t mdpid;
	int port = free_port(), r;

	CHECK(port > 0);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	snprintf(imds, sizeof imds, "http://127.0.0.1:%d", port);
	CHECK((mdpid = spawn_ready(md)) > 0);
	CHECK(fake_start(&f, "--signer", "vcek") == 0);
	memset(&env, 0, sizeof env);
	env.variant = &vtpm_gcp_sev_snp;
	env.imds = imds;
	env.tsm_report = f.mnt;
	env.sev_guest = "/nonexistent/sev-guest";
	memset(&in, 0, sizeof in);
	in.env = &env;
	for (int i = 0; i < 32; i++)
		in.extra[i] = (uint8_t)(0xa0 + i);
	r = vtpm_gcp_sev_snp.instance_info(&in, info, sizeof info, &len, err, sizeof err);
	fake_stop(&f);
	kill(mdpid, SIGTERM);
	waitpid(mdpid, NULL, 0);
	if (r < 0)
		fprintf(stderr, "issue: %s\n", err);
	CHECK(r == 0);
	CHECK(snp_info_parse(info, len, &ii, err, sizeof err) == 0);
	CHECK(ii.have_gcp && ii.ask_len > 0);
	CHECK(!strcmp(ii.gcp.zone, "europe-west3-b"));
	CHECK(!strcmp(ii.gcp.project_id, "constel-test"));
	CHECK(!strcmp(ii.gcp.instance_name, "constel-worker-0"));
	/* the validator's SNP part: REPORT_DATA = extraData || 32 zero bytes, the ASK from the
	 * document (the configured one is the ASVK, which did not sign the VCEK) */
	memcpy(rd, in.extra, 32);
	CHECK(policy(&p, &vtpm_check_aws_sev_snp, 1, "asvk.pem") == 0);
	memset(&v, 0, sizeof v);
	v.instance_info = info;
	v.instance_info_len = len;
	r = snp_check_document(&p, &v, rd, 0, 1, NULL, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "check: %s\n", err);
	CHECK(r == 0);
	rd[40] = 1; /* the zeros after extraData are bound too */
	CHECK(snp_check_document(&p, &v, rd, 0, 1, NULL, err, sizeof err) == -EINVAL);
	rd[40] = 0;
	rd[0] ^= 1;
	CHECK(snp_check_document(&p, &v, rd, 0, 1, NULL, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "report data") != NULL);
	/* a GCP document lacks nothing an AWS one must not have: as aws-sev-snp it is refused */
	CHECK(snp_check_document(&p, &v, rd, 0, 0, NULL, err, sizeof err) == -EINVAL);
	vtpm_check_aws_sev_snp.policy_free(&p);
}

TEST(snp_gcp_metadata_without_its_server_fails_in_one_line)
{
	struct snp_gce_info g;
	char imds[64], err[256];
	int port = free_port();

	snprintf(imds, sizeof imds, "http://127.0.0.1:%d", port);
	CHECK(gcp_snp_gce_info(imds, &g, err, sizeof err) < 0);
	CHECK(strchr(err, '\n') == NULL && err[0]);
}

TEST(snp_tsm_without_provider_falls_to_the_device)
{
	static uint8_t certs[SEV_CERTS_MAX];
	uint8_t rd[64] = {0}, report[SEV_REPORT_LEN];
	size_t certs_len;
	struct fake f;
	char err[256];
	int r;

	CHECK(fake_start(&f, "--no-provider", NULL) == 0);
	r = sev_guest_ext_report(f.mnt, "/nonexistent/sev-guest", rd, report, certs, sizeof certs,
				 &certs_len, err, sizeof err);
	fake_stop(&f);
	CHECK(r == -ENOENT);
	CHECK(strstr(err, "/nonexistent/sev-guest") != NULL);
}

/* ---- /dev/sev-guest: the fake in --dev mode (FUSE ioctl, the request's buffers in our
 * memory) ---- */
static int dev_report(const char *o1, const char *o2, const char *o3, const char *o4, size_t cap,
		      uint8_t *report, size_t *certs_len, char *err, int twice, int *second)
{
	static uint8_t certs[SEV_CERTS_MAX];
	const char *argv[12] = {"python3", "tests/attest/fake_sev_tsm.py", NULL, NULL, "--dev"};
	char dev[160];
	uint8_t rd[64];
	struct fake f;
	int i = 5, r;
	static int n;

	if (chain() < 0)
		return -1000;
	snprintf(f.mnt, sizeof f.mnt, "%s/dev-%d", chain_dir, n++);
	if (mkdir(f.mnt, 0700) < 0)
		return -1000;
	argv[2] = f.mnt;
	argv[3] = chain_dir;
	for (const char *const *o = (const char *const[]){o1, o2, o3, o4}; i < 9 && *o; o++)
		argv[i++] = *o;
	if ((f.pid = spawn_ready(argv)) <= 0)
		return -1000;
	snprintf(dev, sizeof dev, "%s/sev-guest", f.mnt);
	memset(rd, 0x5a, sizeof rd);
	r = sev_guest_ext_report(NULL, dev, rd, report, cap ? certs : NULL, cap, certs_len, err,
				 256);
	if (twice)
		*second = sev_guest_ext_report(NULL, dev, rd, report, cap ? certs : NULL, cap,
					       certs_len, err, 256);
	fake_stop(&f);
	if (r == 0 && memcmp(report + 0x50, rd, 64))
		return -1001;
	return r;
}

TEST(snp_dev_ext_report_with_the_hosts_certificates)
{
	uint8_t report[SEV_REPORT_LEN];
	size_t n;
	char err[256];
	int r = dev_report(NULL, NULL, NULL, NULL, SEV_CERTS_MAX, report, &n, err, 0, NULL);

	if (r < 0)
		fprintf(stderr, "%d %s\n", r, err);
	CHECK(r == 0);
	CHECK(n > 24 * 3 && n < 8192); /* VLEK and ASVK, trimmed to the table's end */
	/* no certificates wanted: SNP_GET_REPORT */
	CHECK(dev_report(NULL, NULL, NULL, NULL, 0, report, &n, err, 0, NULL) == 0 && n == 0);
}

TEST(snp_dev_buffer_grown_once_to_what_the_kernel_says)
{
	uint8_t report[SEV_REPORT_LEN];
	size_t n;
	char err[256];
	int r;

	/* a kernel allowing 64 KiB and a host table of 6 pages: 16 KiB, then 24 KiB */
	r = dev_report("--blob-max", "65536", "--table-pages", "6", SEV_CERTS_MAX, report, &n, err,
		       0, NULL);
	if (r < 0)
		fprintf(stderr, "%d %s\n", r, err);
	CHECK(r == 0);
	/* the 6.x kernel's 16 KiB limit: the grown request is refused, in one line */
	r = dev_report("--table-pages", "6", NULL, NULL, SEV_CERTS_MAX, report, &n, err, 0, NULL);
	CHECK(r == -EINVAL);
	CHECK(strstr(err, "SNP_GET_EXT_REPORT") != NULL);
}

TEST(snp_dev_firmware_error_named_and_key_disabled_after)
{
	uint8_t report[SEV_REPORT_LEN];
	size_t n;
	char err[256];
	int second = 0, r;

	r = dev_report("--fw-error", "0x16", NULL, NULL, SEV_CERTS_MAX, report, &n, err, 1,
		       &second);
	CHECK(r == -EIO);
	CHECK(second == -ENOTTY);
	CHECK(strstr(err, "disabled") != NULL);
	r = dev_report("--fw-error", "0x27", NULL, NULL, SEV_CERTS_MAX, report, &n, err, 0, NULL);
	CHECK(r == -EIO);
	CHECK(strstr(err, "firmware error 0x27 INVALID_KEY") != NULL);
}
