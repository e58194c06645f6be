/* AWS: IMDSv2 (docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-
 * service.html): a session token first (PUT /latest/api/token with
 * X-aws-ec2-metadata-token-ttl-seconds), then the instance identity document
 * (/latest/dynamic/instance-identity/document) with X-aws-ec2-metadata-token. It gives the
 * name, provider ID and IP; the role, UID and init-secret hash are EC2 tags, which
 * Constellation's launch template keeps out of IMDS. The state disk is the EBS volume
 * attached as /dev/sdb. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define TOKEN_MAX    128
#define IMDS_MAX_DOC 8192

static int imds_token(const struct cloud *cl, char *tok, size_t cap)
{
	struct http_response resp;
	char url[256];
	int r;

	snprintf(url, sizeof url, "%s/latest/api/token", cl->metadata);
	if ((r = cloud_http(cl, "PUT", url,
			    /* used at once: a short life */
			    "X-aws-ec2-metadata-token-ttl-seconds: 60\r\n", NULL, 0, TOKEN_MAX,
			    &resp)) < 0)
		return r;
	r = 0;
	for (size_t i = 0; i < resp.len; i++)
		if ((unsigned char)resp.body[i] <= ' ' || resp.body[i] == 0x7f)
			r = -EINVAL;
	if (r < 0 || resp.len == 0 || resp.len >= cap)
		r = log_err(-EINVAL, "aws: the IMDSv2 token is not a short printable word");
	else
		memcpy(tok, resp.body, resp.len + 1);
	secret_wipe(resp.buf, resp.len);
	http_response_free(&resp);
	return r;
}

static int aws_self(const struct cloud *cl, struct md_instance *self)
{
	struct http_response resp;
	char tok[TOKEN_MAX], hdr[TOKEN_MAX + 40], url[256], err[160];
	int r;

	if ((r = imds_token(cl, tok, sizeof tok)) < 0)
		return r;
	snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s\r\n", tok);
	snprintf(url, sizeof url, "%s/latest/dynamic/instance-identity/document", cl->metadata);
	r = cloud_http(cl, "GET", url, hdr, NULL, 0, IMDS_MAX_DOC, &resp);
	secret_wipe(tok, sizeof tok);
	secret_wipe(hdr, sizeof hdr);
	if (r < 0)
		return r;
	if ((r = aws_parse_identity(resp.body, resp.len, self, err, sizeof err)) < 0)
		log_error("%s", err);
	http_response_free(&resp);
	return r;
}

static int aws_disk(const struct cloud *cl, char *out, size_t cap)
{
	return disk_scan_aws(cl, "sdb", out, cap);
}

const struct cloud_ops cloud_aws = {
    .name = "aws",
    .self = aws_self,
    .state_disk = aws_disk,
    .disk_wanted = "AWS's EBS volume sdb (an NVMe namespace whose controller has vendor "
		   "0x1D0F, model Amazon Elastic Block Store and sdb at bytes 3072..3103)",
};
