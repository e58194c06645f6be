#!/bin/bash
# A whole cluster booted as each cloud (qemu-tests/cloud-cluster.sh): constel.csp=openstack,
# azure, gcp and aws in a network namespace with the cloud's lease and tests/cloud/fake_cloud.py
# as its node-local endpoints; control-plane-0 initialised by constel-init, worker-0 joined
# through the join service at the load balancer's address, then rebooted and rejoined. One
# cluster per cloud, three boots each (CLUSTER_CSPS="openstack azure" runs only those).
#
# Each cloud is its own case. What the node-local endpoint does not serve (the load balancer
# on Azure, GCP and AWS; the role on GCP and AWS; the init-secret hash on AWS) the node finds
# through the cloud's control-plane API, faked in the namespace at 10.42.0.200:443 over https
# (tests/cloud/fake_gce_api.py, fake_azure_api.py, fake_aws_api.py; cloud_api_up in
# qemu-tests/cloud-cluster.sh) with the run's test CA as the initrd's CA bundle: no
# constel.role=, constel.join= or constel.init-secret-hash= on any command line, and each
# node's console names what it took from the API. AWS's load balancer is ELBv2's DNS name,
# resolved by the namespace's DNS server the lease names.
# On OpenStack the load balancer comes from user_data, the role, UID and init-secret hash
# from meta_data.json. The state disk: GCP's a virtio-scsi disk shaped as
# GCE attaches it (found by its device name state-disk), OpenStack's the virtio /dev/vdb (its
# naming), the others' /dev/vdb named by constel.state-disk=.
#
# Attestation: the Azure cluster attests with azure-sev-snp (CLUSTER_AZURE_VARIANT=qemu-vtpm
# for the old one): each node's vTPM provisioned before QEMU starts as Azure's HCL provisions
# it (the HCL AK at 0x81000003, an HCL report signed by a test AMD chain in NV 0x01400001),
# THIM served by the fake IMDS, constel-init and the join service run with --attestation
# azure-sev-snp and the test AMD root (qemu-tests/cloud-cluster.sh's CLOUD_VARIANT); then
# worker-0 boots once more with one byte of its SNP report flipped and the join service
# refuses it with one line naming the report's signature, the node getting no key. The AWS
# cluster attests with aws-nitro-tpm (CLUSTER_AWS_VARIANT=qemu-vtpm for the old one): the
# validators ask EC2 DescribeImages of a SigV4-checking fake in the namespace; then worker-0
# boots once more while that AMI has no TpmSupport and the join service refuses it with one
# line naming the check. The GCP cluster attests with gcp-sev-es (CLUSTER_GCP_VARIANT=qemu-vtpm
# for the old one): each node's vTPM holds GCE's AK template, the test pre-init shim's step
# build/vm/gce_pcr0 extends PCR 0 with GCE's firmware events and writes their log, which
# constel.event-log= hands to the agent; the tools ask the fake Compute API's
# getShieldedInstanceIdentity (https, the run's test CA); worker-0's first join is refused
# because that API's first answer in its boot names another key (one line naming the AK
# check), its next round joins. The others attest with qemu-vtpm. No secret of the run in any serial log (every cloud).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
base=$(mktemp -d /tmp/constel-cluster-cloud-XXXXXX)
work=$base
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
. qemu-tests/cloud-cluster.sh
logs_base=$logs
ns=
# the boots first (vm.py stops QEMU and swtpm), then the namespace (dnsmasq, the fakes), then
# the host tools: cluster_stop's wait would wait for dnsmasq for ever
trap 'cloud_kill_jobs; [ -n "$ns" ] && netns_down "$ns"; cluster_stop 2>/dev/null; rm -rf "$base"' EXIT
if [ "$(id -u)" != 0 ]; then
	echo "# not root: cluster boots as a cloud skipped (network namespaces)"
	exit 0
fi
for f in "$BUILD/vm/standin" "$BUILD/vm/preinit" "$BUILD/vm/gce_pcr0" "$tools/constel-init" "$tools/constel-joinservice" "$initrd" "$BUILD/test/tools/vtpm-provision"; do
	[ -e "$f" ] || { fail cluster_cloud_setup "$f is missing (make agent tools test-build initrd $BUILD/vm/standin $BUILD/vm/preinit $BUILD/vm/gce_pcr0)"; exit 0; }
