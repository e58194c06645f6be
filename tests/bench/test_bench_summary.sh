# make bench's summary (tests/bench/summary.sh): issue 18's four goals read from sample figure
# files as the bench scripts write them, each verdict and floor as expected; a missing script's
# rows say "no figures" instead of failing.
. tests/lib.sh
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/bench"
cat >"$d/bench/figures-boot-vm.txt" <<'EOF'
boot_n=5
boot_user_kernel_s=1.760
boot_user_agent_s=3.880
boot_user_agent_kernel_ratio_min=2.000
boot_user_agent_kernel_ratio_max=2.400
boot_netns_kernel_s=2.000
boot_netns_agent_s=1.600
boot_netns_agent_kernel_ratio=0.800
boot_netns_agent_kernel_ratio_min=0.700
boot_netns_agent_kernel_ratio_max=0.900
boot_netns_phase_modules_ms=900.000
boot_netns_phase_entropy_ms=5.000
boot_netns_phase_network_ms=150.000
boot_netns_phase_root_ms=30.000
boot_netns_phase_disk_ms=80.000
boot_netns_phase_metadata_ms=40.000
boot_netns_phase_rejoin_ms=300.000
boot_netns_phase_activate_ms=120.000
boot_netns_probe_dhcp_ms=100.000
EOF
# the floors of this run: modules met (own 20 ms), activate not met (own 105 ms), root met
# with a floor above the phase; disk, mounts, entropy, done without a floor
cat >"$d/bench/figures-floor.txt" <<'EOF'
floor_modules_ms=880.000
floor_modules_ms_min=870.000
floor_modules_ms_max=890.000
floor_root_ms=35.000
floor_activate_ms=15.000
floor_activate_floor_activate_ms=15.000
floor_activate_agent_activate_ms=40.000
EOF
printf 'join_c_us=2000\njoin_go_us=2500\n' >"$d/bench/figures-join-latency.txt"
printf 'size_stripped=1153288\nsize_bound=1048576\n' >"$d/bench/figures-size.txt"
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
t=bench_summary_reads_the_figures_and_gives_each_goal_its_verdict
# netns: 1.6 / 2.0 = 0.80x; modules 0.9 s, peers 0.49 s, the rest 0.21 s = 0.11x
if [ $rc = 0 ] &&
	grep -qE 'agent / kernel phase \(netns\) +1\.60 s / 2\.00 s = 0\.80x \(0\.70-0\.90\) .*not met \(floor: .*modules \(kernel work, on the critical path\) 0\.90 s and peer-bound network\+metadata\+rejoin 0\.49 s; the rest 0\.21 s = 0\.11x\)' <<<"$out" &&
	grep -qE 'agent / kernel phase \(user net\) +3\.88 s / 1\.76 s = 2\.20x \(2\.00-2\.40\)' <<<"$out" &&
	grep -qE 'no-peer phase modules \(netns\): own = agent - floor +agent 900 ms \(900-900\), floor 880 ms \(870-890\), own 20 ms +own <= 100 ms +met \(floor: ' <<<"$out" &&
	grep -qE 'no-peer phase activate \(netns\): own = agent - floor +agent 120 ms .*floor 15 ms .*own 105 ms +own <= 100 ms +not met \(own 5 ms over\) \(floor: .*the agent.s code for it 40 ms, \+25 ms\)' <<<"$out" &&
	grep -qE 'no-peer phase root \(netns\): .*own -5 ms +own <= 100 ms +met' <<<"$out" &&
	grep -qE 'no-peer phases without a floor \(netns\) +entropy 5, disk 80 ms +each <= 100 ms +met \(below 100 ms whole' <<<"$out" &&
	grep -qE 'waiting for a peer .*network 150 ms \(probe dhcp 100 ms\)' <<<"$out" &&
	grep -qE 'join latency, C / Go client +2000 us / 2500 us = 0\.80x .* met$' <<<"$out" &&
	grep -qE 'stripped agent +1,153,288 B .*not met \(over by 104,712 B\)' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi

