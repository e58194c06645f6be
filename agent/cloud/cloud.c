/* The cloud of constel.csp, chosen once, and the calls the flows make through its ops table.
 * An unknown name is an error (the caller says it and reboots): a node that believed itself
 * on QEMU while on a cloud would look for a metadata API and a disk that are not there. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "cloud.h"

static const struct {
	const char *name;
	const struct cloud_ops *ops;
} clouds[] = {
    {"qemu", &cloud_qemu},	     {"gcp", &cloud_gcp},
    {"azure", &cloud_azure},	     {"aws", &cloud_aws},
    {"openstack", &cloud_openstack}, {"stackit", &cloud_openstack},
};

const char *cloud_canonical(const char *csp)
{
	for (size_t i = 0; csp && i < sizeof clouds / sizeof clouds[0]; i++)
		if (!strcasecmp(csp, clouds[i].name)) /* FromString is case-insensitive */
			return clouds[i].ops->name;
	return NULL;
}

int cloud_select(const char *csp, const char *metadata, struct cloud *cl, char *err, size_t errlen)
{
	memset(cl, 0, sizeof *cl);
	for (size_t i = 0; csp && i < sizeof clouds / sizeof clouds[0]; i++)
		if (!strcasecmp(csp, clouds[i].name))
			cl->ops = clouds[i].ops;
	if (!cl->ops)
		return errbuf_set(err, errlen,
				  "constel.csp=%.32s is not one of qemu, gcp, azure, aws, "
				  "openstack, stackit",
				  csp ? csp : "(none)");
	cl->metadata = metadata			? metadata
		       : cl->ops == &cloud_qemu ? CLOUD_QEMU_URL
						: CLOUD_IMDS_URL;
	cl->wireserver = CLOUD_WIRESERVER_URL;
	cl->api = NULL;
	cl->ca_bundle = NULL;
	cl->sys = "/sys";
	cl->dev = "/dev";
	cl->timeout_ms = 10000;
	cl->disk_wait_ms = 60000;
	return 0;
}

int cloud_not_available(const struct cloud *cl, const char *what)
{
	return log_err(-EOPNOTSUPP,
		       "%s: %s is not available from the node-local endpoint (it needs the "
		       "cloud's API)",
		       cl->ops->name, what);
}

int cloud_self(const struct cloud *cl, struct md_instance *self)
{
	memset(self, 0, sizeof *self);
	return cl->ops->self(cl, self);
}

int cloud_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	*count = 0;
	if (!cl->ops->peers)
		return cloud_not_available(cl, "the list of control planes");
	return cl->ops->peers(cl, peers, max, count);
}

int cloud_lb_endpoint(const struct cloud *cl, char *host, size_t cap)
{
	if (!cl->ops->lb_endpoint)
		return cloud_not_available(cl, "the load balancer");
	return cl->ops->lb_endpoint(cl, host, cap);
}

int cloud_uid(const struct cloud *cl, char *out, size_t cap)
{
	if (!cl->ops->uid)
		return cloud_not_available(cl, "the cluster's UID");
	return cl->ops->uid(cl, out, cap);
}

int cloud_init_secret_hash(const struct cloud *cl, char *out, size_t cap)
{
	if (!cl->ops->init_secret_hash)
		return cloud_not_available(cl, "the init secret's hash");
	return cl->ops->init_secret_hash(cl, out, cap);
}

int cloud_state_disk(const struct cloud *cl, char *out, size_t cap)
{
	uint64_t end = monotonic_ms() + (uint64_t)(cl->disk_wait_ms > 0 ? cl->disk_wait_ms : 0);
	struct cloud once = *cl; /* explains its first scan only */
	int r, said = 0;

	for (;;) {
		r = cl->ops->state_disk(&once, out, cap);
		once.explain = 0;
		if (r != -ENOENT)
			return r;
		if (monotonic_ms() >= end)
			break;
		if (!said++)
			log_info("disk: waiting up to %d s for %s", cl->disk_wait_ms / 1000,
				 cl->ops->disk_wanted);
		poll(NULL, 0, 250);
	}
	log_error("disk: no state disk after %d s: looked for %s under %s/block",
		  cl->disk_wait_ms / 1000, cl->ops->disk_wanted, cl->sys);
	return -ENOENT;
}

int cloud_first_boot(const struct cloud *cl)
{
	return cl->ops->first_boot ? cl->ops->first_boot(cl) : 0;
}

void cloud_report_failure(const struct cloud *cl, const char *why)
{
	if (cl && cl->ops && cl->ops->report_failure)
		(void)cl->ops->report_failure(cl, why);
}
