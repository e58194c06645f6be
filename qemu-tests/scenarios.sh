#!/bin/bash
# Whole nodes under QEMU: the agent as PID 1 of its initrd on its built-in defaults (DHCP,
# the metadata API at 10.42.0.1:8080, the state disk /dev/vdb), one boot after another, against
# the host tools (qemu-tests/lib-node.sh has the set-up). Each check prints PASS or FAIL; the
# last line is "N passed, N failed". Every boot's serial log, swtpm log and vm.py summary stay
# in $BUILD/qemu-logs/ (or NODE_LOGS).
#   1 the first control plane, initialised by constel-init; Debian's real containerd serves
#     its socket; the kubelet double fails as kubelet does until kubeadm wrote its config,
#     then runs with every word of kubeadm's flags and the node's name as hostname (also 2, 3
#     and 8); no bootstrap token printed
#   2 a worker joins through constel-joinservice
#   3 the worker reboots: rejoin, its data intact, kubelet without kubeadm
#   4 the join service is down for the first 60 s of a boot, then up: the node joins
#   5 the join service expects other measurements: every round refused, the disk untouched
#   6 a corrupted LUKS2 header on an initialized disk: refused, the disk untouched
#   7 a control plane reboots with no join service: constel-recover pushes the key
#   8 a wrong init secret: failure with the node's logs, the node stays unlocked; the right
#     one then initialises it
#   9 no serial log holds a secret of the run (raw, hex or base64), nor anything shaped like
#     a bootstrap token (the kubeadm double prints one without --skip-token-print)
#  10 a component whose https server presents another CA's certificate: refused, one line
#     naming the host (before 4, on the same fresh node)
#  11 the first 4 KiB of an initialized disk zeroed (the primary LUKS2 binary header): the
#     node must not format it
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. tests/lib.sh
count_checks
work=$(mktemp -d /tmp/constel-nodes-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/qemu-logs}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
trap 'cluster_stop; kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$tools/constel-init" "$tools/constel-joinservice"; do
	[ -x "$f" ] || { fail node_vm_setup "$f is missing (make agent tools $BUILD/vm/standin)"; echo "$passed passed, $failed failed"; exit 1; }
done
if ! cluster_setup >"$work/setup.out" 2>&1; then
	fail node_vm_setup "$(tail -3 "$work/setup.out")"
	echo "$passed passed, $failed failed"
	exit 1
fi

# handover BOOT NODE [FIRST]: empty when the boot's kubelet (the faithful double) ran with
# every word of kubeadm's KUBELET_KUBEADM_ARGS, the node's name as hostname and an answer from
# the real containerd over its socket; with FIRST, also that PID 1 tried kubelet before (it
# exited as the real one without /var/lib/kubelet/config.yaml, or was not installed yet) and
# tried again until the start after kubeadm began. Else why.
handover() {
	local why= starts
	[ "$(node_data "$1" kubelet_flags)" = ok ] ||
		why="$why flags:$(grep -ao '@@DATA kubelet_flags .*' "$logs/$1.log" | head -1 | cut -c21-120)"
	[ "$(node_data "$1" kubelet_hostname)" = "$2" ] && [ "$(node_data "$1" kubelet_hostname_ok)" = yes ] ||
		why="$why hostname=$(node_data "$1" kubelet_hostname)"
	node_data "$1" containerd_version | grep -qE '^v?[0-9]+\.[0-9]+' ||
		why="$why containerd=$(grep -ao '@@DATA containerd_version .*' "$logs/$1.log" | tail -1 | cut -c27-100)"
	if [ -n "${3:-}" ]; then
		# before the start that runs: kubeadm began, and PID 1 tried kubelet and tried again
		# (it exited, as the double without config.yaml, or was not installed yet)
		starts=$(sed -n '/@@DATA kubelet_starts /q; /constel-agent: .*kubelet\(: not started\| exited with status [0-9]*, restart\)/p' "$logs/$1.log" | wc -l)
		[ "$starts" -ge 1 ] && sed -n '/@@DATA kubelet_starts /q; p' "$logs/$1.log" | grep -aqE '@@STANDIN kubeadm (init|join) ' ||
			why="$why restarts-before-kubeadms-config:$starts"
	fi
	echo "$why"
}

# ---- 1: the first control plane ----
node_ports
node_boot control-plane-0 1-init &
vm=$!
if node_wait 1-init 'init server listening' 120 $vm; then
	node_init "$work/ws" "$logs/1-constel-init.out" 120
	cli=$?
