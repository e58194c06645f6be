# make bench's linker-map breakdown: it must find our code and musl in the agent's map, and
# what it attributes must fit inside the stripped file.
. tests/lib.sh

t=bench_map_breakdown_accounts_for_the_binary
out=$(python3 tests/bench/mapsize.py "$BUILD/constel-agent.map" "$BUILD/constel-agent.stripped")
total=$(awk '/^total/ { gsub(",", "", $4); print $4 }' <<<"$out")
rest=$(awk '/^ELF headers/ { gsub(",", "", $4); print $4 }' <<<"$out")
if grep -q '^constel-agent (ours) ' <<<"$out" && grep -q '^musl libc ' <<<"$out" &&
	! grep -q '^other' <<<"$out" &&
	[ "$total" = "$(stat -c %s "$BUILD/constel-agent.stripped")" ] && [ "${rest:--1}" -ge 0 ]; then
	pass $t
else
	fail $t "unexpected breakdown: $(tr '\n' '|' <<<"$out")"
fi

# Issue 18's size goal was that the stripped agent, with every feature, fits in 1 MiB (1,194,696 B
# before the slimmer dependencies and flags of README "Size"), and it did until the clouds came:
# five attestation issuers and four control-plane API clients (GCE, ARM, EC2/ELBv2/Tagging with
# SigV4, Keystone/Nova/Neutron) took it to 1,088,232 B with our code at -Oz in one LTO unit.
# make bench still measures against 1 MiB and says by how much it is over; this gate holds the
# growth to 1 MiB + 64 KiB until the next cut (docs/performance.md).
t=agent_stripped_fits_in_1_MiB_plus_64_KiB
bound=$((1048576 + 65536))
size=$(stat -c %s "$BUILD/constel-agent.stripped")
if [ "$size" -le "$bound" ]; then
	pass $t
else
	fail $t "$BUILD/constel-agent.stripped is $size bytes, $((size - bound)) over 1 MiB + 64 KiB"
fi
