#!/bin/bash
# make bench: the firmware phase of the measured boot beside the qboot path, so the agent's own
# share stays visible. MEASURED_BENCH_N (default 3) boots of each, interleaved, same machine
# (swtpm attached, no disks, no NIC), each stopped at the agent's first line:
#   pflash    OVMF_CODE_4M + a copy of OVMF_VARS_4M on pflash (q35, tpm-crb) -> $BUILD/constel.efi
#             (systemd-stub, the kernel's EFI stub)
#   fd        the same with Debian's unified /usr/share/ovmf/OVMF.fd as read-only -bios (what
#             `make run` uses: OVMF keeps its variables in memory)
#   qboot     the QEMU tests' fast path, the baseline: qboot + the PVH vmlinux + $BUILD/initrd.img
# For each: median (min-max) of QEMU start -> kernel (the firmware phase: the host time of a
# console line minus the kernel's own time stamp on it, the least over the boot's lines),
# kernel -> the agent as PID 1, and QEMU start -> PID 1, each with its ratio to qboot's median
# (and the fd firmware phase against pflash's). Exit 1 when a boot fails, naming its log.
# Logs: $BUILD/bench-logs-measured/. Key figures: $BUILD/bench/figures-measured-boot.txt.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
N=${MEASURED_BENCH_N:-3}
FD=${MEASURED_BENCH_OVMF_FD:-/usr/share/ovmf/OVMF.fd}
for f in "$BUILD/constel-esp.img" "$BUILD/initrd.img" /usr/share/OVMF/OVMF_CODE_4M.fd "$FD"; do
	[ -e "$f" ] || { echo "bench: measured boot: $f is missing (make uki; apt-get install ovmf)"; exit 1; }
done
logs=$PWD/$BUILD/bench-logs-measured
rm -rf "$logs" && mkdir -p "$logs" "$BUILD/bench"
work=$(mktemp -d /tmp/constel-mbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
KINDS="pflash fd qboot"

# boot KIND I: one boot, killed at the agent's first line; prints "fw kernel total" in seconds
boot() {
	local log=$logs/$1-$2.log args
	case $1 in
	pflash) args=(--uefi "$PWD/$BUILD/constel-esp.img" --memory 768) ;;
	fd) args=(--uefi "$PWD/$BUILD/constel-esp.img" --ovmf "$FD" --memory 768) ;;
	*) args=(--initrd "$PWD/$BUILD/initrd.img") ;;
	esac
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
# stats COLUMN FILE: "median min max"
stats() { cut -d' ' -f"$1" "$2" | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f %.2f %.2f", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
# cell COLUMN KIND: "median s (min-max) ratio-to-qboot"
cell() {
	local m lo hi b
	read -r m lo hi < <(stats "$1" "$work/$2")
	b=$(stats "$1" "$work/qboot" | cut -d' ' -f1)
	printf '%5.2f s (%.2f-%.2f) %6s' "$m" "$lo" "$hi" \
		"$(awk -v a="$m" -v b="$b" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')"
}

echo "bench: firmware phase, measured boot (OVMF + UKI, pflash pair and unified OVMF.fd) beside qboot, $N boots each, interleaved (logs in $BUILD/bench-logs-measured)"
for kind in $KINDS; do : >"$work/$kind"; done
for i in $(seq "$N"); do
	for kind in $KINDS; do
		boot $kind "$i" >>"$work/$kind" || exit 1
	done
done
printf '  %-36s %-30s %-30s %s\n' "median (min-max), ratio to qboot" "QEMU start -> kernel" "kernel -> agent PID 1" "QEMU start -> PID 1"
for kind in $KINDS; do
	case $kind in
	pflash) label="OVMF_CODE_4M + VARS pflash + UKI" ;;
	fd) label="OVMF.fd -bios (read-only) + UKI" ;;
	*) label="baseline: qboot + PVH vmlinux (pc)" ;;
	esac
	printf '  %-36s %-30s %-30s %s\n' "$label" "$(cell 1 $kind)" "$(cell 2 $kind)" "$(cell 3 $kind)"
done
read -r fw_p fw_p_lo fw_p_hi < <(stats 1 "$work/pflash")
read -r fw_f fw_f_lo fw_f_hi < <(stats 1 "$work/fd")
read -r fw_q fw_q_lo fw_q_hi < <(stats 1 "$work/qboot")
read -r tot_p _ _ < <(stats 3 "$work/pflash")
read -r tot_f _ _ < <(stats 3 "$work/fd")
read -r tot_q _ _ < <(stats 3 "$work/qboot")
printf '  %-36s %s\n' "firmware phase, OVMF.fd / pflash" \
	"$(awk -v a="$fw_f" -v b="$fw_p" 'BEGIN { if (b > 0) printf "%.2fx (%.2f s less)", a / b, b - a; else print "-" }')"
# key figures for tests/bench/summary.sh
cat >"$BUILD/bench/figures-measured-boot.txt" <<FIG
measured_n=$N
measured_fw_pflash_s=$fw_p
measured_fw_pflash_min_s=$fw_p_lo
measured_fw_pflash_max_s=$fw_p_hi
measured_fw_fd_s=$fw_f
measured_fw_fd_min_s=$fw_f_lo
measured_fw_fd_max_s=$fw_f_hi
measured_fw_qboot_s=$fw_q
measured_fw_qboot_min_s=$fw_q_lo
measured_fw_qboot_max_s=$fw_q_hi
measured_pid1_pflash_s=$tot_p
measured_pid1_fd_s=$tot_f
measured_pid1_qboot_s=$tot_q
FIG
