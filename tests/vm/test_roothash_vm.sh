# roothash= under QEMU, the agent as PID 1 of build/initrd.img: /dev/vda is a GPT disk as
# mkosi 14 lays it out (an ext4 root of type root-x86-64 whose PARTUUID is the root hash's
# first 128 bits, its dm-verity hash partition of type root-x86-64-verity with the last 128
# bits, a verity superblock at offset 0), /dev/vdb a blank state disk. Each boot has only
# roothash=H (and the fast KDF) on its command line:
#   ok        the right hash: both partitions found, the whole root read through dm-verity,
#             mounted, and only then the state disk opened (and formatted: it is new)
#   wrong     another hash: one line (no partition with its UUIDs), the node stops, the
#             state disk untouched
#   file      one byte of a file's data changed: the full read refuses it with one line,
#             the state disk untouched
#   exec      the same changed byte, the full read switched off (constel.verity.check=mount):
#             the file is one the handover executes, so it is read before the key and refused
#   meta      one byte of the file system's metadata changed, and the full read switched off
#             (constel.verity.check=mount) with root= naming the data partition: the mount
#             itself is refused with one line, the state disk untouched
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-roothash-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
initrd=$BUILD/initrd.img
[ -r "$initrd" ] || { fail roothash_vm_initrd "no $initrd (make initrd)"; exit 1; }

# the root: the §4 mount points, and the containerd the handover starts (a stand-in file whose
# data holds a marker)
mkdir -p "$work/root/var" "$work/root/etc/kubernetes" "$work/root/etc/cni" "$work/root/opt" \
	"$work/root/usr/bin"
