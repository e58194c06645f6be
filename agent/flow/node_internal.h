/* The node's parts (node.c, node_round.c, node_loop.c, node_ops.c) and what they share: the
 * node's state, the one poll loop's owners, and the PID-1-versus-host operations. */
#ifndef CONSTEL_NODE_INTERNAL_H
#define CONSTEL_NODE_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"
#include "kube/kube.h"
#include "node.h"

#define NODE_SV_SLOTS 8

enum won { WON_NONE, WON_JOIN, WON_INIT, WON_REJOIN, WON_RECOVER };

struct node;

/* What differs between PID 1 and host mode, in one place. */
struct node_ops {
	const char *name;
	/* the state filesystem of a new disk: mkfs + mount, or an emptied folder */
	int (*state_fs_new)(struct node *n);
	/* the state filesystem of an unlocked disk: mount, or nothing */
	int (*state_fs_mount)(struct node *n);
	/* the real root opened (dm-verity checked) and mounted, before the state disk is
	 * touched or a key asked for; or nothing */
	int (*open_root)(struct node *n);
	/* §4: the real root with the state disk's folders, or symlinks in the root folder */
	int (*switch_root)(struct node *n);
	/* the kernel's hostname (PID 1 only) */
	int (*set_hostname)(const char *name);
	/* containerd and kubelet under the supervisor (PID 1 only) */
	void (*start_services)(struct node *n);
	/* the end after a fatal error: reboot (PID 1; never returns) or return (host) */
	void (*end)(struct node *n, int sig);
};
extern const struct node_ops node_pid1_ops, node_host_ops;

struct node {
	const struct node_config *c;
	const struct node_ops *ops;
	char state[PATH_MAX]; /* the state filesystem: <root>/run/state */
	struct disk disk;
	struct cloud cloud; /* constel.csp's, chosen once */
	int ready;	    /* the cloud's first-boot chore done (Azure: Ready reported) */
	struct md_instance self;
	char lb_host[128], kube_name[64];
	struct ssh_key ssh;
	struct node_lock lock;
	/* the supervisor: PID 1's (node_config.sv) or our own (host mode) */
	struct supervisor *sv, own_sv;
	struct sv_child sv_slots[NODE_SV_SLOTS];
	int sig; /* the shutdown signal that ended the node's wait */
	/* the one poll loop: serve_run's extra descriptor is an epoll set of our owners */
	int epfd;
	struct server srv;
	struct serve_params sp;
	struct grpc_method method;
	struct init_server *init;
	int init_fd; /* the init server's kubeadm pipe, while in the epoll set */
	int dhcp_fd; /* the DHCP renewal's socket, while in the epoll set */
	struct recover_server rec;
	char listen[96];
	/* the client round running in a supervised child (node_round.c) */
	struct sv_child *round;
	int round_fd;
	uint8_t *rbuf;
	size_t rlen;
	int64_t next_round;
	int rounds, gave_up;
	int rejoin; /* initialized disk: rejoin instead of join */
	enum won won;
	struct ticket *ticket;
	char kubelet_key[512];
	size_t kubelet_key_len;
	uint8_t disk_key[32], msecret[32];
	char hash[128];
	int init_ok;
	/* the first boot's wipe in a supervised child (node_wipe.c) */
	struct sv_child *wipe;
	int wipe_fd, wipe_pct, wipe_ended, mkfs_ended;
	int wipe_state; /* 0 running or none, 1 ended well, -EIO failed */
	int disk_ready; /* 1 formatted, open and mounted; -1 failed for good */
	int64_t wipe_t0, wipe_bound_ms;
	char wipe_buf[64];
	size_t wipe_len;
};

/* ---- the poll loop (node_loop.c) ---- */
enum node_owner { OWN_SV = 1, OWN_ROUND, OWN_INIT, OWN_DHCP };
int node_loop_open(struct node *n);
void node_loop_close(struct node *n);
/* fd into (on) or out of the epoll set, for owner */
int node_loop_watch(struct node *n, int fd, enum node_owner owner, int on);
/* serve_run's hooks: the owners' events, the supervisor, the next round */
void node_loop_ready(void *ctx, short revents);
int node_loop_timeout(void *ctx);
/* Waits up to ms with only the supervisor (after the race). The shutdown signal, or 0. */
int node_wait(struct node *n, int ms);

/* ---- the join and rejoin rounds (node_round.c) ---- */
void round_start(struct node *n);
void round_ready(struct node *n);
/* Stops a running round (Init or Recover won), wiping what it sent. */
void round_kill(struct node *n);
/* Frees the supervisor's slot of a round that has ended. */
void round_reap(struct node *n);

/* ---- the first boot's wipe and mke2fs (node_wipe.c) ---- */
/* After disk_format_header: the wipe (constel.disk-wipe=full) and mke2fs in a supervised
 * child, reporting on a pipe. */
int wipe_start(struct node *n);
/* In the poll loop: the child's reports; at its end the disk is made ready, a failure stops
 * the race before the lock. */
void wipe_turn(struct node *n);
/* What needs the disk calls this first: waits (bounded) for the child's end, then token 0,
 * the mapping, the mount and the SSH host key. 0, or < 0 after one line. */
int node_disk_ready(struct node *n);
void wipe_kill(struct node *n);

/* ---- node.c ---- */
int node_mkdir_for(const char *path, mode_t mode);

#endif