else
	cli=124
fi
wait $vm
rc=$?
check node_vm_1_boot_ends_with_kubelet_and_poweroff test $rc = 0
t=node_vm_1_constel_init_succeeds_and_returns_a_kubeconfig
cid=$(sed -n 's/^Cluster ID *\([0-9a-f]\{64\}\)$/\1/p' "$logs/1-constel-init.out")
[ $cli = 0 ] && [ -n "$cid" ] && grep -q 'server: https://127.0.0.1:' "$work/ws/constellation-admin.conf" 2>/dev/null &&
	pass $t || fail $t "constel-init $cli: $(tail -2 "$logs/1-constel-init.out")"
t=node_vm_1_disk_formatted_initialized_with_the_cluster_key
out=$(cryptsetup luksDump --dump-json-metadata "$work/control-plane-0.raw" 2>&1 | python3 tests/vm/luks_check.py --token initialized)
[ $? = 0 ] && opens control-plane-0 && pass $t || fail $t "$out"
t=node_vm_1_pcr15_marked_with_the_cluster_id
expect15=$(pcr15_of "${cid:-00}")
got=$(node_data 1-init pcr15 | tr A-F a-f)
[ -n "$cid" ] && [ "$got" = "$expect15" ] && pass $t || fail $t "PCR 15 '$got', want $expect15"
t=node_vm_1_kubeadm_init_called_with_the_expected_config
why=
[ "$(node_data 1-init init_controlPlaneEndpoint)" = 10.42.1.100:6443 ] || why="$why endpoint"
[ "$(node_data 1-init init_advertiseAddress)" = 10.42.1.100 ] || why="$why advertise"
[ "$(node_data 1-init init_clusterName)" = constellation ] || why="$why name"
[ "$(node_data 1-init init_kubernetesVersion)" = v1.32.9 ] || why="$why version"
grep -aq '@@STANDIN kubeadm init -v=5 --skip-phases=preflight,certs' "$logs/1-init.log" || why="$why args"
grep -aq '@@STANDIN kubeadm kubeconfig user --client-name constellation-admin' "$logs/1-init.log" || why="$why kubeconfig"
[ -z "$why" ] && pass $t || fail $t "wrong:$why"
t=node_vm_1_real_containerd_serves_its_socket
grep -aq 'containerd successfully booted' "$logs/1-init.log" &&
	grep -aq 'serving\.\.\. .*address.*=/run/containerd/containerd.sock$' "$logs/1-init.log" && pass $t ||
	fail $t "no 'containerd successfully booted' serving /run/containerd/containerd.sock on the console"
t=node_vm_1_kubelet_restarted_until_kubeadm_wrote_its_config_then_runs_with_its_flags
why=$(handover 1-init control-plane-0 first)
[ -z "$why" ] && pass "$t ($(grep -ac 'kubelet\(: not started\| exited with status\)' "$logs/1-init.log") retries)" || fail $t "wrong:$why"
t=node_vm_1_kubeadm_init_prints_no_token
[ "$(node_data 1-init init_token_printed)" = no ] && ! grep -aqF "$banner_token" "$logs/1-init.log" && pass $t ||
	fail $t "init_token_printed=$(node_data 1-init init_token_printed)"
marker1=$(node_data 1-init marker_new)

# ---- 8: a wrong init secret first, then the right one (control-plane-1) ----
"$tools/constel-init" --workspace "$work/ws-wrong" prepare >/dev/null
mkdir -p "$work/ws8" && cp "$work/ws/constellation-mastersecret.json" "$work/ws/init-secret" "$work/ws8/"
node_ports
node_boot control-plane-1 8-init-secret &
vm=$!
if node_wait 8-init-secret 'init server listening' 120 $vm; then
	node_init "$work/ws-wrong" "$logs/8-constel-init-wrong.out" 120
	wrong=$?
	sleep 1
	locked=$(grep -ac 'node lock: locked' "$logs/8-init-secret.log")
	node_init "$work/ws8" "$logs/8-constel-init-right.out" 120
	right=$?
else
	wrong=124 right=124 locked=?
fi
wait $vm
rc=$?
t=node_vm_8_wrong_init_secret_fails_with_the_node_logs
[ $wrong = 1 ] && grep -q 'invalid init secret' "$logs/8-constel-init-wrong.out" &&
	grep -q 'bytes of node logs appended' "$logs/8-constel-init-wrong.out" &&
	[ -s "$work/ws-wrong/constellation-cluster.log" ] && pass $t ||
	fail $t "constel-init $wrong: $(tail -2 "$logs/8-constel-init-wrong.out")"
