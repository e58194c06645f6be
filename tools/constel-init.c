/* constel-init: the CLI's init step (spec §5.5) on a workspace folder.
 *   constel-init [--workspace DIR] prepare
 *     makes the master secret (constellation-mastersecret.json), the init secret
 *     (init-secret, hex) and its bcrypt hash (init-secret.bcrypt, for the metadata server)
 *   constel-init [--workspace DIR] apply --endpoint HOST:PORT [--measurements FILE]
 *     [--attestation V] [--kubernetes-version V] [--cluster-name N] [--components FILE]
 *     [--timeout S]
 *     sends InitRequest to the node's init server after validating its attestation, holds the
 *     CLI's stream rules, writes constellation-admin.conf and measurement-salt (hex, for the
 *     JoinService) and prints the cluster ID in hex.
 * Exit codes: 0 done, 1 failed (one line says why), 2 usage. */
#include <pb_decode.h>
#include <pb_encode.h>

#include "deps_versions.h"
#include "flow/flow.h"
#include "components.h"
#include "init.pb.h"
#include "net/net.h"
#include "tool.h"

static const char usage[] =
    "usage: constel-init [--workspace DIR] prepare\n"
    "       constel-init [--workspace DIR] apply --endpoint HOST:PORT [--measurements FILE]\n"
    "                    [--attestation V] [--kubernetes-version V]\n"
    "                    [--cluster-name N] [--components FILE] [--timeout S]\n"
    "\n"
    "prepare writes constellation-mastersecret.json, init-secret and init-secret.bcrypt (for\n"
    "the metadata server) into the workspace (default .). apply initialises the node at\n"
    "HOST:PORT (its init server, port 9000): it checks the node's attestation, sends the master\n"
    "secret, a fresh measurement salt and the init secret, writes constellation-admin.conf and\n"
    "prints the cluster ID. It retries every 30 s only while the node cannot be reached, for\n"
    "at most --timeout seconds (default 3600); a refused attestation is final. --components:\n"
    "the Kubernetes components the node installs, a JSON array of {url, hash, install_path,\n"
    "extract} (as the join service's).\n"
    "Exit codes: 0 done, 1 failed (the last line says why), 2 wrong command line.\n";

static char ws[3000];

static const char *ws_path(const char *name)
{
	static char p[2][4096];
	static int i;

	i ^= 1;
	snprintf(p[i], sizeof p[i], "%s/%s", ws, name);
	return p[i];
}

static int prepare(void)
{
	uint8_t key[32], salt[32], secret[32], bsalt[16];
	char hex[65], hash[BCRYPT_HASH_LEN + 2];
	int r;

	if ((r = mkdir_parents(ws, 0700)) < 0 || (r = random_bytes(key, 32)) < 0 ||
	    (r = random_bytes(salt, 32)) < 0 || (r = random_bytes(secret, 32)) < 0 ||
	    (r = random_bytes(bsalt, 16)) < 0)
		return log_err(r, "prepare: %s", ws);
	hex_encode(secret, 32, hex, sizeof hex);
	r = bcrypt_hash(secret, 32, 10, bsalt, hash); /* the CLI's cost; the raw 32 bytes */
	if (r == 0)
		strcat(hash, "\n");
	if (r < 0 ||
	    (r = master_secret_write(ws_path("constellation-mastersecret.json"), key, salt)) < 0 ||
	    (r = write_file_excl(ws_path("init-secret"), hex, 64, 0600)) < 0 ||
	    (r = write_file_excl(ws_path("init-secret.bcrypt"), hash, strlen(hash), 0644)) < 0)
		log_err(r, "prepare: writing into %s", ws);
	secret_wipe(key, sizeof key);
	secret_wipe(salt, sizeof salt);
	secret_wipe(secret, sizeof secret);
	secret_wipe(hex, sizeof hex);
	if (r == 0)
		printf("Prepared %s: master secret, init secret and its bcrypt hash\n", ws);
	return r < 0 ? EXIT_FAILURE_RUN : EXIT_OK;
}

