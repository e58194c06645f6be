/* The OpenStack readers (agent/cloud/openstack_api.c) on bodies of the documented shapes:
 * user_data's credentials (the password never in an error line), Keystone's token body (the
 * catalog's public endpoints), Nova's servers page (Constellation's choice of role and VPC
 * IP), Neutron's networks and subnets. The calls themselves: test_openstack_api_netns.sh. */
#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "cloud/openstack_api.h"
#include "harness.h"

#define S(lit) lit, sizeof lit - 1

TEST(os_creds_from_user_data)
{
	struct os_creds c;
	char err[256];

	CHECK(os_parse_creds(S("{\"openstack-auth-url\": \"https://k.example:5000/v3\", "
			       "\"openstack-username\": \"u\", \"openstack-user-domain-name\": "
			       "\"Default\", \"openstack-password\": \"p\\\"w\", "
			       "\"openstack-load-balancer-endpoint\": \"192.0.2.1\"}"),
			     &c, err, sizeof err) == 0);
	CHECK(!strcmp(c.auth_url, "https://k.example:5000/v3") && !strcmp(c.username, "u") &&
	      !strcmp(c.user_domain, "Default") && !strcmp((char *)c.password->bytes, "p\"w"));
	os_creds_free(&c);
	CHECK(c.password == NULL);
	CHECK(os_parse_creds(S("{\"openstack-auth-url\": \"ftp://x\", \"openstack-username\": "
			       "\"u\", \"openstack-user-domain-name\": \"D\", "
			       "\"openstack-password\": \"SECRETPW\"}"),
			     &c, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "auth-url") && !strstr(err, "SECRETPW"));
	CHECK(os_parse_creds(S("{\"openstack-auth-url\": \"https://x\", \"openstack-username\": "
			       "\"u\", \"openstack-user-domain-name\": \"D\"}"),
			     &c, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "openstack-password") != NULL);
}

TEST(os_token_body_catalog)
{
	char c[128], n[128], err[256];
	time_t exp;

	CHECK(
	    os_parse_token_body(
		S("{\"token\": {\"expires_at\": \"2026-11-27T03:00:00.000000Z\", \"catalog\": ["
		  "{\"type\": \"identity\", \"endpoints\": [{\"interface\": \"public\", \"url\": "
		  "\"https://k\"}]},"
		  "{\"type\": \"compute\", \"endpoints\": [{\"interface\": \"internal\", \"url\": "
		  "\"http://10.0.0.1\"}, {\"interface\": \"public\", \"url\": "
		  "\"https://nova.example/v2.1\"}]},"
		  "{\"type\": \"network\", \"endpoints\": [{\"interface\": \"public\", \"url\": "
		  "\"https://neutron.example\"}]}]}}"),
		&exp, c, sizeof c, n, sizeof n, err, sizeof err) == 0);
	CHECK(!strcmp(c, "https://nova.example/v2.1") && !strcmp(n, "https://neutron.example"));
	CHECK(exp == 1795748400);
	CHECK(os_parse_token_body(S("{\"token\": {\"expires_at\": \"2026-11-27T03:00:00Z\", "
				    "\"catalog\": []}}"),
				  &exp, c, sizeof c, n, sizeof n, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "compute") != NULL);
	CHECK(os_parse_token_body(S("{\"token\": {\"catalog\": []}}"), &exp, c, sizeof c, n,
				  sizeof n, err, sizeof err) == -EINVAL);
}

