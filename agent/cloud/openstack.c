/* OpenStack (and STACKIT): the metadata service (docs.openstack.org/nova/latest/user/
 * metadata.html): /openstack/2018-08-27/meta_data.json (name, uuid, the meta items
 * constellation-role, -uid and -init-secret-hash), the EC2-style /1.0/meta-data/local-ipv4
 * and user_data (JSON with openstack-load-balancer-endpoint). No header is demanded. The
 * state disk is the second virtio disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cloud.h"
#include "cloud/api_http.h"
#include "cloud/openstack_api.h"
#include "net/net.h"

#define OS_META	    "/openstack/2018-08-27/meta_data.json"
#define OS_USERDATA "/openstack/2018-08-27/user_data"
#define OS_IPV4	    "/1.0/meta-data/local-ipv4"
#define OS_MAX_BODY (64 << 10)

static int os_get(const struct cloud *cl, const char *path, struct http_response *resp)
{
	char url[256];

	snprintf(url, sizeof url, "%s%s", cl->metadata, path);
	return cloud_http(cl, "GET", url, NULL, NULL, 0, OS_MAX_BODY, resp);
}

static int meta(const struct cloud *cl, struct md_instance *self, char *uid, size_t uidcap,
		char *hash, size_t hashcap)
{
	struct http_response resp;
	char err[160];
	int r = os_get(cl, OS_META, &resp);

	if (r < 0)
		return r;
	if ((r = openstack_parse_meta(resp.body, resp.len, self, uid, uidcap, hash, hashcap, err,
				      sizeof err)) < 0)
		log_error("%s", err);
	http_response_free(&resp);
	return r;
}

static int os_self(const struct cloud *cl, struct md_instance *self)
{
	struct http_response resp;
	size_t n;
	int r;

	if ((r = meta(cl, self, NULL, 0, NULL, 0)) < 0 || (r = os_get(cl, OS_IPV4, &resp)) < 0)
		return r;
	n = resp.len;
	while (n && (resp.body[n - 1] == '\n' || resp.body[n - 1] == '\r'))
		n--;
	if (n == 0 || n >= sizeof self->vpc_ip || strspn(resp.body, "0123456789.") != n)
		r = log_err(-EINVAL, "openstack: %s is not an IPv4 address", OS_IPV4);
	else
		memcpy(self->vpc_ip, resp.body, n), self->vpc_ip[n] = 0;
	http_response_free(&resp);
	return r;
}

static int os_uid(const struct cloud *cl, char *out, size_t cap)
{
	struct md_instance self;

	return meta(cl, &self, out, cap, NULL, 0);
}

static int os_hash(const struct cloud *cl, char *out, size_t cap)
{
	struct md_instance self;
	char v[128];
	int r = meta(cl, &self, NULL, 0, v, sizeof v);

	if (r < 0)
		return r;
	if (md_parse_bcrypt(v, strlen(v), out, cap) < 0)
		return log_err(-EINVAL, "openstack: meta.constellation-init-secret-hash is not a "
					"bcrypt hash");
	return 0;
}

static int os_lb(const struct cloud *cl, char *host, size_t cap)
{
	struct http_response resp;
	char err[160];
	int r = os_get(cl, OS_USERDATA, &resp);

	if (r < 0)
		return r;
	if ((r = openstack_parse_user_data(resp.body, resp.len, host, cap, err, sizeof err)) < 0)
		log_error("%s", err);
	http_response_free(&resp);
	return r;
}

/* The cluster's servers through Keystone, Neutron and Nova (openstack_api.h) with the
 * credentials of user_data; one client per process, its token kept between calls. */
static int os_peers(const struct cloud *cl, struct md_instance *peers, int max, int *count)
{
	static struct os_api api;
	struct http_response resp;
	struct md_instance self;
	struct os_server *srv;
	char uid[128], err[160];
	int r, n = 0;

	if ((r = meta(cl, &self, uid, sizeof uid, NULL, 0)) < 0)
		return r;
	if (!api.creds.password) {
		if ((r = os_get(cl, OS_USERDATA, &resp)) < 0)
			return r;
		r = os_parse_creds(resp.body, resp.len, &api.creds, err, sizeof err);
		secret_wipe(resp.body, resp.len);
		http_response_free(&resp);
		if (r < 0)
			return log_err(r, "%s", err);
	}
	api.ca = strncmp(api.creds.auth_url, "https://", 8) ? NULL : api_ca_bundle(cl->ca_bundle);
	api.timeout_ms = cl->timeout_ms > 0 ? cl->timeout_ms : 10000;
	api.max_attempts = 5;
	api.backoff_ms = 200;
	if (!(srv = calloc((size_t)max, sizeof *srv)))
		return -ENOMEM;
	r = os_list_servers(&api, uid, srv, max, &n);
	for (int i = 0; r == 0 && i < n; i++) {
		struct md_instance *p = &peers[(*count)++];

		memset(p, 0, sizeof *p);
		snprintf(p->name, sizeof p->name, "%s", srv[i].name);
		snprintf(p->provider_id, sizeof p->provider_id, "%s", srv[i].id);
		snprintf(p->vpc_ip, sizeof p->vpc_ip, "%s", srv[i].vpc_ip);
		p->control_plane = srv[i].role == 1;
	}
	if (r == 0)
		log_info("openstack: %d servers of cluster %s from Nova", n, uid);
	free(srv);
	return r;
}

const struct cloud_ops cloud_openstack = {
    .peers = os_peers,
    .name = "openstack",
    .self = os_self,
    .lb_endpoint = os_lb,
    .uid = os_uid,
    .init_secret_hash = os_hash,
    .state_disk = disk_scan_virtio,
    .disk_wanted = "the virtio disk vdb",
};
