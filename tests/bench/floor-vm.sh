#!/bin/bash
# make bench: the floor of the rejoin boot's phases that wait for no peer, for the summary's
# "agent's own work = phase - floor" rows (issue 18).
# 1. root, disk, activate: tests/vm/floor_activate.c as /init of a test initrd (the modules of
#    initrd/modules.txt, the static mke2fs) on a node's machine (as qemu-tests/lib-node.sh
#    boots one: a 160 MiB ext4 root disk, a 128 MiB state disk, swtpm, a virtio NIC, the same
#    vm.py defaults, on the boot bench's machine: BOOT_BENCH_MACHINE, default q35; BENCH_VM_ARGS
#    adds vm.py options). One boot makes the state disk with the agent's disk code; then FLOOR_BENCH_N
#    boots (default 5) of each way, interleaved, each FLOOR_BENCH_ROUNDS rounds (default 3; the
#    first is cold, as in a node's boot, and is the figure): the floor (libcryptsetup's header
#    load; keyslot and dm tables in one call; mount(2), one read, one raw TPM2_PCR_Event), the
#    same split (keyslot and tables timed apart, for the breakdown) and the agent's own code
#    for the same steps (disk_open, disk_unlock, node_state_read, tpm_pcr_event). Every
#    boot is bounded (vm.py's timeout, then timeout(1)); QEMU and swtpm end with vm.py.
# 2. modules: the floor is the same modules loaded one after the other by a trivial /init,
#    which tests/bench/initrd.sh measured earlier in the run (its seq1 boots in
#    $BUILD/bench-modules-logs); read from there, not booted again.
# FLOOR_BENCH_APPEND adds kernel command-line words (measurements only, e.g. acpi=noirq).
# FLOOR_BENCH_BEFORE=BIN adds a third way, "before": the agent's code as BIN (an older build of
# tests/vm/floor_activate) has it, for an A/B of a change in the same run.
# Key figures: $BUILD/bench/figures-floor.txt. Numbers only; exit 1 when the boot fails.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${FLOOR_BENCH_N:-5}
R=${FLOOR_BENCH_ROUNDS:-3}
. tests/lib.sh
for f in "$BUILD/vm/floor_activate" "$(cat "$BUILD/deps-prefix" 2>/dev/null)/sbin/mke2fs"; do
	[ -x "$f" ] || { echo "bench: floor: $f is missing (make $BUILD/vm/floor_activate)"; exit 1; }