/* The stream rules of applyinit.go: success or failure first, then only log chunks. */
struct stream {
	int n, failed, done, bad;
	char error[4096], why[160];
	uint8_t cluster_id[32];
	size_t cluster_id_len;
	uint8_t *kubeconfig;
	size_t kubeconfig_len;
	size_t log_bytes;
	FILE *log;
};

/* The bytes of length-delimited field tag in a message (the first occurrence). nanopb
 * resets callbacks inside a oneof's submessage when it decodes it, so the kubeconfig
 * (InitResponse.init_success.kubeconfig) is found by hand. */
static int find_field(const uint8_t *msg, size_t len, uint32_t want, const uint8_t **ret,
		      size_t *ret_len)
{
	pb_istream_t s = pb_istream_from_buffer(msg, len);
	pb_wire_type_t wt;
	uint32_t tag, l;
	bool eof;

	while (pb_decode_tag(&s, &wt, &tag, &eof)) {
		if (tag == want && wt == PB_WT_STRING) {
			if (!pb_decode_varint32(&s, &l) || l > s.bytes_left)
				return -1;
			*ret = msg + (len - s.bytes_left);
			*ret_len = l;
			return 0;
		}
		if (!pb_skip_field(&s, wt))
			return -1;
	}
	return -1;
}

static void on_message(void *arg, const uint8_t *msg, size_t len)
{
	struct stream *st = arg;
	init_InitResponse *m = calloc(1, sizeof *m);
	pb_istream_t is = pb_istream_from_buffer(msg, len);

	if (!m || st->bad)
		goto out;
	if (!pb_decode(&is, init_InitResponse_fields, m)) {
		snprintf(st->why, sizeof st->why, "malformed InitResponse");
		st->bad = 1;
		goto out;
	}
	st->n++;
	if (st->n == 1 && m->which_kind == init_InitResponse_init_success_tag) {
		const uint8_t *sub, *kc;
		size_t sub_len, kc_len;

		st->done = 1;
		memcpy(st->cluster_id, m->kind.init_success.cluster_id.bytes,
		       m->kind.init_success.cluster_id.size);
		st->cluster_id_len = m->kind.init_success.cluster_id.size;
		if (find_field(msg, len, 1, &sub, &sub_len) == 0 &&
		    find_field(sub, sub_len, 1, &kc, &kc_len) == 0 &&
		    (st->kubeconfig = malloc(kc_len ? kc_len : 1))) {
			memcpy(st->kubeconfig, kc, kc_len);
			st->kubeconfig_len = kc_len;
		}
	} else if (st->n == 1 && m->which_kind == init_InitResponse_init_failure_tag) {
		st->failed = 1;
		snprintf(st->error, sizeof st->error, "%s", m->kind.init_failure.error);
	} else if (st->n > 1 && st->failed && m->which_kind == init_InitResponse_log_tag) {
		st->log_bytes += m->kind.log.log.size;
		if (st->log)
			fwrite(m->kind.log.log.bytes, 1, m->kind.log.log.size, st->log);
	} else if (st->n > 1 && st->done) {
		/* after success the CLI stops reading: ignore */
	} else {
		snprintf(st->why, sizeof st->why,
			 st->n == 1 ? "first message is neither success nor failure"
				    : "another success or failure during log collection");
		st->bad = 1;
	}
out:
	free(m);
}

/* The CLI's kubeconfig rule (spec §5.5): exactly one cluster, whose server host becomes the
 * cluster endpoint (the host we initialised), the port kept. Line-based over kubeadm's
 * admin.conf layout. Returns a new buffer or NULL with why set. */
