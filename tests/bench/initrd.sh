#!/bin/bash
# make bench: the agent's initrd and its modules phase.
# 1. Size: the initrd by part (uncompressed) and compressed with gzip and zstd, against a
#    baseline measured in the same run: the initramfs-tools initrd Debian built for the same
#    kernel (/boot/initrd.img-KVER), when there is one.
# 2. The modules phase under QEMU/TCG on a node's machine (two virtio disks, virtio NIC, swtpm):
#    tests/initrd/modtime.c as /init with the modules of initrd/modules.txt, BENCH_MODULES_N
#    (default 5) boots per way, interleaved, median/min/max of the time from the first module to
#    the last: the old way (one after the other, as the agent did before) as the baseline, and
#    the agent's loader (agent/boot/modules.c: as many at a time as CPUs), with -smp 1 (what
#    the scenarios and the boot bench use) and -smp 2; and, as measurements only, without the
#    module signatures (copies with the signature cut off: the kernel taints) and with
#    acpi=noirq (no ACPI interrupt-link evaluation in the PCI probe). One boot with
#    initcall_debug splits the slowest modules into load (signature check, layout, relocation)
#    and init (the module's init call with its driver probe). Every boot on BENCH_MODULES_MACHINE
#    (default q35, the machine of Constellation's QEMU nodes), and, as a measurement, the old
#    way on the `pc` machine (its ACPI interrupt links under TCG). Numbers only, no verdict.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
out=$BUILD/bench
mkdir -p "$out"
eval "$(qemu-tests/kernel.sh)"
echo "bench: the agent's initrd (kernel $KVER, modules of initrd/modules.txt)"
BUILD=$BUILD initrd/build.sh "$out/initrd.gz" --compress gzip | sed 's/^/  /'
BUILD=$BUILD initrd/build.sh "$out/initrd.zst" --compress zstd >/dev/null
gz=$(stat -c %s "$out/initrd.gz")
zst=$(stat -c %s "$out/initrd.zst")
printf '  %-28s %12d\n' "total (zstd)" "$zst"
base=/boot/initrd.img-$KVER
if [ -r "$base" ]; then
	b=$(stat -c %s "$base")
	kind=$(file -b "$base" | cut -d, -f1)
	printf '  %-40s %12d bytes (%s)\n' "baseline: Debian's initramfs-tools initrd" "$b" "$kind"
	printf '  %-40s %12s\n' "ratio baseline / agent (gzip)" "$(awk -v a="$gz" -v b="$b" 'BEGIN { printf "%.1fx", b / a }')"
	printf '  %-40s %12s\n' "ratio baseline / agent (zstd)" "$(awk -v a="$zst" -v b="$b" 'BEGIN { printf "%.1fx", b / a }')"
else
	echo "  baseline: no $base on this machine (initramfs-tools did not build one)"
fi

