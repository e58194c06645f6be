# `constel-agent metadata --csp gcp` against tests/cloud/fake_gce_api.py at 169.254.169.254
# (metadata server and Compute API in one fake) inside a network namespace this test makes:
# what the boot would use (role and UID from the own instance's labels, the cluster's
# instances in every zone of the region, the load balancer's forwarding rule), and a missing
# IAM permission as one line naming the call and the permission.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
fake=$PWD/tests/cloud/fake_gce_api.py
work=$(mktemp -d /tmp/constel-gceapi-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
	echo "# not root or no namespaces: GCE API tests skipped"
	exit 0
fi

state() { # $1: extra members
	cat <<JSON
{"project": "constel-proj", "self": "w-0", "page_size": 1,
 "zones": ["europe-west3-a", "europe-west3-b", "us-east1-b"],
 "instances": [
  {"name": "cp-0", "zone": "europe-west3-a", "networkIP": "10.0.0.2",
   "labels": {"constellation-uid": "c0ffee", "constellation-role": "control-plane"}},
  {"name": "w-0", "zone": "europe-west3-b", "networkIP": "10.0.0.5",
   "labels": {"constellation-uid": "c0ffee", "constellation-role": "worker"},
   "metadata": {"constellation-init-secret-hash": "\$2a\$10\$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"}},
  {"name": "cp-1", "zone": "europe-west3-b", "networkIP": "10.0.0.3",
   "labels": {"constellation-uid": "c0ffee", "constellation-role": "control-plane"}},
  {"name": "x-0", "zone": "europe-west3-a", "networkIP": "10.1.0.2",
   "labels": {"constellation-uid": "other", "constellation-role": "control-plane"}}],
 "forwarding_rules": [
  {"name": "kube", "IPAddress": "34.107.1.2", "portRange": "6443-6443",
   "labels": {"constellation-uid": "c0ffee", "constellation-use": "kubernetes"}}],
 "throttle": {"instances.list": 1}$1}
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
"$agent" metadata --csp gcp --api http://169.254.169.254 >"$work/$name.out" 2>"$work/$name.err"
echo $? >"$work/$name.rc"
kill $f
wait 2>/dev/null
SH

state "" >"$work/ok.json"
unshare -n bash "$work/inside.sh" "$work" "$fake" "$agent" ok
t=gce_metadata_role_uid_peers_and_endpoint_from_the_compute_api
if [ "$(cat "$work/ok.rc")" = 0 ] &&
	grep -qx 'self w-0 worker 10.0.0.5 gce://constel-proj/europe-west3-b/w-0' "$work/ok.out" &&
	grep -qx 'uid c0ffee' "$work/ok.out" &&
	grep -qx 'peer cp-0 control-plane 10.0.0.2 gce://constel-proj/europe-west3-a/cp-0' "$work/ok.out" &&
	grep -qx 'peer cp-1 control-plane 10.0.0.3 gce://constel-proj/europe-west3-b/cp-1' "$work/ok.out" &&
	grep -qx 'peer w-0 worker 10.0.0.5 gce://constel-proj/europe-west3-b/w-0' "$work/ok.out" &&
	[ "$(grep -c '^peer ' "$work/ok.out")" = 3 ] &&
	grep -qx 'endpoint 34.107.1.2' "$work/ok.out" &&
	grep -q '^init-secret-hash \$2a\$10\$' "$work/ok.out" &&
	grep -q '"reason": "rateLimitExceeded"' "$work/ok.log" &&
	! grep -q '"auth": false' "$work/ok.log"; then
	pass $t
else
	fail $t "$(cat "$work/ok.out" "$work/ok.err" 2>/dev/null | tail -8)"
fi
t=gce_token_never_in_the_output_or_the_log_lines
if ! grep -q 'ya29\.' "$work/ok.out" "$work/ok.err"; then
	pass $t
else
	fail $t "a token was printed"
fi

state ', "deny": ["compute.instances.list"]' >"$work/deny.json"
unshare -n bash "$work/inside.sh" "$work" "$fake" "$agent" deny
t=gce_missing_permission_is_one_line_naming_the_call_and_the_permission
if [ "$(grep -c 'compute.instances.list' "$work/deny.err")" = 1 ] &&
	grep -q "gcp: instances.list: the service account lacks the IAM permission compute.instances.list" "$work/deny.err" &&
	[ "$(grep -c '"reason": "forbidden"' "$work/deny.log")" = 1 ] &&
	grep -qx 'uid c0ffee' "$work/deny.out" && ! grep -q '^peer ' "$work/deny.out"; then
	pass $t
else
	fail $t "$(cat "$work/deny.out" "$work/deny.err" 2>/dev/null | tail -8)"
fi

# the fake refuses as Google does (so that a client that sent no token would fail here)
state "" >"$work/refuse.json"
python3 "$fake" --state "$work/refuse.json" --log "$work/refuse.log" >"$work/refuse.port" 2>/dev/null &
fpid=$!
for _ in $(seq 100); do [ -s "$work/refuse.port" ] && break; sleep 0.1; done
p=$(cat "$work/refuse.port")
u=http://127.0.0.1:$p/compute/v1/projects/constel-proj/zones/europe-west3-a/instances/cp-0
noauth=$(curl -s -w ' %{http_code}' "$u")
badauth=$(curl -s -w ' %{http_code}' -H 'Authorization: Bearer ya29.forged' "$u")
nohdr=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/computeMetadata/v1/instance/service-accounts/default/token")
kill $fpid
wait $fpid 2>/dev/null
t=gce_fake_refuses_without_a_bearer_token_and_with_a_forged_one_in_googles_shape
case "$noauth|$badauth|$nohdr" in
*'"reason": "required"'*'"status": "UNAUTHENTICATED"'*' 401|'*'"reason": "authError"'*' 401|403') pass $t ;;
*) fail $t "$noauth | $badauth | $nohdr" ;;
esac
