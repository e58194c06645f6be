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

t=disk_state_refuses_a_header_whose_checksum_does_not_match
cp "$work/a.img" "$work/c.img"
printf 'X' | dd of="$work/c.img" bs=1 seek=5000 conv=notrunc 2>/dev/null
out=$(state "$work/c.img")
[ $? = 1 ] && grep -q 'LUKS2 header: primary: checksum mismatch' <<<"$out" && pass $t || fail $t "$out"

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
