# The mkosi image booted under QEMU (qemu-tests/image.sh): OVMF starts the UKI in the image
# disk's ESP, the agent opens the squashfs root by roothash= with dm-verity, joins
# constel-joinservice with the image's predicted measurements (PCRs 4, 8, 9, 11, 12, 13, 15)
# enforced, and reaches the kubelet double and the image's containerd in the image's root.
# Logs stay in $BUILD/qemu-logs-image.
BUILD=${BUILD:-build} bash qemu-tests/image.sh | grep -v ' passed, [0-9]* failed'
exit "${PIPESTATUS[0]}"
