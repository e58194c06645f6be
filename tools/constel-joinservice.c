/* constel-joinservice: the JoinService of spec §7 for test clusters. aTLS without an issuer,
 * every node validated (qemu-vtpm against a measurements file, reloaded when it changes);
 * IssueJoinTicket and IssueRejoinTicket answered from the cluster KMS (the master secret
 * file), with the kubelet certificate signed by the cluster CA, the SSH host certificate by
 * the emergency SSH CA, a fresh bootstrap token, the CA hash, the control-plane PKI for
 * control planes and the components list. Errors are gRPC Internal, as the real one.
 * Logs never hold a key, token or secret. Exit codes: 0 stopped by SIGTERM/SIGINT,
 * 1 failed, 2 usage. */
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>
#include <sodium.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "deps_versions.h"
#include "flow/flow.h"
#include "join.pb.h"
#include "kube/kube.h"
#include "net/net.h"
#include "components.h"
#include "tool.h"

static const char usage[] =
    "usage: constel-joinservice --listen ADDR --master-secret FILE --measurement-salt FILE\n"
    "         --ca-cert FILE --ca-key FILE --api-endpoint HOST:PORT [--measurements FILE]\n"
    "         [--attestation V] [--pki-dir DIR] [--components FILE]\n"
    "         [--cert-sans A,B,...] [--token TOKEN] [--tdx-prefetch FMSPC-CA,...] [-v N]\n"
    "\n"
    "Serves /join.API/IssueJoinTicket and /join.API/IssueRejoinTicket over aTLS (Constellation's\n"
    "JoinService, port 9090 / NodePort 30090). --measurement-salt holds the cluster's 32-byte\n"
    "salt in hex (constel-init writes it); --pki-dir the 8 control-plane files (ca.key, sa.key,\n"
    "front-proxy-ca.key, etcd/ca.key, ca.crt, sa.pub, front-proxy-ca.crt, etcd/ca.crt);\n"
    "--components a JSON array of {url, hash, install_path, extract}; --token the kubeadm\n"
    "bootstrap token to hand out (default: a fresh random one per ticket, registered nowhere).\n"
    "--tdx-prefetch (azure-tdx without --tdx-collateral): Intel PCS's collateral of these\n"
    "platforms (at most 4, e.g. 50806f000000-platform: the folder names of the TDX cache)\n"
    "into the cache before listening, so that their first join does not wait for PCS;\n"
    "a failed fetch is one warning and the service starts anyway.\n"
    "The measurements file is\n"
    "read again whenever it changes. -v N as the Go JoinService: 2 (default) events such as\n"
    "a new request, 4 general, 6 low-level details (expected measurements); never a key,\n"
    "token or secret. Stops on SIGTERM or SIGINT.\n"
    "Exit codes: 0 stopped, 1 failed (the last line says why), 2 wrong command line.\n";

static const char *const pki_files[] = {"ca.key", "sa.key", "front-proxy-ca.key", "etcd/ca.key",
					"ca.crt", "sa.pub", "front-proxy-ca.crt", "etcd/ca.crt"};

static struct {
	struct kms kms;
	uint8_t salt[32];
	struct ca *ca;
	const char *endpoint, *pki_dir, *sans, *token;
	json_object *components;
	struct tool_attest att; /* att.p.m: the measurements, reloaded */
	struct atls_validator v;
	time_t m_mtime;
	struct server srv;
} js;

static volatile sig_atomic_t stopping;

#define PREFETCH_MAX 4 /* platforms; each fetch is bounded at PCS_TOTAL_MS */

/* --tdx-prefetch LIST: each FMSPC-CA of the comma-separated list fetched into the TDX cache
 * (or found current there), one line each. -EINVAL (one line in err) for a malformed list;
 * a fetch that fails is a warning only: the join of that platform fetches again. */
