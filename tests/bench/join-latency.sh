#!/bin/bash
# make bench: handshake + one IssueJoinTicket over fresh connections, our client (static musl,
# as shipped) against Go's (crypto/tls + grpc-go in atlspeer), both against ONE run of the Go
# join service with the same request, in alternating rounds (a busy machine weighs on both
# alike). Prints the medians (the median of the round medians, with their min..max), the
# ratio, peak RSS, and where the time goes: the public-key steps of one client handshake, C
# (join_bench --crypto) and Go (tests/bench/gocrypto), timed in this run, and the floor they set.
set -eu
BUILD=${1:-build}
N=${JOIN_BENCH_N:-200}	     # connections per client
R=${JOIN_BENCH_ROUNDS:-10}   # alternating rounds
[ "$R" -le "$N" ] || R=$N
per=$(((N + R - 1) / R))
cd "$(dirname "$0")/../.."
. tests/lib.sh
peer=$(tests/interop/build-atlspeer.sh)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

start_peer server join-server --count $((2 * R * per)) ||
	{ echo "bench: the Go join service did not start: $(tail -1 "$work/server.out")" >&2; exit 1; }
port=$pport

# client NAME ROUND COMMAND...: one round of one client; appends "median maxrss" to NAME.runs
client() {
	local name=$1 round=$2
	shift 2
	if ! "$@" >"$work/$name.$round"; then
		echo "bench: the $name client failed: $(tail -1 "$work/$name.$round")" >&2
		exit 1
	fi
	sed -n 's/^BENCH median_us=\([0-9]*\) .*maxrss_kb=\([0-9]*\).*/\1 \2/p' "$work/$name.$round" >>"$work/$name.runs"
}
for r in $(seq "$R"); do
	client c "$r" "$BUILD/bench/join_bench" "127.0.0.1:$port" "$per" --as-go
	client go "$r" "$peer" join-bench --addr "127.0.0.1:$port" --count "$per"
done
wait

# stats FILE: "median min max maxrss" of the first column (rounds), the largest RSS
stats() {
	sort -n "$1" | awk '{ v[NR] = $1; if ($2 > rss) rss = $2 }
		END { printf "%d %d %d %d\n", v[int((NR + 1) / 2)], v[1], v[NR], rss }'
}
read -r c_us c_min c_max c_kb < <(stats "$work/c.runs")
read -r go_us go_min go_max go_kb < <(stats "$work/go.runs")
echo "bench: join latency, $((R * per)) sequential fresh connections per client in $R alternating rounds against one Go join service (aTLS handshake + IssueJoinTicket, same request)"
printf '  %-44s %10d us   (round medians %d..%d)\n' "constel-agent client (C, musl static), median" "$c_us" "$c_min" "$c_max"
printf '  %-44s %10d us   (round medians %d..%d)\n' "baseline: Go client (crypto/tls, grpc-go), median" "$go_us" "$go_min" "$go_max"
printf '  %-44s %10s\n' "ratio C / Go (goal <= 1.0)" "$(awk -v a="$c_us" -v b="$go_us" 'BEGIN { printf "%.2f", a / b }')"
printf '  %-44s %10d KiB\n' "constel-agent client, peak RSS" "$c_kb"
printf '  %-44s %10d KiB\n' "Go client, peak RSS" "$go_kb"
printf '  %-44s %10s\n' "ratio Go / C RSS (goal >= 4)" "$(awk -v a="$go_kb" -v b="$c_kb" 'BEGIN { printf "%.1fx", a / b }')"

# ---- where the time goes: the public-key steps of one client handshake ----
"$BUILD/bench/join_bench" --crypto 200 >"$work/c.crypto"
mkdir -p "$work/gopath"
if GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$work/gopath:/usr/share/gocode" GOCACHE="$work/gocache" \
	go build -o "$work/gocrypto" tests/bench/gocrypto/main.go 2>"$work/gocrypto.err"; then
	"$work/gocrypto" 200 >"$work/go.crypto"
else
	echo "  (Go's public-key figures unavailable: $(tail -1 "$work/gocrypto.err"))"
	: >"$work/go.crypto"
