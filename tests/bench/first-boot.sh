#!/bin/bash
# make bench: a new worker's first boot (QEMU start -> the kubelet stand-in's first line, host
# time) under QEMU/TCG, with a 1 GiB and a 16 GiB sparse state disk, on both wipe paths of the
# same agent in the same run (docs/wipe.md): "sync" (constel.disk-wipe=sync: the data area
# written and mke2fs run before the race, the path before issue 28), "full" (the wipe and
# mke2fs in a child beside the race, the key change waiting for its end) and "none" (the
# default: no wipe, mke2fs in the child). Boots interleaved (each mode for each size and
# repetition) so that all see the same host load. For each: the median (min-max) of
# FIRST_BOOT_BENCH_N boots (default 3), seconds per GiB, the wipe's own time and throughput,
# mke2fs's time, when the join's first round began (from QEMU's start and from the disk being
# found) and how long the key waited for the child. The floor: one boot of
# tests/vm/guest_disk.c (disk.case=floor) on a blank 1 GiB disk, the agent's wipe against
# `dd bs=1M oflag=direct` through the same dm stack.
# Key figures (the default path, none, median s): first_boot_1g_s=, first_boot_16g_s= and the
# others in $BUILD/bench/figures-first-boot.txt. Logs: $BUILD/bench-logs-first-boot/;
# FIRST_BOOT_BENCH_RESUME=1 keeps them and boots only what has no complete log yet. A failed
# boot is named and left out of the figures.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${FIRST_BOOT_BENCH_N:-3}
SIZES=${FIRST_BOOT_BENCH_SIZES:-"1 16"}
# none: constel.disk-wipe=none, the format without the wipe (the audit of docs/wipe.md)
MODES=${FIRST_BOOT_BENCH_MODES:-"sync full none"}
. tests/lib.sh
for f in "$BUILD/vm/standin" "$BUILD/vm/guest_disk" "$BUILD/tools/constel-init" "$BUILD/tools/constel-joinservice" \
	"$BUILD/tools/constel-metadata" "$BUILD/constel-agent.stripped"; do
	[ -x "$f" ] || { echo "bench: first boot: $f is missing (make agent tools $BUILD/vm/standin $BUILD/vm/guest_disk)"; exit 1; }
done
export NODE_LOGS=$PWD/$BUILD/bench-logs-first-boot
[ "${FIRST_BOOT_BENCH_RESUME:-0}" = 1 ] || rm -rf "$NODE_LOGS"
work=$(mktemp -d /tmp/constel-firstboot-XXXXXX)
. qemu-tests/lib-node.sh
. tests/vm/lib-vm.sh
trap 'cluster_stop; rm -rf "$work"' EXIT
mkdir -p "$BUILD/bench"

bad() {
	echo "bench: first boot: $1 failed (log $2)"
	[ -f "$2" ] && tail -5 "$2" | sed 's/^/    /'
	exit 1
}

echo "bench: first boot of a worker under QEMU/TCG (QEMU start -> kubelet), wipe paths $MODES, $N boots each, state disks of $SIZES GiB (logs in $NODE_LOGS)"
cluster_setup >"$work/setup.out" 2>&1 || bad "cluster setup" "$work/setup.out"
# no init in this bench: the cluster's salt as constel-init stores it (qemu-tests/image.sh)
openssl rand -hex 32 >"$work/ws/measurement-salt"
cluster_joinservice >"$work/js.out" 2>&1 || bad "join service start" "$work/js.out"

# the floor: the wipe and dd through the same stack, one boot on a blank 1 GiB disk
if [ "${FIRST_BOOT_BENCH_FLOOR:-1}" = 1 ] && ! grep -aq '@@DATA floor_dd_s ' "$logs/floor.log" 2>/dev/null; then
	vm_disk_initrd "$work/initrd-disk.gz" >"$work/initrd.out" 2>&1 || bad "the disk initrd" "$work/initrd.out"
	truncate -s 1M "$work/root-floor.raw"
	truncate -s 1G "$work/floor.raw"
	python3 qemu-tests/vm.py --initrd "$work/initrd-disk.gz" --log "$logs/floor.log" --disk "$work/root-floor.raw" \
		--disk "$work/floor.raw" --timeout 900 --append "disk.case=floor" >"$logs/floor.out" 2>&1 ||
		echo "  the floor boot failed (log $logs/floor.log)"
	rm -f "$work/floor.raw"
fi

for i in $(seq "$N"); do
	for g in $SIZES; do
		for mode in $MODES; do
			boot=fb-${g}g-$mode-$i
			grep -aq '@@STANDIN kubelet ' "$logs/$boot.log" 2>/dev/null && continue
			rm -f "$work/worker-0.raw" && truncate -s "${g}G" "$work/worker-0.raw"
			node_ports
			# node_boot's command line and its own bound: the wipe at 2 MiB/s at the least
			node_vm worker-0 "$boot" $((600 + g * 512)) --initrd "$initrd" \
				--append "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min constel.disk-wipe=$mode"
			if grep -aq '@@STANDIN kubelet ' "$logs/$boot.log"; then
				printf '  %-16s done\n' "$boot"
			else
				echo "  $boot failed (log $logs/$boot.log): $(tail_log "$boot")"
			fi
		done
	done
	rm -f "$work/worker-0.raw"
done

