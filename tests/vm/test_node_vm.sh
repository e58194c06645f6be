# Whole nodes under QEMU, the agent as PID 1 (qemu-tests/scenarios.sh): init, join, rejoin,
# a late join service, refused measurements, a corrupted header, recovery, a wrong init
# secret, and no secret in any serial log. Logs stay in $BUILD/qemu-logs.
BUILD=${BUILD:-build} bash qemu-tests/scenarios.sh | grep -v ' passed, [0-9]* failed'
exit "${PIPESTATUS[0]}"
