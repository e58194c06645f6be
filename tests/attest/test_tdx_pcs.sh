# constel-verify tdx-quote without --tdx-collateral: the collateral fetched over https from a
# fake Intel PCS (tests/attest/fake_pcs.py, TLS with a CA this test makes, on 127.0.0.1)
# serving the test chain's collateral of tests/attest/tdx-test/ (make.py), into a cache: the
# quote verifies, a 429 is retried, the second run uses the cache (no request), a check after
# nextUpdate fetches again, a wrong CA bundle and an oversized body are refused with one line,
# an unknown FMSPC (PCS's 404) names the URL; the root CA CRL comes from the URL in the CRL
# distribution point of the issuer chain's root (a path of the test root's own); a 429's
# Retry-After is waited for, one over 30 s gives up at once.
. tests/lib.sh
. tests/attest/tdx_lib.sh
cv=$PWD/$BUILD/tools/constel-verify
tt=$PWD/tests/attest/tdx-test
work=$(mktemp -d /tmp/constel-tdxpcs-XXXXXX)
fake=
trap '[ -n "$fake" ] && kill "$fake" 2>/dev/null; rm -rf "$work"' EXIT

# a test CA and a server certificate for 127.0.0.1 (an address: the client checks the IP SAN)
mk() { openssl "$@" >/dev/null 2>&1; }
mk ecparam -name prime256v1 -genkey -noout -out "$work/ca.key" &&
	mk req -new -x509 -key "$work/ca.key" -subj "/CN=constel test PCS CA" -days 30 \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
		-out "$work/ca.pem" &&
	mk ecparam -name prime256v1 -genkey -noout -out "$work/srv.key" &&
	mk req -new -key "$work/srv.key" -subj "/CN=127.0.0.1" -out "$work/srv.csr" &&
	printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$work/srv.ext" &&
	mk x509 -req -in "$work/srv.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -set_serial 7 \
		-days 30 -extfile "$work/srv.ext" -out "$work/srv.pem" &&
	mk ecparam -name prime256v1 -genkey -noout -out "$work/other.key" &&
	mk req -new -x509 -key "$work/other.key" -subj "/CN=another CA" -days 30 \
		-addext basicConstraints=critical,CA:TRUE -out "$work/other.pem" ||
	{
		fail tdx_pcs_test_pki "openssl could not make the test CA"
		exit 0
	}

log=$work/pcs.log
: >"$log"
: >"$work/fake.out" # before the first read, however the fake is scheduled
tdx_test_folder "$work/pcs-files" # what the fake serves
python3 tests/attest/fake_pcs.py "$work/pcs-files" "$work/srv.pem" "$work/srv.key" "$log" >"$work/fake.out" 2>&1 &
fake=$!
port=$(logged_port "$work/fake.out") || {
	fail tdx_pcs_fake_started "$(cat "$work/fake.out")"
	exit 0
}
url=https://127.0.0.1:$port
cache=$work/cache
base=(--quote "$tt/quote.dat" --intel-root "$tt/root-test.pem" --pcs-certs "$url")
good=(--tdx-cache "$cache" --ca-bundle "$work/ca.pem")

run() { tdx_expect "$@"; }
reqs() { grep -c '^REQ' "$log"; }

# the first run: 429 once on the TCB info, retried; four URLs fetched; the folder in the cache
run tdx_pcs_fetch_ok 0 "OK tdx quote: tcb=UpToDate qe_tcb=UpToDate" "${base[@]}" "${good[@]}" --pcs "$url" \
	--at 2027-01-01T00:00:00Z
n=$(reqs)
[ "$n" = 5 ] && pass tdx_pcs_429_retried_once || fail tdx_pcs_429_retried_once "$n requests: $(cat "$log")"
grep -q '^REQ /tdx/certification/v4/tcb?fmspc=50806f000000$' "$log" &&
	grep -q '^REQ /sgx/certification/v4/pckcrl?ca=platform&encoding=der$' "$log" &&
	grep -q '^REQ /tdx/certification/v4/qe/identity$' "$log" &&
	pass tdx_pcs_urls || fail tdx_pcs_urls "$(cat "$log")"
# the root CA CRL from the URL of the root's CRL distribution point (the test root names
# https://certificates.trustedservices.intel.com/test/SGXRootCA-test.der, fetched from
# --pcs-certs; the fake serves it there only)
grep -q '^REQ /test/SGXRootCA-test.der$' "$log" && ! grep -q '^REQ /IntelSGXRootCA.der' "$log" &&
	pass tdx_pcs_root_crl_from_cdp || fail tdx_pcs_root_crl_from_cdp "$(cat "$log")"
