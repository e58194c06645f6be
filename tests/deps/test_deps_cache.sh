# The dependency cache: a second build is a cache hit on the same prefix, and the key
# follows the recipe, so a changed recipe can never reuse a stale prefix.
. tests/lib.sh

t=deps_second_build_is_a_cache_hit
err=$(deps/build.sh 2>&1 >/dev/null)
prefix=$(deps/build.sh 2>/dev/null)
if grep -q '^deps: cache hit: ' <<<"$err" && [ "$prefix" = "$(cat "$BUILD/deps-prefix")" ] &&
	[ -f "$prefix/lib/libcryptsetup.a" ]; then
	pass $t
else
	fail $t "stderr '$err', prefix '$prefix'"
fi

t=deps_cache_key_follows_the_pinned_versions
tmp=$(mktemp -d)
cp deps/build.sh deps/versions.txt deps/cryptsetup-foreign-off.c "$tmp/"
k1=$("$tmp/build.sh" --key)
sed -i 's/^zlib .*/zlib zlib 1:1.2.13.dfsg-2/' "$tmp/versions.txt"
k2=$("$tmp/build.sh" --key)
cp deps/versions.txt "$tmp/"
echo '/* changed */' >>"$tmp/cryptsetup-foreign-off.c"
k3=$("$tmp/build.sh" --key)
rm -rf "$tmp"
if [ -n "$k1" ] && [ "$k1" = "$(deps/build.sh --key)" ] && [ "$k1" != "$k2" ] &&
	[ -n "$k3" ] && [ "$k3" != "$k1" ] && [ "$k3" != "$k2" ]; then
	pass $t
else
	fail $t "key did not change with versions.txt or cryptsetup-foreign-off.c ($k1, $k2, $k3)"
fi

# libcryptsetup as the recipe slims it: the stand-ins instead of the foreign formats, no
# reencryption, and still LUKS2, dm-integrity and dm-verity.
t=deps_libcryptsetup_has_only_what_the_agent_uses
lib=$prefix/lib/libcryptsetup.a
members=$(ar t "$lib" 2>/dev/null)
defs=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}')
if grep -qx 'foreign-off.o' <<<"$members" &&
	! grep -qE '^libcryptsetup_la-(tcrypt|bitlk|fvault2)\.o$' <<<"$members" &&
	! grep -qx LUKS2_reencrypt_locked_recovery_by_passphrase <<<"$defs" &&
	grep -qx LUKS2_hdr_read <<<"$defs" && grep -qx INTEGRITY_format <<<"$defs" &&
	grep -qx VERITY_activate <<<"$defs"; then
	pass $t
else
	fail $t "members of $lib: $(tr '\n' ' ' <<<"$members")"
fi

t=deps_prefix_holds_only_static_musl_archives
so=$(find "$prefix/lib" -name '*.so*' | head -3)
if [ -z "$so" ] && [ "$(find "$prefix/lib" -name '*.a' | wc -l)" -ge 14 ]; then
	pass $t
else
	fail $t "shared objects: $so"
fi
