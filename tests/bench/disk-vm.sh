#!/bin/bash
# make bench: the state disk's PBKDF cost, in one QEMU boot (TCG) on two blank disks of the
# same size: ours (argon2id at libcryptsetup's least cost) against the baseline, the Go
# disk-mapper's (argon2id benchmarked to 2000 ms, 64 MiB, 4 threads), measured in the same
# boot. Prints the keyslot unlock time of each (5 unlocks each, passphrase to volume key,
# nothing activated: median (min-max)), the ratio of the medians against the goal (>= 40x),
# the full activation time (dm-integrity + dm-crypt tables) and the wipe throughput. Both
# headers must pass the §6.2 check, in the guest and as cryptsetup dumps them.
# Key figures: $BUILD/bench/figures-disk-vm.txt.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/lib.sh
. tests/vm/lib-vm.sh
work=$(mktemp -d /tmp/constel-diskbench-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$BUILD/bench"
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
# mmm KEY: "median min max" of the comma-separated samples (older guests: the best of 3 only)
mmm() {
	local v
	v=$(vm_data disk_bench "${1}_samples_ms")
	[ -n "$v" ] || v=$(vm_data disk_bench "${1}_ms")
	tr ',' '\n' <<<"$v" | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f %.2f %.2f\n", v[int((NR + 1) / 2)], v[1], v[NR]; else print "0 0 0" }'
}
read -r m m_lo m_hi < <(mmm bench_min_unlock)
read -r c c_lo c_hi < <(mmm bench_constellation_unlock)
ratio=$(awk -v a="$c" -v b="$m" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "n/a" }')
printf '  %-44s %10s ms  (%s..%s)\n' "unlock, argon2id least cost (ours), median" "$m" "$m_lo" "$m_hi" \
	"baseline: argon2id 2 s / 64 MiB / 4 (Go)" "$c" "$c_lo" "$c_hi"
printf '  %-44s %10s  (worst pair %s)\n' "ratio Go / ours (goal >= 40x)" "${ratio}x" \
	"$(awk -v a="$c_lo" -v b="$m_hi" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "n/a" }')"
printf '  %-44s %10s ms\n' "activate (unlock + tables), ours" "$(vm_data disk_bench bench_min_activate_ms)" \
	"activate (unlock + tables), Go's" "$(vm_data disk_bench bench_constellation_activate_ms)"
printf '  %-44s %10s MB/s\n' "wipe throughput (dm-integrity tags), ours" \
	"$(vm_data disk_bench bench_min_wipe_mbps)"
printf '  %-44s %10s s / %s s\n' "format incl. wipe, ours / Go's" \
	"$(vm_data disk_bench bench_min_format_s)" "$(vm_data disk_bench bench_constellation_format_s)"
printf 'disk_unlock_ours_ms=%s\ndisk_unlock_ours_min_ms=%s\ndisk_unlock_ours_max_ms=%s\ndisk_unlock_go_ms=%s\ndisk_unlock_go_min_ms=%s\ndisk_unlock_go_max_ms=%s\ndisk_unlock_ratio=%s\n' \
	"$m" "$m_lo" "$m_hi" "$c" "$c_lo" "$c_hi" "$ratio" >"$BUILD/bench/figures-disk-vm.txt"
