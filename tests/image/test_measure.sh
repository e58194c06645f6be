# image/measure.py against independent computations, on a UKI assembled here as mkosi 14 does
# (objcopy onto Debian's systemd-stub 252) from Debian's kernel and the agent's initrd:
#   PCR 11  systemd 252's own systemd-measure calculate (sections only, and with a phase);
#   PCR 9   the extend chain by hand: sha256sum of the UTF-16LE command line (iconv) and of
#           the initrd, extended with xxd + sha256sum;
#   PCR 4   the Authenticode hashes that signers of our own choice put into their signatures
#           (Debian's on its kernel, osslsigncode's on the UKI, read back with openssl), then
#           the extend chain by hand.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-measure-XXXXXX)
trap 'rm -rf "$work"' EXIT
measure() { python3 image/measure.py "$@"; }
# pcr JSON INDEX: the expected value of one PCR in measure.py's output
pcr() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["expected"])' "$1" "$2" 2>/dev/null; }
# ext VALUE DIGEST: one TPM2_PCR_Extend of the SHA-256 bank, by hand
ext() { printf '%s%s' "$1" "$2" | xxd -r -p | sha256sum | cut -c1-64; }
zero=$(printf '%064d' 0)

stub=/usr/lib/systemd/boot/efi/linuxx64.efi.stub
sdm=/usr/lib/systemd/systemd-measure
eval "$(qemu-tests/kernel.sh 2>/dev/null)"
for f in "$stub" "$sdm" "${BZIMAGE:-/nonexistent}"; do
	[ -e "$f" ] || { fail measure_inputs "$f is missing (deps/host-setup.sh installs systemd-boot-efi, linux-image-amd64)"; exit 1; }
done
deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
if ! BUILD=$BUILD DEPS=$deps initrd/build.sh "$work/initrd.img" >"$work/initrd.out" 2>&1; then
	fail measure_initrd_builds "$(tail -2 "$work/initrd.out")"
	exit 1
fi
# A command line with a trailing newline and a tab: the stub turns them into spaces and drops
# the trailing ones before the kernel sees (and measures) it.
printf 'console=ttyS0\troot=/dev/vda2 constel.csp=qemu constel.attestation-variant=qemu-vtpm rw\n' >"$work/cmdline"
seen='console=ttyS0 root=/dev/vda2 constel.csp=qemu constel.attestation-variant=qemu-vtpm rw'
cp /usr/lib/os-release "$work/osrel"
if ! objcopy --add-section .osrel="$work/osrel" --change-section-vma .osrel=0x20000 \
	--add-section .cmdline="$work/cmdline" --change-section-vma .cmdline=0x30000 \
	--add-section .linux="$BZIMAGE" --change-section-vma .linux=0x2000000 \
	--add-section .initrd="$work/initrd.img" --change-section-vma .initrd=0x3000000 \
	"$stub" "$work/uki.efi" 2>"$work/objcopy.err"; then
	fail measure_uki_builds "$(cat "$work/objcopy.err")"
	exit 1
fi
parts=(--linux "$BZIMAGE" --osrel "$work/osrel" --cmdline "$work/cmdline" --initrd "$work/initrd.img")

t=measure_uki_gives_pcr_4_9_11
measure --uki "$work/uki.efi" >"$work/uki.json" 2>"$work/uki.err"
[ "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sorted(d, key=int), {v["warnOnly"] for v in d.values()})' "$work/uki.json" 2>&1)" = "['4', '9', '11'] {False}" ] &&
	pass $t || fail $t "$(cat "$work/uki.err" "$work/uki.json" | head -5)"

t=measure_sections_give_the_uki_s_pcr_9_and_11
measure "${parts[@]}" >"$work/parts.json" 2>/dev/null
[ -n "$(pcr "$work/parts.json" 11)" ] && [ "$(pcr "$work/parts.json" 9)" = "$(pcr "$work/uki.json" 9)" ] &&
	[ "$(pcr "$work/parts.json" 11)" = "$(pcr "$work/uki.json" 11)" ] && pass $t || fail $t "differ from the UKI's"

sdm_pcr11() { "$sdm" calculate --linux="$BZIMAGE" --osrel="$work/osrel" --cmdline="$work/cmdline" \
	--initrd="$work/initrd.img" --bank=sha256 --phase="$1" 2>/dev/null | sed -n 's/^11:sha256=//p'; }
t=measure_pcr_11_matches_systemd_measure
want=$(sdm_pcr11 '')
[ -n "$want" ] && [ "$want" = "$(pcr "$work/uki.json" 11)" ] && pass $t || fail $t "systemd-measure '$want', ours '$(pcr "$work/uki.json" 11)'"

