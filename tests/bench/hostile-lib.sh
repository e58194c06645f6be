# Shared by tests/bench/hostile.sh (make bench) and tests/flow/test_hostile_peers.sh: serve-init
# on swtpm (qemu-vtpm) with or without the hostile load of tests/bench/hostile.py, the real CLI
# (constel-init apply) or the Go interop peer running the init, and the server's CPU and peak
# RSS. Source it after tests/lib.sh with $agent, $init, $work set; loopback only, every wait
# bounded.
hostile=${hostile:-$PWD/tests/bench/hostile.py}
HOSTILE_CONNS=${HOSTILE_CONNS:-200}
HOSTILE_HOLD=${HOSTILE_HOLD:-5} # seconds of load (or idle) measured before the client starts
HOSTILE_KINDS=${HOSTILE_KINDS:-idle,slow,garbage,half,flood}
HOSTILE_SOURCES=${HOSTILE_SOURCES:-40} # N: the load comes from N loopback addresses other than the CLI's; 0: from 127.0.0.1 as the CLI
uuid=0b3e9c3a-8e6f-4c1e-9d2b-5a7f00000016

# hostile_setup: swtpm, a CLI workspace (prepare), the measurements and the kubeadm test double.
hostile_setup() {
	swtpm_boot "$work" || return 1
	"$init" --workspace "$work/ws" prepare >/dev/null || return 1
	printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$(printf '0%.0s' $(seq 64))" >"$work/measurements.json"
	cat >"$work/kubeadm.sh" <<'SH'
#!/bin/sh
# Test double for the kubeadm init sequence: admin.conf with one cluster.
printf 'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: https://10.42.1.100:6443\n  name: c\nkind: Config\n'
SH
	chmod +x "$work/kubeadm.sh"
}

