#!/bin/bash
# make bench: boot time of a whole node under QEMU (TCG), the rejoin path. One cluster of
# qemu-tests/lib-node.sh: control-plane-0 is initialised (constel-init apply), worker-0 joins,
# then worker-0 reboots BOOT_BENCH_N times (default 5) and takes the rejoin path. For those
# reboots: median, min and max of QEMU start -> kubelet start (the kubelet stand-in's first
# console line, host time), split into pre-kernel+kernel (QEMU start -> the agent's first line)
# and agent (first line -> kubelet), and the agent's own phases (its boot timeline) in ms and
# as a share of the whole. Baseline from the same run, interleaved with the reboots: the
# harness's smoke guest (qemu-tests/smoke/init.c, a trivial /init) on the same machine (same
# disks, NIC, TPM, memory), i.e. the kernel + trivial-/init floor. The init and join boots are
# printed once for context. Numbers only; exits 1 when a boot fails, naming its log.
# Logs: $BUILD/bench-logs/.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${BOOT_BENCH_N:-5}
. tests/lib.sh
for f in "$BUILD/vm/standin" "$BUILD/tools/constel-init" "$BUILD/tools/constel-joinservice" \
	"$BUILD/tools/constel-metadata" "$BUILD/constel-agent.stripped"; do
	[ -x "$f" ] || { echo "bench: boot: $f is missing (make agent tools $BUILD/vm/standin)"; exit 1; }
done
export NODE_LOGS=$PWD/$BUILD/bench-logs
rm -rf "$NODE_LOGS"
work=$(mktemp -d /tmp/constel-bootbench-XXXXXX)
. qemu-tests/lib-node.sh
trap 'cluster_stop; rm -rf "$work"' EXIT

# bad WHAT LOG: a boot or step failed; the bench ends with exit 1.
bad() {
	echo "bench: boot: $1 failed (log $2)"
	[ -f "$2" ] && tail -5 "$2" | sed 's/^/    /'
	exit 1
}
# booted BOOT: node_boot's status was 0 and the kubelet stand-in started.
booted() { grep -aq '@@STANDIN kubelet ' "$logs/$1.log"; }

t_start=$(date +%s)
echo "bench: node boot time under QEMU/TCG, rejoin path ($N reboots of worker-0; logs in $BUILD/bench-logs)"
cluster_setup >"$work/setup.out" 2>&1 || bad "cluster setup" "$work/setup.out"

# --- control-plane-0: the init boot, constel-init apply from the host
node_ports
node_boot control-plane-0 cp0-init &
boot_pid=$!
node_wait cp0-init 'init server listening' 120 "$boot_pid" || {
	kill "$boot_pid" 2>/dev/null; wait "$boot_pid"; bad "init boot of control-plane-0 (no init server)" "$logs/cp0-init.log"; }
node_init "$work/ws" "$logs/constel-init.out" || { wait "$boot_pid"; bad "constel-init apply" "$logs/constel-init.out"; }
wait "$boot_pid" && booted cp0-init || bad "init boot of control-plane-0" "$logs/cp0-init.log"

# --- worker-0: the join boot
cluster_joinservice >"$work/js.out" 2>&1 || bad "join service start" "$work/js.out"
node_ports
node_boot worker-0 w0-join && booted w0-join || bad "join boot of worker-0" "$logs/w0-join.log"

# --- the floor: the smoke guest on the same machine as a node (two disks, NIC, TPM)
if ! musl-gcc -static -Os -o "$work/smoke-init" qemu-tests/smoke/init.c 2>"$work/smoke-cc.log" ||
	! qemu-tests/mkinitrd.sh "$work/smoke-initrd.gz" --init "$work/smoke-init" \
		--modules "virtio_pci virtio_blk" >"$work/smoke-initrd.log" 2>&1; then
	cat "$work/smoke-cc.log" "$work/smoke-initrd.log" >"$logs/smoke-build.log"
	bad "building the smoke guest" "$logs/smoke-build.log"
fi
truncate -s 32M "$work/floor-a.raw"
truncate -s 128M "$work/floor-b.raw"
floor_boot() {
	python3 qemu-tests/vm.py --initrd "$work/smoke-initrd.gz" --log "$logs/$1.log" \
		--disk "$work/floor-a.raw" --disk "$work/floor-b.raw" --tpm-state "$work/tpm-floor" \
		--net "$NODE_NET" --hostfwd "tcp:127.0.0.1:$(free_port)-:9000" >"$logs/$1.out" 2>&1
}

# --- the reboots, each followed by a floor boot (both see the same host load)
for i in $(seq "$N"); do
	node_ports
	node_boot worker-0 "w0-rejoin-$i" && booted "w0-rejoin-$i" ||
		bad "rejoin boot $i of worker-0" "$logs/w0-rejoin-$i.log"
	grep -aq '@@STANDIN kubeadm' "$logs/w0-rejoin-$i.log" &&
		bad "rejoin boot $i of worker-0 (ran kubeadm: not the rejoin path)" "$logs/w0-rejoin-$i.log"
	floor_boot "floor-$i" || bad "floor boot $i (smoke guest)" "$logs/floor-$i.log"
