# constel-verify snp-report: the recorded Azure report from the command line (raw, hex and
# base64; PEM and DER VCEK), and the policy, TCB, chip-ID, VMPL and report-data checks on
# reports the test signs itself with test chains (ARK-Milan -> SEV-Milan -> SEV-VCEK, the VLEK
# path through SEV-VLEK-Milan, ARK-Turin -> SEV-Turin -> a Turin VCEK; made
# here with openssl: RSA-PSS SHA-384 salt 48, an ECDSA P-384 VCEK with AMD's extensions),
# trusted with --ark. Evidence from ${CONSTEL_VECTORS:-../shared/vectors}: missing is a FAIL.
. tests/lib.sh
cv=$PWD/$BUILD/tools/constel-verify
vec=${CONSTEL_VECTORS:-../shared/vectors}
work=$(mktemp -d /tmp/constel-snp-XXXXXX)
trap 'rm -rf "$work"' EXIT

# expect NAME CODE [TEXT] -- ARGS...: constel-verify snp-report ARGS exits CODE and, when
# TEXT is given, its output holds TEXT.
expect() {
	local name=$1 code=$2 text=$3 out rc
	shift 3
	out=$("$cv" snp-report "$@" 2>&1)
	rc=$?
	if [ "$rc" != "$code" ]; then
		fail "$name" "exit $rc, not $code: $out"
	elif [ -n "$text" ] && [[ "$out" != *"$text"* ]]; then
		fail "$name" "no '$text' in: $out"
	else
		pass "$name"
	fi
}

az=$vec/snp-azure
if [ ! -f "$az/attestation.bin" ] || [ ! -f "$vec/amd/ask_ark_milan.pem" ]; then
	fail snp_report_vectors "no evidence in $vec (set CONSTEL_VECTORS)"
	exit 0
fi
expect snp_report_azure_pem_chain 0 "OK snp Milan VCEK" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --chain "$az/certchain.pem" --at 2024-01-01T00:00:00Z \
	--runtime-data "$az/runtimedata.bin"
expect snp_report_azure_der 0 "OK snp Milan VCEK" --report "$az/attestation.bin" \
	--signer "$az/vcek.cert" --at 2024-01-01T00:00:00Z
od -An -tx1 -v "$az/attestation.bin" >"$work/az.hex"
base64 "$az/attestation.bin" >"$work/az.b64"
expect snp_report_azure_hex 0 OK --report "$work/az.hex" --signer "$az/vcek.pem" \
	--at 2024-01-01T00:00:00Z
expect snp_report_azure_base64 0 OK --report "$work/az.b64" --signer "$az/vcek.pem" \
	--at 2024-01-01T00:00:00Z
head -c 1183 "$az/attestation.bin" >"$work/short.bin"
expect snp_report_short_refused 1 "not 1184" --report "$work/short.bin" --signer "$az/vcek.pem"
idk=$(od -An -tx1 -v -j $((0xe0)) -N 48 "$az/attestation.bin" | tr -d ' \n')
other=$(printf '03%.0s' $(seq 48))
expect snp_report_id_key_digest_accepted 0 OK --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --at 2024-01-01T00:00:00Z --id-key-digests "$other,$idk"
expect snp_report_id_key_digest_refused 1 "ID_KEY_DIGEST" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --at 2024-01-01T00:00:00Z --id-key-digests "$other"
expect snp_report_usage_id_key_digest 2 "--id-key-digests" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --id-key-digests "$other,"
printf 'x' >"$work/rt"
expect snp_report_runtime_data_binding 1 "runtime data" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --at 2024-01-01T00:00:00Z --runtime-data "$work/rt"
expect snp_report_azure_expired 1 "validity" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --at 2031-01-01T00:00:00Z
expect snp_report_vlek_bad_signature 1 "signature" \
	--report "$az/report-vlek-bad-signature.hex" --signer "$az/vlek-for-bad-report.pem" \
	--at 2024-01-01T00:00:00Z
