/* The agent as /init (ARCHITECTURE.md "The boot, as one path"): early mounts, logging to the
 * console and /dev/kmsg, the kernel command line, the initrd's kernel modules, entropy, the
 * network, then the node's flow (agent/flow/node.c), the boot timeline, and after the
 * handover a small supervisor (containerd, kubelet) until SIGTERM, SIGINT or SIGPWR shuts the
 * node down. PID 1 never returns: on a fatal error it reboots. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/boot.h"
#include "cli.h"
#include "flow/node.h"
#include "net/net.h"
#include "pid1.h"

#define KUBELET	   "/run/state/bin/kubelet"
#define CONTAINERD "/usr/bin/containerd"

static const char *const kubelet_argv[] = {
    KUBELET,
    "--config=/var/lib/kubelet/config.yaml",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
    NULL,
};
static const char *const containerd_argv[] = {CONTAINERD, NULL};
static const char *const child_env[] = {
    "PATH=/run/state/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    NULL,
};

struct pid1 {
	struct supervisor sv;
	struct sv_child children[2];
	int started;
};

static int exists(const char *path)
{
	return access(path, X_OK) == 0;
}

/* containerd (when the image has it) and kubelet, restarted with back-off. */
static void start_services(void *ctx)
{
	struct pid1 *p = ctx;

	if (p->started)
		return;
	p->started = 1;
	p->sv.n = 0;
	if (exists(CONTAINERD))
		p->children[p->sv.n++] = (struct sv_child){.name = "containerd",
							   .argv = containerd_argv,
							   .envp = child_env,
							   .policy = SV_RESTART};
	p->children[p->sv.n++] = (struct sv_child){
	    .name = "kubelet", .argv = kubelet_argv, .envp = child_env, .policy = SV_RESTART};
	p->sv.children = p->children;
	sv_start_all(&p->sv);
}

static void read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read_full(fd, buf, cap - 1) : 0;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* A fatal error before the node's flow could run: say it, wait, reboot. */
static void die(int delay_s, const char *why)
{
	log_error("fatal: %s; rebooting in %d s", why, delay_s);
	sleep((unsigned)delay_s);
	boot_links_down();
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static struct tcti_spec tpm; /* the node's TPM, for the issuer and the node lock */

int pid1_main(void)
{
	static char cmdline[4096], arena[4096];
	static struct pid1 p;
	struct node_config cfg;
	struct ip_config ic;
	char err[256];
	int r, sig;

	timeline_start("mounts");
	r = boot_early_mounts();
	log_open_kmsg("/dev/kmsg");
	if (r)
		log_warn("boot: %d early mounts failed", r);
	umask(022);
	read_cmdline(cmdline, sizeof cmdline);
	node_config_defaults(&cfg);
	if (node_config_cmdline(&cfg, cmdline, arena, sizeof arena, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	log_set_level(cfg.log_level);
	log_info("constel-agent starting as PID 1 (csp %s, attestation %s)", cfg.csp, cfg.variant);
	timeline_mark("modules");
	if ((r = modules_load_list("/etc/modules.list")) > 0)
		log_warn("boot: %d kernel modules did not load", r);
	timeline_mark("entropy");
	if (boot_entropy_wait(60000) < 0)
		die(cfg.reboot_delay_s, "the kernel's random pool is not ready");
	timeline_mark("network");
	if (ip_config_parse(cfg.ip_param ? cfg.ip_param : "dhcp", &ic, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	mkdir("/etc", 0755);
	if (net_up(&ic, "/etc/resolv.conf") < 0)
		die(cfg.reboot_delay_s, "the network did not come up");
	if (tcti_spec_parse("device:/dev/tpmrm0", &tpm, err, sizeof err) < 0 ||
	    cli_issuer(cfg.variant, &tpm, &cfg.issuer, &cfg.tpm, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	cfg.pid1 = 1;
	cfg.before_kubeadm = start_services;
	cfg.hook_ctx = &p;
	p.sv.stop_timeout_ms = 10000;
	r = node_run(&cfg); /* a fatal error reboots inside */
	if (r < 0)
		die(cfg.reboot_delay_s, "the node flow ended without a result");
	timeline_mark("done");
	timeline_write(cfg.timeline_path);
	if (cfg.init) {
		char *const argv[] = {(char *)cfg.init, NULL};

		log_info("handing PID 1 to %s", cfg.init);
		execv(cfg.init, argv);
		die(cfg.reboot_delay_s, "constel.init could not be executed");
	}
	start_services(&p);
	sig = supervise_run(&p.sv, 0);
	log_info("shutting down (signal %d)", sig);
	boot_shutdown(sig, 1);
	for (;;)
		pause();
}