static int tdx_prefetch(const char *list, char *err, size_t errlen)
{
	const struct tool_attest *a = &js.att;
	struct pcs_opts po = {
	    a->pcs ? a->pcs : PCS_DEFAULT,
	    a->pcs_certs ? a->pcs_certs : PCS_CERTS_DEFAULT,
	    a->tdx_cache ? a->tdx_cache : PCS_CACHE_DEFAULT,
	    a->ca_bundle ? a->ca_bundle : CA_BUNDLE_DEFAULT,
	    a->p.at ? a->p.at : time(NULL),
	};
	char item[32], dir[4096], e[600];
	const char *p = list;
	int n = 0;

	if (strcmp(a->variant, "azure-tdx") || a->collateral)
		return errbuf_set(err, errlen,
				  "--tdx-prefetch: only with --attestation azure-tdx and without "
				  "--tdx-collateral");
	while (*p) {
		size_t len = strcspn(p, ",");
		int fetched, r;
		char *dash;

		if (++n > PREFETCH_MAX || len == 0 || len >= sizeof item)
			return errbuf_set(
			    err, errlen,
			    "--tdx-prefetch: at most %d FMSPC-CA items, comma-separated",
			    PREFETCH_MAX);
		memcpy(item, p, len);
		item[len] = '\0';
		p += len + (p[len] == ',');
		if (!(dash = strchr(item, '-')))
			return errbuf_set(err, errlen, "--tdx-prefetch: '%s' is not FMSPC-CA",
					  item);
		*dash = '\0';
		r = pcs_collateral_key(&po, item, dash + 1, dir, sizeof dir, &fetched, e, sizeof e);
		if (r < 0 && strstr(e, "is not FMSPC-CA"))
			return errbuf_set(err, errlen, "--tdx-prefetch: %s", e);
		if (r < 0)
			log_warn(
			    "TDX collateral of %s-%s not prefetched (its first join fetches it): "
			    "%s",
			    item, dash + 1, e);
		else
			log_info("TDX collateral of %s-%s %s %s", item, dash + 1,
				 fetched ? "fetched from PCS into" : "current in", dir);
	}
	return 0;
}

static void on_signal(int s)
{
	(void)s;
	stopping = 1;
	js.srv.stop = 1;
}

/* The measurements file again when it changed (a broken new version keeps the old one). */
static void reload(void *ctx)
{
	struct stat st;
	struct measurements m;
	char *text, err[200];
	size_t len;

	(void)ctx;
	if (!js.att.mpath || stat(js.att.mpath, &st) < 0 || st.st_mtime == js.m_mtime)
		return;
	if (tool_read_file(js.att.mpath, &text, &len) < 0)
		return;
	if (measurements_parse(text, len, &m, err, sizeof err) == 0) {
		js.att.p.m = m;
		js.m_mtime = st.st_mtime;
		log_info("measurements reloaded from %s", js.att.mpath);
		for (size_t i = 0; i < m.n; i++) {
			char hex[100];

			hex_encode(m.m[i].expected, m.m[i].len, hex, sizeof hex);
			log_debug("expected PCR %d: %s (%s)", m.m[i].pcr, hex,
				  m.m[i].warn_only ? "warn only" : "enforced");
		}
	} else {
		log_warn("keeping the old measurements: %s", err);
	}
	free(text);
}

static void token(char out[24])
{
	static const char a[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t r[22];

	random_bytes(r, sizeof r);
	for (int i = 0; i < 22; i++)
		out[i + (i >= 6)] = a[r[i] % 36];
	out[6] = '.';
	out[23] = '\0';
	secret_wipe(r, sizeof r);
}

/* RFC 1123 label after lowercasing and '_' -> '-' (the JoinService's rule, no dots). */
static int node_name_ok(const char *n)
{
	size_t l = strlen(n);

	if (!l || l > 63)
		return 0;
	for (size_t i = 0; i < l; i++) {
		char c = n[i] >= 'A' && n[i] <= 'Z' ? (char)(n[i] + 32) : n[i] == '_' ? '-' : n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (c == '-' && i && i < l - 1)))
			return 0;
	}
	return 1;
}

static bool put_file_data(pb_ostream_t *os, const pb_field_t *f, void *const *arg)
{
	const char *name = *arg;
	char path[4096], *data;
	size_t len;
	bool ok;

	snprintf(path, sizeof path, "%s/%s", js.pki_dir, name);
	if (tool_read_file(path, &data, &len) < 0)
		return false;
	ok = pb_encode_tag_for_field(os, f) && pb_encode_string(os, (uint8_t *)data, len);
	secret_wipe(data, len);
	free(data);
	return ok;
}

