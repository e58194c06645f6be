# make uki / make measurements (image/uki.py, image/esp.sh, image/measure.py --zero): the UKI
# is the same byte for byte when built again later, from another directory and from a clean
# clone of the committed tree (its own initrd scripts and UKI writer, this build's agent); its
# PE header carries no build time; its sections hold exactly the inputs, as objcopy (binutils,
# an independent PE reader) reads them back; the ESP image is reproducible too; and
# build/measurements.json is the full enforced set of spec §2.7 for that UKI.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-uki-XXXXXX)
trap 'rm -rf "$work"' EXIT
deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
eval "$(qemu-tests/kernel.sh 2>/dev/null)"
stub=/usr/lib/systemd/boot/efi/linuxx64.efi.stub
for f in "$stub" "${BZIMAGE:-/nonexistent}" "$BUILD/constel-agent.stripped"; do
	[ -e "$f" ] || { fail uki_inputs "$f is missing (make agent; deps/host-setup.sh installs systemd-boot-efi)"; exit 1; }
done
sha() { sha256sum "$1" 2>/dev/null | cut -c1-64; }
# uki SRC OUT [INITRD]: the UKI of make uki, with the scripts of the tree SRC
uki() {
	(cd "$1" && unset SOURCE_DATE_EPOCH && python3 image/uki.py --linux "$BZIMAGE" --initrd "${3:-$work/initrd.img}" \
		--cmdline image/qemu-node.cmdline --osrel image/qemu-node.os-release -o "$2")
}
if ! BUILD=$BUILD DEPS=$deps initrd/build.sh "$work/initrd.img" >"$work/initrd.out" 2>&1; then
	fail uki_initrd_builds "$(tail -2 "$work/initrd.out")"
	exit 1
fi

t=uki_two_builds_are_byte_identical
mkdir -p "$work/a" "$work/b"
uki "$PWD" "$work/a/constel.efi" 2>"$work/err"
sleep 1.1 # a time stamp in seconds would now differ
(cd "$work/b" && uki "$OLDPWD" "$work/b/constel.efi") 2>>"$work/err"
a=$(sha "$work/a/constel.efi")
[ -n "$a" ] && [ "$a" = "$(sha "$work/b/constel.efi")" ] && pass "$t ($a)" ||
	fail $t "$a vs $(sha "$work/b/constel.efi"): $(cat "$work/err")"

t=uki_of_make_uki_is_the_same
if [ -e "$BUILD/constel.efi" ] && [ "$BUILD/constel.efi" -nt "$BUILD/initrd.img" ]; then
	[ "$(sha "$BUILD/constel.efi")" = "$a" ] && pass $t || fail $t "$BUILD/constel.efi is $(sha "$BUILD/constel.efi"), a rebuild $a"
else
	pass "$t (skipped: no current $BUILD/constel.efi; make uki)"
fi

t=uki_from_a_clean_clone_is_byte_identical
if git clone -q "$PWD" "$work/clone" 2>"$work/err" &&
	(build=$(cd "$BUILD" && pwd) && cd "$work/clone" && BUILD=$build DEPS=$deps initrd/build.sh "$work/clone-initrd.img") >"$work/err" 2>&1 &&
	uki "$work/clone" "$work/clone.efi" "$work/clone-initrd.img" 2>"$work/err"; then
	[ "$(sha "$work/clone.efi")" = "$a" ] && pass $t || fail $t "clone $(sha "$work/clone.efi"), here $a"
else
	fail $t "$(tail -2 "$work/err")"
fi