static char *fix_kubeconfig(const uint8_t *in, size_t len, const char *endpoint, char *why,
			    size_t whylen)
{
	char host[256], port[8], *out = malloc(len + 300), *o = out;
	const char *p = (const char *)in, *end = p + len;
	int clusters = 0, servers = 0;

	if (!out)
		return NULL;
	if (hostport_split(endpoint, host, sizeof host, port, sizeof port) < 0) {
		snprintf(why, whylen, "endpoint '%.64s' is not HOST:PORT", endpoint);
		free(out);
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *t = p, *colon;
		size_t l = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);

		while (t < p + l && *t == ' ')
			t++;
		if (!strncmp(t, "- cluster:", 10))
			clusters++;
		if (!strncmp(t, "server: https://", 16) && servers++ == 0 &&
		    (colon = memchr(t + 16, ':', (size_t)(p + l - t - 16)))) {
			/* keep the indentation and the port: "server: https://<endpoint
			 * host><:port...>" */
			memcpy(o, p, (size_t)(t - p) + 16);
			o += (t - p) + 16;
			o += sprintf(o, "%s", host);
			memcpy(o, colon, (size_t)(p + l - colon));
			o += p + l - colon;
		} else {
			memcpy(o, p, l);
			o += l;
		}
		p += l;
	}
	if (clusters != 1) {
		snprintf(why, whylen, "the kubeconfig has %d clusters, want exactly one", clusters);
		free(out);
		return NULL;
	}
	*o = '\0';
	return out;
}

