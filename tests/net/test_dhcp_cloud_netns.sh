# The leases the clouds hand out, from Debian's dnsmasq in a network namespace pair this test
# makes (no traffic leaves them), taken by `constel-agent net-dhcp`, which applies them as the
# boot does; the result read back with `ip route` and `ip link`:
# - GCE: the address as a /32 (netmask 255.255.255.255), the router 10.128.0.1 reachable only
#   through option 121's routes `10.128.0.1/32 via 0.0.0.0` and `0.0.0.0/0 via 10.128.0.1`
#   (RFC 3442), MTU 1460 (option 26). Option 3 here names another router, which RFC 3442
#   says a client must ignore when 121 is present. The default route must work: a TCP
#   connection to an address of the server's namespace outside the lease goes through it. A renewal puts
#   back what was taken away (the routes and the MTU, removed by hand before T1).
# - AWS: a /20 with its router (option 3) and MTU 9001.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-dhcpc-XXXXXX)
srv=constel-dhcpc-srv-$$
cli=constel-dhcpc-cli-$$
cleanup() {
	[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
	ip netns del "$srv" 2>/dev/null
	ip netns del "$cli" 2>/dev/null
}
trap 'kill $(jobs -p) 2>/dev/null; cleanup; rm -rf "$work"' EXIT
command -v dnsmasq >/dev/null || { fail dhcp_cloud_setup "dnsmasq missing"; exit 1; }

# listen ADDR: a TCP listener in the server's namespace (accepts, closes) on ADDR:8080
listen() {
	ip netns exec "$srv" python3 -c '
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 8080)); s.listen(4); s.settimeout(60)
while True:
    c, _ = s.accept(); c.close()' "$1" &
	sleep 0.3
}
# reach ADDR: a TCP connection from the client's namespace to ADDR:8080 within 3 s
reach() { ip netns exec "$cli" timeout 3 bash -c "exec 3<>/dev/tcp/$1/8080" 2>/dev/null && echo ok; }

# setup SERVER-CIDR DNSMASQ-ARGS...: fresh namespaces, a veth pair, dnsmasq on v0
setup() {
	local cidr=$1
	shift
	cleanup
	rm -f "$work/pid" "$work/leases"
	ip netns add "$srv" && ip netns add "$cli" &&
		ip link add v0 netns "$srv" type veth peer name v1 netns "$cli" &&
		ip -n "$srv" link set v0 mtu 9001 && ip -n "$srv" addr add "$cidr" dev v0 &&
		ip -n "$srv" link set v0 up && ip -n "$srv" link set lo up || return 1
	ip netns exec "$srv" dnsmasq --user=root --interface=v0 --bind-interfaces --port=0 \
		--no-resolv --no-hosts --dhcp-leasefile="$work/leases" --pid-file="$work/pid" \
		--log-dhcp --log-facility="$work/dnsmasq.log" "$@" || return 1
	for _ in $(seq 50); do [ -s "$work/pid" ] && return 0; sleep 0.1; done
	return 1
}

t=dhcp_gce_lease_slash32_option121_mtu1460
if setup 10.128.0.1/20 --dhcp-range=10.128.0.50,10.128.0.60,2m \
	--dhcp-option=option:netmask,255.255.255.255 --dhcp-option=3,10.128.0.254 \
	--dhcp-option=121,10.128.0.1/32,0.0.0.0,0.0.0.0/0,10.128.0.1 --dhcp-option=26,1460 \
	--dhcp-option=option:T1,4 --dhcp-option=option:T2,100 &&
	ip -n "$srv" addr add 198.51.100.7/32 dev lo && listen 198.51.100.7; then
	ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 30 --keep 9 >"$work/out" \
		2>"$work/agent.log" &
	pid=$!
	for _ in $(seq 300); do [ -s "$work/out" ] && break; sleep 0.1; done
	addr=$(ip -n "$cli" -4 -o addr show v1 | awk '{print $4}')
	routes=$(ip -n "$cli" -4 route show | sort | tr '\n' ';')
	mtu=$(ip -n "$cli" -o link show v1 | grep -o 'mtu [0-9]*')
	ping=$(reach 198.51.100.7)
	why=
	[[ $addr == 10.128.0.[56]?/32 ]] || why="$why addr=$addr"
	[[ $routes == "10.128.0.1 dev v1 proto dhcp scope link"*";default via 10.128.0.1 dev v1 proto dhcp"* ]] ||
		why="$why routes=$routes"
	[ "$mtu" = "mtu 1460" ] || why="$why $mtu"
	[ "$ping" = ok ] || why="$why no-connection-through-the-default-route"
	grep -q "router 10.128.0.1 lease 120 mtu 1460" "$work/out" || why="$why out=$(cat "$work/out")"
	# what a renewal must put back (T1 4 s)
	ip -n "$cli" route flush dev v1 proto dhcp
	ip -n "$cli" link set v1 mtu 1500
	wait_pid $pid 30
	routes2=$(ip -n "$cli" -4 route show | sort | tr '\n' ';')
	mtu2=$(ip -n "$cli" -o link show v1 | grep -o 'mtu [0-9]*')
	[ "$routes2" = "$routes" ] || why="$why after-renewal-routes=$routes2"
	[ "$mtu2" = "mtu 1460" ] || why="$why after-renewal-$mtu2"
	grep -q 'renewed for 120 s' "$work/agent.log" || why="$why no-renewal"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -2 "$work/agent.log")"
else
	fail $t "namespace or dnsmasq setup failed"
fi

t=dhcp_aws_lease_mtu9001
if setup 172.31.0.1/20 --dhcp-range=172.31.0.50,172.31.0.60,255.255.240.0,1h \
	--dhcp-option=3,172.31.0.1 --dhcp-option=26,9001 && listen 172.31.0.1; then
	out=$(ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 30 2>"$work/agent2.log")
	rc=$?
	addr=$(ip -n "$cli" -4 -o addr show v1 | awk '{print $4}')
	route=$(ip -n "$cli" route show default)
	mtu=$(ip -n "$cli" -o link show v1 | grep -o 'mtu [0-9]*')
	ping=$(reach 172.31.0.1)
	if [ $rc = 0 ] && [[ $addr == 172.31.0.[56]?/20 ]] && [ "$mtu" = "mtu 9001" ] &&
		[[ $route == "default via 172.31.0.1 dev v1"* ]] && [ "$ping" = ok ] &&
		[[ $out == *"lease 3600 mtu 9001" ]]; then
		pass $t
	else
		fail $t "exit $rc, '$out', addr '$addr', route '$route', '$mtu', connection '$ping'; $(tail -2 "$work/agent2.log")"
	fi
else
	fail $t "namespace or dnsmasq setup failed"
fi
