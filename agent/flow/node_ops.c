/* What PID 1 does that host mode does not: the state filesystem on /dev/mapper/state, the
 * real root and switch_root, the hostname, containerd and kubelet, the reboot. Host mode
 * (--root DIR) keeps the state filesystem in a folder, points the root folder's /var,
 * /etc/kubernetes, /etc/cni and /opt at it, and returns where a node would reboot. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/net.h"
#include "node_internal.h"

#define KUBELET	   "/run/state/bin/kubelet"
#define CONTAINERD "/usr/bin/containerd"
#define ARGV_MAX   64

/* ---- PID 1 ---- */

static int pid1_state_fs_mount(struct node *n)
{
	int r;

	if ((r = mkdir_parents(n->state, 0755)) < 0)
		return log_err(r, "mkdir %s", n->state);
	if (mount("/dev/mapper/" DISK_MAPPING, n->state, "ext4", 0, NULL) < 0)
		return log_err(-errno, "mounting /dev/mapper/%s at %s", DISK_MAPPING, n->state);
	return 0;
}

static int pid1_state_fs_new(struct node *n)
{
	int r = disk_mkfs_opts(n->c->mke2fs, "/dev/mapper/" DISK_MAPPING, n->disk.no_wipe);

	return r < 0 ? r : pid1_state_fs_mount(n);
}

static int root_given(const struct node_config *c)
{
	return (c->real_root && c->real_root[0]) || c->root_gpt_auto;
}

static int pid1_open_root(struct node *n)
{
	const struct node_config *c = n->c;
	struct boot_root br = {.dev = c->real_root,
			       .fstype = c->root_fstype,
			       .roothash_hex = c->verity_roothash,
			       .hash_dev = c->verity_hashdev,
			       .hash_offset = c->verity_hashoffset,
			       .target = "/sysroot",
			       .gpt_auto = c->root_gpt_auto,
			       .full_check = !c->verity_lazy};
	const char *const run[] = {CONTAINERD, c->init, NULL};
	int r;

	if (!root_given(c))
		return 0;
	/* its disk and file system (and dm-verity), loaded in the background meanwhile */
	(void)modules_wait(c->verity_roothash ? MODULES_VERITY : MODULES_ROOT, MODULES_WAIT_MS);
	if ((r = boot_mount_root(&br)) < 0)
		return r;
	/* without the full read: at least what the handover executes is read before the key */
	if (c->verity_roothash && c->verity_lazy &&
	    (r = boot_root_read_files("/sysroot", run)) < 0) {
		umount2("/sysroot", MNT_DETACH);
		return r;
	}
	return 0;
}

static int pid1_switch_root(struct node *n)
{
	const struct node_config *c = n->c;
	int r;

	/* the last modules (containerd's overlayfs), before the initramfs's files go */
	(void)modules_wait(MODULES_HANDOVER, MODULES_WAIT_MS);
	if (!root_given(c)) {
		log_info("handover: no root= or roothash= given: staying in the initramfs");
		return 0;
	}
	if ((r = boot_bind_state(n->state, "/sysroot")) < 0)
		return r;
	/* the lease's DNS servers for the real root (net/resolv.c); failing is one line */
	(void)resolv_conf_carry("/etc/resolv.conf", "/sysroot", "/run");
	if ((r = boot_switch_root("/sysroot")) < 0)
		return r;
	log_info("handover: switched to the real root%s%s", c->real_root ? " " : "",
		 c->real_root ? c->real_root : "");
	return 0;
}

static int pid1_set_hostname(const char *name)
{
	if (sethostname(name, strlen(name)) < 0)
		return log_err(-errno, "sethostname %s", name);
	return 0;
}

static const char *const containerd_argv[] = {CONTAINERD, NULL};
static const char *const child_env[] = {
    "PATH=/run/state/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    NULL,
};

static struct kubelet_stamp kubelet_files;

/* kubelet's command line as kubeadm's systemd drop-in composes it, afresh at every start:
 * kubeadm writes kubeadm-flags.env while kubelet is being restarted. The stamp of the files
 * it was composed from is taken first, so a write while composing is seen as a change. */
