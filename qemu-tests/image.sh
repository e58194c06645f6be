#!/bin/bash
# The mkosi image (image/build.sh, `make image`) booted as a worker: OVMF (q35, swtpm on
# tpm-crb) starts the UKI in the image disk's own ESP (\EFI\BOOT\BOOTX64.EFI, no boot loader:
# PCR 12 stays zero); the agent, as PID 1 of the UKI's initrd, finds the root by the
# roothash= on the UKI's command line (the squashfs root and its dm-verity hash partition by
# GPT type and by the partition UUIDs that are the halves of the root hash), opens it with
# dm-verity, unlocks the state disk after joining constel-joinservice, which enforces the
# image's measurements as image/measure.py predicted them from the UKI at build time (PCRs 4,
# 8, 9, 11, 12, 13, 15), and hands over to the image's real root: Debian's containerd from the
# image, and the kubelet and kubeadm doubles (tests/vm/standin.c) delivered as components over
# http:// with their hashes.
#   I1 before the join service runs, the worker's init server shows the document the join
#      service will see: the C validator (constel-verify) accepts it with the image's
#      measurements enforced, and the PCRs it quotes are exactly the predicted ones
#   I2 the worker joins with the measurements enforced and the kubelet double runs in the
#      image's root: the root is dm-verity (the agent's line), read-only squashfs, the state
#      disk LUKS2 with the cluster's key, PCR 15 marked, the image's containerd answering
#   I3 the same image with one byte of its root partition changed: the agent refuses the root
#      in one line before asking for a key; the state disk and the join service see nothing
# Prints PASS/FAIL lines and "N passed, N failed"; logs in $BUILD/qemu-logs-image (or
# NODE_LOGS). Needs make image (and agent, tools, $BUILD/vm/standin, $BUILD/initrd.img).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. tests/lib.sh
count_checks
work=$(mktemp -d /tmp/constel-imgvm-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/qemu-logs-image}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
http_pid=
trap 'kill $http_pid 2>/dev/null; cluster_stop; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
UP_S=${IMAGE_UP_S:-150} BOOT_S=${IMAGE_BOOT_S:-360}

setup_fail() {
	fail image_vm_setup "$1"
	echo "$passed passed, $failed failed"
	exit 1
}
img=$BUILD/image
for f in "$img/disk.raw" "$img/constel-image.efi" "$img/measurements.json" "$img/cmdline" "$BUILD/vm/standin" \
	"$tools/constel-joinservice" "$tools/constel-verify" /usr/share/OVMF/OVMF_CODE_4M.fd; do
	[ -e "$f" ] || setup_fail "$f is missing (make image agent tools $BUILD/vm/standin; apt-get install ovmf)"
done
# the measurements are the build's prediction for this very UKI (not learned from a boot)
image/measure.py --uki "$img/constel-image.efi" --zero 8,12,13,15 >"$work/m-check.json" 2>"$work/m.err" &&
	cmp -s "$work/m-check.json" "$img/measurements.json" ||
	setup_fail "$img/measurements.json is not image/measure.py's for $img/constel-image.efi: make image"
cluster_setup >"$work/setup.out" 2>&1 || setup_fail "$(tail -3 "$work/setup.out")"
cp "$img/measurements.json" "$work/m-image.json"
# the cluster's measurement salt, as constel-init writes it after an init (this scenario has
# no control plane of its own: the join service serves the worker for an existing cluster)
openssl rand -hex 32 >"$work/ws/measurement-salt"
roothash=$(cat "$img/roothash")

# The components over plain http:// (the image trusts Debian's CA bundle only, not the run's
# throwaway CA), their SHA-256 checked by the agent: a server on 127.0.0.1, reached by the
# guest at 10.42.0.1:80 through a guestfwd rule.
http_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$work/www" "$http_port" >"$logs/components-http.log" 2>&1 &
http_pid=$!
components_json "http://$NODE_MD_HOST/standin" "http://$NODE_MD_HOST/standin" >"$work/components-http.json"

