#!/bin/bash
# Measured boots: whole nodes as in scenarios.sh, but started by UEFI firmware (OVMF, q35,
# swtpm on tpm-crb) from the UKI of `make uki` on a FAT ESP, so the firmware, systemd-stub and
# the kernel's EFI stub extend PCRs 4, 9 and 11 and leave their event log in securityfs, which
# the agent sends in its attestation. The join service and the CLI's init enforce
# $BUILD/measurements.json (`make measurements`: predicted from the UKI by image/measure.py
# before any boot, never read back from one): PCRs 4, 8, 9, 11, 12, 13 and 15.
#   M1 the first control plane: a probe shows the PCRs it quotes (a CLI whose expected values
#      are all warn-only and wrong logs each quoted value, then refuses on a PCR 23 that cannot
#      match), they equal make measurements'; then constel-init with the measurements enforced
#      initialises it
#      The documents of M1 and M2 (fetched as the CLI sees them, qemu-tests/atls-doc.py) carry
#      the firmware's event log; the C validator (constel-verify) and the Go one (atlspeer
#      verify-qemu) both accept them (replaying OVMF's log); with the measurements, C refuses
#      the tampered one
#   M2 the same UKI with one byte more in its initrd: constel-init refuses it in one line naming
#      PCRs 4, 9 and 11, PCR 4 with the value image/measure.py predicts for that UKI; the node gets no key (its new disk is
#      neither marked initialized nor opened by the cluster's key)
#   M2b the UKI with another command line: refused by constel-init the same way
#   M3 a worker joins through constel-joinservice with the measurements enforced
#   M4 the worker reboots into the tampered UKI: every rejoin round refused, one line each in
#      the service's log naming the PCRs as in M2, its disk untouched (byte for byte)
#   M5 the worker reboots into the right UKI again: rejoin, its data intact
#   M6 the control plane reboots with no join service: constel-recover, with the measurements
#      enforced, pushes the key; its data intact
#   and no secret of the run in any node's serial log
# Prints PASS/FAIL lines and "N passed, N failed"; logs in $BUILD/qemu-logs-measured (or
# NODE_LOGS). Needs make uki measurements, agent, tools and $BUILD/vm/standin.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. tests/lib.sh
count_checks
work=$(mktemp -d /tmp/constel-measured-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/qemu-logs-measured}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
trap 'cluster_stop; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
# Every step is bounded: a boot to the agent's init server, a whole boot, a refused one.
UP_S=${MEASURED_UP_S:-150} BOOT_S=${MEASURED_BOOT_S:-300}

setup_fail() {
	fail measured_vm_setup "$1"
	echo "$passed passed, $failed failed"
	exit 1
}
uki=$BUILD/constel.efi esp=$PWD/$BUILD/constel-esp.img measurements=$BUILD/measurements.json
for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$tools/constel-init" \
	"$tools/constel-joinservice" "$uki" "$esp" "$measurements" /usr/share/OVMF/OVMF_CODE_4M.fd; do
	[ -e "$f" ] || setup_fail "$f is missing (make agent tools uki measurements $BUILD/vm/standin; apt-get install ovmf)"
done
[ "$uki" -nt "$BUILD/initrd.img" ] && [ "$measurements" -nt "$uki" ] && [ "$esp" -nt "$uki" ] ||
	setup_fail "$uki, its ESP or $measurements are older than what they are made of: make uki measurements"
cluster_setup >"$work/setup.out" 2>&1 || setup_fail "$(tail -3 "$work/setup.out")"
cp "$measurements" "$work/m.json" # what node_init and cluster_joinservice enforce

# The tampered UKI: the same stub, kernel, command line and os-release, one NUL byte more at
# the end of the initrd (the kernel skips it as padding: the node boots as before).
eval "$(qemu-tests/kernel.sh 2>/dev/null)"
cp "$initrd" "$work/initrd+1.img" && printf '\0' >>"$work/initrd+1.img"
image/uki.py --linux "$BZIMAGE" --initrd "$work/initrd+1.img" --cmdline image/qemu-node.cmdline \
	--osrel image/qemu-node.os-release -o "$work/tampered.efi" 2>"$work/uki.err" &&
	image/esp.sh "$work/tampered-esp.img" "$work/tampered.efi" 2>>"$work/uki.err" &&
	image/measure.py --uki "$work/tampered.efi" --zero 8,12,13,15 >"$work/m-tampered.json" 2>>"$work/uki.err" ||
	setup_fail "the tampered UKI: $(tail -2 "$work/uki.err")"
