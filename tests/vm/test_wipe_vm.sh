# The first boot's wipe beside the join (issue 28, docs/wipe.md), in whole-node QEMU boots of
# worker-0 (qemu-tests/lib-node.sh) on a 768 MiB sparse state disk, so that the wipe takes
# seconds under TCG:
#   1 a power cut during the wipe (QEMU killed at the wipe's first progress line): the disk
#     has no token, neither cryptsetup nor the agent reads it as initialized;
#   2 the next boot formats it again and joins: the join's first round is on the console (and
#     in the boot timeline's events) before the wipe's end, the wipe took seconds, the node
#     joined (kubelet ran), the disk is initialized and opens with the cluster's key.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
. tests/lib.sh
work=$(mktemp -d /tmp/constel-wipevm-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/qemu-logs-wipe}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
trap 'kill $(jobs -p) 2>/dev/null; cluster_stop; rm -rf "$work"' EXIT

for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$tools/constel-init" "$tools/constel-joinservice"; do
	[ -x "$f" ] || { fail wipe_vm_setup "$f is missing (make agent tools $BUILD/vm/standin)"; exit 1; }
done
# no init here: the salt the init would have stored for the join service (as qemu-tests/image.sh)
if ! cluster_setup >"$work/setup.out" 2>&1 || ! openssl rand -hex 32 >"$work/ws/measurement-salt" ||
	! cluster_joinservice >>"$work/setup.out" 2>&1; then
	fail wipe_vm_setup "$(tail -3 "$work/setup.out")"
	exit 1
fi
disk=$work/worker-0.raw
truncate -s 768M "$disk"

# line BOOT REGEX: the number of the first serial-log line matching, or 999999
line() { grep -anE "$2" "$logs/$1.log" | head -1 | cut -d: -f1 | grep . || echo 999999; }

# ---- 1: the power cut during the wipe ----
node_ports
node_boot worker-0 wipe-cut --kill-on 'disk: wiping /dev/vdb: [0-9]+%'
rc=$?
check wipe_vm_power_cut_during_the_wipe test $rc = 3
t=wipe_vm_the_wipe_ran_in_the_background_when_the_power_was_cut
[ "$(line wipe-cut 'wiping in the background')" -lt "$(line wipe-cut 'disk: wiping /dev/vdb: [0-9]+%')" ] &&
	pass $t || fail $t "$(tail_log wipe-cut)"
t=wipe_vm_disk_cut_during_the_wipe_has_no_token
tok=$(luks_token "$disk")
state=$("$BUILD/constel-agent" disk-state "$disk" 2>&1)
[ "$tok" = None ] && case $state in new | not-initialized*) true ;; *) false ;; esac &&
	pass $t || fail $t "token '$tok', agent: $state"

# ---- 2: the next boot formats again and joins while the wipe runs ----
node_ports
node_boot worker-0 wipe-join
rc=$?
check wipe_vm_next_boot_joins_and_runs_kubelet test $rc = 0
t=wipe_vm_next_boot_formats_the_disk_again
[ "$(line wipe-join 'without the initialized token: its data is disposable')" -lt 999999 ] &&
	[ "$(line wipe-join 'formatting a new state disk')" -lt 999999 ] && pass $t || fail $t "$(tail_log wipe-join)"
t=wipe_vm_the_join_round_runs_before_the_wipe_ends
first=$(line wipe-join 'join: IssueJoinTicket at ')
end=$(line wipe-join 'disk: wiped /dev/vdb: ')
start=$(line wipe-join 'wiping in the background')
[ "$start" -lt "$first" ] && [ "$first" -lt "$end" ] && [ "$end" -lt 999999 ] && pass $t ||
	fail $t "lines: wipe start $start, first round $first, wipe end $end"
t=wipe_vm_the_timeline_has_the_first_round_before_the_wipe_end
ev=$(python3 - "$logs/wipe-join.log" <<'PY'
import json, re, sys
tl = None
for l in open(sys.argv[1], "rb"):
    m = re.search(rb"@@DATA timeline (\{.*\})", l)
    if m:
        tl = json.loads(m.group(1))
ev = {e["name"]: e["ms"] for e in (tl or {}).get("events", [])}
ok = all(k in ev for k in ("wipe-start", "first-join-round", "wipe-end", "disk-ready")) and \
    ev["wipe-start"] <= ev["first-join-round"] < ev["wipe-end"] <= ev["disk-ready"]
print(("ok " if ok else "bad ") + json.dumps(ev))
PY
)
case $ev in ok*) pass "$t (${ev#ok })" ;; *) fail $t "${ev#bad }" ;; esac
t=wipe_vm_the_wipe_took_seconds
secs=$(grep -aoE 'disk: wiped /dev/vdb: [0-9]+ MiB in [0-9.]+ s' "$logs/wipe-join.log" | head -1 | awk '{print $(NF-1)}')
awk -v s="${secs:-0}" 'BEGIN { exit !(s >= 2) }' && pass "$t ($secs s)" || fail $t "wipe took '${secs}' s"
t=wipe_vm_disk_initialized_with_the_cluster_key
out=$(cryptsetup luksDump --dump-json-metadata "$disk" 2>&1 | python3 tests/vm/luks_check.py --token initialized)
[ $? = 0 ] && opens worker-0 && pass $t || fail $t "$out"
