# The node's view of an Azure cluster as `constel-agent metadata --csp azure --json` computes it
# (agent/cloud/azure.c, azure_arm.c): IMDS (tests/cloud/fake_cloud.py) gives the identity, the
# UID, the hash and the managed identity's token; ARM (tests/cloud/fake_azure_api.py, over
# https with a CA this test makes) gives the scale sets, their VMs and NICs, the load balancer
# and its public IP. Everything on 127.0.0.1.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-azapi-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# a CA and a certificate for 127.0.0.1 from it; another CA the server's chain is not from
python3 - "$work" <<'PY' || { echo "FAIL azure_api_pki: no python3-cryptography"; exit 0; }
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
d = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc); day = datetime.timedelta(days=1)
def n(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
def pem(c): return c.public_bytes(serialization.Encoding.PEM)
def ca(cn, k):
    return (x509.CertificateBuilder().subject_name(n(cn)).issuer_name(n(cn)).public_key(k.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - day).not_valid_after(now + day)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(k, hashes.SHA256()))
k1 = ec.generate_private_key(ec.SECP256R1()); c1 = ca("arm test CA", k1)
k2 = ec.generate_private_key(ec.SECP256R1()); c2 = ca("other CA", k2)
lk = ec.generate_private_key(ec.SECP256R1())
leaf = (x509.CertificateBuilder().subject_name(n("127.0.0.1")).issuer_name(c1.subject).public_key(lk.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - day).not_valid_after(now + day)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(k1, hashes.SHA256()))
open(d + "/ca.pem", "wb").write(pem(c1))
open(d + "/other-ca.pem", "wb").write(pem(c2))
open(d + "/server.pem", "wb").write(pem(leaf) + lk.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY

SUB=8d10da13-8125-4ba9-a717-bf7490507b3d
# state NAME EXTRA-JSON N-WORKERS: the cluster c0ffee42 (the node is worker 0 of
# constel-scale-set-worker), two control planes, a scale set of another cluster
state() {
	python3 - "$work/$1.state" "$2" "$3" "$SUB" <<'PY'
import json, sys
path, extra, n, sub = sys.argv[1], json.loads(sys.argv[2] or "{}"), int(sys.argv[3]), sys.argv[4]
s = {"subscription": sub, "resource_group": "constel-rg",
     "scale_sets": [
         {"name": "constel-scale-set-control-plane",
          "tags": {"constellation-uid": "c0ffee42", "constellation-role": "control-plane"},
          "vms": [{"instanceId": "0", "computerName": "constel-control-plane-0", "ip": "10.9.1.1"},
                  {"instanceId": "3", "computerName": "constel-control-plane-3", "ip": "10.9.1.2"}]},
         {"name": "constel-scale-set-worker",
          "tags": {"constellation-uid": "c0ffee42", "constellation-role": "worker"},
          "vms": [{"instanceId": str(k), "computerName": "constel-worker-%d" % k, "ip": "10.9.0.%d" % (k + 2)}
                  for k in range(n + 1)]},
         {"name": "other-control-plane", "tags": {"constellation-uid": "other", "constellation-role": "control-plane"},
          "vms": [{"instanceId": "0", "computerName": "other-0", "ip": "10.99.0.1"}]}],
     "load_balancers": [
         {"name": "other-lb", "tags": {"constellation-uid": "other"}, "frontends": [{"publicIP": "other-ip"}]},
         {"name": "constel-lb", "tags": {"constellation-uid": "c0ffee42"},
          "frontends": [{"publicIP": "constel-lb-ip", "privateIP": None}]}],
     "public_ips": {"constel-lb-ip": "20.1.2.3", "other-ip": "20.9.9.9"}}
s.update(extra)
json.dump(s, open(path, "w"))
PY
}

# run NAME EXTRA N-WORKERS [AGENT-ARGS... --] [IMDS --set ...]
run() {
	local name=$1 extra=$2 n=$3 ip ap args=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	state "$name" "$extra" "$n"
	ip=$(free_port)
	python3 tests/cloud/fake_cloud.py --csp azure --listen "127.0.0.1:$ip" --log "$work/$name.imds.log" "$@" >"$work/$name.imds.ready" 2>&1 &
	pids+=($!)
	python3 tests/cloud/fake_azure_api.py --state "$work/$name.state" --tls "$work/server.pem" --log "$work/$name.api.log" >"$work/$name.port" 2>"$work/$name.api.err" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/$name.imds.ready" ] && [ -s "$work/$name.port" ] && break; sleep 0.1; done
	ap=$(head -1 "$work/$name.port")
	echo "https://127.0.0.1:$ap" >"$work/$name.url"
	"$agent" metadata --csp azure --imds "http://127.0.0.1:$ip" --api "https://127.0.0.1:$ap" \
		--ca-bundle "$work/ca.pem" --json "${args[@]}" >"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}
rc() { cat "$work/$1.rc"; }
calls() { grep -c "\"route\": \"$2\"" "$work/$1.api.log"; }

# ---- the happy path ----
run ok '' 1
t=azure_metadata_json_from_imds_and_arm_over_https
if [ "$(rc ok)" = 0 ] && python3 - "$work" "$SUB" <<'PY'
import json, sys
w, sub = sys.argv[1], sys.argv[2]
j = json.load(open(w + "/ok.out"))
pid = "azure:///subscriptions/%s/resourceGroups/constel-rg/providers/Microsoft.Compute/virtualMachineScaleSets/" % sub
assert j["self"] == {"name": "constel-worker-0", "providerID": pid + "constel-scale-set-worker/virtualMachines/0",
                     "role": "Worker", "vpcIP": "10.9.0.2"}, j["self"]
assert j["controlPlanes"] == [
    {"name": "constel-control-plane-0", "providerID": pid + "constel-scale-set-control-plane/virtualMachines/0",
     "role": "ControlPlane", "vpcIP": "10.9.1.1"},
    {"name": "constel-control-plane-3", "providerID": pid + "constel-scale-set-control-plane/virtualMachines/3",
     "role": "ControlPlane", "vpcIP": "10.9.1.2"}], j["controlPlanes"]
assert j["endpoint"] == "20.1.2.3:6443", j["endpoint"]
assert j["joinEndpoints"] == ["20.1.2.3:30090", "10.9.1.1:30090", "10.9.1.2:30090"], j["joinEndpoints"]
assert j["uid"] == "c0ffee42" and j["initSecretHash"].startswith("$2a$10$"), j
api = [json.loads(l) for l in open(w + "/ok.api.log")]
assert api and all(r["status"] == 200 and r["auth"] for r in api), api
nics = [r for r in api if r["route"] == "nic"]
assert len(nics) == 5 and all("api-version=2018-10-01" in r["path"] for r in nics), nics
vm = [r for r in api if r["route"] == "vm"]
assert len(vm) == 1 and vm[0]["path"].endswith("/constel-scale-set-worker/virtualMachines/0?api-version=2023-03-01"), vm
imds = [json.loads(l) for l in open(w + "/ok.imds.log")]
tok = [r for r in imds if r["path"].startswith("/metadata/identity/oauth2/token")]
assert len(tok) == 1, "a token valid for a day is fetched once, not %d times" % len(tok)
assert all(r["headers"].get("metadata") == "true" for r in tok)
assert "fake." not in open(w + "/ok.err").read(), "the token in the log"
PY
then pass $t; else fail $t "$(tail -3 "$work/ok.err") $(cat "$work/ok.out")"; fi

# ---- Self as Constellation takes it: IMDS's provider ID, the rest from ARM's scale-set VM ----
# (IMDS names the node otherwise here: its compute.name, role tag and IP must not be used)
run armself '' 1 -- --set name=imds-name --set ip=10.77.7.7 --set role=control-plane
t=azure_self_name_role_and_ip_from_the_scale_set_vm_in_arm
if [ "$(rc armself)" = 0 ] && grep -q '"self":{"name":"constel-worker-0","providerID":"azure:///subscriptions/[^"]*/constel-scale-set-worker/virtualMachines/0","role":"Worker","vpcIP":"10.9.0.2"}' "$work/armself.out" &&
	grep -q 'azure: constel-worker-0: role worker, IP 10.9.0.2 from ARM' "$work/armself.err"; then
	pass $t
else
	fail $t "rc $(rc armself): $(grep -o '"self":{[^}]*}' "$work/armself.out") $(tail -2 "$work/armself.err")"
fi
# ARM denies reading the VM: one line naming the permission, IMDS's self stands in
run armdeny '{"deny": ["Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read"]}' 1 -- --set name=imds-name
t=azure_self_falls_back_to_imds_when_arm_denies_the_vm
if grep -q '"self":{"name":"imds-name"' "$work/armdeny.out" &&
	grep -q 'get VM 0 of scale set constel-scale-set-worker: the managed identity lacks the permission Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read (AuthorizationFailed)' "$work/armdeny.err"; then
	pass $t
else
	fail $t "rc $(rc armdeny): $(grep -o '"self":{[^}]*}' "$work/armdeny.out") $(tail -2 "$work/armdeny.err")"
fi

# ---- a chain from another CA is refused ----
run otherca '' 0 --ca-bundle "$work/other-ca.pem" --
t=azure_arm_refuses_a_chain_from_another_ca
if [ "$(rc otherca)" != 0 ] && grep -q '"controlPlanes":null' "$work/otherca.out" &&
	! grep -q '"route"' "$work/otherca.api.log" 2>/dev/null; then
	pass $t
else
	fail $t "rc $(rc otherca): $(tail -2 "$work/otherca.err")"
fi

# ---- pagination: one item a page ----
run pages '{"page_size": {"vmss": 1, "vms": 1, "lbs": 1}}' 3
t=azure_arm_follows_next_link_to_the_end
if [ "$(rc pages)" = 0 ] && grep -q '"controlPlanes":\[{"name":"constel-control-plane-0".*"constel-control-plane-3"' "$work/pages.out" &&
	grep -q '"endpoint":"20.1.2.3:6443"' "$work/pages.out" && [ "$(calls pages vms)" -ge 6 ] &&
	grep -q 'skiptoken' "$work/pages.api.log"; then
	pass $t
else
	fail $t "rc $(rc pages): $(tail -2 "$work/pages.err")"
fi

# ---- a page flood: nextLink forever ----
run flood '{"endless": "vmss"}' 0
t=azure_arm_bounds_a_page_flood
if [ "$(rc flood)" != 0 ] && grep -q 'azure: list scale sets: more than 50 pages' "$work/flood.err" &&
	[ "$(calls flood vmss)" -le 50 ]; then
	pass $t
else
	fail $t "rc $(rc flood), $(calls flood vmss) calls: $(tail -2 "$work/flood.err")"
fi

# ---- a token near expires_on is fetched again before each call ----
run expiry '' 0 -- --set azure_token_ttl=200
t=azure_token_fetched_again_before_it_expires
n=$(grep -c '/metadata/identity/oauth2/token' "$work/expiry.imds.log")
if [ "$(rc expiry)" = 0 ] && [ "$n" -ge 4 ]; then pass $t; else fail $t "rc $(rc expiry), $n tokens: $(tail -2 "$work/expiry.err")"; fi

# ---- a token ARM refuses (401) is replaced once ----
run revoked '{"revoke": 1}' 0
t=azure_401_fetches_a_new_token_once
n=$(grep -c '/metadata/identity/oauth2/token' "$work/revoked.imds.log")
if [ "$(rc revoked)" = 0 ] && [ "$n" = 2 ] && grep -q 'ExpiredAuthenticationToken' "$work/revoked.api.log"; then
	pass $t
else
	fail $t "rc $(rc revoked), $n tokens: $(tail -2 "$work/revoked.err")"
fi

# ---- a permission the managed identity lacks: one line naming call and permission ----
run denied '{"deny": ["Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read"]}' 0
t=azure_403_is_one_line_naming_the_permission
if [ "$(rc denied)" != 0 ] &&
	grep -q 'azure: list the VMs of scale set constel-scale-set-control-plane: the managed identity lacks the permission Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read (AuthorizationFailed)' "$work/denied.err" &&
	grep -q '"endpoint":"20.1.2.3:6443"' "$work/denied.out"; then
	pass $t
else
	fail $t "rc $(rc denied): $(tail -3 "$work/denied.err")"
fi

# ---- 429 with Retry-After is retried ----
run throttled '{"throttle": {"vms": 2, "pip": 1}}' 0
t=azure_429_retried_after_retry_after
if [ "$(rc throttled)" = 0 ] && grep -q '"code": "TooManyRequests"' "$work/throttled.api.log" &&
	grep -q '"endpoint":"20.1.2.3:6443"' "$work/throttled.out" && grep -q '"vpcIP":"10.9.1.2"' "$work/throttled.out"; then
	pass $t
else
	fail $t "rc $(rc throttled): $(tail -3 "$work/throttled.err")"
fi

# ---- no public IP: the frontend's private IP ----
run private '{"load_balancers": [{"name": "constel-lb", "tags": {"constellation-uid": "c0ffee42"}, "frontends": [{"privateIP": "10.9.255.254"}]}]}' 0
t=azure_internal_lb_uses_the_frontend_private_ip
if [ "$(rc private)" = 0 ] && grep -q '"endpoint":"10.9.255.254:6443"' "$work/private.out"; then pass $t; else fail $t "rc $(rc private): $(tail -2 "$work/private.err")"; fi

# ---- the fake refuses what ARM refuses ----
t=azure_fake_refuses_like_arm
u=$(cat "$work/ok.url")
P=/subscriptions/$SUB/resourceGroups/constel-rg/providers/Microsoft.Network/loadBalancers
c1=$(curl -s --cacert "$work/ca.pem" "$u$P?api-version=2023-04-01")
c2=$(curl -s --cacert "$work/ca.pem" -H 'Authorization: Bearer fake.1.x' "$u$P")
c3=$(curl -s --cacert "$work/ca.pem" -H "Authorization: Bearer fake.1.$(python3 -c 'import hmac,hashlib;print(hmac.new(b"fake-arm-key",b"1",hashlib.sha256).hexdigest())')" "$u$P?api-version=2023-04-01")
c4=$(curl -s --cacert "$work/ca.pem" -H "Authorization: Bearer fake.9999999999.$(python3 -c 'import hmac,hashlib;print(hmac.new(b"fake-arm-key",b"9999999999",hashlib.sha256).hexdigest())')" "$u$P?api-version=2099-01-01")
if echo "$c1" | grep -q '"code": "AuthenticationFailed"' && echo "$c2" | grep -q MissingApiVersionParameter &&
	echo "$c3" | grep -q ExpiredAuthenticationToken && echo "$c4" | grep -q InvalidApiVersionParameter; then
	pass $t
else
	fail $t "$c1 | $c2 | $c3 | $c4"
fi