static bool put_files(pb_ostream_t *os, const pb_field_t *f, void *const *arg)
{
	(void)arg;
	for (size_t i = 0; i < sizeof pki_files / sizeof pki_files[0]; i++) {
		join_ControlPlaneFile file = join_ControlPlaneFile_init_zero;

		snprintf(file.name, sizeof file.name, "%s", pki_files[i]);
		file.data.funcs.encode = put_file_data;
		file.data.arg = (void *)pki_files[i];
		if (!pb_encode_tag_for_field(os, f) ||
		    !pb_encode_submessage(os, join_ControlPlaneFile_fields, &file))
			return false;
	}
	return true;
}

static void answer(struct grpc_stream *s, const pb_msgdesc_t *fields, const void *msg)
{
	size_t len;
	uint8_t *buf;
	pb_ostream_t os;

	if (!pb_get_encoded_size(&len, fields, msg) || !(buf = malloc(len ? len : 1))) {
		grpc_stream_finish(s, GRPC_INTERNAL, "encoding the response failed");
		return;
	}
	os = pb_ostream_from_buffer(buf, len);
	if (pb_encode(&os, fields, msg)) {
		grpc_stream_send(s, buf, len);
		grpc_stream_finish(s, GRPC_OK, NULL);
	} else {
		grpc_stream_finish(s, GRPC_INTERNAL, "encoding the response failed (a PKI file?)");
	}
	secret_wipe(buf, len);
	free(buf);
}

static void fail(struct grpc_stream *s, const char *why)
{
	log_warn("IssueJoinTicket: %s", why);
	grpc_stream_finish(s, GRPC_INTERNAL, why);
}

static void issue_join(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	join_IssueJoinTicketRequest *req = calloc(1, sizeof *req);
	join_IssueJoinTicketResponse *resp = calloc(1, sizeof *resp);
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);
	struct csr_info csr;
	uint8_t seed[32], host_pk[32];
	const char *principals[32];
	char err[300], pem[8192], sans[1024], *save, hex[65];
	size_t n = 0;

	(void)ctx;
	if (!req || !resp) {
		fail(s, "out of memory");
		goto out;
	}
	if (!pb_decode(&is, join_IssueJoinTicketRequest_fields, req)) {
		fail(s, "malformed IssueJoinTicketRequest");
		goto out;
	}
	log_info("IssueJoinTicket: disk %s, control plane %d", req->disk_uuid,
		 req->is_control_plane);
	if (!req->disk_uuid[0]) {
		fail(s, "getting key: empty disk UUID");
		goto out;
	}
	if (kms_derive(&js.kms, "measurementSecret", resp->measurement_secret.bytes, 32) < 0 ||
	    kms_disk_key(&js.kms, req->disk_uuid, 0, resp->state_disk_key.bytes) < 0 ||
	    kms_derive(&js.kms, "ca_emergency_ssh", seed, 32) < 0) {
		fail(s, "deriving keys failed");
		goto out;
	}
	resp->measurement_secret.size = resp->state_disk_key.size = 32;
	resp->measurement_salt.size = 32;
	memcpy(resp->measurement_salt.bytes, js.salt, 32);
	if (ssh_pubkey_from_wire(req->host_public_key.bytes, req->host_public_key.size, host_pk) <
	    0) {
		fail(s, "parsing host public key: not an ssh-ed25519 key in wire format");
		goto out;
	}
	for (pb_size_t i = 0; i < req->host_certificate_principals_count && n < 16; i++)
		principals[n++] = req->host_certificate_principals[i];
	snprintf(sans, sizeof sans, "%s", js.sans ? js.sans : "");
	for (char *t = strtok_r(sans, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save))
		principals[n++] = t;
	if (!n) {
		fail(s, "no principals for the host certificate");
		goto out;
	}
	{
		uint8_t ca_pk[32], ca_sk[64];
		char line[200];

		crypto_sign_seed_keypair(ca_pk, ca_sk, seed);
		secret_wipe(ca_sk, sizeof ca_sk);
		ssh_authorized_key(ca_pk, line, sizeof line);
		resp->authorized_ca_public_key.size = (pb_size_t)strlen(line);
		memcpy(resp->authorized_ca_public_key.bytes, line, strlen(line));
	}
	if (ssh_host_cert_sign(seed, host_pk, principals, n, time(NULL),
			       (char *)resp->host_certificate.bytes,
			       sizeof resp->host_certificate.bytes) < 0) {
		fail(s, "signing the host certificate failed");
		goto out;
	}
	resp->host_certificate.size = (pb_size_t)strlen((char *)resp->host_certificate.bytes);
	if (csr_parse(req->certificate_request.bytes, req->certificate_request.size, &csr, err,
		      sizeof err) < 0) {
		fail(s, err);
		goto out;
	}
	if (!node_name_ok(csr.cn + 12)) {
		snprintf(err, sizeof err, "node name '%.64s' is not a DNS label", csr.cn + 12);
		fail(s, err);
		goto out;
	}
	if (ca_sign_kubelet(js.ca, &csr, time(NULL), pem, sizeof pem) < 0 ||
	    strlen(pem) > sizeof resp->kubelet_cert.bytes) {
		fail(s, "signing the kubelet certificate failed");
		goto out;
	}
	resp->kubelet_cert.size = (pb_size_t)strlen(pem);
	memcpy(resp->kubelet_cert.bytes, pem, strlen(pem));
	snprintf(resp->api_server_endpoint, sizeof resp->api_server_endpoint, "%s", js.endpoint);
	if (js.token)
		snprintf(resp->token, sizeof resp->token, "%s", js.token);
	else
		token(resp->token);
	hex_encode(js.ca->spki_hash, 32, hex, sizeof hex);
	snprintf(resp->discovery_token_ca_cert_hash, sizeof resp->discovery_token_ca_cert_hash,
		 "sha256:%s", hex);
	if (req->is_control_plane) {
		if (!js.pki_dir) {
			fail(s, "control plane joins need --pki-dir");
			goto out;
		}
		resp->control_plane_files.funcs.encode = put_files;
	}
	resp->kubernetes_components.funcs.encode = tool_components_encode;
	resp->kubernetes_components.arg = js.components;
	answer(s, join_IssueJoinTicketResponse_fields, resp);
	log_info("IssueJoinTicket: ticket issued for %s", csr.cn + 12);
