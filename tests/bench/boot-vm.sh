#!/bin/bash
# make bench: boot time of a whole node under QEMU (TCG), the rejoin path, on two networks.
# One cluster of qemu-tests/lib-node.sh: control-plane-0 is initialised (constel-init apply),
# worker-0 joins (both on QEMU's user networking), then worker-0 reboots BOOT_BENCH_N times
# (default 5) on each network and takes the rejoin path:
#   user   QEMU's user networking (slirp, restrict=on): the host tools on 127.0.0.1, reached
#          through guestfwd rules, each guest connection a `sh -c socat ...` QEMU spawns;
#   netns  a network namespace made for the bench (qemu-tests/netns.sh): a bridge, a tap per VM,
#          dnsmasq for DHCP, the metadata API and the join service on the bridge's addresses.
# Every boot of the bench runs on BOOT_BENCH_MACHINE (default q35: the machine of Constellation's
# QEMU nodes, its terraform qemu module's default; a direct kernel through qboot, like `pc`).
# BOOT_BENCH_PC=1 adds reboots on netns with the `pc` machine; BOOT_BENCH_OLD_INITRD=FILE adds
# reboots on netns with that initrd instead of $BUILD/initrd.img (an A/B of two agents, e.g. the
# main branch's), and with BOOT_BENCH_PC=1 also that initrd on `pc`: each a set of its own,
# interleaved, as the tpm-crb one below. BOOT_BENCH_SMP2=1 adds reboots on netns at -smp 2
# (every other boot is -smp 1). BOOT_BENCH_PREEMPT=1 adds reboots on netns with preempt=full on
# the kernel command line (Debian's kernel is PREEMPT_DYNAMIC, voluntary by default): the agent's
# background module loads then yield to PID 1 inside the kernel too.
# For those reboots: median, min and max of QEMU start -> kubelet start (the kubelet stand-in's
# first console line, host time), split into pre-kernel+kernel (QEMU start -> the agent's first
# line) and agent (first line -> kubelet), and the agent's own phases (its boot timeline), each
# with the ratio netns / user. Baselines from the same run, interleaved with the reboots (all see
# the same host load): the floor, the harness's smoke guest (qemu-tests/smoke/init.c, a trivial
# /init) on the same machine (same disks, NIC, TPM, memory); and the network probe
# (tests/vm/netprobe.c as /init) on each network: one TCP connect and one GET of the metadata
# API's /self, the way the agent does them, 10 rounds per boot. BOOT_BENCH_CRB=1 adds a third
# set of reboots: netns with tpm-crb instead of tpm-tis (the TPM's share under TCG). The init
# and join boots are printed once for context. Numbers only; exits 1 when a boot fails, naming
# its log. Logs: $BUILD/bench-logs/.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${BOOT_BENCH_N:-5}
. tests/lib.sh
for f in "$BUILD/vm/standin" "$BUILD/vm/netprobe" "$BUILD/tools/constel-init" "$BUILD/tools/constel-joinservice" \
	"$BUILD/tools/constel-metadata" "$BUILD/constel-agent.stripped"; do
	[ -x "$f" ] || { echo "bench: boot: $f is missing (make agent tools $BUILD/vm/standin $BUILD/vm/netprobe)"; exit 1; }
done
export NODE_LOGS=$PWD/$BUILD/bench-logs
rm -rf "$NODE_LOGS"
work=$(mktemp -d /tmp/constel-bootbench-XXXXXX)
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
ns=constel-bootbench-$$
# the namespace first: cluster_stop's wait would wait for the tools running inside it
trap 'netns_down "$ns"; cluster_stop; rm -rf "$work"' EXIT
CRB=${BOOT_BENCH_CRB:-0}
MACHINE=${BOOT_BENCH_MACHINE:-q35}
PC=${BOOT_BENCH_PC:-0}
SMP2=${BOOT_BENCH_SMP2:-0}
PREEMPT=${BOOT_BENCH_PREEMPT:-0}
OLD=${BOOT_BENCH_OLD_INITRD:-}
[ -z "$OLD" ] || [ -f "$OLD" ] || { echo "bench: boot: BOOT_BENCH_OLD_INITRD $OLD is not a file"; exit 1; }
case $MACHINE in pc | q35) ;; *) echo "bench: boot: BOOT_BENCH_MACHINE must be pc or q35"; exit 1 ;; esac