d=$cache/50806f000000-platform
ok=1
for f in tcbinfo.json tcbinfo-issuer-chain.pem qeidentity.json qeidentity-issuer-chain.pem \
	pckcrl.der pckcrl-issuer-chain.pem rootcrl.der; do
	cmp -s "$d/$f" "$tt/$f" || ok=0
done
[ $ok = 1 ] && [ -z "$(ls -A "$cache" | grep -v '^50806f000000-platform$')" ] &&
	pass tdx_pcs_cache_folder_is_pcs_answers || fail tdx_pcs_cache_folder_is_pcs_answers "$(ls -la "$cache" "$d")"

# the second run: from the cache, no request (the base URL points nowhere to be sure)
run tdx_pcs_cache_reused 0 "OK tdx quote" "${base[@]}" "${good[@]}" --pcs "https://127.0.0.1:1" \
	--at 2027-02-01T00:00:00Z
n=$(reqs)
[ "$n" = 5 ] && pass tdx_pcs_cache_no_request || fail tdx_pcs_cache_no_request "$n requests"

# past nextUpdate (2027-06-01): fetched again (and then refused as out of date by the check)
run tdx_pcs_expired_cache_refetched 1 "out of date" "${base[@]}" "${good[@]}" --pcs "$url" \
	--at 2027-07-01T00:00:00Z
n=$(reqs)
[ "$n" = 9 ] && pass tdx_pcs_expired_cache_requests || fail tdx_pcs_expired_cache_requests "$n requests"
[ -z "$(ls -A "$cache" | grep -v '^50806f000000-platform$')" ] && pass tdx_pcs_no_temp_left ||
	fail tdx_pcs_no_temp_left "$(ls -A "$cache")"

# a CA bundle without the server's CA: refused with one line naming the URL
run tdx_pcs_wrong_ca_refused 1 "pcs: GET $url/tdx/certification/v4/tcb?fmspc=50806f000000" \
	"${base[@]}" --pcs "$url" --ca-bundle "$work/other.pem" --tdx-cache "$work/c2" \
	--at 2027-01-01T00:00:00Z
[ ! -e "$work/c2/50806f000000-platform" ] && pass tdx_pcs_wrong_ca_nothing_cached ||
	fail tdx_pcs_wrong_ca_nothing_cached "$(ls -A "$work/c2")"

# a TCB info over 256 KiB: refused
run tdx_pcs_body_over_bound 1 "pcs: GET $url/big/tdx/certification/v4/tcb" "${base[@]}" \
	--ca-bundle "$work/ca.pem" --pcs "$url/big" --tdx-cache "$work/c3" --at 2027-01-01T00:00:00Z

# an FMSPC PCS does not know: its 404 with the URL
run tdx_pcs_unknown_fmspc 1 "/none/tdx/certification/v4/tcb?fmspc=50806f000000: HTTP 404" \
	"${base[@]}" --ca-bundle "$work/ca.pem" --pcs "$url/none" --tdx-cache "$work/c4" --at 2027-01-01T00:00:00Z

# --tdx-collateral still wins: no request
n0=$(reqs)
run tdx_pcs_folder_needs_no_pcs 0 "OK tdx quote" "${base[@]}" "${good[@]}" --pcs "$url" \
	--tdx-collateral "$tt" --at 2027-01-01T00:00:00Z
[ "$(reqs)" = "$n0" ] && pass tdx_pcs_folder_no_request || fail tdx_pcs_folder_no_request "$(reqs) requests"

# three runs at once on an empty cache: each prints OK, one folder is left and no temporary one
c5=$work/c5
pids=()
for i in 1 2 3; do
	"$cv" tdx-quote "${base[@]}" --ca-bundle "$work/ca.pem" --pcs "$url" --tdx-cache "$c5" \
		--at 2027-01-01T00:00:00Z >"$work/par$i.out" 2>&1 &
	pids+=($!)
done
ok=1
for i in 1 2 3; do
	wait "${pids[$((i - 1))]}" && grep -q "^OK tdx quote" "$work/par$i.out" || ok=0
done
[ $ok = 1 ] && [ "$(ls -A "$c5")" = 50806f000000-platform ] && pass tdx_pcs_parallel_runs ||
	fail tdx_pcs_parallel_runs "$(cat "$work"/par*.out; ls -A "$c5")"

# nobody listening: retried (1 + 2 + 4 s of back-off), then one line naming the URL
run tdx_pcs_unreachable_retried 1 "pcs: GET https://127.0.0.1:1/tdx/certification/v4/tcb?fmspc=50806f000000: dial 127.0.0.1:1: Connection refused after 4 tries" \
	"${base[@]}" --ca-bundle "$work/ca.pem" --pcs https://127.0.0.1:1 --tdx-cache "$work/c6" \
	--at 2027-01-01T00:00:00Z

