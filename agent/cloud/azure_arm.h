/* Azure Resource Manager as Constellation's internal/cloud/azure uses it to find the cluster
 * (docs/cloud-api-azure-aws.md): the managed identity's token from IMDS, the scale sets of
 * the resource group tagged with the cluster's UID, their VMs and each VM's NIC
 * (api-version 2018-10-01, the only one that publishes the scale-set NIC), the load balancer
 * tagged with the UID and its public IP (else its frontend's private IP). Every response
 * bounded in body, pages, attempts and time; 429 and 5xx retried after Retry-After or a
 * back-off; a 401 fetches a new token once; 403 AuthorizationFailed is one line naming the
 * call and the permission the identity lacks. Functions return 0 or a negative errno. */
#ifndef CONSTEL_CLOUD_AZURE_ARM_H
#define CONSTEL_CLOUD_AZURE_ARM_H

#include <stddef.h>
#include <time.h>

#define ARM_URL		      "https://management.azure.com"
#define ARM_API_COMPUTE	      "2023-03-01" /* armcompute v5 */
#define ARM_API_NETWORK	      "2023-04-01" /* armnetwork v4 */
#define ARM_API_VMSS_NIC      "2018-10-01"
#define ARM_MAX_BODY	      (2 << 20)
#define ARM_MAX_PAGES	      50
#define ARM_MAX_SCALE_SETS    16
#define ARM_MAX_VMS	      256
#define ARM_TOKEN_MAX	      (16 << 10) /* an access token (a JWT: a few KiB) */
#define ARM_TOKEN_REFRESH_S   300	 /* a token is fetched again this long before expires_on */
#define ARM_RETRY_AFTER_MAX_S 10 /* a longer Retry-After waits this long (within the deadline) */

struct secret;
struct cloud;
struct http_response;

struct azure_vm {
	char instance_id[16];
	char name[64]; /* properties.osProfile.computerName */
	char id[320];  /* the ARM resource ID: the provider ID is azure://ID */
	char role[32]; /* tags.constellation-role, "" when absent */
	char nic[96];  /* the first network interface's name (path.Base of its id) */
};

struct azure_lb {
	char pip[96];	     /* the first frontend's public IP resource name, "" when none */
	char private_ip[48]; /* the first frontend's private IP, "" when none */
};

/* ---- parsers of the response bodies (fuzzed: tests/fuzz/fuzz_azure_arm.c); -EINVAL with one
 * line in err (never a token) ---- */
/* IMDS's token document: access_token (into a new secret) and expires_on (a decimal string,
 * Unix seconds). -EKEYEXPIRED when it expired before now. */
int azure_parse_token(const char *body, size_t len, time_t now, struct secret **token,
		      time_t *expires_on, char *err, size_t errlen);
/* A list page {"value": [...], "nextLink": "..."} (nextLink into next, "" when none) of: */
enum azure_list_kind {
	AZURE_LIST_SCALE_SETS, /* out: char (*)[96], names of those tagged constellation-uid=uid */
	AZURE_LIST_VMS,	       /* out: struct azure_vm, every VM with an instanceId */
	AZURE_LIST_LBS,	       /* out: struct azure_lb, those tagged constellation-uid=uid */
};
int azure_parse_list(const char *body, size_t len, enum azure_list_kind kind, const char *uid,
		     void *out, int max, int *count, char *next, size_t next_cap, char *err,
		     size_t errlen);
/* One scale-set VM (virtualMachineScaleSetVMs.Get): as a list item of AZURE_LIST_VMS. */
int azure_parse_vm(const char *body, size_t len, struct azure_vm *vm, char *err, size_t errlen);
/* A network interface: the private IP of its primary IP configuration (else the first). */
int azure_parse_nic(const char *body, size_t len, char *ip, size_t cap, char *err, size_t errlen);
/* A public IP address: properties.ipAddress. */
int azure_parse_public_ip(const char *body, size_t len, char *ip, size_t cap, char *err,
			  size_t errlen);
/* ARM's error body {"error": {"code", "message"}}; -ENOENT when the body holds none. */
int azure_parse_arm_error(const char *body, size_t len, char *code, size_t code_cap, char *msg,
			  size_t msg_cap);
/* The subscription, resource group, scale set and instance ID of a scale-set VM's provider ID
 * (azure:///subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/
 * virtualMachineScaleSets/SS/virtualMachines/N), case-insensitive in its fixed words. */
int azure_split_provider_id(const char *pid, char *sub, size_t subcap, char *rg, size_t rgcap,
			    char *ss, size_t sscap, char *inst, size_t instcap);

/* ---- the calls ---- */
/* The control planes and workers of the cluster uid (Constellation's List) in the resource
 * group of the node's provider ID. */
int azure_arm_list(const struct cloud *cl, const char *provider_id, const char *uid,
		   struct azure_vm *vms, char (*ips)[48], int max, int *count);
/* The node itself as Constellation's Self takes it: its scale-set VM (name, role tag, ID) and
 * the private IP of that VM's NIC. */
int azure_arm_self(const struct cloud *cl, const char *provider_id, struct azure_vm *vm, char *ip,
		   size_t cap);
/* The load balancer's host (Constellation's GetLoadBalancerEndpoint without its port). */
int azure_arm_lb(const struct cloud *cl, const char *provider_id, const char *uid, char *host,
		 size_t cap);

#endif