out:
	secret_wipe(seed, sizeof seed);
	if (resp)
		secret_wipe(resp, sizeof *resp);
	free(req);
	free(resp);
}

static void issue_rejoin(void *ctx, struct grpc_stream *s, const uint8_t *reqbuf, size_t len)
{
	join_IssueRejoinTicketRequest req = join_IssueRejoinTicketRequest_init_zero;
	join_IssueRejoinTicketResponse resp = join_IssueRejoinTicketResponse_init_zero;
	pb_istream_t is = pb_istream_from_buffer(reqbuf, len);

	(void)ctx;
	if (!pb_decode(&is, join_IssueRejoinTicketRequest_fields, &req) || !req.disk_uuid[0]) {
		log_warn("IssueRejoinTicket: malformed request or empty disk UUID");
		grpc_stream_finish(s, GRPC_INTERNAL, "getting key: empty disk UUID");
		return;
	}
	log_info("IssueRejoinTicket: disk %s", req.disk_uuid);
	if (kms_derive(&js.kms, "measurementSecret", resp.measurement_secret.bytes, 32) < 0 ||
	    kms_disk_key(&js.kms, req.disk_uuid, 0, resp.state_disk_key.bytes) < 0) {
		grpc_stream_finish(s, GRPC_INTERNAL, "deriving keys failed");
		return;
	}
	resp.measurement_secret.size = resp.state_disk_key.size = 32;
	answer(s, join_IssueRejoinTicketResponse_fields, &resp);
	secret_wipe(&resp, sizeof resp);
}

static const struct grpc_method methods[] = {
    {"/join.API/IssueJoinTicket", issue_join, NULL},
    {"/join.API/IssueRejoinTicket", issue_rejoin, NULL},
};

