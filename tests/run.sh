#!/bin/bash
# Runs every test of the project and prints one summary line, "N passed, N failed":
#   - the unit-test binaries of the sanitizer build (build/test/bin), one line per test;
#   - the shell tests (tests/*/test_*.sh) against the shipped static agent;
#   - each libFuzzer target, on its seed corpus and then for FUZZ_TEST_TIME seconds;
#   - the source format check against .clang-format.
# Each test prints "PASS name" or "FAIL name: why"; a program that dies without saying so
# counts as a failure of its own. The exit status is 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FUZZ_TEST_TIME=${FUZZ_TEST_TIME:-20}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0
failed=0
failures=()

# Runs one program, shows its output, and counts its PASS and FAIL lines.
run_counted() {
	local name=$1 out rc p f
	shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(grep -c '^PASS ' <<<"$out")
	f=$(grep -c '^FAIL ' <<<"$out")
	passed=$((passed + p))
	failed=$((failed + f))
	while IFS= read -r line; do failures+=("$line"); done < <(grep '^FAIL ' <<<"$out")
	if [ $rc != 0 ] && [ "$f" = 0 ]; then
		echo "FAIL $name: exited with status $rc without naming a failed test"
		failed=$((failed + 1))
		failures+=("FAIL $name: exited with status $rc")
	fi
}

# fail NAME WHY: one failure of the runner itself
fail_run() {
	echo "FAIL $1: $2"
	failed=$((failed + 1))
	failures+=("FAIL $1: $2")
}

echo "== unit tests (ASan + UBSan build)"
units=0
while IFS= read -r bin; do
	units=$((units + 1))
	run_counted "${bin#"$BUILD"/test/bin/}" "$bin"
done < <(find "$BUILD/test/bin" -type f -perm -u+x 2>/dev/null | sort)
# an empty or partial build is a failure, not a pass: every tests/*/test_*.c has its binary
[ $units != 0 ] || fail_run unit_tests "no unit-test binaries in $BUILD/test/bin"
for src in tests/*/test_*.c; do
	bin=$BUILD/test/bin/${src#tests/}
	[ -x "${bin%.c}" ] || fail_run "${src#tests/}" "no binary ${bin%.c}"
done

echo "== shell tests"
for t in tests/*/test_*.sh; do
	t0=$SECONDS
	run_counted "$t" bash "$t"
	echo "-- $t: $((SECONDS - t0)) s"
done

echo "== fuzz targets (corpus, then ${FUZZ_TEST_TIME} s each, $FUZZ_JOBS at a time)"
# One fuzz target at a time leaves a core idle (libFuzzer runs on one thread): FUZZ_JOBS targets
# run side by side (the machine's cores by default), each for its full time; the results are
# printed in the targets' order.
fuzz_one() {
	local name=$1 bin=$2 corpus work log
	corpus=tests/fuzz/corpus/$name
	work=$(mktemp -d)
	log=$BUILD/fuzz/$name.test.log
	if "$bin" -max_total_time="$FUZZ_TEST_TIME" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$BUILD/fuzz/" \
		"$work" "$corpus" >"$log" 2>&1; then
		echo "PASS $name ($(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#') runs)"
	else
		tail -30 "$log"
		echo "FAIL $name: the fuzzer found a crash (log $log)"
	fi
	rm -rf "$work"
}
fuzz_out=$(mktemp -d)
fuzz_names=()
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	bin=$BUILD/fuzz/bin/$name
	if [ ! -x "$bin" ]; then
		fail_run "$name" "no fuzz binary $bin"
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do wait -n; done
	fuzz_one "$name" "$bin" >"$fuzz_out/$name" 2>&1 &
	fuzz_names+=("$name")
done
wait
for name in "${fuzz_names[@]}"; do
	run_counted "$name" cat "$fuzz_out/$name"
done
rm -rf "$fuzz_out"

echo "== format"
files=$(git ls-files 'agent/*.[ch]' 'tests/*.[ch]' 'tools/*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find agent tests tools -name '*.[ch]' 2>/dev/null)
if clang-format --dry-run -Werror $files >"$BUILD/format.log" 2>&1; then
	echo "PASS format_matches_clang_format"
	passed=$((passed + 1))
else
	head -20 "$BUILD/format.log"
	echo "FAIL format_matches_clang_format: run clang-format -i on the files above"
	failed=$((failed + 1))
	failures+=("FAIL format_matches_clang_format")
fi

if [ $failed != 0 ]; then
	echo "== failures"
	printf '%s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
