# The prefix's libhogweed (deps/build.sh: nettle's P-256 on its bundled mini-gmp): the limb
# multiplications that see secret values in a signature (mini-gmp's mpn_mul_1, mpn_addmul_1,
# mpn_submul_1) have no branch but their loop and its length check. At -Os gcc compiles the
# carry test of gmp_umul_ppmm into a third conditional jump on the product, a timing channel.
. tests/lib.sh
work=$(mktemp -d /tmp/constel-hogweed-XXXXXX)
trap 'rm -rf "$work"' EXIT
deps=$(cat "$BUILD/deps-prefix")

t=deps_hogweed_limb_multiply_has_no_data_dependent_branch
bad=""
if (cd "$work" && ar x "$deps/lib/libhogweed.a" mini-gmp.o) 2>/dev/null; then
	for f in mpn_mul_1 mpn_addmul_1 mpn_submul_1; do
		n=$(objdump -d --no-show-raw-insn "$work/mini-gmp.o" |
			awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' |
			grep -cE '\sj[a-z]+\s')
		[ "$n" -le 2 ] || bad="$bad $f:$n"
	done
else
	bad="no mini-gmp.o in $deps/lib/libhogweed.a"
fi
if [ -z "$bad" ]; then
	pass $t
else
	fail $t "conditional jumps (at most 2 expected):$bad"
fi