# bad WHAT LOG: a boot or step failed; the bench ends with exit 1.
bad() {
	echo "bench: boot: $1 failed (log $2)"
	[ -f "$2" ] && tail -5 "$2" | sed 's/^/    /'
	exit 1
}
# booted BOOT: node_boot's status was 0 and the kubelet stand-in started.
booted() { grep -aq '@@STANDIN kubelet ' "$logs/$1.log"; }

t_start=$(date +%s)
echo "bench: node boot time under QEMU/TCG, machine $MACHINE, rejoin path ($N reboots of worker-0 per network; logs in $BUILD/bench-logs)"
cluster_setup >"$work/setup.out" 2>&1 || bad "cluster setup" "$work/setup.out"

# --- control-plane-0: the init boot, constel-init apply from the host
node_ports
node_boot control-plane-0 cp0-init --machine "$MACHINE" &
boot_pid=$!
node_wait cp0-init 'init server listening' 120 "$boot_pid" || {
	kill "$boot_pid" 2>/dev/null; wait "$boot_pid"; bad "init boot of control-plane-0 (no init server)" "$logs/cp0-init.log"; }
node_init "$work/ws" "$logs/constel-init.out" || { wait "$boot_pid"; bad "constel-init apply" "$logs/constel-init.out"; }
wait "$boot_pid" && booted cp0-init || bad "init boot of control-plane-0" "$logs/cp0-init.log"

# --- worker-0: the join boot
cluster_joinservice >"$work/js.out" 2>&1 || bad "join service start" "$work/js.out"
node_ports
node_boot worker-0 w0-join --machine "$MACHINE" && booted w0-join || bad "join boot of worker-0" "$logs/w0-join.log"

# --- the floor: the smoke guest on the same machine as a node (two disks, NIC, TPM); the
# network probe as /init of an initrd of its own
if ! musl-gcc -static -Os -o "$work/smoke-init" qemu-tests/smoke/init.c 2>"$work/smoke-cc.log" ||
	! qemu-tests/mkinitrd.sh "$work/smoke-initrd.gz" --init "$work/smoke-init" \
		--modules "virtio_pci virtio_blk" >"$work/smoke-initrd.log" 2>&1 ||
	! qemu-tests/mkinitrd.sh "$work/probe-initrd.gz" --init "$BUILD/vm/netprobe" \
		--modules "virtio_pci virtio_net" >>"$work/smoke-initrd.log" 2>&1; then
	cat "$work/smoke-cc.log" "$work/smoke-initrd.log" >"$logs/smoke-build.log"
	bad "building the smoke guest and the probe" "$logs/smoke-build.log"
fi
truncate -s 32M "$work/floor-a.raw"
truncate -s 128M "$work/floor-b.raw"
floor_boot() {
	python3 qemu-tests/vm.py --initrd "$work/smoke-initrd.gz" --log "$logs/$1.log" --machine "$MACHINE" \
		--disk "$work/floor-a.raw" --disk "$work/floor-b.raw" --tpm-state "$work/tpm-floor" \
		--net "$NODE_NET" --hostfwd "tcp:127.0.0.1:$(free_port)-:9000" >"$logs/$1.out" 2>&1
}
# probe_boot BOOT user|netns: the probe as worker-0 (its address), against the metadata API
# (its /self for worker-0) and the join service's port, as the agent reaches them
PROBE="probe.n=10 probe.http=$NODE_MD_HOST:8080/self probe.tcp=$NODE_LB:30090"
probe_boot() {
	local net
	if [ "$2" = netns ]; then
		net=(--netns "$ns" --mac "$(netns_mac "$(node_field worker-0 2)")")
	else
		net=(--net "$NODE_NET" --dhcp-start "$(node_field worker-0 2)"
			--net-guestfwd "tcp:$NODE_MD_HOST:8080-cmd:socat STDIO TCP:127.0.0.1:$md_port_worker_0"
			--net-guestfwd "tcp:$NODE_LB:30090-cmd:socat STDIO TCP:127.0.0.1:$js_port")
	fi
	python3 qemu-tests/vm.py --initrd "$work/probe-initrd.gz" --log "$logs/$1.log" --machine "$MACHINE" \
		--append "$PROBE" "${net[@]}" >"$logs/$1.out" 2>&1
}