t=bench_summary_counts_the_background_module_waits_once
# an agent that loads the NIC modules first (95 ms) and waits for the rest in the root (200 ms)
# and activate (50 ms) phases: the modules row takes the share (345 ms) against the floor, the
# root and activate rows their phases without the waits
cp "$d/bench/figures-boot-vm.txt" "$d/boot.orig"
cat >>"$d/bench/figures-boot-vm.txt" <<'EOF2'
boot_netns_phase_modules_ms=95.000
boot_netns_modules_share_ms=345.000
boot_netns_modules_share_ms_min=340.000
boot_netns_modules_share_ms_max=350.000
boot_netns_phase_root_ms=230.000
boot_netns_phase_root_nowait_ms=30.000
boot_netns_phase_activate_ms=200.000
boot_netns_phase_activate_nowait_ms=150.000
EOF2
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
if [ $rc = 0 ] &&
	grep -qE 'agent / kernel phase \(netns\) .*modules \(kernel work, on the critical path\) 0\.34 s and' <<<"$out" &&
	grep -qE 'no-peer phase modules \(netns\): own = agent - floor +agent 345 ms \(340-350\) \(modules \+ waits for them\), floor 880 ms .*own -535 ms +own <= 100 ms +met' <<<"$out" &&
	grep -qE 'no-peer phase root \(netns\): own = agent - floor +agent 30 ms \(30-30\) without its module waits, floor 35 ms .*own -5 ms +own <= 100 ms +met' <<<"$out" &&
	grep -qE 'no-peer phase activate \(netns\): own = agent - floor +agent 150 ms \(150-150\) without its module waits, floor 15 ms .*own 135 ms +own <= 100 ms +not met \(own 35 ms over\)' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi
mv "$d/boot.orig" "$d/bench/figures-boot-vm.txt"

t=bench_summary_without_floors_judges_the_phases_whole
rm -f "$d/bench/figures-floor.txt"
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
if [ $rc = 0 ] && ! grep -q 'no-peer phase modules' <<<"$out" &&
	grep -qE 'no-peer phases without a floor \(netns\) +modules 900, entropy 5, root 30, disk 80, activate 120 ms +each <= 100 ms +not met: modules 900 ms, activate 120 ms \(no floor measured\)' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi

t=bench_summary_without_figures_says_so
rm -f "$d"/bench/figures-*.txt
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
# issue 18's five rows and issue 24's seven variants
if [ $rc = 0 ] && [ "$(grep -c 'no figures' <<<"$out")" = 12 ]; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi

t=bench_summary_join_not_met_names_the_p256_floor
# C 2000 us, Go 1800 us; P-256 C 50 + 2*60 + 200 = 370 us, Go 12 + 2*20 + 2*57 = 166 us:
# with Go's P-256 2000 - 370 + 166 = 1796 us = 1.00x Go
cat >"$d/bench/figures-join-latency.txt" <<'EOF2'
join_c_us=2000
join_go_us=1800
join_crypto_c_p256_keygen_us=50
join_crypto_c_p256_ecdsa_sign_us=60
join_crypto_c_p256_ecdsa_verify_us=200
join_crypto_go_p256_keygen_us=12
join_crypto_go_p256_ecdsa_sign_us=20
join_crypto_go_p256_ecdsa_verify_us=57
EOF2
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
if [ $rc = 0 ] &&
	grep -qE "join latency, C / Go client +2000 us / 1800 us = 1\.11x .*not met \(floor: P-256 in nettle's hogweed \(C, mini-gmp\) costs 370 us of 2000 us; Go's assembly 166 us; with it 1796 us = 1\.00x Go\)" <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(grep 'join latency' <<<"$out")"
fi

t=bench_summary_lists_each_attestation_variant_with_its_ratio
rm -f "$d"/bench/figures-*.txt
cat >"$d/bench/figures-attest.txt" <<'EOF2'
attest_qemu-vtpm_doc_bytes=9027
attest_qemu-vtpm_issue_ms=22.4
attest_qemu-vtpm_issue_ms_min=22.0
attest_qemu-vtpm_issue_ms_max=23.3
attest_qemu-vtpm_issue_ratio=1.00
attest_azure-sev-snp_doc_bytes=20349
attest_azure-sev-snp_issue_ms=44.8
attest_azure-sev-snp_issue_ms_min=40.0
attest_azure-sev-snp_issue_ms_max=50.5
attest_azure-sev-snp_issue_ratio=2.00
attest_azure-sev-snp_issue_ratio_min=1.18
attest_azure-tdx_doc_bytes=16541
attest_azure-tdx_issue_ms=30.0
EOF2
out=$(tests/bench/summary.sh "$d" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -qE '^  qemu-vtpm +9027 B +22\.4 ms \(22\.0-23\.3\) +1\.00x qemu-vtpm$' <<<"$out" &&
	grep -qE '^  azure-sev-snp +20349 B +44\.8 ms \(40\.0-50\.5\) +2\.00x qemu-vtpm, fastest 1\.18x$' <<<"$out" &&
	grep -qE '^  azure-tdx +16541 B +30\.0 ms \(30\.0-30\.0\) +no baseline$' <<<"$out" &&
	grep -qE '^  gcp-sev-es +no figures$' <<<"$out"; then
	pass $t
else
	fail $t "exit $rc: $(tr '\n' '|' <<<"$out")"
fi
