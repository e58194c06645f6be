/* The platform layer's choices and parsers: the cloud of constel.csp, the disk names in the
 * clouds' pages (GCP's Identify Namespace JSON and VPD 0x83, AWS's Identify Controller), the
 * node-local documents, and Azure's goal state and health report. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cloud/cloud.h"
#include "flow/node.h"
#include "harness.h"
#include "net/net.h"

TEST(cloud_select_maps_stackit_and_refuses_an_unknown_csp)
{
	struct cloud cl;
	char err[160] = "";

	CHECK(cloud_select("stackit", NULL, &cl, err, sizeof err) == 0);
	CHECK(cl.ops == &cloud_openstack && !strcmp(cl.metadata, CLOUD_IMDS_URL));
	CHECK(cloud_select("QEMU", NULL, &cl, err, sizeof err) == 0);
	CHECK(cl.ops == &cloud_qemu && !strcmp(cl.metadata, CLOUD_QEMU_URL));
	CHECK(cloud_select("gcp", "http://127.0.0.1:1", &cl, err, sizeof err) == 0);
	CHECK(!strcmp(cl.metadata, "http://127.0.0.1:1"));
	CHECK(cloud_select("vsphere", NULL, &cl, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "vsphere") && !strchr(err, '\n'));
	CHECK(!cloud_canonical("") && !cloud_canonical(NULL));
	CHECK(!strcmp(cloud_canonical("Azure"), "azure"));
}

TEST(cloud_what_needs_the_api_is_eopnotsupp)
{
	/* a cloud whose ops lack the calls (AWS, Azure and GCP have them now: test_aws_boot.sh,
	 * test_azure_api.sh, test_gcp_api) */
	static const struct cloud_ops bare = {.name = "bare"};
	struct cloud cl;
	struct md_instance p[2];
	char err[160], host[64];
	int n = 5;

	CHECK(cloud_select("aws", NULL, &cl, err, sizeof err) == 0);
	CHECK(cl.ops == &cloud_aws && cloud_aws.peers && cloud_aws.lb_endpoint && cloud_aws.uid);
	CHECK(cloud_select("azure", NULL, &cl, err, sizeof err) == 0);
	CHECK(cloud_azure.peers && cloud_azure.lb_endpoint);
	cl.ops = &bare;
	CHECK(cloud_peers(&cl, p, 2, &n) == -EOPNOTSUPP && n == 0);
	CHECK(cloud_lb_endpoint(&cl, host, sizeof host) == -EOPNOTSUPP);
	CHECK(cloud_uid(&cl, host, sizeof host) == -EOPNOTSUPP);
	CHECK(cloud_init_secret_hash(&cl, host, sizeof host) == -EOPNOTSUPP);
	/* GCP's UID, peers and load balancer come from its Compute API now (test_gcp_api) */
	CHECK(cloud_select("gcp", NULL, &cl, err, sizeof err) == 0);
	CHECK(cl.ops->uid && cl.ops->peers && cl.ops->lb_endpoint);
}

static void ns_page(uint8_t *p, const char *vs)
{
	memset(p, 0, NVME_ID_SIZE);
	memcpy(p + 384, vs, strlen(vs));
}

TEST(gcp_nvme_name_from_the_namespace_vendor_area)
{
	uint8_t p[NVME_ID_SIZE];
	char name[64];

	ns_page(p, "{\"device_name\":\"state-disk\",\"disk_type\":\"PERSISTENT\"}");
	CHECK(gcp_nvme_device_name(p, name, sizeof name) == 0 && !strcmp(name, "state-disk"));
	ns_page(p, "{\"disk_type\":\"PERSISTENT\"}"); /* old PDs had no name */
	CHECK(gcp_nvme_device_name(p, name, sizeof name) == -ENOENT);
	ns_page(p, "{\"device_name\":\"../etc\"}");
	CHECK(gcp_nvme_device_name(p, name, sizeof name) == -EINVAL);
	/* unterminated up to the page's end: bounded */
	memset(p, 'x', NVME_ID_SIZE);
	memcpy(p + 384, "{\"device_name\":\"", 16);
	CHECK(gcp_nvme_device_name(p, name, sizeof name) == -EINVAL);
}

