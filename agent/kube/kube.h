/* The node layer's Kubernetes side: the kubelet CSR, the SSH host key, and (later) kubeadm
 * configuration and components. */
#ifndef CONSTEL_KUBE_H
#define CONSTEL_KUBE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/p256.h"

/* A DER PKCS#10 request for the kubelet (spec §5.4.1); ip may be NULL or "" (no SAN).
 * -EINVAL for an empty name or an unparsable IP. */
int csr_build(const struct p256_key *k, const char *node_name, const char *ip, uint8_t *out,
	      size_t cap, size_t *ret_len);

/* An ed25519 key: sk is the 64 bytes OpenSSH stores (seed || public key). Wipe after use. */
struct ssh_key {
	uint8_t sk[64];
	uint8_t pk[32];
};

#define SSH_PUBKEY_WIRE_LEN 51 /* string "ssh-ed25519", string key32 */

size_t ssh_pubkey_wire(const uint8_t pk[32], uint8_t out[SSH_PUBKEY_WIRE_LEN]);
/* "ssh-ed25519 <base64 wire>\n", an authorized_keys line. */
int ssh_authorized_key(const uint8_t pk[32], char *out, size_t cap);
int ssh_key_generate(struct ssh_key *k);
/* The key of a 32-byte seed (RFC 8032 §5.1.5); 0 or -ENOMEM. */
int ssh_key_from_seed(struct ssh_key *k, const uint8_t seed[32]);
/* The RFC 8032 ed25519 signature of msg by k; 0 or -ENOMEM. */
int ssh_ed25519_sign(const struct ssh_key *k, const uint8_t *msg, size_t len, uint8_t sig[64]);
/* OpenSSH's unencrypted private-key format (PEM armor, openssh-key-v1). */
int ssh_key_format(const struct ssh_key *k, char *out, size_t cap);
int ssh_key_parse(const char *text, size_t len, struct ssh_key *ret, char *err, size_t errlen);
/* Reads the key at path; with create, makes a new one (mode 0600) when the file is missing. */
int ssh_host_key_load(const char *path, int create, struct ssh_key *ret, char *err, size_t errlen);

/* The ed25519 key inside an SSH wire-format public key; -EINVAL for anything else. */
int ssh_pubkey_from_wire(const uint8_t *wire, size_t len, uint8_t pk[32]);
/* An OpenSSH host certificate line ("ssh-ed25519-cert-v01@openssh.com <b64>\n") for host_pk,
 * signed by the ed25519 CA of ca_seed: key ID = principals[0], valid from now on forever. */
int ssh_host_cert_sign(const uint8_t ca_seed[32], const uint8_t host_pk[32],
		       const char *const *principals, size_t n, time_t now, char *out, size_t cap);

/* ---- the kubelet CA (ca.c), the JoinService's side ---- */
#define CSR_IPS_MAX 8

struct csr_info {
	char org[128], cn[300];
	const uint8_t *subject, *spki; /* raw DER inside the parsed request */
	size_t subject_len, spki_len;
	struct {
		uint8_t addr[16];
		size_t len;
	} ips[CSR_IPS_MAX];
	size_t n_ips;
};

/* Parses and checks a kubelet request as the JoinService does; -EINVAL and one line. */
int csr_parse(const uint8_t *der, size_t len, struct csr_info *c, char *err, size_t errlen);

struct ca {
	uint8_t cert[8192];
	size_t cert_len;
	struct {
		const uint8_t *p;
		size_t len;
	} subject_raw;
	uint8_t spki_hash[32]; /* the discovery-token CA hash: SHA-256 of its SPKI */
	int key_type;	       /* BR_KEYTYPE_RSA or BR_KEYTYPE_EC */
	br_rsa_private_key rsa;
	br_ec_private_key ec;
	uint8_t key_buf[2048];
};

/* Loads the CA certificate and key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC). ca_wipe after. */
int ca_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
	    struct ca *ca, char *err, size_t errlen);
void ca_wipe(struct ca *ca);
/* The kubelet certificate for a checked request, as PEM. */
int ca_sign_kubelet(const struct ca *ca, const struct csr_info *c, time_t now, char *pem,
		    size_t cap);

/* ---- tar (tar.c): a streaming reader, parse only ---- */
#define TAR_MAX_FILE (2ull << 30) /* one entry; kubelet is ~100 MiB */
#define TAR_MAX_LONG 4096	  /* GNU long names and PAX headers */
struct tar_entry {
	char type; /* '0' file, '5' directory, '2' symlink, others as in the header */
	unsigned mode;
	uint64_t size;
	char name[1024];
	char link[1024];
};
struct tar_ops { /* each returns < 0 with one line in err to stop */
	int (*entry)(void *ctx, const struct tar_entry *e, char *err, size_t errlen);
	int (*data)(void *ctx, const uint8_t *p, size_t n, char *err, size_t errlen);
	int (*done)(void *ctx, const struct tar_entry *e, char *err, size_t errlen);
};
struct tar_reader {
	const struct tar_ops *ops;
	void *ctx;
	int state, skip, seen_any;
	uint8_t hdr[512];
	size_t hlen;
	uint64_t remaining, pad;
	char long_type;
	char long_buf[TAR_MAX_LONG + 1];
	size_t long_len;
	char gnu_name[1024], gnu_link[1024], pax_path[1024], pax_link[1024];
	struct tar_entry entry;
};
void tar_init(struct tar_reader *t, const struct tar_ops *ops, void *ctx);
/* Feeds n bytes; -EINVAL with one line in err on a malformed archive or a callback's refusal. */
int tar_feed(struct tar_reader *t, const uint8_t *p, size_t n, char *err, size_t errlen);
/* After the last byte: 0 when the archive ended cleanly. */
int tar_finish(struct tar_reader *t, char *err, size_t errlen);

/* ---- components (components.c), spec §9 ---- */
/* Decodes an RFC 2397 data: URL (base64 or percent-encoded) into a new buffer. -EINVAL with
 * one line in err. */
int data_url_decode(const char *url, uint8_t **out, size_t *len, char *err, size_t errlen);
struct component {
	const char *url, *hash, *install_path;
	int extract;
};
/* Fetches (data:, http:// or https:// with redirects; retried on network errors and
 * 408/425/429/502/503/504 within timeout_ms, never on a refused certificate), checks
 * "sha256:<hex>" unless hash is empty, then installs under root ("" for /): a file with mode
 * 0544, or a gzip'd tar extracted without leaving install_path. */
int component_install(const struct component *c, const char *root, int timeout_ms);
/* The same with the CA bundle for https:// named (NULL: <root>/etc/ssl/certs/ca-certificates.crt,
 * the real root's bundle on a node, which component_install uses). */
int component_install_ca(const struct component *c, const char *root, const char *ca_bundle,
			 int timeout_ms);

/* ---- kubeadm (kubeadm.c), spec §10 ---- */
/* Constellation's node name: lowercased, '_' -> '-', an RFC 1123 subdomain; -EINVAL if not. */
int kube_node_name(const char *in, char *out, size_t cap);
struct kubeadm_join {
	const char *node_name;		 /* Self().Name, normalised here */
	const char *provider_name;	 /* the name in qemu:///hostname/<name> */
	const char *node_ip;		 /* VPCIP */
	const char *api_server_endpoint; /* LB host:6443 */
	const char *token, *ca_cert_hash;
	int control_plane;
};
/* JoinConfiguration + KubeletConfiguration YAML into out; its length or -EINVAL. */
int kubeadm_join_yaml(const struct kubeadm_join *j, char *out, size_t cap);

