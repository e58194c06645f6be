# serve-init out of file descriptors (ulimit -n 16, 40 connections held): accept() fails with
# EMFILE while the listening socket stays readable. The server must not spin on it (CPU per
# 5 s), must say so in one line, and must serve the real CLI (constel-init) once the
# connections are gone. Loopback only; every wait bounded.
. tests/lib.sh
agent=$PWD/$BUILD/constel-agent
init=$PWD/$BUILD/tools/constel-init
work=$(mktemp -d /tmp/constel-serve-fds-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# cpu_ms PID: user+system CPU time of PID in ms (from /proc/PID/stat).
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print int(($12 + $13) * 1000 / hz)}' "/proc/$1/stat"
}

cat >"$work/kubeadm.sh" <<'SH'
#!/bin/sh
# Test double for the kubeadm init sequence: admin.conf with one cluster.
printf 'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: https://10.42.1.100:6443\n  name: c\nkind: Config\n'
SH
chmod +x "$work/kubeadm.sh"
"$init" --workspace "$work/ws" prepare >/dev/null

t=serve_init_out_of_descriptors_does_not_spin_and_serves_the_cli_afterwards
(
	ulimit -n 16
	exec "$agent" serve-init --listen 127.0.0.1:0 --init-secret-hash "$work/ws/init-secret.bcrypt" \
		--disk-uuid 0B3E9C3A-8E6F-4C1E-9D2B-5A7F00000001 --out "$work/out" \
		--kubeadm "$work/kubeadm.sh" --attestation dummy
) 2>"$work/serve.log" &
ipid=$!
iport=$(logged_port "$work/serve.log")
if [ -z "$iport" ]; then
	fail $t "serve-init did not start: $(tail -2 "$work/serve.log")"
	exit 0
fi
# up to 40 connections that say nothing, held 8 s: more than the 16 descriptors (those past
# the accepted ones and the listen queue time out)
python3 - "$iport" >"$work/held.out" 2>&1 <<'PY' &
import socket, sys, time
socks = []
for _ in range(40):
    try:
        socks.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.3))
    except OSError:
        pass
print("connected", len(socks), flush=True)
time.sleep(8)
PY
hpid=$!
sleep 1.5
c0=$(cpu_ms $ipid)
sleep 5
c1=$(cpu_ms $ipid)
used=$((c1 - c0))
echo "serve-init CPU out of descriptors: ${used} ms per 5 s" >&2
wait_pid $hpid 10 >/dev/null
ws=$(mktemp -d "$work/ws.XXXXXX")
cp "$work/ws/constellation-mastersecret.json" "$work/ws/init-secret" "$work/ws/init-secret.bcrypt" "$ws/"
out=$(timeout 40 "$init" --workspace "$ws" apply --endpoint "127.0.0.1:$iport" \
	--attestation dummy --timeout 30 2>"$work/cli.log")
rc=$?
lines=$(grep -c 'serve: accept: ' "$work/serve.log")
held=$(awk '/^connected/ {print $2}' "$work/held.out")
if [ "${held:-0}" -lt 16 ]; then
	fail $t "fewer than 16 connections made: $(cat "$work/held.out")"
elif [ $used -ge 200 ]; then
	fail $t "${used} ms CPU in 5 s out of descriptors (a busy loop on the listening socket)"
elif [ $rc != 0 ] || [ -z "$out" ]; then
	fail $t "constel-init rc $rc: $(tail -2 "$work/cli.log"); $(tail -2 "$work/serve.log")"
elif [ "$lines" != 1 ]; then
	fail $t "$lines lines 'serve: accept: ...' (one per episode)"
else
	pass $t
fi
kill $ipid 2>/dev/null
wait_pid $ipid 10 >/dev/null
