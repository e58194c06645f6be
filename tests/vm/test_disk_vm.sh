# The state disk (spec §6) on a real kernel: each case is a QEMU boot of tests/vm/guest_disk.c
# as /init, with the disk images carried from boot to boot as a node's disk would be. The
# guest reports @@RESULT lines (each becomes a PASS/FAIL line here, prefixed with the boot);
# the host compares what different boots saw and checks the images with Debian's cryptsetup.
#   1 first boot on a blank disk: formatted, token false, mapping, ext4, key change, token
#     true, old passphrase refused; the header passes §6.2 as cryptsetup dumps it
#   2 reboot: every formatting entry point refuses the initialized disk, a wrong key changes
#     nothing, the key opens it, the data of boot 1 is byte-identical; 2b the same on a copy
#     whose primary header is zeroed, which the unlock then repairs
#   3 headers changed on purpose (cipher_null, 512-byte sectors, an unknown field): refused,
#     images unchanged
#   4 the reset after a fatal error, 5 the reformat of the reset disk
#   6/7 power cut during the wipe, then the next boot formats again
#   8/9 power cut right after the token turned true, then the next boot takes the reboot path
. tests/lib.sh
. tests/vm/lib-vm.sh
set -u
work=$(mktemp -d /tmp/constel-vmdisk-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! vm_disk_initrd "$work/initrd.gz" >"$work/initrd.out" 2>&1; then
	fail disk_vm_initrd "$(tail -3 "$work/initrd.out")"
	exit 1
fi
t=disk_vm_initrd_is_reproducible
sleep 1 # a later second: mtimes of the inputs must not leak into the archive
vm_disk_initrd "$work/initrd2.gz" >/dev/null 2>&1 && cmp -s "$work/initrd.gz" "$work/initrd2.gz" &&
	pass $t || fail $t "two builds differ"
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
args="disk.key=$key"
truncate -s 1M "$work/root.raw" # /dev/vda: the state disk is the second disk, as on QEMU nodes
blank() { rm -f "$1" && truncate -s 64M "$1"; }
disks() { local d o=""; for d; do o="$o --disk $d"; done; echo "--disk $work/root.raw$o"; }
state() { "$BUILD/constel-agent" disk-state "$1" 2>&1; }
ident() { sha256sum <"$1" | cut -c1-64; }

# 1: first boot
blank "$work/a.raw"
vm_boot disk_vm_first "$work/initrd.gz" $(disks "$work/a.raw") --tpm-state "$work/tpm" \
	--append "disk.case=first disk.tpm=1 $args"
check disk_vm_first_boot_completed test $? = 0
uuid1=$(vm_data disk_vm_first uuid)
sha1=$(vm_data disk_vm_first data_sha)
salt1=$(vm_data disk_vm_first salt)
t=disk_vm_created_header_passes_the_6_2_check_as_cryptsetup_dumps_it
out=$(cryptsetup luksDump --dump-json-metadata "$work/a.raw" 2>&1 | python3 tests/vm/luks_check.py --token initialized)
[ $? = 0 ] && pass $t || fail $t "$out"
t=disk_vm_agent_reads_the_created_disk_as_initialized
out=$(state "$work/a.raw")
[ "$out" = "initialized $uuid1" ] && [ -n "$uuid1" ] && pass $t || fail $t "$out (uuid '$uuid1')"

# 2: reboot
vm_boot disk_vm_reboot "$work/initrd.gz" $(disks "$work/a.raw") --append "disk.case=reboot $args"
check disk_vm_reboot_boot_completed test $? = 0
t=disk_vm_data_and_salt_identical_after_reboot
sha2=$(vm_data disk_vm_reboot data_sha)
salt2=$(vm_data disk_vm_reboot salt)
[ -n "$sha1" ] && [ "$sha1" = "$sha2" ] && [ "$salt1" = "$salt2" ] && pass $t ||
	fail $t "data $sha1 -> $sha2, salt $salt1 -> $salt2"

# 2b: the reboot on a copy whose primary header was zeroed: every entry point still refuses
# to format, the key opens it through the secondary copy, the data is intact, and the primary
# is rewritten from the secondary once the key opened the disk
cp --sparse=always "$work/a.raw" "$work/zeroed.raw"
dd if=/dev/zero of="$work/zeroed.raw" bs=4096 count=1 conv=notrunc 2>/dev/null
vm_boot disk_vm_zeroed_primary "$work/initrd.gz" $(disks "$work/zeroed.raw") \
	--append "disk.case=reboot $args"
check disk_vm_zeroed_primary_boot_completed test $? = 0
t=disk_vm_zeroed_primary_keeps_the_data_and_is_repaired
shaz=$(vm_data disk_vm_zeroed_primary data_sha)
out=$(state "$work/zeroed.raw")
[ -n "$sha1" ] && [ "$shaz" = "$sha1" ] && [ "$out" = "initialized $uuid1" ] &&
	[ "$(head -c 6 "$work/zeroed.raw" | od -An -tx1 | tr -d ' \n')" = 4c554b53babe ] &&
	grep -aq 'rewritten from the intact one' "$work/disk_vm_zeroed_primary.log" && pass $t ||
	fail $t "data $sha1 -> '$shaz', state '$out'"
rm -f "$work/zeroed.raw"

# 3: headers changed on purpose, on copies of the initialized disk
mutate() { python3 tests/disk/mutate_header.py "$@"; }
cp --sparse=always "$work/a.raw" "$work/null.raw"
mutate "$work/null.raw" 'd["segments"]["0"]["encryption"] = "cipher_null-ecb"'
cp --sparse=always "$work/a.raw" "$work/sector.raw"
mutate "$work/sector.raw" 'd["segments"]["0"]["sector_size"] = 512'
cp --sparse=always "$work/a.raw" "$work/field.raw"
mutate "$work/field.raw" 'd["config"]["x-constellation"] = "swapped"'
before="$(ident "$work/null.raw") $(ident "$work/sector.raw") $(ident "$work/field.raw")"
vm_boot disk_vm_refuse "$work/initrd.gz" $(disks "$work/null.raw" "$work/sector.raw" "$work/field.raw") \
	--append "disk.case=refuse disk.dev=/dev/vdb,/dev/vdc,/dev/vdd $args"
check disk_vm_refuse_boot_completed test $? = 0
after="$(ident "$work/null.raw") $(ident "$work/sector.raw") $(ident "$work/field.raw")"
t=disk_vm_refused_images_unchanged
[ "$before" = "$after" ] && pass $t || fail $t "images changed"
t=disk_vm_refusals_name_the_field
n=$(grep -ac -e "encryption 'cipher_null-ecb'" -e 'sector_size 512, want 4096' \
	-e "unknown field 'x-constellation'" "$work/disk_vm_refuse.log")
[ "$n" -ge 6 ] && pass $t || fail $t "$n refusal lines"

# 4/5: the reset, then the next boot formats again
vm_boot disk_vm_reset "$work/initrd.gz" $(disks "$work/a.raw") --append "disk.case=reset $args"
check disk_vm_reset_boot_completed test $? = 0
t=disk_vm_reset_disk_reads_not_initialized
out=$(state "$work/a.raw")
[ "$out" = "not-initialized $uuid1" ] && pass $t || fail $t "$out"
vm_boot disk_vm_reformat "$work/initrd.gz" $(disks "$work/a.raw") --append "disk.case=first $args"
check disk_vm_reformat_boot_completed test $? = 0
t=disk_vm_token_false_disk_is_reformatted
found=$(vm_data disk_vm_reformat found)
uuid5=$(vm_data disk_vm_reformat uuid)
[ "$found" = not-initialized ] && [ -n "$uuid5" ] && [ "$uuid5" != "$uuid1" ] && pass $t ||
	fail $t "found '$found', uuid $uuid1 -> '$uuid5'"

# 6/7: power cut during the wipe
blank "$work/b.raw"
vm_boot disk_vm_cut_wipe "$work/initrd.gz" $(disks "$work/b.raw") --append "disk.case=first $args" \
	--kill-on 'wiping /dev/vdb: [0-9]+ MiB'
check disk_vm_power_cut_during_wipe test $? = 3
t=disk_vm_disk_cut_during_wipe_is_not_initialized
out=$(state "$work/b.raw")
case $out in new | not-initialized*) pass $t ;; *) fail $t "$out" ;; esac
vm_boot disk_vm_after_cut_wipe "$work/initrd.gz" $(disks "$work/b.raw") --append "disk.case=first $args"
check disk_vm_after_cut_wipe_boot_completed test $? = 0
t=disk_vm_next_boot_after_a_cut_wipe_formats_again
found=$(vm_data disk_vm_after_cut_wipe found)
case $found in new | not-initialized) pass $t ;; *) fail $t "found '$found'" ;; esac

