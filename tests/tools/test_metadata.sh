# constel-metadata: the QEMU metadata API of spec §5.2 on loopback, "self" by source address
# and by a node's own port, the JSON shapes the Go client parses, and its refusals.
. tests/lib.sh
md=$PWD/$BUILD/tools/constel-metadata
work=$(mktemp -d /tmp/constel-md-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p0=$(free_port)
p1=$(free_port)
printf '$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234\n' >"$work/hash"
cat >"$work/config.json" <<JSON
{"listen": "127.0.0.1:$p0", "init_secret_hash_file": "$work/hash",
 "nodes": [{"name": "control-plane-0", "role": "ControlPlane", "ip": "10.42.1.100", "source": "127.0.0.1"},
           {"name": "worker-0", "role": "Worker", "ip": "10.42.2.100", "listen": "127.0.0.1:$p1"}]}
JSON
"$md" --config "$work/config.json" 2>"$work/md.log" &
for _ in $(seq 50); do grep -q serving "$work/md.log" && break; sleep 0.1; done
get() { python3 -c "import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen('http://127.0.0.1:' + sys.argv[1] + sys.argv[2], timeout=5); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())" "$1" "$2"; }

t=metadata_self_by_source_address
want='200 {"Name":"control-plane-0","ProviderID":"qemu:///hostname/control-plane-0","Role":"ControlPlane","VPCIP":"10.42.1.100","SecondaryIPRange":"","AliasIPRanges":null}'
got=$(get $p0 /self)
[ "$got" = "$want" ] && pass $t || fail $t "$got"

t=metadata_self_by_the_nodes_own_port
got=$(get $p1 /self)
grep -q '^200 {"Name":"worker-0",.*"Role":"Worker","VPCIP":"10.42.2.100"' <<<"$got" && pass $t || fail $t "$got"

t=metadata_peers_endpoint_and_init_secret_hash
peers=$(get $p0 /peers)
if python3 -c "import json,sys; d=json.loads(sys.argv[1].split(' ',1)[1]); assert [x['Name'] for x in d]==['control-plane-0','worker-0']" "$peers" &&
	[ "$(get $p0 /endpoint)" = '200 "10.42.1.100"' ] &&
	[ "$(get $p0 /initsecrethash)" = '200 $2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234' ]; then
	pass $t
else
	fail $t "$peers / $(get $p0 /endpoint) / $(get $p0 /initsecrethash)"
fi

t=metadata_unknown_path_is_404_and_the_server_stays_up
if [ "$(get $p0 /nothing)" = '404 not found' ] && get $p0 /self | grep -q '^200'; then
	pass $t
else
	fail $t "$(get $p0 /nothing)"
fi

t=metadata_refuses_a_bad_config_with_one_line
printf '{"listen": "127.0.0.1:1", "nodes": []}' >"$work/bad.json"
err=$("$md" --config "$work/bad.json" 2>&1)
rc=$?
if [ $rc = 1 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q 'needs listen, init_secret_hash_file' <<<"$err"; then
	pass $t
else
	fail $t "exit $rc: $err"
fi

t=metadata_read_by_the_go_client_as_constellation_parses_it
peer=$(tests/interop/build-atlspeer.sh)
out=$("$peer" metadata-client --addr "http://127.0.0.1:$p1")
if [ "$out" = 'OK {"endpoint":"10.42.1.100","hash":"$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234","peers":2,"role":"Worker","self":"worker-0","vpcip":"10.42.2.100"}' ]; then
	pass $t
else
	fail $t "$out"
fi

# The agent's own metadata client (agent/flow/metadata.c over agent/net/http.c) against the
# same server: every path parsed into what the boot needs.
t=metadata_read_by_the_agent
out=$("$PWD/$BUILD/constel-agent" metadata --url "http://127.0.0.1:$p0" 2>&1)
want="self control-plane-0 control-plane 10.42.1.100
peer control-plane-0 control-plane 10.42.1.100
peer worker-0 worker 10.42.2.100
endpoint 10.42.1.100
init-secret-hash \$2a\$10\$..."
[ "$out" = "$want" ] && pass $t || fail $t "$out"

# --json: issue 27's shape over the same cloud_* calls every cloud plugs into; the join
# endpoints are the load balancer's and every control plane's at 30090
t=metadata_json_of_what_the_boot_would_use
out=$("$PWD/$BUILD/constel-agent" metadata --imds "http://127.0.0.1:$p0" --json 2>&1)
if python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["self"] == {"name": "control-plane-0", "providerID": "qemu:///hostname/control-plane-0",
                     "role": "ControlPlane", "vpcIP": "10.42.1.100"}, j["self"]
assert [c["name"] for c in j["controlPlanes"]] == ["control-plane-0"], j
assert j["endpoint"] == "10.42.1.100:6443" and j["joinEndpoints"] == ["10.42.1.100:30090"], j
assert j["initSecretHash"].startswith("$2a$10$abcdefghij"), j
PY
then pass $t; else fail $t "$out"; fi

t=metadata_agent_refuses_a_body_that_is_not_the_shape_with_one_line
out=$("$PWD/$BUILD/constel-agent" metadata --url "http://127.0.0.1:$p0/nothing" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q 'metadata: /self is not an instance (Name, Role, VPCIP) (HTTP 404)' <<<"$out" &&
	pass $t || fail $t "exit $rc: $out"

t=metadata_agent_reports_a_server_that_is_down
out=$("$PWD/$BUILD/constel-agent" metadata --url "http://127.0.0.1:$(free_port)" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q 'http: GET http://127.0.0.1:.*/self' <<<"$out" &&
	pass $t || fail $t "exit $rc: $out"
