#!/bin/bash
# make bench: hostile peers (issue 16, item 7). serve-init on swtpm (qemu-vtpm), once idle and
# once under 200 hostile connections from 40 loopback addresses (tests/bench/hostile.py: idle,
# slowloris, garbage TLS records, half handshakes, HTTP/2 floods after a completed handshake),
# while the real CLI (from 127.0.0.1, constel-init apply) and then the Go interop peer run
# their init; in one run: their time to success, the server's CPU seconds (in the 5 s before
# the init and over its life) and peak RSS, attack against idle. Then the join client against
# silent, slow and garbage endpoints: CPU per round (min/median/max), against a healthy Go
# join service as the baseline.
# The same for 40 HTTP/2 floods alone (all of them get through the handshake).
# Admission (issue 23): the CLI's init under the cost attack (Init requests with a wrong init
# secret, 4 at a time on 40 connections from 10 addresses: a bcrypt check each) and under the
# memory attacks (complete 4 MiB messages without END_STREAM, 4 on each of 16 connections from
# 4 addresses; 4 connections from one address holding incomplete messages of almost 3 MiB, 47.75 MiB in all), against idle.
# HOSTILE_BENCH_ONLY=admission runs only these (and the idle baseline).
# Loopback only. Exits 1 when the CLI's init failed under a load (after printing everything).
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
init=$PWD/$BUILD/tools/constel-init
ROUNDS=${HOSTILE_ROUNDS:-3}
TIMEOUT=${HOSTILE_TIMEOUT:-45}
peer=$(tests/interop/build-atlspeer.sh 2>/dev/null) || peer=
work=$(mktemp -d /tmp/constel-hostile-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
. tests/bench/hostile-lib.sh
hostile_setup || { echo "bench: hostile: swtpm or constel-init prepare failed" >&2; exit 1; }

N=${HOSTILE_BENCH_N:-3} # interleaved repetitions of every serve-init run
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else printf "%.1fx", a / b }'; }
row() { printf '  %-48s %19s %19s %7s\n' "$@"; }

# run NAME CLIENT ATTACK I: one hostile_run (its files in $work/NAME_I); appends
# "rc time hold cpu rss vmpeak" to $work/NAME.runs; keeps the first failure's reason as
# NAME_why and the first run's load counts as NAME_load
run() {
	hostile_run "$1_$4" "$2" "$3" "$TIMEOUT"
	echo "$r_rc $r_time $r_hold $r_cpu $r_rss $r_vmpeak" >>"$work/$1.runs"
	[ "$4" = 1 ] && eval "$1_load=\$r_load"
	[ -n "$r_why" ] && [ -z "$(eval echo "\${$1_why:-}")" ] && eval "$1_why=\"run $4: \$r_why\""
	return 0
}
# med NAME FIELD: the median of FIELD (2 time, 3 hold, 4 cpu, 5 rss, 6 vmpeak) over NAME's runs
# (time: over its successful runs; "failed" when none succeeded)
med() {
	[ -f "$work/$1.runs" ] || { echo -; return; }
	awk -v f="$2" '$1 == 0 || f != 2 { print $f }' "$work/$1.runs" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "failed" }'
}
# cell NAME FIELD: "median (min-max)", with "k/N failed" for the time of failed runs
cell() {
	[ -f "$work/$1.runs" ] || { echo -; return; }
	local f
	f=$(awk '$1 != 0' "$work/$1.runs" | wc -l)
	awk -v f="$2" '$1 == 0 || f != 2 { print $f }' "$work/$1.runs" | sort -g |
		awk -v failed="$f" -v n="$N" -v time="$([ "$2" = 2 ] && echo 1)" '{ v[NR] = $1 }
		END { if (!NR) { print "failed " failed "/" n; exit }
			s = sprintf(time || v[1] < 100 ? "%.2f (%.2f-%.2f)" : "%d (%d-%d)", v[int((NR + 1) / 2)], v[1], v[NR])
			if (failed) s = s " " failed "/" n " failed"
			print s }'
}
# cmp IDLE ATTACK FIELD LABEL: one row, the ratio of the medians
cmp() {
	local a b
	a=$(med "$1" "$3")
	b=$(med "$2" "$3")
	row "$4" "$(cell "$1" "$3")" "$(cell "$2" "$3")" \
		"$(case "$a$b" in *failed* | *-*) echo - ;; *) ratio "$b" "$a" ;; esac)"
}
ONLY=${HOSTILE_BENCH_ONLY:-}
for i in $(seq "$N"); do
	run cli_idle cli 0 "$i"
	HOSTILE_HOLD=8 HOSTILE_CONNS=40 HOSTILE_SOURCES=10 HOSTILE_KINDS=badinit run cli_cost cli 1 "$i"
	HOSTILE_HOLD=10 HOSTILE_CONNS=16 HOSTILE_SOURCES=4 HOSTILE_KINDS=bigmsg run cli_mem cli 1 "$i"
	HOSTILE_HOLD=6 HOSTILE_CONNS=4 HOSTILE_SOURCES=1 HOSTILE_KINDS=fill run cli_fill cli 1 "$i"
	[ "$ONLY" = admission ] && continue
	run cli_attack cli 1 "$i"
	HOSTILE_CONNS=40 HOSTILE_KINDS=flood run cli_flood cli 1 "$i"
	if [ -n "$peer" ]; then
		run go_idle go 0 "$i"
		run go_attack go 1 "$i"
	fi
