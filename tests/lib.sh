# Helpers for the shell tests: each check prints "PASS name" or "FAIL name: why".
# Source it, then call check NAME COMMAND... or pass/fail directly.
BUILD=${BUILD:-build}
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "'$*' failed"; fi
}
