# Hostile peers (issue 16, item 7), with generous bounds: serve-init on swtpm (qemu-vtpm)
# under 200 hostile connections from 40 loopback addresses (idle, slowloris, garbage TLS
# records, half handshakes, HTTP/2 floods after a completed handshake; tests/bench/hostile.py)
# still lets the real CLI (constel-init apply, from 127.0.0.1) initialise the node, and its
# CPU, peak RSS and reserved memory stay bounded; the same under 40 HTTP/2 floods alone
# (which all reach the HTTP/2 layer); 20 idle connections cost it almost nothing; the join
# client does not spin against endpoints that accept TCP and then stay silent, trickle or
# send garbage. Then the CPU checks again beside two CPU hogs (stress-ng --cpu 2, or two shell
# loops without it), as on a machine that does other work (issue 29).
#
# The CPU bound under load is a ratio, not CPU seconds: serve-init's CPU in the 5 s hold window
# per CPU second the attacker (hostile.py, one Python process) spent over its run. CPU seconds
# alone measured the attacker's speed as much as the server (2.5-2.8 s in 5 s on an idle 2-core
# machine, 0.4-0.7 s on a busy one, same code). On a loaded 2-core machine the ratio was
# 0.27-0.34 (0.09-0.15 beside the hogs); a server that spends 50 us more per received HTTP/2
# frame (about 10x its own cost) measured 1.02 and 1.14 and fails. A server that spins in poll
# (timeout 0) is caught by the idle check (1.32 s in 5 s against 0.1); here it reaches 0.35-0.57,
# since the Python attacker is the costlier side. Loopback only; the whole test is bounded
# (under 5 minutes at worst, about 2 minutes when all passes). The figures against an idle
# baseline are in make bench (tests/bench/hostile.sh).
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
init=$PWD/$BUILD/tools/constel-init
work=$(mktemp -d /tmp/constel-hostile-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
. tests/bench/hostile-lib.sh

HOSTILE_HOLD=5
MAX_INIT_S=30       # the CLI's init under the mixed load (idle: well under 1 s)
MAX_FLOOD_INIT_S=20 # the CLI's init under the HTTP/2 floods alone
BUSY_INIT_S=60      # either init beside the two CPU hogs (a busy shared 2-core machine: 10-30 s)
MAX_CPU_RATIO=1.0   # serve-init's CPU in the hold window per attacker CPU second (busy 2 cores: 0.2-0.3)
MIN_LOAD_CPU=0.5    # the ratio's denominator at least this (a starved attacker sends little)
MAX_RSS_KB=65536    # serve-init's peak RSS under the load (idle: about 22 MiB)
MAX_VM_KB=262144    # serve-init's VmPeak (heap reserved, touched or not) under the load (idle: 2 MiB)
MAX_IDLE_CPU=0.1    # 20 idle connections, CPU seconds per 5 s (issue 16, done when; a spin: 1.3)
MAX_JOIN_CPU=0.5    # the join client, CPU seconds per 5 s round against a hostile endpoint

if ! hostile_setup; then
	fail hostile_peers "swtpm or constel-init prepare did not start"
	exit 0
fi

refusals() { grep -c 'refusing another' "$work/$1/server.log"; }

# cpu_ratio: serve-init's CPU in the hold window ($r_hold) per CPU second of the attacker
# (load_cpu_s of $r_load, at least $MIN_LOAD_CPU); sets r_lcpu and r_ratio, fails above the bound.
cpu_ratio() {
	r_lcpu=$(sed -n 's/.*load_cpu_s=\([0-9.]*\).*/\1/p' <<<"$r_load")
	r_ratio=$(awk -v a="$r_hold" -v l="${r_lcpu:-0}" -v m=$MIN_LOAD_CPU 'BEGIN { printf "%.2f", a / (l > m ? l : m) }')
	[ -n "$r_lcpu" ] && awk -v r="$r_ratio" -v m=$MAX_CPU_RATIO 'BEGIN { exit !(r <= m) }'
}

# busy_start / busy_stop: two CPU hogs beside the test, bounded in time; stopped by PID.
busy=()
busy_start() {
	if command -v stress-ng >/dev/null; then
		stress-ng --cpu 2 --timeout 180s --quiet >/dev/null 2>&1 &
		busy=($!)
	else
		for _ in 1 2; do
			timeout 180 bash -c 'while :; do :; done' &
			busy+=($!)
		done
	fi
}
busy_stop() {
	[ ${#busy[@]} = 0 ] && return
	kill -TERM "${busy[@]}" 2>/dev/null
	for p in "${busy[@]}"; do wait_pid "$p" 10 >/dev/null; done
	busy=()
}
trap 'busy_stop; kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

# cpu_checks SUFFIX: the CPU checks (the mixed load, the floods, idle connections, the join
# client against a garbage endpoint), their names ending in SUFFIX; memory and the init times
# only without a suffix.
cpu_checks() {
	local sfx=$1 t ok init_s=$MAX_INIT_S flood_s=$MAX_FLOOD_INIT_S
	[ -n "$sfx" ] && init_s=$BUSY_INIT_S flood_s=$BUSY_INIT_S
	t=hostile_cli_init_succeeds_under_200_hostile_connections$sfx
	hostile_run attack$sfx cli 1 $init_s
	ok=$?
	if [ $ok = 0 ] && awk -v a="$r_time" -v m=$init_s 'BEGIN { exit !(a < m) }'; then
		pass "$t (${r_time} s)"
	else
		fail $t "${r_why:-took $r_time s}; the server refused $(refusals attack$sfx) connections; load: $r_load"
	fi

	t=hostile_serve_init_cpu_per_attacker_cpu_stays_bounded_under_the_load$sfx
	if cpu_ratio; then
		pass "$t ($r_hold s CPU in ${HOSTILE_HOLD} s, the attacker's ${r_lcpu} s: $r_ratio)"
	else
		fail $t "$r_hold s CPU in ${HOSTILE_HOLD} s of load, the attacker's ${r_lcpu:-unknown} s: $r_ratio (bound $MAX_CPU_RATIO)"
	fi

	if [ -z "$sfx" ]; then
		t=hostile_serve_init_peak_rss_stays_bounded_under_the_load
		if [ -n "$r_rss" ] && [ "$r_rss" -le $MAX_RSS_KB ]; then
			pass "$t ($r_rss KiB)"
		else
			fail $t "peak RSS ${r_rss:-unknown} KiB (bound $MAX_RSS_KB)"
		fi

		t=hostile_serve_init_reserves_bounded_memory_under_the_load
		if [ -n "$r_vmpeak" ] && [ "$r_vmpeak" -gt 0 ] && [ "$r_vmpeak" -le $MAX_VM_KB ]; then
			pass "$t ($r_vmpeak KiB)"
		else
			fail $t "VmPeak ${r_vmpeak:-unknown} KiB after ${HOSTILE_HOLD} s of load (bound $MAX_VM_KB): heap for what peers claim"
		fi
	fi

	t=hostile_cli_init_succeeds_under_40_http2_floods$sfx
	HOSTILE_CONNS=40 HOSTILE_KINDS=flood hostile_run flood$sfx cli 1 $flood_s
	ok=$?
	if [ $ok = 0 ] && awk -v a="$r_time" -v m=$flood_s 'BEGIN { exit !(a < m) }'; then
		pass "$t (${r_time} s)"
	else
		fail $t "${r_why:-took $r_time s}; the server refused $(refusals flood$sfx) connections; load: $r_load"
	fi

	t=hostile_serve_init_cpu_and_memory_stay_bounded_under_http2_floods$sfx
	if cpu_ratio && [ -n "$r_vmpeak" ] && [ "$r_vmpeak" -gt 0 ] && [ "$r_vmpeak" -le $MAX_VM_KB ] &&
		[ -n "$r_rss" ] && [ "$r_rss" -le $MAX_RSS_KB ]; then
		pass "$t ($r_hold s CPU in ${HOSTILE_HOLD} s, the attacker's ${r_lcpu} s: $r_ratio; VmPeak $r_vmpeak KiB, peak RSS $r_rss KiB)"
	else
		fail $t "$r_hold s CPU in ${HOSTILE_HOLD} s, the attacker's ${r_lcpu:-unknown} s: $r_ratio (bound $MAX_CPU_RATIO), VmPeak ${r_vmpeak:-unknown} KiB (bound $MAX_VM_KB), peak RSS ${r_rss:-unknown} KiB (bound $MAX_RSS_KB)"
	fi

	t=hostile_20_idle_connections_cost_serve_init_under_0.1_s_per_5_s$sfx
	HOSTILE_CONNS=20 HOSTILE_KINDS=idle hostile_run idle20$sfx none 1 10
	if awk -v a="$r_hold" -v m=$MAX_IDLE_CPU 'BEGIN { exit !(a < m) }'; then
		pass "$t ($r_hold s)"
	else
		fail $t "$r_hold s CPU in ${HOSTILE_HOLD} s with 20 idle connections"
	fi
}

cpu_checks ""

for kind in silent slow garbage; do
	t=hostile_join_client_does_not_spin_against_a_${kind}_endpoint
	hostile_join $kind 5
	if [ "$r_rc" != 0 ] && [ -n "$r_cpu" ] && awk -v a="$r_cpu" -v m=$MAX_JOIN_CPU 'BEGIN { exit !(a <= m) }'; then
		pass "$t ($r_cpu s CPU in a $r_time s round)"
	else
		fail $t "join exit $r_rc, ${r_cpu:-unknown} s CPU in a ${r_time:-?} s round (bound $MAX_JOIN_CPU)"
	fi
done

# The same CPU checks beside two CPU hogs: the bounds must hold on a machine that does other work.
busy_start
cpu_checks _beside_two_cpu_hogs
t=hostile_join_client_does_not_spin_against_a_garbage_endpoint_beside_two_cpu_hogs
hostile_join garbage 5
if [ "$r_rc" != 0 ] && [ -n "$r_cpu" ] && awk -v a="$r_cpu" -v m=$MAX_JOIN_CPU 'BEGIN { exit !(a <= m) }'; then
	pass "$t ($r_cpu s CPU in a $r_time s round)"
else
	fail $t "join exit $r_rc, ${r_cpu:-unknown} s CPU in a ${r_time:-?} s round (bound $MAX_JOIN_CPU)"
fi
busy_stop
