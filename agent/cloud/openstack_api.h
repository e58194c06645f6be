/* OpenStack: the calls a node makes for its peers (docs/cloud-api-gcp-openstack.md), as
 * Constellation's internal/cloud/openstack computes them: a Keystone v3 token by password with
 * the credentials in user_data (openstack-auth-url, -username, -password, -user-domain-name),
 * the compute and network endpoints from its catalog, Neutron's network and subnets tagged
 * constellation-uid-<uid> (the subnet of the network's name gives the CIDR), and Nova's
 * servers tagged so (microversion 2.42), each with its role tag constellation-role-<role> and
 * its first fixed IPv4 address inside that CIDR. The token is kept in a wiped secret, read
 * again before expires_at or after a 401, never logged; bodies, pages, attempts and time
 * bounded; 429 and 5xx retried with back-off; 403 one line naming the call and the policy. */
#ifndef CONSTEL_CLOUD_OPENSTACK_API_H
#define CONSTEL_CLOUD_OPENSTACK_API_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define OS_API_MAX_BODY	     (1 << 20)
#define OS_API_MAX_PAGES     50
#define OS_TOKEN_REFRESH_S   60
#define OS_NOVA_MICROVERSION "2.42"

struct secret;
/* The credentials of user_data: the password in a secret. */
struct os_creds {
	char auth_url[256], username[128], user_domain[128];
	struct secret *password; /* NUL-terminated */
};
/* user_data's JSON (-EINVAL with one line in err, never a value). */
int os_parse_creds(const char *json, size_t len, struct os_creds *out, char *err, size_t errlen);
void os_creds_free(struct os_creds *c);

/* Keystone's token answer: expires_at and the public compute and network endpoints of the
 * catalog (the first public one of each type). */
int os_parse_token_body(const char *json, size_t len, time_t *expires_at, char *compute,
			size_t ccap, char *network, size_t ncap, char *err, size_t errlen);

struct os_server {
	char name[64];
	char id[64];
	int role; /* 1 control plane, 0 worker, -1 no role tag (left out) */
	char vpc_ip[48];
};
/* A /servers/detail page: servers appended from *count on; the next link into next. cidr_ip
 * and prefix: the cluster's subnet (addresses outside it are not the server's VPC IP). */
int os_parse_servers(const char *json, size_t len, const uint8_t cidr_ip[4], int prefix,
		     struct os_server *out, int max, int *count, char *next, size_t next_cap,
		     char *err, size_t errlen);
/* Neutron's /v2.0/networks answer: the one network's name (-ENOENT unless exactly one). */
int os_parse_networks(const char *json, size_t len, char *name, size_t cap, char *err,
		      size_t errlen);
/* Neutron's /v2.0/subnets answer: the CIDR of the subnet named name. */
int os_parse_subnets(const char *json, size_t len, const char *name, uint8_t ip[4], int *prefix,
		     char *err, size_t errlen);

struct ca_bundle;
struct os_api {
	struct os_creds creds;
	const struct ca_bundle *ca;
	int timeout_ms, max_attempts, backoff_ms;
	struct secret *token; /* X-Subject-Token */
	time_t expires_at;
	char compute[256], network[256];
	int token_reads;
};
void os_api_free(struct os_api *api);
/* The servers of the cluster uid with their role and VPC IP (Constellation's List): -ENOENT
 * when none is left. */
int os_list_servers(struct os_api *api, const char *uid, struct os_server *out, int max,
		    int *count);

#endif