check node_vm_8_node_stays_unlocked_after_the_wrong_secret test "$locked" = 0
t=node_vm_8_right_secret_then_initialises_the_node
cid8=$(sed -n 's/^Cluster ID *\([0-9a-f]\{64\}\)$/\1/p' "$logs/8-constel-init-right.out")
why=$(handover 8-init-secret control-plane-1 first)
[ $right = 0 ] && [ $rc = 0 ] && [ "$(node_data 8-init-secret pcr15 | tr A-F a-f)" = "$(pcr15_of "${cid8:-00}")" ] && [ -z "$why" ] &&
	pass $t || fail $t "constel-init $right, boot $rc: $(tail -1 "$logs/8-constel-init-right.out") $(tail_log 8-init-secret)"

# ---- 2: a worker joins ----
cluster_joinservice
node_ports
node_boot worker-0 2-join
rc=$?
check node_vm_2_boot_ends_with_kubelet_and_poweroff test $rc = 0
t=node_vm_2_kubeadm_join_gets_endpoint_token_and_ca_hash
token_sha=$(printf %s "$token" | sha256sum | cut -c1-64)
cahash=sha256:$(openssl x509 -in "$work/ca.crt" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -c1-64)
why=
[ "$(node_data 2-join join_endpoint)" = 10.42.1.100:6443 ] || why="$why endpoint=$(node_data 2-join join_endpoint)"
[ "$(node_data 2-join join_token_sha256)" = "$token_sha" ] || why="$why token"
[ "$(node_data 2-join join_ca_hash)" = "$cahash" ] || why="$why ca-hash=$(node_data 2-join join_ca_hash)"
[ "$(node_data 2-join join_node_ip)" = 10.42.2.100 ] || why="$why node-ip"
[ "$(node_data 2-join join_control_plane)" = no ] || why="$why control-plane"
[ -z "$why" ] && pass $t || fail $t "wrong:$why"
t=node_vm_2_kubelet_files_in_place
why=
for f in kubelet/pki/kubelet-client-crt.pem constellation/node_state.json ssh/ssh_host_ed25519_key; do
	grep -aq "@@DATA kubelet_file /run/state/$f 6[04][04] [1-9]" "$logs/2-join.log" || why="$why $f"
done
grep -aq '@@DATA kubelet_file /run/state/kubelet/pki/kubelet-client-key.pem 600 [1-9]' "$logs/2-join.log" || why="$why key"
[ -z "$why" ] && pass $t || fail $t "missing or wrong:$why"
t=node_vm_2_worker_disk_initialized_and_marked
[ "$(luks_token "$work/worker-0.raw")" = True ] && opens worker-0 &&
	[ "$(node_data 2-join pcr15 | tr A-F a-f)" = "$expect15" ] && pass $t ||
	fail $t "token $(luks_token "$work/worker-0.raw"), PCR 15 $(node_data 2-join pcr15)"
t=node_vm_2_kubelet_restarted_until_kubeadm_wrote_its_config_then_runs_with_its_flags
why=$(handover 2-join worker-0 first)
[ -z "$why" ] && pass "$t ($(grep -ac 'kubelet\(: not started\| exited with status\)' "$logs/2-join.log") retries)" || fail $t "wrong:$why"
marker2=$(node_data 2-join marker_new)
uuid2=$(cryptsetup luksUUID "$work/worker-0.raw")

# ---- 3: the worker reboots ----
node_ports
node_boot worker-0 3-rejoin
rc=$?
check node_vm_3_boot_ends_with_kubelet_and_poweroff test $rc = 0
t=node_vm_3_rejoin_keeps_the_data_of_boot_2
m3=$(node_data 3-rejoin marker_found)
grep -aq 'the rejoin path' "$logs/3-rejoin.log" && [ -n "$marker2" ] && [ "$m3" = "$marker2" ] &&
	[ "$(cryptsetup luksUUID "$work/worker-0.raw")" = "$uuid2" ] && pass $t ||
	fail $t "marker '$marker2' -> '$m3'"
t=node_vm_3_kubelet_started_without_kubeadm
grep -aq '@@STANDIN kubelet ' "$logs/3-rejoin.log" && ! grep -aq '@@STANDIN kubeadm' "$logs/3-rejoin.log" &&
	[ "$(node_data 3-rejoin pcr15 | tr A-F a-f)" = "$expect15" ] && pass $t ||
	fail $t "kubeadm $(grep -ac '@@STANDIN kubeadm' "$logs/3-rejoin.log") times, PCR 15 $(node_data 3-rejoin pcr15)"

