#!/bin/bash
# make bench: the stripped size of the shipped agent against a baseline built in the same run
# with the same toolchain and flags (an empty static musl program), then what each component
# contributes, from the linker map.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
agent=$BUILD/constel-agent.stripped
base_dir=$BUILD/bench
mkdir -p "$base_dir"
printf 'int main(void)\n{\n\treturn 0;\n}\n' >"$base_dir/empty.c"
musl-gcc -Os -ffunction-sections -fdata-sections -static -Wl,--gc-sections \
	-o "$base_dir/empty" "$base_dir/empty.c"
strip -s "$base_dir/empty"

a=$(stat -c %s "$agent")
b=$(stat -c %s "$base_dir/empty")
echo "bench: size of the shipped agent (static musl, -Os, --gc-sections, stripped)"
printf '  %-44s %10d bytes\n' "constel-agent (stripped)" "$a"
printf '  %-44s %10d bytes\n' "baseline: empty static musl program" "$b"
printf '  %-44s %10s\n' "ratio agent / baseline" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1fx", a / b }')"
echo
echo "bench: what each component contributes (linker map of $BUILD/constel-agent)"
python3 tests/bench/mapsize.py "$BUILD/constel-agent.map" "$agent" | sed 's/^/  /'
