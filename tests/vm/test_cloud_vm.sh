# A node boot per cloud shape, up to the join: build/initrd.img with constel.csp=gcp, azure,
# aws and openstack in the network namespace of qemu-tests/netns.sh, whose dnsmasq leases
# name 10.42.0.1 as the router (as a cloud's DHCP does) and where tests/cloud/fake_cloud.py
# answers at 169.254.169.254 and 168.63.129.16 (the namespace's own addresses). Each node must
# read its identity from its cloud's fake (the name and IP only the fake knows), open its
# state disk (OpenStack's /dev/vdb by the cloud's naming; the others' disks are shaped on
# recorded trees and, GCP's SCSI, in test_state_disk_vm.sh) and, on Azure, report Ready with
# the goal state's incarnation before the join; a boot that fails before the join on Azure
# reports NotReady with the reason.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
work=$(mktemp -d /tmp/constel-cloudvm-XXXXXX)
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
ns=constel-cloud-$$
trap 'netns_down "$ns"; cluster_stop 2>/dev/null; rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ]; then
	echo "# not root: cloud boots skipped"
	exit 0
fi
if ! cluster_setup >"$work/setup.out" 2>&1; then
	fail cloud_vm_setup "$(tail -2 "$work/setup.out")"
	exit 0
fi
if ! NETNS_ROUTER=$NETNS_HOST netns_up "$ns" >"$work/up.out" 2>&1 ||
	! ip -n "$ns" addr add 169.254.169.254/32 dev lo || ! ip -n "$ns" addr add 168.63.129.16/32 dev lo; then
	fail cloud_vm_netns "$(tail -2 "$work/up.out")"
	exit 0
fi
ip=$(node_field worker-0 2)
hash=$(cat "$work/ws/init-secret.bcrypt")

# boot CSP CASE KILL-ON [append words...]: one boot of worker-0 on CSP's fake
boot() {
	local csp=$1 case=$2 kill=$3 pid
	shift 3
	# ip execs python: $! is the fake's own PID
	ip netns exec "$ns" python3 tests/cloud/fake_cloud.py --csp "$csp" --log "$work/$case.fake" \
		--set name=worker-0 --set ip="$ip" --set incarnation=21 --set init_secret_hash="$hash" \
		>"$work/$case.ready" 2>"$work/$case.fake.err" &
	pid=$!
	for _ in $(seq 100); do [ -s "$work/$case.ready" ] && break; sleep 0.1; done
	[ -s "$work/$case.ready" ] || { fail "${case//-/_}_fake" "$(tail -1 "$work/$case.fake.err")"; return; }
	rm -f "$work/worker-0.raw"
	NODE_NETNS=$ns node_vm worker-0 "$case" 300 --initrd "$initrd" --kill-on "$kill" \
		--append "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min constel.csp=$csp constel.join=$NODE_LB:30090 constel.reboot-delay=1 $*"
	echo $? >"$work/$case.rc"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
says() { grep -aq "$2" "$logs/$1.log"; }

boot gcp cloud-gcp 'node: worker-0, ' constel.role=worker constel.state-disk=/dev/vdb
t=cloud_vm_gcp_identity_from_the_metadata_server
says cloud-gcp "node: worker-0, worker, $ip" && says cloud-gcp 'disk: /dev/vdb' && pass $t ||
	fail $t "$(tail_log cloud-gcp)"

boot azure cloud-azure 'azure: reported ' constel.state-disk=/dev/vdb
t=cloud_vm_azure_identity_from_imds_and_ready_before_the_join
if says cloud-azure "node: worker-0, worker, $ip" &&
	says cloud-azure 'azure: reported Ready to the wireserver (incarnation 21)' &&
	grep -q '"state": "Ready"' "$work/cloud-azure.fake"; then
	pass $t
else
	fail $t "$(tail_log cloud-azure)"
fi

boot azure cloud-azure-fail 'azure: reported ' constel.state-disk=/dev/nothing
t=cloud_vm_azure_boot_failing_before_the_join_reports_not_ready
if says cloud-azure-fail 'NotReady (ProvisioningFailed)' &&
	grep -q '"description": "no state disk: disk: state disk /dev/nothing: No such file or directory"' "$work/cloud-azure-fail.fake"; then
	pass $t
else
	fail $t "$(tail_log cloud-azure-fail)"
fi

boot aws cloud-aws 'node: i-0123456789abcdef0, ' constel.role=worker constel.state-disk=/dev/vdb
t=cloud_vm_aws_identity_from_imdsv2
says cloud-aws "node: i-0123456789abcdef0, worker, $ip" && pass $t || fail $t "$(tail_log cloud-aws)"

boot openstack cloud-openstack 'node: worker-0, '
t=cloud_vm_openstack_identity_and_vdb_by_its_naming
says cloud-openstack "node: worker-0, worker, $ip" && says cloud-openstack 'disk: /dev/vdb is the state disk' &&
	pass $t || fail $t "$(tail_log cloud-openstack)"
