/* constel-agent: the entry point. As PID 1 (/init in the initramfs) it runs the boot path of
 * ARCHITECTURE.md (pid1.c); otherwise it parses the global options and runs one command. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "pid1.h"
#include "version.h"

static const char usage[] =
    "usage: constel-agent [OPTIONS] COMMAND [ARG...]\n"
    "\n"
    "The Constellation node agent: attests the node over aTLS, receives the state-disk key,\n"
    "opens the LUKS2 state disk and starts Kubernetes. Runs as /init in the initramfs.\n"
    "\n"
    "Commands:\n"
    "  help             show this text\n"
    "  version          show the version of the agent and of every linked dependency\n"
    "  join             one IssueJoinTicket; the ticket is written to a folder\n"
    "  rejoin           one IssueRejoinTicket; the keys are written to a folder\n"
    "  serve-init       serve the init API until one Init succeeded\n"
    "  serve-recover    serve one Recover call\n"
    "  attest           print a vTPM attestation document (a debugging aid)\n"
    "  disk-state DEV   what the boot would do with the state disk DEV: new, not-initialized\n"
    "                   or initialized (and its LUKS UUID); a header that fails the strict\n"
    "                   check is refused (exit 1). Reads a copy of the header only.\n"
    "  node             the whole boot flow in host mode (see below)\n"
    "  install-component  fetch, verify and install one Kubernetes component (spec §9)\n"
    "  metadata         read the QEMU metadata API (self, peers, endpoint, init-secret hash)\n"
    "                   or, with --csp, a cloud's node-local endpoint\n"
    "  state-disk       find the state disk by the cloud's naming (what the boot does)\n"
    "  azure-ready      report Ready (or NotReady) to Azure's wireserver\n"
    "  net-dhcp         bring a link up and configure it from DHCP (what the boot does)\n"
    "  disk-prepare DEV what the boot does with it: formats a new or not-initialized disk\n"
    "                   (LUKS2 with integrity, wiped, open as /dev/mapper/state) and prints\n"
    "                   \"formatted UUID\"; leaves an initialized disk alone and prints\n"
    "                   \"initialized UUID\". Needs device-mapper (root, in the guest).\n"
    "\n"
    "  join --endpoint HOST:PORT --name N --role worker|control-plane --disk-uuid U\n"
    "       [--ip IP] --ssh-host-key FILE --out DIR [--timeout S] [--attestation V]\n"
    "  rejoin --endpoint HOST:PORT --disk-uuid U --out DIR [--timeout S] [--attestation V]\n"
    "  serve-init --listen ADDR --init-secret-hash FILE --disk-uuid U --out DIR\n"
    "       --kubeadm CMD [--kubeadm-timeout S] [--attestation V]\n"
    "  serve-recover --listen ADDR --disk-uuid U --out DIR [--attestation V]\n"
    "  attest --nonce HEX --user-data HEX [--event-log PATH]\n"
    "  metadata [--url http://10.42.0.1:8080] [--csp CSP]\n"
    "  state-disk --csp CSP [--sys DIR] [--dev DIR] [--wait S]\n"
    "       says why of every disk it looks at; the device is the last line\n"
    "  azure-ready --wireserver URL [--not-ready REASON] [--timeout S]\n"
    "  install-component --url data:...|http[s]://... --path /ABS [--hash sha256:HEX]\n"
    "       [--extract true|false] [--root DIR] [--timeout S] [--ca-bundle FILE]\n"
    "       https:// is checked against FILE (default: DIR/etc/ssl/certs/ca-certificates.crt)\n"
    "       a file gets mode 0544; --extract true unpacks a gzip'd tar below --path\n"
    "  net-dhcp [--iface NAME] [--timeout S] [--resolv-conf PATH] [--keep S]\n"
    "       the first Ethernet link unless --iface; --timeout 0 retries forever\n"
    "       (default 60); prints \"LINK ADDR/PREFIX router GW lease S[ mtu M]\"; applies the\n"
    "       MTU (option 26) and option 121/249's routes as the boot does; --keep S: then the\n"
    "       lease kept up (renewed, rebound, asked for again) for S seconds\n"
    "  disk-prepare DEV [--kdf min|constellation] [--mapping NAME]\n"
    "       --kdf: the keyslot PBKDF, argon2id at least cost (min, the default: the\n"
    "       passphrases are 32 random bytes) or the Go disk-mapper's 2 s (constellation)\n"
    "  node --root DIR --state-disk IMAGE [--metadata URL] [--join HOST:PORT,...]\n"
    "       [--name N] [--role worker|control-plane] [--ip IP] [--init-secret-hash FILE]\n"
    "       [--listen-host H] [--init-port P] [--recover-port P] [--interval S]\n"
    "       [--timeout S] [--kubeadm-timeout S] [--init-timeout S] [--rounds N]\n"
    "       [--attestation V] [--kdf K] [--kubeadm PATH] [--dhcp IFACE]\n"
    "       the boot's flow without PID-1 duties: IMAGE is a LUKS2 image file (formatted\n"
    "       when new; no device-mapper), DIR/run/state the state filesystem; the init\n"
    "       server (or, on an initialized image, the recovery server of a control plane)\n"
    "       races the join (rejoin) client; kubeadm is DIR/run/state/bin/kubeadm\n"
    "       (from the components) unless --kubeadm names another.\n"
    "       --listen-host defaults to 127.0.0.1, --rounds 0 retries forever,\n"
    "       --init-timeout (kubeadm init with all its phases) to 3600 s; --dhcp IFACE:\n"
    "       first IFACE configured from DHCP and its lease kept, as PID 1 does\n"
    "\n"
    "  FILE for --ssh-host-key is an OpenSSH ed25519 key (created when missing). Files in DIR\n"
    "  are created with mode 0600 and never overwritten. --timeout defaults to 30 s,\n"
    "  --kubeadm-timeout to 600 s. V is the attestation variant: qemu-vtpm (the default),\n"
    "  another vTPM variant (docs/vtpm.md; the TPM is --tpm) or dummy (tests only); attest\n"
    "  takes --attestation V (default qemu-vtpm) and --imds URL (the metadata server) too.\n"
    "\n"
    "Options:\n"
    "  -v N             log level: -1 debug, 0 info (default), 1 warn, 2 error\n"
    "  --tpm TCTI       TPM transport: device:/dev/tpmrm0 (default) or\n"
    "                   swtpm:host=127.0.0.1,port=2321\n"
    "  -h, --help       show this text\n"
    "  -V, --version    same as the version command\n"
    "\n"
    "Exit codes: 0 success, 1 the command failed (its last line says why),\n"
    "2 wrong command line (nothing was done).\n";

int main(int argc, char **argv)
{
	struct cli cli;
	char err[256];

	log_set_program("constel-agent");
	/* As /init of the initramfs: the boot (the kernel passes no command of ours) */
	if (getpid() == 1)
		return pid1_main();
	if (cli_parse(argc, argv, &cli, err, sizeof err) < 0) {
		fprintf(stderr, "constel-agent: %s\n", err);
		return EXIT_USAGE;
	}
	log_set_level(cli.verbosity);
	if (cli.help || (cli.command && !strcmp(cli.command, "help"))) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (cli.version || (cli.command && !strcmp(cli.command, "version"))) {
		version_print(stdout);
		return EXIT_OK;
	}
	if (!cli.command) {
		fprintf(stderr, "constel-agent: no command given (see --help)\n");
		return EXIT_USAGE;
	}
	if (!strcmp(cli.command, "join") || !strcmp(cli.command, "rejoin"))
		return cmd_join(&cli);
	if (!strcmp(cli.command, "serve-init") || !strcmp(cli.command, "serve-recover"))
		return cmd_serve(&cli);
	if (!strcmp(cli.command, "attest"))
		return cmd_attest(&cli);
	if (!strcmp(cli.command, "disk-state"))
		return cmd_disk_state(&cli);
	if (!strcmp(cli.command, "disk-prepare"))
		return cmd_disk_prepare(&cli);
	if (!strcmp(cli.command, "net-dhcp"))
		return cmd_net_dhcp(&cli);
	if (!strcmp(cli.command, "metadata"))
		return cmd_metadata(&cli);
	if (!strcmp(cli.command, "state-disk"))
		return cmd_state_disk(&cli);
	if (!strcmp(cli.command, "azure-ready"))
		return cmd_azure_ready(&cli);
	if (!strcmp(cli.command, "install-component"))
		return cmd_install_component(&cli);
	if (!strcmp(cli.command, "node"))
		return cmd_node(&cli);
	errbuf_set(err, sizeof err, "unknown command '%.64s' (see --help)", cli.command);
	fprintf(stderr, "constel-agent: %s\n", err);
	return EXIT_USAGE;
}
