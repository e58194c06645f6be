# The whole host sequence with tools only (no Go), every node attesting with swtpm
# (qemu-vtpm), each "boot" a TPM restart: constel-init initialises a node (serve-init), a
# second node joins through constel-joinservice, rejoins after a reboot, and a control plane
# is recovered with constel-recover. The keys must agree across the tools; the kubelet and
# SSH certificates must pass openssl and ssh-keygen; changed measurements at the join service
# must refuse the node until they are put back.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
tools=$PWD/$BUILD/tools
work=$(mktemp -d /tmp/constel-seq-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
uuid=0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000007

boot() { swtpm_boot "$work"; } # a node boot: the TPM restarts, its PCRs are zero again
zero=$(printf '0%.0s' $(seq 64))
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/m.json"
cat >"$work/kubeadm.sh" <<'SH'
#!/bin/sh
# Test double for the kubeadm init sequence: admin.conf with one cluster.
printf 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.42.1.100:6443\n  name: c\nkind: Config\n'
SH
chmod +x "$work/kubeadm.sh"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
	-subj /CN=kubernetes -days 1 >/dev/null 2>&1

t=sequence_init_with_tools
boot
"$tools/constel-init" --workspace "$work/ws" prepare >/dev/null
"$agent" --tpm "$tpm" serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--disk-uuid "$uuid" --out "$work/init" --kubeadm "$work/kubeadm.sh" 2>"$work/init.log" &
ipid=$!
iport=$(logged_port "$work/init.log")
out=$("$tools/constel-init" --workspace "$work/ws" apply --endpoint "127.0.0.1:$iport" \
	--measurements "$work/m.json" --timeout 30 2>&1)
rc=$?
wait $ipid
cid=$(sed -n 's/^Cluster ID  //p' <<<"$out")
if [ $rc = 0 ] && [ ${#cid} = 64 ] && [ -s "$work/ws/measurement-salt" ]; then
	pass $t
else
	fail $t "exit $rc: $out; $(tail -1 "$work/init.log")"
fi

mkdir -p "$work/pki/etcd"
for f in ca.key sa.key front-proxy-ca.key etcd/ca.key ca.crt sa.pub front-proxy-ca.crt etcd/ca.crt; do
	printf 'test double of %s\n' "$f" >"$work/pki/$f"
done
"$tools/constel-joinservice" --listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json" \
	--measurement-salt "$work/ws/measurement-salt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key" \
	--api-endpoint 10.42.1.100:6443 --measurements "$work/m.json" --cert-sans api.example \
	--pki-dir "$work/pki" 2>"$work/js.log" &
jport=$(logged_port "$work/js.log")

t=sequence_join_through_constel_joinservice_agrees_with_init
boot
if "$agent" --tpm "$tpm" join --endpoint "127.0.0.1:$jport" --name worker-1 --role worker \
	--disk-uuid "$uuid" --ip 10.42.2.100 --ssh-host-key "$work/ssh_key" --out "$work/join" \
	2>"$work/join.log"; then
	why=
	[ "$(cat "$work/join/cluster_id")" = "$cid" ] || why="$why cluster_id"
	[ "$(hexof "$work/join/state_disk_key")" = "$(hexof "$work/init/state_disk_key")" ] || why="$why disk_key"
	openssl verify -CAfile "$work/ca.crt" "$work/join/kubelet-client-crt.pem" >/dev/null 2>&1 || why="$why kubelet_cert"
	ssh-keygen -L -f "$work/join/ssh_host_cert.pub" 2>/dev/null | grep -q 'api.example' || why="$why ssh_cert"
	grep -qE '^[a-z0-9]{6}\.[a-z0-9]{16}$' "$work/join/token" || why="$why token"
	[ "$(cat "$work/join/discovery_token_ca_cert_hash")" = "sha256:$(openssl x509 -in "$work/ca.crt" -pubkey -noout |
		openssl pkey -pubin -outform DER | sha256sum | cut -c1-64)" ] || why="$why ca_hash"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why"
else
	fail $t "$(tail -1 "$work/join.log"); $(tail -2 "$work/js.log")"
fi

t=sequence_control_plane_join_gets_the_pki_files
boot
if "$agent" --tpm "$tpm" join --endpoint "127.0.0.1:$jport" --name control-plane-1 --role control-plane \
	--disk-uuid 0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000008 --ip 10.42.1.101 --ssh-host-key "$work/ssh_key2" \
	--out "$work/cp" 2>"$work/cp.log" && [ "$(cat "$work/cp/pki/etcd/ca.key")" = "test double of etcd/ca.key" ] &&
	[ "$(find "$work/cp/pki" -type f | wc -l)" = 8 ] && [ ! -e "$work/join/pki" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/cp.log")"
fi

t=sequence_rejoin_after_a_reboot
boot
if "$agent" --tpm "$tpm" rejoin --endpoint "127.0.0.1:$jport" --disk-uuid "$uuid" --out "$work/rejoin" \
	2>"$work/rejoin.log" &&
	[ "$(hexof "$work/rejoin/state_disk_key")" = "$(hexof "$work/join/state_disk_key")" ] &&
	[ "$(hexof "$work/rejoin/measurement_secret")" = "$(hexof "$work/join/measurement_secret")" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/rejoin.log")"
fi

t=sequence_join_service_refuses_changed_measurements_until_put_back
boot
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "${zero%?}1" >"$work/m.json.new"
sleep 1 # a new mtime
mv "$work/m.json.new" "$work/m.json"
"$agent" --tpm "$tpm" rejoin --endpoint "127.0.0.1:$jport" --disk-uuid "$uuid" --out "$work/rj2" \
	2>"$work/rj2.log"
rc1=$?
sleep 1
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/m.json.new"
mv "$work/m.json.new" "$work/m.json"
"$agent" --tpm "$tpm" rejoin --endpoint "127.0.0.1:$jport" --disk-uuid "$uuid" --out "$work/rj3" \
	2>"$work/rj3.log"
rc2=$?
if [ $rc1 = 1 ] && grep -q 'code = 14' "$work/rj2.log" && [ ! -e "$work/rj2/state_disk_key" ] &&
	[ $rc2 = 0 ] && grep -q 'measurements reloaded' "$work/js.log"; then
	pass $t
else
	fail $t "first $rc1 ($(tail -1 "$work/rj2.log")), second $rc2 ($(tail -1 "$work/rj3.log"))"
fi

t=sequence_recover_with_tools
boot
"$agent" --tpm "$tpm" serve-recover --listen 127.0.0.1:0 --disk-uuid "$uuid" --out "$work/rec" \
	2>"$work/rec.log" &
rpid=$!
rport=$(logged_port "$work/rec.log")
out=$(cd "$work/ws" && "$tools/constel-recover" --endpoint "127.0.0.1:$rport" --measurements "$work/m.json" 2>&1)
rc=$?
wait $rpid
if [ $rc = 0 ] && [ "$(hexof "$work/rec/state_disk_key")" = "$(hexof "$work/join/state_disk_key")" ]; then
	pass $t
else
	fail $t "exit $rc: $out"
fi

t=sequence_join_service_logs_hold_no_secret_or_token
tok=$(cat "$work/join/token" 2>/dev/null)
found=
for k in "$(hexof "$work/join/state_disk_key")" "$(hexof "$work/join/measurement_secret")" "${tok:-none}"; do
	grep -qiF -e "$k" "$work/js.log" && found="$found ${k:0:8}"
done
[ -z "$found" ] && grep -q 'ticket issued for worker-1' "$work/js.log" && pass $t || fail $t "found:$found"
