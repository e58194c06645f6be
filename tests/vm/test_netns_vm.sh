#!/bin/bash
# The nodes' network namespace (qemu-tests/netns.sh) and vm.py --netns: the namespace comes
# up with only lo and its bridge, dnsmasq serving DHCP in it; one boot of the network probe
# (tests/vm/netprobe.c as /init) gets worker-0's lease by its MAC through the agent's DHCP
# client and reaches a server on the bridge address; the boot's tap device is gone after it;
# vm.py refuses a namespace with a link that could lead out and user-net options with
# --netns; netns_down leaves no namespace and no process behind. One boot, about 5 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
[ -x "$BUILD/vm/netprobe" ] || { fail netns_vm "$BUILD/vm/netprobe is missing (make $BUILD/vm/netprobe)"; exit 0; }
work=$(mktemp -d /tmp/constel-netns-XXXXXX)
logs=$work
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
ns=constel-test-$$
trap 'netns_down "$ns"; rm -rf "$work"' EXIT

if ! netns_up "$ns" "$NODE_LB" >"$work/up.out" 2>&1; then
	fail netns_up "$(tail -2 "$work/up.out")"
	exit 0
fi
links=$(ip -n "$ns" -o link show | awk -F': ' '{print $2}' | sort | tr '\n' ' ')
check netns_only_lo_and_bridge [ "$links" = "br0 lo " ]
check netns_no_route_out [ -z "$(ip -n "$ns" route show default)" ]

# a server on the bridge address: the probe's GET and connect
mkdir -p "$work/www" && echo '{"Name": "worker-0"}' >"$work/www/self"
netns_exec "$ns" python3 -m http.server --bind "$NETNS_HOST" --directory "$work/www" 8080 \
	>"$work/http.log" 2>&1 &
netns_listening "$ns" "$NETNS_HOST:8080" || fail netns_server "no listener on $NETNS_HOST:8080"
qemu-tests/mkinitrd.sh "$work/probe.gz" --init "$BUILD/vm/netprobe" \
	--modules "virtio_pci virtio_net" >"$work/mkinitrd.log" 2>&1 || fail netns_initrd "$(tail -1 "$work/mkinitrd.log")"
ip=$(node_field worker-0 2)
python3 qemu-tests/vm.py --initrd "$work/probe.gz" --log "$work/probe.log" --timeout 60 \
	--netns "$ns" --mac "$(netns_mac "$ip")" \
	--append "probe.n=2 probe.http=$NETNS_HOST:8080/self probe.tcp=$NETNS_HOST:8080" >"$work/probe.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -aq "net: eth0 $ip/16 router none (DHCP)" "$work/probe.log"; then
	pass netns_boot_dhcp_lease
else
	fail netns_boot_dhcp_lease "vm.py exit $rc: $(tail -1 "$work/probe.out"); $(grep -a 'net:' "$work/probe.log" | tail -1)"
fi
check netns_dnsmasq_lease grep -q " $(netns_mac "$ip") $ip worker-0 " "$work/netns-$ns/leases"
check netns_tap_removed [ -z "$(ip -n "$ns" -o link show type tun)" ]

# the guards: user-net options with --netns; a link that could lead out of the namespace
if python3 qemu-tests/vm.py --initrd "$work/probe.gz" --log "$work/x.log" --netns "$ns" \
	--hostfwd "tcp:127.0.0.1:1-:9000" >"$work/x.out" 2>&1; then
	fail netns_refuses_hostfwd "vm.py took --hostfwd with --netns"
else
	check netns_refuses_hostfwd grep -q 'no --hostfwd' "$work/x.out"
fi
ip -n "$ns" link add v0 type veth peer name v1
python3 qemu-tests/vm.py --initrd "$work/probe.gz" --log "$work/y.log" --netns "$ns" --timeout 30 >"$work/y.out" 2>&1
rc=$?
if [ $rc = 2 ] && grep -q 'could lead out' "$work/y.log"; then
	pass netns_refuses_veth
else
	fail netns_refuses_veth "vm.py exit $rc with a veth in the namespace: $(tail -1 "$work/y.out")"
fi
ip -n "$ns" link del v0

netns_down "$ns"
check netns_down_removes_namespace [ ! -e "/run/netns/$ns" ]
pid=$(cat "$work/netns-$ns/dnsmasq.bgpid" 2>/dev/null)
if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
	pass netns_down_stops_dnsmasq
else
	fail netns_down_stops_dnsmasq "dnsmasq (pid ${pid:-unknown}) still runs"
fi
