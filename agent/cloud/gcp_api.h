/* GCE: the Compute REST calls a node makes (docs/cloud-api-gcp-openstack.md), as
 * Constellation's internal/cloud/gcp computes from them: the node's own instance (labels
 * constellation-role and constellation-uid, the metadata item constellation-init-secret-hash,
 * nic0's networkIP), the zones of its region, the cluster's instances in each zone by the
 * label constellation-uid, and the load balancer from the global, then the regional forwarding
 * rules labelled with the UID and constellation-use=kubernetes. Every call carries the default
 * service account's OAuth token from the metadata server (read again before it expires, kept
 * in a wiped secret, never logged); bounded in body, pages, attempts and time; 429 and 5xx
 * retried with back-off; 403 one line naming the call and the IAM permission. */
#ifndef CONSTEL_CLOUD_GCP_API_H
#define CONSTEL_CLOUD_GCP_API_H

#include <stddef.h>
#include <stdint.h>

#define GCP_COMPUTE_URL	     "https://compute.googleapis.com"
#define GCP_MAX_BODY	     (1 << 20) /* a response body */
#define GCP_MAX_PAGES	     50	       /* pages followed for one listing */
#define GCP_MAX_ZONES	     16
#define GCP_TOKEN_MAX	     4096  /* the token document */
#define GCP_TOKEN_REFRESH_MS 60000 /* a token is read again this long before it expires */
#define GCP_PAGE_TOKEN_MAX   1024

#define GCP_LABEL_ROLE		  "constellation-role"
#define GCP_LABEL_UID		  "constellation-uid"
#define GCP_ITEM_INIT_SECRET_HASH "constellation-init-secret-hash"

struct gcp_instance {
	char name[64];
	char vpc_ip[48]; /* nic0's networkIP, "" when it has none */
	char role[32];	 /* the label constellation-role, "" when absent */
	char uid[80];	 /* the label constellation-uid, "" when absent */
	char init_secret_hash[80];
	int has_uid, has_init_secret_hash;
};

/* ---- parsers of the answers (fuzzed: tests/fuzz/fuzz_gcp_json.c); -EINVAL with one line in
 * err ---- */
/* An Instance resource. */
int gcp_parse_instance(const char *json, size_t len, struct gcp_instance *out, char *err,
		       size_t errlen);
/* An InstanceList: its items appended to out from *count on (-ENOSPC beyond max), its
 * nextPageToken into next ("" when none). */
int gcp_parse_instance_list(const char *json, size_t len, struct gcp_instance *out, int max,
			    int *count, char *next, size_t next_cap, char *err, size_t errlen);
/* A ZoneList: the names appended to zones from *count on. */
int gcp_parse_zone_list(const char *json, size_t len, char (*zones)[64], int max, int *count,
			char *next, size_t next_cap, char *err, size_t errlen);
/* A ForwardingRuleList: the first rule's IPAddress into host and the first port of its
 * portRange into port (*found 1), or *found 0 when the page has no rule; its nextPageToken. */
int gcp_parse_forwarding_rules(const char *json, size_t len, char *host, size_t host_cap,
			       char *port, size_t port_cap, int *found, char *next, size_t next_cap,
			       char *err, size_t errlen);
/* Google's error shape {"error": {"code", "message", "status", "errors": [{"reason"}]}}: the
 * message and the reason (or status). -ENOENT when the body holds none. */
int gcp_parse_error(const char *json, size_t len, char *msg, size_t msg_cap, char *reason,
		    size_t reason_cap);

/* ---- the service account's token ---- */
struct secret;
struct gcp_token {
	struct secret *access_token; /* the bearer token's text, NUL-terminated */
	uint64_t expires_ms;	     /* monotonic_ms() at which it expires */
};
/* The metadata server's token document {"access_token", "expires_in", "token_type":
 * "Bearer"}, read by a flat reader that writes the token straight into a secret. */
int gcp_parse_token(const char *json, size_t len, uint64_t now_ms, struct gcp_token *out, char *err,
		    size_t errlen);
void gcp_token_free(struct gcp_token *t);

/* ---- the client ---- */
struct ca_bundle;
struct gcp_api {
	const char *metadata;	    /* the metadata server's base URL */
	const char *compute;	    /* NULL: GCP_COMPUTE_URL; else a test's base URL */
	const struct ca_bundle *ca; /* for https:// */
	int timeout_ms;		    /* for one call, its retries included */
	int max_attempts;	    /* at least 1 */
	int backoff_ms;		    /* the first wait; doubled each time */
	struct gcp_token token;	    /* the cached token (gcp_api_free wipes it) */
	int token_reads;	    /* how often the token was read (tests) */
};
void gcp_api_free(struct gcp_api *api);

/* instances.get of project/zone/name. */
int gcp_get_instance(struct gcp_api *api, const char *project, const char *zone, const char *name,
		     struct gcp_instance *out);
/* The zones of region (zones.list, filter name = "REGION*"). */
int gcp_list_zones(struct gcp_api *api, const char *project, const char *region, char (*zones)[64],
		   int max, int *count);
/* instances.list in every zone of region with filter labels.constellation-uid:UID, every page
 * followed (GCP_MAX_PAGES at most per zone); zone_of[i] (may be NULL) the index into zones. */
int gcp_list_instances(struct gcp_api *api, const char *project, const char *region,
		       const char *uid, struct gcp_instance *out, int max, int *count,
		       char (*zones)[64], int *zone_of);
/* The load balancer: the first global forwarding rule with the labels constellation-uid=UID
 * and constellation-use=kubernetes, else the first regional one in region: host and port.
 * -ENOENT when there is none. */
int gcp_lb_endpoint(struct gcp_api *api, const char *project, const char *region, const char *uid,
		    char *host, size_t host_cap, char *port, size_t port_cap);
/* "europe-west3-b" -> "europe-west3" (Constellation's regionFromZone: up to the last '-'). */
int gcp_region_of_zone(const char *zone, char *out, size_t cap);

#endif
