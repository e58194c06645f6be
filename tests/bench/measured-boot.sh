#!/bin/bash
# make bench: the firmware phase of the measured boot beside the qboot path, so the agent's own
# share stays visible. MEASURED_BENCH_N (default 3) boots of each, alternating, same machine
# (swtpm attached, no disks, no NIC), each stopped at the agent's first line:
#   measured  OVMF (q35, tpm-crb) -> $BUILD/constel.efi (systemd-stub, the kernel's EFI stub)
#   qboot     the QEMU tests' fast path: qboot + the PVH vmlinux + $BUILD/initrd.img
# For each: median, min and max of QEMU start -> kernel (the firmware phase: the host time of
# a console line minus the kernel's own time stamp on it, the least over the boot's lines),
# kernel -> the agent as PID 1, and QEMU start -> PID 1. Numbers only; exit 1 when a boot
# fails, naming its log. Logs: $BUILD/bench-logs-measured/.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${MEASURED_BENCH_N:-3}
for f in "$BUILD/constel-esp.img" "$BUILD/initrd.img" /usr/share/OVMF/OVMF_CODE_4M.fd; do
	[ -e "$f" ] || { echo "bench: measured boot: $f is missing (make uki; apt-get install ovmf)"; exit 1; }
done
logs=$PWD/$BUILD/bench-logs-measured
rm -rf "$logs" && mkdir -p "$logs"
work=$(mktemp -d /tmp/constel-mbench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# boot KIND I: one boot, killed at the agent's first line; prints "fw kernel total" in seconds
boot() {
	local log=$logs/$1-$2.log args
	if [ "$1" = measured ]; then
		args=(--uefi "$PWD/$BUILD/constel-esp.img" --memory 768)
	else
		args=(--initrd "$PWD/$BUILD/initrd.img")
	fi
	rm -rf "$work/tpm"
	python3 qemu-tests/vm.py "${args[@]}" --log "$log" --tpm-state "$work/tpm" --timeout 120 \
		--kill-on 'constel-agent starting as PID 1' >"$log.out" 2>&1
	[ $? = 3 ] || { echo "bench: measured boot: $1 boot $2 failed (log $log)"; tail -3 "$log" | sed 's/^/    /'; return 1; }
	awk '{ if (match($0, /^\[ *[0-9.]+\] \[ *[0-9]+\.[0-9]+\]/)) { split(substr($0, 2), h, "]"); s = substr($0, index($0, "] [") + 3);
			split(s, k, "]"); d = h[1] - k[1]; if (fw == "" || d < fw) fw = d }
		if (/constel-agent starting as PID 1/ && pid == "") { split(substr($0, 2), h, "]"); pid = h[1] } }
		END { if (fw == "" || pid == "") exit 1; printf "%.2f %.2f %.2f\n", fw, pid - fw, pid }' "$log" ||
		{ echo "bench: measured boot: no kernel time stamp or no PID 1 line in $log"; return 1; }
}
# stats COLUMN FILE: median (min-max)
stats() { cut -d' ' -f"$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%5.2f s (%.2f-%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

echo "bench: firmware phase, measured boot (OVMF + UKI) beside qboot, $N boots each (logs in $BUILD/bench-logs-measured)"
: >"$work/measured" && : >"$work/qboot"
for i in $(seq "$N"); do
	for kind in measured qboot; do
		boot $kind "$i" >>"$work/$kind" || exit 1
	done
done
printf '  %-32s %-24s %-24s %s\n' "" "QEMU start -> kernel" "kernel -> agent PID 1" "QEMU start -> PID 1"
for kind in measured qboot; do
	label=$([ $kind = measured ] && echo "OVMF + UKI (measured, q35)" || echo "qboot + PVH vmlinux (pc)")
	printf '  %-32s %-24s %-24s %s\n' "$label" "$(stats 1 "$work/$kind")" "$(stats 2 "$work/$kind")" "$(stats 3 "$work/$kind")"
done
