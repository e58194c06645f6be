#!/bin/bash
# make bench: each attestation variant's document, issued on swtpm with the issuers' test
# fixtures ($BUILD/bench/attest_bench, tests/bench/attest_bench.c): its size in bytes and the
# issuing time (median of ATTEST_BENCH_N, default 15, in rounds over all variants), with the
# time's ratio to qemu-vtpm's in the same run (the baseline: a quote and nothing else), and the
# ratio of the fastest documents (on a loaded machine the steadier of the two).
# ATTEST_BENCH_VARIANTS=a,b limits the variants (qemu-vtpm is always run, for the ratio).
# Key figures: $BUILD/bench/figures-attest.txt (attest_<variant>_doc_bytes=,
# attest_<variant>_issue_ms= with _min/_max, attest_<variant>_issue_ratio= and _ratio_min=).
# Exit 1 when a variant's fixture or issuer fails.
set -u
BUILD=${1:-build}
cd "$(dirname "$0")/../.." || exit 1
bin=$BUILD/bench/attest_bench
[ -x "$bin" ] || { echo "bench: $bin is not built (make $bin)" >&2; exit 1; }
vars=${ATTEST_BENCH_VARIANTS:-}
[ -z "$vars" ] || [[ ",$vars," == *,qemu-vtpm,* ]] || vars=qemu-vtpm,$vars
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$BUILD/bench"

ATTEST_BENCH_VARIANTS=$vars BUILD=$BUILD nice -n 5 "$bin" >"$work/out" 2>"$work/err"
rc=$?
python3 - "$work/out" "$BUILD/bench/figures-attest.txt" "${ATTEST_BENCH_N:-15}" <<'PY'
import re, sys
out, fig, n = sys.argv[1], sys.argv[2], sys.argv[3]
rows, failed = [], []
for line in open(out):
    m = re.match(r"BENCH variant=(\S+) doc_bytes=(\d+) median_ms=([\d.]+) min_ms=([\d.]+) "
                 r"max_ms=([\d.]+) n=\d+ first_ms=([\d.]+)", line)
    if m:
        rows.append((m[1], int(m[2])) + tuple(float(x) for x in m.groups()[2:]))
    elif line.startswith("BENCH variant="):
        failed.append(line[len("BENCH variant="):].strip())
base = next((r[2] for r in rows if r[0] == "qemu-vtpm"), None)
base_min = next((r[3] for r in rows if r[0] == "qemu-vtpm"), None)
print("bench: attestation documents on swtpm, %s per variant in rounds over the variants "
      "(tests/attest fixtures: the cloud's vTPM provisioning, IMDS, GCE API, configfs-tsm, TDX quote fakes)" % n)
print("  %-14s %10s %12s %17s %12s %10s %10s" % ("variant", "doc bytes", "median ms", "(min-max)",
                                                "/ qemu-vtpm", "min / min", "first ms"))
with open(fig, "w") as f:
    for v, b, med, lo, hi, first in rows:
        ratio = med / base if base else None
        rmin = lo / base_min if base_min else None
        print("  %-14s %10d %12.1f %17s %12s %10s %10.1f" % (
            v, b, med, "(%.1f-%.1f)" % (lo, hi), "%.2fx" % ratio if ratio else "-",
            "%.2fx" % rmin if rmin else "-", first))
        f.write("attest_%s_doc_bytes=%d\n" % (v, b))
        f.write("attest_%s_issue_ms=%.1f\nattest_%s_issue_ms_min=%.1f\nattest_%s_issue_ms_max=%.1f\n" % (
            v, med, v, lo, v, hi))
        f.write("attest_%s_first_ms=%.1f\n" % (v, first))
        if ratio:
            f.write("attest_%s_issue_ratio=%.2f\nattest_%s_issue_ratio_min=%.2f\n" % (v, ratio, v, rmin))
for x in failed:
    print("  FAILED %s" % x)
sys.exit(1 if failed or not rows else 0)
PY
prc=$?
if [ $rc != 0 ] || [ $prc != 0 ]; then
	echo "bench: attest_bench exit $rc: $(grep -v '^ *$' "$work/err" | tail -3 | tr '\n' '|')" >&2
	exit 1
fi
