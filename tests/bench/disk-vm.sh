#!/bin/bash
# make bench: the state disk's PBKDF cost, in one QEMU boot (TCG) on two blank disks of the
# same size: ours (argon2id at libcryptsetup's least cost) against the Go disk-mapper's
# (argon2id benchmarked to 2000 ms, 64 MiB, 4 threads). Prints the keyslot unlock time of
# each (best of 3, passphrase to volume key, nothing activated), the ratio against the goal
# (>= 40x), the full activation time (dm-integrity + dm-crypt tables) and the wipe
# throughput. Both headers must pass the §6.2 check, in the guest and as cryptsetup dumps them.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/lib.sh
. tests/vm/lib-vm.sh
work=$(mktemp -d /tmp/constel-diskbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
vm_disk_initrd "$work/initrd.gz" >"$work/initrd.out" 2>&1 || { cat "$work/initrd.out"; exit 1; }
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
truncate -s 1M "$work/root.raw"
truncate -s 64M "$work/min.raw" "$work/go.raw"
echo "bench: state-disk unlock, our PBKDF vs Constellation's (one QEMU/TCG boot, 64 MiB disks)"
vm_boot disk_bench "$work/initrd.gz" --disk "$work/root.raw" --disk "$work/min.raw" \
	--disk "$work/go.raw" --timeout 300 \
	--append "disk.case=bench disk.dev=/dev/vdb,/dev/vdc disk.key=$key" | sed 's/^/  /'
for d in min go; do
	printf '  header of the %-13s disk, cryptsetup luksDump: %s\n' "$d" \
		"$(cryptsetup luksDump --dump-json-metadata "$work/$d.raw" 2>&1 | python3 tests/vm/luks_check.py)"
done
m=$(vm_data disk_bench bench_min_unlock_ms)
c=$(vm_data disk_bench bench_constellation_unlock_ms)
printf '  %-44s %10s ms\n' "unlock, argon2id least cost (ours)" "$m" \
	"unlock, argon2id 2 s / 64 MiB / 4 (Go)" "$c" \
	"activate (unlock + tables), ours" "$(vm_data disk_bench bench_min_activate_ms)" \
	"activate (unlock + tables), Go's" "$(vm_data disk_bench bench_constellation_activate_ms)"
printf '  %-44s %10s\n' "ratio Go / ours (goal >= 40x)" \
	"$(awk -v a="$c" -v b="$m" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "n/a" }')"
printf '  %-44s %10s MB/s\n' "wipe throughput (dm-integrity tags), ours" \
	"$(vm_data disk_bench bench_min_wipe_mbps)"
printf '  %-44s %10s s / %s s\n' "format incl. wipe, ours / Go's" \
	"$(vm_data disk_bench bench_min_format_s)" "$(vm_data disk_bench bench_constellation_format_s)"
