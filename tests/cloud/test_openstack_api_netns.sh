# `constel-agent metadata --csp openstack` against tests/cloud/fake_openstack_api.py at
# 169.254.169.254 (metadata service, Keystone, Nova and Neutron in one fake) inside a network
# namespace this test makes: the peers as Constellation's List computes them (servers tagged
# constellation-uid-<uid>, role from constellation-role-<role>, the fixed IPv4 address in the
# cluster's subnet; servers without a role or such an address left out), every page followed,
# throttling retried, a token revoked early taken again; a refused policy, a wrong password
# and pages without end each one line.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
fake=$PWD/tests/cloud/fake_openstack_api.py
work=$(mktemp -d /tmp/constel-osapi-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
	echo "# not root or no namespaces: OpenStack API tests skipped"
	exit 0
fi

addr() { # $1 fixed IP, $2 floating IP
	echo "{\"constell-net\": [{\"addr\": \"$1\", \"version\": 4, \"OS-EXT-IPS:type\": \"fixed\"}, {\"addr\": \"$2\", \"version\": 4, \"OS-EXT-IPS:type\": \"floating\"}]}"
}
state() { # $1: extra members
	cat <<JSON
{"self": {"name": "w-0", "uuid": "6f0c8e1a-0000-4000-8000-000000000005", "ip": "192.168.178.5",
          "meta": {"constellation-role": "worker", "constellation-uid": "c0ffee",
                   "constellation-init-secret-hash": "\$2a\$10\$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"}},
 "user": {"name": "constel", "domain": "Default", "password": "pa\"ss\\\\word"},
 "networks": [{"name": "constell-net", "tags": ["constellation-uid-c0ffee"]}],
 "subnets": [{"name": "other", "cidr": "10.0.0.0/8", "tags": ["constellation-uid-c0ffee"]},
             {"name": "constell-net", "cidr": "192.168.178.0/24", "tags": ["constellation-uid-c0ffee"]}],
 "servers": [
  {"name": "cp-0", "id": "id-cp0", "tags": ["constellation-uid-c0ffee", "constellation-role-control-plane"], "addresses": $(addr 192.168.178.2 203.0.113.2)},
  {"name": "cp-1", "id": "id-cp1", "tags": ["constellation-uid-c0ffee", "constellation-role-controlplane"], "addresses": {"x": [{"addr": "10.1.1.1", "version": 4, "OS-EXT-IPS:type": "fixed"}], "constell-net": [{"addr": "192.168.178.3", "version": 4, "OS-EXT-IPS:type": "fixed"}]}},
  {"name": "w-0", "id": "id-w0", "tags": ["constellation-uid-c0ffee", "constellation-role-worker"], "addresses": $(addr 192.168.178.5 203.0.113.5)},
  {"name": "norole", "id": "id-nr", "tags": ["constellation-uid-c0ffee"], "addresses": $(addr 192.168.178.9 203.0.113.9)},
  {"name": "outside", "id": "id-out", "tags": ["constellation-uid-c0ffee", "constellation-role-worker"], "addresses": $(addr 10.2.2.2 203.0.113.10)},
  {"name": "other", "id": "id-x", "tags": ["constellation-uid-beef", "constellation-role-worker"], "addresses": $(addr 192.168.178.7 203.0.113.7)}],
 "page_size": 2, "throttle": {"servers": 1}$1}
JSON
}

cat >"$work/inside.sh" <<'SH'
set -u
work=$1 fake=$2 agent=$3 name=$4
ip link set lo up
ip addr add 169.254.169.254/32 dev lo || exit 3
python3 "$fake" --state "$work/$name.json" --addr 169.254.169.254 --port 80 --log "$work/$name.log" >"$work/$name.ready" 2>"$work/$name.fake.err" &
f=$!
for _ in $(seq 100); do [ -s "$work/$name.ready" ] && break; sleep 0.1; done
"$agent" metadata --csp openstack >"$work/$name.out" 2>"$work/$name.err"
echo $? >"$work/$name.rc"
kill $f
wait 2>/dev/null
SH
run() { state "$2" >"$work/$1.json"; unshare -n bash "$work/inside.sh" "$work" "$fake" "$agent" "$1"; }

run ok ', "token_uses": 3'
t=openstack_peers_from_keystone_nova_and_neutron_as_constellation_lists_them
if [ "$(cat "$work/ok.rc")" = 0 ] &&
	grep -qx 'peer cp-0 control-plane 192.168.178.2 id-cp0' "$work/ok.out" &&
	grep -qx 'peer cp-1 control-plane 192.168.178.3 id-cp1' "$work/ok.out" &&
	grep -qx 'peer w-0 worker 192.168.178.5 id-w0' "$work/ok.out" &&
	[ "$(grep -c '^peer ' "$work/ok.out")" = 3 ] &&
	grep -qx 'endpoint 192.0.2.10' "$work/ok.out" && grep -qx 'uid c0ffee' "$work/ok.out" &&
	[ "$(grep -c '"path": "/compute/v2.1/servers/detail".*"status": 200' "$work/ok.log")" = 3 ] &&
	[ "$(grep -c '"status": 429' "$work/ok.log")" = 1 ]; then
	pass $t
else
	fail $t "$(cat "$work/ok.out" "$work/ok.err" 2>/dev/null | tail -8)"
fi
t=openstack_token_revoked_early_is_taken_again_once
# 2 Neutron calls and 4 Nova answers with 3 uses a token: a 401, then a second token
if [ "$(grep -c '"path": "/identity/v3/auth/tokens", "method": "POST", "status": 201' "$work/ok.log")" = 2 ] &&
	[ "$(grep -c '"status": 401' "$work/ok.log")" = 1 ] &&
	! grep -q 'gAAAAA\|pa.ss' "$work/ok.out" "$work/ok.err" "$work/ok.log"; then
	pass $t
else
	fail $t "$(grep -c 201 "$work/ok.log") tokens; $(tail -3 "$work/ok.err")"
fi

run deny ', "deny": ["os_compute_api:servers:detail"]'
t=openstack_refused_policy_is_one_line_naming_it
if [ "$(grep -c 'os_compute_api:servers:detail' "$work/deny.err")" = 1 ] &&
	grep -q 'openstack: Nova GET /servers/detail: the user of user_data is not allowed os_compute_api:servers:detail' "$work/deny.err" &&
	! grep -q '^peer ' "$work/deny.out"; then
	pass $t
else
	fail $t "$(cat "$work/deny.err" | tail -4)"
fi

run badpw ', "user_data": {}' 
python3 - "$work/badpw.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["user"]["user_data_password"] = "wrong"
json.dump(s, open(sys.argv[1], "w"))
PY
unshare -n bash "$work/inside.sh" "$work" "$fake" "$agent" badpw
t=openstack_wrong_password_is_one_line_naming_the_user_not_the_password
if [ "$(grep -c 'Keystone' "$work/badpw.err")" = 1 ] &&
	grep -q "the user constel in domain Default of user_data is refused" "$work/badpw.err" &&
	! grep -q 'wrong' "$work/badpw.err" &&
	[ "$(grep -c '"status": 401' "$work/badpw.log")" = 1 ]; then
	pass $t
else
	fail $t "$(cat "$work/badpw.err" | tail -4)"
fi

run endless ', "endless": true'
t=openstack_pages_without_end_are_stopped_at_50
if [ "$(grep -c '"path": "/compute/v2.1/servers/detail".*"status": 200' "$work/endless.log")" = 50 ] &&
	grep -q 'more than 50 pages' "$work/endless.err"; then
	pass $t
else
	fail $t "$(grep -c servers/detail "$work/endless.log") pages; $(tail -2 "$work/endless.err")"
fi

# the fake refuses as Keystone and Nova do (so that a client that sent no token would fail here)
state "" >"$work/refuse.json"
python3 "$fake" --state "$work/refuse.json" --log "$work/refuse.log" >"$work/refuse.port" 2>/dev/null &
fpid=$!
for _ in $(seq 100); do [ -s "$work/refuse.port" ] && break; sleep 0.1; done
p=$(cat "$work/refuse.port")
notok=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$p/compute/v2.1/servers/detail")
forged=$(curl -s -w ' %{http_code}' -H 'X-Auth-Token: gAAAAAforged' "http://127.0.0.1:$p/network/v2.0/networks")
badpw=$(curl -s -w ' %{http_code}' -H 'Content-Type: application/json' --data '{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "constel", "domain": {"name": "Default"}, "password": "no"}}}}}' "http://127.0.0.1:$p/identity/v3/auth/tokens")
kill $fpid
wait $fpid 2>/dev/null
t=openstack_fake_refuses_without_a_token_with_a_forged_one_and_a_wrong_password
case "$notok|$forged|$badpw" in
*'"title": "Unauthorized"'*' 401|'*'"title": "Unauthorized"'*' 401|'*'"title": "Unauthorized"'*' 401') pass $t ;;
*) fail $t "$notok | $forged | $badpw" ;;
esac