done
logs=$BUILD/bench-floor-logs
rm -rf "$logs" && mkdir -p "$logs" "$BUILD/bench"
work=$(mktemp -d /tmp/constel-floorbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "bench: the floor of the no-peer phases (activate: tests/vm/floor_activate.c as /init, $N boots a way, interleaved, on a node's machine, ${BOOT_BENCH_MACHINE:-q35})"
modules=$(grep -v '^#' initrd/modules.txt | tr -s ' \n' ' ')
if ! qemu-tests/mkinitrd.sh "$work/initrd.gz" --init "$BUILD/vm/floor_activate" --modules "$modules" \
	--file "$(cat "$BUILD/deps-prefix")/sbin/mke2fs:/sbin/mke2fs" >"$logs/mkinitrd.log" 2>&1; then
	echo "  bench: floor: building the initrd failed (log $logs/mkinitrd.log)"
	exit 1
fi
before=${FLOOR_BENCH_BEFORE:-}
if [ -n "$before" ] && ! qemu-tests/mkinitrd.sh "$work/initrd-before.gz" --init "$before" --modules "$modules" \
	--file "$(cat "$BUILD/deps-prefix")/sbin/mke2fs:/sbin/mke2fs" >>"$logs/mkinitrd.log" 2>&1; then
	echo "  bench: floor: building the initrd of $before failed (log $logs/mkinitrd.log)"
	exit 1
fi
truncate -s 160M "$work/root.raw"
mkfs.ext4 -q -F "$work/root.raw" >"$logs/mkfs.log" 2>&1 || { echo "  bench: floor: mkfs.ext4 failed (log $logs/mkfs.log)"; exit 1; }
truncate -s 128M "$work/state.raw"
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# fboot NAME APPEND [INITRD]: one boot of the floor program, bounded (vm.py's timeout, then timeout(1));
# vm.py ends QEMU and swtpm with it.
fboot() {
	# shellcheck disable=SC2086 # BENCH_VM_ARGS: vm.py options, word-split on purpose
	nice -n 5 timeout -k 10 300 python3 qemu-tests/vm.py --initrd "${3:-$work/initrd.gz}" --log "$logs/$1.log" \
		--disk "$work/root.raw" --disk "$work/state.raw" --tpm-state "$work/tpm" \
		--hostfwd "tcp:127.0.0.1:$port-:9000" --timeout 240 --machine "${BOOT_BENCH_MACHINE:-q35}" ${BENCH_VM_ARGS:-} \
		--append "floor.dev=/dev/vdb floor.key=$key $2 ${FLOOR_BENCH_APPEND:-}" >"$logs/$1.out" 2>&1 &&
		grep -aq '@@RESULT \(setup\|rounds\) PASS' "$logs/$1.log" && return 0
	echo "  bench: floor: boot $1 failed (log $logs/$1.log)"
	grep -a '@@RESULT' "$logs/$1.log" | sed 's/^/    /'
	exit 1
}
fboot setup floor.way=setup
ways=(floor split agent ${before:+before})
for i in $(seq "$N"); do
	for j in $(seq 0 $((${#ways[@]} - 1))); do
		w=${ways[$(((i + j) % ${#ways[@]}))]}
		if [ "$w" = before ]; then
			fboot "$w-$i" "floor.way=agent floor.n=$R" "$work/initrd-before.gz"
		else
			fboot "$w-$i" "floor.way=$w floor.n=$R"
		fi
	done
done
python3 - "$logs" "$BUILD" "$N" "${ways[@]}" <<'EOF'
import glob, os, re, statistics, sys
logs, build, nboots, WAYS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
STEPS = [("disk", "disk phase: the header (floor: crypt_init + crypt_load)"),
         ("keyslot", "keyslot: argon2id, AF merge, digest (+ tables, not split)"),
         ("tables", "dm-integrity + dm-crypt tables"),
         ("mount", "ext4 mount of /dev/mapper/state"),
         ("read", "node-state file read"),
         ("tpm", "TPM2_PCR_Event (the node lock's mark)"),
         ("activate", "activate: keyslot .. tpm")]
# cold[way][step]: the first round of each boot (what a boot does); warm: the later rounds
cold = {w: {} for w in WAYS}
warm = {w: {} for w in WAYS}
root = []
for w in WAYS:
    for i in range(1, nboots + 1):
        text = open(os.path.join(logs, "%s-%d.log" % (w, i)), "rb").read().decode("utf-8", "replace")
        for m in re.finditer(r"@@DATA floor_%s_(\w+)_ms ([\d.,]+)" % ("agent" if w == "before" else w), text):
            xs = [float(x) for x in m.group(2).split(",")]
            if m.group(1) == "root":
                root += xs
                continue
            cold[w].setdefault(m.group(1), []).append(xs[0])
            warm[w].setdefault(m.group(1), []).extend(xs[1:])
boot = {}
try:
    for line in open(os.path.join(build, "bench", "figures-boot-vm.txt")):
        k, _, v = line.strip().partition("=")
        boot[k] = float(v)
except (OSError, ValueError):
    pass

def cell(xs):
    return "%.1f (%.1f-%.1f)" % (statistics.median(xs), min(xs), max(xs)) if xs else "-"

print("  root phase floor: mount(2) of the real root read-only, the first step after the modules: %s ms" % cell(root))
print("  the state disk, ms, median (min-max) over %d boots a way; cold: the first round of a boot" % nboots)
print("  (after the root mount and a PCR read, as in a node's boot); warm: the later rounds:")
print("  %-56s %-19s %-19s %-19s %-19s %-19s" % ("step", "floor, cold", "agent's code, cold", "split, cold",
                                                "floor, warm", "agent's code, warm"))
for s, what in STEPS:
    print("  %-56s %-19s %-19s %-19s %-19s %-19s" % (
        what, cell(cold["floor"].get(s, [])), cell(cold["agent"].get(s, [])), cell(cold["split"].get(s, [])),
        cell(warm["floor"].get(s, [])), cell(warm["agent"].get(s, []))))
if "before" in WAYS:
    print("  A/B: the agent's code before (FLOOR_BENCH_BEFORE) / now, cold: disk %s / %s, activate %s / %s ms" % (
        cell(cold["before"]["disk"]), cell(cold["agent"]["disk"]), cell(cold["before"]["activate"]),
        cell(cold["agent"]["activate"])))
fl = cold["floor"]["activate"]
F = statistics.median(fl)
ag = boot.get("boot_netns_phase_activate_ms")
if ag is not None:
    print("  the boot's activate phase (netns, boot bench): %.0f ms; floor %.1f ms; own %.0f ms "
          "(own also holds switch_root, hostname, the kubelet start)" % (ag, F, ag - F))

# modules: initrd.sh's seq1 boots (the same modules one after the other, trivial /init)
seq = []
for p in sorted(glob.glob(os.path.join(build, "bench-modules-logs", "seq1-*.log"))):
    m = re.search(r"@@TOTAL \d+ modules ([\d.]+) ms", open(p, "rb").read().decode("utf-8", "replace"))
    if m:
        seq.append(float(m.group(1)))
if seq:
    print("  modules: floor (one after the other, trivial /init; tests/bench/initrd.sh, %d boots): %s ms"
          % (len(seq), cell(seq)))
else:
    print("  modules: no floor (tests/bench/initrd.sh did not run in this build: no %s/bench-modules-logs/seq1-*.log)" % build)

with open(os.path.join(build, "bench", "figures-floor.txt"), "w") as f:
    def put(key, xs):
        f.write("%s=%.3f\n%s_min=%.3f\n%s_max=%.3f\n" % (key, statistics.median(xs), key, min(xs), key, max(xs)))
    f.write("floor_n=%d\n" % nboots)
    put("floor_activate_ms", fl)
    put("floor_disk_ms", cold["floor"]["disk"])
    put("floor_root_ms", root)
    for w in WAYS:
        for s, _ in STEPS:
            if s in cold[w]:
                put("floor_activate_%s_%s_ms" % (w, s), cold[w][s])
            if warm[w].get(s):
                put("floor_activate_%s_warm_%s_ms" % (w, s), warm[w][s])
    if seq:
        put("floor_modules_ms", seq)
EOF
