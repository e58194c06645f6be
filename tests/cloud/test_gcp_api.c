/* The GCE calls (agent/cloud/gcp_api.c): the readers on bodies of the Compute API's documented
 * shapes and the metadata server's token, and the client against tests/cloud/fake_gce_api.py
 * on 127.0.0.1: the cluster's instances in every zone of the region over several pages, the
 * own instance's labels and metadata item, the load balancer from the global then the
 * regional forwarding rules, 429 retried, a token revoked early (401) read again, a token
 * about to expire read again before use, a missing permission refused at once, a listing
 * whose pages never end stopped, https checked against the CA given and refused with
 * another. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "cloud/gcp_api.h"
#include "fake_proc.h"
#include "harness.h"
#include "net/net.h"

/* instances.get's answer as the API reference shows it (abridged) */
static const char INSTANCE[] =
    "{\"kind\": \"compute#instance\", \"id\": \"4242\", \"name\": \"cp-0\","
    " \"zone\": \"https://www.googleapis.com/compute/v1/projects/p/zones/europe-west3-a\","
    " \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"ControlPlane\"},"
    " \"networkInterfaces\": [{\"name\": \"nic1\", \"networkIP\": \"10.9.9.9\"},"
    "  {\"kind\": \"compute#networkInterface\", \"name\": \"nic0\", \"networkIP\": "
    "\"10.0.0.2\", \"aliasIpRanges\": [{\"ipCidrRange\": \"10.10.0.0/24\"}]}],"
    " \"metadata\": {\"kind\": \"compute#metadata\", \"fingerprint\": \"x=\", \"items\":"
    "  [{\"key\": \"kube-env\", \"value\": \"a\"},"
    "   {\"key\": \"constellation-init-secret-hash\", \"value\": \"$2a$10$abc\"}]}}";

