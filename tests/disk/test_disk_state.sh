# The state-disk decision of spec §6.2 from the LUKS2 header, on images that cryptsetup (an
# implementation we did not write) formats: not LUKS, LUKS without the token, with the token
# initialized or not; then headers changed on purpose (checksum recomputed, as an attacker
# would) that the strict check must refuse with one line naming the field, and the disk
# bytes unchanged by the check. No device-mapper needed: only headers are read.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-disk-XXXXXX)
trap 'rm -rf "$work"' EXIT

fmt() { # fmt IMAGE: a LUKS2 header as the Go disk-mapper makes it (without dm-integrity)
	truncate -s 20M "$1"
	printf 'pass' | cryptsetup luksFormat --type luks2 --batch-mode --cipher aes-xts-plain64 \
		--key-size 512 --sector-size 4096 --pbkdf argon2id --pbkdf-memory 32 \
		--pbkdf-force-iterations 4 --key-file - "$1" >/dev/null 2>&1
}
token() { # token IMAGE BOOL
	printf '{"type":"constellation-state-disk","keyslots":[],"diskIsInitialized":%s}' "$2" |
		cryptsetup token import --token-id 0 --token-replace "$1" >/dev/null 2>&1
}
# mutate IMAGE PYTHON [secondary]: a header changed on purpose, checksum made right.
mutate() { python3 tests/disk/mutate_header.py "$@"; }
state() { "$agent" disk-state "$1" 2>&1; }

t=disk_state_of_plain_and_cryptsetup_images
truncate -s 1M "$work/zero.img"
fmt "$work/a.img"
uuid=$(cryptsetup luksUUID "$work/a.img")
s1=$(state "$work/zero.img")
s2=$(state "$work/a.img")
token "$work/a.img" false
s3=$(state "$work/a.img")
token "$work/a.img" true
s4=$(state "$work/a.img")
if [ "$s1" = new ] && [ "$s2" = "not-initialized $uuid" ] && [ "$s3" = "not-initialized $uuid" ] &&
	[ "$s4" = "initialized $uuid" ]; then
	pass $t
else
	fail $t "zero '$s1', fresh '$s2', false '$s3', true '$s4'"
fi

t=disk_state_accepts_the_integrity_segment_of_the_go_disk_mapper
cp "$work/a.img" "$work/i.img"
mutate "$work/i.img" 'd["segments"]["0"]["integrity"] = {"type": "hmac(sha256)", "journal_encryption": "none", "journal_integrity": "none"}; d["keyslots"]["0"]["key_size"] = 96'
s=$(state "$work/i.img")
[ "$s" = "initialized $uuid" ] && pass $t || fail $t "$s"