expect snp_report_usage_no_signer 2 "" --report "$az/attestation.bin"
expect snp_report_usage_bad_time 2 "--at" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --at 2024-01-01
expect snp_report_usage_bad_tcb 2 "--min-tcb" --report "$az/attestation.bin" \
	--signer "$az/vcek.pem" --min-tcb bl=300

# ---- a test chain ----
cd "$work" || exit 1
pss=(-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 -sha384)
subj="/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices"
chip=$(printf '%0128x' 0 | sed 's/^0000/c41f/')
cat >ext.cnf <<CNF
[ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
[vcek]
1.3.6.1.4.1.3704.1.1=DER:02:01:00
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
1.3.6.1.4.1.3704.1.4=DER:$(echo "$chip" | sed 's/../&:/g; s/:$//')
[vlek]
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
[turin]
1.3.6.1.4.1.3704.1.3.9=DER:02:01:01
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
1.3.6.1.4.1.3704.1.4=DER:$(echo "$chip" | cut -c1-16 | sed 's/../&:/g; s/:$//')
CNF
{
	openssl genrsa -out ark.key 2048 &&
	openssl req -new -x509 -key ark.key -subj "$subj/CN=ARK-Milan" -days 3650 "${pss[@]}" \
		-addext basicConstraints=critical,CA:TRUE -out ark.pem &&
	openssl genrsa -out ask.key 2048 &&
	openssl req -new -key ask.key -subj "$subj/CN=SEV-Milan" -out ask.csr &&
	openssl x509 -req -in ask.csr -CA ark.pem -CAkey ark.key -set_serial 2 -days 3650 \
		"${pss[@]}" -extfile ext.cnf -extensions ca -out ask.pem &&
	openssl ecparam -name secp384r1 -genkey -noout -out vcek.key &&
	openssl req -new -key vcek.key -subj "$subj/CN=SEV-VCEK" -out vcek.csr &&
	openssl x509 -req -in vcek.csr -CA ask.pem -CAkey ask.key -set_serial 3 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions vcek -out vcek.pem
	openssl req -new -key ask.key -subj "$subj/CN=SEV-VLEK-Milan" -out asvk.csr &&
	openssl x509 -req -in asvk.csr -CA ark.pem -CAkey ark.key -set_serial 4 -days 3650 \
		"${pss[@]}" -extfile ext.cnf -extensions ca -out asvk.pem &&
	openssl req -new -key vcek.key -subj "$subj/CN=SEV-VLEK" -out vlek.csr &&
	openssl x509 -req -in vlek.csr -CA asvk.pem -CAkey ask.key -set_serial 5 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions vlek -out vlek.pem &&
	openssl x509 -req -in vlek.csr -CA ask.pem -CAkey ask.key -set_serial 6 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions vlek -out vlek-by-ask.pem &&
	openssl req -new -x509 -key ark.key -subj "$subj/CN=ARK-Turin" -days 3650 "${pss[@]}" \
		-addext basicConstraints=critical,CA:TRUE -out ark-turin.pem &&
	openssl req -new -key ask.key -subj "$subj/CN=SEV-Turin" -out ask-turin.csr &&
	openssl x509 -req -in ask-turin.csr -CA ark-turin.pem -CAkey ark.key -set_serial 7 \
		-days 3650 "${pss[@]}" -extfile ext.cnf -extensions ca -out ask-turin.pem &&
	openssl x509 -req -in vcek.csr -CA ask-turin.pem -CAkey ask.key -set_serial 8 -days 365 \
		"${pss[@]}" -extfile ext.cnf -extensions turin -out vcek-turin.pem
} >openssl.log 2>&1 || { fail snp_report_test_chain "openssl: $(tail -3 openssl.log)"; exit 0; }

# mk NAME KEY=VALUE...: a version 3 Milan report with these fields changed, signed by the
# test VCEK (fields: policy vmpl current reported committed launch chip signer cur_ver
# com_ver fam report_data), into NAME.bin.
mk() {
	local name=$1
	shift
	python3 - "$name" "$chip" "$@" <<'PY' || { fail "snp_report_make_$name" "python3 failed"; return 1; }
import struct, subprocess, sys
name, chip = sys.argv[1], bytes.fromhex(sys.argv[2])
f = dict(policy=0x30000, vmpl=0, current=0xd108000000000003, reported=0xd108000000000003,
         committed=0xd108000000000003, launch=0xd108000000000003, chip=chip, signer=0,
         cur_ver=(1, 55, 10), com_ver=(1, 55, 10), fam=0x19, report_data=b"\x42" * 64)
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    f[k] = bytes.fromhex(v) if k in ("chip", "report_data") else \
        tuple(int(x) for x in v.split(".")) if k.endswith("_ver") else int(v, 0)
r = bytearray(1184)
struct.pack_into("<IIQ", r, 0, 3, 1, f["policy"])
struct.pack_into("<IIQQI", r, 0x30, f["vmpl"], 1, f["current"], 0, f["signer"])
r[0x50:0x90] = f["report_data"]
r[0x90:0xc0] = b"\x11" * 48
struct.pack_into("<Q", r, 0x180, f["reported"])
r[0x188] = f["fam"]
r[0x189] = 1
r[0x1a0:0x1e0] = f["chip"]
struct.pack_into("<Q", r, 0x1e0, f["committed"])
r[0x1e8:0x1eb] = bytes(reversed(f["cur_ver"]))
r[0x1ec:0x1ef] = bytes(reversed(f["com_ver"]))
struct.pack_into("<Q", r, 0x1f0, f["launch"])
der = subprocess.run(["openssl", "dgst", "-sha384", "-sign", "vcek.key"], input=bytes(r[:0x2a0]),
                     capture_output=True, check=True).stdout
# ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } -> little-endian, 72 bytes each
def ints(d):
    assert d[0] == 0x30
    i = 2 if d[1] < 0x80 else 2 + (d[1] & 0x7f)
    out = []
    while i < len(d):
        n = d[i + 1]
        out.append(int.from_bytes(d[i + 2:i + 2 + n], "big"))
        i += 2 + n
    return out
rr, ss = ints(der)
r[0x2a0:0x2e8] = rr.to_bytes(72, "little")
r[0x2e8:0x330] = ss.to_bytes(72, "little")
open(name + ".bin", "wb").write(r)
PY
}

t=(--signer vcek.pem --chain ask.pem --ark ark.pem)
mk good && expect snp_report_test_chain_accepted 0 "OK snp Milan VCEK version=3" \
	--report good.bin "${t[@]}"
expect snp_report_test_chain_needs_its_root 1 "chain" --report good.bin --signer vcek.pem \
	--chain ask.pem
expect snp_report_test_chain_min_tcb_met 0 OK --report good.bin "${t[@]}" \
	--min-tcb bl=3,tee=0,snp=8,ucode=209 --min-launch-tcb bl=3,snp=8
expect snp_report_test_chain_below_min_tcb 1 "current TCB is below the minimum" \
	--report good.bin "${t[@]}" --min-tcb bl=3,snp=9
expect snp_report_test_chain_below_min_launch_tcb 1 "launch TCB is below" \
	--report good.bin "${t[@]}" --min-launch-tcb ucode=210
expect snp_report_test_chain_report_data 0 OK --report good.bin "${t[@]}" \
	--report-data "$(printf '42%.0s' $(seq 64))"
expect snp_report_test_chain_other_report_data 1 "report data" --report good.bin "${t[@]}" \
	--report-data 42
mk debug policy=0xb0000 && expect snp_report_debug_refused 1 "policy: the guest allows debugging" \
	--report debug.bin "${t[@]}"
mk mma policy=0x70000 && expect snp_report_migration_agent_refused 1 "migration agent" \
	--report mma.bin "${t[@]}"
mk cxl policy=0x230000 && expect snp_report_cxl_refused 1 "CXL" --report cxl.bin "${t[@]}"
mk nores policy=0x10000 && expect snp_report_reserved_policy_bit 1 "reserved bit 17" \
	--report nores.bin "${t[@]}"
mk vmpl1 vmpl=1 && expect snp_report_vmpl1_refused 1 "vmpl" --report vmpl1.bin "${t[@]}"
expect snp_report_vmpl1_when_asked 0 OK --report vmpl1.bin "${t[@]}" --vmpl 1
expect snp_report_vmpl_any 0 OK --report vmpl1.bin "${t[@]}" --vmpl any
mk rep reported=0xd108000000000002 current=0xd108000000000004 &&
	expect snp_report_reported_tcb_not_vceks 1 "is not the reported TCB" \
		--report rep.bin "${t[@]}"
mk resv reported=0xd108000000010003 current=0xd108000000010003 &&
	expect snp_report_reported_tcb_reserved_byte 1 "is not the reported TCB" \
		--report resv.bin "${t[@]}"
mk cur current=0xd108000000000002 committed=0xd108000000000002 &&
	expect snp_report_reported_above_current 1 "reported TCB is above the current" \
		--report cur.bin "${t[@]}"
mk com committed=0xd109000000000003 &&
	expect snp_report_committed_above_current 1 "committed TCB is above the current" \
		--report com.bin "${t[@]}"
mk comv com_ver=1.56.0 &&
	expect snp_report_committed_firmware_above_current 1 "committed firmware" \
		--report comv.bin "${t[@]}"
mk chip chip="$(printf '%0128x' 7)" &&
	expect snp_report_chip_id_not_vceks 1 "chip id" --report chip.bin "${t[@]}"
mk masked chip="$(printf '%0128x' 0)" signer=2 &&
	expect snp_report_masked_chip_id 0 OK --report masked.bin "${t[@]}"
mk vlekr signer=4 chip="$(printf '%0128x' 0)" &&
	expect snp_report_vlek_accepted 0 "OK snp Milan VLEK" --report vlekr.bin \
		--signer vlek.pem --chain asvk.pem --ark ark.pem
expect snp_report_vlek_signed_by_ask_refused 1 "issuer is not SEV-VLEK-Milan" \
	--report vlekr.bin --signer vlek-by-ask.pem --chain ask.pem --ark ark.pem
expect snp_report_vcek_report_with_vlek_refused 1 "CN is not SEV-VCEK" --report good.bin \
	--signer vlek.pem --chain asvk.pem --ark ark.pem
# Turin: FMC first in the TCB (fmc=1,bl=3,tee=0,snp=8,ucode=0xd1), an 8-byte hardware ID
mk turin fam=0x1a current=0xd100000008000301 reported=0xd100000008000301 \
	committed=0xd100000008000301 launch=0xd100000008000301 &&
	expect snp_report_turin_accepted 0 "OK snp Turin VCEK" --report turin.bin \
		--signer vcek-turin.pem --chain ask-turin.pem --ark ark-turin.pem \
		--min-tcb fmc=1,bl=3,snp=8,ucode=209
expect snp_report_turin_fmc_minimum 1 "below the minimum fmc=2" --report turin.bin \
	--signer vcek-turin.pem --chain ask-turin.pem --ark ark-turin.pem --min-tcb fmc=2
mk turinm fam=0x1a && expect snp_report_turin_report_of_milan_layout 1 "is not the reported TCB" \
	--report turinm.bin --signer vcek-turin.pem --chain ask-turin.pem --ark ark-turin.pem
mk vlek signer=4 && expect snp_report_vlek_flag_with_vcek 1 "CN is not SEV-VLEK" \
	--report vlek.bin "${t[@]}"
mk genoa fam=0x1a && expect snp_report_cpu_family_not_products 1 "product" \
	--report genoa.bin "${t[@]}"
expect snp_report_test_vcek_expired 1 "validity" --report good.bin "${t[@]}" \
	--at 2099-01-01T00:00:00Z
