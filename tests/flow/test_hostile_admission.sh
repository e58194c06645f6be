# Admission by cost and memory shares (issue 23, item 1): serve-init on swtpm (qemu-vtpm)
# while hostile clients that complete the TLS handshake (tests/bench/hostile.py) send
# - Init requests with a wrong init secret from 40 connections on 10 addresses, 4 at a time on
#   each, a new one as soon as one is answered (each costs a bcrypt check): the real CLI
#   (constel-init apply, from 127.0.0.1) still initialises the node within a bound, and the
#   server spends at most a share of its time on them;
# - complete 4 MiB messages without END_STREAM on 16 connections (4 each): serve-init's peak
#   RSS stays bounded (the messages stay in the 48 MiB budget until their streams end);
# - from one address, 4 connections each holding 4 incomplete messages of almost 3 MiB (all
#   of the budget): the CLI, from another address, still initialises the node, and the
#   address holds no more than its share (serve-init's peak RSS).
# Loopback only; every run bounded (about 2 minutes in all). The figures against an idle
# baseline are in make bench (tests/bench/hostile.sh).
. tests/lib.sh
agent=${HOSTILE_AGENT:-$PWD/$BUILD/constel-agent}
init=$PWD/$BUILD/tools/constel-init
work=$(mktemp -d /tmp/constel-admission-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
. tests/bench/hostile-lib.sh

MAX_COST_INIT_S=30 # the CLI's init under the wrong secrets (idle: about 1 s)
MAX_COST_CPU=0.75  # serve-init's CPU seconds per second of the wrong secrets (admitted: 0.3)
MAX_MEM_RSS_KB=131072 # serve-init's peak RSS under the complete messages (idle: about 22 MiB)
MAX_FILL_INIT_S=30 # the CLI's init while one address fills the budget
MAX_FILL_RSS_KB=40960 # serve-init's peak RSS then (idle 23 MiB, mostly heap the messages reuse; the 24 MiB share of the address: 27 MiB; the whole budget: 51 MiB)

if ! hostile_setup; then
	fail hostile_admission "swtpm or constel-init prepare did not start"
	exit 0
fi

t=hostile_admission_cli_init_succeeds_under_wrong_init_secrets_from_40_connections
HOSTILE_HOLD=8 HOSTILE_CONNS=40 HOSTILE_SOURCES=10 HOSTILE_KINDS=badinit hostile_run cost cli 1 $MAX_COST_INIT_S
ok=$?
if [ $ok = 0 ] && awk -v a="$r_time" -v m=$MAX_COST_INIT_S 'BEGIN { exit !(a < m) }'; then
	pass "$t (${r_time} s; $(grep -c 'invalid init secret' "$work/cost/server.log") wrong secrets checked)"
else
	fail $t "${r_why:-took $r_time s}; load: $r_load"
fi

t=hostile_admission_wrong_init_secrets_cost_serve_init_a_bounded_share
if awk -v a="$r_hold" -v m=$MAX_COST_CPU 'BEGIN { exit !(a <= m * 8) }'; then
	pass "$t ($r_hold s CPU in 8 s)"
else
	fail $t "$r_hold s CPU in 8 s of wrong init secrets (bound $MAX_COST_CPU a second)"
fi

t=hostile_admission_complete_4_mib_messages_keep_serve_init_rss_bounded
HOSTILE_HOLD=10 HOSTILE_CONNS=16 HOSTILE_SOURCES=4 HOSTILE_KINDS=bigmsg hostile_run mem cli 1 $MAX_FILL_INIT_S
ok=$?
if [ -n "$r_rss" ] && [ "$r_rss" -le $MAX_MEM_RSS_KB ] && [ $ok = 0 ]; then
	pass "$t (peak RSS $r_rss KiB, the CLI in $r_time s)"
else
	fail $t "peak RSS ${r_rss:-unknown} KiB (bound $MAX_MEM_RSS_KB); ${r_why:-the CLI in $r_time s}; load: $r_load"
fi

t=hostile_admission_cli_init_succeeds_while_one_address_fills_the_budget
HOSTILE_HOLD=6 HOSTILE_CONNS=4 HOSTILE_SOURCES=1 HOSTILE_KINDS=fill hostile_run fill cli 1 $MAX_FILL_INIT_S
ok=$?
if [ $ok = 0 ] && awk -v a="$r_time" -v m=$MAX_FILL_INIT_S 'BEGIN { exit !(a < m) }'; then
	pass "$t (${r_time} s)"
else
	fail $t "${r_why:-took $r_time s}; the server log: $(grep -c 'memory' "$work/fill/server.log") memory lines; load: $r_load"
fi

t=hostile_admission_one_address_holds_no_more_than_its_memory_share
if [ -n "$r_rss" ] && [ "$r_rss" -le $MAX_FILL_RSS_KB ]; then
	pass "$t (peak RSS $r_rss KiB)"
else
	fail $t "peak RSS ${r_rss:-unknown} KiB (bound $MAX_FILL_RSS_KB); load: $r_load"
fi
