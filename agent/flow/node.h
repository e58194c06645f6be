/* The node: the boot's one flow (spec §5, §6.4, §14), from the state disk to kubelet. The
 * same code runs as PID 1 (a real disk, mounts, switch_root, reboot) and on a laptop in host
 * mode (--root DIR: the disk is a LUKS2 image file without device-mapper, the state
 * filesystem a folder, no PID-1 duties), against real peers either way. */
#ifndef CONSTEL_NODE_H
#define CONSTEL_NODE_H

#include <stdint.h>

#include "disk/disk.h"
#include "flow/flow.h"

#define NODE_MAX_JOIN	   8
#define NODE_EVENT_LOG_MAX 255

struct node_config {
	const char *root; /* "" on a node; a folder in host mode */
	int pid1;	  /* PID-1 duties: device-mapper, mounts, handover, reboot */
	const char *csp;
	const char *variant; /* constel.attestation-variant (the caller picks the issuer) */
	/* constel.event-log=: the firmware event log a vTPM issuer sends (absolute, at most
	 * NODE_EVENT_LOG_MAX bytes; a test's pre-init step writes one); NULL: securityfs's */
	const char *event_log;
	int log_level;	      /* constel.debug, constel.v */
	const char *ip_param; /* ip= in the kernel's syntax; NULL or "dhcp": DHCP */
	const struct atls_issuer *issuer;
	const struct tcti_spec *tpm; /* NULL: no TPM (the dummy variant) */
	const char *metadata;	     /* NULL: the cloud's (QEMU: "http://10.42.0.1:8080") */
	const char *state_disk;	     /* device or image; NULL: the CSP's (§6.1) */
	/* constel.cloud-api= (one base URL for the cloud's control-plane API, tests) and
	 * constel.cloud-ca= (its anchors; NULL: /etc/ssl/certs/ca-certificates.crt) */
	const char *cloud_api, *cloud_ca;
	enum disk_kdf kdf;
	enum disk_wipe disk_wipe; /* constel.disk-wipe=none (default), full or sync */
	/* overrides of the metadata API */
	char join[NODE_MAX_JOIN][128]; /* JoinService endpoints HOST:PORT */
	int n_join;
	const char *name, *role, *ip; /* role "control-plane" or "worker" */
	const char *init_secret_hash; /* instead of /initsecrethash */
	const char *listen_host;      /* "0.0.0.0" */
	int init_port, recover_port, join_port;
	int interval_ms;	 /* between join/rejoin rounds, 30 s */
	int call_timeout_ms;	 /* each metadata or RPC call, 30 s */
	int kubeadm_timeout_ms;	 /* each kubeadm join attempt, 5 min */
	int init_timeout_ms;	 /* kubeadm init, all phases (the CLI's 1 h); 0: 1 h */
	int download_timeout_ms; /* each component download; 0: 5 min */
	int kubeadm_attempts;	 /* join: 3 */
	int rounds;		 /* give up after this many rounds (tests); 0: never */
	int reboot_delay_s;	 /* after a fatal error, 60 s */
	/* handover (PID 1) */
	const char *real_root, *root_fstype, *verity_roothash, *verity_hashdev;
	uint64_t verity_hashoffset;
	/* roothash= (systemd's): the root's partitions found by GPT type and the hash's UUIDs */
	int root_gpt_auto;
	int verity_lazy;  /* constel.verity.check=mount: no full read of the root before use */
	const char *init; /* constel.init=: exec this in the real root instead of supervising */
	const char *mke2fs;
	const char *kubeadm;	   /* NULL: <root>/run/state/bin/kubeadm (from the components) */
	const char *timeline_path; /* "/run/constel/boot-timeline.json" */
	/* PID 1's supervisor, opened at its first instruction; it gets every child of the node
	 * (rounds, kubeadm, containerd, kubelet) and at least NODE_SV_SLOTS free slots. NULL
	 * (host mode): the node opens its own, which also reads SIGTERM and SIGINT. */
	struct supervisor *sv;
};

/* Defaults of a real node (the constants of §5 and §6). */
void node_config_defaults(struct node_config *c);
/* The constel.* and ip=/root= values of a kernel command line into c (strings point into
 * storage owned by c's caller: buf of len bytes). -EINVAL with one line in err. */
int node_config_cmdline(struct node_config *c, const char *cmdline, char *buf, size_t len,
			char *err, size_t errlen);

/* Runs the node: ARCHITECTURE's steps 3 to 8. PID 1 never returns: after the handover it
 * supervises until a shutdown signal, and every end (a signal, a fatal error) takes
 * boot_end. Host mode returns 0 when the node is up (kubeadm done) or a shutdown signal
 * ended it cleanly (one line), a negative errno after a fatal error was handled. */
int node_run(const struct node_config *c);

#endif
