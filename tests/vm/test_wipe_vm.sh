# The first boot's disk preparation beside the join (issue 28, docs/wipe.md), in whole-node
# QEMU boots (qemu-tests/lib-node.sh). Parts 1 and 2 boot worker-0 with constel.disk-wipe=full
# (the default skips the wipe) on a 768 MiB sparse state disk, so that the wipe takes seconds
# under TCG:
#   1 a power cut during the wipe (QEMU killed at the wipe's first progress line): the disk
#     has no token, neither cryptsetup nor the agent reads it as initialized;
#   2 the next boot formats it again and joins: the join's first round is on the console (and
#     in the boot timeline's events) before the wipe's end, the wipe took seconds, the node
#     joined (kubelet ran), the disk is initialized and opens with the cluster's key.
#   3 worker-1 on the default (no wipe) with a new 16 GiB sparse disk: nothing wiped, mke2fs
#     runs in the background child (started before the join's first round, ended before the
#     disk is ready), the node joins and its disk opens with the cluster's key. The seconds
#     from the disk found to the first round, and whether mke2fs was still running then, are
#     printed.
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
export NODE_CMDLINE=constel.disk-wipe=full
node_ports
node_boot worker-0 wipe-cut --kill-on 'disk: wiping /dev/vdb: [0-9]+%'
rc=$?
check wipe_vm_power_cut_during_the_wipe test $rc = 3
t=wipe_vm_the_wipe_ran_in_the_background_when_the_power_was_cut
[ "$(line wipe-cut 'wiping and mke2fs in the background')" -lt "$(line wipe-cut 'disk: wiping /dev/vdb: [0-9]+%')" ] &&
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
start=$(line wipe-join 'wiping and mke2fs in the background')
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
ok = all(k in ev for k in ("wipe-start", "first-join-round", "wipe-end", "mkfs-end", "disk-ready")) and \
    ev["wipe-start"] <= ev["first-join-round"] < ev["wipe-end"] <= ev["mkfs-end"] <= ev["disk-ready"]
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

# ---- 3: the default, no wipe: mke2fs beside the race ----
unset NODE_CMDLINE
truncate -s 16G "$work/worker-1.raw"
node_ports
node_boot worker-1 nowipe-join
rc=$?
check wipe_vm_nowipe_default_joins_and_runs_kubelet test $rc = 0
t=wipe_vm_nowipe_default_writes_no_wipe
[ "$(line nowipe-join 'disk: wiping ')" = 999999 ] && [ "$(line nowipe-join 'mke2fs \(not wiped\) in the background')" -lt 999999 ] &&
	pass $t || fail $t "$(grep -aE 'disk: (wiping|.*background)' "$logs/nowipe-join.log" | head -2 | tr '\n' ' ')"
t=wipe_vm_nowipe_mke2fs_runs_beside_the_race
ev=$(python3 - "$logs/nowipe-join.log" <<'PY'
import json, re, sys
tl, found, first = None, None, None
for l in open(sys.argv[1], "rb"):
    m = re.search(rb"@@DATA timeline (\{.*\})", l)
    if m:
        tl = json.loads(m.group(1))
    m = re.match(rb"^\[ *(\d+\.\d+)\] ", l)
    if m and found is None and b"not LUKS2: a new disk" in l:
        found = float(m.group(1))
    if m and first is None and b"join: IssueJoinTicket at " in l:
        first = float(m.group(1))
ev = {e["name"]: e["ms"] for e in (tl or {}).get("events", [])}
ok = all(k in ev for k in ("mkfs-start", "first-join-round", "mkfs-end", "disk-ready")) and \
    "wipe-start" not in ev and ev["mkfs-start"] <= ev["first-join-round"] and ev["mkfs-end"] <= ev["disk-ready"]
info = "first round %s s after the disk was found, mke2fs %s then" % (
    "%.1f" % (first - found) if found is not None and first is not None else "?",
    ("still running" if ev["first-join-round"] < ev["mkfs-end"] else "already ended") if ok else "?")
print(("ok " if ok else "bad ") + info + " " + json.dumps(ev))
PY
)
case $ev in ok*) pass "$t (${ev#ok })" ;; *) fail $t "${ev#bad }" ;; esac
t=wipe_vm_nowipe_disk_initialized_with_the_cluster_key
out=$(cryptsetup luksDump --dump-json-metadata "$work/worker-1.raw" 2>&1 | python3 tests/vm/luks_check.py --token initialized)
[ $? = 0 ] && opens worker-1 && pass $t || fail $t "$out"