fi
awk -v c_us="$c_us" -v go_us="$go_us" '
	FNR == 1 { side = (FILENAME ~ /c\.crypto$/) ? "c" : "go" }
	$1 == "CRYPTO" { t[side, $2] = $3 }
	function row(label, step, nc, ng) {
		printf "    %-44s %2s x %7.1f us %4s x %6.1f us\n", label, nc, t["c", step], ng, t["go", step]
		pk_c += nc * t["c", step]; pk_go += ng * t["go", step]
	}
	END {
		print "  where the time goes: public-key steps of one client handshake (medians of 200, this run)"
		printf "    %-44s %-16s %s\n", "", "C: nettle 3.8.1", "Go: crypto/ecdsa"
		row("P-256 keygen (certificate key)", "p256_keygen", 1, 1)
		row("P-256 ECDSA sign (certificate, CertVerify)", "p256_ecdsa_sign", 2, 2)
		row("P-256 ECDSA verify (server sig; Go: + cert)", "p256_ecdsa_verify", 1, 2)
		row("ECDHE X25519 (C: hogweed)", "x25519_ecdhe", 1, 1)
		p256_c = pk_c - t["c", "x25519_ecdhe"]; p256_go = pk_go - t["go", "x25519_ecdhe"]
		printf "    %-44s      %7.0f us      %6.0f us\n", "public-key work per handshake", pk_c, pk_go
		printf "    %-44s      %7.0f us      %6.0f us\n", "median minus that (server, TCP, TLS, gRPC)", c_us - pk_c, go_us - pk_go
		printf "    (C does most of it while the server computes: the keygen and the nonces of both signatures during its\n"
		printf "     first flight (a presigned signature then takes %.1f us), the check of its signature during its answer\n", t["c", "p256_ecdsa_sign_presigned"]
		printf "     to our second; so the C median holds less than all of its public-key work)\n"
		m31 = t["c", "p256_keygen_bearssl_m31"] + 2 * t["c", "p256_ecdsa_sign_bearssl_m31"] + t["c", "p256_ecdsa_verify_bearssl_m31"]
		printf "    (before: P-256 on BearSSL 0.6 ec_p256_m31 keygen %.0f, sign %.0f, verify %.0f us = %.0f us a handshake, %.1fx hogweed'"'"'s %.0f us;\n", \
			t["c", "p256_keygen_bearssl_m31"], t["c", "p256_ecdsa_sign_bearssl_m31"], t["c", "p256_ecdsa_verify_bearssl_m31"], m31, m31 / p256_c, p256_c
		printf "     ECDHE on P-256 in BearSSL %.0f us, BearSSL c25519_m31 X25519 %.0f us)\n", t["c", "p256_ecdhe"], t["c", "x25519_bearssl_m31"]
		if (t["go", "p256_keygen"] > 0)
			printf "  floor: P-256 in nettle'"'"'s hogweed (C on mini-gmp, x86-64 assembly only for the modular reduction) costs %.0f us of the C client'"'"'s %d us (%.0f%%); Go'"'"'s assembly does its P-256 work in %.0f us: with Go'"'"'s P-256 the C client would need about %.0f us = %.2f x Go\n", \
				p256_c, c_us, 100 * p256_c / c_us, p256_go, c_us - p256_c + p256_go, (c_us - p256_c + p256_go) / go_us
	}' "$work/c.crypto" "$work/go.crypto"
# key figures for tests/bench/summary.sh: the medians and the public-key steps as timed above
{ printf 'join_c_us=%s\njoin_c_min_us=%s\njoin_c_max_us=%s\njoin_go_us=%s\njoin_go_min_us=%s\njoin_go_max_us=%s\n' "$c_us" "$c_min" "$c_max" "$go_us" "$go_min" "$go_max"
	awk 'FNR == 1 { s = (FILENAME ~ /c\.crypto$/) ? "c" : "go" } $1 == "CRYPTO" { print "join_crypto_" s "_" $2 "_us=" $3 }' "$work/c.crypto" "$work/go.crypto"; } >"$BUILD/bench/figures-join-latency.txt"
