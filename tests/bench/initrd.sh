#!/bin/bash
# make bench: the agent's initrd by part (uncompressed) and its compressed size with gzip and
# zstd, against a baseline measured in the same run: the initramfs-tools initrd Debian built
# for the same kernel (/boot/initrd.img-KVER), when there is one. Numbers only, no verdict.
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