TEST(gcp_vpd83_name_is_the_vendor_specific_ascii_designator)
{
	static const uint8_t naa[] = {1, 3, 0, 8, 0x60, 0, 0xc2, 0x9f, 1, 2, 3, 4};
	uint8_t p[128] = {0, 0x83, 0, 0};
	char name[64];
	size_t n = 4;

	memcpy(p + n, naa, sizeof naa), n += sizeof naa;
	memcpy(p + n, "\x02\x00\x00\x0astate-disk", 14), n += 14;
	p[3] = (uint8_t)(n - 4);
	CHECK(gcp_vpd83_device_name(p, n, name, sizeof name) == 0 && !strcmp(name, "state-disk"));
	CHECK(gcp_vpd83_device_name(p, n - 1, name, sizeof name) == -EINVAL); /* cut short */
	p[n - 14 + 3] = 0x7f; /* a designator longer than the page */
	CHECK(gcp_vpd83_device_name(p, n, name, sizeof name) == -EINVAL);
	/* only a T10 vendor ID "Google  PersistentDisk  NAME" */
	n = 4;
	memcpy(p + n, "\x02\x01\x00\x1aGoogle  PersistentDisk  sd", 30), n += 30;
	p[3] = (uint8_t)(n - 4);
	CHECK(gcp_vpd83_device_name(p, n, name, sizeof name) == 0 && !strcmp(name, "sd"));
}

static void ctrl_page(uint8_t *p, unsigned vid, const char *mn, const void *bdev, size_t blen)
{
	memset(p, 0, NVME_ID_SIZE);
	p[0] = vid & 0xff, p[1] = vid >> 8;
	memset(p + 24, ' ', 40);
	memcpy(p + 24, mn, strlen(mn));
	memcpy(p + 3072, bdev, blen);
}

TEST(aws_ebs_name_trims_spaces_nuls_and_dev)
{
	uint8_t p[NVME_ID_SIZE];
	char name[64];

	ctrl_page(p, 0x1D0F, "Amazon Elastic Block Store", "sdb                             ", 32);
	CHECK(aws_ebs_device_name(p, name, sizeof name) == 0 && !strcmp(name, "sdb"));
	ctrl_page(p, 0x1D0F, "Amazon Elastic Block Store", "/dev/sdb\0\0\0", 11);
	CHECK(aws_ebs_device_name(p, name, sizeof name) == 0 && !strcmp(name, "sdb"));
	ctrl_page(p, 0x1D0E, "Amazon Elastic Block Store", "sdb", 3);
	CHECK(aws_ebs_device_name(p, name, sizeof name) == -ENOENT);
	ctrl_page(p, 0x1D0F, "Amazon EC2 NVMe Instance Storage", "sdb", 3);
	CHECK(aws_ebs_device_name(p, name, sizeof name) == -ENOENT);
	/* no NUL in the 32 bytes: 32 characters at most */
	ctrl_page(p, 0x1D0F, "Amazon Elastic Block Store", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  32);
	CHECK(aws_ebs_device_name(p, name, sizeof name) == 0 && strlen(name) == 32);
}

TEST(identity_documents_of_azure_aws_openstack)
{
	static const char az[] =
	    "{\"compute\":{\"name\":\"n\",\"osProfile\":{\"computerName\":\"vm-0\"},"
	    "\"resourceId\":\"/subscriptions/s/resourceGroups/rg/providers/x\",\"tagsList\":["
	    "{\"name\":\"constellation-role\",\"value\":\"ControlPlane\"},"
	    "{\"name\":\"constellation-uid\",\"value\":\"u1\"}]},"
	    "\"network\":{\"interface\":[{\"ipv4\":{\"ipAddress\":[{\"privateIpAddress\":"
	    "\"10.0.0.5\"}]}}]}}";
	static const char aws[] = "{\"instanceId\":\"i-0abc\",\"availabilityZone\":\"us-east-2a\","
				  "\"privateIp\":\"172.31.0.9\",\"kernelId\":null}";
	static const char os[] =
	    "{\"name\":\"w\",\"uuid\":\"b0fa\",\"meta\":{\"constellation-role\":"
	    "\"worker\",\"constellation-uid\":\"u2\"}}";
	struct md_instance s;
	char uid[32], hash[80], err[160];

	CHECK(azure_parse_imds(az, strlen(az), &s, uid, sizeof uid, NULL, 0, err, sizeof err) == 0);
	CHECK(!strcmp(s.name, "vm-0") && s.control_plane && !strcmp(s.vpc_ip, "10.0.0.5") &&
	      !strcmp(uid, "u1") &&
	      !strcmp(s.provider_id, "azure:///subscriptions/s/resourceGroups/rg/providers/x"));
	CHECK(azure_parse_imds(az, strlen(az), &s, NULL, 0, hash, sizeof hash, err, sizeof err) ==
	      -EINVAL);
	CHECK(strstr(err, "constellation-init-secret-hash"));
	CHECK(aws_parse_identity(aws, strlen(aws), &s, err, sizeof err) == 0);
	CHECK(!strcmp(s.provider_id, "aws:///us-east-2a/i-0abc") && s.no_role &&
	      !strcmp(s.vpc_ip, "172.31.0.9"));
	CHECK(aws_parse_identity(aws, strlen(aws) - 1, &s, err, sizeof err) == -EINVAL);
	CHECK(openstack_parse_meta(os, strlen(os), &s, uid, sizeof uid, NULL, 0, err, sizeof err) ==
	      0);
	CHECK(!s.control_plane && !strcmp(s.provider_id, "b0fa") && !strcmp(uid, "u2"));
}