done

says() { grep -aq "$2" "$logs/$1.log" 2>/dev/null; }

# The Azure cluster's azure-sev-snp checks (the cluster ran with it), then worker-0 tampered.
azure_sev_snp() {
	local t b n rc before lines js
	t=cluster_cloud_azure_every_node_attested_with_azure_sev_snp_and_the_hcl_ak
	n=0
	for b in azure-cp azure-worker azure-worker-reboot; do
		grep -q 'constel.attestation-variant=azure-sev-snp' "$logs/$b.cmdline" &&
			says "$b" 'starting as PID 1 (csp azure, attestation azure-sev-snp)' &&
			grep -q '/metadata/THIM/amd/certification' "$logs/$b.fake" && n=$((n + 1))
	done
	[ $n = 3 ] && pass $t || fail $t "$n of 3 boots with azure-sev-snp and THIM fetched ($(grep -a 'constel-agent: .*\(error\|starting as\)' "$logs/azure-worker.log" | head -2 | cut -c1-160 | tr '\n' ' '))"
	# configfs for configfs-tsm, mounted by PID 1 of an SNP variant before it attests
	t=cluster_cloud_azure_sev_snp_pid1_mounts_configfs
	says azure-cp 'mounts: configfs on /sys/kernel/config' && says azure-worker-reboot 'mounts: configfs on /sys/kernel/config' &&
		pass $t || fail $t "$(grep -a 'configfs' "$logs/azure-cp.log" | head -2 | cut -c1-160 | tr '\n' ' ')"
	# worker-0 again, one byte of the measurement in its HCL report's SNP report flipped (signed
	# bytes: the VCEK's signature breaks); the join service refuses its rejoin round (the first:
	# the next comes 30 s later and would be refused the same way)
	t=cluster_cloud_azure_sev_snp_tampered_report_refused_by_the_join_service_naming_the_signature
	before=$(ident "$work/worker-0.raw")
	js=$(wc -l <"$logs/joinservice.log")
	CLOUD_TAMPER=0xb0 cloud_boot "$ns" azure worker-0 azure-worker-tampered 300 ${CLOUD_WORKER_ARGS:-} || {
		fail $t "the tampered boot did not start"
		return
	}
	node_wait azure-worker-tampered 'rejoin: round 1 failed' 300 "$vm_pid"
	rc=$?
	pkill -P "$vm_pid" 2>/dev/null
	cloud_boot_end
	lines=$(tail -n +$((js + 1)) "$logs/joinservice.log" | grep -ac "snp: signature: the report's ECDSA P-384 signature does not")
	n=$(grep -ac 'rejoin: round [0-9]* failed' "$logs/azure-worker-tampered.log")
	[ $rc = 0 ] && [ "$lines" -ge 1 ] && [ "$n" -ge 1 ] && pass "$t ($lines refusals)" ||
		fail $t "wait $rc, $lines refusals in the join service's log, $n failed rounds: $(tail -1 "$logs/joinservice.log" | cut -c1-200) $(tail_log azure-worker-tampered)"
	t=cluster_cloud_azure_sev_snp_tampered_worker_gets_no_key_and_its_disk_is_untouched
	[ "$(ident "$work/worker-0.raw")" = "$before" ] && ! grep -aq '@@STANDIN' "$logs/azure-worker-tampered.log" &&
		! says azure-worker-tampered 'rejoin: .*ticket' && pass $t || fail $t "disk changed or kubelet ran: $(tail_log azure-worker-tampered)"
}