done

python3 - "$logs" "$N" "$initrd" "$work/smoke-initrd.gz" <<'EOF'
import json, re, statistics, sys, os
logs, n, initrd, smoke_initrd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
HOST = re.compile(r"^\[ *(\d+\.\d+)\] (.*)$")

def lines(boot):
    with open(os.path.join(logs, boot + ".log"), "rb") as f:
        for raw in f:
            m = HOST.match(raw.decode("utf-8", "replace").rstrip("\n"))
            if m:
                yield float(m.group(1)), m.group(2)

def first(boot, needle):
    return next((t for t, l in lines(boot) if needle in l), None)

def node(boot):
    tl = None
    for t, l in lines(boot):
        i = l.find("@@DATA timeline ")
        if i >= 0:
            tl = json.loads(l[i + len("@@DATA timeline "):])
    return {"first": first(boot, "constel-agent starting as PID 1"),
            "kubelet": first(boot, "@@STANDIN kubelet "), "timeline": tl}

def stats(xs):
    return statistics.median(xs), min(xs), max(xs)

def row(name, xs, unit="s", share_of=None):
    med, lo, hi = stats(xs)
    f = "%.2f" if unit == "s" else "%.0f"
    share = "" if share_of is None else "%5.1f %%" % (100.0 * med / share_of)
    print("  %-46s %7s %-2s %7s   (min %s, max %s)" % (name, f % med, unit, share, f % lo, f % hi))

def pre(boot):
    """QEMU start -> the kernel's t=0: host time minus kernel time of its first line."""
    for t, l in lines(boot):
        m = re.match(r"\[ *(\d+\.\d+)\] ", l)
        if m:
            return t - float(m.group(1))
    return float("nan")

rboots = ["w0-rejoin-%d" % i for i in range(1, n + 1)]
rej = [node(b) for b in rboots]
flo = [(first("floor-%d" % i, "@@INIT_START"), first("floor-%d" % i, "@@INIT_DONE"))
       for i in range(1, n + 1)]
total = [r["kubelet"] for r in rej]
kern = [r["first"] for r in rej]
agent = [r["kubelet"] - r["first"] for r in rej]
T = statistics.median(total)
print("  rejoin path, QEMU start -> kubelet start (median of %d; share of the median total):" % n)
row("total", total, share_of=T)
row("pre-kernel + kernel (-> agent's first line)", kern, share_of=T)
row("  of which pre-kernel (-> kernel t=0, approx.)", [pre(b) for b in rboots], share_of=T)
row("agent (first line -> kubelet start)", agent, share_of=T)
print("  the agent's phases (its boot timeline, ms; 'mounts' ends before its first line):")
names = []
for r in rej:
    for p in r["timeline"]["phases"]:
        if p["name"] not in names:
            names.append(p["name"])
for name in names:
    ms = [sum(p["ms"] for p in r["timeline"]["phases"] if p["name"] == name) for r in rej]
    row("  " + name, ms, "ms", share_of=T * 1000)
row("  timeline total", [r["timeline"]["total_ms"] for r in rej], "ms", share_of=T * 1000)
rest = [1000 * (r["kubelet"] - r["first"]) - r["timeline"]["total_ms"]
        + sum(p["ms"] for p in r["timeline"]["phases"] if p["name"] == "mounts") for r in rej]
row("  after the timeline (services, console)", rest, "ms", share_of=T * 1000)

fk = [s for s, d in flo]
fd = [d for s, d in flo]
F = statistics.median(fd)
print("  floor: the smoke guest (trivial /init), same machine, interleaved (median of %d):" % n)
row("QEMU start -> @@INIT_DONE (the floor)", fd)
row("pre-kernel + kernel (-> @@INIT_START)", fk)
row("  of which pre-kernel (-> kernel t=0, approx.)", [pre("floor-%d" % i) for i in range(1, n + 1)])
print("  %-46s %7.2fx" % ("rejoin boot / floor", T / F))
print("  %-46s %7.2fx   (%+.2f s; initrd %.2f MB vs %.2f MB gzip)" % (
    "kernel phase, agent / floor", statistics.median(kern) / statistics.median(fk),
    statistics.median(kern) - statistics.median(fk),
    os.path.getsize(initrd) / 1e6, os.path.getsize(smoke_initrd) / 1e6))
print("  %-46s %7.2f s" % ("rejoin boot minus floor", T - F))

print("  once, for context (QEMU start -> kubelet start):")
for boot, what in (("cp0-init", "init boot of control-plane-0 (incl. apply)"),
                   ("w0-join", "first (join) boot of worker-0")):
    r = node(boot)
    phases = ", ".join("%s %d" % (p["name"], p["ms"]) for p in r["timeline"]["phases"]
                       if p["ms"] >= 100)
    print("  %-46s %7.2f s    (kernel %.2f s; phases >= 100 ms: %s)" % (
        what, r["kubelet"], r["first"], phases))
EOF
[ $? -eq 0 ] || bad "parsing the logs" "$logs"
echo "  bench time $(($(date +%s) - t_start)) s"
