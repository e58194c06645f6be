#!/bin/bash
# make run: the main job. Boots a two-node Constellation test cluster under QEMU (TCG), the
# agent as PID 1 of each node on its built-in defaults: control-plane-0 is initialised by
# constel-init (the CLI's init), then worker-0 joins through constel-joinservice. Prints what
# each node did, its boot timeline and where the logs are. qemu-tests/lib-node.sh has the
# set-up (swtpm per node, a root disk with stand-ins for containerd/kubeadm/kubelet, a state
# disk, slirp restrict=on reaching only the tools on 127.0.0.1).
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
agent, kubelet = at(r"constel-agent starting as PID 1"), at(r"@@STANDIN kubelet ")
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
    print("    QEMU start -> kubelet started       %7.2f s (agent %.0f %%)" % (
        kubelet, 100 * (kubelet - agent) / kubelet))
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
timeline control-plane-0
[ $cli = 0 ] && [ $rc = 0 ] || die "control-plane-0 failed (constel-init $cli, boot $rc): see $logs/control-plane-0.log"

say "== worker-0: first boot; joins through the join service"
cluster_joinservice || die "the join service did not start: $logs/joinservice.log"
node_ports
node_boot worker-0 worker-0
rc=$?
say "    kubeadm join got endpoint $(node_data worker-0 join_endpoint), CA $(node_data worker-0 join_ca_hash | cut -c1-23)..."
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