# ... and the one with another command line (one more word, which the kernel ignores)
printf '%s constel.test=1\n' "$(cat image/qemu-node.cmdline)" >"$work/cmdline2"
image/uki.py --linux "$BZIMAGE" --initrd "$initrd" --cmdline "$work/cmdline2" \
	--osrel image/qemu-node.os-release -o "$work/cmdline.efi" 2>"$work/uki.err" &&
	image/esp.sh "$work/cmdline-esp.img" "$work/cmdline.efi" 2>>"$work/uki.err" ||
	setup_fail "the UKI with another command line: $(tail -2 "$work/uki.err")"

# pcr JSON INDEX: one expected value of a measurements file
pcr() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["expected"])' "$1" "$2"; }
# differing A B: the PCRs whose expected values differ between two measurements files
differing() {
	python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); print(" ".join(k for k in sorted(a, key=int) if a[k] != b.get(k)))' "$1" "$2"
}

# node_boot_uefi NAME BOOT ESP [vm.py options]: node_boot of lib-node.sh through OVMF and the
# UKI on ESP (whose command line is lib-node's: root=/dev/vda, the fast KDF).
node_boot_uefi() {
	local name=$1 boot=$2 esp=$3
	shift 3
	node_vm "$name" "$boot" "$BOOT_S" --uefi "$esp" --memory 768 "$@"
}
# boot_times BOOT: "firmware+stub X s, PID 1 at Y s" from the serial log's host times
boot_times() {
	awk '/BdsDxe: starting/ && !b { b = substr($1 $2, 2) + 0 } /constel-agent starting as PID 1/ && !p { p = substr($1 $2, 2) + 0 }
		END { printf "boot option at %.1f s, PID 1 at %.1f s", b, p }' "$logs/$1.log" | tr -d '[]'
}

# ---- M1: the first control plane, init with the measurements enforced ----
node_ports
node_boot_uefi control-plane-0 m1-init "$esp" &
vm=$!
ff=$(printf 'f%.0s' $(seq 64))
printf '{"4": {"expected": "%s", "warnOnly": true}, "8": {"expected": "%s", "warnOnly": true}, "9": {"expected": "%s", "warnOnly": true}, "11": {"expected": "%s", "warnOnly": true}, "12": {"expected": "%s", "warnOnly": true}, "13": {"expected": "%s", "warnOnly": true}, "15": {"expected": "%s", "warnOnly": true}, "23": {"expected": "%s", "warnOnly": false}}\n' \
	$ff $ff $ff $ff $ff $ff $ff $ff >"$work/m-probe.json"
mkdir -p "$work/ws-probe" && cp "$work/ws/constellation-mastersecret.json" "$work/ws/init-secret" "$work/ws-probe/"
nonce=$(printf '5a%.0s' $(seq 32))
if node_wait m1-init 'init server listening' "$UP_S" $vm; then
	python3 qemu-tests/atls-doc.py --addr "127.0.0.1:$init_port" --nonce "$nonce" --out "$work/doc-m1.json" 2>"$logs/m1-doc.err"
	"$tools/constel-init" --workspace "$work/ws-probe" apply --endpoint "127.0.0.1:$init_port" --measurements "$work/m-probe.json" \
		--components "$work/components.json" --timeout 60 >"$logs/m1-constel-init-probe.out" 2>&1
	node_init "$work/ws" "$logs/m1-constel-init.out" 150
	cli=$?
else
	cli=124
fi
wait $vm
rc=$?
t=measured_vm_1_init_accepted_with_pcrs_4_8_9_11_12_13_15_enforced
cid=$(sed -n 's/^Cluster ID *\([0-9a-f]\{64\}\)$/\1/p' "$logs/m1-constel-init.out")
[ $cli = 0 ] && [ $rc = 0 ] && [ -n "$cid" ] &&
	[ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(sorted(d, key=int)), {v["warnOnly"] for v in d.values()})' "$work/m.json")" = "4 8 9 11 12 13 15 {False}" ] &&
	pass "$t ($(boot_times m1-init))" || fail $t "constel-init $cli, boot $rc: $(tail -2 "$logs/m1-constel-init.out" | cut -c1-240) $(tail_log m1-init)"
