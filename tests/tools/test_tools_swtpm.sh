# The host tools against the shipped agent attesting with swtpm (qemu-vtpm): constel-init
# (prepare, apply with the stream rules, a refused attestation, a wrong init secret) against
# serve-init, constel-recover against serve-recover, every key checked with an HKDF written
# here in Python. Loopback only; every wait bounded.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
init=$PWD/$BUILD/tools/constel-init
recover=$PWD/$BUILD/tools/constel-recover
work=$(mktemp -d /tmp/constel-tools-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

swtpm_boot "$work"
uuid=0B3E9C3A-8E6F-4C1E-9D2B-5A7F00000001
zero=$(printf '0%.0s' $(seq 64))
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/measurements.json"
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "${zero%?}1" >"$work/wrong.json"
cat >"$work/kubeadm.sh" <<'SH'
#!/bin/sh
# Test double for the kubeadm init sequence: admin.conf with one cluster.
printf 'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: https://10.42.1.100:6443\n  name: c\nkind: Config\n'
SH
chmod +x "$work/kubeadm.sh"

# hkdf KEY_B64 SALT_B64 INFO: HKDF-SHA256 (RFC 5869), 32 bytes, hex
hkdf() {
	python3 - "$@" <<'PY'
import base64, hashlib, hmac, sys
ikm, salt, info = base64.b64decode(sys.argv[1]), base64.b64decode(sys.argv[2]), sys.argv[3].encode()
prk = hmac.new(salt, ikm, hashlib.sha256).digest()
print(hmac.new(prk, info + b"\x01", hashlib.sha256).hexdigest())
PY
}
ms_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$work/ws/constellation-mastersecret.json" "$1"; }

start_init() { # start_init OUT: serve-init on a free port, sets iport and ipid
	"$agent" --tpm "$tpm" serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/ws/init-secret.bcrypt" \
		--disk-uuid "$uuid" --out "$work/$1" --kubeadm "$work/kubeadm.sh" 2>"$work/$1.log" &
	ipid=$!
	iport=$(logged_port "$work/$1.log")
}

t=tools_init_prepare_writes_the_cli_formats
if "$init" --workspace "$work/ws" prepare >/dev/null &&
	python3 - "$work/ws/constellation-mastersecret.json" <<'PY'
import base64, json, sys
d = json.load(open(sys.argv[1]))
assert sorted(d) == ["key", "salt"], d.keys()
assert len(base64.b64decode(d["key"], validate=True)) == 32 and len(base64.b64decode(d["salt"], validate=True)) == 32
PY
then
	grep -qE '^\$2a\$10\$[./A-Za-z0-9]{53}$' "$work/ws/init-secret.bcrypt" &&
		[ "$(stat -c %a "$work/ws/constellation-mastersecret.json")" = 600 ] && pass $t ||
		fail $t "hash or mode wrong"
else
	fail $t "prepare failed or master secret format wrong"
fi

t=tools_init_refuses_a_node_whose_measurements_differ
if start_init refused; then
	out=$("$init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$iport" \
		--measurements "$work/wrong.json" --timeout 20 2>&1)
	rc=$?
	kill $ipid 2>/dev/null
	wait $ipid 2>/dev/null
	if [ $rc = 1 ] && grep -q 'measurement validation failed: PCR 15' <<<"$out" &&
		[ ! -e "$work/refused/state_disk_key" ]; then
		pass $t
	else
		fail $t "exit $rc: $out"
	fi
else
	fail $t "serve-init did not start: $(tail -1 "$work/refused.log")"
fi

t=tools_init_wrong_secret_gets_node_logs_then_the_right_one_succeeds
if start_init ok; then
	cp "$work/ws/init-secret" "$work/init-secret.right"
	printf '%s' "$zero" >"$work/ws/init-secret.tmp" && mv "$work/ws/init-secret.tmp" "$work/ws/init-secret"
	out1=$("$init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$iport" \
		--measurements "$work/measurements.json" --timeout 20 2>&1)
	rc1=$?
	mv "$work/init-secret.right" "$work/ws/init-secret"
	out2=$("$init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$iport" \
		--measurements "$work/measurements.json" --timeout 20 2>&1)
	rc2=$?
	wait $ipid
	rc=$?
	cid=$(sed -n 's/^Cluster ID  //p' <<<"$out2")
	key=$(ms_field key)
	salt=$(ms_field salt)
	want_disk=$(hkdf "$key" "$salt" "key-$(tr A-F a-f <<<"$uuid")")
	why=
	[ $rc1 = 1 ] && grep -q 'init failed: invalid init secret' <<<"$out1" || why="$why first"
	grep -q 'error: init: invalid init secret' "$work/ws/constellation-cluster.log" || why="$why logs"
	[ $rc2 = 0 ] && [ ${#cid} = 64 ] || why="$why second"
	[ "$(cat "$work/ok/cluster_id")" = "$cid" ] || why="$why cluster_id"
	[ "$(od -An -tx1 -v "$work/ok/state_disk_key" | tr -d ' \n')" = "$want_disk" ] || why="$why disk_key"
	grep -q '^    server: https://127.0.0.1:6443$' "$work/ws/constellation-admin.conf" || why="$why kubeconfig"
	[ $rc = 0 ] || why="$why agent=$rc"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $out1; $out2"
else
	fail $t "serve-init did not start: $(tail -1 "$work/ok.log")"
fi

t=tools_recover_pushes_the_master_secret_to_the_node
swtpm_boot "$work" # a reboot: PCRs zero again
"$agent" --tpm "$tpm" serve-recover --listen 127.0.0.1:0 --disk-uuid "$uuid" --out "$work/rec" 2>"$work/rec.log" &
rpid=$!
rport=$(logged_port "$work/rec.log")
out=$(cd "$work/ws" && "$recover" --endpoint "127.0.0.1:$rport" --measurements "$work/measurements.json" 2>&1)
rc=$?
wait $rpid
arc=$?
want_disk=$(hkdf "$(ms_field key)" "$(ms_field salt)" "key-$uuid")
want_ms=$(hkdf "$(ms_field key)" "$(ms_field salt)" "key-measurementSecret")
if [ $rc = 0 ] && [ $arc = 0 ] && [ "$(od -An -tx1 -v "$work/rec/state_disk_key" | tr -d ' \n')" = "$want_disk" ] &&
	[ "$(od -An -tx1 -v "$work/rec/measurement_secret" | tr -d ' \n')" = "$want_ms" ]; then
	pass $t
else
	fail $t "recover $rc ($out), agent $arc: $(tail -1 "$work/rec.log")"
fi

t=tools_init_refuses_a_kubeconfig_with_two_clusters
swtpm_boot "$work"
printf '#!/bin/sh\nprintf -- "clusters:\\n- cluster:\\n  name: a\\n- cluster:\\n  name: b\\n"\n' >"$work/kubeadm.sh"
rm -rf "$work/ws/constellation-admin.conf" "$work/ws/measurement-salt"
if start_init two; then
	out=$("$init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$iport" \
		--measurements "$work/measurements.json" --timeout 20 2>&1)
	rc=$?
	wait $ipid
	if [ $rc = 1 ] && grep -q 'the kubeconfig has 2 clusters, want exactly one' <<<"$out" &&
		[ ! -e "$work/ws/constellation-admin.conf" ]; then
		pass $t
	else
		fail $t "exit $rc: $out"
	fi
else
	fail $t "serve-init did not start: $(tail -1 "$work/two.log")"
fi

t=tools_recover_gives_up_on_an_unreachable_node_within_its_timeout
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$(date +%s)
out=$(cd "$work/ws" && "$recover" --endpoint "127.0.0.1:$closed" --measurements "$work/measurements.json" --timeout 6 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'retrying in 5 s' <<<"$out" && grep -q 'code = 14' <<<"$out" &&
	[ $(($(date +%s) - start)) -le 12 ]; then
	pass $t
else
	fail $t "exit $rc after $(($(date +%s) - start)) s: $out"
fi

t=tools_answer_help_version_and_usage_errors
if "$init" --help | grep -q '^usage: constel-init' && "$recover" --help | grep -q '^usage: constel-recover' &&
	"$init" --version | grep -q "^constel-init $(cat VERSION)$" &&
	"$recover" --version | grep -q "^constel-recover $(cat VERSION)$" &&
	{ "$init" frob 2>/dev/null; [ $? = 2 ]; } && { "$recover" --endpoint 2>/dev/null; [ $? = 2 ]; } &&
	{ "$recover" --endpoint x:1 --attestation qemu-vtpm 2>/dev/null; [ $? = 2 ]; }; then
	pass $t
else
	fail $t "help, version or usage exit codes wrong"
fi

t=tools_logs_hold_no_secret
found=
for k in "$(ms_field key)" "$(ms_field salt)"; do
	h=$(printf '%s' "$k" | base64 -d | od -An -tx1 -v | tr -d ' \n')
	if grep -rqiF -e "$k" -e "$h" "$work"/*.log; then found="$found ${h:0:8}"; fi
done
[ -z "$found" ] && pass $t || fail $t "secret in a log:$found"
