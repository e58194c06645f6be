# The vTPM variants' documents from the shipped agent (swtpm; the clouds' metadata servers faked
# by tests/cloud/fake_cloud.py on 127.0.0.1) checked with Go: the whole document byte-identical
# to Go's encoding/json and its quotes verified with the nonce that includes InstanceInfo
# (atlspeer verify-qemu, the vTPM core), and InstanceInfo itself Go's encoding of the struct
# Constellation's issuer marshals (atlspeer verify-ii): aws-sdk-go-v2's
# imds.InstanceIdentityDocument made from the very IMDS body, go-tpm-tools' GCEInstanceInfo.
# gcp-sev-es's AK comes from the template written with tpm2-tools into NV 0x01c10001.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
peer=$(tests/interop/build-atlspeer.sh) || { fail interop_vtpm_variants "atlspeer did not build"; exit 0; }
work=$(mktemp -d /tmp/constel-vtpmvar-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

swtpm_boot "$work" || { fail interop_vtpm_variants "swtpm did not start"; exit 0; }
nonce=$(printf '6b%.0s' $(seq 32))
ud=$(printf 'd4%.0s' $(seq 32))
zero=$(printf '00%.0s' $(seq 32))

# fake CSP: a fake_cloud.py on a free port of 127.0.0.1; its URL in $meta
fake() {
	local port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	python3 tests/cloud/fake_cloud.py --csp "$1" --listen "127.0.0.1:$port" >"$work/fake-$1.out" 2>&1 &
	for _ in $(seq 100); do
		grep -q ready "$work/fake-$1.out" 2>/dev/null && { meta="http://127.0.0.1:$port"; return 0; }
		sleep 0.1
	done
	return 1
}

t=interop_go_accepts_our_aws_nitro_tpm_document_and_instance_info
if fake aws &&
	"$agent" --tpm "$tpm" attest --attestation aws-nitro-tpm --imds "$meta" --nonce "$nonce" \
		--user-data "$ud" >"$work/aws.json" 2>"$work/aws.log" &&
	python3 - "$meta" >"$work/imds.json" <<'PY' &&
import sys, urllib.request
m = sys.argv[1]
tok = urllib.request.urlopen(urllib.request.Request(m + "/latest/api/token", method="PUT",
      headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"})).read().decode()
print(urllib.request.urlopen(urllib.request.Request(m + "/latest/dynamic/instance-identity/document",
      headers={"X-aws-ec2-metadata-token": tok})).read().decode())
PY
	out=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/aws.json") &&
	[ "$out" = "OK user_data=$ud pcr15=$zero" ] &&
	out=$("$peer" verify-ii --variant aws-nitro-tpm --doc "$work/aws.json" --source "$work/imds.json"); then
	pass $t
else
	fail $t "$(tail -1 "$work/aws.log") / $out"
fi

t=interop_go_accepts_our_gcp_sev_es_document_and_instance_info
# go-tpm-tools' AKTemplateRSA as a TPMT_PUBLIC: RSA, SHA-256, sign|restricted|userWithAuth|
# sensitiveDataOrigin|fixedParent|fixedTPM, no policy, no symmetric, RSASSA-SHA256, 2048, e 0
printf '0001000b00050072000000100014000b0800000000000000' | xxd -r -p >"$work/tmpl"
if [ "$(stat -c %s "$work/tmpl")" = 24 ] &&
	tpm2_nvdefine -T "$tpm" -C o -s 24 -a "ownerread|ownerwrite|authread|authwrite" 0x01c10001 >/dev/null 2>&1 &&
	tpm2_nvwrite -T "$tpm" -C o -i "$work/tmpl" 0x01c10001 >/dev/null 2>&1 &&
	fake gcp &&
	"$agent" --tpm "$tpm" attest --attestation gcp-sev-es --imds "$meta" --nonce "$nonce" \
		--user-data "$ud" >"$work/gcp.json" 2>"$work/gcp.log" &&
	out=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/gcp.json") &&
	[ "$out" = "OK user_data=$ud pcr15=$zero" ] &&
	out=$("$peer" verify-ii --variant gcp-sev-es --doc "$work/gcp.json") &&
	[ "$out" = 'OK {"zone":"europe-west3-b","project_id":"constel-test","instance_name":"constel-worker-0"}' ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/gcp.log") / $out"
fi

t=interop_go_refuses_our_gcp_document_with_instance_info_changed
if [ -s "$work/gcp.json" ] &&
	python3 - "$work/gcp.json" >"$work/gcp-bad.json" <<'PY' &&
import base64, json, sys
raw = open(sys.argv[1]).read().strip()
d = json.loads(raw)
ii = base64.b64decode(d["InstanceInfo"]).replace(b"constel-worker-0", b"constel-worker-1")
print(raw.replace(d["InstanceInfo"], base64.b64encode(ii).decode()))
PY
	out=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/gcp-bad.json"); [ $? = 1 ] &&
	grep -q "quote nonce mismatch" <<<"$out"; then
	pass $t
else
	fail $t "$out"
fi