# The AWS cluster's aws-nitro-tpm checks: every boot with it, and constel-init and the join
# service each asked EC2's DescribeImages (SigV4 verified by the fake) for the AMI's TpmSupport
# once per validated boot (cp; worker, worker-reboot).
aws_nitro_tpm() {
	local t b n calls
	t=cluster_cloud_aws_every_node_attested_with_aws_nitro_tpm_checked_by_describe_images
	n=0
	for b in aws-cp aws-worker aws-worker-reboot; do
		grep -q 'constel.attestation-variant=aws-nitro-tpm' "$logs/$b.cmdline" &&
			says "$b" 'starting as PID 1 (csp aws, attestation aws-nitro-tpm)' && n=$((n + 1))
	done
	calls=$(grep -c '"verified": true.*"action": "DescribeImages".*"status": 200' "$logs/validator-ec2.log" 2>/dev/null)
	[ $n = 3 ] && [ "${calls:-0}" -ge 3 ] && pass "$t ($calls calls)" ||
		fail $t "$n of 3 boots with aws-nitro-tpm, ${calls:-0} verified DescribeImages: $(tail -1 "$logs/validator-ec2.log" 2>/dev/null)"
	# the AMI without TpmSupport (the EC2 fake restarted on its port): worker-0's rejoin refused
	# by the join service with one line naming the check, no key
	t=cluster_cloud_aws_nitro_tpm_ami_without_tpm_support_refused_by_the_join_service
	local before js rc lines port
	before=$(ident "$work/worker-0.raw")
	js=$(wc -l <"$logs/joinservice.log")
	port=${cloud_aws_api##*:}
	# ip netns exec may run the fake as its child: both go, and the port is waited for
	pkill -P "$cloud_aws_pid" 2>/dev/null
	kill "$cloud_aws_pid" 2>/dev/null
	wait "$cloud_aws_pid" 2>/dev/null
	for _ in 1 2 3 4 5; do
		ip netns exec "$ns" ss -Hltn "sport = :$port" | grep -q . || break
		sleep 1
	done
	CLOUD_AWS_TPM= cloud_variant_up "$ns" "$port" 2>>"$work/cluster.err" &&
		cloud_boot "$ns" aws worker-0 aws-worker-no-tpm 300 ${CLOUD_WORKER_ARGS:-} || {
		fail $t "the EC2 fake or the boot did not start: $(tail -1 "$work/cluster.err")"
		return
	}
	node_wait aws-worker-no-tpm 'rejoin: round 1 failed' 300 "$vm_pid"
	rc=$?
	pkill -P "$vm_pid" 2>/dev/null
	cloud_boot_end
	lines=$(tail -n +$((js + 1)) "$logs/joinservice.log" | grep -ac "aws image ami-0123456789abcdeff does not support TPM v2.0")
	[ $rc = 0 ] && [ "$lines" -ge 1 ] && [ "$(ident "$work/worker-0.raw")" = "$before" ] &&
		! grep -aq '@@STANDIN' "$logs/aws-worker-no-tpm.log" && pass "$t ($lines refusals)" ||
		fail $t "wait $rc, $lines refusals: $(tail -1 "$logs/joinservice.log" | cut -c1-200) $(tail_log aws-worker-no-tpm)"
}

# The GCP cluster's gcp-sev-es checks: every boot with it, GCE's PCR 0 events extended before
# the agent and their log sent (constel.event-log=), getShieldedInstanceIdentity asked by the
# validators; worker-0's first join refused naming the AK check, then joined.
gcp_sev_es() {
	local t b n calls lines
	t=cluster_cloud_gcp_every_node_attested_with_gcp_sev_es_and_gces_pcr0_events
	n=0
	for b in gcp-cp gcp-worker gcp-worker-reboot; do
		grep -q 'constel.attestation-variant=gcp-sev-es .*constel.event-log=/preinit/eventlog' "$logs/$b.cmdline" &&
			says "$b" 'gce-pcr0: PCR 0 holds GCE Virtual Firmware v1 and NonHostInfo AMD SEV' &&
			says "$b" 'starting as PID 1 (csp gcp, attestation gcp-sev-es)' &&
			says "$b" 'attest: the event log is /preinit/eventlog (constel.event-log=)' &&
			grep -q '"method": "instances.getShieldedInstanceIdentity", "status": 200' "$logs/$b.fake" &&
			n=$((n + 1))
	done
	[ $n = 3 ] && pass $t || fail $t "$n of 3 boots with gcp-sev-es, the events, the log and the API asked ($(grep -a 'gce-pcr0\|preinit: \|constel-agent: .*\(error\|starting as\)' "$logs/gcp-worker.log" | head -3 | cut -c1-160 | tr '\n' ' '))"
	t=cluster_cloud_gcp_sev_es_another_key_from_the_api_refused_by_the_join_service_naming_the_ak_check
	lines=$(grep -ac "gcp-sev-es: the AK is not the signing key GCE gives for constel-test/europe-west3-b/worker-0" "$logs/joinservice.log")
	calls=$(grep -c 'getShieldedInstanceIdentity' "$logs/gcp-worker.fake" 2>/dev/null)
	[ "$lines" = 1 ] && [ "${calls:-0}" -ge 2 ] && says gcp-worker 'join: round 1 failed' && [ "$w_rc" = 0 ] &&
		pass "$t ($lines refusal, $calls calls)" ||
		fail $t "$lines refusals, ${calls:-0} calls, boot $w_rc: $(grep -a 'gcp-sev-es' "$logs/joinservice.log" | tail -1 | cut -c1-200) $(tail_log gcp-worker)"
}

# No secret of the run (workspace, disk keys, tokens, the CA key, the validator's AWS key) in a
# serial log of CSP's boots.
no_secrets() {
	local logs_to_scan=() log
	python3 tests/secrets.py --workspace "$work/ws" --scan "$work" --raw "$token" --raw "${token#*.}" \
		--raw "$banner_token" --raw "${banner_token#*.}" --pem "$work/ca.key" \
		${AWS_SECRET_ACCESS_KEY:+--raw "$AWS_SECRET_ACCESS_KEY"} \
		${GOOGLE_OAUTH_ACCESS_TOKEN:+--raw "$GOOGLE_OAUTH_ACCESS_TOKEN"} >"$work/secrets"
	for log in "$logs/$1"-*.log; do
		case $(basename "$log" .log) in *-swtpm) ;; *) logs_to_scan+=("$log") ;; esac
	done
	node_no_secrets "cluster_cloud_$1_no_secret_in_the_serial_log_of" 20 "${logs_to_scan[@]}"
}
name_of() { if [ "$1" = aws ]; then cloud_aws_id "$2"; else echo "$2"; fi; }

