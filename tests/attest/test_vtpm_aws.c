/* aws-nitro-tpm end to end: swtpm (the owner AK), AWS IMDSv2 faked by
 * tests/cloud/fake_cloud.py and EC2 by tests/cloud/fake_aws_api.py (SigV4 checked by botocore),
 * both on 127.0.0.1. InstanceInfo is checked byte for byte against Go's encoding of
 * aws-sdk-go-v2's imds.InstanceIdentityDocument; the validator accepts the document when
 * DescribeImages says TpmSupport "v2.0" and refuses it when the image has no TPM support, is
 * unknown, the validator has no credentials, or InstanceInfo changes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/vtpm_fixture.h"

static uint8_t doc[ATLS_DOC_MAX];
static size_t doc_len;

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
	pid = fake_serve((char *[]){"python3", "tests/cloud/fake_aws_api.py", "--state", path,
				    "--port", NULL, NULL},
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
	struct vtpm_fx f;
	struct vtpm_policy pol = {0};
	char api[64], api2[64], api3[64], b64[1024], err[400] = "";
	uint8_t got[64];
	size_t n;
	pid_t ap, ap2, ap3;
	int r;

	CHECK(vtpm_fx_begin(&f, "aws-nitro-tpm", 0x33, 0x44) == 0 && vtpm_fx_aws(&f) == 0);
	ap = ec2(f.dir, "ok.json",
		 "[{\"ImageId\": \"ami-0123456789abcdeff\", \"TpmSupport\": \"v2.0\"}]", api,
		 sizeof api);
	ap2 = ec2(f.dir, "notpm.json", "[{\"ImageId\": \"ami-0123456789abcdeff\"}]", api2,
		  sizeof api2);
	ap3 = ec2(f.dir, "none.json", "[]", api3, sizeof api3);
	CHECK(ap > 0 && ap2 > 0 && ap3 > 0);

	r = vtpm_fx_issue(&f, doc, sizeof doc, &doc_len, err, sizeof err);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "issue: %s", err);
	doc[doc_len] = '\0';
	base64_encode(BASE64_STD, (const uint8_t *)ii, sizeof ii - 1, b64, sizeof b64);
	CHECK(strstr((char *)doc, b64)); /* Go's re-encoding, byte for byte */

	pol.variant = f.env.variant;
	pol.check = vtpm_check_find("aws-nitro-tpm");
	pol.api = api;
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
	setenv("AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjEXAMPLE", 1);
	r = vtpm_validate(&pol, doc, doc_len, f.nonce, sizeof f.nonce, got, sizeof got, &n, err,
			  sizeof err);
	if (r != 0)
		harness_fail(__FILE__, __LINE__, "valid document refused: %s", err);
	CHECK(n == 32 && !memcmp(got, f.ud, 32));
	pol.api = api2;
	CHECK(vtpm_validate(&pol, doc, doc_len, f.nonce, sizeof f.nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(fake_has(err,
		       "aws-nitro-tpm: aws image ami-0123456789abcdeff does not support TPM v2.0"));
	pol.api = api3;
	CHECK(vtpm_validate(&pol, doc, doc_len, f.nonce, sizeof f.nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(fake_has(
	    err, "aws-nitro-tpm: DescribeImages ami-0123456789abcdeff in eu-central-1 failed"));
	pol.api = api;
	unsetenv("AWS_SECRET_ACCESS_KEY");
	CHECK(vtpm_validate(&pol, doc, doc_len, f.nonce, sizeof f.nonce, got, sizeof got, &n, err,
			    sizeof err) == -EINVAL);
	CHECK(fake_has(err, "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"));
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
	/* one byte of InstanceInfo */
	{
		char *p = strstr((char *)doc, b64);

		CHECK(p);
		p[10] = p[10] == 'A' ? 'B' : 'A';
		CHECK(vtpm_validate(&pol, doc, doc_len, f.nonce, sizeof f.nonce, got, sizeof got,
				    &n, err, sizeof err) == -EINVAL);
		CHECK(fake_has(err, "aws-nitro-tpm: "));
	}
	fake_reap(ap);
	fake_reap(ap2);
	fake_reap(ap3);
	vtpm_fx_stop(&f);
}
