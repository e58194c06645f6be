# Whole-node QEMU boots: the agent as /init of its initrd, a Debian kernel under TCG, swtpm
# per node, a virtio root disk holding the stand-ins (test doubles for containerd, kubeadm and
# kubelet: tests/vm/standin.c) and a virtio state disk, slirp with restrict=on on the nodes'
# own network 10.42.0.0/16 (as Constellation's QEMU clusters: metadata at 10.42.0.1:8080,
# control planes from 10.42.1.100, workers from 10.42.2.100, addresses by DHCP), reaching the
# host only through guestfwd rules to the tools on 127.0.0.1 and hostfwd from 127.0.0.1 to
# :9000 and :9999. The agent runs on its built-in defaults plus root= and a fast disk KDF.
# Source after tests/lib.sh; needs BUILD, and work (a scratch folder) set.
#
#   cluster_setup              root disk, components server, metadata API, workspace
#   cluster_joinservice [M]    (re)starts the join service with measurements file M
#   node_ports                 host ports for the next boot's :9000 and :9999
#   node_boot NAME BOOT [vm.py options]   one boot of node NAME, its log $logs/BOOT.log
#   node_wait BOOT REGEX S [PID]   until the boot's serial log has a matching line
#   node_init WS OUT [S]       constel-init apply (the CLI's init) against the booting node
#   node_data BOOT KEY         the last "@@DATA KEY VALUE" of a boot
#   cluster_stop               stops the host tools
#   node_no_secrets T MIN LOG...   no secret of the run in a serial log: a check T_BOOT each

NODE_NET=10.42.0.0/16
NODE_MD_HOST=10.42.0.1 # the metadata API's default address (spec §5.2), also the components'
NODE_LB=10.42.1.100    # control-plane-0: the load balancer the metadata API names
tools=$PWD/$BUILD/tools
logs=${NODE_LOGS:-$PWD/$BUILD/qemu-logs}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The nodes of the test cluster: name role ip (each gets a metadata port of its own).
NODES="control-plane-0:ControlPlane:10.42.1.100 control-plane-1:ControlPlane:10.42.1.101
worker-0:Worker:10.42.2.100 worker-1:Worker:10.42.2.101"

node_field() { # NAME FIELD(1 role, 2 ip)
	local n
	for n in $NODES; do
		[ "${n%%:*}" = "$1" ] && { echo "$n" | cut -d: -f$(($2 + 1)); return; }
	done
}

# The agent's initrd, as make builds it (make initrd: the agent, mke2fs, initrd/modules.txt).
initrd=$PWD/$BUILD/initrd.img

# Debian's containerd and runc (deps/host-packages.txt) go into the test root as the packages
# install them, with the shared libraries ldd names (the Go programs need only libc; runc also
# libseccomp): PID 1 starts the real containerd, which serves /run/containerd/containerd.sock.
ROOT_BINS="/usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/bin/ctr /usr/sbin/runc"

# root_bins ROOTDIR: the binaries of ROOT_BINS and their libraries into ROOTDIR.
root_bins() {
	local b l
	for b in $ROOT_BINS; do
		[ -x "$b" ] || { echo "$b is missing: apt-get install containerd runc (deps/host-setup.sh)"; return 1; }
		install -D -m 0755 "$b" "$1$b" || return 1
		for l in $(ldd "$b" | grep -o '/[^ ]*'); do
			[ -e "$1$l" ] || install -D -m 0755 "$(readlink -f "$l")" "$1$l" || return 1
		done
	done
}

