# constel-verify tdx-quote: the recorded production quote (Intel Sapphire Rapids) against
# Intel PCS's recorded collateral, in a folder this test assembles at run time from
# ${CONSTEL_VECTORS:-../shared/vectors}/tdx (missing evidence is a FAIL); the test chain's
# quote and collateral of tests/attest/tdx-test/ (make.py) trusted with --intel-root, for the
# answer OK, the TCB level step, the CRLs and the policy.
. tests/lib.sh
. tests/attest/tdx_lib.sh
cv=$PWD/$BUILD/tools/constel-verify
vec=${CONSTEL_VECTORS:-../shared/vectors}/tdx
tt=tests/attest/tdx-test
work=$(mktemp -d /tmp/constel-tdxq-XXXXXX)
trap 'rm -rf "$work"' EXIT

expect() { tdx_expect "$@"; }

prod=$work/prod
if ! tdx_prod_folder "$prod" "$vec"; then
	fail tdx_quote_vectors "no evidence in $vec (set CONSTEL_VECTORS)"
	exit 0
fi
q=$vec/tdx_prod_quote_SPR_E4.dat
at=2023-07-01T01:00:00Z

# Every check before the TCB level holds (PCK chain, CRLs and their issuer chain, QE report,
# quote signature, QE identity, TCB info signature, FMSPC, TDX module); Intel's level
# selection finds no level of the recorded TCB info that this platform reaches (docs/tdx.md),
# and the refusal names the platform's SVNs.
expect tdx_quote_prod_reaches_the_tcb_level 1 \
	"no TCB level that the platform reaches (PCK CPU SVN 3,3,2,2,2,1,0,2..., PCE SVN 11, TEE TCB SVN 03000400" \
	--quote "$q" --tdx-collateral "$prod" --at $at
expect tdx_quote_prod_after_next_update 1 "nextUpdate has passed at the time of the check: it is out of date" \
	--quote "$q" --tdx-collateral "$prod" --at 2023-07-09T00:00:00Z

# a changed byte of each collateral file is refused (a byte in the middle of each)
for f in tcbinfo.json qeidentity.json pckcrl.der rootcrl.der tcbinfo-issuer-chain.pem \
	qeidentity-issuer-chain.pem pckcrl-issuer-chain.pem; do
	bad=$work/bad-$f
	cp -r "$prod" "$bad"
	python3 - "$bad/$f" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
i = len(b) // 2
# a change that keeps PEM base64 and JSON text well-formed where it can
b[i] = ord('B') if b[i] == ord('A') else (ord('A') if chr(b[i]).isalnum() else b[i] ^ 1)
open(p, 'wb').write(b)
PY
	out=$("$cv" tdx-quote --quote "$q" --tdx-collateral "$bad" --at $at 2>&1)
	if [ $? = 1 ] && [[ "$out" != *"no TCB level that the platform reaches"* ]]; then
		pass "tdx_quote_prod_changed_byte_refused_$f"
	else
		fail "tdx_quote_prod_changed_byte_refused_$f" "$out"
	fi
done
rm "$prod/pckcrl-issuer-chain.pem"
expect tdx_quote_missing_file_one_line 1 "pckcrl-issuer-chain.pem is missing" \
	--quote "$q" --tdx-collateral "$prod" --at $at
head -c 300000 /dev/zero >"$prod/pckcrl-issuer-chain.pem"
expect tdx_quote_file_too_large 1 "pckcrl-issuer-chain.pem is larger than 16384 bytes" \
	--quote "$q" --tdx-collateral "$prod" --at $at

# the test chain (tdx-test/make.py): OK, the TCB level step, CRLs, the policy
ok=(--quote "$tt/quote.dat" --intel-root "$tt/root-test.pem" --at 2027-01-01T00:00:00Z)
tc=$work/test
tdx_test_folder "$tc"
expect tdx_quote_test_chain_ok 0 "OK tdx quote: tcb=UpToDate qe_tcb=UpToDate policy=none" \
	"${ok[@]}" --tdx-collateral "$tc"
expect tdx_quote_builtin_root_refuses_test_chain 1 "not the trusted Intel SGX Root CA" \
	--quote "$tt/quote.dat" --tdx-collateral "$tc" --at 2027-01-01T00:00:00Z
expect tdx_quote_test_after_next_update 1 "out of date" \
	--quote "$tt/quote.dat" --intel-root "$tt/root-test.pem" --at 2027-07-01T00:00:00Z \
	--tdx-collateral "$tc"