done
ok() { [ -f "$work/$1.runs" ] && awk '$1 != 0 { exit 1 }' "$work/$1.runs" && echo 0 || echo 1; }
cli_attack_rc=$(ok cli_attack)
cli_flood_rc=$(ok cli_flood)
cli_cost_rc=$(ok cli_cost)
cli_mem_rc=$(ok cli_mem)
cli_fill_rc=$(ok cli_fill)
[ "$ONLY" = admission ] && cli_attack_rc=0 cli_flood_rc=0

echo "bench: hostile admission: serve-init on swtpm (qemu-vtpm), the CLI's init (from 127.0.0.1) idle"
echo "       against: wrong init secrets (4 at a time on 40 connections from 10 addresses, each a"
echo "       bcrypt check; the init after 8 s of it); complete 4 MiB messages without END_STREAM"
echo "       (4 on each of 16 connections from 4 addresses); 4 connections from one address holding"
echo "       incomplete messages of almost 3 MiB; $N interleaved runs of each, median (min-max), ratio attack / idle"
row "" "idle (baseline)" attack ratio
cmp cli_idle cli_cost 2 "wrong secrets: constel-init apply (s)"
cmp cli_idle cli_cost 3 "  serve-init CPU in the 8 s before the init (s)"
cmp cli_idle cli_cost 4 "  serve-init CPU over its life (s)"
cmp cli_idle cli_cost 5 "  serve-init peak RSS (VmHWM, KiB)"
cmp cli_idle cli_mem 2 "complete 4 MiB messages: constel-init apply (s)"
cmp cli_idle cli_mem 4 "  serve-init CPU over its life (s)"
cmp cli_idle cli_mem 5 "  serve-init peak RSS (VmHWM, KiB)"
cmp cli_idle cli_fill 2 "one address fills the budget: constel-init apply (s)"
cmp cli_idle cli_fill 4 "  serve-init CPU over its life (s)"
cmp cli_idle cli_fill 5 "  serve-init peak RSS (VmHWM, KiB)"
[ -n "${cli_cost_why:-}" ] && echo "  CLI under wrong secrets: $cli_cost_why"
[ -n "${cli_mem_why:-}" ] && echo "  CLI under complete messages: $cli_mem_why"
[ -n "${cli_fill_why:-}" ] && echo "  CLI while one address fills the budget: $cli_fill_why"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^badinit:/) { sub(/^badinit:/, "", $i); gsub(/,/, " ", $i); print "  wrong secrets (run 1): " $i } }' <<<"${cli_cost_load:-}"
echo "  serve-init under wrong secrets (run 1): $(grep -c 'invalid init secret' "$work/cli_cost_1/server.log") secrets checked"
fig=$BUILD/bench/figures-hostile.txt
mkdir -p "$BUILD/bench"
if [ "$ONLY" = admission ]; then
	{
		echo "hostile_n=$N"
		for k in cli_idle cli_cost cli_mem cli_fill; do
			echo "hostile_${k}_time_s=$(med $k 2)"
			echo "hostile_${k}_cpu_s=$(med $k 4)"
			echo "hostile_${k}_rss_kb=$(med $k 5)"
		done
	} >"$fig"
	[ "$cli_cost_rc" = 0 ] && [ "$cli_mem_rc" = 0 ] && [ "$cli_fill_rc" = 0 ]
	exit
fi
echo

echo "bench: hostile peers: serve-init on swtpm (qemu-vtpm), idle against $HOSTILE_CONNS hostile connections"
echo "       from $HOSTILE_SOURCES loopback addresses, each renewed when closed: idle, slowloris (1 byte/s),"
echo "       garbage TLS records, half handshakes (ClientHello, then silence), HTTP/2 floods after a"
echo "       completed TLS handshake (100 streams claiming 4 MiB each, SETTINGS, PING); the init"
echo "       starts after ${HOSTILE_HOLD} s of it; $N interleaved runs of each, median (min-max);"
echo "       the baseline is the idle run, the ratio attack / idle of the medians"
row "" "idle (baseline)" attack ratio
cmp cli_idle cli_attack 2 "constel-init apply, time to success (s)"
cmp cli_idle cli_attack 3 "serve-init CPU in the ${HOSTILE_HOLD} s before the init (s)"
cmp cli_idle cli_attack 4 "serve-init CPU over its life (s)"
cmp cli_idle cli_attack 5 "serve-init peak RSS (VmHWM, KiB)"
cmp cli_idle cli_attack 6 "serve-init VmPeak after the ${HOSTILE_HOLD} s (KiB)"
cmp cli_idle cli_flood 2 "40 HTTP/2 floods alone: constel-init apply (s)"
cmp cli_idle cli_flood 3 "  serve-init CPU in the ${HOSTILE_HOLD} s before the init (s)"
cmp cli_idle cli_flood 5 "  serve-init peak RSS (VmHWM, KiB)"
cmp cli_idle cli_flood 6 "  serve-init VmPeak after the ${HOSTILE_HOLD} s (KiB)"
if [ -n "$peer" ]; then
	cmp go_idle go_attack 2 "Go init-client (atlspeer), time to success (s)"
	cmp go_idle go_attack 4 "serve-init CPU over its life, Go run (s)"
	cmp go_idle go_attack 5 "serve-init peak RSS, Go run (KiB)"