python3 - "$logs" "$N" "$SIZES" "$BUILD/bench/figures-first-boot.txt" "$MODES" <<'PY'
import json, re, statistics, sys, os
logs, n, sizes, out = sys.argv[1], int(sys.argv[2]), [int(g) for g in sys.argv[3].split()], sys.argv[4]
modes = sys.argv[5].split()
sys.path.insert(0, "tests/bench")
from serial_log import SerialLog  # noqa: E402

log = SerialLog(logs)
lines, first, data = log.lines, log.first, log.data

def boot(name):
    if not os.path.exists(os.path.join(logs, name + ".log")):
        return {"kubelet": None, "round": None}
    r = {"kubelet": first(name, "@@STANDIN kubelet "), "round": first(name, "join: IssueJoinTicket at "),
         "wiped": first(name, "disk: wiped /dev/vdb: "), "found": first(name, ": not LUKS2: a new disk")}
    if r["round"] is not None and r["found"] is not None:
        r["round_after_found"] = r["round"] - r["found"]
    for _, l in lines(name):
        m = re.search(r"disk: wiped /dev/vdb: (\d+) MiB in ([\d.]+) s", l)
        if m:
            r["mib"], r["wipe_s"] = int(m.group(1)), float(m.group(2))
        m = re.search(r"disk: waited (\d+) ms for the (wipe|mke2fs)", l)
        if m:
            r["waited_s"] = int(m.group(1)) / 1e3
        m = re.search(r"disk: /dev/vdb: ext4 made in ([\d.]+) s", l)
        if m:
            r["mkfs_s"] = float(m.group(1))
    return r

def cell(xs, f="%.1f"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a", None
    med = statistics.median(xs)
    return "%s (%s-%s)" % (f % med, f % min(xs), f % max(xs)), med

fig = {}
TITLE = {"sync": "sync (before the race)", "full": "full (beside the race)", "none": "none (no wipe)"}
print("  %-34s" % "" + "".join(" %-22s" % TITLE.get(m, m) for m in modes))
for g in sizes:
    res = {m: [boot("fb-%dg-%s-%d" % (g, m, i)) for i in range(1, n + 1)] for m in modes}
    row = lambda label, f, fmt="%.1f": print("  %-34s" % label + "".join(" %-22s" % cell([f(r) for r in res[m]], fmt)[0] for m in modes))
    print("  %d GiB state disk:" % g)
    row("QEMU start -> kubelet, s", lambda r: r["kubelet"])
    row("  per GiB, s/GiB", lambda r: r["kubelet"] / g if r["kubelet"] else None, "%.2f")
    row("disk found -> kubelet, s", lambda r: r["kubelet"] - r["found"] if r["kubelet"] and r["found"] else None)
    row("wipe, s", lambda r: r.get("wipe_s"))
    row("wipe, MB/s", lambda r: r["mib"] * 1.048576 / r["wipe_s"] if r.get("wipe_s") else None)
    row("mke2fs, s", lambda r: r.get("mkfs_s"))
    row("join's first round at, s", lambda r: r["round"])
    row("  after the disk was found, s", lambda r: r.get("round_after_found"))
    row("key waited for the child, s", lambda r: r.get("waited_s", 0.0) if r["kubelet"] else None, "%.1f")
    for m in modes:
        key = "first_boot_%dg_s" % g if m == "none" else "first_boot_%s_%dg_s" % (m, g)
        fig[key] = cell([r["kubelet"] for r in res[m]])[1]
        fig["first_boot_%s_%dg_s_per_gib" % (m, g)] = fig[key] / g if fig[key] else None
        fig["first_boot_%s_%dg_from_disk_s" % (m, g)] = cell([r["kubelet"] - r["found"] for r in res[m] if r["kubelet"] and r["found"]])[1]
ws, wm, ds, dm = (data("floor", k) for k in ("floor_wipe_s", "floor_wipe_mib", "floor_dd_s", "floor_dd_mib"))
if ws and ds and float(ws) > 0 and float(ds) > 0:
    w, d = float(wm) * 1.048576 / float(ws), float(dm) * 1.048576 / float(ds)
    print("  floor, 1 GiB blank disk: the agent's wipe %.1f MB/s, dd bs=1M oflag=direct %.1f MB/s through the same dm stack (wipe/dd %.2f)" % (w, d, w / d))
    fig["first_boot_wipe_mbps"], fig["first_boot_dd_mbps"] = round(w, 1), round(d, 1)
if fig.get("first_boot_full_1g_s") and fig.get("first_boot_full_16g_s"):
    print("  16 GiB / 1 GiB, full: %.2fx" % (fig["first_boot_full_16g_s"] / fig["first_boot_full_1g_s"]))
if fig.get("first_boot_1g_s") and fig.get("first_boot_16g_s"):
    print("  16 GiB / 1 GiB, none (the default): %.2fx (goal: within 1.10x)" % (fig["first_boot_16g_s"] / fig["first_boot_1g_s"]))
if fig.get("first_boot_none_1g_from_disk_s") and fig.get("first_boot_none_16g_from_disk_s"):
    print("  16 GiB / 1 GiB, none, from the disk found: %.2fx" % (fig["first_boot_none_16g_from_disk_s"] / fig["first_boot_none_1g_from_disk_s"]))
with open(out, "w") as f:
    for k, v in fig.items():
        if v is not None:
            f.write("%s=%s\n" % (k, round(v, 2) if isinstance(v, float) else v))
PY
