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
cp deps/build.sh deps/versions.txt "$tmp/"
k1=$("$tmp/build.sh" --key)
sed -i 's/^zlib .*/zlib zlib 1:1.2.13.dfsg-2/' "$tmp/versions.txt"
k2=$("$tmp/build.sh" --key)
rm -rf "$tmp"
if [ -n "$k1" ] && [ "$k1" = "$(deps/build.sh --key)" ] && [ "$k1" != "$k2" ]; then
	pass $t
else
	fail $t "key did not change with versions.txt ($k1, $k2)"
fi

t=deps_prefix_holds_only_static_musl_archives
so=$(find "$prefix/lib" -name '*.so*' | head -3)
if [ -z "$so" ] && [ "$(find "$prefix/lib" -name '*.a' | wc -l)" -ge 14 ]; then
	pass $t
else
	fail $t "shared objects: $so"
fi