int main(int argc, char **argv)
{
	const char *listen = NULL, *ms = NULL, *saltf = NULL, *cacert = NULL, *cakey = NULL,
		   *comps = NULL, *verbosity = "2", *prefetch = NULL;
	struct opt opts[] = {
	    {"listen", &listen, 1},	     {"master-secret", &ms, 1},
	    {"measurement-salt", &saltf, 1}, {"ca-cert", &cacert, 1},
	    {"ca-key", &cakey, 1},	     {"api-endpoint", &js.endpoint, 1},
	    {"pki-dir", &js.pki_dir, 0},     {"components", &comps, 0},
	    {"cert-sans", &js.sans, 0},	     {"v", &verbosity, 0},
	    {"token", &js.token, 0},	     {"tdx-prefetch", &prefetch, 0},
	    TOOL_ATTEST_OPTS(&js.att),	     {NULL, NULL, 0},
	};
	uint8_t key[32], salt[32];
	char err[300], *ct = NULL, *kt = NULL, *st = NULL;
	size_t cl, kl, sl, n;
	int r;

	log_set_program("constel-joinservice");
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs(usage, stdout), tool_attest_usage(stdout), EXIT_OK;
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return printf("constel-joinservice %s\n", CONSTEL_VERSION), EXIT_OK;
	for (int i = 1; i < argc; i++) /* -v N, as the Go services spell it */
		if (!strcmp(argv[i], "-v"))
			argv[i] = "--v";
	if (cli_opts_parse(argc - 1, argv + 1, opts, err, sizeof err) < 0 ||
	    tool_validator(&js.att, &js.v, err, sizeof err) < 0)
		return fprintf(stderr, "constel-joinservice: %s\n", err), EXIT_USAGE;
	if (js.token && (strlen(js.token) != 23 || js.token[6] != '.' ||
			 strspn(js.token, "abcdefghijklmnopqrstuvwxyz0123456789.") != 23))
		return fprintf(stderr,
			       "constel-joinservice: --token: want [a-z0-9]{6}.[a-z0-9]{16}\n"),
		       EXIT_USAGE;
	/* Go's -v scale (the JoinService's): 2 events, 4 general, 6 low-level details. */
	log_set_level(atoi(verbosity) >= 6   ? LOG_DEBUG
		      : atoi(verbosity) >= 2 ? LOG_INFO
					     : LOG_WARN);
	if (strcmp(js.att.variant, "dummy")) {
		js.m_mtime = 0;
		reload(NULL);
	} else {
		js.att.mpath = NULL;
	}
	js.ca = calloc(1, sizeof *js.ca);
	if (!js.ca || master_secret_read(ms, key, salt, err, sizeof err) < 0)
		return log_error("%s", err[0] ? err : "out of memory"), EXIT_FAILURE_RUN;
	js.kms.key = secret_from(key, 32);
	js.kms.salt = secret_from(salt, 32);
	secret_wipe(key, sizeof key);
	secret_wipe(salt, sizeof salt);
	if (tool_read_file(saltf, &st, &sl) < 0 ||
	    hex_decode(st, sl && st[sl - 1] == '\n' ? sl - 1 : sl, js.salt, 32, &n) < 0 || n != 32)
		return log_error("%s: want 32 bytes in hex", saltf), EXIT_FAILURE_RUN;
	free(st);
	if (tool_read_file(cacert, &ct, &cl) < 0 || tool_read_file(cakey, &kt, &kl) < 0 ||
	    ca_load(ct, cl, kt, kl, js.ca, err, sizeof err) < 0)
		return log_error("CA: %s", err[0] ? err : "files unreadable"), EXIT_FAILURE_RUN;
	secret_wipe(kt, kl);
	free(kt);
	free(ct);
	if (comps) {
		if (!(js.components = tool_components_load(comps)))
			return EXIT_FAILURE_RUN;
	}
	if (prefetch && tdx_prefetch(prefetch, err, sizeof err) < 0)
		return fprintf(stderr, "constel-joinservice: %s\n", err), EXIT_USAGE;
	js.srv.lfd = tcp_listen_on(listen, err, sizeof err);
	if (js.srv.lfd < 0)
		return log_error("%s", err), EXIT_FAILURE_RUN;
	js.srv.tls.validators = &js.v;
	js.srv.tls.n_validators = 1;
	js.srv.methods = methods;
	js.srv.n_methods = sizeof methods / sizeof methods[0];
	js.srv.extra_fd = -1;
	js.srv.on_accept = reload;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	log_info("JoinService listening on %s (port %d)", listen, tcp_local_port(js.srv.lfd));
	r = serve_run(&js.srv);
	ca_wipe(js.ca);
	kms_free(&js.kms);
	return r == 0 && stopping ? EXIT_OK : EXIT_FAILURE_RUN;
}