else
	echo "  (Go interop peer not built: tests/interop/build-atlspeer.sh failed)"
fi
[ -n "${cli_idle_why:-}" ] && echo "  CLI idle: $cli_idle_why"
[ -n "${cli_attack_why:-}" ] && echo "  CLI under attack: $cli_attack_why"
[ -n "${cli_flood_why:-}" ] && echo "  CLI under the floods: $cli_flood_why"
[ -n "$peer" ] && [ -n "${go_attack_why:-}" ] && echo "  Go under attack: $go_attack_why"
# the load's own counts, summed over the kinds, and what the server logged about it
awk '{
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^load_cpu_s=/) { split($i, kv, "="); cpu = kv[2]; continue }
		sub(/^[a-z]*:/, "", $i); n = split($i, f, ",")
		for (j = 1; j <= n; j++) { split(f[j], kv, "="); s[kv[1]] += kv[2] }
	}
	printf "  load (CLI run 1): %d connects, %d closed by the server, %d failed, %d TLS handshakes done, %d h2 frames, generator CPU %s s\n",
		s["connected"], s["closed"], s["failed"], s["handshakes"], s["frames"], cpu
}' <<<"$cli_attack_load"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^flood:/) { sub(/^flood:/, "", $i); gsub(/,/, " ", $i); print "  floods alone (run 1): " $i } }' <<<"$cli_flood_load"
echo "  serve-init log under attack (run 1): $(grep -c 'refusing another' "$work/cli_attack_1/server.log") refusals (slots full), $(grep -c 'handshake failed' "$work/cli_attack_1/server.log") failed handshakes, $(wc -l <"$work/cli_attack_1/server.log") lines"

echo
echo "bench: join client (constel-agent join --timeout 5, dummy attestation), $ROUNDS rounds each;"
echo "       the ratio: its median CPU against the healthy Go join service's (the baseline, this run)"
printf '  %-40s %22s %22s %7s\n' "" "CPU s (min/med/max)" "round s (min/med/max)" "CPU x"
mmm() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f/%.3f/%.3f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }
base_cpu=
fig=$BUILD/bench/figures-hostile.txt
mkdir -p "$BUILD/bench"
{
	echo "hostile_n=$N"
	for k in cli_idle cli_attack cli_flood cli_cost cli_mem cli_fill go_idle go_attack; do
		[ -f "$work/$k.runs" ] || continue
		echo "hostile_${k}_time_s=$(med $k 2)"
		echo "hostile_${k}_cpu_s=$(med $k 4)"
		echo "hostile_${k}_rss_kb=$(med $k 5)"
	done
} >"$fig"
for kind in go silent slow garbage; do
	[ $kind = go ] && [ -z "$peer" ] && continue
	: >"$work/cpu.$kind"
	: >"$work/time.$kind"
	bad=0
	for _ in $(seq "$ROUNDS"); do
		hostile_join $kind 5
		echo "${r_cpu:-0}" >>"$work/cpu.$kind"
		echo "${r_time:-0}" >>"$work/time.$kind"
		{ [ $kind = go ] && [ "$r_rc" != 0 ]; } && bad=$((bad + 1))
	done
	case $kind in
	go) label="baseline: a healthy Go join service" ;;
	silent) label="silent endpoint (accepts, never sends)" ;;
	slow) label="slow endpoint (a TLS record, 1 byte/s)" ;;
	garbage) label="garbage endpoint (random TLS records)" ;;
	esac
	m=$(median "$work/cpu.$kind")
	[ $kind = go ] && base_cpu=$m
	printf '  %-40s %22s %22s %7s\n' "$label" "$(mmm <"$work/cpu.$kind")" "$(mmm <"$work/time.$kind")" \
		"$([ -n "$base_cpu" ] && ratio "$m" "$base_cpu" || echo -)"
	echo "hostile_join_${kind}_cpu_s=$m" >>"$fig"
	[ $bad = 0 ] || echo "  ($bad of the baseline rounds failed)"
done
echo "  (goal: under 0.1 s CPU per 5 s against a silent endpoint)"
[ "$cli_attack_rc" = 0 ] && [ "$cli_flood_rc" = 0 ] && [ "$cli_cost_rc" = 0 ] && [ "$cli_mem_rc" = 0 ] &&
	[ "$cli_fill_rc" = 0 ]