# The real root: read-only ext4 with the mount points of §4, Debian's containerd and runc with
# a minimal config, the host names of the components servers (/etc/hosts: no DNS in the test
# network), the throwaway CA of the run as the bundle the component installer trusts, and the
# stand-ins; the fixture CA the kubeadm stand-in "creates" in its certs phase is the one the
# join service signs with.
root_image() {
	local r=$work/rootfs
	rm -rf "$r" && mkdir -p "$r"/{dev,proc,sys,run,tmp,var,etc/kubernetes,etc/cni,etc/containerd,etc/ssl/certs,opt,usr/bin,usr/share/standin}
	root_bins "$r" || return 1
	cat >"$r/etc/containerd/config.toml" <<-'EOF2'
		# the test root's containerd: its defaults (root /var/lib/containerd on the state disk,
		# state and socket in /run/containerd), the runc of the image, the overlayfs snapshotter
		version = 2
		[plugins."io.containerd.grpc.v1.cri".containerd]
		  snapshotter = "overlayfs"
		[plugins."io.containerd.grpc.v1.cri".cni]
		  bin_dir = "/opt/cni/bin"
		  conf_dir = "/etc/cni/net.d"
	EOF2
	printf '127.0.0.1 localhost\n%s %s %s\n' "$NODE_MD_HOST" "$COMP_HOST" "$COMP_HOST_FOREIGN" >"$r/etc/hosts"
	cp "$work/https/ca.crt" "$r/etc/ssl/certs/ca-certificates.crt"
	cp "$work/ca.crt" "$work/ca.key" "$r/usr/share/standin/"
	# the kubeadm double: the token of its init banner (one of the run's secrets: it must
	# never reach a log) and how long it waits for the kubelet's TLS bootstrap (kubeadm: 4 min;
	# bounded here so a node that never restarts kubelet fails within the boot's timeout)
	printf '%s\n' "$banner_token" >"$r/usr/share/standin/banner-token"
	echo 120 >"$r/usr/share/standin/tls-bootstrap-wait-s"
	printf 'ID=debian\nNAME="constel-agent test root"\n' >"$r/etc/os-release"
	rm -f "$work/root.raw" && truncate -s 160M "$work/root.raw"
	mkfs.ext4 -q -F -E root_owner=0:0 -d "$r" "$work/root.raw"
}

# The components servers: https-server.py on 127.0.0.1 with certificates of a CA made for
# this run (the test root's CA bundle holds it), reached from the guest through guestfwd rules
# to 10.42.0.1:443 and :8443 under the names of the test root's /etc/hosts; the second presents
# a certificate of another CA, which the node must refuse.
COMP_HOST=components.constel.test
COMP_HOST_FOREIGN=mirror.constel.test
COMP_URL=https://$COMP_HOST
COMP_URL_FOREIGN=https://$COMP_HOST_FOREIGN:8443

# tls_cert DIR NAME HOST CA: a P-256 key and a certificate for HOST signed by CA (DIR/CA.crt,
# DIR/CA.key) as DIR/NAME.{key,crt}; CA itself when HOST is empty.
tls_cert() {
	local d=$1
	openssl ecparam -name prime256v1 -genkey -noout -out "$d/$2.key" 2>/dev/null || return 1
	if [ -z "$3" ]; then
		openssl req -x509 -new -key "$d/$2.key" -out "$d/$2.crt" -days 2 \
			-subj "/CN=constel-agent test $2" -addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
		return
	fi
	openssl req -new -key "$d/$2.key" -subj "/CN=$3" -out "$d/$2.csr" 2>/dev/null &&
		printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$3" >"$d/$2.ext" &&
		openssl x509 -req -in "$d/$2.csr" -CA "$d/$4.crt" -CAkey "$d/$4.key" -CAcreateserial \
			-days 1 -extfile "$d/$2.ext" -out "$d/$2.crt" 2>/dev/null
}

# https_start NAME PORTVAR PIDVAR: https-server.py with DIR/NAME.{crt,key} serving $work/www.
https_start() {
	local d=$work/https port pid
	python3 qemu-tests/https-server.py --cert "$d/$1.crt" --key "$d/$1.key" --root "$work/www" \
		>"$d/$1.port" 2>"$logs/components-$1.log" &
	pid=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/^port //p' "$d/$1.port")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { echo "the https server $1 did not start: $(tail -2 "$logs/components-$1.log")"; return 1; }
	eval "$2=$port $3=$pid"
}