t=node_vm_3_kubelet_with_kubeadms_flags_hostname_and_containerd
why=$(handover 3-rejoin worker-0)
[ -z "$why" ] && pass $t || fail $t "wrong:$why"

# ---- 10: a component from a server with another CA's certificate ----
cluster_joinservice "$work/m.json" "$work/components-foreign.json"
node_ports
node_boot worker-1 10-foreign-ca --kill-on 'rebooting in'
rc=$?
t=node_vm_10_component_from_another_ca_refused_naming_the_host
n=$(grep -aic "constel-agent: error: .*$COMP_HOST_FOREIGN.*\(certificate\|CA\)" "$logs/10-foreign-ca.log")
# the same boot installed kubelet from the server of the bundle's CA
[ $rc = 3 ] && [ "$n" = 1 ] && ! grep -aq '@@STANDIN kubeadm' "$logs/10-foreign-ca.log" &&
	grep -aq 'component: installed /run/state/bin/kubelet' "$logs/10-foreign-ca.log" &&
	! grep -aq "sni=$COMP_HOST_FOREIGN .*\"GET" "$logs/components-foreign.log" && pass $t ||
	fail $t "boot $rc, $n error lines naming $COMP_HOST_FOREIGN and its certificate: $(tail_log 10-foreign-ca)"
t=node_vm_10_kubelet_fetched_through_3_redirects_with_sni
grep -aq "sni=$COMP_HOST \"GET /redirect/1/standin" "$logs/components-server.log" &&
	grep -aq "sni=$COMP_HOST \"GET /standin HTTP/1.[01]\" 200" "$logs/components-server.log" && pass $t ||
	fail $t "no redirect chain with SNI $COMP_HOST in $logs/components-server.log"
cluster_joinservice

# ---- 4: the join service down for the first 60 s ----
cluster_joinservice off
node_ports
start=$(date +%s)
node_boot worker-1 4-late-join &
vm=$!
# the service comes up once the node has failed a round against it (at least 60 s after the
# start: on a quiet host the first round fails within 30 s; a loaded one took longer than 60 s
# to get there, and then no round had failed); bounded at 300 s
sleep 60
for _ in $(seq 480); do
	grep -aq 'join: round [0-9]* failed' "$logs/4-late-join.log" 2>/dev/null && break
	kill -0 $vm 2>/dev/null || break
	sleep 0.5
done
cluster_joinservice
up=$(($(date +%s) - start))
wait $vm
rc=$?
t=node_vm_4_node_joins_once_the_join_service_is_up
n=$(grep -ac 'join: round [0-9]* failed' "$logs/4-late-join.log")
[ $rc = 0 ] && [ "$n" -ge 1 ] && [ "$(node_data 4-late-join join_token_sha256)" = "$token_sha" ] &&
	pass "$t ($n rounds failed, service up after $up s)" || fail $t "boot $rc, $n failed rounds: $(tail_log 4-late-join)"

# ---- 5: measurements the node does not have ----
printf '{"4": {"expected": "%s", "warnOnly": false}, "15": {"expected": "%s", "warnOnly": false}}\n' \
	"$(printf '11%.0s' $(seq 32))" "$(printf '0%.0s' $(seq 64))" >"$work/m-wrong.json"
cluster_joinservice "$work/m-wrong.json"
before=$(ident "$work/worker-0.raw")
node_ports
# killed after the third refused round: two refusal lines are checked below, and on a loaded
# host one round's attempt can end in a timeout instead of the refusal
node_boot worker-0 5-wrong-measurements --kill-on 'rejoin: round 3 failed'
rc=$?
t=node_vm_5_every_round_refused_and_the_disk_untouched
[ $rc = 3 ] && [ "$(ident "$work/worker-0.raw")" = "$before" ] && ! grep -aq '@@STANDIN' "$logs/5-wrong-measurements.log" &&
	pass $t || fail $t "boot $rc (3: the third refused round came), disk changed: $([ "$(ident "$work/worker-0.raw")" = "$before" ] && echo no || echo yes)"
t=node_vm_5_console_says_why
n=$(grep -ac 'rejoin: 10.42.1.100:30090: .*handshake.*\(refuse our attestation\|refused our certificate or attestation\)' "$logs/5-wrong-measurements.log")
[ "$n" -ge 2 ] && grep -aq 'PCR 4' "$logs/joinservice.log" && pass $t ||
	fail $t "$n refusal lines: $(grep -a 'rejoin: 10.42' "$logs/5-wrong-measurements.log" | tail -1 | cut -c1-200)"
