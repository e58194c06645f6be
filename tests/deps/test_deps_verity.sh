# The slimmed libcryptsetup of the deps prefix (deps/build.sh): a static musl program linked
# like the agent still checks a dm-verity root hash (the agent's verity root) over every block,
# refuses a changed data block, and answers TCRYPT (one of the formats left out) with -ENOTSUP
# and one line saying why. Images made by Debian's veritysetup; no device-mapper needed.
. tests/lib.sh
work=$(mktemp -d /tmp/constel-verity-XXXXXX)
trap 'rm -rf "$work"' EXIT
deps=$(cat "$BUILD/deps-prefix")
vc=$work/verity_check

t=deps_verity_check_builds_static_against_the_prefix
mkdir -p "$work/kinc"
ln -s /usr/include/linux /usr/include/asm-generic "$work/kinc/"
ln -s /usr/include/x86_64-linux-gnu/asm "$work/kinc/asm"
if musl-gcc -isystem "$work/kinc" -std=gnu11 -Wall -Wextra -Werror -Os -I"$deps/include" \
	tests/deps/verity_check.c -static -Wl,--gc-sections -L"$deps/lib" \
	$(PKG_CONFIG_LIBDIR=$deps/lib/pkgconfig pkg-config --static --libs libcryptsetup) \
	-o "$vc" >"$work/cc.out" 2>&1; then
	pass $t
else
	fail $t "$(tail -3 "$work/cc.out" | tr '\n' '|')"
	exit 0
fi

head -c 4M /dev/urandom >"$work/data"
truncate -s 1M "$work/hash"
roothash=$(veritysetup format "$work/data" "$work/hash" 2>/dev/null | awk '/^Root hash:/ {print $3}')

t=deps_verity_root_hash_checks_out
out=$("$vc" verity "$work/data" "$work/hash" "$roothash" 2>&1)
if [ -n "$roothash" ] && [ "$out" = "verity 0" ]; then
	pass $t
else
	fail $t "root hash '$roothash': $(tr '\n' '|' <<<"$out")"
fi

t=deps_verity_refuses_a_changed_block
cp "$work/data" "$work/data2"
printf 'X' | dd of="$work/data2" bs=1 seek=100000 conv=notrunc 2>/dev/null
out=$("$vc" verity "$work/data2" "$work/hash" "$roothash" 2>&1)
if grep -qx 'verity -1' <<<"$out" && grep -q 'Verification failed' <<<"$out"; then
	pass $t
else
	fail $t "a changed block: $(tr '\n' '|' <<<"$out")"
fi

t=deps_tcrypt_is_left_out_with_one_line
out=$("$vc" tcrypt "$work/data" 2>&1)
if grep -qx "tcrypt -95" <<<"$out" &&
	[ "$(grep -c 'TCRYPT devices are not supported by this libcryptsetup' <<<"$out")" = 1 ]; then
	pass $t
else
	fail $t "$(tr '\n' '|' <<<"$out")"
fi
