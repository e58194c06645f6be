/* The host commands: join, rejoin, serve-init and serve-recover (see usage in main.c). Each
 * parses its own options, then runs the flow function the boot path will use. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attest/attest.h"
#include "attest/vtpm.h"
#include "boot/boot.h"
#include "base/base.h"
#include "cli.h"
#include "cloud/cloud.h"
#include "disk/disk.h"
#include "flow/flow.h"
#include "flow/node.h"
#include "kube/kube.h"
#include "net/net.h"

/* An integer option in lo..hi; unit ("" or " seconds") only names it in the error. */
static int parse_int(const char *s, const char *name, long lo, long hi, const char *unit, int *out,
		     char *err, size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return errbuf_set(err, errlen, "option --%s: '%.32s' is not %ld..%ld%s", name, s,
				  lo, hi, unit);
	*out = (int)v;
	return 0;
}

/* A duration option of 1..hi seconds, in milliseconds. */
static int parse_ms(const char *s, const char *name, long hi, int *ret_ms, char *err, size_t errlen)
{
	int v;

	if (parse_int(s, name, 1, hi, " seconds", &v, err, errlen) < 0)
		return -EINVAL;
	*ret_ms = v * 1000;
	return 0;
}

static int parse_seconds(const char *s, const char *name, int *ret_ms, char *err, size_t errlen)
{
	return parse_ms(s, name, 86400, ret_ms, err, errlen);
}

static struct vtpm_env vtpm_env;
static struct atls_issuer vtpm_issuer_;
static const struct tcti_spec *tcti;

static int pick_issuer(const char *variant, const struct atls_issuer **ret, char *err,
		       size_t errlen)
{
	const struct vtpm_variant *v = vtpm_variant_find(variant);

	if (!strcmp(variant, "dummy")) {
		*ret = &attest_dummy_issuer;
		return 0;
	}
	if (v) {
		vtpm_env_default(&vtpm_env, v);
		vtpm_env.tcti = *tcti;
		vtpm_issuer(&vtpm_issuer_, &vtpm_env);
		*ret = &vtpm_issuer_;
		return 0;
	}
	return errbuf_set(err, errlen, "unknown attestation variant '%.32s' (%s, dummy)", variant,
			  vtpm_variant_names());
}

/* The JoinService's node-name rule (spec §13.11): after lowercasing and '_' -> '-' only
 * [a-z0-9-]. Upper case passes it but splits the CSR's CN from kubeadm's name, so we refuse
 * it too. */
static int node_name_ok(const char *n)
{
	if (!*n || strlen(n) > 63)
		return 0;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '-' ||
		      *n == '_'))
			return 0;
	return 1;
}

static void warn_variant(const struct atls_issuer *issuer)
{
	if (issuer == &attest_dummy_issuer)
		log_warn("attestation variant dummy proves nothing about this machine: for tests "
			 "only");
}

int cli_issuer(const char *variant, const struct tcti_spec *tpm, const struct atls_issuer **issuer,
	       const struct tcti_spec **marked, char *err, size_t errlen)
{
	tcti = tpm;
	if (pick_issuer(variant, issuer, err, errlen) < 0)
		return -EINVAL;
	warn_variant(*issuer);
	*marked = *issuer == &vtpm_issuer_ ? tpm : NULL;
	return 0;
}

int cli_issuer_event_log(const char *path)
{
	if (!vtpm_env.variant)
		return -ENOTSUP;
	vtpm_env.event_log = path;
	return 0;
}

/* The options, then the duration option named tname and the attestation variant, each
 * read after the options set them. */
