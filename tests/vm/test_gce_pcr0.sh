#!/bin/bash
# build/vm/gce_pcr0 (the pre-init step that stands in for GCE's firmware in the gcp-sev-es
# boots) on the host against swtpm: PCR 0 gets GCE's events and the log is written, its PCR 0
# events byte for byte those of GCE's recorded log of a SEV VM (vectors/tpm-gce/cos-85-amd-sev.bin:
# types, data, order, then PCR 7's and PCR 0-6's separators), each digest the hash of its
# data in every bank the Spec ID event names; run again on the same TPM (PCR 0 not zero) it
# refuses with one line.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
vectors=${CONSTEL_VECTORS:-$PWD/../shared/vectors}
prog=$BUILD/vm/gce_pcr0
work=$(mktemp -d /tmp/constel-gce-pcr0-XXXXXX)
trap '[ -n "${swtpm_pid:-}" ] && kill "$swtpm_pid" 2>/dev/null; rm -rf "$work"' EXIT
[ -x "$prog" ] || { fail gce_pcr0_setup "$prog is missing (make $prog)"; exit 0; }
[ -r "$vectors/tpm-gce/cos-85-amd-sev.bin" ] || { fail gce_pcr0_setup "no $vectors/tpm-gce"; exit 0; }
swtpm_boot "$work" || { fail gce_pcr0_setup "swtpm did not start"; exit 0; }

t=gce_pcr0_extends_pcr0_and_writes_gces_events_byte_for_byte
if GCE_PCR0_TPM=$tpm GCE_PCR0_LOG=$work/log "$prog" >"$work/out" 2>&1 &&
	python3 - "$work/log" "$vectors/tpm-gce/cos-85-amd-sev.bin" >"$work/check" 2>&1 <<-'PY'; then
		import hashlib, struct, sys
		H = {4: hashlib.sha1, 11: hashlib.sha256, 12: hashlib.sha384, 13: hashlib.sha512}
		def events(path):
		    b = open(path, "rb").read()
		    pcr, typ = struct.unpack_from("<II", b, 0)
		    n = struct.unpack_from("<I", b, 28)[0]
		    spec = b[32:32 + n]
		    assert typ == 3 and spec[:16] == b"Spec ID Event03\0", "no Spec ID event first"
		    k = struct.unpack_from("<I", spec, 24)[0]
		    algs = dict(struct.unpack_from("<HH", spec, 28 + 4 * i) for i in range(k))
		    off, out = 32 + n, []
		    while off < len(b):
		        pcr, typ, cnt = struct.unpack_from("<III", b, off)
		        off += 12
		        ds = {}
		        for _ in range(cnt):
		            a = struct.unpack_from("<H", b, off)[0]
		            ds[a] = b[off + 2:off + 2 + algs[a]]
		            off += 2 + algs[a]
		        size = struct.unpack_from("<I", b, off)[0]
		        data = b[off + 4:off + 4 + size]
		        off += 4 + size
		        out.append((pcr, typ, ds, data))
		    return algs, out
		algs, ours = events(sys.argv[1])
		_, gce = events(sys.argv[2])
		assert 11 in algs, "no SHA-256 bank named: %s" % algs
		for pcr, typ, ds, data in ours:
		    assert set(ds) == set(algs), "an event without every bank's digest"
		    for a, d in ds.items():
		        assert d == H[a](data).digest(), "digest of bank %d is not the hash of the data" % a
		# GCE's events before the first separator of PCR 0 (PCR 7's in between are UEFI
		# variables, not modelled), then the separators in GCE's order
		want = [(p, t, d) for p, t, _, d in gce if p == 0 and t != 4][:2]
		seps = [(p, t, d) for p, t, _, d in gce if t == 4 and p <= 7][:8]
		got = [(p, t, d) for p, t, _, d in ours]
		assert got == want + seps, "ours %s, GCE's %s" % (got, want + seps)
		print("%d events, banks %s" % (len(ours), sorted(algs)))
	PY
	pass "$t ($(cat "$work/check"))"
else
	fail $t "$(tail -2 "$work/out") $(tail -2 "$work/check" 2>/dev/null)"
fi

# again on the same TPM: PCR 0 is no longer what the log replays to
t=gce_pcr0_refuses_a_pcr0_that_was_extended_before_with_one_line
GCE_PCR0_TPM=$tpm GCE_PCR0_LOG=$work/log2 "$prog" >"$work/out2" 2>&1
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$work/out2")" = 1 ] && grep -q '^gce-pcr0: PCR 0 or 7 of bank 0x[0-9a-f]* is not what the log replays to' "$work/out2" &&
	[ ! -e "$work/log2" ] && pass $t || fail $t "exit $rc: $(cat "$work/out2")"