# --- the second network: the namespace, its DHCP server, the metadata API and the join
# service on the bridge (10.42.0.1, and the load balancer's address the agent dials)
{ netns_up "$ns" "$NODE_LB" && netns_metadata "$ns" && netns_joinservice "$ns"; } >"$work/netns.out" 2>&1 ||
	bad "network namespace $ns" "$work/netns.out"

# rejoin BOOT [vm.py options]: one reboot of worker-0 on the rejoin path
rejoin() {
	local boot=$1
	shift
	node_ports
	node_boot worker-0 "$boot" --machine "$MACHINE" "$@" && booted "$boot" || bad "rejoin boot $boot of worker-0" "$logs/$boot.log"
	grep -aq '@@STANDIN kubeadm' "$logs/$boot.log" &&
		bad "rejoin boot $boot of worker-0 (ran kubeadm: not the rejoin path)" "$logs/$boot.log"
}

# --- the reboots, interleaved with the baselines (all see the same host load)
for i in $(seq "$N"); do
	rejoin "w0-rejoin-user-$i"
	NODE_NETNS=$ns rejoin "w0-rejoin-netns-$i"
	[ "$CRB" = 1 ] && NODE_NETNS=$ns rejoin "w0-rejoin-crb-$i" --tpm-model crb
	[ "$PC" = 1 ] && NODE_NETNS=$ns MACHINE=pc rejoin "w0-rejoin-pc-$i"
	[ -n "$OLD" ] && NODE_NETNS=$ns initrd=$OLD rejoin "w0-rejoin-old-$i"
	[ -n "$OLD" ] && [ "$PC" = 1 ] && NODE_NETNS=$ns MACHINE=pc initrd=$OLD rejoin "w0-rejoin-oldpc-$i"
	[ "$SMP2" = 1 ] && NODE_NETNS=$ns rejoin "w0-rejoin-smp2-$i" --smp 2
	# (node_boot's command line and preempt=full: vm.py takes the last --append)
	[ "$PREEMPT" = 1 ] && NODE_NETNS=$ns rejoin "w0-rejoin-preempt-$i" \
		--append "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min preempt=full"
	[ "$SMP2" = 1 ] && [ -n "$OLD" ] && NODE_NETNS=$ns initrd=$OLD rejoin "w0-rejoin-oldsmp2-$i" --smp 2
	floor_boot "floor-$i" || bad "floor boot $i (smoke guest)" "$logs/floor-$i.log"
	probe_boot "probe-user-$i" user || bad "probe boot $i (user networking)" "$logs/probe-user-$i.log"
	probe_boot "probe-netns-$i" netns || bad "probe boot $i (netns)" "$logs/probe-netns-$i.log"
done

python3 - "$logs" "$N" "$initrd" "$work/smoke-initrd.gz" "$CRB" "$MACHINE" "$PC" "$OLD" "$SMP2" "$PREEMPT" <<'EOF'
import json, re, statistics, sys, os
logs, n, initrd, smoke_initrd, crb = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] == "1"
machine, pc, old, smp2 = sys.argv[6], sys.argv[7] == "1", sys.argv[8], sys.argv[9] == "1"
preempt = sys.argv[10] == "1"
sys.path.insert(0, "tests/bench")
from serial_log import SerialLog  # noqa: E402
NETS = (["user", "netns"] + (["crb"] if crb else []) + (["pc"] if pc else []) + (["old"] if old else [])
        + (["oldpc"] if old and pc else []) + (["smp2"] if smp2 else [])
        + (["oldsmp2"] if smp2 and old else []) + (["preempt"] if preempt else []))
LABEL = {"user": "user net", "netns": "netns", "crb": "netns+crb", "pc": "netns, pc machine",
         "old": "netns, old initrd", "oldpc": "netns, old initrd, pc", "smp2": "netns, -smp 2",
         "oldsmp2": "netns, old initrd, -smp 2", "preempt": "netns, preempt=full"}

log = SerialLog(logs)
lines, first, data = log.lines, log.first, log.data

def node(boot):
    tl = data(boot, "timeline")
    return {"first": first(boot, "constel-agent starting as PID 1"),
            "kubelet": first(boot, "@@STANDIN kubelet "), "timeline": json.loads(tl) if tl else None}

