# aws-sev-snp end to end on swtpm and the fake configfs-tsm (tests/attest/fake_sev_tsm.py,
# FUSE, reports signed by the test chain of tests/attest/snp-test/chain.sh): the document of
# `constel-agent attest --attestation aws-sev-snp --tsm-report DIR` is accepted by
# `constel-verify --attestation aws-sev-snp` with the test root and the attestationConfig as
# the join service gets it (amdSigningKey = the test ASVK, minimum launch TCB); refused with
# AMD's roots, with a launch TCB minimum above the report's, and when one byte of the report,
# the VLEK or the InstanceInfo's text changes. The same through the fake /dev/sev-guest (the
# ioctl path Constellation's 6.6 kernels take). Go (tests/interop atlspeer verify-ii) reads
# the InstanceInfo as Constellation's struct, byte for byte, and checks the AK binding itself.
# Loopback only; every wait bounded.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
cv=$PWD/$BUILD/tools/constel-verify
work=$(mktemp -d /tmp/constel-snpaws-XXXXXX)
cleanup() {
	[ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
	[ -n "${dev_pid:-}" ] && kill "$dev_pid" 2>/dev/null && wait "$dev_pid" 2>/dev/null
	umount -l "$work/tsm" 2>/dev/null
	umount -l "$work/dev" 2>/dev/null
	kill $(jobs -p) 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/chain" "$work/tsm"
if ! bash tests/attest/snp-test/chain.sh "$work/chain"; then
	fail snp_aws_test_chain "chain.sh: $(tail -2 "$work/chain/openssl.log")"
	exit 0
fi
python3 tests/attest/fake_sev_tsm.py "$work/tsm" "$work/chain" >"$work/fake.out" 2>"$work/fake.err" &
fake_pid=$!
for _ in $(seq 300); do
	grep -q ready "$work/fake.out" 2>/dev/null && break
	sleep 0.1
done
if ! grep -q ready "$work/fake.out"; then
	fail snp_aws_fake_tsm "did not start: $(tail -2 "$work/fake.err")"
	exit 0
fi
if ! swtpm_boot "$work"; then
	fail snp_aws_swtpm "swtpm did not start"
	exit 0
fi

zero=$(printf '0%.0s' $(seq 64))
ud=$(printf 'ab%.0s' $(seq 32))
nonce=0102030405
# cfg FILE BL: the attestationConfig with the test ASVK and bootloaderVersion BL
cfg() {
	python3 - "$work/chain/asvk.pem" "$1" "$2" "$zero" <<'PY'
import json, sys
asvk, out, bl, zero = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3]), sys.argv[4]
json.dump({"measurements": {"15": {"expected": zero, "warnOnly": False}},
           "bootloaderVersion": bl, "teeVersion": 0, "snpVersion": 8, "microcodeVersion": 209,
           "amdRootKey": "", "amdSigningKey": asvk}, open(out, "w"))
PY
}
cfg "$work/cfg.json" 3
cfg "$work/cfg-bl4.json" 4

t=snp_aws_agent_attests_from_configfs_tsm
if "$agent" --tpm "$tpm" attest --attestation aws-sev-snp --tsm-report "$work/tsm" \
	--sev-guest "$work/no-sev-guest" --event-log "$work/no-log" --nonce $nonce \
	--user-data "$ud" >"$work/doc.json" 2>"$work/attest.log"; then
	pass $t
else
	fail $t "$(tail -1 "$work/attest.log")"
	exit 0
fi

# verify NAME CODE TEXT DOC [ARGS...]
verify() {
	local name=$1 code=$2 text=$3 doc=$4 out rc
	shift 4
	out=$("$cv" --attestation aws-sev-snp --nonce $nonce --user-data "$ud" "$@" "$doc" 2>&1)
	rc=$?
	if [ $rc != "$code" ]; then
		fail "$name" "exit $rc, not $code: $(tail -1 <<<"$out")"
	elif [ -n "$text" ] && [[ "$out" != *"$text"* ]]; then
		fail "$name" "no '$text' in: $(tail -1 <<<"$out")"
	else
		pass "$name"
		[ -n "${SNP_VERBOSE:-}" ] && echo "  $(tail -1 <<<"$out")"
	fi
}
root=(--amd-root "$work/chain/ark.pem")
verify snp_aws_document_accepted 0 "OK" "$work/doc.json" --measurements "$work/cfg.json" "${root[@]}"
verify snp_aws_amd_roots_refuse_the_test_chain 1 "chain" "$work/doc.json" \
	--measurements "$work/cfg.json"
