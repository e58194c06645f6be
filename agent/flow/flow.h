/* The flows layer: join, rejoin, init and recovery (spec §5, §6.4). So far they run as host
 * commands (`constel-agent join|rejoin|serve-init|serve-recover`) that speak the real wire
 * and write what they receive to a folder; the disk, the node lock and kubeadm come with the
 * later issues, on the same functions. */
#ifndef CONSTEL_FLOW_H
#define CONSTEL_FLOW_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <stdbool.h>

#include "atls/atls.h"
#include "base/p256.h"
#include "base/base.h"
#include "cloud/cloud.h"
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
#define SERVE_MAX_CONNS 64

struct server {
	int lfd;
	struct atls_config tls;
	const struct grpc_method *methods;
	size_t n_methods;
	int stop; /* set by a handler: finish the open streams, then return */
	/* set by a handler: serve_run returns 0 at once, every connection kept; the next
	 * serve_run goes on with them (the node's handover while the Init stream is open) */
	int pause, running;
	int exit_code;
	/* An extra file descriptor for the poll loop (a child's pipe), or fd -1. */
	int extra_fd;
	short extra_events;
	void (*extra_ready)(void *ctx, short revents);
	void (*on_accept)(void *ctx); /* before each new connection's handshake, when set */
	int (*extra_timeout_ms)(void *ctx);
	void *ctx;
	/* accept() out of descriptors: the listening socket is not polled until paused_until;
	 * the pause doubles from 250 ms to 2 s until an accept succeeds again */
	int64_t accept_paused_until, accept_line_ms, accept_episode_ms;
	int accept_backoff_ms;
	struct serve_conn {
		int fd;
		struct atls_conn *tls;
		struct grpc_server_conn *rpc;
		int dead, hello, admitted; /* hello: its first bytes arrived */
		int64_t accepted_ms, admitted_ms;
		uint8_t addr[16]; /* the peer's address (IPv4 mapped), for the attestation limits */
		/* its share of the rpc memory budget; parent: its source's (mem_sources) */
		struct rpc_mem_account mem;
	} conns[SERVE_MAX_CONNS];
	/* the memory shares of the source addresses with an open connection */
	struct serve_source_mem {
		uint8_t addr[16];
		struct rpc_mem_account mem;
	} mem_sources[SERVE_MAX_CONNS];
	/* costly handler work (the init secret's bcrypt check, the recovery key check): the
	 * handlers' measured time in microseconds, a credit per source and in total; requests
	 * go round robin over the sources (the one served least recently first) */
	struct serve_meter {
		uint8_t addr[16];
		int64_t at_ms; /* last refill */
		int64_t credit_us;
		uint64_t served; /* the order of its last request served (0: never) */
	} cost_global, cost_sources[SERVE_MAX_CONNS];
	uint64_t cost_served;
	int64_t cost_used_us; /* all handler time, for the report */
	/* one bucket per source address (the least recently refilled one is reused), with
	 * the time of its last admission: tokens go round robin over the sources */
	struct serve_bucket {
		uint8_t addr[16];
		int64_t at_ms; /* last refill */
		int64_t admitted_ms;
		int tokens_milli;
	} global, sources[SERVE_MAX_CONNS];
};

/* Serves until a handler sets stop and its streams are done (or 10 s after stop). */
int serve_run(struct server *s);

/* ---- the join ticket (ticket.c), spec §5.4.2 ---- */
#define TICKET_MAX_FILES      16
#define TICKET_MAX_COMPONENTS 32

struct ticket_file {
	char name[257]; /* relative, checked: no "..", no leading '/' */
	uint8_t *data;
	size_t len;
};

/* Components of a ticket or an InitRequest (§9), decoded into owned storage. */
struct component_list {
	struct component_entry {
		char url[8193], hash[81], path[513];
		int extract;
	} * v;
	int n;
};

struct ticket {
	uint8_t disk_key[32], salt[32], secret[32], cluster_id[32];
	char kubelet_cert[8193];
	size_t kubelet_cert_len;
	char api_server_endpoint[257], token[65], ca_hash[81];
	char ssh_ca[513], host_cert[4097];
	struct ticket_file files[TICKET_MAX_FILES];
	int n_files;
	struct component_list comps;
};

/* Decodes an IssueJoinTicketResponse: the three keys must be 32 bytes, file names safe; the
 * cluster ID is derived. -EBADMSG/-EINVAL with one line in err. ticket_free wipes it. */
int ticket_decode(const uint8_t *buf, size_t len, struct ticket *t, char *err, size_t errlen);
void ticket_free(struct ticket *t);
void component_list_free(struct component_list *l);
/* The nanopb decode callback filling a struct component_list (arg). */
struct pb_istream_s;
struct pb_field_iter_s;
bool component_list_decode(struct pb_istream_s *s, const struct pb_field_iter_s *f, void **arg);

/* The IssueJoinTicketRequest of §5.4.1 with a fresh kubelet key (returned in key). */
struct join_request {
	const char *name, *disk_uuid, *ip;
	int control_plane;
	const uint8_t *ssh_pk; /* 32 bytes */
	const char *const *principals;
	size_t n_principals;
};
int join_request_build(const struct join_request *jr, struct p256_key *key, uint8_t *buf,
		       size_t cap, size_t *ret_len);
