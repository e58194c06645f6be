# The user-facing make: every goal asked for goes to ONE inner make (DEPS set), so
# `make -j2 agent tools` never runs two inner makes that rebuild build/libconstel.a at once.
# The inner make is replaced by `echo INNER` (make -n still runs lines that use $(MAKE));
# prepare's lines are only printed.
. tests/lib.sh

# inner_lines GOALS...: the inner make's command lines, one per inner make run
# (as a user types it: not with the DEPS and flags of the `make test` this may run under)
inner_lines() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DEPS make -n -j2 "$@" MAKE='echo INNER' 2>&1 |
		grep '^INNER '
}

t=make_two_goals_in_parallel_run_one_inner_make
out=$(inner_lines agent tools)
if [ "$(grep -c . <<<"$out")" = 1 ] && grep -q 'DEPS=.* agent tools$' <<<"$out"; then
	pass $t
else
	fail $t "inner makes: $(tr '\n' '|' <<<"$out")"
fi

t=make_without_goal_and_single_goals_keep_working
a=$(inner_lines)
b=$(inner_lines test)
c=$(inner_lines run)
if grep -q 'DEPS=.* all$' <<<"$a" && grep -q 'DEPS=.* test$' <<<"$b" &&
	grep -q 'DEPS=.* run$' <<<"$c" && [ "$(printf "%s\n" "$a" "$b" "$c" | grep -c INNER)" = 3 ]; then
	pass $t
else
	fail $t "make: '$a', make test: '$b', make run: '$c'"
fi
