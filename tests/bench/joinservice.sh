#!/bin/bash
# make bench: joins per second that constel-joinservice sustains, 2 concurrent clients (our
# join client, each a fresh aTLS connection per join with a signed CSR and an SSH key), against
# the baseline: the Go interop join server (grpc-go, Go's crypto/tls) taking the same load in
# the same run, in JOINSERVICE_BENCH_ROUNDS (default 5) alternating rounds (a busy machine
# weighs on both alike). Prints the median (min-max) of the round rates and the ratio of the
# medians (with the min-max of the per-round ratios).
# Both validate the dummy attestation (the clients have no TPM here) and check the CSR and the
# SSH key; ours also signs the kubelet and SSH host certificates and derives every key.
# Key figures: $BUILD/bench/figures-joinservice.txt.
set -eu
BUILD=${1:-build}
N=${JOINSERVICE_BENCH_N:-100}     # joins per client, over all rounds
R=${JOINSERVICE_BENCH_ROUNDS:-5} # alternating rounds
[ "$R" -le "$N" ] || R=$N
per=$(((N + R - 1) / R))
cd "$(dirname "$0")/../.."
. tests/lib.sh
peer=$(tests/interop/build-atlspeer.sh)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$BUILD/bench"
"$BUILD/tools/constel-init" --workspace "$work/ws" prepare >/dev/null
printf 'ab%.0s' $(seq 32) >"$work/msalt"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
	-subj /CN=kubernetes -days 1 >/dev/null 2>&1

# rate PORT: both clients at once, $per joins each; prints joins per second
rate() {
	local start end
	start=$(date +%s%N)
	"$BUILD/bench/join_bench" "127.0.0.1:$1" "$per" >"$work/c1" &
	local c1=$!
	"$BUILD/bench/join_bench" "127.0.0.1:$1" "$per" >"$work/c2" &
	local c2=$!
	wait $c1 && wait $c2 || {
		echo "bench: a client failed against port $1; ours ($ours_port): $(tail -1 "$work/js.log"); Go ($go_port): $(tail -1 "$work/go.out")" >&2
		exit 1
	}
	end=$(date +%s%N)
	awk -v n=$((2 * per)) -v ns=$((end - start)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }'
}

"$BUILD/tools/constel-joinservice" --listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json" \
	--measurement-salt "$work/msalt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key" \
	--api-endpoint 10.42.1.100:6443 --attestation dummy 2>"$work/js.log" &
ours_port=$(logged_port "$work/js.log")
# go_server: a fresh Go join server for one round (it serves a bounded count of joins within
# its own time limit), warmed up by one join per client like ours; sets go_port
go_server() {
	start_peer go join-server --count $((2 * per + 2)) ||
		{ echo "bench: the Go join server did not start: $(tail -1 "$work/go.out")" >&2; exit 1; }
	go_pid=$!
	go_port=$pport
	per=1 rate "$go_port" >/dev/null
}
go_port=-
: >"$work/rounds"
# a warm-up join per client first, not counted (connections, caches, the first handshake)
per=1 rate "$ours_port" >/dev/null
for _ in $(seq "$R"); do
	o=$(rate "$ours_port")
	go_server
	g=$(rate "$go_port")
	wait "$go_pid" 2>/dev/null || true
	echo "$o $g" >>"$work/rounds"
done
# mmm COLUMN: "median min max" (column 3: the per-round ratio ours / Go)
mmm() {
	awk -v c="$1" '{ print (c == 3) ? $1 / $2 : $c }' "$work/rounds" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.2f %.2f %.2f\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
read -r o_med o_min o_max < <(mmm 1)
read -r g_med g_min g_max < <(mmm 2)
read -r _ q_min q_max < <(mmm 3)
ratio=$(awk -v a="$o_med" -v b="$g_med" 'BEGIN { printf "%.2f", a / b }')
echo "bench: join service throughput, 2 concurrent clients, $((R * per)) joins each in $R alternating rounds (a fresh aTLS connection per join; after one warm-up join each); median of the rounds (min..max)"
printf '  %-44s %10.0f joins/s  (%.0f..%.0f)\n' "constel-joinservice (C, musl static)" "$o_med" "$o_min" "$o_max"
printf '  %-44s %10.0f joins/s  (%.0f..%.0f)\n' "baseline: Go interop join server" "$g_med" "$g_min" "$g_max"
printf '  %-44s %10s\n' "ratio C / Go" "$ratio"
printf '  %-44s %10s\n' "  per round, min..max" "$q_min..$q_max"
# the service's admission limit on new handshakes (hostile peers, issue 16): both clients dial
# from 127.0.0.1, so ours can show no more than the per-source rate
src=$(awk '$2 == "ATTEST_SRC_RATE" { print $3 }' agent/flow/serve.c)
all=$(awk '$2 == "ATTEST_RATE" { print $3 }' agent/flow/serve.c)
[ -n "$src" ] && echo "  (constel-joinservice admits $src new handshakes/s per source address, $all/s in all" \
	"(agent/flow/serve.c ATTEST_SRC_RATE, ATTEST_RATE); both clients dial from 127.0.0.1: its figure" \
	"is that limit, not its cost)"
printf 'joinservice_c_per_s=%s\njoinservice_c_min_per_s=%s\njoinservice_c_max_per_s=%s\njoinservice_go_per_s=%s\njoinservice_go_min_per_s=%s\njoinservice_go_max_per_s=%s\njoinservice_ratio=%s\njoinservice_ratio_min=%s\njoinservice_ratio_max=%s\njoinservice_src_limit_per_s=%s\n' \
	"$o_med" "$o_min" "$o_max" "$g_med" "$g_min" "$g_max" "$ratio" "$q_min" "$q_max" "${src:-}" >"$BUILD/bench/figures-joinservice.txt"
