# make bench's join-latency comparison runs end to end (a few connections, not the full 200)
# and prints both medians, the ratio and both peak RSS figures.
. tests/lib.sh
t=bench_join_latency_prints_medians_ratio_and_rss
out=$(JOIN_BENCH_N=5 tests/bench/join-latency.sh "$BUILD" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -qE 'constel-agent client \(C, musl static\), median +[1-9][0-9]* us' <<<"$out" &&
	grep -qE 'baseline: Go client .*median +[1-9][0-9]* us' <<<"$out" &&
	grep -qE 'ratio C / Go .* [0-9]+\.[0-9]+$' <<<"$out" &&
	grep -qE 'constel-agent client, peak RSS +[1-9][0-9]* KiB' <<<"$out" &&
	grep -qE 'ratio Go / C RSS .* [0-9.]+x$' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi

t=bench_joinservice_prints_both_rates_and_the_ratio
out=$(JOINSERVICE_BENCH_N=3 tests/bench/joinservice.sh "$BUILD" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -qE 'constel-joinservice \(C, musl static\) +[1-9][0-9]* joins/s' <<<"$out" &&
	grep -qE 'baseline: Go interop join server +[1-9][0-9]* joins/s' <<<"$out" &&
	grep -qE 'ratio C / Go +[0-9]+\.[0-9]+$' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi
