/* The agent as /init (ARCHITECTURE.md "The boot, as one path"). From its first instruction
 * PID 1 reads the shutdown signals and SIGCHLD from the supervisor's signalfd and has
 * Ctrl-Alt-Del disabled; then the early mounts, logging to the console and /dev/kmsg, the
 * kernel command line, the initrd's kernel modules, entropy, the network, and the node's flow
 * (agent/flow/node.c), which supervises every child, hands over and stays up. PID 1 never
 * returns: every way out (a shutdown signal, a fatal error) is boot_end: children stopped,
 * sync, unmounts, /dev/mapper/state closed, links down, reboot or power off. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#define SV_SLOTS 12

static struct sv_child slots[SV_SLOTS];
static struct supervisor sv = {.children = slots, .cap = SV_SLOTS, .stop_timeout_ms = 10000};

static void read_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read_full(fd, buf, cap - 1) : 0;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* A fatal error before the node's flow could run: say it, wait (a shutdown signal cuts the
 * wait short and is obeyed), then the one way out. */
static __attribute__((noreturn)) void die(int delay_s, const char *why)
{
	int64_t end = (int64_t)monotonic_ms() + (int64_t)delay_s * 1000;
	int sig = 0;

	log_error("fatal: %s; rebooting in %d s", why, delay_s);
	while (!sig && (int64_t)monotonic_ms() < end) {
		struct pollfd p = {.fd = sv_fd(&sv), .events = POLLIN};

		poll(&p, sv_fd(&sv) >= 0 ? 1 : 0, 1000);
		sig = sv_handle(&sv);
	}
	boot_end(&sv, sig ? sig : SIGINT);
}

/* The endless DHCP wait reads the signalfd: a poweroff during a DHCP outage acts at once. */
static int dhcp_stop(void *arg)
{
	return sv_handle(arg);
}

static struct tcti_spec tpm; /* the node's TPM, for the issuer and the node lock */

int pid1_main(void)
{
	static char cmdline[4096], arena[4096];
	struct node_config cfg;
	struct ip_config ic;
	char err[256];
	int r, early = sv_open(&sv);

	reboot(RB_DISABLE_CAD); /* Ctrl-Alt-Del: SIGINT to us, read from the signalfd */
	timeline_start("mounts");
	r = boot_early_mounts();
	log_open_kmsg("/dev/kmsg");
	if (early < 0)
		log_error("boot: no signalfd: shutdown signals are not read");
	if (r)
		log_warn("boot: %d early mounts failed", r);
	umask(022);
	read_cmdline(cmdline, sizeof cmdline);
	node_config_defaults(&cfg);
	if (node_config_cmdline(&cfg, cmdline, arena, sizeof arena, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	log_set_level(cfg.log_level);
	log_info("constel-agent starting as PID 1 (csp %s, attestation %s)", cfg.csp, cfg.variant);
	/* the NIC's modules now; the others in the background, each waited for before the
	 * phase that needs it (modules_wait in agent/flow/) */
	timeline_mark("modules");
	if ((r = modules_start("/etc/modules.list", cfg.csp)) > 0)
		log_warn("boot: %d kernel modules did not load", r);
	timeline_mark("entropy");
	if (boot_entropy_wait(60000) < 0)
		die(cfg.reboot_delay_s, "the kernel's random pool is not ready");
	timeline_mark("network");
	if (ip_config_parse(cfg.ip_param ? cfg.ip_param : "dhcp", &ic, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	mkdir("/etc", 0755);
	dhcp_set_interrupt(sv_fd(&sv), dhcp_stop, &sv);
	r = net_up(&ic, "/etc/resolv.conf");
	dhcp_set_interrupt(-1, NULL, NULL);
	if (r < 0 && sv.shutdown_signal)
		boot_end(&sv, sv.shutdown_signal);
	if (r < 0)
		die(cfg.reboot_delay_s, "the network did not come up");
	if (tcti_spec_parse("device:/dev/tpmrm0", &tpm, err, sizeof err) < 0 ||
	    cli_issuer(cfg.variant, &tpm, &cfg.issuer, &cfg.tpm, err, sizeof err) < 0)
		die(cfg.reboot_delay_s, err);
	if (cfg.event_log && cli_issuer_event_log(cfg.event_log) < 0)
		log_warn("attest: constel.event-log= ignored: variant %s sends no event log",
			 cfg.variant);
	else if (cfg.event_log)
		log_info("attest: the event log is %s (constel.event-log=)", cfg.event_log);
	cfg.pid1 = 1;
	cfg.sv = &sv;
	node_run(&cfg); /* PID 1 leaves it only through boot_end */
	die(cfg.reboot_delay_s, "the node flow ended without a result");
}