def pre(boot):
    """QEMU start -> the kernel's t=0: host time minus kernel time of its first line."""
    for t, l in lines(boot):
        m = re.match(r"\[ *(\d+\.\d+)\] ", l)
        if m:
            return t - float(m.group(1))
    return float("nan")

def cell(xs, unit):
    f = "%.2f" if unit == "s" else "%.0f" if unit == "ms" else "%.1f"
    return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs))

W = 44

def row(name, cols, unit, base=0):
    """One figure per network: median (min-max); then each other network / cols[base]."""
    cells = "".join(" %-25s" % cell(xs, unit) for xs in cols)
    b = statistics.median(cols[base])
    ratios = "  ".join("%9s" % ("%.2fx" % (statistics.median(xs) / b) if b else "-")
                       for i, xs in enumerate(cols) if i != base)
    print("  %-*s %-3s%s %s" % (W, name, unit, cells, ratios))

def header(nets, base):
    ratios = "  ".join("%9s" % ("%s/%s" % (x, nets[base])) for i, x in enumerate(nets) if i != base)
    print("  %-*s %-3s%s %s" % (W, "", "", "".join(" %-25s" % (LABEL[x] + ", med (min-max)")
                                                  for x in nets), ratios))

boots = {net: ["w0-rejoin-%s-%d" % (net, i) for i in range(1, n + 1)] for net in NETS}
rej = {net: [node(b) for b in boots[net]] for net in NETS}
floors = ["floor-%d" % i for i in range(1, n + 1)]
fd = [first(b, "@@INIT_DONE") for b in floors]
fk = [first(b, "@@INIT_START") for b in floors]
F = statistics.median(fd)

print("  rejoin path of worker-0, QEMU start -> kubelet start, %d boots per network, interleaved:" % n)
header(NETS, 0)
row("total", [[r["kubelet"] for r in rej[x]] for x in NETS], "s")
row("pre-kernel + kernel (-> agent's first line)", [[r["first"] for r in rej[x]] for x in NETS], "s")
row("  of which pre-kernel (-> kernel t=0)", [[pre(b) for b in boots[x]] for x in NETS], "s")
row("agent (first line -> kubelet start)", [[r["kubelet"] - r["first"] for r in rej[x]] for x in NETS], "s")
print("  the agent's phases (its boot timeline; 'mounts' ends before its first line):")
names = []
for x in NETS:
    for r in rej[x]:
        for p in r["timeline"]["phases"]:
            if p["name"] not in names:
                names.append(p["name"])
ph = lambda r, name: sum(p["ms"] for p in r["timeline"]["phases"] if p["name"] == name)
for name in names:
    row("  " + name, [[ph(r, name) for r in rej[x]] for x in NETS], "ms")
WAIT = re.compile(r"modules: waited (\d+) ms for the (\w+) phase's modules")
def modwait(boot, phase=None):
    """ms the agent waited for background-loaded modules (in phase, or in all)."""
    return sum(int(m.group(1)) for _, l in lines(boot) for m in [WAIT.search(l)]
               if m and (phase is None or m.group(2) == phase))
for phase in ("root", "verity", "disk", "handover"):
    if any(modwait(b, phase) for x in NETS for b in boots[x]):
        row("    of which waiting for the %s modules" % phase,
            [[modwait(b, phase) for b in boots[x]] for x in NETS], "ms")
row("  modules + waits for them (the modules' share)",
    [[ph(r, "modules") + modwait(b) for r, b in zip(rej[x], boots[x])] for x in NETS], "ms")
row("  timeline total", [[r["timeline"]["total_ms"] for r in rej[x]] for x in NETS], "ms")
row("  after the timeline (services, console)",
    [[1000 * (r["kubelet"] - r["first"]) - r["timeline"]["total_ms"] + ph(r, "mounts") for r in rej[x]]
     for x in NETS], "ms")

print("  floor: the smoke guest (trivial /init), same machine, interleaved (%d boots):" % n)
print("  %-*s s   %s" % (W, "QEMU start -> @@INIT_DONE (the floor)", cell(fd, "s")))
print("  %-*s s   %s" % (W, "pre-kernel + kernel (-> @@INIT_START)", cell(fk, "s")))
print("  %-*s s   %s" % (W, "  of which pre-kernel (-> kernel t=0)", cell([pre(b) for b in floors], "s")))
for x in NETS:
    tot = [r["kubelet"] for r in rej[x]]
    ker = [r["first"] for r in rej[x]]
    ag = [r["kubelet"] - r["first"] for r in rej[x]]
    print("  %-10s rejoin / floor %6.2fx (min %.2fx, max %.2fx); agent / kernel phase %.2fx "
          "(min %.2fx, max %.2fx); rejoin minus floor %.2f s" % (
              LABEL[x], statistics.median(tot) / F, min(tot) / F, max(tot) / F,
              statistics.median(ag) / statistics.median(ker),
              min(a / k for a, k in zip(ag, ker)), max(a / k for a, k in zip(ag, ker)),
              statistics.median(tot) - F))
