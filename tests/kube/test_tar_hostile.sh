# Hostile tar archives for the component installer (spec §9, `constel-agent install-component
# --extract true` with a data: URL): PAX records whose length field is not plain digits and
# one space (leading blanks, a sign, an overflow, a length past the header data) must be
# refused with exit 1 and one line, by the shipped agent and by the sanitizer build; a well
# formed PAX path is still used. The archives are built byte by byte (Python), because tar
# writers never produce these records.
. tests/lib.sh
set -u
work=$(mktemp -d /tmp/constel-tarh-XXXXXX)
trap 'rm -rf "$work"' EXIT
sha() { echo "sha256:$(sha256sum <"$1" | cut -c1-64)"; }

# archive NAME PAXDATA: $work/NAME.tgz holding a PAX header with PAXDATA (Python bytes
# literal) followed by the file "plain" with "hello"
archive() {
	python3 - "$work/$1.tgz" "$2" <<'PY'
import ast, gzip, sys

def header(name, size, typ):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"00000000000\0"
    h[148:156] = b" " * 8
    h[156] = ord(typ)
    h[257:265] = b"ustar\x0000"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)

def entry(name, data, typ):
    return header(name, len(data), typ) + data + b"\0" * ((512 - len(data) % 512) % 512)

pax = ast.literal_eval(sys.argv[2])
out = entry(b"PaxHeaders/plain", pax, "x") + entry(b"plain", b"hello", "0") + b"\0" * 1024
open(sys.argv[1], "wb").write(gzip.compress(out))
PY
}

# refused AGENT NAME PAXDATA: exit 1, one line naming the PAX record, nothing installed. (The
# first case crashed the agent: strtoul skipped the blanks, and memchr ran with a length
# near 2^64 looking for the "=" this record lacks.)
refused() {
	local agent=$1 t=$2 rc
	archive "$t" "$3"
	rm -rf "$work/root"
	"$agent" install-component --root "$work/root" --timeout 10 --extract true --path /opt/x \
		--hash "$(sha "$work/$t.tgz")" \
		--url "data:application/octet-stream;base64,$(base64 -w0 "$work/$t.tgz")" 2>"$work/err"
	rc=$?
	if [ $rc = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && grep -q 'PAX' "$work/err" &&
		[ ! -e "$work/root/opt/x/plain" ]; then
		pass "$t"
	else
		fail "$t" "exit $rc: $(head -c 600 "$work/err")"
	fi
}

for build in constel-agent test/constel-agent; do
	agent=$PWD/$BUILD/$build
	sfx=$([ $build = constel-agent ] && echo static || echo asan)
	refused "$agent" tar_pax_length_after_leading_whitespace_refused_$sfx \
		'b"\t\t\t\t\n5 path"'
	refused "$agent" tar_pax_length_with_a_sign_refused_$sfx 'b"+15 path=evil-x\n"'
	refused "$agent" tar_pax_length_that_overflows_refused_$sfx \
		'b"18446744073709551621 path=x\n"'
	refused "$agent" tar_pax_length_past_the_header_data_refused_$sfx 'b"50 path=evil\n"'
	refused "$agent" tar_pax_record_without_a_key_refused_$sfx 'b"5 =ab\n"'
	refused "$agent" tar_pax_path_with_a_nul_refused_$sfx 'b"13 path=a\x00bc\n"'

	t=tar_pax_path_well_formed_is_used_$sfx
	archive "$t" 'b"16 path=renamed\n7 a=bc\n"'
	rm -rf "$work/root"
	"$agent" install-component --root "$work/root" --timeout 10 --extract true --path /opt/x \
		--hash "$(sha "$work/$t.tgz")" \
		--hash "$(sha "$work/$t.tgz")" \
		--url "data:application/octet-stream;base64,$(base64 -w0 "$work/$t.tgz")" 2>"$work/err"
	rc=$?
	[ $rc = 0 ] && [ "$(cat "$work/root/opt/x/renamed" 2>/dev/null)" = hello ] &&
		pass $t || fail $t "exit $rc: $(head -c 600 "$work/err")"
done
