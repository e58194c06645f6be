/* The flows layer: join, rejoin, init and recovery (spec §5, §6.4). So far they run as host
 * commands (`constel-agent join|rejoin|serve-init|serve-recover`) that speak the real wire
 * and write what they receive to a folder; the disk, the node lock and kubeadm come with the
 * later issues, on the same functions. */
#ifndef CONSTEL_FLOW_H
#define CONSTEL_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "atls/atls.h"
#include "base/base.h"
#include "rpc/rpc.h"

/* ---- the cluster KMS (kms.c), spec §3 ---- */
struct kms {
	struct secret *key, *salt; /* the master secret */
};

/* Parses kms://cluster-kms?key=<b64url>&salt=<b64url> as the Go parser does. */
int kms_parse(const char *uri, struct kms *ret, char *err, size_t errlen);
/* The URI the CLI sends for a 32-byte key and salt. */
int kms_uri(const uint8_t key[32], const uint8_t salt[32], char *out, size_t cap);
/* Only storage://no-store is meaningful for the cluster KMS. */
int kms_storage_check(const char *uri, char *err, size_t errlen);
/* GetDEK: HKDF(master key, master salt, "key-" + id). */
int kms_derive(const struct kms *k, const char *id, void *out, size_t len);
/* The state-disk key for uuid ("key-" + uuid, lowercased when lower is set). */
int kms_disk_key(const struct kms *k, const char *uuid, int lower, uint8_t out[32]);
int cluster_id_derive(const uint8_t measurement_secret[32], const uint8_t *salt, size_t salt_len,
		      uint8_t out[32]);
void kms_free(struct kms *k);

/* The CLI's constellation-mastersecret.json (mastersecret.c): {"key": b64, "salt": b64}. */
int master_secret_write(const char *path, const uint8_t key[32], const uint8_t salt[32]);
int master_secret_read(const char *path, uint8_t key[32], uint8_t salt[32], char *err,
		       size_t errlen);

/* ---- the node lock (lock.c), spec §5.3 ---- */
struct tcti_spec;

struct node_lock {
	int locked;
	const struct tcti_spec *tcti; /* the TPM to mark, NULL when there is none (dummy) */
};

/* At start: PCR 15 of the SHA-256 bank must be zero, or the node must not attest. */
int lock_check_unmarked(const struct tcti_spec *tcti, char *err, size_t errlen);
/* TryLockOnce: 1 when this call took the lock (PCR 15 extended with the cluster ID), 0 when
 * it was already taken, or -errno (after taking it: the caller resets and reboots). */
int lock_try_once(struct node_lock *l, const uint8_t cluster_id[32]);

/* ---- one gRPC call over aTLS (call.c) ---- */
/* Dials endpoint, attests with issuer, makes the unary call within timeout_ms. A failure
 * to connect or handshake comes back as UNAVAILABLE with the reason in result->message. */
int flow_call(const char *endpoint, const struct atls_issuer *issuer, const char *path,
	      const uint8_t *req, size_t len, int timeout_ms, struct grpc_result *result);
/* The same with a whole aTLS configuration (validators), every streamed answer passed to
 * on_message (when set; the result then holds no response), and *established telling
 * whether the aTLS handshake completed (the CLI retries only calls that never got there). */
int flow_call_ex(const char *endpoint, const struct atls_config *cfg, const char *path,
		 const uint8_t *req, size_t len, int timeout_ms,
		 void (*on_message)(void *arg, const uint8_t *msg, size_t len), void *arg,
		 struct grpc_result *result, int *established);

/* ---- a gRPC server over aTLS (serve.c) ---- */
#define SERVE_MAX_CONNS 8

struct server {
	int lfd;
	struct atls_config tls;
	const struct grpc_method *methods;
	size_t n_methods;
	int stop; /* set by a handler: finish the open streams, then return */
	int exit_code;
	/* An extra file descriptor for the poll loop (a child's pipe), or fd -1. */
	int extra_fd;
	short extra_events;
	void (*extra_ready)(void *ctx, short revents);
	void (*on_accept)(void *ctx); /* before each new connection's handshake, when set */
	int (*extra_timeout_ms)(void *ctx);
	void *ctx;
	struct serve_conn {
		int fd;
		struct atls_conn *tls;
		struct grpc_server_conn *rpc;
		int dead;
	} conns[SERVE_MAX_CONNS];
};

/* Serves until a handler sets stop and its streams are done (or 10 s after stop). */
int serve_run(struct server *s);

/* ---- the host commands (join.c, init.c, recover.c) ---- */
struct join_params {
	const char *endpoint, *name, *disk_uuid, *ip, *ssh_key_path, *out_dir;
	int control_plane;
	int timeout_ms;
	const struct atls_issuer *issuer;
	const struct tcti_spec *tpm; /* marked after the join (node lock); NULL: none */
};

int flow_join(const struct join_params *p);
int flow_rejoin(const struct join_params *p);

struct serve_params {
	const char *listen, *init_secret_hash_path, *disk_uuid, *out_dir, *kubeadm_cmd;
	const char *ssh_key_path;
	const struct atls_issuer *issuer;
	const struct tcti_spec *tpm; /* marked when Init locks the node; NULL: none */
	int kubeadm_timeout_ms;
};

int flow_serve_init(const struct serve_params *p);
int flow_serve_recover(const struct serve_params *p);

/* ---- the QEMU metadata API (metadata.c), spec §5.2; base is "http://HOST:PORT" ---- */
struct md_instance {
	char name[64];
	char provider_id[128];
	char vpc_ip[48];
	int control_plane;
};
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

/* Writes data to dir/name (create-exclusive, mode 0600); logs one line on failure. */
int flow_write(const char *dir, const char *name, const void *data, size_t len);

#endif
