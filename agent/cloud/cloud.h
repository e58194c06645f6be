/* The platform layer: where the node runs, read once from constel.csp, behind one small ops
 * table (one file per cloud): who the node is, the control planes, the load balancer, the
 * cluster's UID and init-secret hash, the state disk by the cloud's own naming, the first-boot
 * chores and the failure report. The flows call only the cloud_* functions below.
 *
 * What a cloud serves only through its control-plane API (the peers and the load balancer
 * everywhere but QEMU, the role and UID on GCP and AWS) fails with -EOPNOTSUPP and one line
 * saying so; the command line's overrides (constel.join=, constel.role=) stand in. */
#ifndef CONSTEL_CLOUD_H
#define CONSTEL_CLOUD_H

#include <stddef.h>
#include <stdint.h>

#define CLOUD_IMDS_URL	     "http://169.254.169.254"
#define CLOUD_WIRESERVER_URL "http://168.63.129.16"
#define CLOUD_QEMU_URL	     "http://10.42.0.1:8080"

/* One node as the cloud describes it. */
struct md_instance {
	char name[64];
	char provider_id[256];
	char vpc_ip[48];
	int control_plane;
	int no_role; /* the endpoint does not say the role (GCP, AWS): control_plane is 0 */
};

struct cloud;
struct cloud_ops {
	const char *name; /* "qemu", "gcp", "azure", "aws", "openstack" */
	int (*self)(const struct cloud *cl, struct md_instance *self);
	int (*peers)(const struct cloud *cl, struct md_instance *peers, int max, int *count);
	int (*lb_endpoint)(const struct cloud *cl, char *host, size_t cap);
	int (*uid)(const struct cloud *cl, char *out, size_t cap);
	int (*init_secret_hash)(const struct cloud *cl, char *out, size_t cap);
	/* one scan of the devices (cloud_state_disk waits); -ENOENT when none is the disk */
	int (*state_disk)(const struct cloud *cl, char *out, size_t cap);
	const char *disk_wanted; /* what the scan looks for, for the one line when it is not */
	int (*first_boot)(const struct cloud *cl);			/* NULL: nothing to do */
	int (*report_failure)(const struct cloud *cl, const char *why); /* NULL: nowhere */
};

struct cloud {
	const struct cloud_ops *ops;
	const char *metadata;	/* the node-local endpoint's base URL */
	const char *wireserver; /* Azure's */
	const char *sys, *dev;	/* "/sys", "/dev" (recorded trees in tests) */
	int timeout_ms;		/* each call to an endpoint, its retries included */
	int disk_wait_ms;	/* how long the state disk is waited for */
	int explain;		/* the first scan says why of every candidate (host command) */
	const char *api;       /* the control-plane API's base URL; NULL: the cloud's own (tests) */
	const char *ca_bundle; /* the roots for the API's https; NULL: CA_BUNDLE_DEFAULT */
};

/* "stackit" is OpenStack; NULL for a name that is no cloud's. */
const char *cloud_canonical(const char *csp);
/* The cloud of csp with the defaults (metadata NULL: the cloud's own endpoint). -EINVAL with
 * one line in err for an unknown csp: never a silent QEMU. */
int cloud_select(const char *csp, const char *metadata, struct cloud *cl, char *err, size_t errlen);

/* The calls of the flows: 0 or -errno with one line logged. */
int cloud_self(const struct cloud *cl, struct md_instance *self);
int cloud_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count);
int cloud_lb_endpoint(const struct cloud *cl, char *host, size_t cap);
int cloud_uid(const struct cloud *cl, char *out, size_t cap);
int cloud_init_secret_hash(const struct cloud *cl, char *out, size_t cap);
/* The state disk's device path, waited for up to disk_wait_ms (every 250 ms); what was looked
 * for in one line when it did not appear. */
int cloud_state_disk(const struct cloud *cl, char *out, size_t cap);
int cloud_first_boot(const struct cloud *cl);
/* Best effort: the boot failed before the join; tell the cloud why (Azure: NotReady). */
void cloud_report_failure(const struct cloud *cl, const char *why);

extern const struct cloud_ops cloud_qemu, cloud_gcp, cloud_azure, cloud_aws, cloud_openstack;

/* ---- the node-local endpoint's client (endpoint.c) ---- */
/* One call with retries: a network error, 429 or 5xx is tried again with back-off (200 ms
 * doubling, at most 5 tries) within cl->timeout_ms. headers: extra lines, each ending "\r\n".
 * 0 with *resp (status 200 only; free with http_response_free); anything else -errno with
 * one line naming what. */
struct http_response;
int cloud_http(const struct cloud *cl, const char *method, const char *url, const char *headers,
	       const void *body, size_t body_len, size_t max, struct http_response *resp);
/* The one line for what needs the cloud's control-plane API (issue 27): -EOPNOTSUPP. */
int cloud_not_available(const struct cloud *cl, const char *what);

