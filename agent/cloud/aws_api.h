/* The AWS control-plane calls a node makes (docs/sigv4.md), as Constellation's
 * internal/cloud/aws computes from them: EC2 DescribeInstances (the node's own tags: role,
 * UID, init-secret hash; the cluster's running instances by the constellation-uid tag), the
 * Resource Groups Tagging API's GetResources (the load balancer's ARN by that tag) and ELBv2
 * DescribeLoadBalancers (its DNS name). Every call SigV4-signed with the instance profile's
 * credentials (sigv4.h), bounded in body, pages, attempts and time; throttling retried with
 * back-off; a missing permission one line naming the call and the IAM permission.
 * Functions return 0 or a negative errno. */
#ifndef CONSTEL_CLOUD_AWS_API_H
#define CONSTEL_CLOUD_AWS_API_H

#include <stddef.h>

#include "cloud/sigv4.h"

#define AWS_MAX_BODY	  (1 << 20) /* a response body */
#define AWS_MAX_PAGES	  50	    /* pages followed for one listing */
#define AWS_MAX_INSTANCES 512
#define AWS_MAX_XML_DEPTH 32
#define AWS_MAX_TEXT	  2048 /* an element's text we keep (a NextToken is ~1 KiB) */

#define AWS_TAG_ROLE		 "constellation-role"
#define AWS_TAG_UID		 "constellation-uid"
#define AWS_TAG_INIT_SECRET_HASH "constellation-init-secret-hash"

struct aws_instance {
	char id[32];
	char private_ip[48];
	char az[48];
	char state[16]; /* "running", ... */
	char role[32];	/* the constellation-role tag, "" when absent */
	char uid[80];
	char init_secret_hash[80];
	int has_role, has_uid, has_init_secret_hash;
};

/* ---- parsers of the response bodies (fuzzed: tests/fuzz/fuzz_aws_xml.c) ---- */
/* A DescribeInstances response: at most max instances appended to out from *count on (-ENOSPC
 * beyond), its nextToken into next (""when none). -EINVAL with one line in err otherwise. */
int aws_parse_describe_instances(const char *xml, size_t len, struct aws_instance *out, int max,
				 int *count, char *next, size_t next_cap, char *err, size_t errlen);
/* A DescribeLoadBalancers response: the DNSName of each load balancer (at most max, each
 * < 256 bytes, in names[i]), its NextMarker into next. */
int aws_parse_describe_load_balancers(const char *xml, size_t len, char (*names)[256], int max,
				      int *count, char *next, size_t next_cap, char *err,
				      size_t errlen);
/* A GetResources response (JSON): the ResourceARNs (at most max, each < 256 bytes), its
 * PaginationToken into next. */
int aws_parse_get_resources(const char *json, size_t len, char (*arns)[256], int max, int *count,
			    char *next, size_t next_cap, char *err, size_t errlen);
/* The error code and message of an error body in any of the three shapes (EC2's
 * <Response><Errors><Error>, the Query API's <ErrorResponse><Error>, JSON's __type/message).
 * -ENOENT when the body holds none. */
int aws_parse_error(const char *body, size_t len, char *code, size_t code_cap, char *msg,
		    size_t msg_cap);

/* ---- the instance profile's credentials ----
 * IMDSv2's /latest/meta-data/iam/security-credentials/<role> document: {"Code": "Success",
 * "Type": "AWS-HMAC", "AccessKeyId", "SecretAccessKey", "Token", "Expiration":
 * "YYYY-MM-DDTHH:MM:SSZ", "LastUpdated"}. Read by a flat-object reader of our own that writes
 * the secret values straight into wiped secrets (no general JSON parser holds them). */
#define AWS_CREDS_MAX	    8192 /* the document */
#define AWS_CREDS_REFRESH_S 300	 /* credentials are read again this long before they expire */
struct aws_credentials {
	char access_key_id[SIGV4_MAX_KEY_ID + 1];
	struct secret *secret_key;
	struct secret *token;
	time_t expiration;
};
/* -EINVAL with one line in err (never a value of the document) for anything but a
 * "Success" document with all four fields; -EKEYEXPIRED when it expired before now. */