t=measured_vm_1_quoted_pcrs_equal_make_measurements
# "qemu-vtpm: PCR 4: expected ff.., got <hex> (warn only)": the values the node quoted
got=$(python3 - "$logs/m1-constel-init-probe.out" "$work/m.json" <<'PY'
import json, re, sys
quoted = dict(re.findall(r"PCR (\d+): expected f{64}, got ([0-9a-f]{64}) \(warn only\)", open(sys.argv[1]).read()))
want = {k: v["expected"] for k, v in json.load(open(sys.argv[2])).items()}
print(" ".join("%s=%s" % (k, "same" if quoted.get(k) == want[k] else quoted.get(k, "none")[:16])
               for k in sorted(want, key=int)))
PY
)
[ "$got" = "4=same 8=same 9=same 11=same 12=same 13=same 15=same" ] &&
	grep -q 'measurement validation failed: PCR 23' "$logs/m1-constel-init-probe.out" && pass $t ||
	fail $t "$got: $(tail -1 "$logs/m1-constel-init-probe.out" | cut -c1-200)"
t=measured_vm_1_pcr15_marked_after_the_init
expect15=$(pcr15_of "${cid:-00}")
[ -n "$cid" ] && [ "$(node_data m1-init pcr15 | tr A-F a-f)" = "$expect15" ] && pass $t ||
	fail $t "PCR 15 '$(node_data m1-init pcr15)', want $expect15"
t=measured_vm_1_the_firmware_booted_the_uki_from_the_esp
grep -aq 'BdsDxe: starting Boot.*Pci(' "$logs/m1-init.log" && pass $t ||
	fail $t "no OVMF boot line in $logs/m1-init.log"

# ---- M2: the tampered UKI, refused by the CLI ----
mkdir -p "$work/ws2" && cp "$work/ws/constellation-mastersecret.json" "$work/ws/init-secret" "$work/ws2/"
node_ports
node_boot_uefi control-plane-1 m2-tampered-init "$work/tampered-esp.img" &
vm=$!
if node_wait m2-tampered-init 'init server listening' "$UP_S" $vm; then
	python3 qemu-tests/atls-doc.py --addr "127.0.0.1:$init_port" --nonce "$nonce" --out "$work/doc-m2.json" 2>"$logs/m2-doc.err"
	node_init "$work/ws2" "$logs/m2-constel-init.out" 60
	cli=$?
else
	cli=124
fi
node_wait m2-tampered-init 'serve: aTLS handshake failed' 30 $vm # the node's line for it
kill $(pgrep -P $vm) 2>/dev/null # vm.py (the boot's subshell runs it): it stops QEMU and swtpm
wait $vm
want4=$(pcr "$work/m.json" 4) got4=$(pcr "$work/m-tampered.json" 4)
line=$(grep -a 'measurement validation failed' "$logs/m2-constel-init.out" | head -1)
t=measured_vm_2_cli_refuses_the_tampered_uki_naming_pcrs_4_9_11_and_pcr_4_s_predicted_value
[ $cli != 0 ] && [ $cli != 124 ] && grep -q "PCR 4: expected $want4, got $got4 (PCRs that differ: 4, 9, 11)" <<<"$line" &&
	grep -aq 'serve: aTLS handshake failed: .*\(did it refuse our attestation\|refused our certificate or attestation\)' "$logs/m2-tampered-init.log" &&
	pass $t || fail $t "constel-init $cli: $(tail -2 "$logs/m2-constel-init.out" | cut -c1-300)"
t=measured_vm_2_tampered_node_gets_no_key
[ "$(luks_token "$work/control-plane-1.raw")" != True ] && ! opens control-plane-1 &&
	! grep -aq '@@STANDIN' "$logs/m2-tampered-init.log" && [ ! -s "$work/ws2/constellation-admin.conf" ] &&
	pass $t || fail $t "token $(luks_token "$work/control-plane-1.raw"): $(tail_log m2-tampered-init)"
t=measured_vm_2_only_pcrs_4_9_11_follow_the_initrd
[ "$(differing "$work/m.json" "$work/m-tampered.json")" = "4 9 11" ] && pass $t ||
	fail $t "differing: $(differing "$work/m.json" "$work/m-tampered.json")"