print("  %-*s %.2f MB vs %.2f MB gzip" % (W, "initrd, agent vs floor",
      os.path.getsize(initrd) / 1e6, os.path.getsize(smoke_initrd) / 1e6))

print("  network probe (tests/vm/netprobe.c as /init, worker-0's address; 10 rounds x %d boots):" % n)
header(["user", "netns"], 1)
def probe(net, key):
    xs = []
    for i in range(1, n + 1):
        v = data("probe-%s-%d" % (net, i), key)
        xs += [float(t) for t in v.split(",")] if v else []
    return xs
for key, what in (("probe_dhcp_ms", "DHCP lease (DISCOVER -> ACK, address set)"),
                  ("probe_http_connect_ms", "connect to the metadata API"),
                  ("probe_http_firstbyte_ms", "GET /self: first byte of the answer"),
                  ("probe_http_total_ms", "GET /self: whole answer (server's FIN)"),
                  ("probe_tcp_connect_ms", "connect to the join service")):
    row(what, [probe("user", key), probe("netns", key)], "ms", base=1)

print("  once, for context (QEMU start -> kubelet start, user net):")
for boot, what in (("cp0-init", "init boot of control-plane-0 (incl. apply)"),
                   ("w0-join", "first (join) boot of worker-0")):
    r = node(boot)
    phases = ", ".join("%s %d" % (p["name"], p["ms"]) for p in r["timeline"]["phases"]
                       if p["ms"] >= 100)
    print("  %-*s %7.2f s    (kernel %.2f s; phases >= 100 ms: %s)" % (
        W, what, r["kubelet"], r["first"], phases))

# key figures for tests/bench/summary.sh: median, min, max per network
os.makedirs(os.path.join(os.path.dirname(logs), "bench"), exist_ok=True)
with open(os.path.join(os.path.dirname(logs), "bench", "figures-boot-vm.txt"), "w") as f:
    def put(key, xs, scale=1):
        f.write("%s=%.3f\n%s_min=%.3f\n%s_max=%.3f\n" % (key, statistics.median(xs) * scale, key,
                min(xs) * scale, key, max(xs) * scale))
    f.write("boot_n=%d\nboot_machine=%s\n" % (n, machine))
    for x in NETS:
        put("boot_%s_kernel_s" % x, [r["first"] for r in rej[x]])
        put("boot_%s_agent_s" % x, [r["kubelet"] - r["first"] for r in rej[x]])
        put("boot_%s_agent_kernel_ratio" % x, [(r["kubelet"] - r["first"]) / r["first"] for r in rej[x]])
        for name in names:
            put("boot_%s_phase_%s_ms" % (x, name), [ph(r, name) for r in rej[x]])
        put("boot_%s_modwait_ms" % x, [modwait(b) for b in boots[x]])
        put("boot_%s_modules_share_ms" % x,
            [ph(r, "modules") + modwait(b) for r, b in zip(rej[x], boots[x])])
        # the waits by the timeline phase they fall in (a rejoin boot): the root's and dm-verity's
        # in "root", the state disk's (before the unlock) and the handover's in "activate"
        for name, waits in (("root", ("root", "verity")), ("activate", ("disk", "handover"))):
            put("boot_%s_phase_%s_nowait_ms" % (x, name),
                [ph(r, name) - sum(modwait(b, w) for w in waits) for r, b in zip(rej[x], boots[x])])
    for net in ("user", "netns"):
        for key in ("probe_dhcp_ms", "probe_http_total_ms", "probe_tcp_connect_ms"):
            if probe(net, key):
                put("boot_%s_%s" % (net, key), probe(net, key))
EOF
[ $? -eq 0 ] || bad "parsing the logs" "$logs"
echo "  bench time $(($(date +%s) - t_start)) s"