/* ---- kubeadm init configuration and running kubeadm (kubeadm.c, kuberun.c), spec §10 ---- */
struct kubeadm_init {
	const char *node_name;		/* Self().Name, normalised with kube_node_name */
	const char *provider_name;	/* qemu:///hostname/<provider_name> */
	const char *node_ip;		/* VPCIP: advertiseAddress, node-ip and a cert SAN */
	const char *lb_host;		/* controlPlaneEndpoint host (":6443" appended) */
	const char *kubernetes_version; /* "v1.32.9" */
	const char *cluster_name;	/* "" or NULL -> "constellation" */
	const char *service_cidr;	/* "" or NULL: omitted */
	const char *const *cert_sans;	/* the InitRequest's SANs; empty ones skipped */
	size_t n_sans;
	int conformance; /* keeps kube-proxy */
};
/* InitConfiguration + ClusterConfiguration (kubeadm.k8s.io/v1beta3) + KubeletConfiguration
 * (kubelet.config.k8s.io/v1beta1) as one YAML stream; its length, or -EINVAL for a missing
 * field, a control character, an unparsable version or a too small buffer. */
int kubeadm_init_yaml(const struct kubeadm_init *c, char *out, size_t cap);
/* The audit policy written to /etc/kubernetes/audit-policy.yaml (audit.k8s.io/v1). */
extern const char kube_audit_policy[];

/* Runs argv (argv[0] an absolute path) with envp in its own process group, stdin from
 * /dev/null, stdout to out_fd (-1: with stderr into a KUBE_TAIL_MAX tail whose last lines
 * reach the log, tokens redacted). Waits at most timeout_ms, or until stop_fd (> 0) is
 * readable; then SIGTERM to the group, 3 s, SIGKILL to the group. Whatever the child left in
 * its group is killed when it exits. Returns the exit status (0..255), 128+signal,
 * -ETIMEDOUT (deadline) or -ECANCELED (stop_fd), or -errno when it could not start (each of
 * these logged in one line). */
int kube_run(const char *const argv[], const char *const envp[], int out_fd, int timeout_ms);
int kube_run_until(const char *const argv[], const char *const envp[], int out_fd, int timeout_ms,
		   int stop_fd);

/* §5.4 step 9 / §10 join: the audit policy, /etc/kubernetes/manifests recreated empty, the join
 * configuration in a 0600 file under root/run/constel/ (removed afterwards: it holds the
 * token), then "<kubeadm> join -v=5 --config <file>" up to attempts times (<= 0: 3),
 * retry_delay_ms apart, all within timeout_ms (<= 0: 5 min, the Go join client's). root is ""
 * for /. Returns 0 or the last failure as kube_run returns it (-ECANCELED: stop_fd, no
 * retry). */
struct kube_join_run {
	const struct kubeadm_join *j;
	const char *kubeadm; /* absolute path */
	const char *root;
	int attempts, retry_delay_ms, timeout_ms;
	int stop_fd; /* > 0: readable when the node shuts down (e.g. PID 1's signalfd) */
};
int kube_join_run(const struct kube_join_run *r);

/* §10 init: audit policy, "init phase preflight", "init phase certs all", the node's kubelet
 * certificate signed by root/etc/kubernetes/pki/ca.{crt,key} (root/run/state/kubelet/pki/
 * kubelet-client-{crt,key}.pem, 0600), /etc/kubernetes/manifests recreated, "init
 * --skip-token-print --skip-phases=...", then "kubeconfig user --client-name <cluster>-admin
 * --org system:masters", whose output (at most 1 MiB) is written to out_fd: the admin
 * kubeconfig. The kubeadm commands within timeout_ms (<= 0: 1 h, the CLI's bound on Init;
 * component downloads have their own). 0, a kubeadm exit status, or -errno. */
struct kube_init_run {
	const struct kubeadm_init *c;
	const char *kubeadm; /* absolute path */
	const char *root;
	int timeout_ms;
	int stop_fd; /* > 0: readable when the node shuts down */
};
int kube_init_run(const struct kube_init_run *r, int out_fd);

