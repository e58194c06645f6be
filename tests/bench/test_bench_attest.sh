# make bench's attestation variants (tests/bench/attest-variants.sh) run for one variant on
# swtpm (two documents; qemu-vtpm comes along as the baseline): the table's rows with the
# document size and the ratio, the key figures; a name that is no variant fails the bench.
. tests/lib.sh
t=bench_attest_variants_reports_size_time_and_ratio_per_variant
fig=$BUILD/bench/figures-attest.txt
rm -f "$fig"
out=$(ATTEST_BENCH_N=2 ATTEST_BENCH_VARIANTS=aws-nitro-tpm tests/bench/attest-variants.sh "$BUILD" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -qE '^  qemu-vtpm +[1-9][0-9]{3,} +[0-9.]+ +\([0-9.]+-[0-9.]+\) +1\.00x +1\.00x +[0-9.]+$' <<<"$out" &&
	grep -qE '^  aws-nitro-tpm +[1-9][0-9]{3,} +[0-9.]+ +\([0-9.]+-[0-9.]+\) +[0-9]+\.[0-9]{2}x +[0-9]+\.[0-9]{2}x +[0-9.]+$' <<<"$out" &&
	grep -qE '^attest_aws-nitro-tpm_doc_bytes=[1-9][0-9]{3,}$' "$fig" &&
	grep -qE '^attest_aws-nitro-tpm_issue_ms=[0-9.]+$' "$fig" &&
	grep -qE '^attest_aws-nitro-tpm_issue_ratio=[0-9]+\.[0-9]{2}$' "$fig" &&
	grep -qE '^attest_aws-nitro-tpm_issue_ratio_min=[0-9]+\.[0-9]{2}$' "$fig" &&
	grep -qE '^attest_qemu-vtpm_issue_ms=[0-9.]+$' "$fig" && ! grep -q gcp "$fig"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi

t=bench_attest_variants_refuses_a_name_that_is_no_variant
out=$(ATTEST_BENCH_N=1 ATTEST_BENCH_VARIANTS=aws-nitro-tmp tests/bench/attest-variants.sh "$BUILD" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'FAILED aws-nitro-tmp failed: no such variant' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi
