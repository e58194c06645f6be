# The lease kept up as PID 1 keeps it (net-dhcp --keep), against Debian's dnsmasq in a network
# namespace pair this test makes (no traffic leaves them): RENEW at T1 (dnsmasq's T1 option
# set to 3 s), the address's lifetime from the lease; then a server that no longer knows the
# lease (restarted authoritative with another range): the NAK is one line and a new DISCOVER
# gets a new lease, never a silent stop.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-dhcpr-XXXXXX)
srv=constel-dhcpr-srv-$$
cli=constel-dhcpr-cli-$$
cleanup() {
	[ -f "$work/pid" ] && kill "$(cat "$work/pid")" 2>/dev/null
	ip netns del "$srv" 2>/dev/null
	ip netns del "$cli" 2>/dev/null
	rm -rf "$work"
}
trap 'kill $(jobs -p) 2>/dev/null; cleanup' EXIT
command -v dnsmasq >/dev/null || { fail dhcp_renew_setup "dnsmasq missing"; exit 1; }

# dnsmasq_start RANGE_START RANGE_END [ARGS...]: a DHCP server on v0, lease 2 min, T1 3 s, T2 5 s
# (the checks match the address by its tens: 50-59, then 70-80 for the new range)
dnsmasq_start() {
	local a=$1 b=$2
	shift 2
	rm -f "$work/pid"
	ip netns exec "$srv" dnsmasq --user=root --interface=v0 --bind-interfaces \
		--dhcp-range=192.168.78.$a,192.168.78.$b,255.255.255.0,2m \
		--dhcp-option=option:T1,3 --dhcp-option=option:T2,5 --dhcp-option=3,192.168.78.1 \
		--port=0 --no-resolv --no-hosts --dhcp-leasefile="$work/leases" --pid-file="$work/pid" \
		--log-dhcp --log-facility="$work/dnsmasq.log" "$@" || return 1
	for _ in $(seq 50); do [ -s "$work/pid" ] && return 0; sleep 0.1; done
	return 1
}

# got FILE: until net-dhcp printed its first lease there (up to 30 s)
got() {
	for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done
	return 1
}

setup() {
	mkdir -p "$work"
	ip netns add "$srv" && ip netns add "$cli" &&
		ip link add v0 netns "$srv" type veth peer name v1 netns "$cli" &&
		ip -n "$srv" addr add 192.168.78.1/24 dev v0 && ip -n "$srv" link set v0 up &&
		ip -n "$srv" link set lo up && dnsmasq_start 50 59
}

t=dhcp_lease_renewed_at_t1_with_its_lifetime
if setup; then
	ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 30 --keep 10 >"$work/out" 2>"$work/agent.log" &
	pid=$!
	got "$work/out"
	lft=$(ip -n "$cli" -4 -o addr show v1 | grep -o 'valid_lft [0-9]*sec' | grep -o '[0-9]*')
	wait_pid $pid 30
	rc=$?
	renewals=$(grep -c 'DHCP lease 192.168.78.5[0-9]/24 renewed for 120 s' "$work/agent.log")
	why=
	[ $rc = 0 ] || why="$why exit=$rc"
	[ -n "$lft" ] && [ "$lft" -le 120 ] && [ "$lft" -ge 100 ] || why="$why lifetime=$lft"
	# T1 3 s: renewed at ~3 s and ~6 s of the 9
	[ "$renewals" -ge 2 ] || why="$why renewals=$renewals"
	grep -q 'DHCPREQUEST(v0) 192.168.78.5' "$work/dnsmasq.log" || why="$why no-request"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -2 "$work/agent.log")"
else
	fail $t "namespace or dnsmasq setup failed"
fi

t=dhcp_lease_refused_at_renewal_is_one_line_and_a_new_lease
kill "$(cat "$work/pid")" 2>/dev/null
sleep 0.3
rm -f "$work/leases"
ip netns exec "$cli" ip addr flush dev v1
if dnsmasq_start 50 59; then
	ip netns exec "$cli" "$agent" net-dhcp --iface v1 --timeout 30 --keep 10 >"$work/out2" 2>"$work/agent2.log" &
	pid=$!
	got "$work/out2"
	# the server forgets the lease: another range, authoritative, so the renewal gets a NAK
	kill "$(cat "$work/pid")"
	sleep 0.3
	rm -f "$work/leases"
	dnsmasq_start 70 80 --dhcp-authoritative
	wait_pid $pid 30
	rc=$?
	why=
	[ $rc = 0 ] || why="$why exit=$rc"
	[ "$(grep -c 'DHCPNAK: the lease is given up' "$work/agent2.log")" = 1 ] || why="$why nak-lines"
	grep -q 'DHCP lease 192.168.78.[78][0-9]/24 granted for 120 s' "$work/agent2.log" || why="$why no-new-lease"
	ip -n "$cli" -4 -o addr show v1 | grep -q '192.168.78.[78][0-9]/24' || why="$why address"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(tail -3 "$work/agent2.log")"
else
	fail $t "dnsmasq restart failed"
fi
