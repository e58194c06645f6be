# What `make image` (image/build.sh) made, checked from outside: the disk has the shape of
# Constellation's (ESP, root-x86-64, root-x86-64-verity, the partition UUIDs the halves of the
# root hash), the ESP starts the UKI, the UKI's command line is mkosi's plus roothash=, the
# verity tree verifies the root against that hash, and the boot stage rebuilt from the same
# root and agent in another cache folder gives the same bytes (UKI, disk, measurements). A
# second run with everything cached does nothing.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-imgbuild-XXXXXX)
trap 'rm -rf "$work"' EXIT
img=$BUILD/image
if [ ! -e "$img/info" ] || [ ! -e "$img/disk.raw" ]; then
	fail image_build_exists "$img is missing: make image"
	exit 1
fi
roothash=$(cat "$img/roothash")
info() { sed -n "s/^$1 //p" "$img/info"; }

t=image_build_disk_is_esp_root_verity_with_uuids_from_the_root_hash
got=$(sfdisk --json "$img/disk.raw" | python3 -c '
import json, sys
p = json.load(sys.stdin)["partitiontable"]["partitions"]
print(" ".join("%s/%s" % (x["type"].lower(), x["uuid"].lower()) for x in p))')
h=$roothash
want="c12a7328-f81f-11d2-ba4b-00a0c93ec93b/636f6e73-7465-6c2d-6573-700000000000"
want="$want 4f68bce3-e8cd-4db1-96e7-fbcaf984b709/${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"
want="$want 2c7357ed-ebd2-46d9-aec1-23d437ec2bf5/${h:32:8}-${h:40:4}-${h:44:4}-${h:48:4}-${h:52:12}"
[ "$got" = "$want" ] && pass $t || fail $t "partitions '$got', want '$want'"

# part N OUT: partition N of the disk into OUT
part() {
	local start size
	read -r start size < <(sfdisk --json "$img/disk.raw" | python3 -c '
import json, sys
p = json.load(sys.stdin)["partitiontable"]["partitions"][int(sys.argv[1]) - 1]
print(p["start"], p["size"])' "$1")
	dd if="$img/disk.raw" of="$2" bs=512 skip="$start" count="$size" status=none
}
part 1 "$work/esp" && part 2 "$work/root" && part 3 "$work/verity"
t=image_build_esp_starts_the_uki_directly
MTOOLS_SKIP_CHECK=1 mcopy -n -i "$work/esp" ::/EFI/BOOT/BOOTX64.EFI "$work/boot.efi" 2>"$work/mcopy.err"
cmp -s "$work/boot.efi" "$img/constel-image.efi" && ! MTOOLS_SKIP_CHECK=1 mdir -i "$work/esp" ::/EFI/systemd >/dev/null 2>&1 &&
	pass $t || fail $t "BOOTX64.EFI is not the UKI: $(cat "$work/mcopy.err")"
t=image_build_command_line_is_mkosi_s_plus_roothash
cl=$(sed -n 's/^KernelCommandLine=//p' image/mkosi.conf | sed 's/^!\* *//')
[ "$(cat "$img/cmdline")" = "$cl roothash=$roothash" ] && grep -aq "roothash=$roothash" "$img/constel-image.efi" &&
	pass $t || fail $t "'$(cat "$img/cmdline")'"
t=image_build_verity_tree_verifies_the_root_partition
veritysetup verify "$work/root" "$work/verity" "$roothash" >"$work/v.out" 2>&1 &&
	[ "$(head -c 4 "$work/root")" = hsqs ] && pass $t || fail $t "$(tail -1 "$work/v.out")"
t=image_build_measurements_are_measure_py_s_for_the_uki
image/measure.py --uki "$img/constel-image.efi" --zero 8,12,13,15 >"$work/m.json" 2>&1 &&
	cmp -s "$work/m.json" "$img/measurements.json" && pass $t || fail $t "$(head -c 300 "$work/m.json")"
t=image_build_initrd_holds_the_roots_own_ca_bundle
# (the agent's https clients read /etc/ssl/certs/ca-certificates.crt before the switch)
unsquashfs -q -n -d "$work/rootca" "$work/root" etc/ssl/certs/ca-certificates.crt >/dev/null 2>&1
cmp -s <(python3 tests/initrd/cpio_check.py "$img/initrd.img" --cat etc/ssl/certs/ca-certificates.crt) \
	"$work/rootca/etc/ssl/certs/ca-certificates.crt" &&
	[ "$(info ca_bundle | cut -d' ' -f4)" = "$(sha256sum <"$work/rootca/etc/ssl/certs/ca-certificates.crt" | cut -c1-64)" ] &&
	pass "$t ($(info ca_bundle | cut -d' ' -f1-2))" || fail $t "the initrd's bundle is not the root's (info: '$(info ca_bundle)')"

# the boot stage again in a cache folder of its own (the root linked in): the same bytes
R=$(dirname "$(readlink -f "$img/roothash")")
mkdir -p "$work/cache" && ln -s "$R" "$work/cache/$(basename "$R")"
t=image_build_boot_stage_is_byte_for_byte_reproducible
CONSTEL_CACHE=$work/cache image/build.sh "$work/out" >"$work/build.out" 2>&1
rc=$?
diffs=
for f in constel-image.efi disk.raw measurements.json initrd.img esp.img; do
	cmp -s "$work/out/$f" "$img/$f" || diffs="$diffs $f"
done
[ $rc = 0 ] && [ -z "$diffs" ] && [ "$(readlink -f "$work/out/disk.raw")" != "$(readlink -f "$img/disk.raw")" ] &&
	pass "$t (UKI sha256 $(info uki_sha256 | cut -c1-16))" || fail $t "exit $rc, differing:$diffs $(tail -2 "$work/build.out")"
t=image_build_second_run_is_cached
s=$(date +%s%N)
CONSTEL_CACHE=$work/cache image/build.sh "$work/out" >"$work/build2.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - s) / 1000000))
# a full build takes minutes; a cache hit hashes the inputs (under 5 s idle, 30 s on a loaded machine)
[ $rc = 0 ] && grep -q 'cached:' "$work/build2.out" && [ $ms -lt 30000 ] && pass "$t ($ms ms)" ||
	fail $t "exit $rc after $ms ms: $(tail -1 "$work/build2.out")"
