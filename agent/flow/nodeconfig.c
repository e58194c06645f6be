/* The node's configuration: the constants of §5 and §6 as defaults, and the kernel command
 * line's constel.* values (plus root=, roothash= and ip=) on top. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "boot/boot.h"
#include "cloud/cloud.h"
#include "net/net.h"
#include "node.h"

void node_config_defaults(struct node_config *c)
{
	memset(c, 0, sizeof *c);
	c->root = "";
	c->csp = "qemu";
	c->variant = "qemu-vtpm";
	c->metadata = NULL; /* the cloud's own endpoint */
	c->listen_host = "0.0.0.0";
	c->init_port = 9000;
	c->recover_port = 9999;
	c->join_port = 30090;
	c->interval_ms = 30000;
	c->call_timeout_ms = 30000;
	c->kubeadm_timeout_ms = 5 * 60 * 1000;
	c->kubeadm_attempts = 3;
	c->reboot_delay_s = 60;
	c->mke2fs = "/sbin/mke2fs";
	c->disk_wipe = DISK_WIPE_NONE; /* the audit holds: docs/wipe.md */
	c->timeline_path = "/run/constel/boot-timeline.json";
}

struct arena {
	char *buf;
	size_t len, used;
};

/* The value of key, copied into the arena; NULL when absent. */
static int get(const char *cmdline, const char *key, struct arena *a, const char **out, char *err,
	       size_t errlen)
{
	int r;

	if (a->used >= a->len)
		return errbuf_set(err, errlen, "command line: too many values");
	r = cmdline_get(cmdline, key, a->buf + a->used, a->len - a->used);
	if (r == -ENAMETOOLONG)
		return errbuf_set(err, errlen, "command line: %s= is too long", key);
	if (r <= 0)
		return 0;
	*out = a->buf + a->used;
	a->used += strlen(*out) + 1;
	return 1;
}

/* A number in lo..hi for key: 1 with it in *out, 0 when the key is absent, or -EINVAL. */
static int get_number(const char *cmdline, const char *key, struct arena *a, long lo, long hi,
		      long *out, char *err, size_t errlen)
{
	const char *v = NULL;
	char *end;
	int r = get(cmdline, key, a, &v, err, errlen);

	if (r <= 0)
		return r;
	errno = 0;
	*out = strtol(v, &end, 10);
	/* digits only (an optional '-' when lo allows it): strtol would skip blanks and a '+' */
	if (!((v[0] >= '0' && v[0] <= '9') ||
	      (lo < 0 && v[0] == '-' && v[1] >= '0' && v[1] <= '9')) ||
	    errno || end == v || *end || *out < lo || *out > hi)
		return errbuf_set(err, errlen, "command line: %s=%.32s is not a number in %ld..%ld",
				  key, v, lo, hi);
	return 1;
}

static int is_hex(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (hex_digit(*s) < 0)
			return 0;
	return 1;
}