# boot_image BOOT [vm.py options]: worker-0 from a copy of the image disk (vda, its ESP the
# boot option) with its state disk (vdb) and swtpm state, the nodes' network.
boot_image() {
	local boot=$1
	shift
	[ -e "$work/worker-0.raw" ] || truncate -s 128M "$work/worker-0.raw"
	cp --sparse=always "${disk_src:-$img/disk.raw}" "$work/image.raw"
	python3 qemu-tests/vm.py --log "$logs/$boot.log" --uefi "$work/image.raw" --memory 1024 \
		--disk "$work/image.raw" --disk "$work/worker-0.raw" --tpm-state "$work/tpm-worker-0" \
		--net "$NODE_NET" --dhcp-start "$(node_field worker-0 2)" \
		--net-guestfwd "tcp:$NODE_MD_HOST:8080-cmd:socat STDIO TCP:127.0.0.1:$md_port_worker_0" \
		--net-guestfwd "tcp:$NODE_MD_HOST:80-cmd:socat STDIO TCP:127.0.0.1:$http_port" \
		--net-guestfwd "tcp:$NODE_LB:30090-cmd:socat STDIO TCP:127.0.0.1:$js_port" \
		--hostfwd "tcp:127.0.0.1:$init_port-:9000" \
		--start-on 'constel-agent starting as PID 1' --timeout "$BOOT_S" "$@" >"$logs/$boot.out" 2>&1
}
# at BOOT REGEX: the host time (s since QEMU started) of the first matching serial line
at() { grep -a -m1 -E "$2" "$logs/$1.log" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }

# ---- I1: the document the worker presents, before the join service runs ----
node_ports
boot_image i-join &
vm=$!
nonce=$(printf '6a%.0s' $(seq 32))
doc=no
if node_wait i-join 'init server listening' "$UP_S" $vm; then
	python3 qemu-tests/atls-doc.py --addr "127.0.0.1:$init_port" --nonce "$nonce" --out "$work/doc.json" 2>"$logs/i-doc.err" && doc=yes
fi
# now the join service, enforcing the image's measurements: the worker's next round joins
cluster_joinservice "$work/m-image.json" "$work/components-http.json" || fail image_vm_join_service "did not start"
t=image_vm_1_quoted_pcrs_equal_the_prediction_and_the_c_validator_accepts
v=$("$tools/constel-verify" --nonce "$nonce" --measurements "$work/m-image.json" "$work/doc.json" 2>&1)
got=$(python3 - "$work/doc.json" "$work/m-image.json" <<'PY' 2>&1
import base64, json, sys
doc = json.load(open(sys.argv[1]))["Attestation"]
want = {k: v["expected"] for k, v in json.load(open(sys.argv[2])).items()}
quoted = {}
for q in doc["quotes"]:
    if q["pcrs"]["hash"] in (11, "SHA256", "TPM_ALG_SHA256"):
        quoted = {str(k): base64.b64decode(v).hex() for k, v in q["pcrs"]["pcrs"].items()}
print(" ".join("%s=%s" % (k, "same" if quoted.get(k) == want[k] else quoted.get(k, "none")[:16])
               for k in sorted(want, key=int)))
PY
)
[ $doc = yes ] && [ "${v%% *}" = OK ] && [ "$got" = "4=same 8=same 9=same 11=same 12=same 13=same 15=same" ] &&
	pass $t || fail $t "document $doc ($(cat "$logs/i-doc.err" 2>/dev/null | tail -1)); constel-verify: $v; quoted: $got"
wait $vm
rc=$?

# ---- I2: the join and the handover to the image's root ----
t=image_vm_2_worker_joins_with_the_image_measurements_enforced
token_sha=$(printf %s "$token" | sha256sum | cut -c1-64)
[ $rc = 0 ] && [ "$(node_data i-join join_token_sha256)" = "$token_sha" ] &&
	grep -aq 'IssueJoinTicket: ticket issued' "$logs/joinservice.log" && pass $t ||
	fail $t "boot $rc: $(tail_log i-join) $(grep -a 'error\|warn' "$logs/joinservice.log" | tail -1 | cut -c1-200)"
t=image_vm_2_firmware_booted_the_uki_of_the_image_disk
grep -aq 'BdsDxe: starting Boot.*Pci(' "$logs/i-join.log" && grep -q "roothash=$roothash" "$img/cmdline" &&
	grep -aq "roothash=$roothash" "$img/constel-image.efi" && pass $t || fail $t "no OVMF boot line, or roothash= not in the UKI"