t=measured_vm_1_document_carries_the_firmware_event_log
# the TCG crypto-agile log: the Spec ID event first, then the firmware's, the stub's and the
# kernel's events (EV_EFI_BOOT_SERVICES_APPLICATION 0x80000003, EV_EVENT_TAG 6 into PCR 9...)
got=$(python3 - "$work/doc-m1.json" <<'PY' 2>&1
import base64, json, struct, sys
log = base64.b64decode(json.load(open(sys.argv[1]))["Attestation"]["event_log"])
pcr, typ = struct.unpack_from("<II", log, 0)
print(len(log) > 1000, pcr == 0 and typ == 3 and b"Spec ID Event03" in log[:64], b"\x03\x00\x00\x80" in log)
PY
)
[ "$got" = "True True True" ] && pass "$t ($(python3 -c 'import base64,json,sys; print(len(base64.b64decode(json.load(open(sys.argv[1]))["Attestation"]["event_log"])))' "$work/doc-m1.json") bytes)" ||
	fail $t "$got $(cat "$logs/m1-doc.err")"
t=measured_vm_1_2_c_and_go_validators_agree_on_the_measured_documents
peer=$(tests/interop/build-atlspeer.sh 2>"$work/peer.err")
c1=$("$tools/constel-verify" --nonce "$nonce" --measurements "$work/m.json" "$work/doc-m1.json" 2>&1)
g1=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/doc-m1.json" 2>&1)
c2=$("$tools/constel-verify" --nonce "$nonce" "$work/doc-m2.json" 2>&1)
c2m=$("$tools/constel-verify" --nonce "$nonce" --measurements "$work/m.json" "$work/doc-m2.json" 2>&1)
g2=$("$peer" verify-qemu --nonce "$nonce" --doc "$work/doc-m2.json" 2>&1)
[ -n "$peer" ] && [ "${c1%% *}" = OK ] && [ "${g1% pcr15=*}" = "$c1" ] && [ "${c2%% *}" = OK ] && [ "${g2% pcr15=*}" = "$c2" ] &&
	grep -q 'PCRs that differ: 4, 9, 11' <<<"$c2m" && pass $t ||
	fail $t "C '$c1' / Go '$g1'; tampered: C '$c2' / Go '$g2' / C with measurements '$c2m' $(cat "$work/peer.err")"

# ---- M2b: another command line, refused by the CLI ----
node_ports
node_boot_uefi control-plane-1 m2b-cmdline-init "$work/cmdline-esp.img" &
vm=$!
if node_wait m2b-cmdline-init 'init server listening' "$UP_S" $vm; then
	node_init "$work/ws2" "$logs/m2b-constel-init.out" 60
	cli=$?
else
	cli=124
fi
node_wait m2b-cmdline-init 'serve: aTLS handshake failed' 30 $vm
kill $(pgrep -P $vm) 2>/dev/null
wait $vm
t=measured_vm_2b_cli_refuses_the_uki_with_another_command_line_naming_pcrs_4_9_11
[ $cli != 0 ] && [ $cli != 124 ] && grep -q "measurement validation failed: PCR 4: expected $want4, got [0-9a-f]\{64\} (PCRs that differ: 4, 9, 11)" "$logs/m2b-constel-init.out" &&
	grep -aq 'constel.test=1' "$work/cmdline.efi" && grep -aq 'serve: aTLS handshake failed: .*\(did it refuse our attestation\|refused our certificate or attestation\)' "$logs/m2b-cmdline-init.log" &&
	[ "$(luks_token "$work/control-plane-1.raw")" != True ] && ! grep -aq '@@STANDIN' "$logs/m2b-cmdline-init.log" &&
	pass $t || fail $t "constel-init $cli: $(tail -1 "$logs/m2b-constel-init.out" | cut -c1-300)"

# ---- M3: a worker joins with the measurements enforced ----
cluster_joinservice "$work/m.json" || fail measured_vm_3_join_service "did not start"
node_ports
node_boot_uefi worker-0 m3-join "$esp"
rc=$?
t=measured_vm_3_worker_joins_with_the_measurements_enforced
token_sha=$(printf %s "$token" | sha256sum | cut -c1-64)
[ $rc = 0 ] && [ "$(node_data m3-join join_token_sha256)" = "$token_sha" ] &&
	[ "$(node_data m3-join pcr15 | tr A-F a-f)" = "$expect15" ] && grep -aq 'IssueJoinTicket: ticket issued' "$logs/joinservice.log" &&
	pass "$t ($(boot_times m3-join))" || fail $t "boot $rc: $(tail_log m3-join) $(grep -a 'error\|warn' "$logs/joinservice.log" | tail -1 | cut -c1-200)"
