#!/bin/bash
# make run: the main job. Boots a two-node Constellation test cluster under QEMU (TCG), each node
# a measured boot: UEFI firmware (OVMF, q35, swtpm on tpm-crb) starts the UKI of `make uki`
# (systemd-stub, Debian's kernel, the agent's initrd and command line) from its ESP, and the
# agent runs as PID 1 on its built-in defaults. control-plane-0 is initialised by constel-init
# (the CLI's init), then worker-0 joins through constel-joinservice and rejoins after a reboot.
# Both enforce $BUILD/measurements.json (`make measurements`: PCRs 4, 8, 9, 11, 12, 13 and 15,
# predicted from the UKI before any boot, never read back from one); a refusal ends the run with
# one line and status 1. Prints the measurements, what each node did and each boot's timeline
# from QEMU start: the firmware phase (OVMF, systemd-stub, the kernel's EFI stub), the kernel's
# and the agent's. qemu-tests/lib-node.sh has the set-up (swtpm per node, a root disk with
# Debian's containerd and runc and the doubles of kubeadm and kubelet, components over https, a
# state disk, slirp restrict=on reaching only the tools on 127.0.0.1). For each first boot it
# shows kubelet failing until kubeadm wrote its config, PID 1 restarting it, and the start that
# runs with kubeadm's flags.
# RUN_MEASUREMENTS=FILE enforces another measurements file (the tests' way to see a refusal).
# RUN_CSP=gcp|azure|aws|openstack boots the same cluster as that cloud instead, as root
# (qemu-tests/run-cloud.sh); without it nothing here changes.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -n "${RUN_CSP:-}" ] && exec bash qemu-tests/run-cloud.sh "$RUN_CSP"
. tests/lib.sh
work=$(mktemp -d /tmp/constel-run-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/run-logs}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
# the boots run in subshells: their vm.py (which stops QEMU and swtpm) first, then the rest
trap 'for j in $(jobs -p); do pkill -P "$j"; done 2>/dev/null; cluster_stop; kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
say() { printf '%s\n' "$*"; }
die() { say "make run: $*" >&2; exit 1; }
t_run=$(date +%s)
uki=$BUILD/constel.efi esp=$PWD/$BUILD/constel-esp.img measurements=${RUN_MEASUREMENTS:-$BUILD/measurements.json}
# OVMF's unified 2 MB image, read-only (-bios): the same firmware phase as OVMF_CODE_4M with a
# copy of OVMF_VARS_4M on pflash minus 2.5 s per boot under TCG (README-run.md has the figures);
# its variables live in memory, as nothing of them outlives a boot here anyway.
OVMF=/usr/share/ovmf/OVMF.fd

# timeline BOOT: one boot's timeline from QEMU start (the host's clock, vm.py's stamps): the
# firmware phase up to the kernel (the least difference between a console line's host time and
# the kernel's own stamp on it), the kernel's up to the agent's first line, the agent's phases,
# and kubelet's last start (a start before kubeadm's flags is restarted by PID 1)
timeline() {
	python3 - "$logs/$1.log" <<'PY'
import json, re, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines()
stamped = [(float(m.group(1)), m.group(2)) for m in
           (re.match(r"\[\s*([\d.]+)\] (.*)", l) for l in lines) if m]
def at(pat, last=False):
    hits = [t for t, text in stamped if re.search(pat, text)]
    return (hits[-1] if last else hits[0]) if hits else None
agent, kubelet = at(r"constel-agent starting as PID 1"), at(r"@@DATA kubelet_starts ", True)
option = at(r"BdsDxe: starting Boot")
kernel = [t - float(m.group(1)) for t, text in stamped for m in [re.match(r"\[\s*([\d.]+)\]", text)] if m]
fw = min(kernel) if kernel else None
tl = None
for t, text in stamped:
    if text.startswith("@@DATA timeline "):
        tl = json.loads(text.split(" ", 2)[2])
if agent is None or tl is None:
    print("    (no timeline: the boot did not get that far)")
    sys.exit()
row = lambda what, s, note="": print("      %-47s %6.2f s%s" % (what, s, note))
print("    boot timeline (seconds; QEMU start is 0):")
if fw is not None:
    row("firmware: OVMF, systemd-stub, kernel's EFI stub", fw,
        "   (OVMF starts the UKI at %.2f s)" % option if option is not None else "")
    row("kernel: to the agent as PID 1", agent - fw)
else:
    row("firmware and kernel: to the agent as PID 1", agent)
for p in tl["phases"]:
    row("agent: " + p["name"], p["ms"] / 1000)
if kubelet is not None:
    share = lambda a, b: 100 * (b - a) / kubelet
    print("      QEMU start -> kubelet running %.2f s: %s agent %.0f %%" % (kubelet,
          "firmware %.0f %%, kernel %.0f %%," % (share(0, fw), share(fw, agent)) if fw is not None
          else "firmware and kernel %.0f %%," % share(0, agent), share(agent, kubelet)))
PY
}

