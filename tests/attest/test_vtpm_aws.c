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
	char path[128];
	int p;
	FILE *f;
	pid_t pid;

	snprintf(path, sizeof path, "%s", harness_path(dir, name));
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(
	    f,
	    "{\"region\": \"eu-central-1\", \"credentials\": [{\"AccessKeyId\": "
	    "\"AKIDEXAMPLE\", \"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\", "
	    "\"Token\": \"IQoJb3JpZ2luX2VjEXAMPLE\"}], \"instances\": [], \"load_balancers\": [], "
	    "\"images\": %s}",
	    images);
	fclose(f);
	pid = serve((char *[]){"python3", "tests/cloud/fake_aws_api.py", "--state", path, "--port",
			       NULL, NULL},
		    5, "%d", &p);
	if (pid < 0)
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
	char dir[64], meta[64], api[64], api2[64], api3[64], b64[1024], err[400] = "";
	uint8_t nonce[32], ud[32], got[64];
	size_t n;
	pid_t mp, ap, ap2, ap3;
	int p1, r;

	memset(nonce, 0x33, sizeof nonce);
	memset(ud, 0x44, sizeof ud);
	harness_tmpdir(dir, "vtpm-aws");
	CHECK(swtpm_start(&sw) == 0);
	mp = serve((char *[]){"python3", "tests/cloud/fake_cloud.py", "--csp", "aws", "--listen",
			      NULL, NULL},
		   5, "127.0.0.1:%d", &p1);
	CHECK(mp > 0);
	snprintf(meta, sizeof meta, "http://127.0.0.1:%d", p1);
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