marker3=$(node_data m3-join marker_new)
marker1=$(node_data m1-init marker_new)

# ---- M4: the worker reboots into the tampered UKI: refused by the join service ----
t=measured_vm_4_join_service_refuses_every_rejoin_round_naming_pcrs_4_9_11_and_pcr_4_s_predicted_value
before=$(ident "$work/worker-0.raw")
lines=$(grep -ac 'measurement validation failed' "$logs/joinservice.log")
node_ports
node_boot_uefi worker-0 m4-tampered-rejoin "$work/tampered-esp.img" --kill-on 'rejoin: round 2 failed'
rc=$?
n=$(grep -ac 'rejoin: .*handshake.*\(refuse our attestation\|refused our certificate or attestation\)' "$logs/m4-tampered-rejoin.log")
new=$(($(grep -ac 'measurement validation failed' "$logs/joinservice.log") - lines))
[ $rc = 3 ] && [ "$n" -ge 2 ] && [ "$new" -ge 2 ] &&
	grep -a 'measurement validation failed' "$logs/joinservice.log" | tail -1 | grep -q "PCR 4: expected $want4, got $got4 (PCRs that differ: 4, 9, 11)" &&
	pass "$t ($n rounds)" || fail $t "boot $rc, $n refusal lines on the console, $new in the service's log: $(tail -1 "$logs/joinservice.log" | cut -c1-200)"
t=measured_vm_4_tampered_worker_gets_no_key_and_its_disk_is_untouched
[ "$(ident "$work/worker-0.raw")" = "$before" ] && ! grep -aq '@@STANDIN' "$logs/m4-tampered-rejoin.log" &&
	pass $t || fail $t "disk changed or kubelet ran: $(tail_log m4-tampered-rejoin)"

# ---- M5: the worker reboots into the right UKI: rejoin with the measurements enforced ----
node_ports
node_boot_uefi worker-0 m5-rejoin "$esp"
rc=$?
t=measured_vm_5_worker_rejoins_with_the_measurements_enforced
[ $rc = 0 ] && grep -aq 'the rejoin path' "$logs/m5-rejoin.log" && [ -n "$marker3" ] &&
	[ "$(node_data m5-rejoin marker_found)" = "$marker3" ] && pass "$t ($(boot_times m5-rejoin))" ||
	fail $t "boot $rc, marker '$marker3' -> '$(node_data m5-rejoin marker_found)': $(tail_log m5-rejoin)"

# ---- M6: the control plane reboots with no join service: recovery ----
cluster_joinservice off
node_ports
node_boot_uefi control-plane-0 m6-recover "$esp" &
vm=$!
if node_wait m6-recover 'recovery server listening' "$UP_S" $vm; then
	(cd "$work/ws" && "$tools/constel-recover" --endpoint "127.0.0.1:$recover_port" \
		--measurements "$work/m.json" --timeout 60) >"$logs/m6-constel-recover.out" 2>&1
	cli=$?
else
	cli=124
fi
wait $vm
rc=$?
t=measured_vm_6_constel_recover_with_the_measurements_enforced_unlocks_the_control_plane
[ $cli = 0 ] && [ $rc = 0 ] && [ -n "$marker1" ] && [ "$(node_data m6-recover marker_found)" = "$marker1" ] &&
	[ "$(node_data m6-recover pcr15 | tr A-F a-f)" = "$expect15" ] && pass "$t ($(boot_times m6-recover))" ||
	fail $t "constel-recover $cli, boot $rc: $(tail -1 "$logs/m6-constel-recover.out" | cut -c1-200) $(tail_log m6-recover)"

# ---- no secret of the run (master secret, disk keys, measurement secret, the join token, the
# kubeadm double's token, private keys) in any node's serial log ----
python3 tests/secrets.py --workspace "$work/ws" --workspace "$work/ws-probe" --workspace "$work/ws2" \
	--scan "$work" --raw "$token" --raw "${token#*.}" --raw "$banner_token" --raw "${banner_token#*.}" \
	--pem "$work/ca.key" >"$work/secrets"
logs_to_scan=()
for log in "$logs"/m[0-9]*.log; do
	case $(basename "$log" .log) in *-swtpm | *-constel-*) ;; *) logs_to_scan+=("$log") ;; esac
done
node_no_secrets measured_vm_no_secret_in_the_serial_log_of 50 "${logs_to_scan[@]}"

echo "$passed passed, $failed failed (logs in $logs)"
[ $failed = 0 ]