# handover BOOT: how kubelet came up (the faithful kubelet double and the agent's supervisor):
# each failed start with kubelet's error and the restart PID 1 made, then the start that ran,
# with the words kubeadm gave it, the hostname and the real containerd's answer.
handover() {
	python3 - "$logs/$1.log" <<'PY'
import re, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines()
argv = None
for l in lines:
    m = re.match(r"\[\s*([\d.]+)\] (.*)", l)
    if not m:
        continue
    t, text = float(m.group(1)), m.group(2)
    if text.startswith("@@STANDIN kubelet --"):
        argv = text.split(" ", 2)[2]
    elif text.startswith("@@STANDIN kubelet: start "):
        print("    %7.2f s kubelet %s" % (t, text.split(": ", 1)[1][:110]))
    elif re.search(r"constel-agent: \w+: kubelet:? (started|exited|not started|its config|.*restart)", text):
        print("    %7.2f s   PID 1: %s" % (t, text.split(": ", 2)[2][:100]))
    elif re.search(r"@@STANDIN kubeadm .*(init|join)|@@DATA kubeadm_kubelet_ready", text):
        print("    %7.2f s kubeadm: %s" % (t, text.split(" ", 1)[1][:100]))
    elif text.startswith("@@DATA kubelet_starts "):
        print("    %7.2f s kubelet start %s runs; the words kubeadm gave it:" % (t, text.split()[2]))
        words = [w for w in (argv or "").split() if not re.match(
            r"--(bootstrap-kubeconfig|kubeconfig|config)=", w)]
        for i in range(0, len(words), 3):
            print("                " + " ".join(words[i:i + 3]))
    elif re.match(r"@@DATA (kubelet_flags|kubelet_hostname|containerd_version) ", text):
        print("                %s" % text[7:].replace(" ", ": ", 1))
PY
}

# short: 64-digit hex values cut to their first 16 digits and "..." (the logs keep them whole)
short() { sed 's/\b\([0-9a-f]\{16\}\)[0-9a-f]\{48\}\b/\1.../g'; }

# node_boot_uefi NAME BOOT: node_vm (lib-node.sh) through OVMF and the UKI on the ESP
node_boot_uefi() { node_vm "$1" "$2" 600 --uefi "$esp" --ovmf "$OVMF" --memory 768; }

# boot_joining NAME BOOT: a boot of a node that joins or rejoins through the join service, in
# the background, stopped as soon as the service refuses its attestation (a refused node
# retries for ever, as a real one does); the boot's status, or 99 with the refusal in $refused
boot_joining() {
	local n0 vm
	n0=$(grep -ac 'measurement validation failed' "$logs/joinservice.log")
	node_ports
	node_boot_uefi "$1" "$2" &
	vm=$!
	while kill -0 $vm 2>/dev/null; do
		if [ "$(grep -ac 'measurement validation failed' "$logs/joinservice.log")" -gt "$n0" ]; then
			pkill -P $vm
			wait $vm
			refused=$(grep -a 'measurement validation failed' "$logs/joinservice.log" | tail -1 |
				sed 's/.*\(measurement validation failed\)/\1/' | short)
			return 99
		fi
		sleep 0.2
	done
	wait $vm
}

for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$BUILD/tools/constel-init" \
	"$BUILD/tools/constel-joinservice" "$uki" "$esp" "$measurements" "$OVMF"; do
	[ -e "$f" ] || die "$f is missing: run it as 'make run' (OVMF: apt-get install ovmf)"
done
# (as make judges it: older, not the same time, is out of date)
! [ "$uki" -ot "$BUILD/initrd.img" ] && ! [ "$esp" -ot "$uki" ] && ! [ "$BUILD/measurements.json" -ot "$uki" ] ||
	die "$uki, its ESP or $BUILD/measurements.json is older than what it is made of: run it as 'make run'"
