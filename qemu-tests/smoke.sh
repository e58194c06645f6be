#!/bin/bash
# Smoke test of the VM harness itself: the kernel lookup, a reproducible initrd, and vm.py on
# every way a boot can end. The guest is qemu-tests/smoke/init.c (checks /dev/vda and /dev/tpm0).
#   boot   disk + TPM                        -> exit 0, PASS vda, PASS tpm
#   cut    smoke.hang, --kill-on @@HANG      -> exit 3, QEMU and swtpm gone
#   notpm  no TPM attached                   -> exit 1, FAIL tpm
#   hang   smoke.hang, --timeout 8           -> exit 2, timed out, QEMU and swtpm gone
#   panic  smoke.exit (/init exits)          -> exit 2 at once, panic seen
# All boots share one TPM state, so each also proves the previous swtpm released it.
# Prints PASS/FAIL lines and "N passed, N failed"; exits non-zero on any failure. Takes about
# 45 s. Build outputs go to $BUILD/qemu-tests (BUILD defaults to build).
#   qemu-tests/smoke.sh
set -u
cd "$(dirname "$0")/.." || exit 1
out=${BUILD:-build}/qemu-tests
work=$(mktemp -d /tmp/constel-smoke-XXXXXX)
trap 'rm -rf "$work"' EXIT
. tests/lib.sh
count_checks

# finish: the tally; the logs of a failed run are kept in $out/smoke-logs.
finish() {
	if [ "$failed" -gt 0 ]; then
		rm -rf "$out/smoke-logs" && mkdir -p "$out/smoke-logs" && cp "$work"/*.log* "$work"/*.out "$out/smoke-logs/" 2>/dev/null
		echo "logs kept in $out/smoke-logs"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# --- build: /init, the kernel, the initrd (twice: it must be byte-identical)
mkdir -p "$out" && rm -rf "$out/smoke-logs"
if ! musl-gcc -static -Os -Wall -Wextra -o "$out/smoke-init" qemu-tests/smoke/init.c 2>"$work/cc.log"; then
	fail smoke_init_builds "$(head -5 "$work/cc.log")"
	finish
fi
pass smoke_init_builds

if kernel=$(qemu-tests/kernel.sh 2>"$work/kernel.log") && eval "$kernel" && [ -d "$MODDIR" ] &&
	[ -n "$VMLINUX$BZIMAGE" ]; then
	[ -n "$VMLINUX" ] && how="PVH vmlinux + qboot" || how="bzImage + SeaBIOS"
	pass "kernel_found ($KVER, $how)"
else
	fail kernel_found "$(cat "$work/kernel.log")"
	finish
fi

initrd=$out/smoke-initrd.gz
if ! qemu-tests/mkinitrd.sh "$initrd" --init "$out/smoke-init" --modules "virtio_pci virtio_blk" 2>"$work/mkinitrd.log"; then
	fail initrd_builds "$(cat "$work/mkinitrd.log")"
	finish
fi
pass initrd_builds
touch "$out/smoke-init" # a new input mtime must not reach the archive
qemu-tests/mkinitrd.sh "$work/initrd2.gz" --init "$out/smoke-init" --modules "virtio_pci virtio_blk" 2>/dev/null
if cmp -s "$initrd" "$work/initrd2.gz"; then pass initrd_is_reproducible; else fail initrd_is_reproducible "two builds differ"; fi
if qemu-tests/mkinitrd.sh "$work/bad.gz" --init "$out/smoke-init" --modules "no_such_module" 2>"$work/bad.log"; then
	fail initrd_refuses_missing_module "built anyway"
else
	pass initrd_refuses_missing_module
fi

# --- boots
truncate -s 8M "$work/disk.raw"
# boot NAME EXPECTED_EXIT [vm.py options...]: one boot; checks its exit status, that none of
# its processes is left (QEMU and swtpm both have $work on their command lines), and leaves
# the JSON summary's fields in $J_* variables.
boot() {
	local name=$1 want=$2 rc left
	shift 2
	last=$name
	python3 qemu-tests/vm.py --initrd "$initrd" --log "$work/$name.log" "$@" >"$work/$name.out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ]; then pass "${name}_exits_$want"; else fail "${name}_exits_$want" "exit $rc: $(tail -1 "$work/$name.out")"; fi
	left=$(pgrep -a -f -- "$work")
	if [ -z "$left" ]; then pass "${name}_leaves_no_process"; else fail "${name}_leaves_no_process" "$left"; fi
	J_killed='' J_timed_out='' J_panic='' J_init_start_s='' J_init_done_s='' J_swtpm_end=''
	eval "$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
for k in ("killed", "timed_out", "panic", "init_start_s", "init_done_s", "swtpm_end"):
    print("J_%s=%s" % (k, s.get(k)))' "$work/$name.log.json" 2>/dev/null)"
}
# result NAME VERDICT: the last boot printed "VERDICT NAME" for a guest result.
result() { grep -q "^$2 $1\b" "$work/$last.out"; }

boot boot 0 --disk "$work/disk.raw" --tpm-state "$work/tpm"
for r in vda tpm; do result $r PASS && pass "boot_${r}_passes" || fail "boot_${r}_passes" "$(cat "$work/boot.out")"; done
[ "${J_init_done_s:-None}" = None ] || echo "     boot: @@INIT_START after ${J_init_start_s} s, @@INIT_DONE after ${J_init_done_s} s"
grep -q '^\[ *[0-9]*\.[0-9]\{3\}\] @@INIT_START$' "$work/boot.log" && pass boot_log_has_host_times ||
	fail boot_log_has_host_times "$(head -3 "$work/boot.log")"

boot cut 3 --disk "$work/disk.raw" --tpm-state "$work/tpm" --append smoke.hang --kill-on @@HANG
[ "$J_killed" = True ] && ! grep -q '@@INIT_DONE' "$work/cut.log" && pass cut_killed_at_hang ||
	fail cut_killed_at_hang "killed=$J_killed"
# swtpm --terminate notices the cut by itself (notes §8); a signal here means it did not.
[ "$J_swtpm_end" = exit ] && pass cut_swtpm_exits_by_itself || fail cut_swtpm_exits_by_itself "needed $J_swtpm_end"

boot notpm 1 --disk "$work/disk.raw"
result tpm FAIL && result vda PASS && pass notpm_reports_tpm_fail || fail notpm_reports_tpm_fail "$(cat "$work/notpm.out")"

boot hang 2 --disk "$work/disk.raw" --tpm-state "$work/tpm" --append smoke.hang --timeout 8
[ "$J_timed_out" = True ] && pass hang_times_out || fail hang_times_out "timed_out=$J_timed_out"

boot panic 2 --disk "$work/disk.raw" --tpm-state "$work/tpm" --append smoke.exit
[ "$J_panic" = True ] && pass panic_is_seen || fail panic_is_seen "panic=$J_panic"

finish