https_setup() {
	local d=$work/https
	mkdir -p "$d"
	tls_cert "$d" ca "" && tls_cert "$d" server "$COMP_HOST" ca &&
		tls_cert "$d" foreign-ca "" && tls_cert "$d" foreign "$COMP_HOST_FOREIGN" foreign-ca || {
		echo "making the throwaway CAs failed"
		return 1
	}
	https_start server www_port www_pid && https_start foreign foreign_port foreign_pid
}

# components_json KUBELET_URL KUBEADM_URL: the component list (both the stand-in, $sum)
components_json() {
	printf '[{"url": "%s", "hash": "sha256:%s", "install_path": "/run/state/bin/kubelet", "extract": false},
 {"url": "%s", "hash": "sha256:%s", "install_path": "/run/state/bin/kubeadm", "extract": false}]\n' \
		"$1" "$sum" "$2" "$sum"
}

cluster_setup() {
	local n name port
	mkdir -p "$logs" "$work/www"
	if ! [ "$initrd" -nt "$BUILD/constel-agent.stripped" ] || ! [ "$initrd" -nt initrd/modules.txt ]; then
		echo "$initrd is missing or older than the agent: make initrd"
		return 1
	fi
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" \
		-subj /CN=kubernetes -days 1 >/dev/null 2>&1 || return 1
	https_setup || return 1
	banner_token=$(python3 -c 'import secrets as s; a="abcdefghijklmnopqrstuvwxyz0123456789"; t=lambda n: "".join(s.choice(a) for _ in range(n)); print(t(6)+"."+t(16))')
	root_image || return 1
	# the components: kubelet and kubeadm (both the stand-in) with their hashes; kubelet at
	# the end of a chain of 3 redirects
	cp "$BUILD/vm/standin" "$work/www/standin"
	sum=$(sha256sum "$work/www/standin" | cut -c1-64)
	components_json "$COMP_URL/redirect/3/standin" "$COMP_URL/standin" >"$work/components.json"
	components_json "$COMP_URL/standin" "$COMP_URL_FOREIGN/standin" >"$work/components-foreign.json"
	# the CLI's workspace, the measurements (PCR 15 zero, enforced; qboot measures nothing)
	"$tools/constel-init" --workspace "$work/ws" prepare >/dev/null || return 1
	zero=$(printf '0%.0s' $(seq 64))
	printf '{"15": {"expected": "%s", "warnOnly": false}}\n' "$zero" >"$work/m.json"
	# the metadata API: one port per node, so each VM is "self" on its own
	{
		printf '{"listen": "127.0.0.1:%s", "init_secret_hash_file": "%s", "nodes": [' \
			"$(free_port)" "$work/ws/init-secret.bcrypt"
		sep=
		for n in $NODES; do
			name=${n%%:*}
			port=$(free_port)
			eval "md_port_${name//-/_}=$port"
			printf '%s{"name": "%s", "role": "%s", "ip": "%s", "listen": "127.0.0.1:%s"}' \
				"$sep" "$name" "$(echo "$n" | cut -d: -f2)" "$(echo "$n" | cut -d: -f3)" "$port"
			sep=", "
		done
		printf ']}\n'
	} >"$work/metadata.json"
	"$tools/constel-metadata" --config "$work/metadata.json" >"$logs/metadata.log" 2>&1 &
	md_pid=$!
	js_port=$(free_port)
	mkdir -p "$work/pki/etcd"
	for f in ca.key sa.key front-proxy-ca.key etcd/ca.key ca.crt sa.pub front-proxy-ca.crt etcd/ca.crt; do
		printf 'test double of %s\n' "$f" >"$work/pki/$f"
	done
	token=abcdef.0123456789abcdef
	return 0
}

# js_args [MEASUREMENTS [COMPONENTS]]: the join service's arguments but --listen, in JS_ARGS
# (the same for its instance in a network namespace, qemu-tests/netns.sh).
js_args() {
	JS_ARGS=(--master-secret "$work/ws/constellation-mastersecret.json"
		--measurement-salt "$work/ws/measurement-salt" --ca-cert "$work/ca.crt" --ca-key "$work/ca.key"
		--api-endpoint "$NODE_LB:6443" --measurements "${1:-$work/m.json}" --pki-dir "$work/pki"
		--components "${2:-$work/components.json}" --token "$token")
}