# hostile_run NAME CLIENT ATTACK TIMEOUT: one serve-init on a freshly rebooted swtpm (the node
# lock needs PCR 15 zero), ATTACK=1 with $HOSTILE_CONNS hostile connections from 1 s before the
# hold window to the end; after $HOSTILE_HOLD s the CLIENT (cli: constel-init apply, go: atlspeer
# init-client with $peer, none: no init, the server is stopped) runs its init, bounded by
# TIMEOUT s. Sets r_rc (the client's status),
# r_time (its seconds to success), r_hold (the server's CPU seconds in the hold window),
# r_vmpeak (its VmPeak in KiB at the end of the hold window: heap reserved for peers), r_cpu
# and r_rss (the server's CPU seconds and peak RSS in KiB over its whole life), r_srv (its
# exit status), r_load (the load's counts) and r_why (what went wrong, empty when nothing).
hostile_run() {
	local name=$1 client=$2 attack=$3 timeout=$4 d=$work/$1 pid lpid= port t0 t1 a b
	r_rc=1 r_time=0 r_hold=0 r_cpu=0 r_rss=0 r_vmpeak=0 r_srv=1 r_load= r_why=
	mkdir -p "$d"
	cp -r "$work/ws" "$d/ws"
	swtpm_boot "$work" || { r_why="swtpm did not restart"; return 1; }
	: >"$d/server.log"
	python3 "$hostile" spawn --pidfile "$d/server.pid" --report "$d/server.ru" -- \
		"$agent" --tpm "$tpm" serve-init --listen 127.0.0.1:0 --init-secret-hash "$d/ws/init-secret.bcrypt" \
		--disk-uuid "$uuid" --out "$d/out" --kubeadm "$work/kubeadm.sh" 2>"$d/server.log" &
	local spid=$!
	if ! port=$(logged_port "$d/server.log"); then
		kill $spid 2>/dev/null
		r_why="serve-init did not start: $(tail -1 "$d/server.log")"
		return 1
	fi
	pid=$(cat "$d/server.pid")
	if [ "$attack" = 1 ]; then
		python3 "$hostile" load --port "$port" --conns "$HOSTILE_CONNS" --duration $((timeout + HOSTILE_HOLD + 10)) \
			--kinds "$HOSTILE_KINDS" --sources "$HOSTILE_SOURCES" --report "$d/load.txt" 2>"$d/load.err" &
		lpid=$!
		sleep 1
	fi
	a=$(python3 "$hostile" cpu "$pid" | sed 's/cpu_s=\([0-9.]*\).*/\1/')
	sleep "$HOSTILE_HOLD"
	b=$(python3 "$hostile" cpu "$pid")
	r_vmpeak=$(sed 's/.*vmpeak_kb=\([0-9]*\).*/\1/' <<<"$b")
	b=$(sed 's/cpu_s=\([0-9.]*\).*/\1/' <<<"$b")
	r_hold=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b - a }')
	t0=$(date +%s.%N)
	if [ "$client" = none ]; then
		: >"$d/client.out"
		kill "$pid"
		wait_pid $spid 20
		[ -n "$lpid" ] && { kill -TERM $lpid; wait_pid $lpid 20 >/dev/null; r_load=$(cat "$d/load.txt" 2>/dev/null); }
		r_rc=0 r_srv=0
		r_cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' "$d/server.ru")
		r_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$d/server.ru")
		return 0
	elif [ "$client" = cli ]; then
		timeout $((timeout + 5)) "$init" --workspace "$d/ws" apply --endpoint "127.0.0.1:$port" \
			--measurements "$work/measurements.json" --timeout "$timeout" >"$d/client.out" 2>&1
	else
		timeout "$timeout" "$peer" init-client --addr "127.0.0.1:$port" --secret "$(cat "$d/ws/init-secret")" \
			>"$d/client.out" 2>&1
	fi
	r_rc=$?
	t1=$(date +%s.%N)
	r_time=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	# serve-init ends after one successful Init; after a failed one it is stopped here
	[ $r_rc = 0 ] || kill "$pid" 2>/dev/null
	wait_pid $spid 20
	r_srv=$?
	if [ -n "$lpid" ]; then
		kill -TERM $lpid 2>/dev/null
		wait_pid $lpid 20 >/dev/null
		r_load=$(cat "$d/load.txt" 2>/dev/null)
	fi
	r_cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' "$d/server.ru")
	r_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$d/server.ru")
	[ $r_rc = 0 ] || r_why="the $client init failed (exit $r_rc after ${r_time} s): $(tail -1 "$d/client.out")"
	[ $r_rc = 124 ] && r_why="$r_why(killed at the time bound)"
	[ $r_rc = 0 ] && [ "$r_srv" != 0 ] && r_why="serve-init ended with $r_srv: $(tail -1 "$d/server.log")"
	[ -z "$r_why" ]
}

# hostile_join KIND TIMEOUT: one join round (constel-agent join --timeout TIMEOUT, dummy
# attestation) against a hostile.py endpoint of KIND (silent, slow, garbage) or, for KIND go,
# a healthy Go join service ($peer join-server); sets r_rc, r_time, r_cpu (the client's CPU
# seconds) and r_rss.
hostile_join() {
	local kind=$1 timeout=$2 d=$work/join-$1-$RANDOM lport= lpid
	mkdir -p "$d"
	: >"$d/listen.out"
	if [ "$kind" = go ]; then
		"$peer" join-server --count 1 >"$d/listen.out" 2>&1 &
	else
		python3 "$hostile" listen --kind "$kind" --duration $((timeout + 20)) >"$d/listen.out" &
	fi
	lpid=$!
	for _ in $(seq 50); do
		lport=$(awk '/^LISTEN/{print $2}' "$d/listen.out")
		[ -n "$lport" ] && break
		sleep 0.1
	done
	python3 "$hostile" spawn --pidfile "$d/join.pid" --report "$d/join.ru" -- \
		"$agent" join --endpoint "127.0.0.1:$lport" --name worker-0 --role worker --disk-uuid "$uuid" \
		--ip 127.0.0.1 --ssh-host-key "$d/ssh_key" --out "$d/out" --attestation dummy \
		--timeout "$timeout" >/dev/null 2>"$d/join.log"
	r_rc=$?
	kill -TERM $lpid 2>/dev/null
	wait_pid $lpid 10 >/dev/null
	r_time=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$d/join.ru")
	r_cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' "$d/join.ru")
	r_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$d/join.ru")
}