verify snp_aws_launch_tcb_below_minimum 1 "launch TCB" "$work/doc.json" \
	--measurements "$work/cfg-bl4.json" "${root[@]}"

# tamper OUT WHAT OFFSET: the document with one byte of InstanceInfo's report, VLEK (DER) or
# text changed (the quote is not re-made: each must be refused by the SNP checks or the nonce)
tamper() {
	python3 - "$work/doc.json" "$1" "$2" "$3" <<'PY'
import base64, json, re, sys
doc, out, what, off = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = json.load(open(doc))
ii = base64.b64decode(d["InstanceInfo"])
info = json.loads(ii)
if what == "text":
    ii = ii.replace(b'"Azure":null', b'"Azure": null')
else:
    if what == "report":
        r = bytearray(base64.b64decode(info["AttestationReport"]))
        r[off] ^= 1
        info["AttestationReport"] = base64.b64encode(bytes(r)).decode()
    else:
        pem = base64.b64decode(info["ReportSigner"]).decode()
        body = "".join(pem.strip().splitlines()[1:-1])
        der = bytearray(base64.b64decode(body))
        der[off] ^= 1
        b = base64.b64encode(bytes(der)).decode()
        pem = "-----BEGIN CERTIFICATE-----\n" + "\n".join(b[i:i + 64] for i in range(0, len(b), 64)) + "\n-----END CERTIFICATE-----\n"
        info["ReportSigner"] = base64.b64encode(pem.encode()).decode()
    ii = json.dumps(info, separators=(",", ":")).encode()
d["InstanceInfo"] = base64.b64encode(ii).decode()
open(out, "w").write(json.dumps(d, separators=(",", ":")))
PY
}
for spec in report:0x50 report:0x90 report:0x2a0 vlek:200 text:0; do
	tamper "$work/bad.json" "${spec%%:*}" $((${spec#*:})) &&
		verify "snp_aws_changed_${spec%%:*}_${spec#*:}_refused" 1 "" "$work/bad.json" \
			--measurements "$work/cfg.json" "${root[@]}"
done

# the ioctl path: the fake /dev/sev-guest, no configfs-tsm
mkdir "$work/dev"
python3 tests/attest/fake_sev_tsm.py "$work/dev" "$work/chain" --dev >"$work/dev.out" 2>"$work/dev.err" &
dev_pid=$!
for _ in $(seq 300); do
	grep -q ready "$work/dev.out" 2>/dev/null && break
	sleep 0.1
done
t=snp_aws_agent_attests_from_dev_sev_guest
if "$agent" --tpm "$tpm" attest --attestation aws-sev-snp --tsm-report "$work/no-tsm" \
	--sev-guest "$work/dev/sev-guest" --event-log "$work/no-log" --nonce $nonce \
	--user-data "$ud" >"$work/doc-dev.json" 2>"$work/attest-dev.log"; then
	pass $t
	verify snp_aws_dev_document_accepted 0 "OK" "$work/doc-dev.json" \
		--measurements "$work/cfg.json" "${root[@]}"
else
	fail $t "$(tail -1 "$work/attest-dev.log")"
fi

# Go: InstanceInfo is Go's encoding of snp.InstanceInfo, its VLEK parses with crypto/x509 and
# REPORT_DATA is SHA-512 of x509.MarshalPKIXPublicKey of the document's AK
if peer=$(tests/interop/build-atlspeer.sh 2>"$work/peer.log"); then
	for d in doc doc-dev; do
		t=snp_aws_go_reads_instance_info_${d//-/_}
		if out=$("$peer" verify-ii --variant aws-sev-snp --doc "$work/$d.json" 2>&1); then
			pass $t
		else
			fail $t "$(tail -1 <<<"$out")"
		fi
	done
	tamper "$work/bad.json" text 0
	t=snp_aws_go_refuses_other_bytes
	if out=$("$peer" verify-ii --variant aws-sev-snp --doc "$work/bad.json" 2>&1); then
		fail $t "accepted: $out"
	else
		pass $t
	fi
else
	fail snp_aws_go_peer "atlspeer did not build: $(tail -1 "$work/peer.log")"
fi
