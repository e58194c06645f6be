/* The AWS calls (agent/cloud/aws_api.c): the bounded XML/JSON readers on bodies of AWS's
 * documented shapes, and the client against tests/cloud/fake_aws_api.py on 127.0.0.1, which
 * checks every signature with botocore: the cluster's instances over several pages, the own
 * instance's tags, the load balancer through the Tagging API and ELBv2, throttling retried,
 * a missing permission as one line naming it, a wrong secret, a missing session token and
 * expired credentials refused. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "cloud/aws_api.h"
#include "fake_proc.h"
#include "harness.h"
#include "net/net.h"

static const char DI_XML[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
    "<requestId>8f7724cf-496f-496e-8fe3-example</requestId><reservationSet><item>"
    "<reservationId>r-1234567890abcdef0</reservationId><ownerId>123456789012</ownerId>"
    "<groupSet/><instancesSet><item><instanceId>i-1234567890abcdef0</instanceId>"
    "<instanceState><code>16</code><name>running</name></instanceState>"
    "<placement><availabilityZone>eu-central-1b</availabilityZone></placement>"
    "<privateIpAddress>10.0.0.12</privateIpAddress>"
    "<networkInterfaceSet><item><privateIpAddress>10.9.9.9</privateIpAddress></item>"
    "</networkInterfaceSet><!-- a comment -->"
    "<tagSet><item><key>Name</key><value>a &amp; b &#x263a;</value></item>"
    "<item><key>constellation-role</key><value>ControlPlane</value></item>"
    "<item><key>constellation-uid</key><value>abc123</value></item>"
    "<item><key>constellation-init-secret-hash</key>"
    "<value>$2a$10$abcdefghijklmnopqrstuv</value></item></tagSet></item>"
    "<item><instanceId>i-0b</instanceId><instanceState><code>80</code><name>stopped</name>"
    "</instanceState><tagSet/></item></instancesSet></item></reservationSet>"
    "<nextToken>eyJ2IjoiMiJ9</nextToken></DescribeInstancesResponse>";

TEST(aws_parse_describe_instances_reads_the_documented_shape)
{
	struct aws_instance in[4];
	char next[64], err[128];
	int n = 0;

	CHECK(aws_parse_describe_instances(DI_XML, sizeof DI_XML - 1, in, 4, &n, next, sizeof next,
					   err, sizeof err) == 0);
	CHECK(n == 2);
	CHECK(!strcmp(in[0].id, "i-1234567890abcdef0"));
	CHECK(!strcmp(in[0].private_ip, "10.0.0.12")); /* not the interface's nested one */
	CHECK(!strcmp(in[0].az, "eu-central-1b"));
	CHECK(!strcmp(in[0].state, "running"));
	CHECK(in[0].has_role && !strcmp(in[0].role, "ControlPlane"));
	CHECK(in[0].has_uid && !strcmp(in[0].uid, "abc123"));
	CHECK(in[0].has_init_secret_hash &&
	      !strcmp(in[0].init_secret_hash, "$2a$10$abcdefghijklmnopqrstuv"));
	CHECK(!strcmp(in[1].id, "i-0b") && !strcmp(in[1].state, "stopped") && !in[1].has_role);
	CHECK(!strcmp(next, "eyJ2IjoiMiJ9"));
	n = 0;
	CHECK(aws_parse_describe_instances(DI_XML, sizeof DI_XML - 1, in, 1, &n, next, sizeof next,
					   err, sizeof err) == -ENOSPC);
	CHECK(n == 0);
}