/* ---- the QEMU metadata API (qemu.c), spec §5.2; base is "http://HOST:PORT" ---- */
int md_self(const char *base, struct md_instance *self);
/* At most max peers in peers; *count how many were kept. */
int md_peers(const char *base, struct md_instance *peers, int max, int *count);
/* The load balancer's host (a JSON string). */
int md_endpoint(const char *base, char *out, size_t cap);
/* The init secret's bcrypt hash. */
int md_init_secret_hash(const char *base, char *out, size_t cap);
/* The parsers behind them (fuzzed): -EINVAL with one line in err. len is the body's length;
 * a body with a NUL inside is refused. */
int md_parse_self(const char *body, size_t len, struct md_instance *self, char *err, size_t errlen);
int md_parse_peers(const char *body, size_t len, struct md_instance *peers, int max, int *count,
		   char *err, size_t errlen);
int md_parse_endpoint(const char *body, size_t len, char *out, size_t cap, char *err,
		      size_t errlen);
/* A bcrypt hash ("$2?$", 60 characters) from a body, trailing CR/LF dropped. */
int md_parse_bcrypt(const char *body, size_t len, char *out, size_t cap);

/* ---- the node-local endpoints' documents (identity.c), fuzzed ---- */
/* Azure IMDS /metadata/instance (compute and network): name, provider ID, role, IP, and the
 * tags uid and init-secret hash (either may be NULL). */
int azure_parse_imds(const char *body, size_t len, struct md_instance *self, char *uid,
		     size_t uidcap, char *hash, size_t hashcap, char *err, size_t errlen);
/* AWS's instance identity document: instanceId, availabilityZone, privateIp. */
int aws_parse_identity(const char *body, size_t len, struct md_instance *self, char *err,
		       size_t errlen);
/* OpenStack's meta_data.json: name, uuid, meta.constellation-{role,uid,init-secret-hash}. */
int openstack_parse_meta(const char *body, size_t len, struct md_instance *self, char *uid,
			 size_t uidcap, char *hash, size_t hashcap, char *err, size_t errlen);
/* OpenStack's user_data (JSON): openstack-load-balancer-endpoint. */
int openstack_parse_user_data(const char *body, size_t len, char *host, size_t cap, char *err,
			      size_t errlen);
/* A role string as Constellation parses it: 1 control plane, 0 worker, -EINVAL. */
int cloud_role_parse(const char *s);

/* ---- the state disk by the clouds' naming (disk_*.c), fuzzed parsers ---- */
#define NVME_ID_SIZE 4096
/* GCP: the "device_name" of the packed JSON in an Identify Namespace page's vendor area
 * (offset 384). -ENOENT when there is none. */
int gcp_nvme_device_name(const uint8_t page[NVME_ID_SIZE], char *out, size_t cap);
/* GCP's SCSI PD: the name in VPD page 0x83 (a vendor-specific ASCII designator, or a T10
 * vendor ID one "Google  PersistentDisk  NAME"). -ENOENT when there is none. */
int gcp_vpd83_device_name(const uint8_t *page, size_t len, char *out, size_t cap);
/* AWS: the EBS block-device name of an Identify Controller page (bytes 3072..3103, spaces and
 * NULs trimmed, "/dev/" dropped); -ENOENT when the page is not an EBS controller's. */
int aws_ebs_device_name(const uint8_t page[NVME_ID_SIZE], char *out, size_t cap);
/* Identify (cns 1 controller, 0 namespace) of the NVMe device dev/name: the admin ioctl on a
 * device node; a regular file is a recorded device holding its pages, controller then
 * namespace (tests). */
int nvme_identify(const char *dev, const char *name, int cns, uint8_t page[NVME_ID_SIZE]);
/* The scans behind the clouds' state_disk. */
int disk_scan_gcp(const struct cloud *cl, const char *want, char *out, size_t cap);
int disk_scan_azure(const struct cloud *cl, char *out, size_t cap);
int disk_scan_aws(const struct cloud *cl, const char *want, char *out, size_t cap);
int disk_scan_virtio(const struct cloud *cl, char *out, size_t cap);

/* ---- Azure's wireserver (azure_wire.c) ---- */
struct azure_goal_state {
	char incarnation[16], container_id[64], instance_id[128];
};
/* The three values of a goal state document. -EINVAL with one line in err. */
int azure_parse_goal_state(const char *xml, size_t len, struct azure_goal_state *gs, char *err,
			   size_t errlen);
/* The health report's XML: Ready (why NULL) or NotReady/ProvisioningFailed with why
 * (escaped, at most 512 characters of it). The length, or -ENOSPC. */
int azure_health_xml(const struct azure_goal_state *gs, const char *why, char *out, size_t cap);
/* The goal state, then the report, each bounded. */
int azure_report_health(const struct cloud *cl, const char *why);

#endif