t=measure_pcr_11_with_a_phase_matches_systemd_measure
want=$(sdm_pcr11 enter-initrd:leave-initrd)
got=$(measure --uki "$work/uki.efi" --phase enter-initrd:leave-initrd 2>/dev/null >"$work/phase.json" && pcr "$work/phase.json" 11)
[ -n "$want" ] && [ "$want" = "$got" ] && [ "$got" != "$(pcr "$work/uki.json" 11)" ] && pass $t || fail $t "systemd-measure '$want', ours '$got'"

t=measure_pcr_9_matches_the_extend_chain_by_hand
c=$(printf '%s\0' "$seen" | iconv -f UTF-8 -t UTF-16LE | sha256sum | cut -c1-64)
i=$(sha256sum <"$work/initrd.img" | cut -c1-64)
want=$(ext "$(ext "$zero" "$c")" "$i")
[ "$want" = "$(pcr "$work/uki.json" 9)" ] && pass $t || fail $t "by hand $want, ours $(pcr "$work/uki.json" 9)"

t=measure_pcr_9_follows_the_initrd
printf 'x' | cat "$work/initrd.img" - >"$work/initrd2.img"
measure --linux "$BZIMAGE" --cmdline "$work/cmdline" --initrd "$work/initrd2.img" >"$work/other.json" 2>/dev/null
[ -n "$(pcr "$work/other.json" 9)" ] && [ "$(pcr "$work/other.json" 9)" != "$(pcr "$work/parts.json" 9)" ] &&
	pass $t || fail $t "the same value for another initrd"

# signed_digest PE: the Authenticode SHA-256 inside the PE's signature, read with openssl
signed_digest() {
	rm -f "$work/sig.der" && osslsigncode extract-signature -in "$1" -out "$work/sig.der" >/dev/null 2>&1 &&
		openssl asn1parse -inform DER -in "$work/sig.der" | awk '/l= *32 prim: OCTET STRING/ { sub(/.*:/, ""); print tolower($0); exit }'
}
t=measure_pcr_4_matches_the_signers_authenticode_hashes
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=measure-test -days 1 -keyout "$work/k.pem" \
	-out "$work/c.pem" >/dev/null 2>&1
osslsigncode sign -certs "$work/c.pem" -key "$work/k.pem" -h sha256 -in "$work/uki.efi" \
	-out "$work/signed.efi" >/dev/null 2>&1
a_uki=$(signed_digest "$work/signed.efi")
a_linux=$(signed_digest "$BZIMAGE") # Debian signs its kernels
want=$(ext "$(ext "$(ext "$(ext "$zero" "$(printf 'Calling EFI Application from Boot Option' | sha256sum | cut -c1-64)")" \
	"$(printf '\0\0\0\0' | sha256sum | cut -c1-64)")" "$a_uki")" "$a_linux")
got=$(measure --uki "$work/signed.efi" 2>/dev/null >"$work/signed.json" && pcr "$work/signed.json" 4)
[ -n "$a_uki" ] && [ -n "$a_linux" ] && [ "$want" = "$got" ] && pass $t ||
	fail $t "signatures '$a_uki' '$a_linux', by hand $want, ours '$got'"

t=measure_pcr_4_counts_a_boot_loader_stage
got=$(measure --uki "$work/uki.efi" --pre-stage /usr/lib/systemd/boot/efi/systemd-bootx64.efi 2>/dev/null >"$work/sdboot.json" && pcr "$work/sdboot.json" 4)
[ -n "$got" ] && [ "$got" != "$(pcr "$work/uki.json" 4)" ] && [ "$(pcr "$work/sdboot.json" 11)" = "$(pcr "$work/uki.json" 11)" ] &&
	pass $t || fail $t "'$got'"

t=measure_refuses_bad_input_in_one_line
measure --linux "$BZIMAGE" --initrd "$work/initrd.img" 2>"$work/e1" >/dev/null
r1=$?
measure --uki "$work/osrel" 2>"$work/e2" >/dev/null
r2=$?
measure "${parts[@]}" --uname "$work/osrel" 2>"$work/e3" >/dev/null
r3=$?
[ $r1 != 0 ] && [ $r2 != 0 ] && [ $r3 != 0 ] && [ "$(cat "$work/e1" "$work/e2" "$work/e3" | wc -l)" = 3 ] &&
	grep -q -- --cmdline "$work/e1" && grep -q 'not a PE' "$work/e2" && grep -q 'systemd-stub 252 does not measure .uname' "$work/e3" &&
	pass $t || fail $t "exits $r1/$r2/$r3: $(cat "$work/e1" "$work/e2" "$work/e3")"
