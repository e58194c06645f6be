#!/bin/bash
# make bench: joins per second that constel-joinservice sustains, 2 concurrent clients (our
# join client, each a fresh aTLS connection per join with a signed CSR and an SSH key), beside
# the Go interop join server (grpc-go, Go's crypto/tls) taking the same load in the same run.
# Both validate the dummy attestation (the clients have no TPM here) and check the CSR and the
# SSH key; ours also signs the kubelet and SSH host certificates and derives every key.
set -eu
BUILD=${1:-build}
N=${JOINSERVICE_BENCH_N:-100} # joins per client
cd "$(dirname "$0")/../.."
. tests/lib.sh
peer=$(tests/interop/build-atlspeer.sh)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$BUILD/tools/constel-init" --workspace "$work/ws" prepare >/dev/null
printf 'ab%.0s' $(seq 32) >"$work/msalt"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
	-subj /CN=kubernetes -days 1 >/dev/null 2>&1

# rate PORT: both clients at once; prints joins per second
rate() {
	local start end
	start=$(date +%s%N)
	"$BUILD/bench/join_bench" "127.0.0.1:$1" "$N" >"$work/c1" &
	local c1=$!
	"$BUILD/bench/join_bench" "127.0.0.1:$1" "$N" >"$work/c2" &
	local c2=$!
	wait $c1 && wait $c2 || { echo "bench: a client failed" >&2; exit 1; }
	end=$(date +%s%N)
	awk -v n=$((2 * N)) -v ns=$((end - start)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }'
}

"$BUILD/tools/constel-joinservice" --listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json" \
	--measurement-salt "$work/msalt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key" \
	--api-endpoint 10.42.1.100:6443 --attestation dummy 2>"$work/js.log" &
port=$(logged_port "$work/js.log")
ours=$(rate "$port")
"$peer" join-server --count $((2 * N)) >"$work/go.out" 2>&1 &
for _ in $(seq 50); do
	port=$(awk '/^LISTEN/{print $2}' "$work/go.out")
	[ -n "$port" ] && break
	sleep 0.1
done
go=$(rate "$port")
echo "bench: join service throughput, 2 concurrent clients, $N joins each (a fresh aTLS connection per join)"
printf '  %-44s %10d joins/s\n' "constel-joinservice (C, musl static)" "$ours"
printf '  %-44s %10d joins/s\n' "baseline: Go interop join server" "$go"
printf '  %-44s %10s\n' "ratio C / Go" "$(awk -v a="$ours" -v b="$go" 'BEGIN { printf "%.2f", a / b }')"
