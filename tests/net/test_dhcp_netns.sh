# The DHCP client against a real DHCP server: Debian's dnsmasq on one end of a veth pair, the
# agent's net-dhcp on the other, each in a network namespace this test creates (no traffic
# leaves them). Then the same with the server's first OFFER dropped by an nft rule in its
# namespace: the client must get the lease by retransmitting (RFC 2131: ~4 s later).
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-dhcp-XXXXXX)
srv=constel-dhcp-srv-$$
cli=constel-dhcp-cli-$$
cleanup() {
	[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
	ip netns del "$srv" 2>/dev/null
	ip netns del "$cli" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap "" EXIT
for tool in dnsmasq nft; do
	command -v $tool >/dev/null || { fail dhcp_netns_setup "$tool missing (deps/host-packages.txt)"; exit 1; }
done

# setup [DROP_FIRST_OFFER]: fresh namespaces, a veth pair, dnsmasq serving 192.168.77.50-60
setup() {
	cleanup
	mkdir -p "$work"
	ip netns add "$srv" && ip netns add "$cli" &&
		ip link add v0 netns "$srv" type veth peer name v1 netns "$cli" &&
		ip -n "$srv" addr add 192.168.77.1/24 dev v0 && ip -n "$srv" link set v0 up &&
		ip -n "$srv" link set lo up || return 1
	if [ "${1:-}" = drop ]; then
		# "quota until": the rule drops until 500 bytes went through it, i.e. the first
		# OFFER only (~350 bytes; the counter counts what was dropped)
		ip netns exec "$srv" nft -f - <<-'NFT' || return 1
			table ip constel_test {
				chain out {
					type filter hook output priority 0;
					udp sport 67 quota until 500 bytes counter drop
				}
			}
		NFT
	fi
	ip netns exec "$srv" dnsmasq --user=root --interface=v0 --bind-interfaces \
		--dhcp-range=192.168.77.50,192.168.77.60,255.255.255.0,1h \
		--dhcp-option=3,192.168.77.1 --dhcp-option=6,192.168.77.53 --port=0 --no-resolv \
		--no-hosts --dhcp-leasefile="$work/leases" --pid-file="$work/pid" --log-dhcp \
		--log-facility="$work/dnsmasq.log" || return 1
	for _ in $(seq 50); do [ -s "$work/pid" ] && return 0; sleep 0.1; done
	return 1
}

t=dhcp_lease_from_dnsmasq_in_a_namespace
if setup; then
	out=$(ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 30 \
		--resolv-conf "$work/resolv.conf" 2>"$work/agent.log")
	rc=$?
	addr=$(ip -n "$cli" -4 -o addr show v1 | awk '{print $4}')
	route=$(ip -n "$cli" route show default)
	if [ $rc = 0 ] && [[ $addr == 192.168.77.5?/24 || $addr == 192.168.77.60/24 ]] &&
		[[ $route == "default via 192.168.77.1 dev v1"* ]] &&
		[[ $out == "v1 $addr router 192.168.77.1 lease 3600" ]] &&
		grep -qx 'nameserver 192.168.77.53' "$work/resolv.conf"; then
		pass $t
	else
		fail $t "exit $rc, '$out', addr '$addr', route '$route'; $(tail -2 "$work/agent.log")"
	fi
else
	fail $t "namespace or dnsmasq setup failed"
fi

t=dhcp_lost_first_offer_is_recovered_by_retransmission
if setup drop; then
	ip netns exec "$cli" "$agent" -v -1 net-dhcp --iface v1 --timeout 30 >"$work/out" 2>"$work/agent.log"
	rc=$?
	offers=$(grep -c 'DHCPOFFER' "$work/dnsmasq.log")
	ip netns exec "$srv" nft list ruleset >"$work/nft.out"
	dropped=$(grep -o "counter packets [0-9]*" "$work/nft.out" | awk "{print \$3}")
	discovers=$(grep -c 'DHCPDISCOVER [0-9]* sent' "$work/agent.log")
	if [ $rc = 0 ] && [ "$dropped" = 1 ] && [ "$offers" -ge 2 ] && [ "$discovers" -ge 2 ]; then
		pass $t
	else
		fail $t "exit $rc, $dropped dropped, $offers offers, $discovers discovers; $(tail -2 "$work/agent.log")"
	fi
else
	fail $t "namespace, nft or dnsmasq setup failed"
fi

t=dhcp_no_server_gives_one_line_after_the_timeout
if setup && kill "$(cat "$work/pid")"; then
	sleep 0.2
	ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 3 >"$work/out" 2>"$work/agent.log"
	rc=$?
	if [ $rc = 1 ] && [ "$(wc -l <"$work/agent.log")" = 1 ] &&
		grep -q 'no DHCP lease within 3 s' "$work/agent.log"; then
		pass $t
	else
		fail $t "exit $rc: $(cat "$work/agent.log")"
	fi
else
	fail $t "setup failed"
fi