static int kubelet_prepare(struct sv_child *c)
{
	static char arena[8192];
	static const char *argv[ARGV_MAX];
	int r;

	/* the components (kubelet among them) are installed by the kubeadm child meanwhile */
	if (access(KUBELET, X_OK) < 0)
		return -errno;
	kubelet_stamp_take("", &kubelet_files);
	if ((r = kubelet_argv("", KUBELET, arena, sizeof arena, argv, ARGV_MAX)) < 0)
		return r;
	c->argv = argv;
	return 0;
}

/* kubeadm's "systemctl restart kubelet" after it wrote config.yaml and kubeadm-flags.env: a
 * kubelet started between the two writes would run without kubeadm's flags. */
static int kubelet_stale(struct sv_child *c)
{
	(void)c;
	return kubelet_stamp_changed("", &kubelet_files);
}

/* containerd (when the image has it) and kubelet: restarted with back-off; kubelet's capped
 * at 10 s, since it exits until kubeadm has written its config. */
static void pid1_start_services(struct node *n)
{
	struct sv_child containerd = {
	    .name = "containerd", .argv = containerd_argv, .envp = child_env, .policy = SV_RESTART};
	struct sv_child kubelet = {.name = "kubelet",
				   .envp = child_env,
				   .policy = SV_RESTART,
				   .prepare = kubelet_prepare,
				   .stale = kubelet_stale,
				   .backoff_max_ms = 10000};

	if (access(CONTAINERD, X_OK) == 0)
		sv_add(n->sv, &containerd);
	sv_add(n->sv, &kubelet);
}

static void pid1_end(struct node *n, int sig)
{
	disk_close(&n->disk);
	boot_end(n->sv, sig);
}

const struct node_ops node_pid1_ops = {
    "PID 1",	      pid1_state_fs_new, pid1_state_fs_mount, pid1_open_root,
    pid1_switch_root, pid1_set_hostname, pid1_start_services, pid1_end,
};

/* ---- host mode ---- */

static int host_state_fs_mount(struct node *n)
{
	(void)n;
	return 0;
}

/* a new state filesystem: the folder emptied */
static int host_state_fs_new(struct node *n)
{
	int r;

	if (nftw(n->state, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return log_err(-errno, "emptying %s", n->state);
	if ((r = mkdir_parents(n->state, 0755)) < 0)
		return log_err(r, "mkdir %s", n->state);
	return 0;
}

/* host mode has no real root of its own: the root folder is the caller's */
static int host_open_root(struct node *n)
{
	(void)n;
	return 0;
}

static int host_switch_root(struct node *n)
{
	static const char *const map[][2] = {{"/var", "/var"},
					     {"/kubernetes", "/etc/kubernetes"},
					     {"/etccni", "/etc/cni"},
					     {"/opt", "/opt"}};
	char src[PATH_MAX], dst[PATH_MAX];
	int r;

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if ((r = path_in(src, sizeof src, n->state, map[i][0])) < 0 ||
		    (r = mkdir_parents(src, 0755)) < 0 ||
		    (r = path_in(dst, sizeof dst, n->c->root, map[i][1])) < 0 ||
		    (r = node_mkdir_for(dst, 0755)) < 0)
			return r;
		if (symlink(src, dst) < 0 && errno != EEXIST)
			return log_err(-errno, "host mode: symlink %s -> %s", dst, src);
	}
	log_info("handover: host mode: /var, /etc/kubernetes, /etc/cni, /opt of %s point at %s",
		 n->c->root, n->state);
	return 0;
}

static int host_set_hostname(const char *name)
{
	log_info("host mode: the hostname stays; a node would be %s", name);
	return 0;
}

static void host_start_services(struct node *n)
{
	(void)n;
}

static void host_end(struct node *n, int sig)
{
	(void)sig;
	log_error("host mode: a node would %s now", sig == SIGTERM || sig == SIGPWR ? "power off"
						    : n->sig			    ? "reboot"
							     : "reboot after the delay");
}

const struct node_ops node_host_ops = {
    "host",	      host_state_fs_new, host_state_fs_mount, host_open_root,
    host_switch_root, host_set_hostname, host_start_services, host_end,
};