/* The kubelet key as PEM "EC PRIVATE KEY" (SEC1); its length or -errno. */
int kubelet_key_pem(const struct p256_key *key, char *pem, size_t cap);
/* The principals of §5.4.1: every non-loopback interface address, then the host name; at
 * most max, each in a 64-byte slot. Returns the count. hostname: the name the node will
 * have (the node sets its hostname only at the handover, after the join and the init's
 * certificates: the kernel's until then is "(none)"); NULL: gethostname() (the host
 * commands, which run on a named host). */
int host_principals(const char *hostname, char (*out)[64], int max);

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

/* What an Init request asks for, for the hooks below. */
struct init_info {
	const char *kubernetes_version, *cluster_name, *service_cidr;
	const char *const *sans;
	size_t n_sans;
	int conformance;
	const struct component_list *components;
};

/* The keys of an Init (§5.5 steps 3, 6, 8), valid during the locked hook only. */
struct init_keys {
	const uint8_t *disk_key; /* GetDEK("key-" + lowercased UUID) */
	const uint8_t *measurement_salt, *cluster_id, *ssh_ca_seed;
};

/* How the init server stores what it gets and runs kubeadm. Without hooks (the host command)
 * it writes the keys to out_dir and runs kubeadm_cmd with /bin/sh. */
struct init_hooks {
	/* After the lock: store the keys. < 0 fails the Init for good. */
	int (*locked)(void *ctx, const struct init_keys *k, const struct init_info *info);
	/* In a forked child: the kubeadm init sequence, the kubeconfig written to out_fd; its
	 * return value is the child's exit status. */
	int (*kubeadm)(void *ctx, const struct init_info *info, int out_fd);
	/* After the kubeconfig was sent (or the Init failed past the lock). */
	void (*done)(void *ctx, int ok);
};

/* The recovery server's hook: the keys from a Recover (§6.4), before the reply. */
struct recover_hooks {
	int (*recovered)(void *ctx, const uint8_t disk_key[32], const uint8_t msecret[32]);
};

struct serve_params {
	const char *listen, *init_secret_hash_path, *disk_uuid, *out_dir, *kubeadm_cmd;
	const char *init_secret_hash; /* the hash itself (from metadata) instead of the path */
	const char *ssh_key_path;
	const struct atls_issuer *issuer;
	const struct tcti_spec *tpm; /* marked when Init locks the node; NULL: none */
	int kubeadm_timeout_ms;
	struct node_lock *lock; /* shared with the join client; NULL: the server's own */
	const struct init_hooks *init_hooks;
	const struct recover_hooks *recover_hooks;
	void *hooks_ctx;
	/* The supervisor that owns the kubeadm child (its process group killed at
	 * kubeadm_timeout_ms); NULL: the server forks and reaps it itself. */
	struct supervisor *sv;
	/* After the locked hook the server pauses (serve_run returns) and kubeadm starts only
	 * when the caller calls init_server_start_kubeadm (the node's handover comes first). */
	int pause_after_lock;
};

int flow_serve_init(const struct serve_params *p);
int flow_serve_recover(const struct serve_params *p);

/* The init and recovery services on a server of the caller's (the boot flow races them with
 * its own clients in that server's poll loop). */
struct init_server;
int init_server_new(const struct serve_params *p, struct server *srv, struct init_server **ret);
void init_server_free(struct init_server *st);
extern const char init_method[];
void init_handle(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len);
/* The init server's share of the poll loop: its kubeadm child. */
void init_server_ready(struct init_server *st, short revents);
int init_server_timeout(struct init_server *st);
int init_server_busy(const struct init_server *st); /* kubeadm running */
/* The pipe of the running kubeadm child, for the caller's poll loop (serve_params.sv set:
 * the server does not put it into srv->extra_fd); -1 when none. */
int init_server_fd(const struct init_server *st);
/* pause_after_lock: starts the kubeadm child of the Init that paused the server. 0, or
 * -errno after the Init was answered with the failure. */
int init_server_start_kubeadm(struct init_server *st);
/* Stops a running kubeadm child (the server is shutting down). */
void init_server_abort(struct init_server *st);

struct recover_server {
	struct server *srv;
	const struct serve_params *p;
};
extern const char recover_method[];
void recover_handle(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len);

/* Writes data to dir/name (create-exclusive, mode 0600); logs one line on failure. */
int flow_write(const char *dir, const char *name, const void *data, size_t len);

/* ---- `metadata` (metadata.c): what the boot would use, over the cloud_* calls ---- */
#define METADATA_PEERS_MAX 64
#define METADATA_HOST_MAX  256
#define METADATA_JOIN_PORT 30090 /* Constellation's JoinServiceNodePort */
#define METADATA_LB_PORT   6443	 /* GetLoadBalancerEndpoint's port */
struct metadata_view {
	struct md_instance self, peers[METADATA_PEERS_MAX];
	int n_peers, n_join;
	char lb[METADATA_HOST_MAX], uid[128], hash[128];
	char join[METADATA_PEERS_MAX + 1][METADATA_HOST_MAX + 8]; /* host:30090 */
	int r_self, r_peers, r_lb, r_uid, r_hash;		  /* each call's result */
};
/* Every call once (each failure logged by it): the self's result, else the first failure
 * other than -EOPNOTSUPP (what needs a cloud API this cloud has not), else 0. */
int metadata_collect(const struct cloud *cl, struct metadata_view *v);
/* {"self":{name,providerID,role,vpcIP},"controlPlanes":[...],"endpoint":"host:6443",
 * "joinEndpoints":["host:30090",...],"uid","initSecretHash"}; null for what failed. */
void metadata_print_json(FILE *f, const struct metadata_view *v);

#endif