t=image_vm_2_root_is_the_verity_squashfs_read_only
# the agent's lines: dm-verity opened (the device named by roothash=), then the squashfs on the
# verity device mounted read-only, then the switch to it
vline=$(grep -a 'constel-agent.*root: verity' "$logs/i-join.log" | tail -1)
mline=$(grep -a 'constel-agent.*root: /dev/mapper/[^ ]* (squashfs) mounted read-only' "$logs/i-join.log" | tail -1)
[ -n "$vline" ] && [ -n "$mline" ] && grep -aq 'switch_root: .* is the root now' "$logs/i-join.log" && pass "$t" ||
	fail $t "verity '${vline:-none}', mount '${mline:-none}': $(grep -a 'constel-agent.*root' "$logs/i-join.log" | tail -2 | cut -c1-200 | tr '\n' ' ')"
t=image_vm_2_state_disk_is_luks2_with_the_cluster_key
[ "$(luks_token "$work/worker-0.raw")" = True ] && opens worker-0 && pass $t ||
	fail $t "token $(luks_token "$work/worker-0.raw")"
t=image_vm_2_kubelet_double_runs_in_the_image_root_with_pcr15_marked
p15=$(node_data i-join pcr15 | tr A-F a-f)
case $(node_data i-join kubelet_bootstrap) in tls-bootstrap | kubeconfig) kb=ok ;; *) kb=no ;; esac
# in the image's root: the agent switched to it before the kubelet double started
sr=$(at i-join 'switch_root: .* is the root now') kl=$(at i-join '@@STANDIN kubelet')
[ $kb = ok ] && [ -n "$(node_data i-join marker_new)" ] && [ ${#p15} = 64 ] && [ "$p15" != "$(printf '0%.0s' $(seq 64))" ] &&
	[ -n "$sr" ] && [ -n "$kl" ] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$sr" "$kl" &&
	pass $t || fail $t "kubelet '$(node_data i-join kubelet_bootstrap)' at '$kl' s, switch_root at '${sr:-never}' s, marker '$(node_data i-join marker_new)', pcr15 '$p15': $(tail_log i-join)"
t=image_vm_2_the_image_s_containerd_answers
cv=$(grep -ao '@@DATA containerd_version .*' "$logs/i-join.log" | tail -1 | cut -d' ' -f3-)
case $cv in absent* | unreachable* | no\ answer* | "") fail $t "containerd: '${cv:-no line}'" ;; *) pass "$t ($cv)" ;; esac
# ---- I3: one changed byte in the image's root: refused before any key, the disk untouched ----
t=image_vm_3_a_changed_block_of_the_root_is_refused_and_the_state_disk_untouched
cp --sparse=always "$img/disk.raw" "$work/tampered.raw"
off=$(sfdisk --json "$work/tampered.raw" | python3 -c 'import json,sys; p=json.load(sys.stdin)["partitiontable"]["partitions"][1]; print(p["start"] * 512 + p["size"] * 256)')
python3 -c 'import sys; f=open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$work/tampered.raw" "$off"
before=$(ident "$work/worker-0.raw")
tickets=$(grep -ac 'IssueJoinTicket: ticket issued' "$logs/joinservice.log")
node_ports
disk_src=$work/tampered.raw boot_image i-tampered --kill-on 'the real root could not be verified'
rc=$?
line=$(grep -a 'constel-agent.*root: verity: .*does not match the root hash' "$logs/i-tampered.log" | head -1)
[ $rc = 3 ] && [ -n "$line" ] && [ "$(ident "$work/worker-0.raw")" = "$before" ] &&
	[ "$(grep -ac 'IssueJoinTicket: ticket issued' "$logs/joinservice.log")" = "$tickets" ] &&
	! grep -aq '@@STANDIN' "$logs/i-tampered.log" && pass "$t" ||
	fail $t "boot $rc, line '${line:-none}': $(tail_log i-tampered)"

# ---- no secret of the run (master secret, disk key, measurement secret, the join token,
# private keys) in either serial log (tests/secrets.py, as scenarios.sh checks its nodes) ----
python3 tests/secrets.py --workspace "$work/ws" --scan "$work" --raw "$token" --raw "${token#*.}" \
	>"$work/secrets"
node_no_secrets image_vm_no_secret_in_the_serial_log_of 20 "$logs/i-join.log" "$logs/i-tampered.log"

fw=$(at i-join 'BdsDxe: starting') p1=$(at i-join 'constel-agent starting as PID 1') done=$(at i-join '@@INIT_DONE')
echo "image_vm: boot option at ${fw:-?} s, PID 1 at ${p1:-?} s, kubelet double at ${kl:-?} s, done at ${done:-?} s (the join service started after the document was fetched)"

echo "$passed passed, $failed failed (logs in $logs)"
[ $failed = 0 ]
