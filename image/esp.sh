#!/bin/bash
# A small FAT EFI system partition image holding one UKI as \EFI\BOOT\BOOTX64.EFI (the
# removable-media path the firmware boots without any boot variable), byte for byte the same
# from the same UKI: mkfs.fat --invariant with a fixed volume ID, mtools with every time stamp
# from SOURCE_DATE_EPOCH (default 1980-01-01, FAT's first day). The size is the UKI plus 4 MiB,
# rounded up to whole MiB. Needs dosfstools and mtools.
#   image/esp.sh OUT UKI
set -euo pipefail
die() { echo "image/esp.sh: $*" >&2; exit 1; }
[ $# = 2 ] || die "usage: image/esp.sh OUT UKI"
out=$1 uki=$2
[ -s "$uki" ] || die "$uki is missing or empty"
for t in mkfs.fat mmd mcopy; do
	command -v $t >/dev/null || die "$t is missing (apt-get install dosfstools mtools)"
done
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-315532800}
mib=$((($(stat -c %s "$uki") + (5 << 20) - 1) >> 20))
tmp=$out.tmp
rm -f "$tmp"
truncate -s ${mib}M "$tmp"
mkfs.fat --invariant -i 434f4e53 -n CONSTEL-ESP "$tmp" >/dev/null
copy=$(mktemp) && trap 'rm -f "$copy" "$tmp"' EXIT
cp "$uki" "$copy" && touch -d "@$SOURCE_DATE_EPOCH" "$copy"
MTOOLS_SKIP_CHECK=1 mmd -i "$tmp" ::/EFI ::/EFI/BOOT
MTOOLS_SKIP_CHECK=1 mcopy -m -i "$tmp" "$copy" ::/EFI/BOOT/BOOTX64.EFI
mv "$tmp" "$out"