TEST(aws_parse_refuses_malformed_xml)
{
	static const char *const bad[] = {
	    "<DescribeInstancesResponse><a></b></DescribeInstancesResponse>",
	    "<DescribeInstancesResponse>",
	    "<!DOCTYPE x [<!ENTITY e \"x\">]><DescribeInstancesResponse/>",
	    "<DescribeInstancesResponse>&e;</DescribeInstancesResponse>",
	    "<DescribeInstancesResponse/><DescribeInstancesResponse/>",
	    "<DescribeInstancesResponse a=\"<\"/>",
	    "<Other/>",
	    "<DescribeInstancesResponse>&#0;</DescribeInstancesResponse>",
	    "",
	};
	struct aws_instance in[2];
	char next[16], err[128];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int n = 0;

		if (aws_parse_describe_instances(bad[i], strlen(bad[i]), in, 2, &n, next,
						 sizeof next, err, sizeof err) != -EINVAL) {
			harness_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
			return;
		}
	}
	/* nesting beyond the bound */
	char deep[2048] = "<DescribeInstancesResponse>";
	for (int i = 0; i < 40; i++)
		strcat(deep, "<a>");
	int n = 0;
	CHECK(aws_parse_describe_instances(deep, strlen(deep), in, 2, &n, next, sizeof next, err,
					   sizeof err) == -EINVAL);
}