TEST(azure_goal_state_and_health_report)
{
	static const char gs_xml[] =
	    "<?xml version=\"1.0\"?><GoalState xmlns:xsi=\"x\"><Version>2012-11-30</Version>"
	    "<Incarnation>42</Incarnation><Machine><ExpectedState>Started</ExpectedState></Machine>"
	    "<Container><ContainerId>a511aa6d-29e7</ContainerId><RoleInstanceList><RoleInstance>"
	    "<InstanceId>f6cd.lars-test-1</InstanceId><State>Started</State></RoleInstance>"
	    "</RoleInstanceList></Container></GoalState>";
	struct azure_goal_state gs, cut;
	char err[160], xml[8192], why[700];

	CHECK(azure_parse_goal_state(gs_xml, strlen(gs_xml), &gs, err, sizeof err) == 0);
	CHECK(!strcmp(gs.incarnation, "42") && !strcmp(gs.container_id, "a511aa6d-29e7") &&
	      !strcmp(gs.instance_id, "f6cd.lars-test-1"));
	CHECK(azure_parse_goal_state(gs_xml, 60, &cut, err, sizeof err) == -EINVAL);
	CHECK(azure_health_xml(&gs, NULL, xml, sizeof xml) > 0);
	CHECK(strstr(xml, "<GoalStateIncarnation>42</GoalStateIncarnation>") &&
	      strstr(xml, "<State>Ready</State></Health>"));
	CHECK(azure_health_xml(&gs, "a <b> & \"c\"", xml, sizeof xml) > 0);
	CHECK(strstr(xml,
		     "<State>NotReady</State><Details><SubStatus>ProvisioningFailed"
		     "</SubStatus><Description>a &lt;b&gt; &amp; &quot;c&quot;</Description>"));
	memset(why, '&', sizeof why - 1);
	why[sizeof why - 1] = 0;
	CHECK(azure_health_xml(&gs, why, xml, sizeof xml) > 0); /* 512 characters of it */
	CHECK(strstr(xml, "&amp;</Description>") && !strstr(xml, "&amp&"));
	CHECK(azure_health_xml(&gs, NULL, xml, 100) == -ENOSPC);
}

TEST(http_request_refuses_header_lines_that_could_split_the_request)
{
	struct http_response resp;
	char err[160] = "";
	static const char *bad[] = {
	    "X-aws-ec2-metadata-token: a\r\nInjected: 1",   /* no CRLF at the end */
	    "X-aws-ec2-metadata-token: a\nInjected: 1\r\n", /* a bare LF */
	    "X-aws-ec2-metadata-token: a\rb\r\n",	    /* a bare CR */
	    "no colon\r\n",
	    ": empty name\r\n",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct http_req rq = {"GET", bad[i], NULL, 0};

		CHECK(http_request("http://127.0.0.1:9/", &rq, 1000, 100, &resp, err, sizeof err) ==
		      -EINVAL);
	}
	{
		struct http_req rq = {"GE T", NULL, NULL, 0};

		CHECK(http_request("http://127.0.0.1:9/", &rq, 1000, 100, &resp, err, sizeof err) ==
		      -EINVAL);
	}
}

TEST(command_line_csp_stackit_is_openstack_and_an_unknown_one_is_refused)
{
	struct node_config c;
	char arena[512], err[160];

	node_config_defaults(&c);
	CHECK(!c.metadata); /* the cloud's own endpoint */
	CHECK(node_config_cmdline(&c, "constel.csp=stackit", arena, sizeof arena, err,
				  sizeof err) == 0);
	CHECK(!strcmp(c.csp, "openstack"));
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.csp=vmware", arena, sizeof arena, err, sizeof err) ==
	      -EINVAL);
	CHECK(strstr(err, "constel.csp=vmware is not one of") && !strchr(err, '\n'));

	/* the control-plane API's base URL and anchors (tests boot clouds against fakes) */
	node_config_defaults(&c);
	CHECK(!c.cloud_api && !c.cloud_ca);
	CHECK(node_config_cmdline(&c,
				  "constel.csp=azure constel.cloud-api=https://10.42.0.1:8443 "
				  "constel.cloud-ca=/etc/test-ca.pem",
				  arena, sizeof arena, err, sizeof err) == 0);
	CHECK(!strcmp(c.cloud_api, "https://10.42.0.1:8443") &&
	      !strcmp(c.cloud_ca, "/etc/test-ca.pem"));
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.csp=aws constel.cloud-api=ftp://x", arena,
				  sizeof arena, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "constel.cloud-api=ftp://x is not") && !strchr(err, '\n'));
}
