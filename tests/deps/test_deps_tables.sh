# The tables and buffers deps/build.sh takes out of the agent's file (docs/size.md): zlib's
# CRC-32 and fixed-Huffman tables are made on first use (DYNAMIC_CRC_TABLE, BUILDFIXED) and
# libdm's device-mapper and sysfs directories are set by a constructor. A static musl program
# linked like the agent must see the same values: gzip streams (fixed-Huffman, dynamic, stored;
# zlib checks each one's CRC-32) inflate to what Python compressed, crc32 gives the check value,
# and libdm names /dev/mapper and /sys/. The objects must hold them in .bss, not in the file.
. tests/lib.sh
work=$(mktemp -d /tmp/constel-tables-XXXXXX)
trap 'rm -rf "$work"' EXIT
deps=$(cat "$BUILD/deps-prefix")
tc=$work/tables_check

t=deps_tables_check_builds_static_against_the_prefix
mkdir -p "$work/kinc"
ln -s /usr/include/linux /usr/include/asm-generic "$work/kinc/"
ln -s /usr/include/x86_64-linux-gnu/asm "$work/kinc/asm"
if musl-gcc -isystem "$work/kinc" -std=gnu11 -Wall -Wextra -Werror -Os -I"$deps/include" \
	tests/deps/tables_check.c -static -Wl,--gc-sections -L"$deps/lib" -ldevmapper -lm -lz \
	-o "$tc" >"$work/cc.out" 2>&1; then
	pass $t
else
	fail $t "$(tail -3 "$work/cc.out" | tr '\n' '|')"
	exit 0
fi

t=deps_zlib_tables_made_on_first_use_inflate_and_crc_as_stored_ones
bad=""
for strategy in Z_FIXED Z_DEFAULT_STRATEGY Z_HUFFMAN_ONLY stored; do
	python3 - "$strategy" "$work/in.gz" "$work/want" <<'EOF'
import random, sys, zlib
strategy, gz, want = sys.argv[1:]
rnd = random.Random(24)
# text-like and random bytes, over 1 MiB: the braided CRC path and many blocks
data = b"".join(rnd.choice([b"constel ", b"kubelet ", b"\x00\x01", bytes([rnd.randrange(256)])])
                for _ in range(300000))
level = 0 if strategy == "stored" else 9
s = zlib.Z_DEFAULT_STRATEGY if strategy == "stored" else getattr(zlib, strategy)
c = zlib.compressobj(level, zlib.DEFLATED, 16 + 15, 9, s)
open(gz, "wb").write(c.compress(data) + c.flush())
open(want, "w").write("%d %08x %08x\n" % (len(data), zlib.crc32(data), zlib.crc32(b"123456789")))
EOF
	got=$("$tc" gunzip <"$work/in.gz" 2>&1)
	[ "$got" = "$(cat "$work/want")" ] || bad="$bad $strategy: '$got' (want '$(cat "$work/want")');"
done
# the check value of CRC-32 (ISO-HDLC) is cbf43926, whatever Python says
grep -q ' cbf43926$' "$work/want" || bad="$bad check value;"
if [ -z "$bad" ]; then
	pass $t
else
	fail $t "$bad"
fi

# In the archives: the tables are .bss (or absent), never read-only data stored in the file.
t=deps_zlib_and_libdm_tables_are_not_stored_in_the_file
syms=$(nm "$deps/lib/libz.a" "$deps/lib/libdevmapper.a" 2>/dev/null |
	awk '$3 ~ /^(crc_table|crc_braid_table|crc_braid_big_table|lenfix|distfix|_dm_dir|_sysfs_dir)(\.[0-9]+)?$/ { print $2, $3 }' |
	sort -u)
stored=$(awk '$1 !~ /^[bB]$/' <<<"$syms")
if grep -q '_dm_dir' <<<"$syms" && grep -q 'crc_table' <<<"$syms" && [ -z "$stored" ]; then
	pass $t
else
	fail $t "stored in the file: $(tr '\n' ' ' <<<"$stored")(all: $(tr '\n' ' ' <<<"$syms"))"
fi

t=deps_libdm_directories_set_before_main
out=$("$tc" dm 2>&1)
if [ "$out" = "/dev/mapper /sys/" ]; then
	pass $t
else
	fail $t "dm_dir, dm_sysfs_dir: '$out'"
fi
