# Helpers of the TDX quote tests (test_tdx_quote.sh, test_tdx_pcs.sh); source after
# tests/lib.sh with $cv set to constel-verify. Not a test itself (tests/run.sh runs test_*).

tdx_tt=tests/attest/tdx-test
tdx_files="tcbinfo.json tcbinfo-issuer-chain.pem qeidentity.json qeidentity-issuer-chain.pem
pckcrl.der pckcrl-issuer-chain.pem rootcrl.der"

# tdx_test_folder DIR: a --tdx-collateral folder of the test chain (tdx-test/make.py), exactly
# the seven files, to change at will.
tdx_test_folder() {
	mkdir -p "$1" && for f in $tdx_files; do cp "$tdx_tt/$f" "$1/" || return 1; done
}

# tdx_prod_folder DIR VEC: the recorded production collateral of VEC (the evidence's tdx/
# folder) in the --tdx-collateral layout; fails when the evidence is not there.
tdx_prod_folder() {
	local vec=$2
	[ -f "$vec/tdx_prod_quote_SPR_E4.dat" ] && [ -f "$vec/sample_tcbInfo_response" ] || return 1
	mkdir -p "$1" &&
		cp "$vec/sample_tcbInfo_response" "$1/tcbinfo.json" &&
		cp "$vec/sample_qeIdentity_response" "$1/qeidentity.json" &&
		cp "$vec/pckcrl" "$1/pckcrl.der" &&
		cp "$vec/tcbinfo-issuer-chain.pem" "$vec/qeidentity-issuer-chain.pem" \
			"$vec/pckcrl-issuer-chain.pem" "$vec/rootcrl.der" "$1/"
}

# tdx_expect NAME CODE TEXT ARGS...: constel-verify tdx-quote ARGS exits CODE with TEXT in its
# output, and only one line when refused (CODE 1); the output in $out. 0 when it passed.
tdx_expect() {
	local name=$1 code=$2 text=$3 rc
	shift 3
	out=$("$cv" tdx-quote "$@" 2>&1)
	rc=$?
	if [ "$rc" != "$code" ]; then
		fail "$name" "exit $rc, not $code: $out"
	elif [[ "$out" != *"$text"* ]]; then
		fail "$name" "no '$text' in: $out"
	elif [ "$code" = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" != 1 ]; then
		fail "$name" "more than one line: $out"
	else
		pass "$name"
		[ -n "$VERBOSE" ] && printf '  %s\n' "$out"
		return 0
	fi
	return 1
}
