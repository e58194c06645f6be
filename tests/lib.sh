# Helpers for the shell tests: each check prints "PASS name" or "FAIL name: why".
# Source it, then call check NAME COMMAND... or pass/fail directly.
BUILD=${BUILD:-build}
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
# count_checks: from here on pass and fail also count, into passed and failed (the suites that
# end with "N passed, N failed").
count_checks() {
	passed=0 failed=0
	pass() { echo "PASS $1"; passed=$((passed + 1)); }
	fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
}
# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "'$*' failed"; fi
}

# logged_port LOG: the port a server of ours logged ("listening on ... (port N)"), waiting
# up to 5 s; prints nothing and fails when none came.
logged_port() {
	local p
	for _ in $(seq 50); do
		p=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$1")
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}

# start_peer NAME ARGS...: runs "$peer ARGS" (the Go interop peer) in the background with its
# output in $work/NAME.out, waits up to 5 s for its LISTEN line and sets $pport ($! is its
# PID). The file exists before the first read, however the peer is scheduled.
start_peer() {
	local name=$1
	shift
	: >"$work/$name.out"
	"$peer" "$@" >"$work/$name.out" 2>&1 &
	for _ in $(seq 50); do
		pport=$(awk '/^LISTEN/{print $2}' "$work/$name.out")
		[ -n "$pport" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_pid PID SECONDS: the exit status, or 124 after killing it.
wait_pid() {
	for _ in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null
	return 124
}

# hexof FILE: the file's bytes in lowercase hex on one line.
hexof() { od -An -tx1 -v "$1" | tr -d ' \n'; }

# swtpm_boot DIR: (re)starts swtpm with its state in DIR/state and its log in DIR/swtpm.log,
# on two free loopback ports picked at the first call; sets $tpm (the agent's --tpm) and
# $swtpm_pid. A restart is a node's reboot: the PCRs are zero again. A running swtpm first
# gets an orderly TPM2_Shutdown, as the kernel sends at reboot: every unorderly stop counts
# against the dictionary-attack lockout, which soon refuses the AK (rc 0x921).
swtpm_boot() {
	local dir=$1
	if [ -z "${swtpm_port:-}" ]; then
		for _ in $(seq 20); do
			swtpm_port=$((20000 + RANDOM % 20000))
			python3 -c "import socket
for p in ($swtpm_port, $swtpm_port + 1):
    s = socket.socket(); s.bind(('127.0.0.1', p)); s.close()" 2>/dev/null && break
		done
	fi
	tpm="swtpm:host=127.0.0.1,port=$swtpm_port"
	if [ -n "${swtpm_pid:-}" ]; then
		tpm2_shutdown -T "$tpm" >/dev/null 2>&1
		kill "$swtpm_pid"
		wait "$swtpm_pid" 2>/dev/null
	fi
	mkdir -p "$dir/state"
	swtpm socket --tpm2 --server type=tcp,port=$swtpm_port,bindaddr=127.0.0.1 \
		--ctrl type=tcp,port=$((swtpm_port + 1)),bindaddr=127.0.0.1 --tpmstate dir="$dir/state" \
		--flags not-need-init,startup-clear --log file="$dir/swtpm.log" </dev/null >/dev/null 2>&1 &
	swtpm_pid=$!
	for _ in $(seq 50); do
		(exec 3<>/dev/tcp/127.0.0.1/$swtpm_port) 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# join_service_double WORK TOOLS: constel-joinservice on 127.0.0.1 with test-double control-plane
# files, a throwaway cluster CA and one kubelet component (a test double as a data: URL), for the
# workspace WORK/ws (constel-init prepare, plus its measurement-salt) and the measurements
# WORK/m.json; its log in WORK/js.log, its port in jport. It runs as a job of the caller.
join_service_double() {
	local work=$1 tools=$2 b64 sum f
	mkdir -p "$work/pki/etcd"
	for f in ca.key sa.key front-proxy-ca.key etcd/ca.key ca.crt sa.pub front-proxy-ca.crt etcd/ca.crt; do
		printf 'test double of %s\n' "$f" >"$work/pki/$f"
	done
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
		-subj /CN=kubernetes -days 1 >/dev/null 2>&1
	printf '#!/bin/sh\n# kubelet-test-double\nexit 0\n' >"$work/kubelet-test-double"
	b64=$(base64 -w0 "$work/kubelet-test-double")
	sum=$(sha256sum "$work/kubelet-test-double" | cut -c1-64)
	printf '[{"url": "data:application/octet-stream;base64,%s", "hash": "sha256:%s", "install_path": "/run/state/bin/kubelet", "extract": false}]\n' \
		"$b64" "$sum" >"$work/components.json"
	"$tools/constel-joinservice" --listen 127.0.0.1:0 --master-secret "$work/ws/constellation-mastersecret.json" \
		--measurement-salt "$work/ws/measurement-salt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key" \
		--api-endpoint 10.42.1.100:6443 --measurements "$work/m.json" --pki-dir "$work/pki" \
		--components "$work/components.json" 2>"$work/js.log" &
	jport=$(logged_port "$work/js.log")
}