# Retry-After: 3 on a 429 is waited for (the fake logs EARLY for a retry within those 3 s)
run tdx_pcs_retry_after_ok 0 "OK tdx quote" "${base[@]}" --ca-bundle "$work/ca.pem" \
	--pcs "$url/slow" --tdx-cache "$work/c7" --at 2027-01-01T00:00:00Z
n=$(grep -c '^REQ /slow/tdx/certification/v4/tcb' "$log")
! grep -q '^EARLY' "$log" && [ "$n" = 2 ] && pass tdx_pcs_retry_after_honoured ||
	fail tdx_pcs_retry_after_honoured "$n TCB info requests: $(grep '/slow/' "$log")"
# Retry-After: 3600 is more than the client waits: one line at once, one request
run tdx_pcs_retry_after_too_long 1 "HTTP 429 with Retry-After 3600 s, more than the 30 s" \
	"${base[@]}" --ca-bundle "$work/ca.pem" --pcs "$url/long" --tdx-cache "$work/c8" \
	--at 2027-01-01T00:00:00Z
n=$(grep -c '^REQ /long/' "$log")
[ "$n" = 1 ] && pass tdx_pcs_retry_after_too_long_one_request ||
	fail tdx_pcs_retry_after_too_long_one_request "$n requests"

# constel-joinservice --tdx-prefetch: the listed platform's collateral is in the cache before
# it listens (the first join of that platform then makes no request); a current cache is used
# as it is; a malformed list is a usage error.
js=$PWD/$BUILD/tools/constel-joinservice
if "$PWD/$BUILD/tools/constel-init" --workspace "$work/ws" prepare >/dev/null 2>&1 &&
	printf 'ab%.0s' $(seq 32) >"$work/msalt" && echo '{}' >"$work/m.json" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$work/kca.key" -out "$work/kca.crt" -subj /CN=kubernetes -days 1 >/dev/null 2>&1; then
	jsargs=(--listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json"
		--measurement-salt "$work/msalt" --ca-cert "$work/kca.crt" --ca-key "$work/kca.key"
		--api-endpoint 10.42.1.100:6443 --attestation azure-tdx --measurements "$work/m.json"
		--intel-root "$tt/root-test.pem" --pcs "$url" --pcs-certs "$url"
		--ca-bundle "$work/ca.pem" --tdx-cache "$work/c9")
	# start_js NAME ARGS...: the join service until it listens or exits, at most 60 s (the
	# prefetch comes first; a loaded machine is slow); its log in $work/NAME.log
	start_js() {
		local name=$1 pid
		shift
		: >"$work/$name.log"
		"$js" "${jsargs[@]}" "$@" >"$work/$name.log" 2>&1 &
		pid=$!
		for _ in $(seq 600); do
			grep -q "listening on" "$work/$name.log" && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	}
	n0=$(reqs)
	start_js js1 --tdx-prefetch 50806f000000-platform
	ok=1
	for f in $tdx_files; do cmp -s "$work/c9/50806f000000-platform/$f" "$tt/$f" || ok=0; done
	grep -q "TDX collateral of 50806f000000-platform fetched from PCS into $work/c9/50806f000000-platform" "$work/js1.log" &&
		grep -q "listening on" "$work/js1.log" && [ $ok = 1 ] && [ $(($(reqs) - n0)) -ge 4 ] &&
		pass tdx_pcs_joinservice_prefetch || fail tdx_pcs_joinservice_prefetch "$(cat "$work/js1.log")"
	n0=$(reqs)
	start_js js2 --tdx-prefetch 50806f000000-platform
	grep -q "TDX collateral of 50806f000000-platform current in" "$work/js2.log" && [ "$(reqs)" = "$n0" ] &&
		pass tdx_pcs_joinservice_prefetch_cached || fail tdx_pcs_joinservice_prefetch_cached "$(cat "$work/js2.log")"
	# an unknown FMSPC: one warning, the service listens all the same
	start_js js3 --tdx-prefetch 00606a000000-processor
	grep -q "TDX collateral of 00606a000000-processor not prefetched (its first join fetches it): pcs: GET .*HTTP 404" "$work/js3.log" &&
		grep -q "listening on" "$work/js3.log" &&
		pass tdx_pcs_joinservice_prefetch_failure_warns || fail tdx_pcs_joinservice_prefetch_failure_warns "$(cat "$work/js3.log")"
	out=$("$js" "${jsargs[@]}" --tdx-prefetch 50806F000000-platform 2>&1)
	[ $? = 2 ] && [[ "$out" == *"is not FMSPC-CA"* ]] && pass tdx_pcs_joinservice_prefetch_usage ||
		fail tdx_pcs_joinservice_prefetch_usage "$out"
else
	fail tdx_pcs_joinservice_setup "constel-init prepare or openssl failed"
fi
