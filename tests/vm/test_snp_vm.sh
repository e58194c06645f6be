#!/bin/bash
# aws-sev-snp on QEMU: one node (worker-0, first boot) booted as AWS (constel.csp=aws,
# constel.attestation-variant=aws-sev-snp) in the network namespace of qemu-tests/cloud-cluster.sh
# (the fake IMDSv2, EC2 and ELBv2, the VPC's DNS), whose /dev/sev-guest is the fake of
# tests/vm/sev_guest_fake.c (CUSE), started inside the guest by the pre-init shim of an
# overlay initrd (tests/vm/preinit.c, qemu-tests/preinit.sh) and signing with a test AMD chain.
# The join service runs with --attestation aws-sev-snp and the test root. The fake flips one
# signed byte of its first report (--tamper-first 1): the join service refuses that aTLS
# handshake with one line naming the report's signature and issues no ticket; the node logs
# the failed call in one line (the handshake closed: it cannot know why) and its round fails;
# its next round (30 s later) joins with a good report and the kubelet stand-in runs. A probe
# step after the fake checks the ABI's error answers through the kernel's CUSE ioctl; a boot
# whose pre-init step fails powers off with one line before the agent starts. No secret of
# the run in the serial log. Root only (network namespaces). About 85 s. docs/sevboot.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
base=$(mktemp -d /tmp/constel-snp-vm-XXXXXX)
work=$base
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/qemu-logs/snp-vm}
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
. qemu-tests/cloud-cluster.sh
ns=
trap 'cloud_kill_jobs; [ -n "$ns" ] && netns_down "$ns"; cluster_stop 2>/dev/null; rm -rf "$base"' EXIT
if [ "$(id -u)" != 0 ]; then
	echo "# not root: the aws-sev-snp boot skipped (network namespaces)"
	exit 0
fi
for f in "$BUILD/vm/standin" "$BUILD/vm/preinit" "$BUILD/vm/sev_guest_fake" "$BUILD/vm/sev_guest_probe" "$tools/constel-init" \
	"$tools/constel-joinservice" "$initrd"; do
	[ -e "$f" ] || { fail snp_vm_setup "$f is missing (make agent tools initrd $f)"; exit 0; }
done
rm -rf "$logs" && mkdir -p "$logs"
says() { grep -aq "$2" "$logs/$1.log" 2>/dev/null; }
t0=$SECONDS

if ! cluster_setup >"$work/setup.out" 2>&1; then
	fail snp_vm_setup "$(tail -2 "$work/setup.out")"
	exit 0
fi
ns=constel-snp-$$
if ! cloud_up "$ns" aws >"$work/up.out" 2>&1; then
	fail snp_vm_netns "$(tail -2 "$work/up.out")"
	exit 0
fi
cloud_overrides aws
CLOUD_VARIANT=aws-sev-snp
if ! cloud_variant_up "$ns" >"$work/variant.out" 2>&1; then
	fail snp_vm_variant "$(tail -2 "$work/variant.out")"
	exit 0
fi
# the measurement salt the control plane's init would have written (no control plane here:
# the join service needs only the workspace)
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$work/ws/measurement-salt"
js_args "$(cloud_variant_m)"
netns_exec "$ns" "$tools/constel-joinservice" --listen "$CLOUD_LB:30090" "${JS_ARGS[@]}" $(cloud_variant_args) \
	>>"$logs/joinservice.log" 2>&1 &
if ! netns_listening "$ns" "$CLOUD_LB:30090"; then
	fail snp_vm_joinservice "did not start: $(tail -2 "$logs/joinservice.log")"
	exit 0
fi
b=aws-snp-worker
wn=$(cloud_aws_id worker-0)
if ! CLOUD_SNP_TAMPER=1 cloud_boot "$ns" aws worker-0 "$b" 420 ${CLOUD_WORKER_ARGS:-} 2>"$work/boot.err"; then
	fail snp_vm_boot "did not start: $(tail -2 "$work/boot.err")"
	exit 0
fi
cloud_boot_end
rc=$?
secs=$((SECONDS - t0))

t=snp_vm_preinit_starts_the_fake_sev_guest_then_the_agent_as_pid_1
says $b 'preinit: module [0-9]*-cuse.ko loaded' && says $b 'sev-guest-fake: /dev/sev-guest ready' &&
	says $b 'preinit: exec /constel-agent' &&
	says $b 'starting as PID 1 (csp aws, attestation aws-sev-snp)' &&
	grep -q 'constel.attestation-variant=aws-sev-snp' "$logs/$b.cmdline" && pass $t ||
	fail $t "$(grep -a 'preinit: \|sev-guest-fake: \|starting as PID 1' "$logs/$b.log" | tail -3 | cut -c1-160 | tr '\n' ' ')"

# the ABI answers the agent's happy path does not reach, through the kernel's CUSE ioctl
# (tests/vm/sev_guest_probe.c, a pre-init step after the fake)
t=snp_vm_fake_sev_guest_answers_the_abis_errors
np=$(grep -ac 'sev-guest-probe: PASS' "$logs/$b.log")
nf=$(grep -ac 'sev-guest-probe: FAIL' "$logs/$b.log")
[ "$np" = 11 ] && [ "$nf" = 0 ] && pass "$t ($np checks)" ||
	fail $t "$np passed, $nf failed: $(grep -a 'sev-guest-probe: FAIL' "$logs/$b.log" | head -2 | cut -c1-160 | tr '\n' ' ')"