# --- 2. the modules phase under QEMU
N=${BENCH_MODULES_N:-5}
MACHINE=${BENCH_MODULES_MACHINE:-q35}
echo
echo "bench: the modules phase under QEMU/TCG, machine $MACHINE ($N boots a way, interleaved; tests/initrd/modtime.c as /init)"
work=$(mktemp -d /tmp/constel-modbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
logs=$BUILD/bench-modules-logs
rm -rf "$logs" && mkdir -p "$logs"
if ! musl-gcc -static -O2 -Wall -Wextra -Iagent -isystem "$BUILD/kinc" -o "$work/init" \
	tests/initrd/modtime.c agent/boot/modules.c agent/boot/cmdline.c agent/base/log.c \
	2>"$logs/cc.log"; then
	echo "  bench: modules: building tests/initrd/modtime.c failed (log $logs/cc.log)"
	exit 1
fi
modules=$(grep -v '^#' initrd/modules.txt | tr -s ' \n' ' ')
# The same modules with the appended signature cut off ("~Module signature appended~\n" after a
# 12-byte struct module_signature whose last 4 bytes are the signature's length, big-endian).
python3 - "$KVER" "$work" $modules >"$work/nosig.args" <<'EOF'
import os, struct, subprocess, sys
kver, work, names = sys.argv[1], sys.argv[2], sys.argv[3:]
MARK = b"~Module signature appended~\n"
paths = []
for name in names:
    out = subprocess.run(["modprobe", "-S", kver, "--show-depends", name], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 2 and w[0] == "insmod" and w[1] not in paths:
            paths.append(w[1])
os.makedirs(work + "/nosig", exist_ok=True)
args = []
with open(work + "/nosig.list", "w") as lst:
    for p in paths:
        data = open(p, "rb").read()
        if data.endswith(MARK):
            n, = struct.unpack(">I", data[-len(MARK) - 4:-len(MARK)])
            data = data[:len(data) - len(MARK) - 12 - n]
        base = os.path.basename(p)
        open(work + "/nosig/" + base, "wb").write(data)
        args += ["--file", "%s/nosig/%s:/nosig/%s" % (work, base, base)]
        lst.write("/nosig/%s\n" % base)
args += ["--file", work + "/nosig.list:/etc/nosig.list"]
print("\n".join(args))
EOF
mapfile -t nosig_args <"$work/nosig.args"
if ! qemu-tests/mkinitrd.sh "$work/initrd.gz" --init "$work/init" --modules "$modules" \
	"${nosig_args[@]}" >"$logs/mkinitrd.log" 2>&1; then
	echo "  bench: modules: building the initrd failed (log $logs/mkinitrd.log)"
	exit 1
fi
truncate -s 32M "$work/a.raw"
truncate -s 128M "$work/b.raw"
# vm.py with another -smp (the harness boots -smp 1): its command line with one word changed.
cat >"$work/vm-smp.py" <<'EOF'
import sys
sys.path.insert(0, "qemu-tests")
import vm
smp = sys.argv.pop(1)
orig = vm.qemu_command
def command(*args, **kw):
    c = orig(*args, **kw)
    c[c.index("-smp") + 1] = smp
    return c
vm.qemu_command = command
vm.main()
EOF
# a port for the NIC's hostfwd (vm.py attaches the virtio NIC only with a forward); unused
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
boot() { # NAME SMP APPEND [MACHINE]
	python3 "$work/vm-smp.py" "$2" --initrd "$work/initrd.gz" --log "$logs/$1.log" --machine "${4:-$MACHINE}" \
		--disk "$work/a.raw" --disk "$work/b.raw" --tpm-state "$work/tpm" \
		--hostfwd "tcp:127.0.0.1:$(free_port)-:9000" --append "$3" >"$logs/$1.out" 2>&1 &&
		grep -aq '@@TOTAL' "$logs/$1.log" || { echo "  bench: modules: boot $1 failed (log $logs/$1.log)"; exit 1; }
	# the nosig copies live under /nosig, so /sys/module is what counts for every way
	grep -aq '@@DEVICES ok' "$logs/$1.log" ||
		{ echo "  bench: modules: boot $1: $(grep -a '@@DEVICES' "$logs/$1.log" | cut -c1-200) (log $logs/$1.log)"; exit 1; }
}
ways=("seq1 1 " "agent1 1 modtime.agent" "seq2 2 " "agent2 2 modtime.agent"
	"nosig1 1 modtime.list=/etc/nosig.list" "noirq1 1 acpi=noirq" "pc1 1 -")
for i in $(seq "$N"); do
	for w in "${ways[@]}"; do
		read -r name smp append <<<"$w"
		if [ "$name" = pc1 ]; then
			boot "$name-$i" "$smp" "" pc
		else
			boot "$name-$i" "$smp" "${append:-}"
		fi
	done
done
boot split 1 initcall_debug
python3 - "$logs" "$N" <<'EOF'
import re, statistics, sys
logs, n = sys.argv[1], int(sys.argv[2])

def text(boot):
    return open("%s/%s.log" % (logs, boot), "rb").read().decode("utf-8", "replace")

def total(boot):
    return float(re.search(r"@@TOTAL .*? ([\d.]+) ms", text(boot)).group(1))

def row(name, xs, base=None):
    med = statistics.median(xs)
    ratio = "" if base is None else "%6.2fx" % (med / base)
    print("  %-52s %7.0f ms %7s  (min %.0f, max %.0f)" % (name, med, ratio, min(xs), max(xs)))

t = {w: [total("%s-%d" % (w, i)) for i in range(1, n + 1)] for w in
     ("seq1", "agent1", "seq2", "agent2", "nosig1", "noirq1", "pc1")}
nmod = len(re.findall(r"@@MOD ", text("seq1-1")))
print("  first module -> last, %d modules (median; ratio to the old way with as many CPUs):" % nmod)
b1, b2 = statistics.median(t["seq1"]), statistics.median(t["seq2"])
row("baseline: one after the other (old way), -smp 1", t["seq1"], b1)
row("the agent's loader, -smp 1 (default: one at a time)", t["agent1"], b1)
row("baseline: one after the other (old way), -smp 2", t["seq2"], b2)
row("the agent's loader, -smp 2 (default: 2 at a time)", t["agent2"], b2)
print("  measurements only (not what a node does):")
row("no module signatures (copies cut; the kernel taints)", t["nosig1"], b1)
row("acpi=noirq (no ACPI interrupt links in the PCI probe)", t["noirq1"], b1)
row("the old way on the pc machine, -smp 1", t["pc1"], b1)

s = text("split")
inits = {}
for m in re.finditer(r"initcall \S+ \[(\w+)\] returned -?\d+ after (\d+) usecs", s):
    inits[m.group(1)] = int(m.group(2)) / 1000.0
mods = [(m.group(1), float(m.group(2))) for m in
        re.finditer(r"@@MOD (\S+)\.ko +read +[\d.]+ ms load +([\d.]+) ms", s)]
whole = sum(ms for _, ms in mods)
print("  one boot with initcall_debug, -smp 1: %.0f ms in finit_module; the slowest modules:" % whole)
print("    %-22s %8s %8s %8s" % ("module", "total", "init", "load"))
for name, ms in sorted(mods, key=lambda x: -x[1])[:8]:
    init = inits.get(name.replace("-", "_"), 0.0)
    print("    %-22s %8.1f %8.1f %8.1f" % (name, ms, init, ms - init))
rest = [ms for name, ms in sorted(mods, key=lambda x: -x[1])[8:]]
print("    %-22s %8.1f   (%d modules, %.1f ms each on average)" % ("the others", sum(rest),
      len(rest), sum(rest) / max(1, len(rest))))
ti = sum(inits.get(name.replace("-", "_"), 0.0) for name, _ in mods)
print("    %-22s %8.1f %8.1f %8.1f   (init: the init calls with their probes; load: the rest)"
      % ("all", whole, ti, whole - ti))
EOF