static int parse_all(int argc, char **argv, struct opt *opts, const char *tname,
		     const char *const *tval, int *ret_ms, const char *const *variant,
		     const struct atls_issuer **ret_issuer, char *err, size_t errlen)
{
	if (cli_opts_parse(argc, argv, opts, err, errlen) < 0 ||
	    parse_seconds(*tval, tname, ret_ms, err, errlen) < 0 ||
	    pick_issuer(*variant, ret_issuer, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

static int usage_error(const char *cmd, const char *err)
{
	fprintf(stderr, "constel-agent %s: %s\n", cmd, err);
	return EXIT_USAGE;
}

int cmd_join(const struct cli *c)
{
	const char *cmd = c->command;
	int argc = c->argc;
	char **argv = c->argv;
	int rejoin = !strcmp(cmd, "rejoin");
	const char *endpoint = NULL, *name = NULL, *role = NULL, *uuid = NULL, *ip = NULL,
		   *ssh = NULL, *out = NULL, *timeout = "30", *variant = "qemu-vtpm";
	struct opt join_opts[] = {
	    {"endpoint", &endpoint, 1},
	    {"name", &name, 1},
	    {"role", &role, 1},
	    {"disk-uuid", &uuid, 1},
	    {"ip", &ip, 0},
	    {"ssh-host-key", &ssh, 1},
	    {"out", &out, 1},
	    {"timeout", &timeout, 0},
	    {"attestation", &variant, 0},
	    {NULL, NULL, 0},
	};
	struct opt rejoin_opts[] = {
	    {"endpoint", &endpoint, 1}, {"disk-uuid", &uuid, 1},      {"out", &out, 1},
	    {"timeout", &timeout, 0},	{"attestation", &variant, 0}, {NULL, NULL, 0},
	};
	struct join_params p = {0};
	char err[256];

	tcti = &c->tpm;
	if (parse_all(argc, argv, rejoin ? rejoin_opts : join_opts, "timeout", &timeout,
		      &p.timeout_ms, &variant, &p.issuer, err, sizeof err) < 0)
		return usage_error(cmd, err);
	if (!rejoin && strcmp(role, "worker") && strcmp(role, "control-plane"))
		return usage_error(cmd, "option --role: worker or control-plane");
	if (!rejoin && !node_name_ok(name))
		return usage_error(cmd,
				   "option --name: the JoinService takes only lowercase letters, "
				   "digits, '-' and '_' (at most 63)");
	warn_variant(p.issuer);
	p.tpm = p.issuer == &vtpm_issuer_ ? &c->tpm : NULL;
	if (p.tpm && lock_check_unmarked(p.tpm, err, sizeof err) < 0) {
		log_error("%s", err);
		return EXIT_FAILURE_RUN;
	}
	p.endpoint = endpoint;
	p.name = name;
	p.disk_uuid = uuid;
	p.ip = ip;
	p.ssh_key_path = ssh;
	p.out_dir = out;
	p.control_plane = role && !strcmp(role, "control-plane");
	return (rejoin ? flow_rejoin(&p) : flow_join(&p)) < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}

int cmd_serve(const struct cli *c)
{
	const char *cmd = c->command;
	int argc = c->argc;
	char **argv = c->argv;
	int init = !strcmp(cmd, "serve-init");
	const char *listen = NULL, *hash = NULL, *uuid = NULL, *out = NULL, *kubeadm = NULL,
		   *timeout = "600", *variant = "qemu-vtpm";
	struct opt init_opts[] = {
	    {"listen", &listen, 1},	  {"init-secret-hash", &hash, 1},
	    {"disk-uuid", &uuid, 1},	  {"out", &out, 1},
	    {"kubeadm", &kubeadm, 1},	  {"kubeadm-timeout", &timeout, 0},
	    {"attestation", &variant, 0}, {NULL, NULL, 0},
	};
	struct opt recover_opts[] = {
	    {"listen", &listen, 1},	  {"disk-uuid", &uuid, 1}, {"out", &out, 1},
	    {"attestation", &variant, 0}, {NULL, NULL, 0},
	};
	struct serve_params p = {0};
	char err[256];

	tcti = &c->tpm;
	if (parse_all(argc, argv, init ? init_opts : recover_opts, "kubeadm-timeout", &timeout,
		      &p.kubeadm_timeout_ms, &variant, &p.issuer, err, sizeof err) < 0)
		return usage_error(cmd, err);
	warn_variant(p.issuer);
	p.tpm = p.issuer == &vtpm_issuer_ ? &c->tpm : NULL;
	if (p.tpm && lock_check_unmarked(p.tpm, err, sizeof err) < 0) {
		log_error("%s", err);
		return EXIT_FAILURE_RUN;
	}
	p.listen = listen;
	p.init_secret_hash_path = hash;
	p.disk_uuid = uuid;
	p.out_dir = out;
	p.kubeadm_cmd = kubeadm;
	return (init ? flow_serve_init(&p) : flow_serve_recover(&p)) < 0 ? EXIT_FAILURE_RUN
									 : EXIT_OK;
}

int cmd_attest(const struct cli *c)
{
	const char *nonce_hex = NULL, *ud_hex = NULL, *ev = QEMU_VTPM_EVENT_LOG,
		   *variant = "qemu-vtpm", *imds = NULL, *sev = NULL, *tsm = NULL;
	struct opt opts[] = {
	    {"nonce", &nonce_hex, 1},	  {"user-data", &ud_hex, 1}, {"event-log", &ev, 0},
	    {"attestation", &variant, 0}, {"imds", &imds, 0},	     {"sev-guest", &sev, 0},
	    {"tsm-report", &tsm, 0},	  {NULL, NULL, 0},
	};
	uint8_t nonce[64], ud[ATLS_USER_DATA_LEN], *doc;
	size_t nonce_len, ud_len, len;
	const struct vtpm_variant *v;
	struct vtpm_env env;
	struct atls_issuer is;
	char err[512];
	int r;

	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (hex_decode(nonce_hex, strlen(nonce_hex), nonce, sizeof nonce, &nonce_len) < 0 ||
	    nonce_len == 0)
		return usage_error(c->command, "option --nonce: 1 to 64 bytes in hex");
	if (hex_decode(ud_hex, strlen(ud_hex), ud, sizeof ud, &ud_len) < 0 || ud_len != sizeof ud)
		return usage_error(c->command, "option --user-data: 32 bytes in hex");
	if (!(v = vtpm_variant_find(variant))) {
		snprintf(err, sizeof err, "unknown attestation variant '%.32s' (%s)", variant,
			 vtpm_variant_names());
		return usage_error(c->command, err);
	}
	vtpm_env_default(&env, v);
	env.tcti = c->tpm;
	env.event_log = ev;
	if (imds)
		env.imds = imds;
	if (sev)
		env.sev_guest = sev;
	if (tsm)
		env.tsm_report = tsm;
	vtpm_issuer(&is, &env);
	doc = malloc(ATLS_DOC_MAX);
	if (!doc)
		return EXIT_FAILURE_RUN;
	r = is.issue(is.ctx, ud, nonce, nonce_len, doc, ATLS_DOC_MAX, &len, err, sizeof err);
	if (r < 0) {
		log_error("attest: %s", err);
		free(doc);
		return EXIT_FAILURE_RUN;
	}
	fwrite(doc, 1, len, stdout);
	putchar('\n');
	free(doc);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILURE_RUN;
}

int cmd_disk_state(const struct cli *c)
{
	static const char *const names[] = {"new", "not-initialized", "initialized"};
	struct luks2_info info = {0};
	char err[256];
	int r;

	if (c->argc != 1 || c->argv[0][0] == '-')
		return usage_error(c->command, "want exactly one DEVICE");
	r = disk_classify(c->argv[0], &info, err, sizeof err); /* reads a copy of the headers */
	if (r < 0) {
		log_error("disk-state: %s: refused: %s", c->argv[0], err);
		return EXIT_FAILURE_RUN;
	}
	printf("%s%s%s\n", names[r], info.uuid[0] ? " " : "", info.uuid);
	return EXIT_OK;
}

int cmd_disk_prepare(const struct cli *c)
{
	const char *kdf_s = "min", *mapping = DISK_MAPPING;
	struct opt opts[] = {
	    {"kdf", &kdf_s, 0},
	    {"mapping", &mapping, 0},
	    {NULL, NULL, 0},
	};
	enum disk_kdf kdf;
	struct disk d;
	char err[256];
	int r;

	if (c->argc < 1 || c->argv[0][0] == '-')
		return usage_error(c->command, "want DEVICE first");
	if (cli_opts_parse(c->argc - 1, c->argv + 1, opts, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (disk_kdf_parse(kdf_s, &kdf) < 0)
		return usage_error(c->command, "option --kdf: min or constellation");
	r = disk_prepare(&d, c->argv[0], mapping, kdf);
	disk_close(&d);
	if (r < 0)
		return EXIT_FAILURE_RUN;
	printf("%s %s\n", r == DISK_INITIALIZED ? "initialized" : "formatted", d.uuid);
	return EXIT_OK;
}

/* Waits (bounded) for the link to report carrier after it was set up. */
static void wait_running(int ifindex)
{
	for (int i = 0; i < 30; i++) {
		struct nl_link links[32];
		int n = nl_links(links, 32);

		for (int k = 0; k < n; k++)
			if (links[k].index == ifindex && (links[k].flags & IFF_RUNNING))
				return;
		usleep(100 * 1000);
	}
}

int cmd_net_dhcp(const struct cli *c)
{
	const char *iface = NULL, *timeout = "60", *resolv = NULL, *keep = "0";
	struct opt opts[] = {
	    {"iface", &iface, 0}, {"timeout", &timeout, 0}, {"resolv-conf", &resolv, 0},
	    {"keep", &keep, 0},	  {NULL, NULL, 0},
	};
	struct nl_link links[32], link = {0};
	struct dhcp_reply l;
	char err[256], a[16], gw[16] = "none";
	int n, r, t, keep_s;

	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0 ||
	    parse_int(timeout, "timeout", 0, 86400, " seconds (0: retry forever)", &t, err,
		      sizeof err) < 0 ||
	    parse_int(keep, "keep", 0, 86400, " seconds", &keep_s, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (iface) {
		n = nl_links(links, 32);
		for (int i = 0; i < n && !link.index; i++)
			if (!strcmp(links[i].name, iface))
				link = links[i];
		if (!link.index || !link.has_mac) {
			log_error("net-dhcp: no Ethernet link named '%.16s'", iface);
			return EXIT_FAILURE_RUN;
		}
	} else if (nl_first_ethernet(&link) < 0) {
		return EXIT_FAILURE_RUN;
	}
	if (nl_link_set(link.index, 1) < 0)
		return EXIT_FAILURE_RUN;
	wait_running(link.index);
	if (dhcp_acquire(link.index, link.name, link.mac, t * 1000, 0, &l) < 0)
		return EXIT_FAILURE_RUN;
	/* as the boot does: MTU, address, option 121's routes (or the router) */
	r = dhcp_lease_apply(link.index, &l);
	if (!r && dhcp_default_router(&l)) {
		uint32_t g = dhcp_default_router(&l);

		inet_ntop(AF_INET, &g, gw, sizeof gw);
	}
	if (!r && resolv && l.dns[0])
		r = resolv_conf_write(resolv, l.dns, "the DHCP lease");
	if (r < 0)
		return EXIT_FAILURE_RUN;
	inet_ntop(AF_INET, &l.yiaddr, a, sizeof a);
	printf("%s %s/%d router %s lease %u", link.name, a, dhcp_prefix(l.mask), gw, l.lease_s);
	if (l.mtu)
		printf(" mtu %u", l.mtu);
	printf("\n");
	fflush(stdout);
	/* --keep S: the lease kept up for S seconds, as PID 1 keeps it (RENEW at T1, REBIND at
	 * T2, a new DISCOVER after a NAK) */
	dhcp_lease_keep(link.index, link.name, link.mac, &l);
	for (uint64_t end = monotonic_ms() + (uint64_t)keep_s * 1000; monotonic_ms() < end;) {
		struct pollfd p = {.fd = dhcp_lease_fd(), .events = POLLIN};
		int w = dhcp_lease_next_ms();
		uint64_t left = end - monotonic_ms();

		if (w < 0 || (uint64_t)w > left)
			w = (int)left;
		poll(&p, p.fd >= 0 ? 1 : 0, w);
		dhcp_lease_handle();
	}
	return EXIT_OK;
}

/* What a cloud's node-local endpoint says of the node: each line, or why not. */
static int cloud_identity(const char *csp, const char *url, const char *api, const char *ca)
{
	struct cloud cl;
	struct md_instance self, peers[32];
	char err[256], uid[128], hash[128], lb[256];
	int r, n = 0;

	if (cloud_select(csp, url, &cl, err, sizeof err) < 0)
		return usage_error("metadata", err);
	cl.api = api;
	cl.ca_bundle = ca;
	if (cloud_self(&cl, &self) < 0)
		return EXIT_FAILURE_RUN;
	printf("self %s %s %s %s\n", self.name,
	       self.no_role	    ? "unknown"
	       : self.control_plane ? "control-plane"
				    : "worker",
	       self.vpc_ip, self.provider_id);
	r = cloud_uid(&cl, uid, sizeof uid);
	printf("uid %s\n", r == 0	      ? uid
			   : r == -EOPNOTSUPP ? "(needs the cloud's API)"
					      : "(failed)");
	if (cloud_peers(&cl, peers, 32, &n) == 0)
		for (int i = 0; i < n; i++)
			printf("peer %s %s %s %s\n", peers[i].name,
			       peers[i].control_plane ? "control-plane" : "worker", peers[i].vpc_ip,
			       peers[i].provider_id);
	r = cloud_lb_endpoint(&cl, lb, sizeof lb);
	printf("endpoint %s\n", r == 0		   ? lb
				: r == -EOPNOTSUPP ? "(needs the cloud's API)"
						   : "(failed)");
	r = cloud_init_secret_hash(&cl, hash, sizeof hash);
	printf("init-secret-hash %.7s%s\n", r == 0 ? hash : "",
	       r == 0		  ? "..."
	       : r == -EOPNOTSUPP ? "(needs the cloud's API)"
				  : "(failed)");
	return r == 0 || r == -EOPNOTSUPP ? EXIT_OK : EXIT_FAILURE_RUN;
}

int cmd_metadata(const struct cli *c)
{
	const char *url = NULL, *imds = NULL, *api = NULL, *ca = NULL, *csp = NULL;
	struct opt opts[] = {
	    {"url", &url, 0}, /* the old name of --imds */
	    {"imds", &imds, 0}, {"api", &api, 0}, {"ca-bundle", &ca, 0},
	    {"csp", &csp, 0},	{NULL, NULL, 0},
	};
	static struct metadata_view v;
	struct md_instance self, peers[16];
	char *argv[32], err[256], endpoint[64], hash[64];
	int n = 0, argc = 0, json = 0, r;

	for (int i = 0; i < c->argc; i++)
		if (!strcmp(c->argv[i], "--json"))
			json = 1;
		else if (argc < 32)
			argv[argc++] = c->argv[i];
	if (argc == 32 || cli_opts_parse(argc, argv, opts, err, sizeof err) < 0)
		return usage_error(c->command, argc == 32 ? "too many arguments" : err);
	if (!imds)
		imds = url;
	if (json) {
		struct cloud cl;

		if (cloud_select(csp ? csp : "qemu", imds, &cl, err, sizeof err) < 0)
			return usage_error(c->command, err);
		cl.api = api;
		cl.ca_bundle = ca;
		r = metadata_collect(&cl, &v);
		metadata_print_json(stdout, &v);
		return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
	}
	if (csp && strcmp(csp, "qemu"))
		return cloud_identity(csp, imds, api, ca);
	if (!imds)
		imds = CLOUD_QEMU_URL;
	if (md_self(imds, &self) < 0 || md_peers(imds, peers, 16, &n) < 0 ||
	    md_endpoint(imds, endpoint, sizeof endpoint) < 0 ||
	    md_init_secret_hash(imds, hash, sizeof hash) < 0)
		return EXIT_FAILURE_RUN;
	printf("self %s %s %s\n", self.name, self.control_plane ? "control-plane" : "worker",
	       self.vpc_ip);
	for (int i = 0; i < n; i++)
		printf("peer %s %s %s\n", peers[i].name,
		       peers[i].control_plane ? "control-plane" : "worker", peers[i].vpc_ip);
	printf("endpoint %s\ninit-secret-hash %.7s...\n", endpoint, hash);
	return EXIT_OK;
}

int cmd_install_component(const struct cli *c)
{
	const char *url = NULL, *hash = "", *path = NULL, *extract = "false", *root = "",
		   *timeout = "300", *ca_bundle = NULL;
	struct opt opts[] = {
	    {"url", &url, 1},
	    {"hash", &hash, 0},
	    {"path", &path, 1},
	    {"extract", &extract, 0},
	    {"root", &root, 0},
	    {"timeout", &timeout, 0},
	    {"ca-bundle", &ca_bundle, 0},
	    {NULL, NULL, 0},
	};
	struct component comp;
	char err[256];
	int t;

	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0 ||
	    parse_int(timeout, "timeout", 1, 3600, " seconds", &t, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (strcmp(extract, "true") && strcmp(extract, "false"))
		return usage_error(c->command, "option --extract: true or false");
	/* without --ca-bundle: the bundle of --root, as on a node */
	comp = (struct component){url, hash, path, !strcmp(extract, "true")};
	return component_install_ca(&comp, root, ca_bundle, t * 1000) < 0 ? EXIT_FAILURE_RUN
									  : EXIT_OK;
}

static int node_dhcp_stop(void *arg)
{
	return sv_handle(arg);
}

/* The whole node flow in host mode: the state disk is a LUKS2 image file (no device-mapper),
 * the state filesystem <root>/run/state, no PID-1 duties. */
int cmd_node(const struct cli *c)
{
	const char *root = NULL, *disk = NULL, *md = NULL, *join = NULL, *name = NULL, *role = NULL,
		   *ip = NULL, *hash_file = NULL, *host = "127.0.0.1", *iport = "9000",
		   *rport = "9999", *interval = "30", *timeout = "30", *ktimeout = "300",
		   *itimeout = "3600", *rounds = "0", *variant = "qemu-vtpm", *kdf = "min",
		   *kubeadm = NULL, *dhcp = NULL;
	struct opt opts[] = {
	    {"kubeadm", &kubeadm, 0},
	    {"root", &root, 1},
	    {"state-disk", &disk, 1},
	    {"metadata", &md, 0},
	    {"join", &join, 0},
	    {"name", &name, 0},
	    {"role", &role, 0},
	    {"ip", &ip, 0},
	    {"init-secret-hash", &hash_file, 0},
	    {"listen-host", &host, 0},
	    {"init-port", &iport, 0},
	    {"recover-port", &rport, 0},
	    {"interval", &interval, 0},
	    {"timeout", &timeout, 0},
	    {"kubeadm-timeout", &ktimeout, 0},
	    {"init-timeout", &itimeout, 0},
	    {"rounds", &rounds, 0},
	    {"attestation", &variant, 0},
	    {"kdf", &kdf, 0},
	    {"dhcp", &dhcp, 0},
	    {NULL, NULL, 0},
	};
	static struct sv_child slots[8];
	static struct supervisor sv = {.children = slots, .cap = 8, .stop_timeout_ms = 5000};
	struct node_config cfg;
	char err[256], hash[128], arena[1024], cmdline[1200];
	int r;

	node_config_defaults(&cfg);
	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0 ||
	    cli_issuer(variant, &c->tpm, &cfg.issuer, &cfg.tpm, err, sizeof err) < 0 ||
	    parse_int(iport, "init-port", 0, 65535, "", &cfg.init_port, err, sizeof err) < 0 ||
	    parse_int(rport, "recover-port", 0, 65535, "", &cfg.recover_port, err, sizeof err) <
		0 ||
	    parse_ms(interval, "interval", 3600, &cfg.interval_ms, err, sizeof err) < 0 ||
	    parse_ms(timeout, "timeout", 3600, &cfg.call_timeout_ms, err, sizeof err) < 0 ||
	    parse_ms(ktimeout, "kubeadm-timeout", 86400, &cfg.kubeadm_timeout_ms, err, sizeof err) <
		0 ||
	    parse_ms(itimeout, "init-timeout", 86400, &cfg.init_timeout_ms, err, sizeof err) < 0 ||
	    parse_int(rounds, "rounds", 0, 1000000, "", &cfg.rounds, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (disk_kdf_parse(kdf, &cfg.kdf) < 0)
		return usage_error(c->command, "option --kdf: min or constellation");
	if (root[0] != '/')
		return usage_error(c->command, "option --root: an absolute folder");
	if (name && !node_name_ok(name))
		return usage_error(c->command,
				   "option --name: lowercase letters, digits, '-', '_'");
	/* the metadata URL, the role and the endpoints are checked as the command line's */
	snprintf(cmdline, sizeof cmdline, "constel.metadata=%s%s%s%s%s", md ? md : CLOUD_QEMU_URL,
		 role ? " constel.role=" : "", role ? role : "", join ? " constel.join=" : "",
		 join ? join : "");
	if (node_config_cmdline(&cfg, cmdline, arena, sizeof arena, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (hash_file) {
		int fd = open(hash_file, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read_full(fd, hash, sizeof hash - 1) : -1;

		if (fd >= 0)
			close(fd);
		if (n <= 0) {
			log_error("node: cannot read %s", hash_file);
			return EXIT_FAILURE_RUN;
		}
		hash[n] = '\0';
		hash[strcspn(hash, "\r\n")] = '\0';
		cfg.init_secret_hash = hash;
	}
	cfg.root = root;
	cfg.state_disk = disk;
	cfg.name = name;
	cfg.ip = ip;
	cfg.listen_host = host;
	cfg.timeline_path = NULL;
	cfg.kubeadm = kubeadm;
	if (dhcp) {
		/* --dhcp IFACE: the link configured and its lease kept as PID 1 does (net_up
		 * with the supervisor's signals read during the wait; the lease then kept in
		 * the node's loop), for tests in a network namespace */
		struct ip_config ic = {.dhcp = 1};

		if (strlen(dhcp) >= sizeof ic.ifname)
			return usage_error(c->command, "option --dhcp: an interface name");
		strcpy(ic.ifname, dhcp);
		if (sv_open(&sv) < 0)
			return EXIT_FAILURE_RUN;
		cfg.sv = &sv;
		dhcp_set_interrupt(sv_fd(&sv), node_dhcp_stop, &sv);
		r = net_up(&ic, NULL);
		dhcp_set_interrupt(-1, NULL, NULL);
		if (r < 0) {
			if (sv.shutdown_signal)
				log_info("node: shutdown signal %d during the DHCP wait",
					 sv.shutdown_signal);
			sv_stop(&sv);
			sv_close(&sv);
			return sv.shutdown_signal ? EXIT_OK : EXIT_FAILURE_RUN;
		}
	}
	r = node_run(&cfg);
	if (cfg.sv) {
		sv_stop(&sv);
		sv_close(&sv);
	}
	return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}

/* The state disk as the boot finds it by the cloud's naming; each disk looked at in a line. */
int cmd_state_disk(const struct cli *c)
{
	const char *csp = NULL, *sys = "/sys", *dev = "/dev", *wait = "0";
	struct opt opts[] = {
	    {"csp", &csp, 1},	{"sys", &sys, 0}, {"dev", &dev, 0},
	    {"wait", &wait, 0}, {NULL, NULL, 0},
	};
	struct cloud cl;
	char err[256], path[PATH_MAX];
	int w;

	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0 ||
	    parse_int(wait, "wait", 0, 3600, " seconds", &w, err, sizeof err) < 0 ||
	    cloud_select(csp, NULL, &cl, err, sizeof err) < 0)
		return usage_error(c->command, err);
	cl.sys = sys;
	cl.dev = dev;
	cl.disk_wait_ms = w * 1000;
	cl.explain = 1;
	if (cloud_state_disk(&cl, path, sizeof path) < 0)
		return EXIT_FAILURE_RUN;
	printf("%s\n", path);
	return EXIT_OK;
}

/* Azure's provisioning report, as the boot sends it. */
int cmd_azure_ready(const struct cli *c)
{
	const char *url = NULL, *why = NULL, *timeout = "10";
	struct opt opts[] = {
	    {"wireserver", &url, 1},
	    {"not-ready", &why, 0},
	    {"timeout", &timeout, 0},
	    {NULL, NULL, 0},
	};
	struct cloud cl;
	char err[256];

	if (cli_opts_parse(c->argc, c->argv, opts, err, sizeof err) < 0 ||
	    cloud_select("azure", NULL, &cl, err, sizeof err) < 0 ||
	    parse_ms(timeout, "timeout", 600, &cl.timeout_ms, err, sizeof err) < 0)
		return usage_error(c->command, err);
	if (strncmp(url, "http://", 7))
		return usage_error(c->command, "option --wireserver: an http:// URL");
	cl.wireserver = url;
	return azure_report_health(&cl, why) < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}