TEST(aws_parse_errors_of_each_protocol)
{
	static const char ec2[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors>"
				  "<Error><Code>UnauthorizedOperation</Code><Message>You are not "
				  "authorized to perform this operation.</Message></Error></Errors>"
				  "<RequestID>x</RequestID></Response>";
	static const char elb[] = "<ErrorResponse xmlns=\"http://elasticloadbalancing.amazonaws."
				  "com/doc/2015-12-01/\"><Error><Type>Sender</Type><Code>Throttling"
				  "</Code><Message>Rate exceeded</Message></Error><RequestId>y"
				  "</RequestId></ErrorResponse>";
	static const char js[] = "{\"__type\":\"com.amazon.coral.service#ExpiredTokenException\","
				 "\"message\":\"expired\"}";
	char code[64], msg[128];

	CHECK(aws_parse_error(ec2, sizeof ec2 - 1, code, sizeof code, msg, sizeof msg) == 0);
	CHECK(!strcmp(code, "UnauthorizedOperation"));
	CHECK(aws_parse_error(elb, sizeof elb - 1, code, sizeof code, msg, sizeof msg) == 0);
	CHECK(!strcmp(code, "Throttling") && !strcmp(msg, "Rate exceeded"));
	CHECK(aws_parse_error(js, sizeof js - 1, code, sizeof code, msg, sizeof msg) == 0);
	CHECK(!strcmp(code, "ExpiredTokenException") && !strcmp(msg, "expired"));
	CHECK(aws_parse_error("nope", 4, code, sizeof code, msg, sizeof msg) == -ENOENT);
}

TEST(aws_role_as_constellation_parses_it)
{
	CHECK(aws_role_is_control_plane("controlplane"));
	CHECK(aws_role_is_control_plane("Control-Plane"));
	CHECK(aws_role_is_control_plane("CONTROLPLANE"));
	CHECK(!aws_role_is_control_plane("worker"));
	CHECK(!aws_role_is_control_plane("control_plane"));
	CHECK(!aws_role_is_control_plane(""));
}

TEST(aws_parse_load_balancers_and_resources)
{
	static const char lb[] =
	    "<DescribeLoadBalancersResponse xmlns=\"http://elasticloadbalancing.amazonaws.com/doc/"
	    "2015-12-01/\"><DescribeLoadBalancersResult><LoadBalancers><member><LoadBalancerArn>"
	    "arn:aws:elasticloadbalancing:us-west-2:123456789012:loadbalancer/app/my-lb/50dc6c495c0"
	    "c9188</LoadBalancerArn><DNSName>my-lb-1234.us-west-2.elb.amazonaws.com</DNSName>"
	    "</member></LoadBalancers><NextMarker>m2</NextMarker></DescribeLoadBalancersResult>"
	    "<ResponseMetadata><RequestId>6581c0ac</RequestId></ResponseMetadata>"
	    "</DescribeLoadBalancersResponse>";
	static const char gr[] = "{\"PaginationToken\":\"p2\",\"ResourceTagMappingList\":[{"
				 "\"ResourceARN\":\"arn:aws:elasticloadbalancing:eu-central-1:1:"
				 "loadbalancer/net/x/1\",\"Tags\":[]},{\"Tags\":[]}]}";
	char names[2][256], next[16], err[128];
	int n = 0;

	CHECK(aws_parse_describe_load_balancers(lb, sizeof lb - 1, names, 2, &n, next, sizeof next,
						err, sizeof err) == 0);
	CHECK(n == 1 && !strcmp(names[0], "my-lb-1234.us-west-2.elb.amazonaws.com"));
	CHECK(!strcmp(next, "m2"));
	n = 0;
	CHECK(aws_parse_get_resources(gr, sizeof gr - 1, names, 2, &n, next, sizeof next, err,
				      sizeof err) == 0);
	CHECK(n == 1 && !strcmp(next, "p2"));
	CHECK(!strncmp(names[0], "arn:aws:elasticloadbalancing:", 29));
	n = 0;
	CHECK(aws_parse_get_resources("[1]", 3, names, 2, &n, next, sizeof next, err, sizeof err) ==
	      -EINVAL);
}

/* ---- against the fake ---- */
static int fake_start_tls(struct fake_api *f, const char *state, int tls)
{
	return fake_api_start(f, "tests/cloud/fake_aws_api.py", "aws-api", state, tls);
}

static int fake_start(struct fake_api *f, const char *state)
{
	return fake_start_tls(f, state, 0);
}

static const char STATE[] =
    "{\"region\": \"eu-central-1\","
    " \"credentials\": ["
    "  {\"AccessKeyId\": \"ASIAGOOD\", \"SecretAccessKey\": \"good/secret+key\","
    "   \"Token\": \"IQoJb3JpZ2luX2VjEGood+Token/==\", \"Expiration\": \"2099-01-01T00:00:00Z\"},"
    "  {\"AccessKeyId\": \"ASIAOLD\", \"SecretAccessKey\": \"old\", \"Token\": \"oldtok\","
    "   \"Expiration\": \"2020-01-01T00:00:00Z\"}],"
    " \"instances\": ["
    "  {\"InstanceId\": \"i-cp0\", \"PrivateIpAddress\": \"10.0.1.10\", \"AvailabilityZone\":"
    "   \"eu-central-1a\", \"Tags\": {\"constellation-uid\": \"uid1\", \"constellation-role\":"
    "   \"ControlPlane\", \"constellation-init-secret-hash\": \"$2a$10$hash\"}},"
    "  {\"InstanceId\": \"i-cp1\", \"PrivateIpAddress\": \"10.0.1.11\", \"Tags\":"
    "   {\"constellation-uid\": \"uid1\", \"constellation-role\": \"controlplane\"}},"
    "  {\"InstanceId\": \"i-cp2\", \"PrivateIpAddress\": \"10.0.1.12\", \"Tags\":"
    "   {\"constellation-uid\": \"uid1\", \"constellation-role\": \"controlplane\"}},"
    "  {\"InstanceId\": \"i-w0\", \"PrivateIpAddress\": \"10.0.2.10\", \"Tags\":"
    "   {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"InstanceId\": \"i-w1\", \"PrivateIpAddress\": \"10.0.2.11\", \"Tags\":"
    "   {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"InstanceId\": \"i-w2\", \"PrivateIpAddress\": \"10.0.2.12\", \"State\": \"stopped\","
    "   \"Tags\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"InstanceId\": \"i-w3\", \"PrivateIpAddress\": \"10.0.2.13\", \"Tags\":"
    "   {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"InstanceId\": \"i-other\", \"PrivateIpAddress\": \"10.0.9.9\", \"Tags\":"
    "   {\"constellation-uid\": \"uid2\", \"constellation-role\": \"worker\"}}],"
    " \"load_balancers\": ["
    "  {\"LoadBalancerArn\": \"arn:aws:elasticloadbalancing:eu-central-1:012345678900:"
    "loadbalancer/net/other/2\", \"LoadBalancerName\": \"other\", \"DNSName\":"
    "   \"other.elb.eu-central-1.amazonaws.com\", \"Tags\": {\"constellation-uid\": \"uid2\"}},"
    "  {\"LoadBalancerArn\": \"arn:aws:elasticloadbalancing:eu-central-1:012345678900:"
    "loadbalancer/net/c1/1\", \"LoadBalancerName\": \"c1\", \"DNSName\":"
    "   \"c1-0123.elb.eu-central-1.amazonaws.com\", \"Tags\": {\"constellation-uid\": \"uid1\"}}],"
    " \"page_size\": {\"ec2\": 2, \"tagging\": 1},"
    " \"throttle\": {\"ec2:DescribeInstances\": 2, \"tag:GetResources\": 1},"
    " %s}";

static void api_init(struct aws_api *api, struct sigv4_creds *cr, char *url, size_t cap, int port)
{
	snprintf(url, cap, "http://127.0.0.1:%d/", port);
	memset(api, 0, sizeof *api);
	api->region = "eu-central-1";
	api->endpoint = url;
	api->creds = cr;
	api->timeout_ms = 60000;
	api->max_attempts = 4;
	api->backoff_ms = 10;
}

TEST(aws_api_against_the_fake)
{
	struct fake_api f = {0};
	char state[sizeof STATE + 64], url[64], host[256];
	struct secret *sk = secret_from("good/secret+key", 15);
	struct secret *tok = secret_from("IQoJb3JpZ2luX2VjEGood+Token/==", 30);
	struct sigv4_creds cr = {"ASIAGOOD", sk, tok};
	struct aws_api api;
	struct aws_instance in[16], self;
	int n = 0, cps = 0;

	snprintf(state, sizeof state, STATE, "\"deny\": []");
	if (fake_start(&f, state) != 0) {
		harness_fail(__FILE__, __LINE__,
			     "fake_aws_api.py did not start (python3-botocore?)");
		fake_api_stop(&f);
		return;
	}
	api_init(&api, &cr, url, sizeof url, f.port);

	/* the cluster: 7 of uid1 over 4 pages, 2 throttled first; the stopped one left out */
	if (aws_list_instances(&api, "uid1", in, 16, &n) != 0 || n != 6) {
		harness_fail(__FILE__, __LINE__, "list: %d instances", n);
		goto out;
	}
	for (int i = 0; i < n; i++)
		cps += aws_role_is_control_plane(in[i].role);
	if (cps != 3 || strcmp(in[0].id, "i-cp0") || strcmp(in[0].az, "eu-central-1a")) {
		harness_fail(__FILE__, __LINE__, "list: %d control planes, first %s", cps,
			     in[0].id);
		goto out;
	}
	/* the join list: every control plane; the rejoin list: without the node itself */
	char ips[8][48];
	int nip = 0;

	if (aws_control_plane_ips(in, n, NULL, ips, 8, &nip) != 0 || nip != 3 ||
	    strcmp(ips[0], "10.0.1.10") || strcmp(ips[2], "10.0.1.12") ||
	    aws_control_plane_ips(in, n, "i-cp1", ips, 8, &nip) != 0 || nip != 2 ||
	    strcmp(ips[1], "10.0.1.12")) {
		harness_fail(__FILE__, __LINE__, "control-plane IPs: %d", nip);
		goto out;
	}
	if (fake_api_log_count(&f, "RequestLimitExceeded") != 2 ||
	    fake_api_log_count(&f, "\"action\": \"DescribeInstances\", \"status\": 200") != 4) {
		harness_fail(__FILE__, __LINE__, "expected 2 throttled and 4 pages");
		goto out;
	}
	/* the own instance's tags */
	if (aws_describe_instance(&api, "i-cp0", &self) != 0 || strcmp(self.uid, "uid1") ||
	    strcmp(self.role, "ControlPlane") || strcmp(self.init_secret_hash, "$2a$10$hash")) {
		harness_fail(__FILE__, __LINE__, "describe self");
		goto out;
	}
	/* the load balancer: one page per ARN, one throttled call */
	if (aws_lb_dns_name(&api, "uid1", host, sizeof host) != 0 ||
	    strcmp(host, "c1-0123.elb.eu-central-1.amazonaws.com")) {
		harness_fail(__FILE__, __LINE__, "lb: %s", host);
		goto out;
	}
	if (fake_api_log_count(&f, "\"verified\": false") != 0 ||
	    fake_api_log_count(&f, "ThrottledException") != 1) {
		harness_fail(__FILE__, __LINE__, "a signature the fake did not verify");
		goto out;
	}
	/* a wrong secret: SignatureDoesNotMatch, not retried */
	struct secret *bad = secret_from("wrong", 5);
	struct sigv4_creds crb = {"ASIAGOOD", bad, tok};

	api.creds = &crb;
	int r = aws_describe_instance(&api, "i-cp0", &self);

	secret_free(bad);
	if (r != -EPROTO || fake_api_log_count(&f, "SignatureDoesNotMatch") != 1) {
		harness_fail(__FILE__, __LINE__, "wrong secret: %d", r);
		goto out;
	}
	/* no session token with temporary credentials */
	struct sigv4_creds crn = {"ASIAGOOD", sk, NULL};

	api.creds = &crn;
	r = aws_describe_instance(&api, "i-cp0", &self);
	if (r != -EPROTO || fake_api_log_count(&f, "AuthFailure") != 1) {
		harness_fail(__FILE__, __LINE__, "no token: %d", r);
		goto out;
	}
	/* expired credentials */
	struct secret *osk = secret_from("old", 3), *otok = secret_from("oldtok", 6);
	struct sigv4_creds cro = {"ASIAOLD", osk, otok};

	api.creds = &cro;
	r = aws_describe_instance(&api, "i-cp0", &self);
	secret_free(osk);
	secret_free(otok);
	if (r != -EKEYEXPIRED || fake_api_log_count(&f, "ExpiredToken") != 1) {
		harness_fail(__FILE__, __LINE__, "expired: %d", r);
		goto out;
	}
	/* an lb lookup for a uid without one */
	api.creds = &cr;
	r = aws_lb_dns_name(&api, "uid3", host, sizeof host);
	if (r != -ENOENT) {
		harness_fail(__FILE__, __LINE__, "no lb: %d", r);
		goto out;
	}
	/* unsigned requests: EC2's 401 AuthFailure, the JSON protocol's
	 * MissingAuthenticationTokenException, each in its own shape */
	static const char *const raw[][3] = {
	    {"Content-Type: application/x-www-form-urlencoded\r\n",
	     "Action=DescribeInstances&Version=2016-11-15", "401 AuthFailure"},
	    {"Content-Type: application/x-amz-json-1.1\r\nX-Amz-Target: "
	     "ResourceGroupsTaggingAPI_20170126.GetResources\r\n",
	     "{}", "400 MissingAuthenticationTokenException"},
	};
	for (size_t i = 0; i < 2; i++) {
		struct http_response resp;
		char hdr[256], e2[200], code[64], msg[128], got[128];

		snprintf(hdr, sizeof hdr, "Host: 127.0.0.1:%d\r\n%s", f.port, raw[i][0]);
		r = aws_send_http(&api, url, hdr, raw[i][1], strlen(raw[i][1]), 65536, 20000, &resp,
				  e2, sizeof e2);
		if (r != 0) {
			harness_fail(__FILE__, __LINE__, "raw: %s", e2);
			goto out;
		}
		aws_parse_error(resp.body, resp.len, code, sizeof code, msg, sizeof msg);
		snprintf(got, sizeof got, "%d %s", resp.status, code);
		http_response_free(&resp);
		if (strcmp(got, raw[i][2]) != 0) {
			harness_fail(__FILE__, __LINE__, "unsigned: %s, want %s", got, raw[i][2]);
			goto out;
		}
	}
out:
	fake_api_stop(&f);
	secret_free(sk);
	secret_free(tok);
}

TEST(aws_api_missing_permission_is_one_line_naming_it)
{
	struct fake_api f = {0};
	char state[sizeof STATE + 128], url[64], host[256], logpath[128];
	struct secret *sk = secret_from("good/secret+key", 15);
	struct secret *tok = secret_from("IQoJb3JpZ2luX2VjEGood+Token/==", 30);
	struct sigv4_creds cr = {"ASIAGOOD", sk, tok};
	struct aws_api api;
	struct aws_instance self;
	char buf[4096] = "";
	int fd, r1, r2;

	snprintf(state, sizeof state, STATE,
		 "\"deny\": [\"ec2:DescribeInstances\", "
		 "\"elasticloadbalancing:DescribeLoadBalancers\"]");
	if (fake_start(&f, state) != 0) {
		harness_fail(__FILE__, __LINE__, "fake_aws_api.py did not start");
		fake_api_stop(&f);
		return;
	}
	api_init(&api, &cr, url, sizeof url, f.port);
	snprintf(logpath, sizeof logpath, "%s", harness_path(f.dir, "agent.log"));
	fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	log_set_fd(fd);
	r1 = aws_describe_instance(&api, "i-cp0", &self);
	r2 = aws_lb_dns_name(&api, "uid1", host, sizeof host);
	log_set_fd(2);
	lseek(fd, 0, SEEK_SET);
	if (read(fd, buf, sizeof buf - 1) < 0)
		buf[0] = '\0';
	close(fd);
	fake_api_stop(&f);
	secret_free(sk);
	secret_free(tok);
	CHECK(r1 == -EACCES && r2 == -EACCES);
	CHECK(strstr(buf, "DescribeInstances: the instance profile lacks the IAM permission "
			  "ec2:DescribeInstances") != NULL);
	CHECK(strstr(buf, "DescribeLoadBalancers: the instance profile lacks the IAM permission "
			  "elasticloadbalancing:DescribeLoadBalancers") != NULL);
	CHECK(strstr(buf, "IQoJ") == NULL && strstr(buf, "good/secret") == NULL);
}

TEST(aws_credentials_from_the_imds_document)
{
	static const char doc[] =
	    "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : "
	    "\"2012-04-26T16:39:16Z\",\n  \"Type\" : \"AWS-HMAC\",\n  "
	    "\"AccessKeyId\" : \"ASIAIOSFODNN7EXAMPLE\",\n  "
	    "\"SecretAccessKey\" : \"wJalrXUtnFEMI\\/K7MDENG\\/bPxRfiCYEXAMPLEKEY\",\n"
	    "  \"Token\" : \"token\\u002b==\",\n  \"Expiration\" : "
	    "\"2017-05-17T15:09:54Z\"\n}";
	struct aws_credentials c;
	struct sigv4_creds s;
	char err[200];
	time_t exp = 1495033794; /* 2017-05-17T15:09:54Z */

	CHECK(aws_parse_credentials(doc, sizeof doc - 1, exp - 3600, &c, err, sizeof err) == 0);
	CHECK(!strcmp(c.access_key_id, "ASIAIOSFODNN7EXAMPLE"));
	CHECK(c.secret_key->len == 40 &&
	      !memcmp(c.secret_key->bytes, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 40));
	CHECK(c.token->len == 8 && !memcmp(c.token->bytes, "token+==", 8));
	CHECK(c.expiration == exp);
	CHECK(aws_credentials_fresh(&c, exp - 3600) == 1);
	CHECK(aws_credentials_fresh(&c, exp - 200) == 0); /* inside the refresh window */
	aws_credentials_sigv4(&c, &s);
	CHECK(s.secret_key == c.secret_key && s.session_token == c.token);
	aws_credentials_free(&c);
	CHECK(aws_parse_credentials(doc, sizeof doc - 1, exp + 1, &c, err, sizeof err) ==
	      -EKEYEXPIRED);
	CHECK(strstr(err, "wJal") == NULL);

	static const char *const bad[] = {
	    "{\"Code\":\"Failure\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Token\":"
	    "\"t\",\"Expiration\":\"2099-01-01T00:00:00Z\"}",
	    "{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\","
	    "\"Expiration\":\"2099-01-01T00:00:00Z\"}",
	    "{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Token\":"
	    "\"t\",\"Expiration\":\"2099-01-01 00:00:00\"}",
	    "{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Token\":"
	    "\"t\",\"Expiration\":\"2099-01-01T00:00:00Z\"} x",
	    "{\"Code\":\"Success\",\"AccessKeyId\":\"A/B\",\"SecretAccessKey\":\"s\",\"Token\":"
	    "\"t\",\"Expiration\":\"2099-01-01T00:00:00Z\"}",
	    "{\"Code\":\"Success\",\"SecretAccessKey\":\"s\",\"SecretAccessKey\":\"s\"}",
	    "{\"Code\":\"Success\",\"Token\":\"a\\u00e9\"}",
	    "{\"Code\":\"Success\",\"Token\":\"a\nb\"}",
	    "[]",
	    "{",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (aws_parse_credentials(bad[i], strlen(bad[i]), exp, &c, err, sizeof err) !=
		    -EINVAL) {
			harness_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
			return;
		}
	}
}

/* The real endpoints are https only: the same call over TLS with the chain checked against a
 * bundle (aws_send_http on tls_client), and refused with a bundle of another CA. */
TEST(aws_api_over_https)
{
	struct fake_api f = {0};
	char state[sizeof STATE + 64], url[64];
	struct secret *sk = secret_from("good/secret+key", 15);
	struct secret *tok = secret_from("IQoJb3JpZ2luX2VjEGood+Token/==", 30);
	struct sigv4_creds cr = {"ASIAGOOD", sk, tok};
	struct ca_bundle ca = {0}, other = {0};
	struct aws_api api;
	struct aws_instance self;
	char err[200];
	int r1 = -1, r2 = -1;

	snprintf(state, sizeof state, STATE, "\"deny\": []");
	if (fake_start_tls(&f, state, 1) != 0) {
		harness_fail(__FILE__, __LINE__, "the https fake did not start");
		fake_api_stop(&f);
		goto out;
	}
	if (ca_bundle_load(harness_path(f.dir, "ca.pem"), &ca, err, sizeof err) < 0 ||
	    ca_bundle_load(harness_path(f.dir, "other-ca.pem"), &other, err, sizeof err) < 0) {
		harness_fail(__FILE__, __LINE__, "bundles: %s", err);
		fake_api_stop(&f);
		goto out;
	}
	api_init(&api, &cr, url, sizeof url, f.port);
	snprintf(url, sizeof url, "https://localhost:%d/", f.port);
	api.ca = &ca;
	r1 = aws_describe_instance(&api, "i-cp0", &self);
	api.ca = &other;
	api.max_attempts = 1;
	r2 = aws_describe_instance(&api, "i-cp0", &self);
	fake_api_stop(&f);
out:
	ca_bundle_free(&ca);
	ca_bundle_free(&other);
	secret_free(sk);
	secret_free(tok);
	CHECK(r1 == 0 && !strcmp(self.role, "ControlPlane"));
	CHECK(r2 == -EKEYREJECTED);
}
