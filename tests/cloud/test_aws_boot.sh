# The node's view of an AWS cluster as `constel-agent metadata --csp aws --json` computes it
# (agent/cloud/aws.c): IMDSv2 (tests/cloud/fake_cloud.py) gives the identity and the instance
# profile's credentials, the SigV4-signed EC2, Tagging and ELBv2 calls
# (tests/cloud/fake_aws_api.py, which checks every signature with botocore) give the role,
# UID, init-secret hash, the control planes and the load balancer. Everything on 127.0.0.1.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-awsboot-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
if ! python3 -c 'import botocore' 2>/dev/null; then
	echo "# python3-botocore missing: AWS API tests skipped"
	exit 0
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HASH='$2a$10$0123456789012345678901uMvcQ9mDmbXJMMvl8Lw3CHSWsWrANMO'
KEY=ASIAEXAMPLEKEYID0001
SECRET=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
TOKEN='IQoJb3JpZ2luX2VjEXAMPLETOKEN//////////wEaDGV1LWNlbnRyYWwtMSJGMEQ='

# state NAME JSON-EXTRA N_WORKERS: the fake's state: the node itself (a worker), two control
# planes, N more workers, one load balancer of the cluster and one of another
state() {
	python3 - "$work/$1.state" "$2" "$3" "$HASH" <<'PY'
import json, sys
path, extra, n, h = sys.argv[1], json.loads(sys.argv[2] or "{}"), int(sys.argv[3]), sys.argv[4]
def inst(i, ip, role, uid="c0ffee42", st="running"):
    return {"InstanceId": i, "PrivateIpAddress": ip, "AvailabilityZone": "eu-central-1b",
            "State": st, "Tags": {"constellation-role": role, "constellation-uid": uid,
                                  "constellation-init-secret-hash": h}}
ins = [inst("i-0123456789abcdef0", "10.9.0.2", "worker"),
       inst("i-00000000000000c01", "10.9.1.1", "control-plane"),
       inst("i-00000000000000c02", "10.9.1.2", "ControlPlane"),
       inst("i-00000000000000c03", "10.9.1.3", "control-plane", st="stopped"),
       inst("i-00000000000000d01", "10.9.9.9", "control-plane", uid="other")]
ins += [inst("i-%017x" % (0xe00 + k), "10.9.2.%d" % (k % 250 + 1), "worker") for k in range(n)]
s = {"region": "eu-central-1",
     "credentials": [{"AccessKeyId": "ASIAEXAMPLEKEYID0001",
                      "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                      "Token": "IQoJb3JpZ2luX2VjEXAMPLETOKEN//////////wEaDGV1LWNlbnRyYWwtMSJGMEQ="}],
     "instances": ins,
     "load_balancers": [
         {"LoadBalancerArn": "arn:aws:elasticloadbalancing:eu-central-1:012345678900:loadbalancer/net/constell-lb/0123456789abcdef",
          "LoadBalancerName": "constell-lb", "DNSName": "constell-lb-0123456789abcdef.elb.eu-central-1.amazonaws.com",
          "Tags": {"constellation-uid": "c0ffee42"}},
         {"LoadBalancerArn": "arn:aws:elasticloadbalancing:eu-central-1:012345678900:loadbalancer/net/other/fedcba9876543210",
          "LoadBalancerName": "other", "DNSName": "other.elb.eu-central-1.amazonaws.com",
          "Tags": {"constellation-uid": "other"}}]}
s.update(extra)
json.dump(s, open(path, "w"))
PY
}

# run NAME STATE-EXTRA N_WORKERS [IMDS --set ...]: both fakes, then the command; its stdout in
# NAME.out, stderr NAME.err, exit code NAME.rc, the fakes' logs NAME.imds.log, NAME.api.log
run() {
	local name=$1 extra=$2 n=$3 ip ap
	shift 3
	state "$name" "$extra" "$n"
	ip=$(free_port)
	python3 tests/cloud/fake_cloud.py --csp aws --listen "127.0.0.1:$ip" --log "$work/$name.imds.log" "$@" >"$work/$name.imds.ready" 2>&1 &
	pids+=($!)
	python3 tests/cloud/fake_aws_api.py --state "$work/$name.state" --log "$work/$name.api.log" >"$work/$name.port" 2>"$work/$name.api.err" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/$name.imds.ready" ] && [ -s "$work/$name.port" ] && break; sleep 0.1; done
	ap=$(head -1 "$work/$name.port")
	"$agent" metadata --csp aws --imds "http://127.0.0.1:$ip" --api "http://127.0.0.1:$ap" --json \
		>"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}

# ---- the happy path ----
run ok '' 2
t=aws_metadata_json_from_imdsv2_and_the_signed_apis
if [ "$(cat "$work/ok.rc")" = 0 ] && python3 - "$work" "$HASH" <<'PY'
import json, sys
w, h = sys.argv[1], sys.argv[2]
j = json.load(open(w + "/ok.out"))
assert j["self"] == {"name": "i-0123456789abcdef0", "providerID": "aws:///eu-central-1b/i-0123456789abcdef0",
                     "role": "Worker", "vpcIP": "10.9.0.2"}, j["self"]
assert [c["vpcIP"] for c in j["controlPlanes"]] == ["10.9.1.1", "10.9.1.2"], j["controlPlanes"]
assert all(c["role"] == "ControlPlane" for c in j["controlPlanes"])
lb = "constell-lb-0123456789abcdef.elb.eu-central-1.amazonaws.com"
assert j["endpoint"] == lb + ":6443", j["endpoint"]
assert j["joinEndpoints"] == [lb + ":30090", "10.9.1.1:30090", "10.9.1.2:30090"], j["joinEndpoints"]
assert j["uid"] == "c0ffee42" and j["initSecretHash"] == h, j
api = [json.loads(l) for l in open(w + "/ok.api.log")]
assert api and all(r["status"] == 200 for r in api), api
imds = [json.loads(l) for l in open(w + "/ok.imds.log")]
creds = [r for r in imds if "security-credentials/constel-node-role" in r["path"]]
assert len(creds) == 1, "credentials valid for 6 h are read once, not %d times" % len(creds)
assert all(r["headers"].get("x-aws-ec2-metadata-token") for r in imds if r["method"] == "GET")
err = open(w + "/ok.err").read()
for s in ("wJalrXUtnFEMI", "IQoJb3JpZ2lu"):
    assert s not in err, "a secret in the log"
PY
then pass $t; else fail $t "$(tail -3 "$work/ok.err") $(cat "$work/ok.out")"; fi

# ---- pagination: one instance a page ----
run pages '{"page_size": {"ec2": 5, "tagging": 1, "elb": 1}}' 12
t=aws_metadata_follows_every_page
if [ "$(cat "$work/pages.rc")" = 0 ] && python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
j = json.load(open(w + "/pages.out"))
assert [c["vpcIP"] for c in j["controlPlanes"]] == ["10.9.1.1", "10.9.1.2"], j
api = [json.loads(l) for l in open(w + "/pages.api.log")]
assert len([r for r in api if r.get("action") == "DescribeInstances"]) >= 4, len(api)
PY
then pass $t; else fail $t "$(tail -3 "$work/pages.err")"; fi

# ---- a page flood: more pages than AWS_MAX_PAGES (50) ----
run flood '{"page_size": {"ec2": 5}}' 300
t=aws_metadata_bounds_a_page_flood
if [ "$(cat "$work/flood.rc")" != 0 ] && grep -q 'DescribeInstances: more than 50 pages' "$work/flood.err"; then
	pass $t
else
	fail $t "rc $(cat "$work/flood.rc"): $(tail -2 "$work/flood.err")"
fi

# ---- credentials near their Expiration are read again before each use ----
run expiry '' 0 --set aws_expires=200
t=aws_credentials_read_again_before_they_expire
n=$(grep -c 'security-credentials/constel-node-role' "$work/expiry.imds.log")
if [ "$(cat "$work/expiry.rc")" = 0 ] && [ "$n" -ge 3 ]; then pass $t; else fail $t "rc $(cat "$work/expiry.rc"), read $n times: $(tail -2 "$work/expiry.err")"; fi

# ---- a permission the instance profile lacks: one line naming call and permission ----
run denied '{"deny": ["elasticloadbalancing:DescribeLoadBalancers"]}' 0
t=aws_missing_permission_is_one_line_naming_it
if [ "$(cat "$work/denied.rc")" != 0 ] && grep -q 'DescribeLoadBalancers.*elasticloadbalancing:DescribeLoadBalancers' "$work/denied.err" &&
	grep -q '"endpoint":null' "$work/denied.out" && grep -q '"uid":"c0ffee42"' "$work/denied.out"; then
	pass $t
else
	fail $t "rc $(cat "$work/denied.rc"): $(cat "$work/denied.err" | tail -3)"
fi

# ---- throttling is retried ----
run throttled '{"throttle": {"ec2:DescribeInstances": 2, "tag:GetResources": 1}}' 0
t=aws_throttling_is_retried
if [ "$(cat "$work/throttled.rc")" = 0 ] && grep -q '"code": "RequestLimitExceeded"' "$work/throttled.api.log" &&
	grep -q '"uid":"c0ffee42"' "$work/throttled.out"; then
	pass $t
else
	fail $t "rc $(cat "$work/throttled.rc"): $(tail -3 "$work/throttled.err")"
fi

# ---- IMDS without an instance profile: one line ----
run norole '' 0 --set aws_role=
t=aws_no_instance_profile_is_one_line
if [ "$(cat "$work/norole.rc")" != 0 ] && grep -q 'aws: IMDS /latest/meta-data/iam/security-credentials/ does not name an IAM role' "$work/norole.err"; then
	pass $t
else
	fail $t "rc $(cat "$work/norole.rc"): $(tail -3 "$work/norole.err")"
fi
