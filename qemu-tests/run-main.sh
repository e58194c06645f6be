#!/bin/bash
# make run: the main job. Boots a two-node Constellation test cluster under QEMU (TCG), the
# agent as PID 1 of each node on its built-in defaults: control-plane-0 is initialised by
# constel-init (the CLI's init), then worker-0 joins through constel-joinservice. Prints what
# each node did, its boot timeline and where the logs are. qemu-tests/lib-node.sh has the
# set-up (swtpm per node, a root disk with Debian's containerd and runc and the doubles of
# kubeadm and kubelet, components over https, a state disk, slirp restrict=on reaching only
# the tools on 127.0.0.1). For each first boot it shows kubelet failing until kubeadm wrote its
# config, PID 1 restarting it, and the start that runs with kubeadm's flags.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. tests/lib.sh
work=$(mktemp -d /tmp/constel-run-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/run-logs}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
trap 'cluster_stop; kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
say() { printf '%s\n' "$*"; }
die() { say "make run: $*" >&2; exit 1; }

# timeline BOOT: the agent's boot timeline of one boot, and where the kernel/agent split is
timeline() {
	local log=$logs/$1.log
	python3 - "$log" <<'PY'
import json, re, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines()
def at(pat):
    for l in lines:
        m = re.match(r"\[\s*([\d.]+)\] (.*)", l)
        if m and re.search(pat, m.group(2)):
            return float(m.group(1))
def last(pat):
    t = None
    for l in lines:
        m = re.match(r"\[\s*([\d.]+)\] (.*)", l)
        if m and re.search(pat, m.group(2)):
            t = float(m.group(1))
    return t
# kubelet running: its last start (a start before kubeadm's flags is restarted by PID 1)
agent, kubelet = at(r"constel-agent starting as PID 1"), last(r"@@DATA kubelet_starts ")
tl = None
for l in lines:
    if "@@DATA timeline " in l:
        tl = json.loads(l.split("@@DATA timeline ", 1)[1])
if agent is None or tl is None:
    print("    (no timeline: the boot did not get that far)")
    sys.exit()
print("    QEMU start -> agent (firmware, kernel) %7.2f s" % agent)
for p in tl["phases"]:
    print("      agent %-22s %7.2f s" % (p["name"], p["ms"] / 1000))
if kubelet is not None:
    print("    QEMU start -> kubelet running       %7.2f s (agent %.0f %%)" % (
        kubelet, 100 * (kubelet - agent) / kubelet))
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

for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$BUILD/tools/constel-init"; do
	[ -x "$f" ] || die "$f is missing: run it as 'make run'"
done
say "== setting up: root disk, components server, metadata API, CLI workspace"
cluster_setup >"$work/setup.out" 2>&1 || die "set-up failed: $(tail -3 "$work/setup.out")"
say "    initrd: $initrd, $(stat -c %s "$initrd") bytes (make initrd prints its parts)"

say "== control-plane-0: first boot; constel-init initialises it"
node_ports
node_boot control-plane-0 control-plane-0 &
vm=$!
wait_for=$(date +%s)
node_wait control-plane-0 'init server listening' 120 $vm
say "    init server up after $(($(date +%s) - wait_for)) s; running constel-init apply"
node_init "$work/ws" "$logs/constel-init.out"
cli=$?
wait $vm
rc=$?
sed 's/^/    constel-init: /' "$logs/constel-init.out"
cp "$work/ws/constellation-admin.conf" "$logs/" 2>/dev/null
handover control-plane-0
timeline control-plane-0
[ $cli = 0 ] && [ $rc = 0 ] || die "control-plane-0 failed (constel-init $cli, boot $rc): see $logs/control-plane-0.log"

say "== worker-0: first boot; joins through the join service"
cluster_joinservice || die "the join service did not start: $logs/joinservice.log"
node_ports
node_boot worker-0 worker-0
rc=$?
say "    kubeadm join got endpoint $(node_data worker-0 join_endpoint), CA $(node_data worker-0 join_ca_hash | cut -c1-23)..."
handover worker-0
timeline worker-0
[ $rc = 0 ] || die "worker-0 failed (boot $rc): see $logs/worker-0.log"

say "== worker-0: reboot; rejoins with its state disk"
node_ports
node_boot worker-0 worker-0-reboot
rc=$?
say "    data of the first boot: $([ "$(node_data worker-0-reboot marker_found)" = "$(node_data worker-0 marker_new)" ] && echo intact || echo LOST)"
timeline worker-0-reboot
[ $rc = 0 ] || die "worker-0's reboot failed (boot $rc): see $logs/worker-0-reboot.log"

say "== done: the admin kubeconfig (of the stand-in cluster) is $logs/constellation-admin.conf;"
say "   serial logs, swtpm logs and vm.py summaries are in $logs/"
ls "$logs" | sed 's/^/    /'
