/* AWS: IMDSv2 (docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-
 * service.html): a session token first (PUT /latest/api/token with
 * X-aws-ec2-metadata-token-ttl-seconds), then with X-aws-ec2-metadata-token the instance
 * identity document (/latest/dynamic/instance-identity/document: name, provider ID, IP, and
 * the region) and the instance profile's credentials (/latest/meta-data/iam/security-
 * credentials/ names the role, .../<role> holds them; read again AWS_CREDS_REFRESH_S before
 * their Expiration). The role, UID and init-secret hash are EC2 tags, which Constellation's
 * launch template keeps out of IMDS: DescribeInstances of the node itself; the peers and the
 * load balancer through aws_api.c (SigV4), as Constellation's internal/cloud/aws does. The
 * state disk is the EBS volume attached as /dev/sdb. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "aws_api.h"
#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define TOKEN_MAX    128
#define IMDS_MAX_DOC 8192
#define ROLE_MAX     128 /* an IAM role name: at most 64 characters */

/* One boot's state (one thread): the credentials until they near their Expiration, the
 * region and the node's own id, the CA bundle once loaded. */
static struct {
	struct aws_credentials creds;
	int have_creds;
	char id[32], region[48];
	struct ca_bundle ca;
	int have_ca;
} st;

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
	secret_wipe(resp.body, resp.len);
	http_response_free(&resp);
	return r;
}

/* GET path with a fresh IMDSv2 token; the body in *resp. */
static int imds_get(const struct cloud *cl, const char *path, size_t max,
		    struct http_response *resp)
{
	char tok[TOKEN_MAX], hdr[TOKEN_MAX + 40], url[384];
	int r;

	if ((r = imds_token(cl, tok, sizeof tok)) < 0)
		return r;
	snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s\r\n", tok);
	snprintf(url, sizeof url, "%s%s", cl->metadata, path);
	r = cloud_http(cl, "GET", url, hdr, NULL, 0, max, resp);
	secret_wipe(tok, sizeof tok);
	secret_wipe(hdr, sizeof hdr);
	return r;
}

static int aws_self(const struct cloud *cl, struct md_instance *self)
{
	struct http_response resp;
	char err[160];
	int r;

	if ((r = imds_get(cl, "/latest/dynamic/instance-identity/document", IMDS_MAX_DOC, &resp)) <
	    0)
		return r;
	if ((r = aws_parse_identity(resp.body, resp.len, self, err, sizeof err)) < 0)
		log_error("%s", err);
	http_response_free(&resp);
	if (r < 0)
		return r;
	/* provider ID aws:///AZ/ID; the region is the zone without its letter */
	const char *az = self->provider_id + 7, *slash = strchr(az, '/');
	size_t azlen = slash ? (size_t)(slash - az) : 0;

	if (azlen < 2 || azlen - 1 >= sizeof st.region || strlen(self->name) >= sizeof st.id)
		return log_err(-EINVAL, "aws: no region in the availability zone of %s",
			       self->provider_id);
	snprintf(st.region, sizeof st.region, "%.*s", (int)(azlen - 1), az);
	snprintf(st.id, sizeof st.id, "%.31s", self->name);
	return 0;
}

/* The instance profile's credentials, read again when they near their Expiration. */
static int credentials(const struct cloud *cl)
{
	static const char base[] = "/latest/meta-data/iam/security-credentials/";
	struct http_response resp;
	struct aws_credentials c;
	char role[ROLE_MAX], path[sizeof base + ROLE_MAX], err[160];
	size_t n;
	int r;

	if (st.have_creds && aws_credentials_fresh(&st.creds, time(NULL)))
		return 0;
	if ((r = imds_get(cl, base, 1024, &resp)) < 0)
		return log_err(r, "aws: no instance profile (IMDS %s)", base);
	n = strcspn(resp.body, "\r\n");
	r = n == 0 || n >= sizeof role ? -EINVAL : 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!((resp.body[i] >= 'A' && resp.body[i] <= 'Z') ||
		      (resp.body[i] >= 'a' && resp.body[i] <= 'z') ||
		      (resp.body[i] >= '0' && resp.body[i] <= '9') ||
		      strchr("+=,.@_-", resp.body[i])))
			r = -EINVAL;
	if (r == 0)
		snprintf(role, sizeof role, "%.*s", (int)n, resp.body);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "aws: IMDS %s does not name an IAM role", base);
	snprintf(path, sizeof path, "%s%s", base, role);
	if ((r = imds_get(cl, path, AWS_CREDS_MAX, &resp)) < 0)
		return r;
	r = aws_parse_credentials(resp.body, resp.len, time(NULL), &c, err, sizeof err);
	secret_wipe(resp.body, resp.len);
	http_response_free(&resp);
	if (r < 0)
		return log_err(r, "aws: the credentials of role %s: %s", role, err);
	if (st.have_creds)
		aws_credentials_free(&st.creds);
	st.creds = c;
	st.have_creds = 1;
	log_info("aws: credentials of role %s until %lld", role, (long long)c.expiration);
	return 0;
}