# 8/9: power cut right after the token turned true
blank "$work/c.raw"
vm_boot disk_vm_cut_token "$work/initrd.gz" $(disks "$work/c.raw") --append "disk.case=first $args" \
	--kill-on '@@TOKEN_TRUE'
check disk_vm_power_cut_after_token_true test $? = 3
sha8=$(vm_data disk_vm_cut_token data_sha)
vm_boot disk_vm_after_cut_token "$work/initrd.gz" $(disks "$work/c.raw") --append "disk.case=reboot $args"
check disk_vm_after_cut_token_boot_completed test $? = 0
t=disk_vm_next_boot_after_token_true_takes_the_reboot_path
sha9=$(vm_data disk_vm_after_cut_token data_sha)
[ -n "$sha8" ] && [ "$sha8" = "$sha9" ] && pass $t || fail $t "data $sha8 -> '$sha9'"

# No boot printed the key (the guest gets it on the command line, which the kernel does not
# echo with `quiet`; the agent must never log it).
t=disk_vm_serial_logs_hold_no_key
b64=$(printf '%s' "$key" | xxd -r -p | base64)
if grep -aqi -e "$key" -e "$b64" "$work"/*.log; then fail $t "the key is in a serial log"; else pass $t; fi
if grep -q '^FAIL' "$work"/*.out 2>/dev/null; then
	mkdir -p "$BUILD/vm-logs" && cp "$work"/*.log "$BUILD/vm-logs/" && echo "serial logs kept in $BUILD/vm-logs"
fi
