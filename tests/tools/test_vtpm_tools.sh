# The host tools' shared attestation options (tools/tool.h TOOL_ATTEST_OPTS): every tool's
# --help lists the vTPM variants, an unknown variant is a usage error naming them, and
# constel-verify checks an aws-nitro-tpm document of the shipped agent (swtpm, IMDSv2 faked by
# tests/cloud/fake_cloud.py) with --attestation, --api (EC2 faked by tests/cloud/fake_aws_api.py)
# and a measurements file in the attestationConfig form, and refuses it for an image without TPM
# support.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
tools=$PWD/$BUILD/tools
work=$(mktemp -d /tmp/constel-vtpmtools-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

t=tools_help_lists_the_vtpm_variants
ok=1
for tool in constel-verify constel-recover constel-joinservice constel-init; do
	h=$("$tools/$tool" --help 2>&1)
	for v in aws-nitro-tpm gcp-sev-es qemu-vtpm; do
		grep -q -- "$v" <<<"$h" || { ok=0; echo "$tool: $v"; }
	done
done
[ $ok = 1 ] && pass $t || fail $t "a tool's --help does not list the variants"

t=tools_unknown_variant_is_a_usage_error_naming_the_known_ones
out=$("$tools/constel-recover" --endpoint 127.0.0.1:1 --measurements /dev/null --attestation sev 2>&1)
rc=$?
if [ $rc = 2 ] && grep -q "unknown attestation variant 'sev' (aws-nitro-tpm, .*gcp-sev-es, .*qemu-vtpm.*, dummy)" <<<"$out"; then
	pass $t
else
	fail $t "rc $rc: $out"
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

swtpm_boot "$work" || { fail tools_vtpm "swtpm did not start"; exit 0; }
nonce=$(printf '2c%.0s' $(seq 32))
ud=$(printf '9e%.0s' $(seq 32))
mp=$(free_port)
python3 tests/cloud/fake_cloud.py --csp aws --listen "127.0.0.1:$mp" >"$work/imds.out" 2>&1 &
for img in ok notpm; do
	tpmattr=''
	[ $img = ok ] && tpmattr=', "TpmSupport": "v2.0"'
	cat >"$work/$img.json" <<EOF
{"region": "eu-central-1", "credentials": [{"AccessKeyId": "AKIDEXAMPLE",
 "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}], "instances": [],
 "load_balancers": [], "images": [{"ImageId": "ami-0123456789abcdeff"$tpmattr}]}
EOF
	python3 tests/cloud/fake_aws_api.py --state "$work/$img.json" --port 0 >"$work/$img.port" 2>"$work/$img.err" &
done
m15=$(printf '00%.0s' $(seq 32))
printf '{"measurements": {"15": {"expected": "%s", "warnOnly": false}}, "amdRootKey": ""}\n' "$m15" >"$work/config.json"

t=tools_verify_checks_an_aws_nitro_tpm_document_against_describe_images
if wait_ready "$work/imds.out" ready && wait_ready "$work/ok.port" '[0-9]' && wait_ready "$work/notpm.port" '[0-9]' &&
	"$agent" --tpm "$tpm" attest --attestation aws-nitro-tpm --imds "http://127.0.0.1:$mp" \
		--nonce "$nonce" --user-data "$ud" >"$work/doc.json" 2>"$work/attest.log" &&
	out=$(AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY \
		"$tools/constel-verify" --attestation aws-nitro-tpm --api "http://127.0.0.1:$(cat "$work/ok.port")" \
		--measurements "$work/config.json" --nonce "$nonce" --user-data "$ud" "$work/doc.json" 2>&1) &&
	[ "$out" = "OK user_data=$ud" ]; then
	pass $t
else
	fail $t "$(tail -1 "$work/attest.log") / $out"
fi

t=tools_verify_refuses_an_aws_image_without_tpm_support
out=$(AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY \
	"$tools/constel-verify" --attestation aws-nitro-tpm --api "http://127.0.0.1:$(cat "$work/notpm.port")" \
	--measurements "$work/config.json" --nonce "$nonce" "$work/doc.json" 2>&1)
rc=$?
if [ $rc = 1 ] && [ "$(tail -1 <<<"$out")" = "constel-verify: aws-nitro-tpm: aws image ami-0123456789abcdeff does not support TPM v2.0" ]; then
	pass $t
else
	fail $t "rc $rc: $out"
fi
