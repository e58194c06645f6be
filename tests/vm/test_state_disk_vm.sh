# The state disk by a cloud's naming on a real kernel: QEMU attaches disks as GCP does on
# virtio-scsi (scsi-hd vendor=Google, product=PersistentDisk, device_id=NAME: the name in
# VPD page 0x83) and the guest (tests/vm/guest_state_disk.c, the agent's platform layer)
# must pick the one named state-disk; the same disks read as Azure's find none. An NVMe disk
# answers the agent's Identify ioctl (controller and namespace) as QEMU's controller does.
. tests/lib.sh
. tests/vm/lib-vm.sh
set -u
work=$(mktemp -d /tmp/constel-sdvm-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! qemu-tests/mkinitrd.sh "$work/initrd.gz" --init "$BUILD/vm/guest_state_disk" \
	--modules "virtio_pci virtio_scsi sd_mod nvme" >"$work/initrd.out" 2>&1; then
	fail state_disk_vm_initrd "$(tail -3 "$work/initrd.out")"
	exit 1
fi
truncate -s 3M "$work/boot.raw"
truncate -s 5M "$work/state.raw"
truncate -s 7M "$work/nvme.raw"
gce=vendor=Google,product=PersistentDisk
disks="--scsi-disk $work/boot.raw,$gce,device_id=persistent-disk-0 --scsi-disk $work/state.raw,$gce,device_id=state-disk"

vm_boot sdvm_gcp "$work/initrd.gz" $disks --nvme-disk "$work/nvme.raw" \
	--append "sd.csp=gcp sd.nvme=1" --timeout 240
check state_disk_vm_gcp_boot_completed test $? = 0
t=state_disk_vm_gcp_scsi_pd_named_state_disk_is_picked
sectors=$(vm_data sdvm_gcp sectors)
[ "$sectors" = $((5 * 2048)) ] && pass $t || fail $t "picked $(vm_data sdvm_gcp device) of $sectors sectors"
t=state_disk_vm_nvme_identify_namespace_size
[ "$(vm_data sdvm_gcp nsze)" = $((7 * 2048)) ] && pass $t || fail $t "nsze $(vm_data sdvm_gcp nsze)"

vm_boot sdvm_azure "$work/initrd.gz" $disks --append "sd.csp=azure sd.expect=none sd.wait=3" --timeout 240
check state_disk_vm_azure_naming_finds_no_gcp_disk test $? = 0
