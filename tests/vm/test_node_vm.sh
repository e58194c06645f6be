# Whole nodes under QEMU, the agent as PID 1 (qemu-tests/scenarios.sh), with Debian's real
# containerd and runc, the faithful kubeadm/kubelet doubles and components over https: init,
# join, rejoin, a late join service, refused measurements, a corrupted header, recovery, a
# wrong init secret, a component from another CA refused, a zeroed primary header never
# formatted, and no secret nor bootstrap token in any serial log. Logs stay in $BUILD/qemu-logs.
BUILD=${BUILD:-build} bash qemu-tests/scenarios.sh | grep -v ' passed, [0-9]* failed'
exit "${PIPESTATUS[0]}"