say "== setting up: root disk, components server, metadata API, CLI workspace"
cluster_setup >"$work/setup.out" 2>&1 || die "set-up failed: $(tail -3 "$work/setup.out")"
cp "$measurements" "$work/m.json" # what node_init and cluster_joinservice enforce
say "    initrd: $initrd, $(stat -c %s "$initrd") bytes (make initrd prints its parts)"
say "    UKI: $uki, sha256 $(sha256sum "$uki" | cut -c1-16)... (make uki: systemd-stub, the kernel, that initrd,"
say "         the command line of image/qemu-node.cmdline; the same bytes on every build)"
say "    every node boots it: OVMF ($OVMF, q35) -> ${esp#$PWD/} -> the UKI, swtpm on tpm-crb"

say "== measurements: $measurements, predicted from the UKI by make measurements (image/measure.py)"
say "   before any boot; constel-init and the join service refuse a node whose TPM quotes other values"
python3 - "$work/m.json" <<'PY' | short || die "$measurements is not a measurements file"
import json, sys
what = {"4": "firmware (OVMF): the UKI, then the kernel systemd-stub starts",
        "8": "zero (no boot loader: GRUB would measure its commands here)",
        "9": "the kernel's EFI stub: its command line, then the initrd",
        "11": "systemd-stub: the UKI's .linux .osrel .cmdline .initrd",
        "12": "zero (no load options, credentials or add-ons)",
        "13": "zero (no system extensions)",
        "15": "zero at boot; the agent marks it with the cluster ID"}
m = json.load(open(sys.argv[1]))
for k in sorted(m, key=int):
    print("    PCR %2s  %s  %s%s" % (k, m[k]["expected"], what.get(k, ""),
                                   " (warn only)" if m[k].get("warnOnly") else ""))
PY

say "== control-plane-0: first boot; constel-init initialises it"
node_ports
node_boot_uefi control-plane-0 control-plane-0 &
vm=$!
wait_for=$(date +%s)
node_wait control-plane-0 'init server listening' 150 $vm
say "    init server up after $(($(date +%s) - wait_for)) s; running constel-init apply --measurements $measurements"
node_init "$work/ws" "$logs/constel-init.out"
cli=$?
if [ $cli != 0 ]; then # the node waits for an init that will not come
	pkill -P $vm
	wait $vm
	refused=$(grep -ao 'measurement validation failed.*' "$logs/constel-init.out" | head -1 | short)
	[ -n "$refused" ] && die "constel-init refused control-plane-0's attestation: $refused"
	die "constel-init failed ($cli): $(tail -1 "$logs/constel-init.out" | cut -c1-200); see $logs/control-plane-0.log"
fi
wait $vm
rc=$?
say "    constel-init: the node's attestation matches the measurements"
sed "s|$work/ws/constellation-admin.conf|$logs/constellation-admin.conf (a copy)|; s/^/    constel-init: /" "$logs/constel-init.out"
cp "$work/ws/constellation-admin.conf" "$logs/" 2>/dev/null
handover control-plane-0
timeline control-plane-0
[ $rc = 0 ] || die "control-plane-0 failed (boot $rc): see $logs/control-plane-0.log"

say "== worker-0: first boot; joins through the join service (constel-joinservice --measurements)"
cluster_joinservice "$work/m.json" || die "the join service did not start: $logs/joinservice.log"
boot_joining worker-0 worker-0
rc=$?
[ $rc = 99 ] && die "the join service refused worker-0's attestation: $refused"
grep -aq 'ticket issued for worker-0' "$logs/joinservice.log" &&
	say "    join service: the node's attestation matches the measurements; ticket issued"
say "    kubeadm join got endpoint $(node_data worker-0 join_endpoint), CA $(node_data worker-0 join_ca_hash | cut -c1-23)..."
handover worker-0
timeline worker-0
[ $rc = 0 ] || die "worker-0 failed (boot $rc): see $logs/worker-0.log"

say "== worker-0: reboot; rejoins with its state disk"
boot_joining worker-0 worker-0-reboot
rc=$?
[ $rc = 99 ] && die "the join service refused worker-0's attestation on the rejoin: $refused"
[ "$(grep -ac 'IssueRejoinTicket: disk' "$logs/joinservice.log")" -ge 1 ] && [ $rc = 0 ] &&
	say "    join service: the node's attestation matches the measurements; disk key sent"
say "    data of the first boot: $([ "$(node_data worker-0-reboot marker_found)" = "$(node_data worker-0 marker_new)" ] && echo intact || echo LOST)"
timeline worker-0-reboot
[ $rc = 0 ] || die "worker-0's reboot failed (boot $rc): see $logs/worker-0-reboot.log"

say "== done in $(($(date +%s) - t_run)) s: the admin kubeconfig (of the stand-in cluster) is $logs/constellation-admin.conf;"
say "   serial logs, swtpm logs and vm.py summaries are in $logs/"
ls "$logs" | sed 's/^/    /'