TEST(os_servers_as_constellation_lists_them)
{
	static const uint8_t net[4] = {192, 168, 178, 0};
	struct os_server s[4];
	char next[256], err[256];
	int n = 0;

	CHECK(
	    os_parse_servers(
		S("{\"servers\": ["
		  "{\"name\": \"cp-0\", \"id\": \"i0\", \"tags\": [\"constellation-uid-u\", "
		  "\"constellation-role-control-plane\"], \"addresses\": {\"n\": [{\"addr\": "
		  "\"203.0.113.2\", \"version\": 4, \"OS-EXT-IPS:type\": \"floating\"}, "
		  "{\"addr\": \"fd00::2\", \"version\": 6, \"OS-EXT-IPS:type\": \"fixed\"}, "
		  "{\"addr\": \"192.168.178.2\", \"version\": 4, \"OS-EXT-IPS:type\": "
		  "\"fixed\"}]}},"
		  "{\"name\": \"w-0\", \"id\": \"i1\", \"tags\": [\"constellation-role-worker\"], "
		  "\"addresses\": {\"n\": [{\"addr\": \"192.168.178.5\", \"version\": 4, "
		  "\"OS-EXT-IPS:type\": \"fixed\"}]}},"
		  "{\"name\": \"norole\", \"id\": \"i2\", \"tags\": [], \"addresses\": {\"n\": "
		  "[{\"addr\": \"192.168.178.6\", \"version\": 4, \"OS-EXT-IPS:type\": "
		  "\"fixed\"}]}},"
		  "{\"name\": \"out\", \"id\": \"i3\", \"tags\": [\"constellation-role-worker\"], "
		  "\"addresses\": {\"n\": [{\"addr\": \"192.168.179.6\", \"version\": 4, "
		  "\"OS-EXT-IPS:type\": \"fixed\"}]}},"
		  "{\"name\": \"\", \"id\": \"i4\", \"tags\": [\"constellation-role-worker\"]}],"
		  "\"servers_links\": [{\"rel\": \"next\", \"href\": "
		  "\"https://nova/s?marker=i3\"}]}"),
		net, 24, s, 4, &n, next, sizeof next, err, sizeof err) == 0);
	CHECK(n == 2 && !strcmp(s[0].vpc_ip, "192.168.178.2") && s[0].role == 1);
	CHECK(n == 2 && !strcmp(s[1].name, "w-0") && s[1].role == 0);
	CHECK(!strcmp(next, "https://nova/s?marker=i3"));
	CHECK(os_parse_servers(S("{\"servers\": {}}"), net, 24, s, 4, &n, next, sizeof next, err,
			       sizeof err) == -EINVAL);
}

TEST(os_networks_and_subnets)
{
	char name[64], err[256];
	uint8_t ip[4];
	int prefix;

	CHECK(os_parse_networks(S("{\"networks\": [{\"name\": \"net\"}]}"), name, sizeof name, err,
				sizeof err) == 0 &&
	      !strcmp(name, "net"));
	CHECK(os_parse_networks(S("{\"networks\": []}"), name, sizeof name, err, sizeof err) ==
	      -ENOENT);
	CHECK(os_parse_networks(S("{\"networks\": [{\"name\": \"a\"}, {\"name\": \"b\"}]}"), name,
				sizeof name, err, sizeof err) == -ENOENT);
	CHECK(os_parse_subnets(S("{\"subnets\": [{\"name\": \"x\", \"cidr\": \"10.0.0.0/8\"}, "
				 "{\"name\": \"net\", \"cidr\": \"192.168.178.0/24\"}]}"),
			       "net", ip, &prefix, err, sizeof err) == 0);
	CHECK(ip[0] == 192 && ip[2] == 178 && prefix == 24);
	CHECK(os_parse_subnets(S("{\"subnets\": [{\"name\": \"net\", \"cidr\": \"fd00::/64\"}]}"),
			       "net", ip, &prefix, err, sizeof err) == -EINVAL);
	CHECK(os_parse_subnets(S("{\"subnets\": [{\"name\": \"net\", \"cidr\": \"1.2.3.4/33\"}]}"),
			       "net", ip, &prefix, err, sizeof err) == -EINVAL);
	CHECK(os_parse_subnets(S("{\"subnets\": []}"), "net", ip, &prefix, err, sizeof err) ==
	      -ENOENT);
}
