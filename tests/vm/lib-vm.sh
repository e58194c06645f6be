# Helpers for the tests and benches that boot a test program under QEMU (qemu-tests/vm.py).
# Source after tests/lib.sh. Needs BUILD and work (a scratch directory) set.

# What the state disk needs in the guest: virtio, device-mapper with dm-crypt and
# dm-integrity, the ciphers dm-crypt asks the kernel for (xts(aes), authenc(hmac(sha256))),
# AF_ALG for libcryptsetup's cipher checks, ext4 and its crc32c (no modprobe in the guest).
VM_DISK_MODULES="virtio_pci virtio_blk dm_crypt dm_integrity xts ecb authenc crc32c_generic
ext4 aesni_intel af_alg algif_skcipher algif_hash algif_aead"

# vm_disk_initrd OUT: an initrd whose /init is the state-disk test program, with the agent
# (for its command-line entry points) and the static mke2fs of the dependency build.
vm_disk_initrd() {
	local deps mke2fs
	deps=$(cat "$BUILD/deps-prefix" 2>/dev/null) || return 1
	mke2fs=${MKE2FS:-$deps/sbin/mke2fs}
	[ -x "$mke2fs" ] || { echo "no static mke2fs at $mke2fs" >&2; return 1; }
	qemu-tests/mkinitrd.sh "$1" --init "$BUILD/vm/guest_disk" --modules "$VM_DISK_MODULES" \
		--file "$BUILD/constel-agent:/bin/constel-agent" --file "$mke2fs:/sbin/mke2fs"
}

# vm_boot NAME INITRD [vm.py options...]: one boot; its results come out as PASS/FAIL lines
# named NAME_<result>, its serial log is $work/NAME.log. Returns vm.py's exit status.
vm_boot() {
	local name=$1 initrd=$2 rc
	shift 2
	python3 qemu-tests/vm.py --initrd "$initrd" --log "$work/$name.log" "$@" >"$work/$name.out" 2>&1
	rc=$?
	sed -E "s/^(PASS|FAIL) /\1 ${name}_/" "$work/$name.out" | grep -E '^(PASS|FAIL) '
	return $rc
}

# vm_data NAME KEY: the value of the guest's last "@@DATA KEY VALUE" line in boot NAME.
vm_data() {
	grep -ao "@@DATA $2 [^[:space:]]*" "$work/$1.log" | tail -1 | awk '{print $3}'
}
