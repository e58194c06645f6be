# The host commands of the shipped agent against the independent Go peer (atlspeer:
# grpc-go, Go's crypto/tls, golang.org/x/crypto's bcrypt, ssh and hkdf): join and rejoin
# against a JoinService-like server, serve-init against the CLI's init step, serve-recover
# against the CLI's recover step, with the refusals and the failure stream of spec §5.5.
# Everything listens on 127.0.0.1; every wait is bounded.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
peer=$(tests/interop/build-atlspeer.sh) || { fail interop_commands "atlspeer did not build"; exit 0; }
work=$(mktemp -d /tmp/constel-cmd-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
zero_uuid=00000000-0000-0000-0000-000000000000
# spec §3.5 and the end-to-end values for an all-zero master secret
disk_key_zero=2b5c829f691bfd4232f8aac464bccc07e605c7c8e82cbca09837e86d0b6d0665
msecret_zero=54d67b1d917d3464757d9b699f3ee416c209a2270e3876da90535e4108898cdd
cluster_id_zero=823267d1276b940d1f04b9fac150721f196bf1090e125684d4efd8416a691588

mode() { stat -c %a "$1"; }

# start_agent NAME ARGS...: runs the agent in the background, waits for its listening line.
start_agent() {
	local name=$1
	shift
	"$agent" "$@" >"$work/$name.stdout" 2>"$work/$name.log" &
	agent_pid=$!
	port=$(logged_port "$work/$name.log")
}

# ---- join and rejoin against the Go join service ----
t=interop_agent_join_against_go_join_service
uuid=0B3E9C3A-8E6F-4C1E-9D2B-5A7F00000001
lower=$(tr A-F a-f <<<"$uuid")
if start_peer join join-server &&
	"$agent" join --endpoint "127.0.0.1:$pport" --name worker-1 --role worker --disk-uuid "$uuid" \
		--ip 10.42.0.2 --ssh-host-key "$work/ssh_host_key" --out "$work/join" \
		--attestation dummy 2>"$work/join.log"; then
	sleep 0.3
	req=$(grep '^REQ' "$work/join.out")
	want=$(printf 'key-%s' "$lower" | sha256sum | cut -c1-64)
	why=
	grep -q '"csr_cn":"system:node:worker-1"' <<<"$req" || why="$why csr_cn"
	grep -q '"csr_ips":\["10.42.0.2"\]' <<<"$req" || why="$why csr_ips"
	grep -q '"ssh_key_type":"ssh-ed25519"' <<<"$req" || why="$why ssh_key"
	grep -q "\"disk_uuid\":\"$lower\"" <<<"$req" || why="$why uuid"
	[ "$(hexof "$work/join/state_disk_key")" = "$want" ] || why="$why disk_key"
	[ "$(cat "$work/join/token")" = abcdef.0123456789abcdef ] || why="$why token"
	[ "$(cat "$work/join/pki/etcd/ca.key")" = "etcd key" ] || why="$why pki"
	for f in "$work"/join/* "$work"/join/pki/ca.crt "$work/ssh_host_key"; do
		[ -d "$f" ] || [ "$(mode "$f")" = 600 ] || why="$why mode:$(basename "$f")"
	done
	ssh-keygen -y -f "$work/ssh_host_key" >/dev/null 2>&1 || why="$why ssh-keygen"
	openssl ec -in "$work/join/kubelet-client-key.pem" -check -noout >/dev/null 2>&1 || why="$why kubelet_key"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $req"
else
	fail $t "$(tail -2 "$work/join.log") / $(cat "$work/join.out")"
fi

t=interop_agent_join_refuses_to_overwrite_a_ticket
if start_peer join2 join-server && ! "$agent" join --endpoint "127.0.0.1:$pport" --name worker-1 \
	--role worker --disk-uuid "$uuid" --ssh-host-key "$work/ssh_host_key" --out "$work/join" \
	--attestation dummy 2>"$work/join2.log" && grep -q 'File exists' "$work/join2.log"; then
	pass $t
else
	fail $t "$(tail -1 "$work/join2.log")"
fi

t=interop_agent_rejoin_against_go_join_service
if start_peer rejoin join-server &&
	"$agent" rejoin --endpoint "127.0.0.1:$pport" --disk-uuid "$uuid" --out "$work/rejoin" \
		--attestation dummy 2>"$work/rejoin.log" &&
	[ "$(hexof "$work/rejoin/state_disk_key")" = "$(printf 'key-%s' "$lower" | sha256sum | cut -c1-64)" ] &&
	[ "$(hexof "$work/rejoin/measurement_secret")" = "$(printf '42%.0s' $(seq 32))" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/rejoin.log")"
fi

t=interop_agent_join_reports_internal_from_go
if start_peer fail join-server --fail &&
	! "$agent" join --endpoint "127.0.0.1:$pport" --name w --role worker --disk-uuid "$uuid" \
		--ssh-host-key "$work/ssh_host_key" --out "$work/fail" --attestation dummy 2>"$work/fail.log" &&
	grep -q 'code = 13 desc = getting data key: key service unavailable' "$work/fail.log" &&
	[ ! -e "$work/fail/state_disk_key" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/fail.log")"
fi

t=interop_agent_join_server_down_is_unavailable
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if ! timeout 10 "$agent" join --endpoint "127.0.0.1:$closed" --name w --role worker --disk-uuid "$uuid" \
	--ssh-host-key "$work/ssh_host_key" --out "$work/down" --attestation dummy 2>"$work/down.log" &&
	grep -q 'code = 14 desc = dial 127.0.0.1:[0-9]*: Connection refused' "$work/down.log"; then
	pass $t
else
	fail $t "$(tail -1 "$work/down.log")"
fi

t=interop_agent_join_deadline_against_slow_go_server
# the clock starts once the Go peer listens (its start is slow on a loaded machine): the 1 s
# deadline must end the call well before the server's 4 s answer
if start_peer slow join-server --delay 4s && start=$(date +%s%N) &&
	! "$agent" join --endpoint "127.0.0.1:$pport" --name w --role worker --disk-uuid "$uuid" \
		--ssh-host-key "$work/ssh_host_key" --out "$work/slow" --timeout 1 --attestation dummy \
		2>"$work/slow.log" && grep -q 'code = 4 ' "$work/slow.log" &&
	[ $((($(date +%s%N) - start) / 1000000)) -lt 3500 ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/slow.log")"
fi

# ---- serve-init against the Go CLI-like init client ----
secret=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
"$peer" bcrypt --secret "$secret" >"$work/init_secret_hash"
cat >"$work/kubeadm-standin.sh" <<'SH'
#!/bin/sh
# Test double for the kubeadm init sequence: records what it was given, prints a kubeconfig.
env | grep '^CONSTEL_' | sort >"$(dirname "$0")/kubeadm-standin.env"
printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: interop\n'
SH
chmod +x "$work/kubeadm-standin.sh"

t=interop_go_cli_init_wrong_secret_gets_failure_and_logs_then_succeeds
if start_agent init serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/init_secret_hash" \
	--disk-uuid "$zero_uuid" --out "$work/init" --kubeadm "$work/kubeadm-standin.sh" --attestation dummy; then
	pid=$agent_pid
	"$peer" init-client --addr "127.0.0.1:$port" --secret "${secret%??}00" >"$work/init1.out" 2>&1
	rc1=$?
	"$peer" init-client --addr "127.0.0.1:$port" --secret "$secret" >"$work/init2.out" 2>&1
	rc2=$?
	wait_pid "$pid" 15
	rc=$?
	f=$(cat "$work/init1.out")
	why=
	[ $rc1 = 3 ] || why="$why first-rc=$rc1"
	grep -q '"error":"invalid init secret: crypto/bcrypt: hashedPassword is not the hash of the given password"' <<<"$f" || why="$why error"
	grep -qE '"max_chunk":([1-9][0-9]{0,2}|10[01][0-9]|102[0-4])[,}]' <<<"$f" || why="$why chunk"
	grep -qE '"log_bytes":[1-9]' <<<"$f" || why="$why logs"
	[ $rc2 = 0 ] || why="$why second-rc=$rc2"
	grep -q "\"cluster_id\":\"$cluster_id_zero\"" "$work/init2.out" || why="$why cluster_id"
	grep -q 'kind: Config' "$work/init2.out" || why="$why kubeconfig"
	[ $rc = 0 ] || why="$why agent-exit=$rc"
	[ "$(hexof "$work/init/state_disk_key")" = "$disk_key_zero" ] || why="$why disk_key"
	[ "$(cat "$work/init/cluster_id")" = "$cluster_id_zero" ] || why="$why cluster_id_file"
	ssh-keygen -l -f "$work/init/ssh_ca.pub" >/dev/null 2>&1 || why="$why ssh_ca"
	grep -q '^CONSTEL_CLUSTER_NAME=interop$' "$work/kubeadm-standin.env" || why="$why env"
	grep -q '^CONSTEL_APISERVER_CERT_SANS=10.42.0.1,api.example$' "$work/kubeadm-standin.env" || why="$why sans"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $f; $(cat "$work/init2.out"); $(tail -2 "$work/init.log")"
else
	fail $t "serve-init did not start: $(tail -2 "$work/init.log")"
fi

t=interop_go_cli_second_init_while_one_runs_is_failed_precondition
# kubeadm that runs until the test lets it end (at most 60 s): the second init comes while the
# first is surely under way, however slow the machine (a fixed sleep lost that race under load)
cat >"$work/kubeadm-slow.sh" <<SH
#!/bin/sh
: >"$work/slow.started"
for i in \$(seq 600); do [ -e "$work/slow.release" ] && break; sleep 0.1; done
printf 'apiVersion: v1\\nkind: Config\\n'
SH
chmod +x "$work/kubeadm-slow.sh"
if start_agent initslow serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/init_secret_hash" \
	--disk-uuid "$zero_uuid" --out "$work/initslow" --kubeadm "$work/kubeadm-slow.sh" --attestation dummy; then
	pid=$agent_pid
	"$peer" init-client --addr "127.0.0.1:$port" --secret "$secret" >"$work/slow1.out" 2>&1 &
	first=$!
	for _ in $(seq 600); do [ -e "$work/slow.started" ] && break; sleep 0.1; done
	"$peer" init-client --addr "127.0.0.1:$port" --secret "$secret" >"$work/slow2.out" 2>&1
	rc2=$?
	: >"$work/slow.release"
	wait_pid "$first" 60
	rc1=$?
	wait_pid "$pid" 15
	rc=$?
	if [ $rc1 = 0 ] && [ $rc2 = 1 ] && grep -q '^ERR 9 node is already being activated$' "$work/slow2.out" &&
		[ $rc = 0 ]; then
		pass $t
	else
		fail $t "first $rc1, second $rc2 ($(cat "$work/slow2.out")), agent $rc"
	fi
else
	fail $t "serve-init did not start"
fi

t=interop_go_cli_init_kubeadm_failure_ends_the_server
cat >"$work/kubeadm-fails.sh" <<'SH'
#!/bin/sh
echo "kubeadm stand-in: failing on purpose" >&2
exit 3
SH
chmod +x "$work/kubeadm-fails.sh"
if start_agent initfail serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/init_secret_hash" \
	--disk-uuid "$zero_uuid" --out "$work/initfail" --kubeadm "$work/kubeadm-fails.sh" --attestation dummy; then
	pid=$agent_pid
	"$peer" init-client --addr "127.0.0.1:$port" --secret "$secret" >"$work/initfail.out" 2>&1
	rc1=$?
	wait_pid "$pid" 15
	rc=$?
	if [ $rc1 = 3 ] && [ $rc = 1 ] && grep -q '"error":"init: kubeadm init: exit status 3"' "$work/initfail.out"; then
		pass $t
	else
		fail $t "client $rc1, agent $rc: $(cat "$work/initfail.out")"
	fi
else
	fail $t "serve-init did not start"
fi

# grpc-go puts the base64 nonce into :authority; one with '/' once made nghttp2 refuse it.
t=interop_go_cli_recover_against_agent_with_slash_in_authority
if start_agent recover serve-recover --listen 127.0.0.1:0 --disk-uuid "$zero_uuid" --out "$work/recover" \
	--attestation dummy; then
	pid=$agent_pid
	"$peer" recover-client --addr "127.0.0.1:$port" --slash-nonce >"$work/recover.out" 2>&1
	rc1=$?
	wait_pid "$pid" 15
	rc=$?
	if [ $rc1 = 0 ] && [ $rc = 0 ] && [ "$(hexof "$work/recover/state_disk_key")" = "$disk_key_zero" ] &&
		[ "$(hexof "$work/recover/measurement_secret")" = "$msecret_zero" ]; then
		pass $t
	else
		fail $t "client $rc1 ($(cat "$work/recover.out")), agent $rc: $(tail -1 "$work/recover.log")"
	fi
else
	fail $t "serve-recover did not start"
fi

t=interop_agent_logs_hold_no_secret
found=
for k in "$disk_key_zero" "$msecret_zero" "$secret" "$(hexof "$work/join/state_disk_key")"; do
	b64=$(printf '%s' "$k" | xxd -r -p | base64 -w0)
	b64url=$(tr '+/' '-_' <<<"$b64")
	if grep -rqiF -e "$k" -e "$b64" -e "$b64url" "$work"/*.log; then found="$found ${k:0:8}"; fi
done
[ -z "$found" ] && pass $t || fail $t "secret in a log:$found"
