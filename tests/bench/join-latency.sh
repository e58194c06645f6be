#!/bin/bash
# make bench: handshake + one IssueJoinTicket over fresh connections, our client (static musl,
# as shipped) against Go's (crypto/tls + grpc-go in atlspeer), each against its own run of
# the same Go join service, in one run. Prints the medians, their ratio and peak RSS.
set -eu
BUILD=${1:-build}
N=${JOIN_BENCH_N:-200}
cd "$(dirname "$0")/../.."
peer=$(tests/interop/build-atlspeer.sh)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

run() { # run NAME CLIENT-COMMAND...: starts a join service for N calls, runs the client
	local name=$1 port=
	shift
	"$peer" join-server --count "$N" >"$work/$name.server" 2>&1 &
	for _ in $(seq 50); do
		port=$(awk '/^LISTEN/{print $2}' "$work/$name.server")
		[ -n "$port" ] && break
		sleep 0.1
	done
	if ! "${@/PORT/$port}" >"$work/$name.out"; then
		echo "bench: the $name client failed: $(tail -1 "$work/$name.out")" >&2
		exit 1
	fi
	wait
	sed 's/.*median_us=\([0-9]*\) maxrss_kb=\([0-9]*\).*/\1 \2/' "$work/$name.out"
}

read -r c_us c_kb < <(run c "$BUILD/bench/join_bench" 127.0.0.1:PORT "$N")
read -r go_us go_kb < <(run go "$peer" join-bench --addr 127.0.0.1:PORT --count "$N")
echo "bench: join latency, $N sequential fresh connections (aTLS handshake + IssueJoinTicket)"
printf '  %-44s %10d us\n' "constel-agent client (C, musl static), median" "$c_us"
printf '  %-44s %10d us\n' "baseline: Go client (crypto/tls, grpc-go), median" "$go_us"
printf '  %-44s %10s\n' "ratio C / Go (goal <= 1.0)" "$(awk -v a="$c_us" -v b="$go_us" 'BEGIN { printf "%.2f", a / b }')"
printf '  %-44s %10d KiB\n' "constel-agent client, peak RSS" "$c_kb"
printf '  %-44s %10d KiB\n' "Go client, peak RSS" "$go_kb"
printf '  %-44s %10s\n' "ratio Go / C RSS (goal >= 4)" "$(awk -v a="$go_kb" -v b="$c_kb" 'BEGIN { printf "%.1fx", a / b }')"