/* ---- kubeadm's output (outtail.c) ---- */
#define KUBE_TAIL_MAX	(64 * 1024) /* the newest bytes of one kubeadm command's output */
#define KUBE_TAIL_LINES 20	    /* of which the last lines reach the log */

/* Replaces, in place, every bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}) with "<token>" and the
 * hex after "--certificate-key" with "<key>"; returns the new length (the rest is wiped). */
size_t kube_output_redact(char *s, size_t len);

struct kube_tail {
	char buf[KUBE_TAIL_MAX];
	size_t len;
	int cut; /* older bytes were dropped: the first line is partial */
};
void kube_tail_init(struct kube_tail *t);
void kube_tail_add(struct kube_tail *t, const char *p, size_t n);
/* Logs the last `lines` lines, redacted, as "<what>| <line>" at level; then wipes the tail. */
void kube_tail_log(struct kube_tail *t, const char *what, int lines, int level);

/* ---- kubelet's command line (kubeletflags.c) ---- */
#define KUBELET_ENV_FILE_MAX  65536 /* bytes of one environment file */
#define KUBELET_WORDS_MAX     256   /* words of one variable */
#define KUBELET_WORD_MAX      4096  /* bytes of one word */
#define KUBELET_ENV_FILES_MAX 4

/* systemd's EnvironmentFile= syntax (KEY=value lines, '#'/';' comments, '...' literal, "..."
 * with \ " ` $ and newline escapes, unquoted backslash escapes, trailing blanks dropped, a
 * later assignment winning): the value of key in text, NUL-terminated in val. 1 found, 0
 * absent, -EINVAL with one line in err for a malformed file (too large, NUL, invalid UTF-8,
 * an invalid variable name, a value of key longer than cap - 1). */
int env_file_value(const char *text, size_t len, const char *key, char *val, size_t cap, char *err,
		   size_t errlen);

struct kubelet_env_text {
	const char *name; /* for the log */
	const char *text; /* NULL: the file is missing */
	size_t len;
};
/* kubelet_argv on file contents already read (the files in systemd's order). */
int kubelet_argv_text(const struct kubelet_env_text *files, size_t n_files, const char *kubelet,
		      char *arena, size_t cap, const char **argv, size_t max_argv);

/* kubelet's argv for root ("" on a node after switch_root; the host-mode root folder
 * otherwise): argv[0] = kubelet, then --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-
 * kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml,
 * the words of KUBELET_KUBEADM_ARGS and KUBELET_EXTRA_ARGS from root/var/lib/kubelet/
 * kubeadm-flags.env and root/etc/default/kubelet (split at whitespace, as systemd expands
 * $VAR), argv[argc] = NULL; the strings live in arena. Returns argc, or -errno (one line)
 * when arena/argv are too small. A missing or malformed env file is not an error (one line
 * when malformed). */
int kubelet_argv(const char *root, const char *kubelet, char *arena, size_t cap, const char **argv,
		 size_t max_argv);

/* kubeadm writes config.yaml, then kubeadm-flags.env, then asks the init system to restart
 * kubelet (TryStartKubelet: systemctl restart). Without systemd, PID 1 does that restart: it
 * takes a stamp of kubelet's files when it composes kubelet's argv, and restarts kubelet when
 * kubelet_stamp_changed says one of them was written, replaced, created or removed since. A
 * kubelet started between kubeadm's two writes would otherwise run without kubeadm's flags. */
struct kubelet_stamp {
	struct {
		int present;
		unsigned long long dev, ino, size;
		long long mtime_s, mtime_ns, ctime_s, ctime_ns;
	} f[3]; /* config.yaml, kubeadm-flags.env, /etc/default/kubelet */
};
void kubelet_stamp_take(const char *root, struct kubelet_stamp *s);
/* 1 when a file changed since s was taken (its name on the log at debug level), else 0. */
int kubelet_stamp_changed(const char *root, const struct kubelet_stamp *s);

#endif
