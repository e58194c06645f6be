#!/bin/bash
# make bench: the stripped size of the shipped agent against its bound (1 MiB) and against a
# baseline built in the same run with the same toolchain and flags (an empty static musl
# program), then what each component contributes, from the linker map.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
agent=$BUILD/constel-agent.stripped
base_dir=$BUILD/bench
mkdir -p "$base_dir"
printf 'int main(void)\n{\n\treturn 0;\n}\n' >"$base_dir/empty.c"
# The agent's flags (Makefile: MUSL_CFLAGS with SIZE_CFLAGS, MUSL_LDFLAGS).
musl-gcc -Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -static -Wl,--gc-sections \
	-o "$base_dir/empty" "$base_dir/empty.c"
strip -s "$base_dir/empty"

a=$(stat -c %s "$agent")
b=$(stat -c %s "$base_dir/empty")
bound=1048576
echo "bench: size of the shipped agent (static musl, -Os, --gc-sections, no unwind tables, stripped)"
printf '  %-44s %10d bytes\n' "constel-agent (stripped)" "$a"
printf '  %-44s %10d bytes  (%s of it; %s)\n' "bound: 1 MiB" "$bound" \
	"$(awk -v a="$a" -v b="$bound" 'BEGIN { printf "%.1f%%", 100 * a / b }')" \
	"$(if [ "$a" -le "$bound" ]; then echo "$((bound - a)) bytes to spare"; else echo "OVER by $((a - bound)) bytes"; fi)"
printf '  %-44s %10d bytes\n' "baseline: empty static musl program" "$b"
printf '  %-44s %10s\n' "ratio agent / baseline" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1fx", a / b }')"
echo
echo "bench: what each component contributes (linker map of $BUILD/constel-agent)"
python3 tests/bench/mapsize.py "$BUILD/constel-agent.map" "$agent" | sed 's/^/  /'
printf 'size_stripped=%d\nsize_bound=%d\nsize_baseline=%d\n' "$a" "$bound" "$b" >"$base_dir/figures-size.txt" # for summary.sh
