# The nodes' network without QEMU's user networking: a network namespace made for the test
# (unique name, deleted by netns_down), holding only lo and a bridge with the host side's
# addresses (10.42.0.1/16, the metadata API's, and any others asked for); vm.py --netns adds a
# tap per VM to the bridge and runs QEMU inside. dnsmasq in the namespace is the DHCP server
# (no DNS: port=0, --no-resolv, no router option), handing each node of NODES its address by
# its MAC (netns_mac). Nothing in the namespace is routed anywhere: there is no other link.
# The host tools run inside with netns_exec and listen on the bridge's addresses.
# Source after tests/lib.sh (and lib-node.sh for NODES); needs work (a scratch folder).
#
#   netns_up NS [ADDR...]    makes NS (bridge 10.42.0.1/16 + ADDR/16), starts dnsmasq
#                            (NETNS_ROUTER=IP: the leases name IP as router, as a cloud's do;
#                            NETNS_DHCP_OPTS: more dnsmasq words, e.g. a cloud's lease options)
#   netns_mac IP             the MAC whose lease is IP (52:54:00:2a:C:D for 10.42.C.D)
#   netns_exec NS CMD...     CMD inside NS
#   netns_down NS            stops what runs inside (by PID), deletes NS; idempotent
#   netns_metadata NS        constel-metadata on 10.42.0.1:8080 inside, nodes told by source
#   netns_joinservice NS     the join service (lib-node.sh's arguments) on NODE_LB:30090

NETNS_BRIDGE=br0
NETNS_HOST=10.42.0.1

netns_mac() {
	local IFS=.
	set -- $1
	printf '52:54:00:2a:%02x:%02x\n' "$3" "$4"
}

netns_exec() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

netns_up() {
	local ns=$1 a n ip hosts=() d=$work/netns-$1
	shift
	mkdir -p "$d"
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up &&
		ip -n "$ns" link add "$NETNS_BRIDGE" type bridge forward_delay 0 stp_state 0 &&
		ip -n "$ns" addr add "$NETNS_HOST/16" dev "$NETNS_BRIDGE" || return 1
	for a in "$@"; do
		ip -n "$ns" addr add "$a/16" dev "$NETNS_BRIDGE" || return 1
	done
	ip -n "$ns" link set "$NETNS_BRIDGE" up || return 1
	for n in $NODES; do
		ip=${n##*:}
		hosts+=("--dhcp-host=$(netns_mac "$ip"),$ip,${n%%:*}")
	done
	# only the known MACs get a lease (static range); no DNS, no router, no resolv.conf read
	netns_exec "$ns" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
		--port=0 --interface="$NETNS_BRIDGE" --bind-interfaces --user=root \
		--dhcp-range=10.42.0.0,static,255.255.0.0,24h --dhcp-authoritative "${hosts[@]}" \
		--dhcp-option=3${NETNS_ROUTER:+,$NETNS_ROUTER} --dhcp-option=6 ${NETNS_DHCP_OPTS:-} \
		--dhcp-leasefile="$d/leases" --pid-file="$d/dnsmasq.pid" \
		--log-dhcp --log-facility="$d/dnsmasq.log" >"$d/dnsmasq.out" 2>&1 &
	echo $! >"$d/dnsmasq.bgpid"
	for _ in $(seq 50); do
		netns_exec "$ns" ss -Hlun 'sport = :67' 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	echo "dnsmasq did not start in $ns: $(tail -2 "$d/dnsmasq.out" "$d/dnsmasq.log" 2>/dev/null)" >&2
	return 1
}

netns_down() {
	local ns=$1 p
	[ -e "/run/netns/$ns" ] || return 0
	# everything inside was started by this test: its processes by PID, then the namespace
	for p in $(ip netns pids "$ns" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
	for _ in $(seq 50); do
		[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
		sleep 0.1
	done
	for p in $(ip netns pids "$ns" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null
	done
	ip netns del "$ns"
}

# netns_listening NS ADDR:PORT: 0 once something listens there (5 s)
netns_listening() {
	for _ in $(seq 50); do
		netns_exec "$1" ss -Hltn "src $2" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

netns_metadata() {
	local ns=$1 n sep= cfg=$work/netns-$1/metadata.json
	{
		printf '{"listen": "%s:8080", "init_secret_hash_file": "%s", "nodes": [' \
			"$NETNS_HOST" "$work/ws/init-secret.bcrypt"
		for n in $NODES; do
			printf '%s{"name": "%s", "role": "%s", "ip": "%s", "source": "%s"}' "$sep" \
				"${n%%:*}" "$(echo "$n" | cut -d: -f2)" "${n##*:}" "${n##*:}"
			sep=", "
		done
		printf ']}\n'
	} >"$cfg"
	netns_exec "$ns" "$tools/constel-metadata" --config "$cfg" >"$logs/metadata-$ns.log" 2>&1 &
	netns_listening "$ns" "$NETNS_HOST:8080" ||
		{ echo "metadata API did not start in $ns: $(tail -2 "$logs/metadata-$ns.log")" >&2; return 1; }
}

netns_joinservice() {
	local ns=$1
	shift
	js_args "$@"
	netns_exec "$ns" "$tools/constel-joinservice" --listen "$NODE_LB:30090" "${JS_ARGS[@]}" \
		>>"$logs/joinservice-$ns.log" 2>&1 &
	netns_listening "$ns" "$NODE_LB:30090" ||
		{ echo "join service did not start in $ns: $(tail -2 "$logs/joinservice-$ns.log")" >&2; return 1; }
}
