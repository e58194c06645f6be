# An aTLS certificate from our generator (the fuzz seed, made by agent/atls/certgen.c),
# read by an X.509 implementation we did not write: OpenSSL must parse it as spec §1.4 says
# and accept its self-signature.
. tests/lib.sh
cert=tests/fuzz/corpus/fuzz_atls_cert/cert
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

t=atls_cert_parses_in_openssl_as_the_template
txt=$(openssl x509 -inform DER -in "$cert" -noout -text 2>&1)
if grep -q 'Version: 3 (0x2)' <<<"$txt" && grep -q 'Issuer: CN = Constellation$' <<<"$txt" &&
	grep -q 'Subject: CN = Constellation$' <<<"$txt" &&
	[ "$(grep -c 'Signature Algorithm: ecdsa-with-SHA256' <<<"$txt")" = 2 ] &&
	grep -q 'NIST CURVE: P-256' <<<"$txt" && grep -q '^ *1.3.9900.1.1: *$' <<<"$txt" &&
	! grep -q critical <<<"$txt"; then
	pass $t
else
	fail $t "unexpected: $(tr '\n' '|' <<<"$txt" | cut -c1-300)"
fi

t=atls_cert_self_signature_verifies_in_openssl
openssl x509 -inform DER -in "$cert" -out "$tmp/c.pem" 2>/dev/null
if openssl verify -no_check_time -check_ss_sig -CAfile "$tmp/c.pem" "$tmp/c.pem" >/dev/null 2>&1; then
	pass $t
else
	fail $t "openssl verify rejected it"
fi