int node_config_cmdline(struct node_config *c, const char *cmdline, char *buf, size_t len,
			char *err, size_t errlen)
{
	struct arena a = {buf, len, 0};
	const char *v = NULL;
	long num;
	int r;

#define GET(key, field)                                                     \
	do {                                                                \
		if ((r = get(cmdline, key, &a, &(field), err, errlen)) < 0) \
			return r;                                           \
	} while (0)
	GET("constel.csp", c->csp);
	GET("constel.attestation-variant", c->variant);
	GET("constel.state-disk", c->state_disk);
	GET("constel.metadata", c->metadata);
	GET("constel.cloud-api", c->cloud_api);
	GET("constel.cloud-ca", c->cloud_ca);
	GET("constel.node-name", c->name);
	GET("constel.role", c->role);
	GET("constel.node-ip", c->ip);
	/* stands in for what only a cloud's API serves (AWS: a tag; issue 27) */
	GET("constel.init-secret-hash", c->init_secret_hash);
	if (c->init_secret_hash &&
	    (strlen(c->init_secret_hash) != 60 || strncmp(c->init_secret_hash, "$2", 2)))
		return errbuf_set(err, errlen,
				  "command line: constel.init-secret-hash= is not a bcrypt hash");
	GET("ip", c->ip_param);
	GET("root", c->real_root);
	GET("rootfstype", c->root_fstype);
	GET("constel.verity.roothash", c->verity_roothash);
	GET("constel.verity.hashdev", c->verity_hashdev);
	GET("constel.init", c->init);
	v = NULL;
	GET("roothash", v); /* systemd's and mkosi's: the root's partitions by GPT type and UUID */
	if (v && c->verity_roothash && strcasecmp(v, c->verity_roothash))
		return errbuf_set(err, errlen,
				  "command line: roothash= and constel.verity.roothash= differ");
	if (v && (!is_hex(v) || strlen(v) < 64 || strlen(v) > 128 || strlen(v) % 2))
		return errbuf_set(
		    err, errlen, "command line: roothash=%.32s... is not 32 to 64 bytes of hex", v);
	if (v) {
		c->verity_roothash = v;
		c->root_gpt_auto = 1;
	}
	v = NULL;
	GET("constel.verity.check", v);
	if (v && strcmp(v, "full") && strcmp(v, "mount"))
		return errbuf_set(err, errlen,
				  "command line: constel.verity.check=%.32s is not full or mount",
				  v);
	c->verity_lazy = v && !strcmp(v, "mount");
	if (!cloud_canonical(c->csp))
		return errbuf_set(err, errlen,
				  "command line: constel.csp=%.32s is not one of qemu, "
				  "openstack, stackit, aws, azure, gcp",
				  c->csp);
	c->csp = cloud_canonical(c->csp);
	if (c->metadata && strncmp(c->metadata, "http://", 7))
		return errbuf_set(err, errlen,
				  "command line: constel.metadata=%.64s is not an "
				  "http:// URL",
				  c->metadata);
	if (c->cloud_api && strncmp(c->cloud_api, "http://", 7) &&
	    strncmp(c->cloud_api, "https://", 8))
		return errbuf_set(err, errlen,
				  "command line: constel.cloud-api=%.64s is not an http:// or "
				  "https:// URL",
				  c->cloud_api);
	if (c->role && strcmp(c->role, "control-plane") && strcmp(c->role, "worker"))
		return errbuf_set(err, errlen,
				  "command line: constel.role=%.32s is not "
				  "control-plane or worker",
				  c->role);
	if (c->verity_roothash && (!is_hex(c->verity_roothash) || strlen(c->verity_roothash) % 2 ||
				   strlen(c->verity_roothash) > 128))
		return errbuf_set(err, errlen, "command line: constel.verity.roothash is not hex");
	if (c->init && c->init[0] != '/')
		return errbuf_set(err, errlen, "command line: constel.init=%.64s is not absolute",
				  c->init);
	GET("constel.event-log", c->event_log);
	if (c->event_log && (c->event_log[0] != '/' || strlen(c->event_log) > NODE_EVENT_LOG_MAX))
		return errbuf_set(
		    err, errlen,
		    "command line: constel.event-log=%.64s is not an absolute path of "
		    "at most %d bytes",
		    c->event_log, NODE_EVENT_LOG_MAX);
	if (c->ip_param) {
		struct ip_config ic;

		if ((r = ip_config_parse(c->ip_param, &ic, err, errlen)) < 0)
			return r;
	}
	v = NULL;
	GET("constel.debug", v);
	if (v)
		c->log_level = -1;
	if ((r = get_number(cmdline, "constel.v", &a, -1, 2, &num, err, errlen)) < 0)
		return r;
	if (r)
		c->log_level = (int)num;
	if ((r = get_number(cmdline, "constel.reboot-delay", &a, 0, 3600, &num, err, errlen)) < 0)
		return r;
	if (r)
		c->reboot_delay_s = (int)num;
	/* kubeadm init with all its phases: the CLI waits up to 1 h for the kubeconfig */
	if ((r = get_number(cmdline, "constel.init-timeout", &a, 60, 86400, &num, err, errlen)) < 0)
		return r;
	if (r)
		c->init_timeout_ms = (int)num * 1000;
	if ((r = get_number(cmdline, "constel.verity.hashoffset", &a, 0, 1L << 40, &num, err,
			    errlen)) < 0)
		return r;
	if (r)
		c->verity_hashoffset = (uint64_t)num;
	v = NULL;
	GET("constel.disk-kdf", v);
	if (v && disk_kdf_parse(v, &c->kdf) < 0)
		return errbuf_set(err, errlen,
				  "command line: constel.disk-kdf=%.32s is not min or "
				  "constellation",
				  v);
	v = NULL;
	GET("constel.disk-wipe", v);
	if (v && disk_wipe_parse(v, &c->disk_wipe) < 0)
		return errbuf_set(err, errlen,
				  "command line: constel.disk-wipe=%.32s is not full, sync or none",
				  v);
	v = NULL;
	GET("constel.join", v);
	if (v) {
		c->n_join = 0;
		for (const char *p = v; *p;) {
			const char *e = strchr(p, ',');
			size_t l = e ? (size_t)(e - p) : strlen(p);
			char host[128], port[16];

			if (c->n_join == NODE_MAX_JOIN || l >= sizeof c->join[0])
				return errbuf_set(err, errlen,
						  "command line: constel.join= has too "
						  "many or too long endpoints");
			memcpy(c->join[c->n_join], p, l);
			c->join[c->n_join][l] = '\0';
			if (hostport_split(c->join[c->n_join], host, sizeof host, port,
					   sizeof port) < 0 ||
			    !host[0])
				return errbuf_set(err, errlen,
						  "command line: constel.join: '%.64s' "
						  "is not HOST:PORT",
						  c->join[c->n_join]);
			c->n_join++;
			p += l + (e ? 1 : 0);
		}
	}
#undef GET
	return 0;
}