# api_says CSP CP-NAME WORKER-NAME LB: each node's console names the role (and UID) it took
# from the cloud's API, the worker the load balancer, and the API's fake answered (no call
# refused: every one authenticated, signed, at a version it serves); api_why says what not.
api_says() {
	local csp=$1 cp=$2 w=$3 lb=$4 log
	api_why=
	case $csp in
	openstack) # role, UID, hash and load balancer are node-local there; the peers Nova's
		says openstack-worker "openstack: 2 servers of cluster c0ffee42 from Nova" &&
			says openstack-worker "join: IssueJoinTicket at $lb:30090" ||
			api_why="no peers from Nova"
		log=$logs/api.log
		;;
	gcp)
		says gcp-cp "gcp: $cp: role controlplane, UID c0ffee42 from the Compute API (instances.get)" &&
			says gcp-worker "gcp: $w: role worker, UID c0ffee42 from the Compute API (instances.get)" &&
			says gcp-worker "gcp: load balancer $lb (port 6443) from the Compute API's forwarding rule" ||
			api_why="no role/load balancer from Compute"
		log=$logs/gcp-worker.fake
		;;
	azure)
		says azure-cp "azure: $cp: role controlplane, IP $(node_field control-plane-0 2) from ARM" &&
			says azure-worker "azure: $w: role worker, IP $(node_field worker-0 2) from ARM" &&
			says azure-worker "azure: load balancer $lb from ARM" ||
			api_why="no self/load balancer from ARM"
		log=$logs/api.log
		;;
	aws)
		says aws-cp "aws: $cp: role controlplane, UID c0ffee42 from EC2 (DescribeInstances)" &&
			says aws-worker "aws: $w: role worker, UID c0ffee42 from EC2 (DescribeInstances)" &&
			says aws-worker "aws: load balancer $lb from ELBv2 (DescribeLoadBalancers)" &&
			grep -q "$lb" "$logs/dns.log" ||
			api_why="no role/load balancer from EC2 and ELBv2, or no DNS query for $lb"
		log=$logs/api.log
		;;
	esac
	[ -z "$api_why" ] || { api_why="$api_why: $(grep -ah "constel-agent: .*\($csp\|node\): " "$logs/$csp-cp.log" "$logs/$csp-worker.log" | tail -3 | cut -c1-200 | tr '\n' ' ')"; return 1; }
	python3 - "$log" <<-'PY' 2>"$work/api-check.err" || { api_why="the API's log: $(tail -1 "$work/api-check.err")"; return 1; }
		import json, sys
		recs = [json.loads(l) for l in open(sys.argv[1])]
		api = [r for r in recs if r.get("method") != "metadata"]
		assert api, "no call reached the API"
		bad = [r for r in api if r.get("status") not in (200, 201)]
		assert not bad, "refused: %s" % bad[:2]
	PY
}

