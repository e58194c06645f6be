# The node's identity from each cloud's node-local endpoint and Azure's provisioning report,
# against tests/cloud/fake_cloud.py at 169.254.169.254 and 168.63.129.16 inside a network
# namespace this test makes (its loopback holds both addresses; nothing leaves it). The fakes
# refuse what the real endpoints refuse: each refusal is checked too, so that a fake that
# let everything through fails here.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
fake=$PWD/tests/cloud/fake_cloud.py
work=$(mktemp -d /tmp/constel-cloudns-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
	echo "# not root or no namespaces: cloud endpoint tests skipped"
	exit 0
fi

# inside the namespace: the fake of $csp, then the commands of the test ($3...)
cat >"$work/inside.sh" <<'SH'
set -u
work=$1 fake=$2 csp=$3
shift 3
ip link set lo up
ip addr add 169.254.169.254/32 dev lo && ip addr add 168.63.129.16/32 dev lo || exit 3
python3 "$fake" --csp "$csp" --log "$work/$csp.log" --set incarnation=13 ${FAKE_ARGS:-} >"$work/$csp.ready" 2>"$work/$csp.fake.err" &
f=$!
for _ in $(seq 100); do [ -s "$work/$csp.ready" ] && break; sleep 0.1; done
"$@"
rc=$?
kill $f
wait 2>/dev/null
exit $rc
SH
inns() { unshare -n bash "$work/inside.sh" "$work" "$fake" "$@"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# ---- GCP ----
cat >"$work/gcp.sh" <<SH
"$agent" metadata --csp gcp >"$work/gcp.out" 2>"$work/gcp.err"; echo \$? >"$work/gcp.rc"
$(declare -f code)
code http://169.254.169.254/computeMetadata/v1/instance/name >"$work/gcp.nohdr"
code -H 'Metadata-Flavor: Google' -H 'X-Forwarded-For: 1.2.3.4' http://169.254.169.254/computeMetadata/v1/instance/name >"$work/gcp.xff"
SH
inns gcp bash "$work/gcp.sh"
t=gcp_identity_from_the_metadata_server_with_its_header
if [ "$(cat "$work/gcp.rc" 2>/dev/null)" = 0 ] &&
	grep -qx 'self constel-worker-0 unknown 10.9.0.2 gce://constel-test/europe-west3-b/constel-worker-0' "$work/gcp.out" &&
	grep -q '^init-secret-hash \$2a\$10\$' "$work/gcp.out" &&
	grep -qx "uid (failed)" "$work/gcp.out" && grep -q "service account's token" "$work/gcp.err" &&
	grep -q '"user-agent": "constel-agent"' "$work/gcp.log" &&
	! grep '"user-agent": "constel-agent"' "$work/gcp.log" | grep -vq '"metadata-flavor": "Google"'; then
	pass $t
else
	fail $t "$(cat "$work/gcp.out" "$work/gcp.err" 2>/dev/null | tail -5)"
fi
t=gcp_fake_refuses_without_metadata_flavor_and_with_x_forwarded_for
[ "$(cat "$work/gcp.nohdr")" = 403 ] && [ "$(cat "$work/gcp.xff")" = 403 ] && pass $t ||
	fail $t "$(cat "$work/gcp.nohdr") $(cat "$work/gcp.xff")"

# ---- Azure ----
# ARM's fake beside IMDS (whose token it checks), on the namespace's loopback
cat >"$work/arm.state" <<'JSON'
{"subscription": "8d10da13-8125-4ba9-a717-bf7490507b3d", "resource_group": "constel-rg",
 "scale_sets": [{"name": "constel-scale-set-control-plane", "tags": {"constellation-uid": "c0ffee42", "constellation-role": "control-plane"},
                 "vms": [{"instanceId": "0", "computerName": "constel-control-plane-0", "ip": "10.9.1.1"}]}],
 "load_balancers": [{"name": "constel-lb", "tags": {"constellation-uid": "c0ffee42"}, "frontends": [{"publicIP": "constel-lb-ip"}]}],
 "public_ips": {"constel-lb-ip": "20.1.2.3"}}
JSON
cat >"$work/azure.sh" <<SH
"$agent" metadata --csp azure >"$work/azure.out" 2>"$work/azure.err"; echo \$? >"$work/azure.rc"
python3 "$PWD/tests/cloud/fake_azure_api.py" --state "$work/arm.state" >"$work/arm.port" 2>/dev/null &
for _ in \$(seq 100); do [ -s "$work/arm.port" ] && break; sleep 0.1; done
"$agent" metadata --csp azure --api http://127.0.0.1:\$(cat "$work/arm.port") --json >"$work/arm.out" 2>"$work/arm.err"; echo \$? >"$work/arm.rc"
kill %1
"$agent" azure-ready --wireserver http://168.63.129.16 2>"$work/ready.err"; echo \$? >"$work/ready.rc"
"$agent" azure-ready --wireserver http://168.63.129.16 --not-ready 'disk: no state disk <after 60 s> & no LUN 0' 2>"$work/notready.err"; echo \$? >"$work/notready.rc"
$(declare -f code)
code 'http://169.254.169.254/metadata/instance?api-version=2021-02-01&format=json' >"$work/imds.nohdr"
code -H 'Metadata: true' 'http://169.254.169.254/metadata/instance' >"$work/imds.noversion"
code 'http://168.63.129.16/machine/?comp=goalstate' >"$work/wire.nohdr"
code -H 'x-ms-version: 2012-11-30' -H 'Content-Type: text/xml' --data '<Health><GoalStateIncarnation>1</GoalStateIncarnation></Health>' 'http://168.63.129.16/machine?comp=health' >"$work/wire.badhealth"
SH
inns azure bash "$work/azure.sh"
t=azure_identity_uid_and_hash_from_imds_with_its_header
if [ "$(cat "$work/azure.rc" 2>/dev/null)" = 0 ] &&
	grep -qx 'self constel-worker-0 worker 10.9.0.2 azure:///subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/constel-rg/providers/Microsoft.Compute/virtualMachineScaleSets/constel-scale-set-worker/virtualMachines/0' "$work/azure.out" &&
	grep -qx 'uid c0ffee42' "$work/azure.out" && grep -q '^init-secret-hash \$2a\$10\$' "$work/azure.out"; then
	pass $t
else
	fail $t "$(cat "$work/azure.out" "$work/azure.err" 2>/dev/null | tail -5)"
fi
t=azure_arm_with_the_token_of_imds_at_169_254_169_254
if [ "$(cat "$work/arm.rc" 2>/dev/null)" = 0 ] &&
	grep -q '"joinEndpoints":\["20.1.2.3:30090","10.9.1.1:30090"\]' "$work/arm.out" &&
	grep -q '/metadata/identity/oauth2/token?api-version=2018-02-01' "$work/azure.log"; then
	pass $t
else
	fail $t "$(cat "$work/arm.out" "$work/arm.err" 2>/dev/null | tail -5)"
fi
t=azure_ready_carries_the_goal_states_incarnation_and_ids
if [ "$(cat "$work/ready.rc")" = 0 ] && python3 - "$work/azure.log" <<'PY'
import json, sys
h = [json.loads(l) for l in open(sys.argv[1])]
gs = [r for r in h if "comp=goalstate" in r["path"] and r["status"] == 200]
rep = [r["health"] for r in h if r.get("health")]
assert gs and all(r["headers"].get("x-ms-version") == "2012-11-30" for r in gs)
assert rep[0] == {"incarnation": "13", "container": "a511aa6d-29e7-4f53-8788-55655dfe848f",
                  "instance": "f6cd1d7ef1644557b9059345e5ba890c._constel-worker-0",
                  "state": "Ready", "substatus": None, "description": None}, rep
PY
then pass $t; else fail $t "$(tail -3 "$work/ready.err")"; fi
t=azure_not_ready_says_provisioning_failed_and_the_reason
if [ "$(cat "$work/notready.rc")" = 0 ] && python3 - "$work/azure.log" <<'PY'
import json, sys
rep = [json.loads(l)["health"] for l in open(sys.argv[1])]
rep = [r for r in rep if r]
assert rep[-1]["state"] == "NotReady" and rep[-1]["substatus"] == "ProvisioningFailed", rep
assert rep[-1]["description"] == "disk: no state disk <after 60 s> & no LUN 0", rep
PY
then pass $t; else fail $t "$(tail -3 "$work/notready.err")"; fi
t=azure_fakes_refuse_what_imds_and_the_wireserver_refuse
if [ "$(cat "$work/imds.nohdr")" = 400 ] && [ "$(cat "$work/imds.noversion")" = 400 ] &&
	[ "$(cat "$work/wire.nohdr")" = 400 ] && [ "$(cat "$work/wire.badhealth")" = 400 ]; then
	pass $t
else
	fail $t "imds $(cat "$work/imds.nohdr") $(cat "$work/imds.noversion") wire $(cat "$work/wire.nohdr") $(cat "$work/wire.badhealth")"
fi

# ---- AWS ----
# the role is an EC2 tag: the SigV4-signed API's fake beside IMDS, on the namespace's loopback
cat >"$work/aws.state" <<'JSON'
{"region": "eu-central-1",
 "credentials": [{"AccessKeyId": "ASIAEXAMPLEKEYID0001", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                  "Token": "IQoJb3JpZ2luX2VjEXAMPLETOKEN//////////wEaDGV1LWNlbnRyYWwtMSJGMEQ="}],
 "instances": [{"InstanceId": "i-0123456789abcdef0", "PrivateIpAddress": "10.9.0.2", "AvailabilityZone": "eu-central-1b",
                "State": "running", "Tags": {"constellation-role": "worker", "constellation-uid": "c0ffee42",
                "constellation-init-secret-hash": "$2a$10$0123456789012345678901uMvcQ9mDmbXJMMvl8Lw3CHSWsWrANMO"}}],
 "load_balancers": []}
JSON
cat >"$work/aws.sh" <<SH
python3 "$PWD/tests/cloud/fake_aws_api.py" --state "$work/aws.state" >"$work/aws.port" 2>/dev/null &
for _ in \$(seq 100); do [ -s "$work/aws.port" ] && break; sleep 0.1; done
"$agent" metadata --csp aws --api http://127.0.0.1:\$(cat "$work/aws.port") >"$work/aws.out" 2>"$work/aws.err"; echo \$? >"$work/aws.rc"
kill %1
$(declare -f code)
u=http://169.254.169.254/latest/dynamic/instance-identity/document
code \$u >"$work/aws.notoken"
tok=\$(curl -s -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 1' http://169.254.169.254/latest/api/token)
code -H "X-aws-ec2-metadata-token: \$tok" \$u >"$work/aws.fresh"
sleep 2.2
code -H "X-aws-ec2-metadata-token: \$tok" \$u >"$work/aws.expired"
code -X PUT http://169.254.169.254/latest/api/token >"$work/aws.nottl"
SH
inns aws bash "$work/aws.sh"
t=aws_identity_from_imdsv2_token_first
if [ "$(cat "$work/aws.rc" 2>/dev/null)" = 0 ] &&
	grep -qx 'self i-0123456789abcdef0 worker 10.9.0.2 aws:///eu-central-1b/i-0123456789abcdef0' "$work/aws.out" &&
	grep -qx 'uid c0ffee42' "$work/aws.out" &&
	python3 - "$work/aws.log" <<'PY'
import json, sys
h = [json.loads(l) for l in open(sys.argv[1])]
assert h[0]["method"] == "PUT" and h[0]["path"] == "/latest/api/token", h[0]
assert h[0]["headers"]["x-aws-ec2-metadata-token-ttl-seconds"] == "60"
assert h[1]["status"] == 200 and h[1]["headers"]["x-aws-ec2-metadata-token"], h[1]
PY
then pass $t; else fail $t "$(cat "$work/aws.out" "$work/aws.err" 2>/dev/null | tail -5)"; fi
t=aws_fake_honours_the_token_and_its_ttl
if [ "$(cat "$work/aws.notoken")" = 401 ] && [ "$(cat "$work/aws.fresh")" = 200 ] &&
	[ "$(cat "$work/aws.expired")" = 401 ] && [ "$(cat "$work/aws.nottl")" = 400 ]; then
	pass $t
else
	fail $t "no token $(cat "$work/aws.notoken"), fresh $(cat "$work/aws.fresh"), expired $(cat "$work/aws.expired"), no ttl $(cat "$work/aws.nottl")"
fi

# ---- OpenStack ----
cat >"$work/openstack.sh" <<SH
"$agent" metadata --csp stackit >"$work/os.out" 2>"$work/os.err"; echo \$? >"$work/os.rc"
SH
inns openstack bash "$work/openstack.sh"
t=openstack_identity_uid_and_hash_from_meta_data_json
if [ "$(cat "$work/os.rc" 2>/dev/null)" = 0 ] &&
	grep -qx 'self constel-worker-0 worker 10.9.0.2 b0fa911b-69d4-4476-bbe2-1c92bff6535c' "$work/os.out" &&
	grep -qx 'uid c0ffee42' "$work/os.out"; then
	pass $t
else
	fail $t "$(cat "$work/os.out" "$work/os.err" 2>/dev/null | tail -5)"
fi

# ---- the client's retries: an endpoint answering 503 twice, then one that stays busy ----
cat >"$work/busy.sh" <<SH
"$agent" metadata --csp gcp >"$work/busy.out" 2>"$work/busy.err"; echo \$? >"$work/busy.rc"
SH
rm -f "$work/gcp.log"
FAKE_ARGS="--busy 2" inns gcp bash "$work/busy.sh"
t=endpoint_calls_retry_a_busy_endpoint
if [ "$(cat "$work/busy.rc")" = 0 ] && [ "$(grep -c '"status": 503' "$work/gcp.log")" = 2 ] &&
	grep -q '^self constel-worker-0 ' "$work/busy.out"; then
	pass $t
else
	fail $t "$(tail -2 "$work/busy.err")"
fi
rm -f "$work/gcp.log"
FAKE_ARGS="--busy 1000" inns gcp bash "$work/busy.sh"
t=endpoint_calls_give_up_after_5_tries_in_one_line
if [ "$(cat "$work/busy.rc")" = 1 ] && [ "$(grep -c '"status": 503' "$work/gcp.log")" = 5 ] &&
	[ "$(grep -c 'error:' "$work/busy.err")" = 1 ] && grep -q 'instance/name: HTTP 503' "$work/busy.err"; then
	pass $t
else
	fail $t "$(grep -c '"status": 503' "$work/gcp.log") tries: $(tail -2 "$work/busy.err")"
fi