# refused NAME WANT PYTHON: the change is refused with the line WANT, and the disk unchanged
refused() {
	local t=$1 want=$2 out rc before
	cp "$work/a.img" "$work/m.img"
	mutate "$work/m.img" "$3"
	before=$(sha256sum <"$work/m.img")
	out=$(state "$work/m.img")
	rc=$?
	if [ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -qF -- "$want" <<<"$out" &&
		[ "$(sha256sum <"$work/m.img")" = "$before" ]; then
		pass "$t"
	else
		fail "$t" "exit $rc: $out"
	fi
}
refused disk_state_refuses_cipher_null "segment 0: encryption 'cipher_null-ecb'" \
	'd["segments"]["0"]["encryption"] = "cipher_null-ecb"'
refused disk_state_refuses_a_weak_kdf "keyslot 0: kdf is not argon2id" \
	'd["keyslots"]["0"]["kdf"] = {"type": "pbkdf2", "hash": "sha256", "iterations": 1000, "salt": "AA=="}'
refused disk_state_refuses_a_journal_on_the_integrity_segment "segment 0: integrity is not hmac(sha256)" \
	'd["segments"]["0"]["integrity"] = {"type": "hmac(sha256)", "journal_encryption": "aes", "journal_integrity": "none"}'
refused disk_state_refuses_unknown_fields "keyslot 0: unknown field 'backdoor'" \
	'd["keyslots"]["0"]["backdoor"] = 1'
refused disk_state_refuses_unknown_config_fields "config: unknown field 'x-swapped'" \
	'd["config"]["x-swapped"] = "1"'
refused disk_state_refuses_af_stripes "keyslot 0: af is not luks1 with 4000 stripes" \
	'd["keyslots"]["0"]["af"]["stripes"] = 10'
refused disk_state_refuses_512_byte_sectors "segment 0: sector_size 512, want 4096" \
	'd["segments"]["0"]["sector_size"] = 512'
refused disk_state_refuses_a_digest_without_pbkdf2 "digest 0: not pbkdf2 sha256" \
	'd["digests"]["0"]["hash"] = "sha1"'

# ---- damaged copies (spec §6.2, as libcryptsetup reads them): a missing or damaged primary
# is recovered from the secondary at libcryptsetup's offsets; the disk is decided by that
# copy, never "new" while it says initialized, and neither disk-state nor disk-prepare writes.
prepare() { "$agent" disk-prepare "$1" --mapping constel-disk-test 2>&1; }
zero_at() { dd if=/dev/zero of="$1" bs=4096 seek=$(($2 / 4096)) count=1 conv=notrunc 2>/dev/null; }
# damaged NAME IMAGE WANT: disk-state says WANT, disk-prepare says the same without formatting
# and warns of the damaged copy, the image byte-identical after both
damaged() {
	local t=$1 img=$2 want=$3 before s p rc
	before=$(sha256sum <"$img")
	s=$(state "$img")
	p=$("$agent" disk-prepare "$img" --mapping constel-disk-test 2>"$work/prep.err")
	rc=$?
	if [ "$s" = "$want" ] && [ "$(sha256sum <"$img")" = "$before" ] && [ $rc = 0 ] &&
		[ "$p" = "$want" ] && ! grep -q formatt "$work/prep.err" &&
		grep -q 'one LUKS2 header copy is missing or damaged' "$work/prep.err"; then
		pass "$t"
	else
		fail "$t" "state '$s', prepare exit $rc '$p' ($(cat "$work/prep.err")), changed $([ "$(sha256sum <"$img")" = "$before" ] && echo no || echo yes)"
	fi
}
cp "$work/a.img" "$work/p.img"
zero_at "$work/p.img" 0
damaged disk_state_recovers_a_zeroed_primary_from_the_secondary "$work/p.img" "initialized $uuid"

cp "$work/a.img" "$work/s2.img"
zero_at "$work/s2.img" 16384
damaged disk_state_keeps_the_primary_when_the_secondary_is_zeroed "$work/s2.img" "initialized $uuid"

t=disk_state_uses_the_secondary_when_the_primary_checksum_does_not_match
cp "$work/a.img" "$work/c.img"
printf 'X' | dd of="$work/c.img" bs=1 seek=5000 conv=notrunc 2>/dev/null
damaged $t "$work/c.img" "initialized $uuid"

# the scan finds the secondary of a larger header (64 KiB: the third offset)
t=disk_state_recovers_the_secondary_of_a_64k_header
truncate -s 20M "$work/big.img"
printf 'pass' | cryptsetup luksFormat --type luks2 --batch-mode --cipher aes-xts-plain64 \
	--key-size 512 --sector-size 4096 --pbkdf argon2id --pbkdf-memory 32 \
	--pbkdf-force-iterations 4 --luks2-metadata-size 64k --key-file - "$work/big.img" >/dev/null 2>&1
token "$work/big.img" true
ubig=$(cryptsetup luksUUID "$work/big.img")
zero_at "$work/big.img" 0
damaged $t "$work/big.img" "initialized $ubig"

t=disk_state_decides_a_zeroed_primary_by_a_not_initialized_secondary
cp "$work/a.img" "$work/n.img"
token "$work/n.img" false
zero_at "$work/n.img" 0
s=$(state "$work/n.img")
[ "$s" = "not-initialized $uuid" ] && pass $t || fail $t "$s"

# no intact copy, but copies on the disk: refused with one line, never new
t=disk_state_refuses_when_no_copy_is_intact
cp "$work/a.img" "$work/b.img"
printf 'X' | dd of="$work/b.img" bs=1 seek=5000 conv=notrunc 2>/dev/null
printf 'X' | dd of="$work/b.img" bs=1 seek=$((16384 + 5000)) conv=notrunc 2>/dev/null
before=$(sha256sum <"$work/b.img")
out=$(state "$work/b.img")
rc=$?
p=$(prepare "$work/b.img")
prc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q 'no intact copy' <<<"$out" && [ $prc = 1 ] &&
	[ "$(wc -l <<<"$p")" = 1 ] && [ "$(sha256sum <"$work/b.img")" = "$before" ] &&
	pass $t || fail $t "exit $rc: $out; prepare $prc: $p"

t=disk_state_refuses_a_zeroed_primary_and_a_swapped_secondary
cp "$work/a.img" "$work/w.img"
mutate "$work/w.img" 'd["segments"]["0"]["encryption"] = "cipher_null-ecb"' secondary
zero_at "$work/w.img" 0
before=$(sha256sum <"$work/w.img")
out=$(state "$work/w.img")
rc=$?
p=$(prepare "$work/w.img")
[ $rc = 1 ] && grep -q "recovered secondary copy: segment 0: encryption 'cipher_null-ecb'" <<<"$out" &&
	[ "$(sha256sum <"$work/w.img")" = "$before" ] && pass $t || fail $t "exit $rc: $out; $p"

# libcryptsetup prefers the header copy with the higher sequence number, so a swapped
# secondary header must be refused as a swapped primary is.
t=disk_state_refuses_a_changed_secondary_header
cp "$work/a.img" "$work/s.img"
mutate "$work/s.img" 'd["segments"]["0"]["encryption"] = "cipher_null-ecb"' secondary
before=$(sha256sum <"$work/s.img")
out=$(state "$work/s.img")
rc=$?
after=$(sha256sum <"$work/s.img")
[ $rc = 1 ] && grep -q "secondary\|segment 0: encryption 'cipher_null-ecb'" <<<"$out" &&
	[ "$before" = "$after" ] && pass $t || fail $t "exit $rc: $out"
