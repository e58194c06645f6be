#!/bin/bash
# The in-guest fake /dev/sev-guest's report on the host (build/vm/sev_guest_fake --report, no
# device): its signed bytes are fake_sev_tsm.py's report for the same REPORT_DATA (the one
# layout, written by fake_sev_tsm.py --write), its ECDSA P-384 signature verifies with the
# test chain's VLEK (constel-verify snp-report with the test root), --tamper-first 1 gives a
# report the validator refuses naming the signature, and a bad key, template or argument is
# one line and a non-zero exit (which powers the guest off as a pre-init step). The device
# itself (CUSE) is exercised in the guest by tests/vm/test_snp_vm.sh. Host only, no network.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
fake=$BUILD/vm/sev_guest_fake
cv=$BUILD/tools/constel-verify
work=$(mktemp -d /tmp/constel-sevfake-XXXXXX)
trap 'rm -rf "$work"' EXIT
for f in "$fake" "$cv"; do
	[ -x "$f" ] || { fail sev_guest_fake_setup "$f is missing (make $f)"; exit 0; }
done
mkdir "$work/chain" "$work/out"
if ! bash tests/attest/snp-test/chain.sh "$work/chain" ||
	! python3 tests/attest/fake_sev_tsm.py "$work/out" "$work/chain" --write --signer vlek; then
	fail sev_guest_fake_setup "chain.sh or fake_sev_tsm.py --write failed"
	exit 0
fi
c=$work/chain o=$work/out
files=(--key "$c/signer.key" --template "$o/report.bin" --table "$o/table.bin")
data=$(python3 -c 'print(bytes(range(64)).hex())')
verify=(snp-report --signer "$c/vlek.pem" --chain "$c/asvk.pem" --ark "$c/ark.pem" --report-data "$data")

t=sev_guest_fake_report_signed_bytes_are_fake_sev_tsms
if "$fake" "${files[@]}" --report "$data" >"$work/r.bin" 2>"$work/r.err"; then
	python3 - "$work/r.bin" "$data" <<-'PY' && pass $t || fail $t "the signed bytes differ from fake_sev_tsm.py's"
		import struct, sys
		r = open(sys.argv[1], "rb").read()
		data = bytes.fromhex(sys.argv[2])
		# fake_sev_tsm.py's layout, field by field (the writer the template came from)
		assert len(r) == 1184, len(r)
		assert struct.unpack_from("<I", r, 0)[0] == 3 and r[0x50:0x90] == data
		assert struct.unpack_from("<I", r, 0x30)[0] == 0 and r[0x90:0xC0] == b"\x11" * 48
		assert struct.unpack_from("<Q", r, 0x180)[0] == 0xD108000000000003
		# r and s little endian in 72-byte fields: the top 24 bytes of each zero
		assert r[0x2A0 + 48:0x2E8] == bytes(24) and r[0x2E8 + 48:0x330] == bytes(24)
		assert any(r[0x2A0:0x2D0]) and any(r[0x2E8:0x318]) and r[0x330:] == bytes(1184 - 0x330)
	PY
else
	fail $t "$(tail -1 "$work/r.err")"
fi

t=sev_guest_fake_report_verifies_with_the_test_vlek_and_root
out=$("$cv" "${verify[@]}" --report "$work/r.bin" 2>&1)
[ $? = 0 ] && [[ "$out" == OK* || "$out" == *$'\n'OK* ]] && pass $t || fail $t "$(tail -1 <<<"$out")"

t=sev_guest_fake_tamper_first_report_refused_naming_the_signature
"$fake" "${files[@]}" --report "$data" --tamper-first 1 >"$work/t.bin" 2>/dev/null
out=$("$cv" "${verify[@]}" --report "$work/t.bin" 2>&1)
rc=$?
[ $rc = 1 ] && [[ "$out" == *"signature does not verify"* ]] &&
	[ "$(cmp -l "$work/r.bin" "$work/t.bin" 2>/dev/null | awk '$1 <= 672' | wc -l)" = 1 ] &&
	pass $t || fail $t "exit $rc: $(tail -1 <<<"$out")"

# each refused with one line naming what, and exit 1 (a file) or 2 (the command line)
t=sev_guest_fake_bad_inputs_one_line_each
bad=0
head -c 100 "$o/report.bin" >"$work/short.bin"
head -c 20000 /dev/zero >"$work/big.bin"
printf -- '-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n' >"$work/bad.key"
for spec in "1:not a 1184-byte report:--template $work/short.bin" \
	"1:more than 16384 bytes:--table $work/big.bin" \
	"1:not a P-384 private key:--key $work/bad.key" \
	"1:No such file:--key $work/none.key" \
	"2:want a count:--tamper-first x" \
	"2:unknown argument:--bogus 1" \
	"2:want 128 hex digits:--report 00"; do
	want=${spec%%:*} rest=${spec#*:}
	text=${rest%%:*} args=${rest#*:}
	"$fake" "${files[@]}" $args >/dev/null 2>"$work/e.err"
	rc=$?
	if [ $rc != "$want" ] || [ "$(wc -l <"$work/e.err")" != 1 ] || ! grep -q "$text" "$work/e.err"; then
		bad=$((bad + 1))
		echo "# $args: exit $rc: $(cat "$work/e.err")"
	fi
done
[ $bad = 0 ] && pass $t || fail $t "$bad of 7 not refused in one line"

t=sev_guest_fake_never_logs_the_key
python3 tests/secrets.py --pem "$c/signer.key" >"$work/secrets"
cat "$work"/*.err | grep -qiFf "$work/secrets" && fail $t "the key's PEM body is in its output" || pass $t