static int apply(int argc, char **argv)
{
	const char *endpoint = NULL, *k8s = "v1.32.9", *name = "constellation", *timeout = "3600",
		   *comps = NULL;
	static struct tool_attest att = {.variant = "qemu-vtpm"};
	struct opt opts[] = {
	    {"endpoint", &endpoint, 1},
	    {"kubernetes-version", &k8s, 0},
	    {"cluster-name", &name, 0},
	    {"timeout", &timeout, 0},
	    {"components", &comps, 0},
	    TOOL_ATTEST_OPTS(&att),
	    {NULL, NULL, 0},
	};
	init_InitRequest *req = calloc(1, sizeof *req);
	struct atls_validator v;
	struct atls_config cfg = {.validators = &v, .n_validators = 1};
	struct stream st = {0};
	json_object *components = NULL;
	uint8_t key[32], salt[32], *buf = NULL;
	char err[300], *secret = NULL, hex[66];
	size_t len, slen;
	pb_ostream_t os;
	int64_t end;
	long t;
	int rc = EXIT_FAILURE_RUN;

	if (!req)
		return EXIT_FAILURE_RUN;
	if (cli_opts_parse(argc, argv, opts, err, sizeof err) < 0 ||
	    tool_validator(&att, &v, err, sizeof err) < 0) {
		fprintf(stderr, "constel-init: %s\n", err);
		free(req);
		return EXIT_USAGE;
	}
	t = strtol(timeout, NULL, 10);
	if (t < 1 || t > 86400) {
		fprintf(stderr, "constel-init: --timeout: 1 to 86400 seconds\n");
		free(req);
		return EXIT_USAGE;
	}
	if (master_secret_read(ws_path("constellation-mastersecret.json"), key, salt, err,
			       sizeof err) < 0 ||
	    tool_read_file(ws_path("init-secret"), &secret, &slen) < 0 || slen < 64 ||
	    hex_decode(secret, 64, req->init_secret.bytes, 32, &len) < 0) {
		log_error("%s", err[0] ? err : "init secret missing: run prepare first");
		goto out;
	}
	if (comps && !(components = tool_components_load(comps)))
		goto out;
	req->kubernetes_components.funcs.encode = tool_components_encode;
	req->kubernetes_components.arg = components;
	kms_uri(key, salt, req->kms_uri, sizeof req->kms_uri);
	strcpy(req->storage_uri, "storage://no-store");
	req->measurement_salt.size = 32;
	if (random_bytes(req->measurement_salt.bytes, 32) < 0)
		goto out;
	snprintf(req->kubernetes_version, sizeof req->kubernetes_version, "%s", k8s);
	snprintf(req->cluster_name, sizeof req->cluster_name, "%s", name);
	req->init_secret.size = 32;
	if (!pb_get_encoded_size(&len, init_InitRequest_fields, req) || !(buf = malloc(len)))
		goto out;
	os = pb_ostream_from_buffer(buf, len);
	if (!pb_encode(&os, init_InitRequest_fields, req))
		goto out;
	st.log = fopen(ws_path("constellation-cluster.log"), "a");
	for (end = rpc_now_ms() + t * 1000;;) {
		struct grpc_result res;
		int est, r = flow_call_ex(endpoint, &cfg, "/init.API/Init", buf, len,
					  (int)(end - rpc_now_ms()), on_message, &st, &res, &est);

		if (r == 0 && res.status == GRPC_UNAVAILABLE && !est && st.n == 0 &&
		    !strncmp(res.message, "dial ", 5) && rpc_now_ms() + 30000 < end) {
			log_info("%s unreachable (%s), retrying in 30 s", endpoint, res.message);
			sleep(30);
			continue;
		}
		if (st.bad) {
			log_error("init: %s", st.why);
		} else if (st.failed) {
			log_error("init failed: %s (%zu bytes of node logs appended to %s)",
				  st.error, st.log_bytes, ws_path("constellation-cluster.log"));
		} else if (st.done && st.cluster_id_len == 32 && st.kubeconfig) {
			char why[160], *kc = fix_kubeconfig(st.kubeconfig, st.kubeconfig_len,
							    endpoint, why, sizeof why);

			if (!kc) {
				log_error("init: %s", why);
				break;
			}
			r = write_file_excl(ws_path("constellation-admin.conf"), kc, strlen(kc),
					    0600);
			free(kc);
			if (r < 0) {
				log_error("writing %s failed", ws_path("constellation-admin.conf"));
				break;
			}
			hex_encode(req->measurement_salt.bytes, 32, hex, sizeof hex);
			strcat(hex, "\n");
			if (write_file_excl(ws_path("measurement-salt"), hex, 65, 0644) < 0) {
				log_error("writing %s failed", ws_path("measurement-salt"));
				break;
			}
			hex_encode(st.cluster_id, 32, hex, sizeof hex);
			printf("Your Constellation cluster was successfully initialized.\n"
			       "Cluster ID  %s\nKubeconfig  %s\n",
			       hex, ws_path("constellation-admin.conf"));
			rc = EXIT_OK;
		} else if (r < 0 || res.status != GRPC_OK) {
			log_error("init: rpc error: code = %d desc = %s",
				  r < 0 ? GRPC_INTERNAL : res.status,
				  r < 0 ? strerror(-r) : res.message);
		} else {
			log_error("init: the stream ended without a result");
		}
		break;
	}
out:
	if (st.log)
		fclose(st.log);
	secret_wipe(key, sizeof key);
	secret_wipe(salt, sizeof salt);
	if (secret) {
		secret_wipe(secret, slen);
		free(secret);
	}
	if (buf) {
		secret_wipe(buf, len);
		free(buf);
	}
	secret_wipe(req, sizeof *req);
	free(req);
	free(st.kubeconfig);
	json_object_put(components);
	return rc;
}

int main(int argc, char **argv)
{
	int i = 1;

	log_set_program("constel-init");
	snprintf(ws, sizeof ws, ".");
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs(usage, stdout), tool_attest_usage(stdout), EXIT_OK;
	if (argc >= 2 && !strcmp(argv[1], "--version"))
		return printf("constel-init %s\n", CONSTEL_VERSION), EXIT_OK;
	if (argc >= 3 && !strcmp(argv[1], "--workspace")) {
		snprintf(ws, sizeof ws, "%s", argv[2]);
		i = 3;
	}
	if (i < argc && !strcmp(argv[i], "prepare") && i + 1 == argc)
		return prepare();
	if (i < argc && !strcmp(argv[i], "apply"))
		return apply(argc - i - 1, argv + i + 1);
	fprintf(stderr, "constel-init: expected prepare or apply (see --help)\n");
	return EXIT_USAGE;
}
