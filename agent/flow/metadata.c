/* `constel-agent metadata`: what the boot would use, from any cloud through the cloud_* calls
 * only (agent/cloud/cloud.h), so that every cloud's ops plug in unchanged. The join
 * endpoints are Constellation's: the load balancer and every control plane, each at the join
 * service's node port. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cloud/cloud.h"
#include "flow.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static const char *role_name(const struct md_instance *m)
{
	/* Constellation's role.Role strings */
	return m->no_role ? "Unknown" : m->control_plane ? "ControlPlane" : "Worker";
}

static void json_instance(FILE *f, const struct md_instance *m)
{
	fputs("{\"name\":", f);
	json_str(f, m->name);
	fputs(",\"providerID\":", f);
	json_str(f, m->provider_id);
	fputs(",\"role\":", f);
	json_str(f, role_name(m));
	fputs(",\"vpcIP\":", f);
	json_str(f, m->vpc_ip);
	fputc('}', f);
}

static void json_opt(FILE *f, const char *key, int ok, const char *v)
{
	fprintf(f, ",\"%s\":", key);
	if (ok)
		json_str(f, v);
	else
		fputs("null", f);
}

static void join_endpoint(char (*eps)[METADATA_HOST_MAX + 8], int *n, const char *host, int port)
{
	char ep[METADATA_HOST_MAX + 8];

	if (!host[0] || *n >= METADATA_PEERS_MAX + 1)
		return;
	snprintf(ep, sizeof ep, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	for (int i = 0; i < *n; i++)
		if (!strcmp(eps[i], ep))
			return;
	memcpy(eps[(*n)++], ep, sizeof ep);
}

int metadata_collect(const struct cloud *cl, struct metadata_view *v)
{
	int bad = 0;

	memset(v, 0, sizeof *v);
	v->r_self = cloud_self(cl, &v->self);
	v->r_peers = cloud_peers(cl, v->peers, METADATA_PEERS_MAX, &v->n_peers);
	v->r_lb = cloud_lb_endpoint(cl, v->lb, sizeof v->lb);
	v->r_uid = cloud_uid(cl, v->uid, sizeof v->uid);
	v->r_hash = cloud_init_secret_hash(cl, v->hash, sizeof v->hash);
	if (v->r_lb == 0)
		join_endpoint(v->join, &v->n_join, v->lb, METADATA_JOIN_PORT);
	for (int i = 0; v->r_peers == 0 && i < v->n_peers; i++)
		if (v->peers[i].control_plane)
			join_endpoint(v->join, &v->n_join, v->peers[i].vpc_ip, METADATA_JOIN_PORT);
	/* what the cloud cannot say without its API is no failure of the command */
	int r[] = {v->r_self, v->r_peers, v->r_lb, v->r_uid, v->r_hash};
	for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
		if (r[i] < 0 && r[i] != -EOPNOTSUPP)
			bad = r[i];
	return v->r_self < 0 ? v->r_self : bad;
}

void metadata_print_json(FILE *f, const struct metadata_view *v)
{
	char ep[METADATA_HOST_MAX + 8];

	fputs("{\"self\":", f);
	if (v->r_self == 0)
		json_instance(f, &v->self);
	else
		fputs("null", f);
	fputs(",\"controlPlanes\":", f);
	if (v->r_peers == 0) {
		int k = 0;

		fputc('[', f);
		for (int i = 0; i < v->n_peers; i++)
			if (v->peers[i].control_plane) {
				if (k++)
					fputc(',', f);
				json_instance(f, &v->peers[i]);
			}
		fputc(']', f);
	} else {
		fputs("null", f);
	}
	snprintf(ep, sizeof ep, strchr(v->lb, ':') ? "[%s]:%d" : "%s:%d", v->lb, METADATA_LB_PORT);
	json_opt(f, "endpoint", v->r_lb == 0, ep);
	fputs(",\"joinEndpoints\":[", f);
	for (int i = 0; i < v->n_join; i++) {
		if (i)
			fputc(',', f);
		json_str(f, v->join[i]);
	}
	fputc(']', f);
	json_opt(f, "uid", v->r_uid == 0, v->uid);
	json_opt(f, "initSecretHash", v->r_hash == 0, v->hash);
	fputs("}\n", f);
	fflush(f);
}