# cluster_joinservice [MEASUREMENTS [COMPONENTS]]: the join service on js_port (stopped first if
# running); "off" stops it only.
cluster_joinservice() {
	[ -n "${js_pid:-}" ] && kill "$js_pid" 2>/dev/null && wait "$js_pid" 2>/dev/null
	js_pid=
	[ "${1:-}" = off ] && return 0
	js_args "$@"
	"$tools/constel-joinservice" --listen "127.0.0.1:$js_port" "${JS_ARGS[@]}" >>"$logs/joinservice.log" 2>&1 &
	js_pid=$!
	for _ in $(seq 50); do
		python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$js_port" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "join service did not come up: $(tail -2 "$logs/joinservice.log")" >&2
	return 1
}

cluster_stop() {
	kill ${js_pid:-} ${md_pid:-} ${www_pid:-} ${foreign_pid:-} 2>/dev/null
	wait 2>/dev/null
}

# node_ports: fresh host ports for the next boot's hostfwd to :9000 (init_port) and :9999
# (recover_port); call before node_boot when the boot runs in the background.
node_ports() {
	init_port=$(free_port)
	recover_port=$(free_port)
}

# node_vm NAME BOOT SECONDS [vm.py options]: boots node NAME (state disk $work/NAME.raw, made
# on first use; swtpm state $work/tpm-NAME) with the serial log $logs/BOOT.log, the network
# rules every node has (metadata, the components' servers, the join service; init_port and
# recover_port forwarded, see node_ports; or, with NODE_NETNS set, the network of
# qemu-tests/netns.sh in that namespace; NODE_STATE_SCSI=PROPS: the state disk on virtio-scsi
# with those scsi-hd properties), at most SECONDS; the options say how it boots
# (--initrd and --append, or --uefi). Returns vm.py's status (0: the kubelet stand-in ran and
# the node shut down; 3: the --kill-on line came).
node_vm() {
	local name=$1 boot=$2 secs=$3 ip md fwd net
	shift 3
	ip=$(node_field "$name" 2)
	md=$(eval echo "\$md_port_${name//-/_}")
	[ -e "$work/$name.raw" ] || truncate -s 128M "$work/$name.raw"
	cp --sparse=always "$work/root.raw" "$work/root-$name.raw"
	fwd="socat STDIO TCP:127.0.0.1"
	if [ -n "${NODE_NETNS:-}" ]; then # qemu-tests/netns.sh: a tap in that namespace, its tools
		net=(--netns "$NODE_NETNS" --mac "$(netns_mac "$ip")")
	else
		net=(--net "$NODE_NET" --dhcp-start "$ip"
			--net-guestfwd "tcp:$NODE_MD_HOST:8080-cmd:$fwd:$md"
			--net-guestfwd "tcp:$NODE_MD_HOST:443-cmd:$fwd:$www_port"
			--net-guestfwd "tcp:$NODE_MD_HOST:8443-cmd:$fwd:$foreign_port"
			--net-guestfwd "tcp:$NODE_LB:30090-cmd:$fwd:$js_port"
			--hostfwd "tcp:127.0.0.1:$init_port-:9000" --hostfwd "tcp:127.0.0.1:$recover_port-:9999")
	fi
	# NODE_STATE_SCSI=PROPS: the state disk as a scsi-hd with those properties (a cloud's shape)
	local state=(--disk "$work/$name.raw")
	[ -n "${NODE_STATE_SCSI:-}" ] && state=(--scsi-disk "$work/$name.raw,$NODE_STATE_SCSI")
	python3 qemu-tests/vm.py --log "$logs/$boot.log" \
		--disk "$work/root-$name.raw" "${state[@]}" --tpm-state "$work/tpm-$name" \
		"${net[@]}" --start-on 'constel-agent starting as PID 1' --timeout "$secs" "$@" >"$logs/$boot.out" 2>&1
}

