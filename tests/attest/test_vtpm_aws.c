/* aws-nitro-tpm end to end: swtpm (the owner AK), AWS IMDSv2 faked by
 * tests/cloud/fake_cloud.py and EC2 by tests/cloud/fake_aws_api.py (SigV4 checked by botocore),
 * both on 127.0.0.1. InstanceInfo is checked byte for byte against Go's encoding of
 * aws-sdk-go-v2's imds.InstanceIdentityDocument; the validator accepts the document when
 * DescribeImages says TpmSupport "v2.0" and refuses it when the image has no TPM support, is
 * unknown, the validator has no credentials, or InstanceInfo changes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "base/base.h"
#include "harness.h"
#include "tpm/swtpm.h"

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

/* Waits up to 30 s (python3 on a loaded machine) until something listens on port. */
static int wait_port(int port)
{
	for (int i = 0; i < 300; i++) {
		if (!swtpm_port_free(port))
			return 0;
		usleep(100 * 1000);
	}
	return -1;
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

static int has(const char *err, const char *want)
{
	if (strstr(err, want))
		return 1;
	fprintf(stderr, "error was: %s (want %s)\n", err, want);
	return 0;
}

/* fake_aws_api.py with these images, on a free port; its URL into api. */
static pid_t ec2(const char *dir, const char *name, const char *images, char *api, size_t cap)
{
	char path[128], port[16];
	int p = free_port();
	FILE *f;
	pid_t pid;

	snprintf(path, sizeof path, "%s", harness_path(dir, name));
	f = fopen(path, "w");
	if (!f || p < 0)
		return -1;
	fprintf(
	    f,
	    "{\"region\": \"eu-central-1\", \"credentials\": [{\"AccessKeyId\": "
	    "\"AKIDEXAMPLE\", \"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\", "
	    "\"Token\": \"IQoJb3JpZ2luX2VjEXAMPLE\"}], \"instances\": [], \"load_balancers\": [], "
	    "\"images\": %s}",
	    images);
	fclose(f);
	snprintf(port, sizeof port, "%d", p);
	pid = spawn((char *[]){"python3", "tests/cloud/fake_aws_api.py", "--state", path, "--port",
			       port, NULL});
	if (wait_port(p) < 0)
		return -1;
	snprintf(api, cap, "http://127.0.0.1:%d", p);
	return pid;
}

TEST(aws_nitro_tpm_document_from_swtpm_and_fakes_is_accepted_and_refused_as_go_does)
{
	static const char ii[] =
	    "{\"devpayProductCodes\":null,\"marketplaceProductCodes\":null,\"availabilityZone\":"
	    "\"eu-central-1b\",\"privateIp\":\"10.9.0.2\",\"version\":\"2017-09-30\",\"region\":"
	    "\"eu-central-1\",\"instanceId\":\"i-0123456789abcdef0\",\"billingProducts\":null,"
	    "\"instanceType\":\"m6a.xlarge\",\"accountId\":\"012345678900\",\"pendingTime\":"
	    "\"2026-01-02T03:04:05Z\",\"imageId\":\"ami-0123456789abcdeff\",\"kernelId\":\"\","
	    "\"ramdiskId\":\"\",\"architecture\":\"x86_64\"}";
	struct swtpm sw = {0};
	struct vtpm_env env;
	struct vtpm_policy pol = {0};
	char dir[64], meta[64], listen[64], api[64], api2[64], api3[64], b64[1024], err[400] = "";
	uint8_t nonce[32], ud[32], got[64];
	size_t n;
	pid_t mp, ap, ap2, ap3;
	int p1 = free_port(), r;

	memset(nonce, 0x33, sizeof nonce);
	memset(ud, 0x44, sizeof ud);
	harness_tmpdir(dir, "vtpm-aws");
	CHECK(swtpm_start(&sw) == 0 && p1 > 0);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", p1);
	snprintf(meta, sizeof meta, "http://127.0.0.1:%d", p1);
	mp = spawn((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "aws", "--listen",
			      listen, NULL});
	CHECK(wait_port(p1) == 0);
	ap = ec2(dir, "ok.json",
		 "[{\"ImageId\": \"ami-0123456789abcdeff\", \"TpmSupport\": \"v2.0\"}]", api,
		 sizeof api);
	ap2 =
	    ec2(dir, "notpm.json", "[{\"ImageId\": \"ami-0123456789abcdeff\"}]", api2, sizeof api2);
	ap3 = ec2(dir, "none.json", "[]", api3, sizeof api3);
	CHECK(ap > 0 && ap2 > 0 && ap3 > 0);

	vtpm_env_default(&env, vtpm_variant_find("aws-nitro-tpm"));
	CHECK(env.variant);
	env.tcti = sw.tcti;
	env.event_log = NULL;
	env.imds = meta;
	r = vtpm_issue(&env, ud, nonce, sizeof nonce, doc, sizeof doc, &doc_len, err, sizeof err);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	doc[doc_len] = '\0';
	base64_encode(BASE64_STD, (const uint8_t *)ii, sizeof ii - 1, b64, sizeof b64);
	CHECK(strstr((char *)doc, b64)); /* Go's re-encoding, byte for byte */

	pol.variant = env.variant;
	pol.check = vtpm_check_find("aws-nitro-tpm");
	pol.api = api;
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
	setenv("AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjEXAMPLE", 1);
	r = vtpm_validate(&pol, doc, doc_len, nonce, sizeof nonce, got, sizeof got, &n, err,
			  sizeof err);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	CHECK(n == 32 && !memcmp(got, ud, 32));
	pol.api = api2;
	CHECK(vtpm_validate(&pol, doc, doc_len, nonce, sizeof nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(has(err, "aws-nitro-tpm: aws image ami-0123456789abcdeff does not support TPM v2.0"));
	pol.api = api3;
	CHECK(vtpm_validate(&pol, doc, doc_len, nonce, sizeof nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(
	    has(err, "aws-nitro-tpm: DescribeImages ami-0123456789abcdeff in eu-central-1 failed"));
	pol.api = api;
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK(vtpm_validate(&pol, doc, doc_len, nonce, sizeof nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(has(err, "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"));
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
	/* one byte of InstanceInfo */
	{
		char *p = strstr((char *)doc, b64);

		CHECK(p);
		p[10] = p[10] == 'A' ? 'B' : 'A';
		CHECK(vtpm_validate(&pol, doc, doc_len, nonce, sizeof nonce, got, sizeof got, &n,
				    err, sizeof err) == -EINVAL);
		CHECK(has(err, "aws-nitro-tpm: "));
	}
	reap(mp);
	reap(ap);
	reap(ap2);
	reap(ap3);
	swtpm_destroy(&sw);
	harness_rmtree(dir);
}
