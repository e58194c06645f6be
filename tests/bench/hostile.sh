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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b < 0.01) print "-"; else printf "%.1fx", a / b }'; }
outcome() { [ "$1" = 0 ] && echo "$2" || echo "failed"; }
row() { printf '  %-48s %11s %11s %8s\n' "$@"; }

# run NAME CLIENT ATTACK: one hostile_run, its figures kept as NAME_*
run() {
	hostile_run "$1" "$2" "$3" "$TIMEOUT"
	local n=$1
	eval "${n}_rc=$r_rc ${n}_time=$r_time ${n}_hold=$r_hold ${n}_cpu=$r_cpu ${n}_rss=$r_rss ${n}_vm=$r_vmpeak"
	eval "${n}_why=\$r_why ${n}_load=\$r_load"
}
run cli_idle cli 0
run cli_attack cli 1
HOSTILE_CONNS=40 HOSTILE_KINDS=flood run cli_flood cli 1
if [ -n "$peer" ]; then
	run go_idle go 0
	run go_attack go 1
fi

echo "bench: hostile peers: serve-init on swtpm (qemu-vtpm), idle against $HOSTILE_CONNS hostile connections"
echo "       from $HOSTILE_SOURCES loopback addresses, each renewed when closed: idle, slowloris (1 byte/s),"
echo "       garbage TLS records, half handshakes (ClientHello, then silence), HTTP/2 floods after a"
echo "       completed TLS handshake (100 streams claiming 4 MiB each, SETTINGS, PING); the init"
echo "       starts after ${HOSTILE_HOLD} s of it"
row "" idle attack ratio
row "constel-init apply, time to success (s)" "$(outcome "$cli_idle_rc" "$cli_idle_time")" \
	"$(outcome "$cli_attack_rc" "$cli_attack_time")" \
	"$([ "$cli_attack_rc" = 0 ] && [ "$cli_idle_rc" = 0 ] && ratio "$cli_attack_time" "$cli_idle_time" || echo -)"
row "serve-init CPU in the ${HOSTILE_HOLD} s before the init (s)" "$cli_idle_hold" "$cli_attack_hold" \
	"$(ratio "$cli_attack_hold" "$cli_idle_hold")"
row "serve-init CPU over its life (s)" "$cli_idle_cpu" "$cli_attack_cpu" "$(ratio "$cli_attack_cpu" "$cli_idle_cpu")"
row "serve-init peak RSS (VmHWM, KiB)" "$cli_idle_rss" "$cli_attack_rss" "$(ratio "$cli_attack_rss" "$cli_idle_rss")"
row "serve-init VmPeak after the ${HOSTILE_HOLD} s (KiB)" "$cli_idle_vm" "$cli_attack_vm" "$(ratio "$cli_attack_vm" "$cli_idle_vm")"
row "40 HTTP/2 floods alone: constel-init apply (s)" "$(outcome "$cli_idle_rc" "$cli_idle_time")" \
	"$(outcome "$cli_flood_rc" "$cli_flood_time")" \
	"$([ "$cli_flood_rc" = 0 ] && [ "$cli_idle_rc" = 0 ] && ratio "$cli_flood_time" "$cli_idle_time" || echo -)"
row "  serve-init CPU in the ${HOSTILE_HOLD} s before the init (s)" "$cli_idle_hold" "$cli_flood_hold" \
	"$(ratio "$cli_flood_hold" "$cli_idle_hold")"
row "  serve-init peak RSS (VmHWM, KiB)" "$cli_idle_rss" "$cli_flood_rss" "$(ratio "$cli_flood_rss" "$cli_idle_rss")"
row "  serve-init VmPeak after the ${HOSTILE_HOLD} s (KiB)" "$cli_idle_vm" "$cli_flood_vm" "$(ratio "$cli_flood_vm" "$cli_idle_vm")"
if [ -n "$peer" ]; then
	row "Go init-client (atlspeer), time to success (s)" "$(outcome "$go_idle_rc" "$go_idle_time")" \
		"$(outcome "$go_attack_rc" "$go_attack_time")" \
		"$([ "$go_attack_rc" = 0 ] && [ "$go_idle_rc" = 0 ] && ratio "$go_attack_time" "$go_idle_time" || echo -)"
	row "serve-init CPU over its life, Go run (s)" "$go_idle_cpu" "$go_attack_cpu" "$(ratio "$go_attack_cpu" "$go_idle_cpu")"
	row "serve-init peak RSS, Go run (KiB)" "$go_idle_rss" "$go_attack_rss" "$(ratio "$go_attack_rss" "$go_idle_rss")"
else
	echo "  (Go interop peer not built: tests/interop/build-atlspeer.sh failed)"
fi
[ -n "$cli_attack_why" ] && echo "  CLI under attack: $cli_attack_why"
[ -n "$cli_flood_why" ] && echo "  CLI under the floods: $cli_flood_why"
[ -n "$peer" ] && [ -n "$go_attack_why" ] && echo "  Go under attack: $go_attack_why"
# the load's own counts, summed over the kinds, and what the server logged about it
awk '{
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^load_cpu_s=/) { split($i, kv, "="); cpu = kv[2]; continue }
		sub(/^[a-z]*:/, "", $i); n = split($i, f, ",")
		for (j = 1; j <= n; j++) { split(f[j], kv, "="); s[kv[1]] += kv[2] }
	}
	printf "  load (CLI run): %d connects, %d closed by the server, %d failed, %d TLS handshakes done, %d h2 frames, generator CPU %s s\n",
		s["connected"], s["closed"], s["failed"], s["handshakes"], s["frames"], cpu
}' <<<"$cli_attack_load"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^flood:/) { sub(/^flood:/, "", $i); gsub(/,/, " ", $i); print "  floods alone: " $i } }' <<<"$cli_flood_load"
echo "  serve-init log under attack: $(grep -c 'refusing another' "$work/cli_attack/server.log") refusals (slots full), $(grep -c 'handshake failed' "$work/cli_attack/server.log") failed handshakes, $(wc -l <"$work/cli_attack/server.log") lines"

echo
echo "bench: join client (constel-agent join --timeout 5, dummy attestation), $ROUNDS rounds each"
printf '  %-40s %22s %22s\n' "" "CPU s (min/med/max)" "round s (min/med/max)"
mmm() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f/%.3f/%.3f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
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
	printf '  %-40s %22s %22s\n' "$label" "$(mmm <"$work/cpu.$kind")" "$(mmm <"$work/time.$kind")"
	[ $bad = 0 ] || echo "  ($bad of the baseline rounds failed)"
done
echo "  (goal: under 0.1 s CPU per 5 s against a silent endpoint)"
[ "$cli_attack_rc" = 0 ] && [ "$cli_flood_rc" = 0 ]