/* The API client with fresh credentials; creds must live as long as api. */
static int api_open(const struct cloud *cl, struct aws_api *api, struct sigv4_creds *creds)
{
	struct md_instance self;
	char err[256];
	int r;

	if (!st.region[0] && (r = aws_self(cl, &self)) < 0)
		return r;
	if ((r = credentials(cl)) < 0)
		return r;
	if ((!cl->api || !strncmp(cl->api, "https://", 8)) && !st.have_ca) {
		const char *path = cl->ca_bundle ? cl->ca_bundle : CA_BUNDLE_DEFAULT;

		if ((r = ca_bundle_load(path, &st.ca, err, sizeof err)) < 0)
			return log_err(r, "aws: %s", err);
		st.have_ca = 1;
	}
	aws_credentials_sigv4(&st.creds, creds);
	*api = (struct aws_api){
	    .region = st.region,
	    .endpoint = cl->api,
	    .ca = st.have_ca ? &st.ca : NULL,
	    .creds = creds,
	    .timeout_ms = cl->timeout_ms,
	    .max_attempts = 5,
	    .backoff_ms = 200,
	};
	return 0;
}

static int own_instance(const struct cloud *cl, struct aws_instance *in)
{
	struct aws_api api;
	struct sigv4_creds creds;
	int r;

	if ((r = api_open(cl, &api, &creds)) < 0)
		return r;
	return aws_describe_instance(&api, st.id, in);
}

/* Self with the role from the instance's tag (Constellation's Self). */
static int aws_self_role(const struct cloud *cl, struct md_instance *self)
{
	struct aws_instance in;
	int r;

	if ((r = aws_self(cl, self)) < 0)
		return r;
	/* the role is a tag: the EC2 API's; without it the command line's stands in (as on GCP),
	 * and the line above says why the API did not answer */
	self->no_role = 1;
	if (own_instance(cl, &in) < 0)
		return 0;
	if (!in.has_role)
		return log_err(-ENOENT, "aws: instance %s has no tag " AWS_TAG_ROLE, st.id);
	self->control_plane = aws_role_is_control_plane(in.role);
	self->no_role = 0;
	log_info("aws: %s: role %s, UID %s from EC2 (DescribeInstances)", st.id, in.role,
		 in.has_uid ? in.uid : "none");
	return 0;
}

static int tag(const struct cloud *cl, int which, char *out, size_t cap)
{
	struct aws_instance in;
	const char *name = which ? AWS_TAG_INIT_SECRET_HASH : AWS_TAG_UID;
	const char *v;
	int r;

	if ((r = own_instance(cl, &in)) < 0)
		return r;
	if (!(which ? in.has_init_secret_hash : in.has_uid))
		return log_err(-ENOENT, "aws: instance %s has no tag %s", st.id, name);
	v = which ? in.init_secret_hash : in.uid;
	if (strlen(v) >= cap)
		return log_err(-ENAMETOOLONG, "aws: tag %s of %s is too long", name, st.id);
	snprintf(out, cap, "%s", v);
	return 0;
}

static int aws_uid(const struct cloud *cl, char *out, size_t cap)
{
	return tag(cl, 0, out, cap);
}

static int aws_hash(const struct cloud *cl, char *out, size_t cap)
{
	char v[128];
	int r = tag(cl, 1, v, sizeof v);

	if (r < 0)
		return r;
	if (md_parse_bcrypt(v, strlen(v), out, cap) < 0)
		return log_err(-EINVAL,
			       "aws: the tag " AWS_TAG_INIT_SECRET_HASH " is not a bcrypt hash");
	return 0;
}

/* Constellation's List: the running instances tagged with the cluster's UID. */
static int aws_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	static struct aws_instance in[AWS_MAX_INSTANCES];
	struct aws_api api;
	struct sigv4_creds creds;
	char uid[80];
	int r, n = 0;

	if ((r = aws_uid(cl, uid, sizeof uid)) < 0 || (r = api_open(cl, &api, &creds)) < 0)
		return r;
	if ((r = aws_list_instances(&api, uid, in, AWS_MAX_INSTANCES, &n)) < 0)
		return r;
	for (int i = 0; i < n && *count < max; i++) {
		struct md_instance *p = &peers[(*count)++];

		memset(p, 0, sizeof *p);
		snprintf(p->name, sizeof p->name, "%.31s", in[i].id);
		snprintf(p->provider_id, sizeof p->provider_id, "aws:///%.47s/%.31s", in[i].az,
			 in[i].id);
		snprintf(p->vpc_ip, sizeof p->vpc_ip, "%.47s", in[i].private_ip);
		p->control_plane = aws_role_is_control_plane(in[i].role);
	}
	return 0;
}

/* Constellation's GetLoadBalancerEndpoint: the DNS name of the one load balancer tagged with
 * the UID (its port 6443 is not the join service's). */
static int aws_lb(const struct cloud *cl, char *host, size_t cap)
{
	struct aws_api api;
	struct sigv4_creds creds;
	char uid[80];
	int r;

	if ((r = aws_uid(cl, uid, sizeof uid)) < 0 || (r = api_open(cl, &api, &creds)) < 0)
		return r;
	if ((r = aws_lb_dns_name(&api, uid, host, cap)) == 0)
		log_info("aws: load balancer %s from ELBv2 (DescribeLoadBalancers)", host);
	return r;
}

static int aws_disk(const struct cloud *cl, char *out, size_t cap)
{
	return disk_scan_aws(cl, "sdb", out, cap);
}

const struct cloud_ops cloud_aws = {
    .name = "aws",
    .self = aws_self_role,
    .peers = aws_peers,
    .lb_endpoint = aws_lb,
    .uid = aws_uid,
    .init_secret_hash = aws_hash,
    .state_disk = aws_disk,
    .disk_wanted = "AWS's EBS volume sdb (an NVMe namespace whose controller has vendor "
		   "0x1D0F, model Amazon Elastic Block Store and sdb at bytes 3072..3103)",
};