head -c 65536 /dev/zero | tr '\0' 'x' >"$work/root/usr/bin/containerd"
printf 'MARKER-roothash-%s' "$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')" >>"$work/root/usr/bin/containerd"
marker=$(tail -c 33 "$work/root/usr/bin/containerd")
mkfs.ext4 -q -b 4096 -E root_owner=0:0 -d "$work/root" "$work/data.img" 16M >/dev/null || { fail roothash_vm_mkfs mkfs; exit 1; }
hash=$(veritysetup format "$work/data.img" "$work/hash.img" | awk '/^Root hash:/{print $3}')
[ ${#hash} = 64 ] || { fail roothash_vm_veritysetup "no root hash"; exit 1; }
uuid() { echo "${1:0:8}-${1:8:4}-${1:12:4}-${1:16:4}-${1:20:12}"; } # Python's uuid.UUID(h)
disk() { # OUT: the GPT disk of data.img and hash.img
	rm -f "$1" && truncate -s 24M "$1"
	printf 'label: gpt\nstart=2048, size=16M, type=4f68bce3-e8cd-4db1-96e7-fbcaf984b709, uuid=%s\nsize=2M, type=2c7357ed-ebd2-46d9-aec1-23d437ec2bf5, uuid=%s\n' \
		"$(uuid "${hash:0:32}")" "$(uuid "${hash:32:32}")" | sfdisk -q "$1" &&
		dd if="$work/data.img" of="$1" bs=1M seek=1 conv=notrunc status=none &&
		dd if="$work/hash.img" of="$1" bs=1M seek=17 conv=notrunc status=none
}
flip() { # IMAGE OFFSET: one byte changed
	python3 -c 'import sys; f=open(sys.argv[1],"r+b"); o=int(sys.argv[2]); f.seek(o); b=f.read(1); f.seek(o); f.write(bytes([b[0]^0x55]))' "$1" "$2"
}
disk "$work/good.raw" || { fail roothash_vm_disk sfdisk; exit 1; }
zero=$(head -c 128M /dev/zero | sha256sum | cut -c1-64)

# boot NAME DISK CMDLINE...: killed on the first line that shows how it ended
boot() {
	local name=$1 d=$2
	shift 2
	rm -f "$work/state.raw" && truncate -s 128M "$work/state.raw"
	# a NIC (slirp, restrict=on) for the network step before the node's flow; nothing listens
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	timeout 300 nice -n 5 python3 qemu-tests/vm.py --initrd "$initrd" --log "$work/$name.log" \
		--disk "$d" --disk "$work/state.raw" --tpm-state "$work/tpm-$name" \
		--start-on 'constel-agent starting as PID 1' --timeout 240 \
		--kill-on 'fatal: |disk: /dev/vdb: ' --hostfwd "tcp:127.0.0.1:$port-:9000" \
		--append "constel.disk-kdf=min constel.reboot-delay=0 $*" >"$work/$name.out" 2>&1
}
log_has() { grep -aqE "$2" "$work/$1.log"; }
why() { grep -a 'constel-agent: \(error\|warn\)' "$work/$1.log" | tail -3 | cut -c1-220 | tr '\n' ' '; }
untouched() { [ "$(sha256sum <"$work/state.raw" | cut -c1-64)" = "$zero" ]; }
errors() { grep -ac 'constel-agent: error' "$work/$1.log"; }

boot ok "$work/good.raw" "roothash=$hash"
t=roothash_vm_right_hash_finds_both_partitions_and_mounts_the_verified_root
log_has ok 'root: roothash=: the root partition is /dev/vda1' &&
	log_has ok 'root: roothash=: the root verity partition is /dev/vda2' &&
	log_has ok 'root: verity: all 16 MiB of the root match the root hash' &&
	log_has ok 'root: /dev/mapper/root \(ext4\) mounted read-only at /sysroot' && pass $t || fail $t "$(why ok)"
t=roothash_vm_the_state_disk_is_opened_only_after_the_root
a=$(grep -an 'mounted read-only at /sysroot' "$work/ok.log" | head -1 | cut -d: -f1)
b=$(grep -an 'disk: /dev/vdb: ' "$work/ok.log" | head -1 | cut -d: -f1)
[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] && pass $t || fail $t "root at line '$a', disk at '$b': $(why ok)"

other=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
boot wrong "$work/good.raw" "roothash=$other"
t=roothash_vm_wrong_hash_is_refused_with_one_line_and_the_state_disk_untouched
log_has wrong "roothash= does not name this machine's root: no root partition .* with PARTUUID ${other:0:8}-" &&
	log_has wrong 'fatal: the real root could not be verified' && ! log_has wrong 'disk: /dev/vdb' &&
	[ "$(errors wrong)" -le 3 ] && untouched && pass $t || fail $t "$(why wrong)"

cp "$work/good.raw" "$work/file.raw"
off=$(grep -aob "$marker" "$work/file.raw" | head -1 | cut -d: -f1)
flip "$work/file.raw" "$off"
boot file "$work/file.raw" "roothash=$hash"
t=roothash_vm_a_changed_file_block_is_refused_with_one_line_and_the_state_disk_untouched
log_has file 'root: verity: a block of the root near byte [0-9]* does not match the root hash' &&
	log_has file 'fatal: the real root could not be verified' && ! log_has file 'disk: /dev/vdb' &&
	untouched && pass $t || fail $t "offset '$off': $(why file)"

boot exec "$work/file.raw" "roothash=$hash constel.verity.check=mount"
t=roothash_vm_without_the_full_read_a_changed_executable_is_still_refused_before_the_key
log_has exec 'root: /dev/mapper/root \(ext4\) mounted read-only' &&
	! log_has exec 'all 16 MiB of the root' &&
	log_has exec 'root: /usr/bin/containerd does not match the root hash: the root is refused' &&
	log_has exec 'fatal: the real root could not be verified' && ! log_has exec 'disk: /dev/vdb' &&
	untouched && pass $t || fail $t "$(why exec)"

cp "$work/good.raw" "$work/meta.raw"
flip "$work/meta.raw" $((1048576 + 1024 + 0x78)) # the superblock's volume name
boot meta "$work/meta.raw" "root=/dev/vda1 roothash=$hash constel.verity.check=mount"
t=roothash_vm_a_changed_metadata_block_is_refused_at_the_mount_and_the_state_disk_untouched
log_has meta 'root: roothash=: the root verity partition is /dev/vda2' &&
	! log_has meta 'the root partition is' &&
	log_has meta 'root: mounting /dev/mapper/root .*a block does not match the root hash' &&
	log_has meta 'fatal: the real root could not be verified' && ! log_has meta 'disk: /dev/vdb' &&
	untouched && pass $t || fail $t "$(why meta)"