TEST(gcp_parse_instance_shapes)
{
	struct gcp_instance in;
	char err[256];

	CHECK(gcp_parse_instance(INSTANCE, strlen(INSTANCE), &in, err, sizeof err) == 0);
	CHECK(!strcmp(in.name, "cp-0") && !strcmp(in.vpc_ip, "10.0.0.2"));
	CHECK(!strcmp(in.role, "ControlPlane") && in.has_uid && !strcmp(in.uid, "uid1"));
	CHECK(in.has_init_secret_hash && !strcmp(in.init_secret_hash, "$2a$10$abc"));
	/* no labels, no items: absent, not an error */
	CHECK(gcp_parse_instance("{\"name\": \"w\"}", 13, &in, err, sizeof err) == 0);
	CHECK(!in.has_uid && !in.has_init_secret_hash && !in.role[0] && !in.vpc_ip[0]);
	CHECK(gcp_parse_instance("{\"id\": 1}", 9, &in, err, sizeof err) == -EINVAL);
	CHECK(strstr(err, "name") != NULL);
	CHECK(gcp_parse_instance("{\"name\": \"w\", \"networkInterfaces\": [{\"name\": \"nic0\"}]}",
				 54, &in, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_instance("{\"name\": \"w\", \"labels\": {\"constellation-uid\": 1}}", 49,
				 &in, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_instance("[]", 2, &in, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_instance("{\"name\": \"w\"} x", 15, &in, err, sizeof err) == -EINVAL);
}

TEST(gcp_parse_lists)
{
	static const char L[] = "{\"kind\": \"compute#instanceList\", \"items\": [{\"name\": "
				"\"a\"}, {\"name\": \"b\"}], \"nextPageToken\": \"Cg1h\"}";
	struct gcp_instance in[3];
	char zones[2][64], next[64], err[256], host[64], port[8];
	int n = 0, found;

	CHECK(gcp_parse_instance_list(L, strlen(L), in, 3, &n, next, sizeof next, err,
				      sizeof err) == 0);
	CHECK(n == 2 && !strcmp(in[1].name, "b") && !strcmp(next, "Cg1h"));
	/* appended; beyond max -ENOSPC */
	CHECK(gcp_parse_instance_list(L, strlen(L), in, 3, &n, next, sizeof next, err,
				      sizeof err) == -ENOSPC);
	/* an empty page has no items */
	n = 0;
	CHECK(gcp_parse_instance_list("{\"kind\": \"k\"}", 13, in, 3, &n, next, sizeof next, err,
				      sizeof err) == 0 &&
	      n == 0 && !next[0]);
	CHECK(gcp_parse_instance_list("{\"items\": {}}", 13, in, 3, &n, next, sizeof next, err,
				      sizeof err) == -EINVAL);
	CHECK(gcp_parse_instance_list("{\"nextPageToken\": 5}", 20, in, 3, &n, next, sizeof next,
				      err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_instance_list("{\"nextPageToken\": \"0123456789\"}", 31, in, 3, &n, next, 8,
				      err, sizeof err) == -EINVAL);
	n = 0;
	CHECK(gcp_parse_zone_list("{\"items\": [{\"name\": \"europe-west3-a\"}, {\"id\": 1}, "
				  "{\"name\": \"europe-west3-b\"}]}",
				  78, zones, 2, &n, next, sizeof next, err, sizeof err) == 0);
	CHECK(n == 2 && !strcmp(zones[1], "europe-west3-b"));
	CHECK(
	    gcp_parse_forwarding_rules("{\"items\": [{\"IPAddress\": \"34.1.2.3\", \"portRange\": "
				       "\"6443-6443\"}, {\"IPAddress\": \"9.9.9.9\"}]}",
				       90, host, sizeof host, port, sizeof port, &found, next,
				       sizeof next, err, sizeof err) == 0);
	CHECK(found && !strcmp(host, "34.1.2.3") && !strcmp(port, "6443"));
	CHECK(gcp_parse_forwarding_rules("{}", 2, host, sizeof host, port, sizeof port, &found,
					 next, sizeof next, err, sizeof err) == 0 &&
	      !found);
	CHECK(gcp_parse_forwarding_rules("{\"items\": [{\"IPAddress\": \"34.1.2.3\"}]}", 38, host,
					 sizeof host, port, sizeof port, &found, next, sizeof next,
					 err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_forwarding_rules("{\"items\": [{\"IPAddress\": \"1.2.3.4\", \"portRange\": "
					 "\"x-1\"}]}",
					 57, host, sizeof host, port, sizeof port, &found, next,
					 sizeof next, err, sizeof err) == -EINVAL);
}

TEST(gcp_parse_error_and_token)
{
	static const char E[] =
	    "{\"error\": {\"code\": 403, \"message\": \"Required 'compute.instances.list' "
	    "permission for 'projects/p'\", \"errors\": [{\"message\": \"m\", \"domain\": "
	    "\"global\", \"reason\": \"forbidden\"}]}}";
	static const char T[] = "{\"access_token\":\"ya29.c.b0Aaek-_x\",\"expires_in\":3599,"
				"\"token_type\":\"Bearer\"}";
	char msg[128], reason[32], err[256];
	struct gcp_token t;

	CHECK(gcp_parse_error(E, strlen(E), msg, sizeof msg, reason, sizeof reason) == 0);
	CHECK(!strcmp(reason, "forbidden") && strstr(msg, "compute.instances.list"));
	CHECK(gcp_parse_error("{\"error\": {\"code\": 401, \"status\": \"UNAUTHENTICATED\"}}", 53,
			      msg, sizeof msg, reason, sizeof reason) == 0 &&
	      !strcmp(reason, "UNAUTHENTICATED"));
	CHECK(gcp_parse_error("<html>", 6, msg, sizeof msg, reason, sizeof reason) == -ENOENT);

	CHECK(gcp_parse_token(T, strlen(T), 1000, &t, err, sizeof err) == 0);
	CHECK(!strcmp((char *)t.access_token->bytes, "ya29.c.b0Aaek-_x"));
	CHECK(t.expires_ms == 1000 + 3599000ULL);
	gcp_token_free(&t);
	CHECK(t.access_token == NULL);
	/* with spaces and an unknown member */
	CHECK(gcp_parse_token(" { \"token_type\" : \"Bearer\" , \"x\": [1], \"access_token\": "
			      "\"a\", \"expires_in\": 5 } ",
			      78, 0, &t, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_token(" { \"token_type\" : \"Bearer\" , \"x\": null, \"access_token\": "
			      "\"a\", \"expires_in\": 5 } ",
			      79, 0, &t, err, sizeof err) == 0);
	gcp_token_free(&t);
	/* never the token in the error line */
	CHECK(gcp_parse_token("{\"access_token\":\"SECRETTOK\",\"expires_in\":1}", 43, 0, &t, err,
			      sizeof err) == -EINVAL);
	CHECK(strstr(err, "token_type") && !strstr(err, "SECRETTOK") && !t.access_token);
	CHECK(
	    gcp_parse_token("{\"access_token\":\"a b\",\"expires_in\":1,\"token_type\":\"Bearer\"}",
			    59, 0, &t, err, sizeof err) == -EINVAL);
	CHECK(
	    gcp_parse_token("{\"access_token\":\"a\",\"expires_in\":-1,\"token_type\":\"Bearer\"}",
			    58, 0, &t, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_token("{\"access_token\":\"a\",\"expires_in\":1,\"token_type\":\"Bearer\"",
			      56, 0, &t, err, sizeof err) == -EINVAL);
	CHECK(gcp_parse_token("{\"access_token\":\"a\",\"access_token\":\"b\",\"expires_in\":1,"
			      "\"token_type\":\"Bearer\"}",
			      76, 0, &t, err, sizeof err) == -EINVAL);
	char region[32];

	CHECK(gcp_region_of_zone("europe-west3-b", region, sizeof region) == 0 &&
	      !strcmp(region, "europe-west3"));
	CHECK(gcp_region_of_zone("europe-west3", region, sizeof region) == -EINVAL);
	CHECK(gcp_region_of_zone("a-b-c-d", region, sizeof region) == -EINVAL);
}

/* ---- against the fake ---- */
/* a failed check leaves through out: the fake is stopped, the token freed */
#define REQ(cond)                                                      \
	do {                                                           \
		if (!(cond)) {                                         \
			harness_fail(__FILE__, __LINE__, "%s", #cond); \
			goto out;                                      \
		}                                                      \
	} while (0)

static int fake_start(struct fake_api *f, const char *state, int tls)
{
	return fake_api_start(f, "tests/cloud/fake_gce_api.py", "gce-api", state, tls);
}

/* 7 instances of uid1 in three zones of europe-west3, one of another cluster, one in another
 * region; a global rule of another cluster, a regional one of uid1 */
static const char STATE[] =
    "{\"project\": \"constell-proj\", \"self\": \"cp-0\","
    " \"zones\": [\"europe-west3-a\", \"europe-west3-b\", \"europe-west3-c\", \"us-east1-b\"],"
    " \"instances\": ["
    "  {\"name\": \"cp-0\", \"zone\": \"europe-west3-a\", \"networkIP\": \"10.0.0.2\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"controlplane\"},"
    "   \"metadata\": {\"constellation-init-secret-hash\": \"$2a$10$abc\"}},"
    "  {\"name\": \"cp-1\", \"zone\": \"europe-west3-b\", \"networkIP\": \"10.0.0.3\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"controlplane\"}},"
    "  {\"name\": \"cp-2\", \"zone\": \"europe-west3-c\", \"networkIP\": \"10.0.0.4\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"controlplane\"}},"
    "  {\"name\": \"w-0\", \"zone\": \"europe-west3-a\", \"networkIP\": \"10.0.0.5\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"name\": \"w-1\", \"zone\": \"europe-west3-a\", \"networkIP\": \"10.0.0.6\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"name\": \"w-2\", \"zone\": \"europe-west3-a\", \"networkIP\": \"10.0.0.7\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"name\": \"w-3\", \"zone\": \"europe-west3-b\", \"networkIP\": \"10.0.0.8\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}},"
    "  {\"name\": \"x-0\", \"zone\": \"europe-west3-a\", \"networkIP\": \"10.1.0.2\","
    "   \"labels\": {\"constellation-uid\": \"uid2\", \"constellation-role\": \"worker\"}},"
    "  {\"name\": \"y-0\", \"zone\": \"us-east1-b\", \"networkIP\": \"10.2.0.2\","
    "   \"labels\": {\"constellation-uid\": \"uid1\", \"constellation-role\": \"worker\"}}],"
    " \"forwarding_rules\": ["
    "  {\"name\": \"other\", \"IPAddress\": \"34.0.0.9\", \"portRange\": \"6443-6443\","
    "   \"labels\": {\"constellation-uid\": \"uid2\", \"constellation-use\": \"kubernetes\"}},"
    "  {\"name\": \"c1-verify\", \"region\": \"europe-west3\", \"IPAddress\": \"34.0.0.1\","
    "   \"portRange\": \"30081-30081\", \"labels\": {\"constellation-uid\": \"uid1\","
    "   \"constellation-use\": \"verify\"}},"
    "  {\"name\": \"c1-kube\", \"region\": \"europe-west3\", \"IPAddress\": \"34.0.0.1\","
    "   \"portRange\": \"6443-6443\", \"labels\": {\"constellation-uid\": \"uid1\","
    "   \"constellation-use\": \"kubernetes\"}}],"
    " \"page_size\": 2, %s}";

static void api_init(struct gcp_api *api, char *url, size_t cap, int port)
{
	snprintf(url, cap, "http://127.0.0.1:%d", port);
	gcp_api_free(api);
	memset(api, 0, sizeof *api);
	api->metadata = url;
	api->compute = url;
	api->timeout_ms = 60000;
	api->max_attempts = 4;
	api->backoff_ms = 10;
}

static int start(struct fake_api *f, const char *extra, int tls)
{
	char state[sizeof STATE + 256];

	snprintf(state, sizeof state, STATE, extra);
	if (fake_start(f, state, tls) != 0) {
		harness_fail(__FILE__, __LINE__, "fake_gce_api.py did not start");
		fake_api_stop(f);
		return -1;
	}
	return 0;
}

TEST(gcp_api_cluster_against_the_fake)
{
	struct fake_api f = {0};
	struct gcp_api api = {0};
	struct gcp_instance in[16], self;
	char url[64], zones[GCP_MAX_ZONES][64], host[64], port[8];
	int n = 0, zone_of[16], cps = 0;

	if (start(&f, "\"throttle\": {\"instances.list\": 2, \"zones.list\": 1}", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) == 0);
	REQ(!strcmp(self.uid, "uid1") && !strcmp(self.role, "controlplane") &&
	    !strcmp(self.init_secret_hash, "$2a$10$abc") && !strcmp(self.vpc_ip, "10.0.0.2"));
	REQ(gcp_list_instances(&api, "constell-proj", "europe-west3", "uid1", in, 16, &n, zones,
			       zone_of) == 0);
	/* the 7 of uid1 in europe-west3: not uid2's, not the one in us-east1 */
	REQ(n == 7);
	for (int i = 0; i < n; i++)
		cps += !strcmp(in[i].role, "controlplane");
	REQ(cps == 3);
	REQ(!strcmp(in[5].name, "w-3") && !strcmp(zones[zone_of[5]], "europe-west3-b"));
	REQ(!strcmp(in[6].name, "cp-2") && !strcmp(zones[zone_of[6]], "europe-west3-c"));
	REQ(n == 7 && !strcmp(zones[zone_of[2]], "europe-west3-a"));
	/* europe-west3-a's 4 over two pages, 2 throttled first; b, c one page each; the 3
	 * zones over two pages, 1 throttled first */
	REQ(fake_api_log_count(&f, "\"reason\": \"rateLimitExceeded\"") == 3);
	REQ(fake_api_log_count(&f, "pageToken=") == 2); /* zones.list's and europe-west3-a's */
	REQ(fake_api_log_count(&f, "\"method\": \"instances.list\", \"status\": 200") == 4);
	/* no global rule of uid1: the regional one labelled kubernetes */
	REQ(gcp_lb_endpoint(&api, "constell-proj", "europe-west3", "uid1", host, sizeof host, port,
			    sizeof port) == 0);
	REQ(!strcmp(host, "34.0.0.1") && !strcmp(port, "6443"));
	REQ(fake_api_log_count(&f, "globalForwardingRules.list") == 1);
	/* uid2's is global */
	REQ(gcp_lb_endpoint(&api, "constell-proj", "europe-west3", "uid2", host, sizeof host, port,
			    sizeof port) == 0 &&
	    !strcmp(host, "34.0.0.9"));
	REQ(gcp_lb_endpoint(&api, "constell-proj", "europe-west3", "uid3", host, sizeof host, port,
			    sizeof port) == -ENOENT);
	/* one token for all of it; every call carried it */
	REQ(api.token_reads == 1);
	REQ(fake_api_log_count(&f, "\"auth\": false") == 0);
	/* 404 */
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "nope", &self) == -ENOENT);
out:
	gcp_api_free(&api);
	fake_api_stop(&f);
}

TEST(gcp_api_tokens)
{
	struct fake_api f = {0};
	struct gcp_api api = {0};
	struct gcp_instance self;
	char url[64];

	/* revoked after 2 uses: the third call's 401 reads a new token and succeeds */
	if (start(&f, "\"token_uses\": 2", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	for (int i = 0; i < 3; i++)
		REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) == 0);
	REQ(api.token_reads == 2);
	REQ(fake_api_log_count(&f, "\"reason\": \"authError\"") == 1);
	gcp_api_free(&api);
	fake_api_stop(&f);

	/* a token valid for 30 s is read again before each use (60 s of margin): no 401 */
	if (start(&f, "\"token_ttl\": 30", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	for (int i = 0; i < 3; i++)
		REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) == 0);
	REQ(api.token_reads == 3);
	REQ(fake_api_log_count(&f, "\"status\": 401") == 0);
out:
	gcp_api_free(&api);
	fake_api_stop(&f);
}

TEST(gcp_api_failures)
{
	struct fake_api f = {0};
	struct gcp_api api = {0};
	struct gcp_instance in[16];
	char url[64], zones[GCP_MAX_ZONES][64];
	int n = 0;

	if (start(&f, "\"deny\": [\"compute.instances.list\"], \"endless\": \"zones.list\"", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	/* the pages of zones.list never end: stopped at GCP_MAX_PAGES */
	REQ(gcp_list_zones(&api, "constell-proj", "europe-west3", zones, GCP_MAX_ZONES, &n) ==
	    -E2BIG);
	REQ(fake_api_log_count(&f, "zones.list") == GCP_MAX_PAGES);
	fake_api_stop(&f);

	if (start(&f, "\"deny\": [\"compute.instances.list\"]", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	/* 403: at once, not retried */
	REQ(gcp_list_instances(&api, "constell-proj", "europe-west3", "uid1", in, 16, &n, zones,
			       NULL) == -EACCES);
	REQ(fake_api_log_count(&f, "\"reason\": \"forbidden\"") == 1);
	/* always throttled: gives up after max_attempts */
	fake_api_stop(&f);
	if (start(&f, "\"throttle\": {\"instances.get\": 100}", 0) < 0)
		return;
	api_init(&api, url, sizeof url, f.port);
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", in) == -EAGAIN);
	REQ(fake_api_log_count(&f, "rateLimitExceeded") == 4);
out:
	gcp_api_free(&api);
	fake_api_stop(&f);
}

TEST(gcp_api_https)
{
	struct fake_api f = {0};
	struct gcp_api api = {0};
	struct gcp_instance self;
	struct ca_bundle ca = {0}, other = {0};
	char url[64], curl[64], err[256];

	if (start(&f, "\"deny\": []", 1) < 0)
		return;
	REQ(f.tls_port > 0);
	REQ(ca_bundle_load(harness_path(f.dir, "ca.pem"), &ca, err, sizeof err) == 0);
	REQ(ca_bundle_load(harness_path(f.dir, "other-ca.pem"), &other, err, sizeof err) == 0);
	api_init(&api, url, sizeof url, f.port);
	snprintf(curl, sizeof curl, "https://localhost:%d", f.tls_port);
	api.compute = curl;
	api.ca = &ca;
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) == 0 &&
	    !strcmp(self.uid, "uid1"));
	api.ca = &other;
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) ==
	    -EKEYREJECTED);
	api.ca = NULL;
	REQ(gcp_get_instance(&api, "constell-proj", "europe-west3-a", "cp-0", &self) == -ENOKEY);
	ca_bundle_free(&ca);
	ca_bundle_free(&other);
out:
	gcp_api_free(&api);
	fake_api_stop(&f);
}