cluster_joinservice

# ---- 6: a corrupted header on an initialized disk ----
cp --sparse=always "$work/worker-0.raw" "$work/worker-0.keep"
python3 - "$work/worker-0.raw" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    size = struct.unpack(">Q", f.read(16)[8:16])[0]  # the binary header's hdr_size
    for o in (0, size):            # both copies: JSON bytes overwritten, checksums now wrong
        f.seek(o + 4096 + 100)
        f.write(b"\xa5" * 200)
PY
before=$(ident "$work/worker-0.raw")
node_ports
node_boot worker-0 6-corrupt-header --kill-on 'rebooting in'
rc=$?
t=node_vm_6_corrupted_header_refused_and_the_disk_untouched
[ $rc = 3 ] && [ "$(ident "$work/worker-0.raw")" = "$before" ] && ! grep -aq 'formatting' "$logs/6-corrupt-header.log" &&
	grep -aq 'constel-agent: error: .*\(LUKS\|header\|checksum\)' "$logs/6-corrupt-header.log" && pass $t ||
	fail $t "boot $rc: $(tail_log 6-corrupt-header)"
mv "$work/worker-0.keep" "$work/worker-0.raw"

# ---- 11: the primary LUKS2 binary header of an initialized disk zeroed ----
cp --sparse=always "$work/worker-0.raw" "$work/worker-0.keep"
dd if=/dev/zero of="$work/worker-0.raw" bs=4096 count=1 conv=notrunc status=none
node_ports
node_boot worker-0 11-zeroed-header --kill-on 'rebooting in|formatting a new'
rc=$?
t=node_vm_11_zeroed_primary_header_never_formatted
u=$(cryptsetup luksUUID "$work/worker-0.raw" 2>/dev/null)
[ $rc != 2 ] && ! grep -aq 'formatting\|not LUKS2: a new disk' "$logs/11-zeroed-header.log" &&
	[ "$u" = "$uuid2" ] && opens worker-0 && { [ $rc = 3 ] || [ "$(node_data 11-zeroed-header marker_found)" = "$marker2" ]; } &&
	pass "$t ($([ $rc = 0 ] && echo "rejoined, the data of boot 2 intact" || echo refused))" ||
	fail $t "boot $rc: $(grep -a 'disk: /dev/vdb' "$logs/11-zeroed-header.log" | head -2 | cut -c1-160 | tr '\n' ' ')"
mv "$work/worker-0.keep" "$work/worker-0.raw"

# ---- 7: the control plane reboots with no join service ----
cluster_joinservice off
node_ports
node_boot control-plane-0 7-recover &
vm=$!
if node_wait 7-recover 'recovery server listening' 120 $vm; then
	(cd "$work/ws" && "$tools/constel-recover" --endpoint "127.0.0.1:$recover_port" \
		--measurements "$work/m.json" --timeout 60) >"$logs/7-constel-recover.out" 2>&1
	cli=$?
else
	cli=124
fi
wait $vm
rc=$?
t=node_vm_7_constel_recover_unlocks_the_control_plane
[ $cli = 0 ] && [ $rc = 0 ] && [ "$(node_data 7-recover marker_found)" = "$marker1" ] && [ -n "$marker1" ] &&
	[ "$(node_data 7-recover pcr15 | tr A-F a-f)" = "$expect15" ] && ! grep -aq '@@STANDIN kubeadm' "$logs/7-recover.log" &&
	pass $t || fail $t "constel-recover $cli, boot $rc: $(tail -1 "$logs/7-constel-recover.out") $(tail_log 7-recover)"

# ---- 9: no secret in any serial log ----
python3 tests/secrets.py --workspace "$work/ws" --workspace "$work/ws8" --workspace "$work/ws-wrong" \
	--scan "$work" --raw "$token" --raw "${token#*.}" --raw "$banner_token" --raw "${banner_token#*.}" \
	--pem "$work/ca.key" >"$work/secrets"
logs_to_scan=()
for log in "$logs"/[0-9]*.log; do
	case $(basename "$log" .log) in *-swtpm) ;; *) logs_to_scan+=("$log") ;; esac
done
node_no_secrets node_vm_9_no_secret_in_the_serial_log_of 40 "${logs_to_scan[@]}"

echo "$passed passed, $failed failed (logs in $logs)"
[ $failed = 0 ]