t=uki_pe_header_has_no_build_time
if objdump -p "$work/a/constel.efi" 2>/dev/null | grep -q 'Time/Date.*Thu Jan  1 00:00:00 1970'; then
	SOURCE_DATE_EPOCH=1700000000 python3 image/uki.py --linux "$BZIMAGE" --initrd "$work/initrd.img" \
		--cmdline image/qemu-node.cmdline --osrel image/qemu-node.os-release -o "$work/epoch.efi"
	p4() { python3 image/measure.py --uki "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["4"]["expected"])'; }
	# the time stamp is hashed into PCR 4: a build time would make it unpredictable
	objdump -p "$work/epoch.efi" | grep -q 'Time/Date.*Nov 14 .*2023' && [ "$(p4 "$work/epoch.efi")" != "$(p4 "$work/a/constel.efi")" ] &&
		pass $t || fail $t "SOURCE_DATE_EPOCH not honoured: $(objdump -p "$work/epoch.efi" | grep Time/Date)"
else
	fail $t "$(objdump -p "$work/a/constel.efi" 2>&1 | grep -m1 'Time/Date\|objdump')"
fi

t=uki_pe_checksum_is_right
# Independent of image/uki.py: the 16-bit one's-complement sum with end-around carry over the
# file with the CheckSum field zeroed, plus the file length, computed here from the spec.
sum=$(python3 - "$work/a/constel.efi" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
at = struct.unpack_from("<I", d, 0x3C)[0] + 24 + 64
stored = struct.unpack_from("<I", d, at)[0]
d[at:at + 4] = bytes(4)
s = 0
for i in range(0, len(d) - len(d) % 2, 2):
    s += d[i] | d[i + 1] << 8
    s = (s & 0xFFFF) + (s >> 16)
if len(d) % 2:
    s += d[-1]
    s = (s & 0xFFFF) + (s >> 16)
print("%08x %08x" % (stored, (s + len(d)) & 0xFFFFFFFF))
PY
)
[ -n "$sum" ] && [ "${sum% *}" = "${sum#* }" ] && pass "$t (${sum% *})" || fail $t "stored/computed: $sum"

t=uki_sections_hold_the_inputs_as_objcopy_reads_them
why=
for s in osrel:image/qemu-node.os-release linux:$BZIMAGE initrd:$work/initrd.img; do
	objcopy -O binary --only-section=.${s%%:*} "$work/a/constel.efi" "$work/sec" 2>/dev/null &&
		cmp -s "$work/sec" "${s#*:}" || why="$why .${s%%:*}"
done
objcopy -O binary --only-section=.cmdline "$work/a/constel.efi" "$work/sec" 2>/dev/null
[ "$(cat "$work/sec")" = "$(cat image/qemu-node.cmdline)" ] && [ "$(tail -c1 "$work/sec" | od -An -c | tr -d ' ')" != '\n' ] || why="$why .cmdline"
order=$(objdump -h "$work/a/constel.efi" | awk '$2 ~ /^\./ { printf "%s ", $2 }')
[ "$order" = ".text .reloc .data .dynamic .rela .dynsym .sbat .sdmagic .osrel .cmdline .linux .initrd " ] || why="$why order($order)"
[ -z "$why" ] && pass $t || fail $t "differ:$why"

t=uki_esp_image_is_reproducible
image/esp.sh "$work/esp1.img" "$work/a/constel.efi" 2>"$work/err" && sleep 1.1 &&
	image/esp.sh "$work/esp2.img" "$work/b/constel.efi" 2>>"$work/err"
MTOOLS_SKIP_CHECK=1 mcopy -n -i "$work/esp1.img" ::/EFI/BOOT/BOOTX64.EFI "$work/back.efi" 2>>"$work/err"
[ -n "$(sha "$work/esp1.img")" ] && [ "$(sha "$work/esp1.img")" = "$(sha "$work/esp2.img")" ] &&
	cmp -s "$work/back.efi" "$work/a/constel.efi" && pass $t ||
	fail $t "$(sha "$work/esp1.img") vs $(sha "$work/esp2.img"): $(tail -1 "$work/err")"

t=uki_measurements_are_the_full_enforced_set
python3 image/measure.py --uki "$work/a/constel.efi" --zero 8,12,13,15 >"$work/m.json" 2>"$work/err"
got=$(python3 - "$work/m.json" "$work/a/constel.efi" <<'PY' 2>&1
import json, subprocess, sys
m = json.load(open(sys.argv[1]))
only = json.loads(subprocess.run(["python3", "image/measure.py", "--uki", sys.argv[2]], check=True,
                                 stdout=subprocess.PIPE).stdout)
zero = all(m[k]["expected"] == "0" * 64 for k in ("8", "12", "13", "15"))
same = all(m[k] == only[k] for k in ("4", "9", "11"))
print(" ".join(sorted(m, key=int)), all(v["warnOnly"] is False for v in m.values()), zero, same)
PY
)
[ "$got" = "4 8 9 11 12 13 15 True True True" ] && pass $t || fail $t "$got $(cat "$work/err")"

t=uki_make_measurements_matches
if [ -e "$BUILD/measurements.json" ] && [ "$BUILD/measurements.json" -nt "$BUILD/initrd.img" ]; then
	cmp -s "$BUILD/measurements.json" "$work/m.json" && pass $t || fail $t "$BUILD/measurements.json differs from a rebuild's"
else
	pass "$t (skipped: no current $BUILD/measurements.json; make measurements)"
fi

t=uki_refuses_bad_input_in_one_line
python3 image/uki.py --stub image/qemu-node.cmdline --linux "$BZIMAGE" --initrd "$work/initrd.img" \
	--cmdline image/qemu-node.cmdline --osrel image/qemu-node.os-release -o "$work/x.efi" 2>"$work/e1"
r1=$?
printf 'a\nb\n' >"$work/two-lines"
python3 image/uki.py --linux "$BZIMAGE" --initrd "$work/initrd.img" --cmdline "$work/two-lines" \
	--osrel image/qemu-node.os-release -o "$work/x.efi" 2>"$work/e2"
r2=$?
[ $r1 != 0 ] && [ $r2 != 0 ] && [ "$(cat "$work/e1" "$work/e2" | wc -l)" = 2 ] && grep -q 'not a PE' "$work/e1" &&
	grep -q 'one non-empty line' "$work/e2" && [ ! -e "$work/x.efi" ] && pass $t || fail $t "exits $r1/$r2: $(cat "$work/e1" "$work/e2")"
