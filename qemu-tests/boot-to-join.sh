#!/bin/bash
# The boot time of a node up to its first join call: QEMU start to the serial line
# "join: IssueJoinTicket at" (vm.py's host-time stamp), and the foreground modules' time of
# the agent's "modules: N loaded" line, for N boots of worker-0 (qboot, the kernel and the
# initrd, slirp as in lib-node.sh; no join service, the boot is stopped at that line). Prints
# each boot and the medians. Usage (after make initrd tools build/vm/standin):
#   qemu-tests/boot-to-join.sh [-n N] [-i INITRD] [-a "more kernel words"]
# Run it under nice on a shared host; the figures of docs/cluster-clouds.md came from it.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. tests/lib.sh
n=3 img= more=
while getopts n:i:a: o; do
	case $o in
	n) n=$OPTARG ;; i) img=$OPTARG ;; a) more=$OPTARG ;;
	*) echo "usage: $0 [-n N] [-i INITRD] [-a WORDS]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d /tmp/constel-b2j-XXXXXX)
NODE_LOGS=$work/logs
. qemu-tests/lib-node.sh
trap 'cluster_stop; rm -rf "$work"' EXIT
[ -n "$img" ] && initrd=$(readlink -f "$img")
touch "$initrd" # cluster_setup wants it newer than the agent
cluster_setup >"$work/setup.out" 2>&1 || { echo "set-up failed: $(tail -2 "$work/setup.out")" >&2; exit 1; }
for i in $(seq "$n"); do
	rm -f "$work/worker-0.raw" && rm -rf "$work/tpm-worker-0"
	node_ports
	node_vm worker-0 "b$i" 300 --initrd "$initrd" --kill-on 'join: IssueJoinTicket at' \
		--append "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min $more"
	python3 - "$logs/b$i.log" <<'PY'
import re, sys
t = mods = None
for l in open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines():
    m = re.match(r"\[\s*([\d.]+)\] constel-agent: info: (.*)", l)
    if not m:
        continue
    if mods is None and re.match(r"modules: \d+ loaded", m.group(2)):
        mods = re.search(r"in (\d+) ms", m.group(2)).group(1)
    if t is None and m.group(2).startswith("join: IssueJoinTicket at"):
        t = m.group(1)
print("boot %s s to the join, modules %s ms" % (t, mods))
PY
done | tee "$work/out"
python3 - "$work/out" <<'PY'
import re, statistics, sys
rows = [re.match(r"boot ([\d.]+) s to the join, modules (\d+) ms", l) for l in open(sys.argv[1])]
rows = [m for m in rows if m]
if rows:
    print("median of %d: %.2f s to the join, modules %d ms" % (len(rows),
          statistics.median(float(m.group(1)) for m in rows),
          statistics.median(int(m.group(2)) for m in rows)))
PY