int aws_parse_credentials(const char *json, size_t len, time_t now, struct aws_credentials *out,
			  char *err, size_t errlen);
void aws_credentials_free(struct aws_credentials *c);
/* 1 when they are valid for more than AWS_CREDS_REFRESH_S after now, else 0 (read again). */
int aws_credentials_fresh(const struct aws_credentials *c, time_t now);
/* The signer's view of them (pointers into c). */
void aws_credentials_sigv4(const struct aws_credentials *c, struct sigv4_creds *out);

/* ---- the client ---- */
struct http_response;
/* Sends one POST (headers as "Name: value\r\n" lines, Host included) and reads the whole
 * response (body at most max bytes). 0 with *resp, or -errno with one line in err. */
typedef int (*aws_send_fn)(void *ctx, const char *url, const char *headers, const void *body,
			   size_t body_len, size_t max, int timeout_ms, struct http_response *resp,
			   char *err, size_t errlen);

struct aws_api {
	const char *region;
	/* NULL: https://<service>.<region>.amazonaws.com/ for each service; else one base URL
	 * ("http://127.0.0.1:PORT") for all three (tests). */
	const char *endpoint;
	const struct ca_bundle *ca; /* for https:// */
	const struct sigv4_creds *creds;
	int timeout_ms;	  /* for one call, its retries included */
	int max_attempts; /* attempts when throttled (at least 1) */
	int backoff_ms;	  /* the first wait after throttling; doubled each time */
	aws_send_fn send; /* NULL: the built-in HTTP/1.1 client (tcp, tls_client) */
	void *send_ctx;
};

/* The built-in transport: http:// or https:// (chain checked against api->ca). */
int aws_send_http(void *ctx, const char *url, const char *headers, const void *body,
		  size_t body_len, size_t max, int timeout_ms, struct http_response *resp,
		  char *err, size_t errlen);

/* The instance with this id (DescribeInstances InstanceId.1): exactly one, else -ENOENT. */
int aws_describe_instance(const struct aws_api *api, const char *id, struct aws_instance *out);
/* DescribeImages ImageId.1 (the aws-nitro-tpm validator's check): exactly one image, else
 * -ENOENT (none) or -EBADMSG; its tpmSupport ("v2.0", or "" when it has none) into tpm. */
int aws_describe_image_tpm_support(const struct aws_api *api, const char *image_id, char *tpm,
				   size_t cap);
int aws_parse_describe_images_tpm(const char *xml, size_t len, int *count, char *tpm, size_t cap);
/* The running instances tagged constellation-uid=uid, every page followed (AWS_MAX_PAGES at
 * most); as Constellation's List: a running one without a private IP or a role tag is an
 * error. */
int aws_list_instances(const struct aws_api *api, const char *uid, struct aws_instance *out,
		       int max, int *count);
/* The DNS name of the one load balancer tagged constellation-uid=uid (GetResources with
 * elasticloadbalancing:loadbalancer, then DescribeLoadBalancers): -ENOENT unless exactly one.
 * The endpoint is this host at port 6443 (Constellation's GetLoadBalancerEndpoint). */
int aws_lb_dns_name(const struct aws_api *api, const char *uid, char *host, size_t cap);

/* Constellation's role.FromString on a constellation-role tag: 1 for "controlplane" or
 * "control-plane" (any case), 0 otherwise (worker or unknown). */
int aws_role_is_control_plane(const char *role);
/* The private IPs of the control planes among in[0..n) (as aws_list_instances returns them),
 * without the instance self_id when it is not NULL (the rejoin list). At most max. */
int aws_control_plane_ips(const struct aws_instance *in, int n, const char *self_id,
			  char (*ips)[48], int max, int *count);

#endif
