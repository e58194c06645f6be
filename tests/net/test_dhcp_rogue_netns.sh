# The first lease is taken only from the server whose offer the client requested (RFC 2131
# §4.4.1): dnsmasq serves the LAN, and a rogue server on the same link (tests/net/dhcp_rogue.py,
# on a packet socket) answers every REQUEST with an ACK of its own, another server identifier
# and another address. dnsmasq's first ACK is dropped by an nft rule in its namespace, so the
# rogue's ACKs are the only answer to the first REQUEST: a client that takes any ACK for its
# transaction ends up with the rogue's address and router. Each end in a namespace this test
# creates; nothing leaves them.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-dhcp-rogue-XXXXXX)
srv=constel-rogue-srv-$$
cli=constel-rogue-cli-$$
cleanup() {
	[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
	[ -n "${rogue:-}" ] && kill "$rogue" 2>/dev/null
	ip netns del "$srv" 2>/dev/null
	ip netns del "$cli" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
for tool in dnsmasq nft python3; do
	command -v $tool >/dev/null || { fail dhcp_rogue_setup "$tool missing"; exit 1; }
done

t=dhcp_first_lease_ignores_an_ack_from_a_server_it_did_not_request
mkdir -p "$work"
if ip netns add "$srv" && ip netns add "$cli" &&
	ip link add v0 netns "$srv" type veth peer name v1 netns "$cli" &&
	ip -n "$srv" addr add 192.168.77.1/24 dev v0 && ip -n "$srv" link set v0 up &&
	ip -n "$srv" link set lo up &&
	# dnsmasq's first DHCPACK (message type 5: option 53 comes first, at byte 242 of the
	# DHCP payload, 250 of the UDP datagram) is dropped; the counter says it was
	ip netns exec "$srv" nft -f - <<-'NFT' &&
		table ip constel_test {
			chain out {
				type filter hook output priority 0;
				udp sport 67 @th,2000,8 5 quota until 400 bytes counter drop
			}
		}
	NFT
	ip netns exec "$srv" dnsmasq --user=root --interface=v0 --bind-interfaces \
		--dhcp-range=192.168.77.50,192.168.77.60,255.255.255.0,1h \
		--dhcp-option=3,192.168.77.1 --port=0 --no-resolv --no-hosts \
		--dhcp-leasefile="$work/leases" --pid-file="$work/pid" --log-dhcp \
		--log-facility="$work/dnsmasq.log"; then
	ip netns exec "$srv" timeout 60 python3 tests/net/dhcp_rogue.py v0 --log "$work/rogue.log" \
		--seconds 55 &
	rogue=$!
	sleep 0.5
	ip netns exec "$cli" timeout 50 "$agent" -v -1 net-dhcp --iface v1 --timeout 40 \
		>"$work/out" 2>"$work/agent.log"
	rc=$?
	addr=$(ip -n "$cli" -4 -o addr show v1 | awk '{print $4}')
	route=$(ip -n "$cli" route show default)
	dropped=$(ip netns exec "$srv" nft list ruleset | grep -o "counter packets [0-9]*" | awk '{print $3}')
	if [ $rc = 0 ] && [ "$dropped" = 1 ] && grep -q '^ACK' "$work/rogue.log" &&
		[[ $addr == 192.168.77.5?/24 || $addr == 192.168.77.60/24 ]] &&
		[[ $route == "default via 192.168.77.1 dev v1"* ]] &&
		[ "$(grep -c 'not the offer we requested' "$work/agent.log")" = 1 ]; then
		pass $t
	else
		fail $t "exit $rc, addr '$addr', route '$route', dnsmasq ACKs dropped '$dropped', rogue: $(tr '\n' ' ' <"$work/rogue.log"); $(grep -v debug "$work/agent.log" | tail -2)"
	fi
else
	fail $t "namespace, nft or dnsmasq setup failed"
fi
