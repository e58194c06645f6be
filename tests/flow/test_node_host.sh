# The node's whole flow in host mode (`constel-agent node --root DIR`: the state disk a LUKS2
# image file without device-mapper, no PID-1 duties), every node attesting with swtpm, each
# "boot" a TPM restart, against the tools: a control plane initialised by constel-init while
# its join rounds fail, a worker joined through constel-joinservice while its init server
# listens, the worker's rejoin after a reboot, the control plane's recovery through
# constel-recover, a wrong recovery key (refused to that caller, the rejoin goes on, the disk
# untouched), a SIGTERM during a join wait (a clean end), a CLI that hangs up after init (the
# node stays up, the disk initialized), a kubeadm join that fails three times (the disk reset
# past the lock). Then the same flows against the Go peer. Last,
# every log of the run is searched for every secret of the run.
. tests/lib.sh
# The sanitizer build of the agent (see the Makefile: the static one's libcryptsetup needs
# device-mapper or the kernel's AF_ALG xts(aes) to write keyslots; this one does not), so the
# whole flow also runs under ASan and UBSan.
agent=$PWD/$BUILD/test/constel-agent
tools=$PWD/$BUILD/tools
work=$(mktemp -d /tmp/constel-node-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
boot() { swtpm_boot "$work"; }

# a port nobody listens on: the join rounds of a node that is to be initialised fail fast
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
zero=$(printf '0%.0s' $(seq 64))
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/m.json"

# kubeadm-test-double: records its arguments (and the join configuration), prints a
# kubeconfig for "kubeconfig user", fails a join while the file fail-join exists.
cat >"$work/kubeadm-test-double" <<'SH'
#!/bin/sh
d=$(dirname "$0")
echo "$*" >>"$d/kubeadm.record"
case "$*" in
*"phase certs all"*)
	# what kubeadm's certs phase leaves behind: the cluster CA the agent signs the kubelet's
	# certificate with (the root is the one the --config file lives in)
	cfg=${*##*--config }
	pki=${cfg%/run/constel/*}/etc/kubernetes/pki
	mkdir -p "$pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/ca.key" \
		-out "$pki/ca.crt" -subj /CN=kubernetes -days 1 >/dev/null 2>&1 ;;
*"kubeconfig user"*)
	# a slow last phase, for a CLI that hangs up before the kubeconfig comes
	[ -e "$d/slow-kubeconfig" ] && sleep "$(cat "$d/slow-kubeconfig")"
	printf 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.42.1.100:6443\n  name: c\nkind: Config\n' ;;
join*)
	cfg=${*##*--config }
	cp "$cfg" "$d/join-config.yaml"
	[ -e "$d/fail-join" ] && exit 1 ;;
esac
exit 0
SH
chmod +x "$work/kubeadm-test-double"

# node NAME ARGS...: runs the agent's node command for NAME in the background ($node_pid)
node() {
	local name=$1
	shift
	[ -e "$work/$name.img" ] || truncate -s 64M "$work/$name.img"
	node_log=$work/$name.log
	node_from=$(($(cat "$node_log" 2>/dev/null | wc -l) + 1)) # this run's first log line
	"$agent" --tpm "$tpm" node --root "$work/$name" --state-disk "$work/$name.img" \
		--kubeadm "$work/kubeadm-test-double" --init-port 0 --recover-port 0 --interval 2 \
		--timeout 10 "$@" >>"$work/$name.stdout" 2>>"$work/$name.log" &
	node_pid=$!
}

# recovery_port: the port this run of node() logged for its recovery server (up to 5 s)
recovery_port() {
	for _ in $(seq 50); do
		port=$(tail -n +"$node_from" "$node_log" |
			sed -n 's/.*recovery server listening on .* (port \([0-9]*\)).*/\1/p')
		[ -n "$port" ] && return 0
		sleep 0.1
	done
	return 1
}

token() { cryptsetup luksDump --dump-json-metadata "$1" 2>/dev/null |
	python3 -c 'import json,sys; t=json.load(sys.stdin)["tokens"].get("0",{}); print(t.get("diskIsInitialized"))'; }
luks_uuid() { cryptsetup luksUUID "$1" 2>/dev/null; }

# derive KEY_ID WORKSPACE: GetDEK of the cluster KMS (spec §3) from the master secret, in hex
derive() {
	python3 - "$1" "$2/constellation-mastersecret.json" <<'PY'
import base64, hashlib, hmac, json, sys
ms = json.load(open(sys.argv[2]))
key, salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
prk = hmac.new(salt, key, hashlib.sha256).digest()
print(hmac.new(prk, ("key-" + sys.argv[1]).encode() + b"\x01", hashlib.sha256).hexdigest())
PY
}
# opens KEYHEX IMAGE: keyslot 0 of the image takes the raw key
opens() { printf '%s' "$1" | xxd -r -p >"$work/k.bin" && cryptsetup open --test-passphrase \
	--key-file "$work/k.bin" "$2" >/dev/null 2>&1; }

# ---- init: constel-init against a control plane whose join rounds fail ----
t=node_host_init_by_constel_init_while_join_rounds_fail
boot
"$tools/constel-init" --workspace "$work/ws" prepare >/dev/null
node cp0 --name control-plane-0 --role control-plane --ip 10.42.1.100 \
	--init-secret-hash "$work/ws/init-secret.bcrypt" --join "127.0.0.1:$closed"
cp0_pid=$node_pid
if port=$(logged_port "$work/cp0.log"); then
	sleep 3 # at least one failed join round first
	out=$("$tools/constel-init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$port" \
		--measurements "$work/m.json" --timeout 60 2>&1)
	rc=$?
	wait_pid $cp0_pid 60
	nrc=$?
	s=$work/cp0/run/state
	uuid0=$(luks_uuid "$work/cp0.img")
	why=
	[ $rc = 0 ] || why="$why cli=$rc"
	[ $nrc = 0 ] || why="$why node=$nrc"
	grep -q 'join: round 1 failed' "$work/cp0.log" || why="$why no-failed-round"
	[ "$(token "$work/cp0.img")" = True ] || why="$why token"
	opens "$(derive "$uuid0" "$work/ws")" "$work/cp0.img" || why="$why disk-key"
	grep -q '"Role": "ControlPlane"' "$s/constellation/node_state.json" || why="$why node_state"
	python3 -c 'import json,sys,base64; print(base64.b64decode(json.load(open(sys.argv[1]))["MeasurementSalt"]).hex())' \
		"$s/constellation/node_state.json" | grep -qx "$(cat "$work/ws/measurement-salt")" || why="$why salt"
	ssh-keygen -L -f "$s/ssh/ssh_host_cert.pub" >/dev/null 2>&1 || why="$why host-cert"
	ssh-keygen -l -f "$s/ssh/ssh_ca.pub" >/dev/null 2>&1 || why="$why ssh-ca"
	[ "$(stat -c %a "$s/ssh/ssh_host_ed25519_key")" = 600 ] || why="$why host-key"
	grep -q 'kubeconfig user --client-name constellation-admin' "$work/kubeadm.record" || why="$why kubeadm"
	[ -L "$work/cp0/etc/kubernetes" ] || why="$why handover"
	grep -q 'PCR 15 marked' "$work/cp0.log" || why="$why pcr15"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $out; $(tail -3 "$work/cp0.log")"
else
	fail $t "no init server: $(tail -3 "$work/cp0.log")"
fi

# ---- join: the join service answers a worker whose init server listens ----
join_service_double "$work" "$tools"

t=node_host_join_through_constel_joinservice
boot
rm -f "$work/kubeadm.record"
node w1 --name worker-1 --role worker --ip 10.42.2.100 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$jport"
wait_pid $node_pid 60
rc=$?
s=$work/w1/run/state
uuid1=$(luks_uuid "$work/w1.img")
why=
[ $rc = 0 ] || why="$why node=$rc"
grep -q 'init server listening' "$work/w1.log" || why="$why no-init-server"
[ "$(token "$work/w1.img")" = True ] || why="$why token"
opens "$(derive "$uuid1" "$work/ws")" "$work/w1.img" || why="$why disk-key"
openssl verify -CAfile "$work/ca.crt" "$s/kubelet/pki/kubelet-client-crt.pem" >/dev/null 2>&1 || why="$why kubelet-cert"
openssl pkey -in "$s/kubelet/pki/kubelet-client-key.pem" -noout 2>/dev/null || why="$why kubelet-key"
[ "$(stat -c %a "$s/kubelet/pki/kubelet-client-key.pem")" = 600 ] || why="$why key-mode"
# the principals name the node (the hostname it takes at the handover), not the host's name
ssh-keygen -L -f "$s/ssh/ssh_host_cert.pub" 2>/dev/null | grep -qE '^ +worker-1$' || why="$why host-cert"
grep -q '"Role": "Worker"' "$s/constellation/node_state.json" || why="$why node_state"
cmp -s "$s/bin/kubelet" "$work/kubelet-test-double" || why="$why component"
[ "$(stat -c %a "$s/bin/kubelet")" = 544 ] || why="$why component-mode"
[ ! -e "$s/kubernetes/pki/ca.key" ] || why="$why worker-got-pki"
grep -q '^join -v=5 --config' "$work/kubeadm.record" || why="$why kubeadm"
grep -q 'apiServerEndpoint: "10.42.1.100:6443"\|apiServerEndpoint: 10.42.1.100:6443' "$work/join-config.yaml" || why="$why endpoint"
grep -q "$(sed -n 's/.*token[:=] *"\{0,1\}\([a-z0-9]\{6\}\.[a-z0-9]\{16\}\).*/\1/p' "$work/join-config.yaml" | head -1)" \
	"$work/join-config.yaml" && grep -qE '[a-z0-9]{6}\.[a-z0-9]{16}' "$work/join-config.yaml" || why="$why token-in-config"
[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -3 "$work/w1.log"); $(tail -2 "$work/js.log")"
grep -oE '[a-z0-9]{6}\.[a-z0-9]{16}' "$work/join-config.yaml" | head -1 >"$work/w1.token"

t=node_host_control_plane_join_writes_the_pki_files
boot
node cp1 --name control-plane-1 --role control-plane --ip 10.42.1.101 \
	--init-secret-hash "$work/ws/init-secret.bcrypt" --join "127.0.0.1:$jport"
wait_pid $node_pid 60
rc=$?
if [ $rc = 0 ] && [ "$(cat "$work/cp1/run/state/kubernetes/pki/etcd/ca.key")" = "test double of etcd/ca.key" ] &&
	[ "$(find "$work/cp1/run/state/kubernetes/pki" -type f | wc -l)" = 8 ] &&
	[ "$(cat "$work/cp1/etc/kubernetes/pki/sa.pub")" = "test double of sa.pub" ]; then
	pass $t
else
	fail $t "exit $rc: $(tail -2 "$work/cp1.log")"
fi

# ---- rejoin after a reboot ----
t=node_host_rejoin_after_a_reboot_keeps_the_disk
# the hostname file holds the same name: a reboot leaves it (no synced rewrite in the handover)
hn=$work/w1/run/state/etc/hostname
hn_ino=$(stat -c %i "$hn" 2>/dev/null)
boot
node w1 --name worker-1 --role worker --ip 10.42.2.100 --join "127.0.0.1:$jport"
wait_pid $node_pid 60
rc=$?
why=
[ $rc = 0 ] || why="$why node=$rc"
grep -q 'initialized (uuid '"$uuid1"'): the rejoin path' "$work/w1.log" || why="$why path"
grep -q 'rejoin: state disk open, node marked' "$work/w1.log" || why="$why open"
[ "$(luks_uuid "$work/w1.img")" = "$uuid1" ] || why="$why reformatted"
[ -e "$work/w1/run/state/kubelet/pki/kubelet-client-crt.pem" ] || why="$why state-lost"
[ -n "$hn_ino" ] && [ "$(stat -c %i "$hn" 2>/dev/null)" = "$hn_ino" ] && [ "$(cat "$hn")" = worker-1 ] ||
	why="$why hostname-file"
[ "$(tpm2_pcrread -T "$tpm" sha256:15 2>/dev/null | grep -c 0x0000000000000000000000000000000000000000000000000000000000000000)" = 0 ] || why="$why pcr15"
[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -3 "$work/w1.log")"

# ---- recovery of the control plane ----
t=node_host_recover_by_constel_recover
boot
node cp0 --name control-plane-0 --role control-plane --ip 10.42.1.100 --join "127.0.0.1:$closed"
pid=$node_pid
recovery_port
out=$(cd "$work/ws" && "$tools/constel-recover" --endpoint "127.0.0.1:$port" --measurements "$work/m.json" 2>&1)
rc=$?
wait_pid $pid 30
nrc=$?
if [ $rc = 0 ] && [ $nrc = 0 ] && grep -q 'recover: keys received' "$work/cp0.log" &&
	grep -q 'rejoin: state disk open, node marked' "$work/cp0.log"; then
	pass $t
else
	fail $t "cli $rc ($out), node $nrc: $(tail -3 "$work/cp0.log")"
fi

t=node_host_wrong_recovery_key_is_refused_and_the_rejoin_goes_on
boot
"$tools/constel-init" --workspace "$work/ws-other" prepare >/dev/null
node cp0 --name control-plane-0 --role control-plane --ip 10.42.1.100 --join "127.0.0.1:$closed"
pid=$node_pid
recovery_port
before=$(sha256sum <"$work/cp0.img")
out=$(cd "$work/ws-other" && "$tools/constel-recover" --endpoint "127.0.0.1:$port" --measurements "$work/m.json" 2>&1)
rc1=$?
sleep 3 # the rejoin rounds go on after the refusal
after=$(tail -n +"$node_from" "$work/cp0.log" | sed -n '/the key does not open the state disk/,$p')
same=$(sha256sum <"$work/cp0.img")
kill -0 $pid 2>/dev/null
up=$?
(cd "$work/ws" && timeout 30 "$tools/constel-recover" --endpoint "127.0.0.1:$port" --measurements "$work/m.json" >/dev/null 2>&1)
rc2=$?
wait_pid $pid 30
nrc=$?
why=
[ $rc1 != 0 ] || why="$why wrong-key-accepted"
[ $up = 0 ] || why="$why node-ended"
[ "$(grep -c 'recover: the key does not open the state disk: refused' <<<"$after")" = 1 ] || why="$why no-line"
grep -q 'rejoin: round [0-9]* failed' <<<"$after" || why="$why rejoin-stopped"
[ "$same" = "$before" ] || why="$why disk-touched"
[ $rc2 = 0 ] && [ $nrc = 0 ] || why="$why right-key=$rc2/$nrc"
tail -n +"$node_from" "$work/cp0.log" | grep -q 'rejoin: state disk open, node marked' || why="$why not-recovered"
! grep -q 'reset to not initialized' "$work/cp0.log" || why="$why reset"
[ -z "$why" ] && pass $t || fail $t "wrong:$why; $out; $(tail -3 "$work/cp0.log")"

# ---- PID 1's signals in host mode: SIGTERM during a join wait ----
t=node_host_sigterm_during_a_join_wait_ends_cleanly
boot
node w4 --name worker-4 --role worker --ip 10.42.2.104 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$closed"
pid=$node_pid
for _ in $(seq 100); do
	tail -n +"$node_from" "$work/w4.log" | grep -q 'join: round 1 failed' && break
	sleep 0.1
done
kill -TERM $pid
wait_pid $pid 15
rc=$?
why=
[ $rc = 0 ] || why="$why exit=$rc"
grep -q 'node: SIGTERM received: shutting down' "$work/w4.log" || why="$why no-line"
[ "$(token "$work/w4.img")" != True ] || why="$why initialized"
! grep -q 'fatal' "$work/w4.log" || why="$why fatal"
[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -3 "$work/w4.log")"

# ---- a fatal error past the lock resets the disk ----
t=node_host_kubeadm_join_failing_three_times_resets_the_disk
boot
touch "$work/fail-join"
rm -f "$work/kubeadm.record"
node w2 --name worker-2 --role worker --ip 10.42.2.101 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$jport"
wait_pid $node_pid 60
rc=$?
rm -f "$work/fail-join"
if [ $rc = 1 ] && [ "$(grep -c '^join ' "$work/kubeadm.record")" = 3 ] &&
	[ "$(token "$work/w2.img")" = False ] && grep -q 'fatal: join: kubeadm join failed' "$work/w2.log" &&
	grep -q 'reset to not initialized' "$work/w2.log"; then
	pass $t
else
	fail $t "exit $rc, $(grep -c '^join ' "$work/kubeadm.record" 2>/dev/null) attempts, token $(token "$work/w2.img"): $(tail -2 "$work/w2.log")"
fi

t=node_host_reset_disk_is_formatted_again_and_joins
boot
old=$(luks_uuid "$work/w2.img")
node w2 --name worker-2 --role worker --ip 10.42.2.101 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$jport"
wait_pid $node_pid 60
rc=$?
if [ $rc = 0 ] && [ "$(token "$work/w2.img")" = True ] && [ "$(luks_uuid "$work/w2.img")" != "$old" ]; then
	pass $t
else
	fail $t "exit $rc: $(tail -2 "$work/w2.log")"
fi

t=node_host_refuses_a_marked_tpm
# no reboot: PCR 15 of this boot is marked by the last join; the refusal comes before the
# disk is touched (the image stays byte-identical)
truncate -s 64M "$work/w3.img"
before=$(sha256sum <"$work/w3.img")
node w3 --name worker-3 --role worker --ip 10.42.2.102 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$jport"
wait_pid $node_pid 30
rc=$?
[ $rc = 1 ] && grep -q 'PCR 15 is not zero' "$work/w3.log" && [ "$(sha256sum <"$work/w3.img")" = "$before" ] &&
	pass $t || fail $t "exit $rc, image $([ "$(sha256sum <"$work/w3.img")" = "$before" ] && echo untouched || echo changed): $(tail -2 "$work/w3.log")"

# ---- against the Go peer: its join service, its CLI init and recover steps ----
peer=$(tests/interop/build-atlspeer.sh) || peer=
t=node_host_join_against_the_go_join_service
if [ -z "$peer" ]; then
	fail $t "atlspeer did not build"
elif start_peer gojoin join-server; then
	rm -f "$work/kubeadm.record"
	node gw --attestation dummy --name worker-9 --role worker --ip 10.42.2.109 \
		--init-secret-hash "$work/ws/init-secret.bcrypt" --join "127.0.0.1:$pport"
	wait_pid $node_pid 60
	rc=$?
	[ $rc = 0 ] && [ "$(token "$work/gw.img")" = True ] && grep -q '^join -v=5' "$work/kubeadm.record" &&
		grep -q '^REQ' "$work/gojoin.out" && pass $t || fail $t "exit $rc: $(tail -2 "$work/gw.log"); $(tail -2 "$work/gojoin.out")"
else
	fail $t "Go join server did not start"
fi

t=node_host_init_by_the_go_cli
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
if [ -n "$peer" ]; then
	"$peer" bcrypt --secret "$secret" >"$work/go_init_hash"
	node gi --attestation dummy --name control-plane-0 --role control-plane --ip 10.42.1.100 \
		--init-secret-hash "$work/go_init_hash" --join "127.0.0.1:$closed"
	pid=$node_pid
	if port=$(logged_port "$work/gi.log"); then
		"$peer" init-client --addr "127.0.0.1:$port" --secret "${secret%??}00" >"$work/goinit1.out" 2>&1
		rc1=$?
		"$peer" init-client --addr "127.0.0.1:$port" --secret "$secret" >"$work/goinit2.out" 2>&1
		rc2=$?
		wait_pid $pid 60
		rc=$?
		[ $rc1 = 3 ] && [ $rc2 = 0 ] && [ $rc = 0 ] && grep -q 'kind: Config' "$work/goinit2.out" &&
			grep -q 'invalid init secret' "$work/goinit1.out" && [ "$(token "$work/gi.img")" = True ] &&
			pass $t || fail $t "rc $rc1/$rc2/$rc: $(cat "$work/goinit2.out" | head -c 300); $(tail -2 "$work/gi.log")"
	else
		fail $t "no init server: $(tail -2 "$work/gi.log")"
	fi
else
	fail $t "atlspeer did not build"
fi

t=node_host_recover_by_the_go_cli
if [ -n "$peer" ]; then
	node gi --attestation dummy --name control-plane-0 --role control-plane --ip 10.42.1.100 --join "127.0.0.1:$closed"
	pid=$node_pid
	recovery_port
	"$peer" recover-client --addr "127.0.0.1:$port" >"$work/gorec.out" 2>&1
	rc1=$?
	wait_pid $pid 30
	rc=$?
	[ $rc1 = 0 ] && [ $rc = 0 ] && grep -q 'rejoin: state disk open' "$work/gi.log" && pass $t ||
		fail $t "rc $rc1/$rc: $(tail -2 "$work/gorec.out"); $(tail -2 "$work/gi.log")"
else
	fail $t "atlspeer did not build"
fi

# ---- a CLI that hangs up after a successful init ----
# The CLI is killed (no RST_STREAM: its connection just ends) while kubeadm's last phase still
# runs: the node stays up with its disk initialized, as the Go bootstrapper does. The server
# must notice the hang-up at its send (the connection's streams are closed with it) and say so
# in one line; a send that "succeeds" into the dead connection is a failure of this test.
t=node_host_cli_hanging_up_after_init_keeps_the_node_up
boot
"$tools/constel-init" --workspace "$work/ws-hang" prepare >/dev/null
echo 4 >"$work/slow-kubeconfig"
node cp5 --name control-plane-5 --role control-plane --ip 10.42.1.105 \
	--init-secret-hash "$work/ws-hang/init-secret.bcrypt" --join "127.0.0.1:$closed"
pid=$node_pid
# phases: how often kubeadm's last phase ran so far (the record is the whole run's)
phases() { cat "$work/kubeadm.record" 2>/dev/null | grep -c 'kubeconfig user'; }
before=$(phases)
if port=$(logged_port "$work/cp5.log"); then
	"$tools/constel-init" --workspace "$work/ws-hang" apply --endpoint "127.0.0.1:$port" \
		--measurements "$work/m.json" --timeout 60 >/dev/null 2>&1 &
	cli=$!
	# killed once kubeadm's last (slow) phase runs
	for _ in $(seq 300); do
		[ "$(phases)" -gt "$before" ] && break
		sleep 0.1
	done
	kill -9 $cli 2>/dev/null
	wait $cli 2>/dev/null
	rc1=$?
	wait_pid $pid 60
	rc=$?
	why=
	[ $rc1 = 137 ] || why="$why cli-not-killed-mid-call($rc1)"
	[ $rc = 0 ] || why="$why node=$rc"
	[ "$(token "$work/cp5.img")" = True ] || why="$why token"
	grep -q 'init: done, but the CLI hung up' "$work/cp5.log" || why="$why hang-up-not-noticed"
	[ "$(grep -c 'the CLI hung up' "$work/cp5.log")" -le 1 ] || why="$why lines"
	! grep -q 'reset to not initialized\|fatal' "$work/cp5.log" || why="$why reset"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -3 "$work/cp5.log")"
else
	fail $t "no init server: $(tail -3 "$work/cp5.log")"
fi
rm -f "$work/slow-kubeconfig"

# ---- no secret of the run in any log ----
t=node_host_logs_hold_no_secret
python3 tests/secrets.py --workspace "$work/ws" --workspace "$work/ws-other" --workspace "$work/ws-hang" --scan "$work" \
	--master "$(printf '0%.0s' $(seq 64)):$(printf '0%.0s' $(seq 64))" \
	--hex 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff >"$work/secrets"
n=$(wc -l <"$work/secrets")
hits=
for log in "$work"/*.log "$work"/*.out "$work"/*.stdout; do
	[ -e "$log" ] || continue
	if grep -qiFf "$work/secrets" "$log"; then hits="$hits $(basename "$log")"; fi
done
if [ "$n" -gt 40 ] && [ -z "$hits" ] && [ "$(cat "$work"/*.log | wc -l)" -gt 100 ]; then
	pass "$t ($n secrets, $(cat "$work"/*.log | wc -l) log lines)"
else
	fail $t "$n secrets; found in:$hits"
fi
