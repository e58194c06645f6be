# The lease in the node's own loop (`constel-agent node --dhcp IFACE`: net_up as PID 1 runs
# it, then the node's flow, here waiting for a metadata server that never answers, i.e. in
# node_wait), against Debian's dnsmasq in a network namespace pair this test makes (no
# traffic leaves them). Lease 2 min, T1 3 s, T2 70 s; an nft rule in the server's namespace
# drops what reaches port 67.
# - The RENEW at T1 is lost; node_wait must retry it (RFC 2131 §4.4.5: half the time to T2,
#   at least 60 s: at ~63 s) and then REBIND at T2, which gets the ACK (the rule gone).
# - While that renewal runs (its packet socket open), 10 s of a UDP flood to the node's
#   address and another port: the socket's BPF filter keeps it out of PID 1, whose CPU time
#   over the flood stays under 0.5 s (unfiltered, every packet is read and parsed).
# - No DHCP server at all: the node waits for a lease; SIGPWR (a poweroff) ends the wait at
#   once (within 3 s), with one line.
# - Another server (a responder of this test's, server identifier 192.168.79.2) answers the
#   RENEW with an ACK in place of the lease's server, now gone: it is ignored (one line), the
#   lease is not renewed by it.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/test/constel-agent
work=$(mktemp -d /tmp/constel-dhcpn-XXXXXX)
srv=constel-dhcpn-srv-$$
cli=constel-dhcpn-cli-$$
cleanup() {
	[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
	ip netns del "$srv" 2>/dev/null
	ip netns del "$cli" 2>/dev/null
}
trap 'kill $(jobs -p) 2>/dev/null; cleanup; rm -rf "$work"' EXIT
for tool in dnsmasq nft python3; do
	command -v $tool >/dev/null || { fail dhcp_node_setup "$tool missing"; exit 1; }
done

setup() {
	cleanup
	rm -f "$work/pid" "$work/leases"
	ip netns add "$srv" && ip netns add "$cli" &&
		ip link add v0 netns "$srv" type veth peer name v1 netns "$cli" &&
		ip -n "$srv" addr add 192.168.79.1/24 dev v0 && ip -n "$srv" link set v0 up &&
		ip -n "$srv" link set lo up
}
dnsmasq_start() {
	ip netns exec "$srv" dnsmasq --user=root --interface=v0 --bind-interfaces --port=0 \
		--dhcp-range=192.168.79.50,192.168.79.60,255.255.255.0,2m \
		--dhcp-option=option:T1,3 --dhcp-option=option:T2,70 --dhcp-option=3,192.168.79.1 \
		--no-resolv --no-hosts --dhcp-leasefile="$work/leases" --pid-file="$work/pid" \
		--log-dhcp --log-facility="$work/dnsmasq.log" || return 1
	for _ in $(seq 50); do [ -s "$work/pid" ] && return 0; sleep 0.1; done
	return 1
}
# node: the node in the client's namespace, its log in $work/node.log ($node_pid)
node() {
	rm -rf "$work/root" "$work/n.img"
	truncate -s 64M "$work/n.img"
	ip netns exec "$cli" "$agent" -v -1 node --root "$work/root" --state-disk "$work/n.img" \
		--attestation dummy --metadata http://127.0.0.1:1 --interval 2 --dhcp v1 \
		>"$work/node.out" 2>"$work/node.log" &
	node_pid=$!
}
# until PATTERN [SECONDS]: until the node's log has a line matching PATTERN
until_log() {
	for _ in $(seq $((${2:-30} * 10))); do grep -q "$1" "$work/node.log" && return 0; sleep 0.1; done
	return 1
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
hz=$(getconf CLK_TCK)

t=dhcp_node_loop_retries_a_lost_renew_then_rebinds
t2=dhcp_node_renewal_flood_costs_pid1_no_cpu
if setup && dnsmasq_start; then
	node
	until_log 'DHCP lease 192.168.79.[56][0-9]/24 for 120 s' 30
	# from now on the server hears nothing: the RENEW at T1 and its retry are lost
	ip netns exec "$srv" nft -f - <<-'NFT'
		table ip constel_test {
			chain in {
				type filter hook input priority 0;
				udp dport 67 counter drop
			}
		}
	NFT
	until_log 'DHCPREQUEST sent (renewing)' 10
	addr=$(ip -n "$cli" -4 -o addr show v1 | awk '{print $4}')
	sleep 1
	c0=$(cpu $node_pid)
	ip netns exec "$srv" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end, n, msg = time.time() + 10, 0, b"x" * 64
while time.time() < end:
    for _ in range(100):
        s.sendto(msg, (sys.argv[1], 9999))
    n += 100
print(n)' "${addr%/*}" >"$work/flood" 2>/dev/null
	c1=$(cpu $node_pid)
	sent=$(cat "$work/flood")
	used=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
	echo "# flood: $sent packets in 10 s, the node's CPU over it: $used s"
	if [ "${sent:-0}" -ge 20000 ] && awk -v u="$used" 'BEGIN {exit !(u < 0.5)}'; then
		pass $t2
	else
		fail $t2 "$sent packets sent, the node used $used CPU-s"
	fi
	# the retry at ~63 s is lost too; then the server hears again, for the REBIND at 70 s
	until_log 'DHCPREQUEST sent (renewing)' 1
	for _ in $(seq 700); do
		[ "$(grep -c 'DHCPREQUEST sent (renewing)' "$work/node.log")" -ge 2 ] && break
		sleep 0.1
	done
	ip netns exec "$srv" nft delete table ip constel_test
	until_log 'DHCP lease 192.168.79.[56][0-9]/24 renewed for 120 s' 15
	renews=$(grep -c 'DHCPREQUEST sent (renewing)' "$work/node.log")
	rebinds=$(grep -c 'DHCPREQUEST sent (rebinding)' "$work/node.log")
	why=
	[ "$renews" -ge 2 ] || why="$why renews=$renews"
	[ "$rebinds" -ge 1 ] || why="$why rebinds=$rebinds"
	grep -q 'renewed for 120 s' "$work/node.log" || why="$why not-renewed"
	grep -q 'DHCPACK(v0) 192.168.79' "$work/dnsmasq.log" || why="$why no-ack"
	kill -0 $node_pid 2>/dev/null || why="$why node-gone"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(grep 'net:' "$work/node.log" | tail -3)"
	kill -TERM $node_pid
	wait_pid $node_pid 20
else
	fail $t "namespace or dnsmasq setup failed"
	fail $t2 "namespace or dnsmasq setup failed"
fi

t=dhcp_node_poweroff_during_a_dhcp_outage_acts_at_once
if setup; then
	node
	until_log 'DHCPDISCOVER 2 sent' 20
	kill -PWR $node_pid
	start=$(date +%s%N)
	wait_pid $node_pid 3
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	if [ $rc = 0 ] && grep -q 'the DHCP wait ended by a shutdown signal' "$work/node.log"; then
		pass $t
	else
		kill -KILL $node_pid 2>/dev/null
		fail $t "exit $rc after $ms ms; $(tail -2 "$work/node.log")"
	fi
else
	fail $t "namespace setup failed"
fi

t=dhcp_node_renewal_ack_from_another_server_is_ignored
if setup && dnsmasq_start; then
	node
	until_log 'DHCP lease 192.168.79.[56][0-9]/24 for 120 s' 30
	kill "$(cat "$work/pid")"
	sleep 0.3
	# the rogue: every REQUEST gets an ACK for its ciaddr from server 192.168.79.2
	ip netns exec "$srv" python3 -c '
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"v0")
s.bind(("0.0.0.0", 67))
s.settimeout(30)
while True:
    m, _ = s.recvfrom(2048)
    if len(m) < 240 or m[0] != 1:
        continue
    b = bytearray(236)
    b[0:4] = bytes([2, 1, 6, 0]); b[4:8] = m[4:8]; b[10:12] = m[10:12]
    b[16:20] = m[12:16]; b[28:44] = m[28:44]
    o = bytes([99, 130, 83, 99, 53, 1, 5, 54, 4, 192, 168, 79, 2, 51, 4, 0, 0, 0, 120,
               1, 4, 255, 255, 255, 0, 255])
    s.sendto(bytes(b) + o, ("255.255.255.255", 68))
    print("ack", flush=True)' >"$work/rogue.out" 2>&1 &
	rogue=$!
	until_log 'DHCPREQUEST sent (renewing)' 10
	sleep 2
	why=
	grep -q ack "$work/rogue.out" || why="$why the-rogue-did-not-answer"
	grep -q 'DHCPACK from server 192.168.79.2, not the lease.s: ignored' "$work/node.log" || why="$why not-ignored"
	grep -q 'renewed for' "$work/node.log" && why="$why renewed-by-the-rogue"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(grep 'net:' "$work/node.log" | tail -2)"
	kill $rogue 2>/dev/null
	kill -TERM $node_pid
	wait_pid $node_pid 20
else
	fail $t "namespace or dnsmasq setup failed"
fi