# the fake's requests: the first report tampered, a later one not; SNP_GET_EXT_REPORT with the
# certificate table in the agent's pages (the agent asks for the extended report)
t=snp_vm_fake_served_a_tampered_then_a_good_extended_report
tam=$(grep -ac 'sev-guest-fake: GET_EXT_REPORT: .*tampered' "$logs/$b.log")
good=$(grep -a 'sev-guest-fake: GET_EXT_REPORT: report' "$logs/$b.log" | grep -avc tampered)
[ "$tam" = 1 ] && [ "$good" -ge 1 ] && pass "$t ($tam tampered, $good good)" ||
	fail $t "$tam tampered, $good good: $(grep -a 'sev-guest-fake: ' "$logs/$b.log" | tail -2 | cut -c1-160 | tr '\n' ' ')"

# the join service refused the tampered round with one line naming the signature check, and
# issued no ticket before it; the node said so in one line and got no key in that round
t=snp_vm_tampered_report_refused_by_the_join_service_naming_the_signature
ref=$(grep -ac "snp: signature: the report's ECDSA P-384 signature does not verify" "$logs/joinservice.log")
first_ticket=$(grep -an "ticket issued for $wn" "$logs/joinservice.log" | head -1 | cut -d: -f1)
first_ref=$(grep -an "snp: signature: the report's ECDSA P-384 signature does not verify" "$logs/joinservice.log" | head -1 | cut -d: -f1)
[ "$ref" = 1 ] && [ -n "$first_ref" ] && { [ -z "$first_ticket" ] || [ "$first_ref" -lt "$first_ticket" ]; } &&
	pass $t || fail $t "$ref refusals (want 1), refusal at line ${first_ref:-none}, first ticket at ${first_ticket:-none}: $(grep -a 'refus\|snp:' "$logs/joinservice.log" | tail -1 | cut -c1-200)"
# the node's side of the refusal: the join service closes the aTLS handshake, so the node's one
# line is the failed call at the load balancer (it cannot know why); its round fails, and the
# next round joins
t=snp_vm_node_logs_the_refused_call_in_one_line_then_joins
lb_fail=$(grep -ac "join: $CLOUD_AWS_LB_NAME:30090: rpc error" "$logs/$b.log")
n=$(grep -ac 'join: round [0-9]* failed' "$logs/$b.log")
[ "$lb_fail" = 1 ] && [ "$n" = 1 ] && says $b 'join: round 1 failed' &&
	[ "$(grep -ac "join: IssueJoinTicket at $CLOUD_AWS_LB_NAME:30090 for $wn" "$logs/$b.log")" -ge 2 ] &&
	says $b 'join: the node joined the cluster' && pass $t ||
	fail $t "$lb_fail refused calls, $n failed rounds: $(grep -a 'constel-agent: .*join: ' "$logs/$b.log" | tail -3 | cut -c1-200 | tr '\n' ' ')"

t=snp_vm_worker_joined_with_aws_sev_snp_and_the_kubelet_ran
[ "$rc" = 0 ] && [ "$(grep -ac "ticket issued for $wn" "$logs/joinservice.log")" = 1 ] &&
	[ "$(node_data $b join_endpoint)" = "$CLOUD_AWS_LB_NAME:6443" ] && pass "$t (${secs} s with the setup)" ||
	fail $t "boot $rc: $(tail_log $b) $(tail -1 "$logs/joinservice.log" | cut -c1-200)"

# the shim's failure path: a step that fails (the fake without its files) is one line and the
# VM powers off before the agent starts (a kernel and no network: a few seconds)
t=snp_vm_preinit_failing_step_powers_off_before_the_agent
if BUILD=$BUILD qemu-tests/preinit.sh "$work/initrd-fail.img" --base "$initrd" \
	--step "$BUILD/vm/sev_guest_fake:50-sev-guest" 2>"$work/fail.err"; then
	t1=$SECONDS
	python3 qemu-tests/vm.py --initrd "$work/initrd-fail.img" --log "$logs/preinit-fail.log" \
		--start-on 'preinit: PID' --timeout 120 >"$logs/preinit-fail.out" 2>&1
	rc=$?
	says preinit-fail 'preinit: /preinit.d/50-sev-guest: exit 1' && says preinit-fail 'preinit: a step failed: powering off' &&
		! says preinit-fail 'starting as PID 1' && [ $rc = 2 ] && ! grep -q timeout "$logs/preinit-fail.out" &&
		pass "$t ($((SECONDS - t1)) s)" || fail $t "vm.py $rc: $(grep -a 'preinit: \|sev-guest-fake: ' "$logs/preinit-fail.log" | tail -2 | tr '\n' ' ') $(tail -1 "$logs/preinit-fail.out")"
else
	fail $t "the overlay: $(tail -1 "$work/fail.err")"
fi

python3 tests/secrets.py --workspace "$work/ws" --scan "$work" --raw "$token" --raw "${token#*.}" \
	--raw "$banner_token" --raw "${banner_token#*.}" --pem "$work/ca.key" \
	--pem "$(cloud_variant_dir)/snp/signer.key" >"$work/secrets"
node_no_secrets snp_vm_no_secret_in_the_serial_log_of 20 "$logs/$b.log"
