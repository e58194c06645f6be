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

# Every mini-gmp (and gmp-glue) mpn routine nettle's P-256 key generation and signature run
# on secret values (the symbols ecc-*.o of secp256r1's path import; mpn_cmp and mpn_zero_p
# run only in the signature check, on public values): at most the conditional jumps counted
# here when it was read instruction by instruction, all on sizes, pointers (the overlap
# asserts) or the shift count, none on the limbs. A build that adds one must be read again
# (agent/base/p256.h scopes its timing claim to this check).
t=deps_hogweed_p256_mpn_routines_branch_only_on_sizes
bad=""
if (cd "$work" && ar x "$deps/lib/libhogweed.a" mini-gmp.o gmp-glue.o) 2>/dev/null; then
	while read -r obj f max; do
		n=$(objdump -d --no-show-raw-insn "$work/$obj" |
			awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' |
			grep -cE '\sj[a-z]+\s')
		[ "$n" -ge 1 ] && [ "$n" -le "$max" ] || bad="$bad $f:$n(max $max)"
	done <<-EOF
		mini-gmp.o mpn_add_n 2
		mini-gmp.o mpn_sub_n 2
		mini-gmp.o mpn_mul_1 2
		mini-gmp.o mpn_addmul_1 2
		mini-gmp.o mpn_submul_1 2
		mini-gmp.o mpn_mul 8
		mini-gmp.o mpn_mul_n 1
		mini-gmp.o mpn_sqr 1
		mini-gmp.o mpn_rshift 5
		mini-gmp.o mpn_copyi 2
		mini-gmp.o mpn_copyd 2
		mini-gmp.o mpn_zero 2
		gmp-glue.o mpn_cnd_add_n 2
		gmp-glue.o mpn_cnd_sub_n 2
		gmp-glue.o mpn_cnd_swap 2
	EOF
else
	bad="no mini-gmp.o or gmp-glue.o in $deps/lib/libhogweed.a"
fi
[ -z "$bad" ] && pass $t || fail $t "conditional jumps:$bad"

# X25519 and ed25519 (atls/algs.c, kube/ssh.c) run on hogweed too: every mpn routine their
# objects import must be one the check above reads (a nettle that adds one must be read again).
t=deps_hogweed_curve25519_imports_only_checked_mpn_routines
checked=" mpn_add_n mpn_sub_n mpn_mul_1 mpn_addmul_1 mpn_submul_1 mpn_mul mpn_mul_n mpn_sqr mpn_rshift mpn_copyi mpn_copyd mpn_zero mpn_cnd_add_n mpn_cnd_sub_n mpn_cnd_swap "
objs="ecc-curve25519.o ecc-curve25519-modp.o curve25519-mul.o curve25519-mul-g.o curve25519-eh-to-x.o ecc-mul-m.o ecc-mul-g-eh.o ecc-add-eh.o ecc-add-ehh.o ecc-dup-eh.o ecc-eh-to-a.o eddsa-sign.o eddsa-hash.o eddsa-expand.o eddsa-pubkey.o eddsa-compress.o ed25519-sha512-sign.o ed25519-sha512-pubkey.o ecc-mod-arith.o ecc-mod-inv.o"
bad=""
# shellcheck disable=SC2086 # the object names are words
if (cd "$work" && ar x "$deps/lib/libhogweed.a" $objs) 2>/dev/null; then
	for f in $(cd "$work" && nm -u $objs | awk '$2 ~ /^mpn_/ { print $2 }' | sort -u); do
		[[ "$checked" == *" $f "* ]] || bad="$bad $f"
	done
else
	bad="missing objects in $deps/lib/libhogweed.a"
fi
[ -z "$bad" ] && pass $t || fail $t "unchecked mpn routines:$bad"
