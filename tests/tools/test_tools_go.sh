# The host tools against the independent Go peer: a Go node (Go-made CSR and SSH key) joins
# through constel-joinservice and checks its ticket with Go's x509 and x/crypto/ssh;
# constel-init against a Go init server (Go's bcrypt, url and hkdf), wrong secret then right;
# constel-recover against a Go recovery server. Attestation is the dummy variant on both
# sides (the Go peer has no TPM); the qemu-vtpm runs are in the swtpm tests.
. tests/lib.sh
tools=$PWD/$BUILD/tools
peer=$(tests/interop/build-atlspeer.sh) || { fail tools_go "atlspeer did not build"; exit 0; }
work=$(mktemp -d /tmp/constel-tgo-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
uuid=0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000009

hkdf() { # hkdf IKM_HEX SALT_HEX INFO: HKDF-SHA256, 32 bytes, hex
	python3 - "$@" <<'PY'
import hashlib, hmac, sys
ikm, salt, info = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3].encode()
prk = hmac.new(salt, ikm, hashlib.sha256).digest()
print(hmac.new(prk, info + b"\x01", hashlib.sha256).hexdigest())
PY
}
ms() { python3 -c "import base64,json,sys; print(base64.b64decode(json.load(open(sys.argv[1]))[sys.argv[2]]).hex())" "$work/ws/constellation-mastersecret.json" "$1"; }
"$tools/constel-init" --workspace "$work/ws" prepare >/dev/null
key=$(ms key)
salt=$(ms salt)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
	-subj /CN=kubernetes -days 1 >/dev/null 2>&1

t=tools_go_node_joins_through_constel_joinservice
msalt=$(printf 'ab%.0s' $(seq 32))
echo "$msalt" >"$work/msalt"
"$tools/constel-joinservice" --listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json" \
	--measurement-salt "$work/msalt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key" \
	--api-endpoint 10.42.1.100:6443 --attestation dummy --token abcdef.0123456789abcdef 2>"$work/js.log" &
jport=$(logged_port "$work/js.log")
out=$("$peer" join-client --addr "127.0.0.1:$jport" --disk-uuid "$uuid" --ca "$work/ca.crt")
want_key=$(hkdf "$key" "$salt" "key-$uuid")
want_cid=$(hkdf "$(hkdf "$key" "$salt" key-measurementSecret)" "$msalt" key-clusterID)
if grep -q "^OK " <<<"$out" && grep -q "\"state_disk_key\":\"$want_key\"" <<<"$out" &&
	grep -q "\"cluster_id\":\"$want_cid\"" <<<"$out" &&
	grep -q '"kubelet_cn":"system:node:go-worker"' <<<"$out" &&
	grep -q '"token":"abcdef.0123456789abcdef"' <<<"$out" &&
	grep -q "\"ca_hash\":\"sha256:$(openssl x509 -in "$work/ca.crt" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -c1-64)\"" <<<"$out" &&
	grep -q '"kubelet_ips":"\[10.42.2.200\]"' <<<"$out" &&
	grep -q '"ssh_principals":\["10.42.2.200","go-worker"\]' <<<"$out"; then
	pass $t
else
	fail $t "$out; $(tail -1 "$work/js.log")"
fi

t=tools_init_against_a_go_init_server_wrong_secret_then_right
if start_peer init init-server --hash "$work/ws/init-secret.bcrypt"; then
	cp "$work/ws/init-secret" "$work/right"
	printf '%064d' 0 >"$work/ws/init-secret"
	out1=$("$tools/constel-init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$pport" \
		--attestation dummy --timeout 20 2>&1)
	rc1=$?
	cp "$work/right" "$work/ws/init-secret"
	out2=$("$tools/constel-init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$pport" \
		--attestation dummy --timeout 20 2>&1)
	rc2=$?
	sleep 0.5
	cid=$(sed -n 's/^Cluster ID  //p' <<<"$out2")
	if [ $rc1 = 1 ] && grep -q 'init failed: invalid init secret crypto/bcrypt' <<<"$out1" &&
		grep -q '(2400 bytes of node logs' <<<"$out1" && [ $rc2 = 0 ] && [ ${#cid} = 64 ] &&
		grep -q "\"cluster_id\":\"$cid\",\"storage\":\"storage://no-store\"" "$work/init.out" &&
		grep -q 'name: go' "$work/ws/constellation-admin.conf"; then
		pass $t
	else
		fail $t "first $rc1: $out1 / second $rc2: $out2 / go: $(tail -1 "$work/init.out")"
	fi
else
	fail $t "Go init server did not start"
fi

t=tools_recover_against_a_go_recovery_server
if start_peer rec recover-server --disk-uuid "$uuid"; then
	out=$(cd "$work/ws" && "$tools/constel-recover" --endpoint "127.0.0.1:$pport" --attestation dummy 2>&1)
	rc=$?
	sleep 0.5
	if [ $rc = 0 ] && grep -q "\"disk_key\":\"$(hkdf "$key" "$salt" "key-$uuid")\",\"storage\":\"storage://no-store\"" "$work/rec.out"; then
		pass $t
	else
		fail $t "exit $rc: $out / go: $(cat "$work/rec.out")"
	fi
else
	fail $t "Go recovery server did not start"
fi