one_cloud() {
	local csp=$1 t cid cp_ip w_ip cpn wn want_ep lb fails=0 reports
	work=$base/$csp
	logs=$logs_base/cluster-cloud-$csp
	rm -rf "$logs"
	mkdir -p "$work" "$logs"
	ns=constel-cc-$csp-$$
	if ! cluster_setup >"$work/setup.out" 2>&1; then
		fail "cluster_cloud_${csp}_setup" "$(tail -2 "$work/setup.out")"
		return
	fi
	if ! cloud_up "$ns" "$csp" >"$work/up.out" 2>&1; then
		fail "cluster_cloud_${csp}_netns" "$(tail -2 "$work/up.out")"
		return
	fi
	cloud_overrides "$csp"
	CLOUD_VARIANT=qemu-vtpm
	[ "$csp" = azure ] && CLOUD_VARIANT=${CLUSTER_AZURE_VARIANT:-azure-sev-snp}
	[ "$csp" = aws ] && CLOUD_VARIANT=${CLUSTER_AWS_VARIANT:-aws-nitro-tpm}
	[ "$csp" = gcp ] && CLOUD_VARIANT=${CLUSTER_GCP_VARIANT:-gcp-sev-es}
	# gcp-sev-es: worker-0's first getShieldedInstanceIdentity answered with another key
	CLOUD_GCE_OTHER_KEY_BOOT=gcp-worker
	cloud_cluster "$ns" "$csp" 2>"$work/cluster.err"
	cp_ip=$(node_field control-plane-0 2) w_ip=$(node_field worker-0 2)
	cpn=$(name_of "$csp" control-plane-0) wn=$(name_of "$csp" worker-0)

	t=cluster_cloud_${csp}_control_plane_initialised_by_constel_init
	cid=$(sed -n 's/^Cluster ID *\([0-9a-f]\{64\}\)$/\1/p' "$logs/$csp-constel-init.out" 2>/dev/null)
	[ "$cp_rc" = 0 ] && [ "$cli_rc" = 0 ] && [ -n "$cid" ] && pass $t ||
		fail $t "boot $cp_rc, constel-init $cli_rc: $(tail -1 "$logs/$csp-constel-init.out" 2>/dev/null) $(tail_log "$csp-cp") $(tail -1 "$work/cluster.err")"
	t=cluster_cloud_${csp}_control_plane_identity_from_the_clouds_endpoint
	says "$csp-cp" "starting as PID 1 (csp $csp," && says "$csp-cp" "node: $cpn, control plane, $cp_ip" && pass $t ||
		fail $t "$(grep -a 'constel-agent: .*node: ' "$logs/$csp-cp.log" | tail -1 | cut -c1-160)"
	# kubeadm's controlPlaneEndpoint: the load balancer the platform layer gives (OpenStack's
	# user_data, the others' API; AWS's a DNS name)
	t=cluster_cloud_${csp}_kubeadm_init_endpoint
	lb=$CLOUD_LB
	[ "$csp" = aws ] && lb=$CLOUD_AWS_LB_NAME
	want_ep=$lb:6443
	[ "$(node_data "$csp-cp" init_controlPlaneEndpoint)" = "$want_ep" ] && pass "$t ($want_ep)" ||
		fail $t "got '$(node_data "$csp-cp" init_controlPlaneEndpoint)', want $want_ep"

	t=cluster_cloud_${csp}_worker_joins_at_the_load_balancer
	[ "$w_rc" = 0 ] && says "$csp-worker" "node: $wn, worker, $w_ip" &&
		says "$csp-worker" "join: IssueJoinTicket at $lb:30090 for $wn" &&
		grep -aq "ticket issued for $wn" "$logs/joinservice.log" &&
		[ "$(node_data "$csp-worker" join_endpoint)" = "$lb:6443" ] && pass $t ||
		fail $t "boot $w_rc: $(tail_log "$csp-worker") $(tail -1 "$work/cluster.err")"
	t=cluster_cloud_${csp}_role_join_endpoint_and_hash_from_the_cloud_not_the_command_line
	grep -q "constel\.csp=$csp" "$logs/$csp-worker.cmdline" &&
		! grep -Eq 'constel\.(join|role|init-secret-hash)=' "$logs/$csp-cp.cmdline" "$logs/$csp-worker.cmdline" \
			"$logs/$csp-worker-reboot.cmdline" &&
		says "$csp-worker" "IssueJoinTicket at $lb:30090" &&
		pass $t || fail $t "an override on the command line ($(cat "$logs/$csp-worker.cmdline" 2>/dev/null)), or no join at $lb:30090"
	t=cluster_cloud_${csp}_nodes_say_what_they_took_from_the_clouds_api
	if api_says "$csp" "$cpn" "$wn" "$lb"; then pass $t; else fail $t "$api_why"; fi
	t=cluster_cloud_${csp}_worker_rejoins_after_a_reboot_its_data_intact
	[ "$wr_rc" = 0 ] && says "$csp-worker-reboot" "rejoin: IssueRejoinTicket at $lb:30090" &&
		[ -n "$(node_data "$csp-worker" marker_new)" ] &&
		[ "$(node_data "$csp-worker-reboot" marker_found)" = "$(node_data "$csp-worker" marker_new)" ] && pass $t ||
		fail $t "boot $wr_rc: $(tail_log "$csp-worker-reboot") $(tail -1 "$work/cluster.err")"
	case $csp in
	azure)
		t=cluster_cloud_azure_every_boot_reports_ready_with_the_goal_states_incarnation
		reports=0
		for b in azure-cp azure-worker azure-worker-reboot; do
			says "$b" 'azure: reported Ready to the wireserver (incarnation 21)' &&
				grep -q '"state": "Ready"' "$logs/$b.fake" && reports=$((reports + 1))
		done
		[ $reports = 3 ] && pass $t || fail $t "$reports of 3 boots reported Ready"
		[ "$CLOUD_VARIANT" = azure-sev-snp ] && azure_sev_snp
		;;
	aws)
		t=cluster_cloud_aws_lease_mtu_9001
		says aws-worker "net: eth0 $w_ip/16 router $NETNS_HOST mtu 9001 (DHCP" && pass $t ||
			fail $t "$(grep -a 'constel-agent: .*net: ' "$logs/aws-worker.log" | head -3 | cut -c1-160 | tr '\n' ' ')"
		[ "$CLOUD_VARIANT" = aws-nitro-tpm ] && aws_nitro_tpm
		;;
	gcp)
		t=cluster_cloud_gcp_state_disk_found_by_its_device_name_on_virtio_scsi
		says gcp-cp 'disk: /dev/sd[a-z]* is the state disk' && says gcp-worker-reboot 'disk: /dev/sd[a-z]* is the state disk' &&
			! grep -q 'constel.state-disk' "$logs/gcp-cp.cmdline" && pass $t ||
			fail $t "$(grep -a 'constel-agent: .*disk: ' "$logs/gcp-cp.log" | head -2 | cut -c1-160 | tr '\n' ' ')"
		t=cluster_cloud_gcp_lease_is_a_32_with_its_router_on_link_and_mtu_1460
		says gcp-worker "net: eth0 $w_ip/32 router $NETNS_HOST mtu 1460 (DHCP" && pass $t ||
			fail $t "$(grep -a 'constel-agent: .*net: ' "$logs/gcp-worker.log" | head -3 | cut -c1-160 | tr '\n' ' ')"
		[ "$CLOUD_VARIANT" = gcp-sev-es ] && gcp_sev_es
		;;
	esac
	no_secrets "$csp"
	cloud_kill_jobs
	netns_down "$ns"
	ns=
	cluster_stop 2>/dev/null
}

for csp in ${CLUSTER_CSPS:-openstack azure gcp aws}; do
	one_cloud "$csp"
done