# node_boot NAME BOOT [vm.py options]: node_vm through qboot, the kernel and build/initrd.img
# with the nodes' command line (root=/dev/vda, the fast KDF), plus the words of NODE_CMDLINE
# when set (e.g. NODE_CMDLINE=constel.disk-wipe=full: the wipe, which the default skips).
node_boot() {
	local name=$1 boot=$2
	shift 2
	node_vm "$name" "$boot" 600 --initrd "$initrd" \
		--append "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min${NODE_CMDLINE:+ $NODE_CMDLINE}" "$@"
}

# node_wait BOOT REGEX SECONDS [PID]: 0 once a line of the boot's serial log matches; 1 when
# the time is up or the boot (its background PID) ended first.
node_wait() {
	for _ in $(seq $(($3 * 10))); do
		grep -aqE "$2" "$logs/$1.log" 2>/dev/null && return 0
		[ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

# node_init WORKSPACE OUT [SECONDS (300)]: constel-init apply with the cluster's measurements
# and components against the init server of the node booting now (init_port); its output in
# OUT, its status returned.
node_init() {
	"$tools/constel-init" --workspace "$1" apply --endpoint "127.0.0.1:$init_port" \
		--measurements "$work/m.json" --components "$work/components.json" --timeout "${3:-300}" >"$2" 2>&1
}

node_data() { grep -ao "@@DATA $2 [^[:space:]]*" "$logs/$1.log" | tail -1 | awk '{print $3}'; }

# Checks the scenarios share.
luks_token() { cryptsetup luksDump --dump-json-metadata "$1" 2>/dev/null |
	python3 -c 'import json,sys; t=json.load(sys.stdin)["tokens"].get("0",{}); print(t.get("diskIsInitialized"))'; }
# opens NODE: keyslot 0 of the node's disk takes the key the cluster KMS derives for its UUID
opens() {
	python3 - "$(cryptsetup luksUUID "$work/$1.raw")" "$work/ws/constellation-mastersecret.json" >"$work/k.bin" <<'PY'
import base64, hashlib, hmac, json, sys
ms = json.load(open(sys.argv[2]))
key, salt = base64.b64decode(ms["key"]), base64.b64decode(ms["salt"])
prk = hmac.new(salt, key, hashlib.sha256).digest()
sys.stdout.buffer.write(hmac.new(prk, ("key-" + sys.argv[1]).encode() + b"\x01", hashlib.sha256).digest())
PY
	cryptsetup open --test-passphrase --key-file "$work/k.bin" "$work/$1.raw" >/dev/null 2>&1
}
# the mark of a node of the cluster with this ID (spec §5.3): H(0^32 || H(cluster ID))
pcr15_of() { python3 -c 'import hashlib,sys; c=bytes.fromhex(sys.argv[1]); print(hashlib.sha256(bytes(32)+hashlib.sha256(c).digest()).hexdigest())' "$1"; }
ident() { sha256sum <"$1" | cut -c1-64; }
tail_log() { grep -a 'constel-agent: \(error\|warn\)' "$logs/$1.log" | tail -2 | cut -c1-200 | tr '\n' ' '; }

# node_no_secrets T MIN LOG...: one check T_<boot> per serial log LOG, that none of the run's
# secrets in $work/secrets (tests/secrets.py's output, at least MIN of them, or the check
# fails as gathering too few) and nothing shaped like a bootstrap token is in it.
node_no_secrets() {
	local t=$1 min=$2 n log b
	shift 2
	n=$(wc -l <"$work/secrets")
	for log in "$@"; do
		b=$(basename "$log" .log)
		if [ "$n" -lt "$min" ]; then
			fail "${t}_$b" "only $n secrets gathered"
		elif grep -aqiFf "$work/secrets" "$log"; then
			fail "${t}_$b" "a secret is in $log"
		elif grep -aqE '(^|[^a-z0-9.])[a-z0-9]{6}\.[a-z0-9]{16}([^a-z0-9.]|$)' "$log"; then
			fail "${t}_$b" "something shaped like a bootstrap token is in $log"
		else
			pass "${t}_$b ($n secrets)"
		fi
	done
}
