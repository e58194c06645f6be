/* Azure: IMDS (learn.microsoft.com/azure/virtual-machines/instance-metadata-service:
 * GET http://169.254.169.254/metadata/instance?api-version=2021-02-01&format=json with
 * "Metadata: true"), whose compute part has the name, resource ID and the tags (role, UID,
 * init-secret hash) and whose network part the IP; the wireserver's provisioning report
 * (azure_wire.c) as the first-boot chore; the peers and the load balancer from ARM
 * (azure_arm.c) with the managed identity's token and the failure report. The state disk is LUN 0
 * of the data-disk SCSI controller. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "azure_arm.h"
#include "base/base.h"
#include "cloud.h"
#include "net/net.h"

#define IMDS_PATH     "/metadata/instance?api-version=2021-02-01&format=json"
#define IMDS_MAX_BODY (256 << 10)

static int imds(const struct cloud *cl, struct md_instance *self, char *uid, size_t uidcap,
		char *hash, size_t hashcap)
{
	struct http_response resp;
	char url[256], err[160];
	int r;

	snprintf(url, sizeof url, "%s" IMDS_PATH, cl->metadata);
	if ((r = cloud_http(cl, "GET", url, "Metadata: true\r\n", NULL, 0, IMDS_MAX_BODY, &resp)) <
	    0)
		return r;
	r = azure_parse_imds(resp.body, resp.len, self, uid, uidcap, hash, hashcap, err,
			     sizeof err);
	if (r < 0)
		log_error("%s", err);
	http_response_free(&resp);
	return r;
}

/* Constellation's Self: IMDS gives the provider ID, ARM the rest (the scale-set VM's
 * computerName and role tag, its NIC's private IP). When ARM does not answer (its one line
 * says why), IMDS's name, tag and IP stand in. */
static int azure_self(const struct cloud *cl, struct md_instance *self)
{
	struct azure_vm vm;
	char ip[48];
	int r;

	if ((r = imds(cl, self, NULL, 0, NULL, 0)) < 0)
		return r;
	if (azure_arm_self(cl, self->provider_id, &vm, ip, sizeof ip) < 0) {
		log_warn("azure: the node's name, role and IP from IMDS (ARM did not answer)");
		return 0;
	}
	if (!vm.role[0])
		return log_err(-ENOENT, "azure: VM %s has no tag constellation-role in ARM",
			       vm.name);
	snprintf(self->name, sizeof self->name, "%.63s", vm.name);
	snprintf(self->vpc_ip, sizeof self->vpc_ip, "%.47s", ip);
	self->control_plane = cloud_role_parse(vm.role) == 1;
	log_info("azure: %s: role %s, IP %s from ARM (its scale-set VM and NIC)", self->name,
		 vm.role, self->vpc_ip);
	return 0;
}

static int azure_uid(const struct cloud *cl, char *out, size_t cap)
{
	struct md_instance self;

	return imds(cl, &self, out, cap, NULL, 0);
}

static int azure_hash(const struct cloud *cl, char *out, size_t cap)
{
	struct md_instance self;
	char v[128];
	int r = imds(cl, &self, NULL, 0, v, sizeof v);

	if (r < 0)
		return r;
	if (md_parse_bcrypt(v, strlen(v), out, cap) < 0)
		return log_err(
		    -EINVAL, "azure: the tag constellation-init-secret-hash is not a bcrypt hash");
	return 0;
}

/* Constellation's List: every VM of the scale sets tagged with the UID, its IP from its NIC */
static int azure_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	static struct azure_vm vms[ARM_MAX_VMS];
	static char ips[ARM_MAX_VMS][48];
	struct md_instance self;
	char uid[128];
	int r, n = 0;

	if ((r = imds(cl, &self, uid, sizeof uid, NULL, 0)) < 0)
		return r;
	if ((r = azure_arm_list(cl, self.provider_id, uid, vms, ips, ARM_MAX_VMS, &n)) < 0)
		return r;
	for (int i = 0; i < n && *count < max; i++) {
		struct md_instance *p = &peers[(*count)++];

		memset(p, 0, sizeof *p);
		snprintf(p->name, sizeof p->name, "%.63s", vms[i].name);
		snprintf(p->provider_id, sizeof p->provider_id, "azure://%.247s", vms[i].id);
		snprintf(p->vpc_ip, sizeof p->vpc_ip, "%.47s", ips[i]);
		p->control_plane = cloud_role_parse(vms[i].role) == 1;
	}
	return 0;
}

static int azure_lb(const struct cloud *cl, char *host, size_t cap)
{
	struct md_instance self;
	char uid[128];
	int r;

	if ((r = imds(cl, &self, uid, sizeof uid, NULL, 0)) < 0)
		return r;
	if ((r = azure_arm_lb(cl, self.provider_id, uid, host, cap)) == 0)
		log_info("azure: load balancer %s from ARM", host);
	return r;
}

static int azure_ready(const struct cloud *cl)
{
	return azure_report_health(cl, NULL);
}

static int azure_not_ready(const struct cloud *cl, const char *why)
{
	return azure_report_health(cl, why);
}

const struct cloud_ops cloud_azure = {
    .name = "azure",
    .self = azure_self,
    .peers = azure_peers,
    .lb_endpoint = azure_lb,
    .uid = azure_uid,
    .init_secret_hash = azure_hash,
    .state_disk = disk_scan_azure,
    .disk_wanted = "Azure's data disk LUN 0 (SCSI Msft Virtual Disk under the VMBus "
		   "controller f8b3781b-1e82-4818-a1c3-63d806ec15bb)",
    .first_boot = azure_ready,
    .report_failure = azure_not_ready,
};
