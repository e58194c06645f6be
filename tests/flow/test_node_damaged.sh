# A node whose state disk lost its primary LUKS2 header (the first 4 KiB zeroed, as a bad
# write or a careless dd leaves it) in host mode (`constel-agent node --root DIR`, the disk an
# image file, swtpm): the secondary header still says initialized, so the node takes the
# rejoin path on the same disk (libcryptsetup loads the secondary copy), never formats it, and
# rewrites the primary from the secondary once the cluster's key opened the disk.
# Against constel-joinservice; and against a join endpoint that never answers, where the
# image must stay byte-identical while the node retries.
. tests/lib.sh
# the sanitizer build: the static agent's libcryptsetup needs device-mapper to write keyslots
agent=$PWD/$BUILD/test/constel-agent
tools=$PWD/$BUILD/tools
work=$(mktemp -d /tmp/constel-damaged-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
boot() { swtpm_boot "$work"; }
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
zero=$(printf '0%.0s' $(seq 64))
printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/m.json"

# kubeadm-test-double: records its arguments; a join succeeds
cat >"$work/kubeadm-test-double" <<'SH'
#!/bin/sh
echo "$*" >>"$(dirname "$0")/kubeadm.record"
exit 0
SH
chmod +x "$work/kubeadm-test-double"

# node NAME ARGS...: the agent's node command for NAME in the background ($node_pid); this
# run's log lines start at $node_from
node() {
	local name=$1
	shift
	[ -e "$work/$name.img" ] || truncate -s 64M "$work/$name.img"
	node_log=$work/$name.log
	node_from=$(($(cat "$node_log" 2>/dev/null | wc -l) + 1))
	"$agent" --tpm "$tpm" node --root "$work/$name" --state-disk "$work/$name.img" \
		--kubeadm "$work/kubeadm-test-double" --init-port 0 --recover-port 0 --interval 2 \
		--timeout 10 "$@" >>"$work/$name.stdout" 2>>"$work/$name.log" &
	node_pid=$!
}
this_run() { tail -n +"$node_from" "$node_log"; }
# uuid IMAGE: from a copy, so that cryptsetup does not repair the image itself
uuid() { cp "$1" "$work/copy.img" && cryptsetup luksUUID --disable-locks "$work/copy.img" 2>/dev/null; }
zero_primary() { dd if=/dev/zero of="$1" bs=4096 count=1 conv=notrunc 2>/dev/null; }

# the cluster: a workspace, a join service with test-double PKI and a kubelet component
"$tools/constel-init" --workspace "$work/ws" prepare >/dev/null
# the salt an init would have written (hex, as constel-init writes it)
python3 -c 'import os; print(os.urandom(32).hex())' >"$work/ws/measurement-salt"
join_service_double "$work" "$tools"

# a worker joins once: its disk is formatted and initialized
boot
node w1 --name worker-1 --role worker --ip 10.42.2.100 --init-secret-hash "$work/ws/init-secret.bcrypt" \
	--join "127.0.0.1:$jport"
wait_pid $node_pid 60
jrc=$?
uuid1=$(uuid "$work/w1.img")
cp "$work/w1.img" "$work/w1-initialized.img"

t=node_damaged_primary_header_rejoins_on_the_same_disk
if [ $jrc != 0 ] || [ -z "$uuid1" ]; then
	fail $t "the first join failed (exit $jrc): $(tail -2 "$work/w1.log")"
else
	boot
	zero_primary "$work/w1.img"
	node w1 --name worker-1 --role worker --ip 10.42.2.100 --join "127.0.0.1:$jport"
	wait_pid $node_pid 60
	rc=$?
	why=
	[ $rc = 0 ] || why="$why node=$rc"
	this_run | grep -q "initialized (uuid $uuid1): the rejoin path" || why="$why path"
	this_run | grep -q 'rejoin: state disk open, node marked' || why="$why open"
	this_run | grep -q 'format' && why="$why formatted"
	[ "$(uuid "$work/w1.img")" = "$uuid1" ] || why="$why uuid"
	[ -e "$work/w1/run/state/kubelet/pki/kubelet-client-crt.pem" ] || why="$why state-lost"
	# once the key opened the disk, the primary is rewritten from the secondary
	this_run | grep -q 'damaged LUKS2 header copy was rewritten from the intact one' || why="$why no-repair"
	[ "$(head -c 6 "$work/w1.img" | od -An -tx1 | tr -d ' \n')" = 4c554b53babe ] || why="$why primary-still-zero"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(this_run | tail -3)"
fi

t=node_damaged_primary_header_is_never_written_while_the_join_endpoint_is_silent
if [ -z "$uuid1" ]; then
	fail $t "no initialized disk from the first join"
else
	cp "$work/w1-initialized.img" "$work/w2.img"
	zero_primary "$work/w2.img"
	before=$(sha256sum <"$work/w2.img")
	boot
	node w2 --name worker-2 --role worker --ip 10.42.2.101 --init-secret-hash "$work/ws/init-secret.bcrypt" \
		--join "127.0.0.1:$closed"
	# a few failed rejoin rounds (the interval is 2 s), then a stop
	for _ in $(seq 100); do
		[ "$(this_run | grep -c 'round [0-9]* failed')" -ge 2 ] && break
		kill -0 $node_pid 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM $node_pid 2>/dev/null
	wait_pid $node_pid 10 >/dev/null
	why=
	this_run | grep -q "initialized (uuid $uuid1): the rejoin path" || why="$why path"
	this_run | grep -q 'format' && why="$why formatted"
	[ "$(sha256sum <"$work/w2.img")" = "$before" ] || why="$why image-changed"
	[ -z "$why" ] && pass $t || fail $t "wrong:$why; $(this_run | tail -3)"
fi