cp "$tt/tcbinfo-outofdate.json" "$tc/tcbinfo.json"
expect tdx_quote_test_tcb_level_out_of_date 1 "the platform's TCB level is OutOfDate" \
	"${ok[@]}" --tdx-collateral "$tc"
cp "$tt/tcbinfo-uptodate.json" "$tc/tcbinfo.json"
cp "$tt/pckcrl-revoked.der" "$tc/pckcrl.der"
expect tdx_quote_test_pck_revoked 1 "revoked" "${ok[@]}" --tdx-collateral "$tc"
cp "$tt/pckcrl.der" "$tc/pckcrl.der"
cp "$tt/tcbinfo-issuer-chain.pem" "$tc/pckcrl-issuer-chain.pem"
expect tdx_quote_test_pckcrl_chain_not_the_quotes 1 "pck crl issuer chain: not the quote's PCK CA" \
	"${ok[@]}" --tdx-collateral "$tc"
cp "$tt/pckcrl-issuer-chain.pem" "$tc/pckcrl-issuer-chain.pem"

# the policy (Constellation's attestationConfig fields for azure-tdx)
mrseam=$(python3 -c "import hashlib; print(hashlib.sha384(b'test MRSEAM').hexdigest())")
pol() { printf '%s\n' "$1" >"$work/policy.json"; }
pol "{\"qeSVN\": 0, \"pceSVN\": 0, \"teeTCBSVN\": \"03000500000000000000000000000000\", \"qeVendorID\": \"939a7233f79c4ca9940a0db3957f0607\", \"mrSeam\": \"$mrseam\", \"xfam\": \"e702060000000000\", \"measurements\": {}}"
expect tdx_quote_policy_held 0 "policy=held" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"qeSVN": 1}'
expect tdx_quote_policy_qe_svn 1 "qeSVN 0 is below the policy's minimum 1" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"pceSVN": 12}'
expect tdx_quote_policy_pce_svn 1 "pceSVN 0 is below the policy's minimum 12" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"teeTCBSVN": "03000600000000000000000000000000"}'
expect tdx_quote_policy_tee_tcb_svn 1 "teeTCBSVN 03000500000000000000000000000000 is below" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"qeVendorID": "00000000000000000000000000000000"}'
expect tdx_quote_policy_qe_vendor 1 "policy: qeVendorID 939a7233f79c4ca9940a0db3957f0607 is not" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol "{\"mrSeam\": \"${mrseam%?}0\"}"
expect tdx_quote_policy_mr_seam 1 "policy: mrSeam $mrseam is not" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"xfam": "e700060000000000"}'
expect tdx_quote_policy_xfam 1 "policy: xfam e702060000000000 is not" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"qeSVN": "latest"}'
expect tdx_quote_policy_latest 1 "qeSVN is \"latest\"" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"
pol '{"xfam": "e7020600"}'
expect tdx_quote_policy_malformed 1 "xfam is not 8 bytes in hex" "${ok[@]}" --tdx-collateral "$tc" --policy "$work/policy.json"

# the quote changed: refused
python3 -c "
import sys; b = bytearray(open('$tt/quote.dat','rb').read()); b[48+520] ^= 1
open('$work/bad.dat','wb').write(b)"
expect tdx_quote_test_tampered 1 "quote's ECDSA P-256 signature does not verify" \
	--quote "$work/bad.dat" --intel-root "$tt/root-test.pem" --at 2027-01-01T00:00:00Z --tdx-collateral "$tc"

# usage
out=$("$cv" tdx-quote --tdx-collateral "$tc" 2>&1)
[ $? = 2 ] && pass tdx_quote_usage_no_quote || fail tdx_quote_usage_no_quote "$out"
out=$("$cv" tdx-quote --quote x --at yesterday 2>&1)
[ $? = 2 ] && pass tdx_quote_usage_bad_time || fail tdx_quote_usage_bad_time "$out"
# without a folder the collateral is fetched (tests/attest/test_tdx_pcs.sh); here a CA bundle
# that is not there stops it before any request, with one line
expect tdx_quote_no_collateral_folder 1 "$work/no-bundle.pem" --quote "$q" \
	--tdx-cache "$work/cache" --ca-bundle "$work/no-bundle.pem" --pcs https://127.0.0.1:1
