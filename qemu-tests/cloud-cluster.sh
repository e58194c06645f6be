# A whole cluster booted as a cloud (constel.csp=gcp|azure|aws|openstack) under QEMU, in the
# network namespace of qemu-tests/netns.sh: dnsmasq hands out the leases as the cloud's DHCP
# does (a router; GCP's /32 with option 121 and MTU 1460), tests/cloud/fake_cloud.py answers
# as the cloud's node-local endpoints at 169.254.169.254 (and Azure's wireserver at
# 168.63.129.16), the components servers listen at 10.42.0.1:443 and :8443 and the join service
# at the load balancer's address CLOUD_LB:30090, all of them addresses of the namespace only.
# The nodes boot one after the other: control-plane-0 (its first boot, initialised by
# constel-init, which runs inside the namespace and reaches the node's init server at
# 10.42.1.100:9000 through the namespace's bridge), then worker-0 joins through the endpoint
# the platform layer gives, then worker-0 reboots and rejoins with its state disk.
#
# What the node-local endpoints do not serve (the role on GCP and AWS, the load balancer on
# GCP, Azure and AWS, the init-secret hash on AWS) the node finds through the cloud's
# control-plane API, faked by tests/cloud/fake_*_api.py in the namespace at the API's own
# address CLOUD_API, https on 443 (cloud_api_up): constel.cloud-api=https://CLOUD_API names it
# (the real hosts' names do not resolve in the namespace), and the initrd's CA bundle is the
# run's test CA (cloud_api_initrd: a cpio appended to the initrd overwrites
# /etc/ssl/certs/ca-certificates.crt, as the image's initrd carries the real bundle there). The
# state disk stays a command-line word (constel.state-disk=) where QEMU cannot shape the
# cloud's naming: CLOUD_CP_ARGS and CLOUD_WORKER_ARGS (cloud_overrides).
# Source after tests/lib.sh, qemu-tests/lib-node.sh and qemu-tests/netns.sh; needs work, and
# cluster_setup done. Root only (network namespaces).
#
#   cloud_overrides CSP        the command-line words of each cloud (below)
#   cloud_api_up NS CSP        the cloud's API fake at CLOUD_API:443 (Azure, AWS, OpenStack:
#                              one per cluster; GCP's runs per boot with its metadata server,
#                              in cloud_fake), its certificate, the initrd with the test CA
#   cloud_up NS CSP            the namespace, the cloud's lease, its addresses, the servers
#   cloud_fake NS CSP NAME BOOT   the cloud's fake for node NAME (one per boot), fake_pid
#   cloud_boot NS CSP NAME BOOT SECONDS [words]   node_vm in NS with constel.csp=CSP, in the
#                              background (vm_pid), the fake started first (the vTPM
#                              provisioned before it for CLOUD_VARIANT, below; CLOUD_TAMPER=BYTE:
#                              that byte of the HCL report flipped), the variant's initrd
#                              (cloud_variant_initrd); the command line in $logs/BOOT.cmdline
#   cloud_boot_end             waits for the boot (its status), stops its fake
#   cloud_init NS OUT          constel-init apply against control-plane-0's init server
#   cloud_cluster NS CSP       the three boots; statuses in cp_rc, cli_rc, w_rc, wr_rc
#   cloud_kill_jobs            stops the boots under way (vm.py first: it stops QEMU, swtpm)

# The load balancer: an address of its own, as a cloud's, where the join service answers.
CLOUD_LB=10.42.0.100
# The control-plane API's address (https, 443): the fakes of tests/cloud/fake_*_api.py
CLOUD_API=10.42.0.200
NODE_LB=$CLOUD_LB # lib-node.sh's js_args and netns_joinservice use it
CLOUD_CSPS="gcp azure aws openstack"
cloud_hash_file() { echo "$work/ws/init-secret.bcrypt"; }

# dnsmasq's options for the cloud's lease (clouds.md Part B §1): GCP a /32 whose router is
# reached through option 121's on-link route, MTU 1460; AWS a subnet lease with MTU 9001 (the
# namespace's taps carry 1500: TCP's MSS keeps the segments within it); the others a subnet
# lease naming the router.
cloud_lease_opts() {
	case $1 in
	gcp) echo "--dhcp-option=1,255.255.255.255 --dhcp-option=121,$NETNS_HOST/32,0.0.0.0,0.0.0.0/0,$NETNS_HOST --dhcp-option=26,1460" ;;
	aws) echo "--dhcp-option=26,9001 --dhcp-option=6,$CLOUD_AWS_DNS" ;;
	*) echo "" ;;
	esac
}

# cloud_overrides CSP: CLOUD_CP_ARGS and CLOUD_WORKER_ARGS for that cloud: where its API is
# (constel.cloud-api=, the fake's address; the real hosts' names do not resolve in the
# namespace) and the state disk where QEMU does not shape the cloud's naming. The role, the
# UID, the init-secret hash and the load balancer come from the node-local endpoint and the
# cloud's API, none from the command line.
cloud_overrides() {
	local api=constel.cloud-api=https://$CLOUD_API disk=constel.state-disk=/dev/vdb
	case $1 in
	openstack) # the metadata service: identity, role, UID, hash, load balancer (user_data);
		# Nova: the peers (Keystone's URL and the user are user_data's)
		CLOUD_CP_ARGS= CLOUD_WORKER_ARGS= ;;
	azure) # IMDS: identity, role, UID, hash; ARM: the peers, the load balancer
		CLOUD_CP_ARGS="$disk $api" CLOUD_WORKER_ARGS="$disk $api" ;;
	gcp) # the metadata server: identity, hash; Compute: role, UID, peers, the forwarding rule;
		# the state disk by GCP's naming (cloud_state_scsi)
		CLOUD_CP_ARGS=$api CLOUD_WORKER_ARGS=$api ;;
	aws) # IMDSv2: identity, credentials; EC2: role, UID, hash, peers; Tagging and ELBv2: the
		# load balancer's DNS name, which the VPC's DNS server (the lease's) resolves
		CLOUD_CP_ARGS="$disk $api" CLOUD_WORKER_ARGS="$disk $api" ;;
	esac
}

# cloud_state_scsi CSP: the scsi-hd properties of the cloud's state disk where QEMU shapes it
# as the cloud attaches it (GCP: a persistent disk with the device name state-disk, which
# the kernel shows in VPD page 0x83); empty: a virtio disk.
cloud_state_scsi() {
	case $1 in
	gcp) echo "vendor=Google,product=PersistentDisk,device_id=state-disk" ;;
	*) echo "" ;;
	esac
}

cloud_up() {
	local ns=$1 csp=$2 d
	d=$work/https
	NETNS_ROUTER=$NETNS_HOST NETNS_DHCP_OPTS=$(cloud_lease_opts "$csp") netns_up "$ns" "$CLOUD_LB" || return 1
	ip -n "$ns" addr add 169.254.169.254/32 dev lo || return 1
	[ "$csp" = azure ] && { ip -n "$ns" addr add 168.63.129.16/32 dev lo || return 1; }
	cloud_api_up "$ns" "$csp" || return 1
	# the components servers where the test root's /etc/hosts puts them
	netns_exec "$ns" python3 qemu-tests/https-server.py --bind "$NETNS_HOST" --port 443 \
		--cert "$d/server.crt" --key "$d/server.key" --root "$work/www" >/dev/null 2>>"$logs/components-$ns.log" &
	netns_exec "$ns" python3 qemu-tests/https-server.py --bind "$NETNS_HOST" --port 8443 \
		--cert "$d/foreign.crt" --key "$d/foreign.key" --root "$work/www" >/dev/null 2>>"$logs/components-foreign-$ns.log" &
	netns_listening "$ns" "$NETNS_HOST:443" && netns_listening "$ns" "$NETNS_HOST:8443" ||
		{ echo "the components servers did not start in $ns: $(tail -2 "$logs/components-$ns.log")" >&2; return 1; }
}

# The fake's instance for node NAME: its name and address, and what the cloud's endpoint says
# of its role, the cluster's UID, the init-secret hash and the load balancer.
cloud_fake() {
	local ns=$1 csp=$2 name=$3 boot=$4 role ip
	ip=$(node_field "$name" 2)
	role=$(node_field "$name" 1)
	set -- --set name="$name" --set ip="$ip" --set role="$role" --set uid=c0ffee42 \
		--set init_secret_hash="$(cat "$(cloud_hash_file)")" --set lb="$CLOUD_LB" --set incarnation=21
	# AWS names a node by its instance ID; Azure's IMDS names the node's scale-set VM
	[ "$csp" = aws ] && set -- "$@" --set instance_id="$(cloud_aws_id "$name")"
	[ "$csp" = azure ] && set -- "$@" --set scale_set="$(cloud_azure_scale_set "$role")" --set vmss_instance=0
	# OpenStack: user_data names Keystone at the API's address
	[ "$csp" = openstack ] && set -- "$@" --set auth_url="https://$CLOUD_API/identity/v3"
	set -- "$@" $(cloud_variant_fake_args)
	rm -f "$work/$boot.ready"
	if [ "$csp" = gcp ]; then
		# the metadata server and the Compute API in one fake: the token the one issues the
		# other accepts; the metadata server describes NAME
		cloud_api_state gcp "$name" >"$work/$boot.gce.json" || return 1
		cloud_variant_gce_state "$work/$boot.gce.json" "$boot" || return 1
		ip netns exec "$ns" python3 tests/cloud/fake_gce_api.py --state "$work/$boot.gce.json" \
			--addr 169.254.169.254 --port 80 --tls "$work/api/api.pem" --tls-listen "$CLOUD_API:443" \
			--log "$logs/$boot.fake" >"$work/$boot.ready" 2>"$logs/$boot.fake.err" &
	else
		ip netns exec "$ns" python3 tests/cloud/fake_cloud.py --csp "$csp" --log "$logs/$boot.fake" "$@" \
			>"$work/$boot.ready" 2>"$logs/$boot.fake.err" &
	fi
	fake_pid=$!
	for _ in $(seq 100); do [ -s "$work/$boot.ready" ] && return 0; sleep 0.1; done
	echo "the $csp fake did not start: $(tail -1 "$logs/$boot.fake.err")" >&2
	return 1
}

# The AWS instance ID cloud_fake gives node NAME.
cloud_aws_id() { echo "i-0$(printf '%s' "$1" | sha256sum | cut -c1-16)"; }

# Azure: the scale set of a node of ROLE (ControlPlane, Worker), as Constellation names them.
cloud_azure_scale_set() { [ "$1" = ControlPlane ] && echo constel-scale-set-control-plane || echo constel-scale-set-worker; }

# AWS: the load balancer's DNS name (ELBv2's DNSName), which the namespace's DNS server at the
# VPC's base + 2 (AmazonProvidedDNS) resolves to CLOUD_LB (A; AAAA empty, as for an IPv4 NLB:
# a refused AAAA would fail musl's lookup). Not 0123456789abcdef: that is half of the test
# bootstrap token, which the secrets scan of the serial logs looks for.
CLOUD_AWS_LB_NAME=constel-lb-5f3c9a1e7b2d4086.elb.eu-central-1.amazonaws.com
CLOUD_AWS_DNS=10.42.0.2

# cloud_api_state CSP [SELF]: the state of the cloud's API fake (JSON on stdout): the
# cluster's nodes control-plane-0 and worker-0 (every node of NODES whose name ends in -0) with
# their role, the UID c0ffee42 and the init-secret hash where the cloud keeps them, the load
# balancer at CLOUD_LB, and a node and a load balancer of another cluster the node must leave
# out. SELF: the instance GCE's metadata server describes.
cloud_api_state() {
	python3 - "$1" "${2:-}" "$(cat "$(cloud_hash_file)")" "$CLOUD_LB" "$NODES" "$CLOUD_AWS_LB_NAME" <<-'PY'
		import hashlib, json, sys
		csp, me, h, lb, nodes, lbname = sys.argv[1:7]
		uid = "c0ffee42"
		nodes = [n.split(":") for n in nodes.split() if n.split(":")[0].endswith("-0")]
		def aws_id(name):
		    return "i-0" + hashlib.sha256(name.encode()).hexdigest()[:16]
		if csp == "gcp":
		    ins = [{"name": n, "zone": "europe-west3-b", "networkIP": ip,
		            "labels": {"constellation-role": r.lower(), "constellation-uid": uid},
		            "metadata": {"constellation-init-secret-hash": h}} for n, r, ip in nodes]
		    ins.append({"name": "other-control-plane-0", "zone": "europe-west3-a",
		                "networkIP": "10.42.9.9",
		                "labels": {"constellation-role": "controlplane", "constellation-uid": "other"}})
		    s = {"project": "constel-test", "self": me, "instances": ins,
		         "zones": ["europe-west3-a", "europe-west3-b", "europe-west3-c"],
		         "forwarding_rules": [
		             {"name": "other-kubernetes", "IPAddress": "10.42.9.10", "portRange": "6443-6443",
		              "labels": {"constellation-uid": "other", "constellation-use": "kubernetes"}},
		             {"name": "constel-kubernetes", "IPAddress": lb, "portRange": "6443-6443",
		              "labels": {"constellation-uid": uid, "constellation-use": "kubernetes"}}]}
		elif csp == "azure":
		    sets = {}
		    for n, r, ip in nodes:
		        ss = "constel-scale-set-control-plane" if r == "ControlPlane" else "constel-scale-set-worker"
		        sets.setdefault(ss, {"name": ss, "tags": {"constellation-uid": uid,
		                                                   "constellation-role": r.lower()}, "vms": []})
		        sets[ss]["vms"].append({"instanceId": str(len(sets[ss]["vms"])), "computerName": n, "ip": ip})
		    s = {"subscription": "8d10da13-8125-4ba9-a717-bf7490507b3d", "resource_group": "constel-rg",
		         "scale_sets": list(sets.values()) + [
		             {"name": "other-control-plane", "tags": {"constellation-uid": "other",
		                                                      "constellation-role": "controlplane"},
		              "vms": [{"instanceId": "0", "computerName": "other-0", "ip": "10.42.9.9"}]}],
		         "load_balancers": [
		             {"name": "other-lb", "tags": {"constellation-uid": "other"},
		              "frontends": [{"publicIP": "other-ip"}]},
		             {"name": "constel-lb", "tags": {"constellation-uid": uid},
		              "frontends": [{"publicIP": "constel-lb-ip", "privateIP": None}]}],
		         "public_ips": {"constel-lb-ip": lb, "other-ip": "10.42.9.10"}}
		elif csp == "aws":
		    def inst(i, ip, role, u=uid):
		        return {"InstanceId": i, "PrivateIpAddress": ip, "AvailabilityZone": "eu-central-1b",
		                "State": "running", "Tags": {"constellation-role": role, "constellation-uid": u,
		                                             "constellation-init-secret-hash": h}}
		    arn = "arn:aws:elasticloadbalancing:eu-central-1:012345678900:loadbalancer/net/%s"
		    s = {"region": "eu-central-1",
		         "credentials": [{"AccessKeyId": "ASIAEXAMPLEKEYID0001",
		                          "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		                          "Token": "IQoJb3JpZ2luX2VjEXAMPLETOKEN//////////wEaDGV1LWNlbnRyYWwtMSJGMEQ="}],
		         "instances": [inst(aws_id(n), ip, r.lower()) for n, r, ip in nodes] +
		                      [inst("i-00000000000000d01", "10.42.9.9", "controlplane", "other")],
		         "load_balancers": [
		             {"LoadBalancerArn": arn % "constel-lb/0123456789abcdef", "LoadBalancerName": "constel-lb",
		              "DNSName": lbname, "Tags": {"constellation-uid": uid}},
		             {"LoadBalancerArn": arn % "other/fedcba9876543210", "LoadBalancerName": "other",
		              "DNSName": "other.elb.eu-central-1.amazonaws.com", "Tags": {"constellation-uid": "other"}}]}
		elif csp == "openstack":
		    t = "constellation-uid-" + uid
		    def srv(n, r, ip, tags):
		        return {"name": n, "id": hashlib.sha256(n.encode()).hexdigest()[:32], "tags": tags,
		                "addresses": {"constel-net": [{"addr": ip, "version": 4, "OS-EXT-IPS:type": "fixed"}]}}
		    s = {"user": {"name": "u", "domain": "Default", "password": "p"},
		         "networks": [{"name": "constel-net", "tags": [t]}],
		         "subnets": [{"name": "constel-net", "cidr": "10.42.0.0/16", "tags": [t]}],
		         "servers": [srv(n, r, ip, [t, "constellation-role-" + r.lower()]) for n, r, ip in nodes] +
		                    [srv("other-0", "ControlPlane", "10.42.9.9",
		                         ["constellation-uid-other", "constellation-role-controlplane"])]}
		else:
		    sys.exit("no API state for " + csp)
		json.dump(s, sys.stdout, indent=1)
	PY
}

# cloud_api_up NS CSP: CLOUD_API on the namespace's bridge, its certificate (an IP SAN,
# signed by the run's test CA $work/https/ca), the initrd whose CA bundle is that CA
# (cloud_api_initrd), and for Azure, AWS and OpenStack (Keystone, Nova, Neutron) the API's
# fake at CLOUD_API:443 for the cluster
# (AWS also a DNS server at CLOUD_AWS_DNS naming the load balancer). Its log: $logs/api.log.
cloud_api_up() {
	local ns=$1 csp=$2 d=$work/api h=$work/https
	mkdir -p "$d"
	ip -n "$ns" addr add "$CLOUD_API/16" dev "$NETNS_BRIDGE" || return 1
	openssl ecparam -name prime256v1 -genkey -noout -out "$d/api.key" 2>/dev/null &&
		openssl req -new -key "$d/api.key" -subj "/CN=$CLOUD_API" -out "$d/api.csr" 2>/dev/null &&
		printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$CLOUD_API" >"$d/api.ext" &&
		openssl x509 -req -in "$d/api.csr" -CA "$h/ca.crt" -CAkey "$h/ca.key" -CAcreateserial \
			-days 1 -extfile "$d/api.ext" -out "$d/api.crt" 2>/dev/null &&
		cat "$d/api.crt" "$d/api.key" >"$d/api.pem" || { echo "the API's certificate failed"; return 1; }
	cloud_api_initrd || return 1
	[ "$csp" = gcp ] && return 0
	cloud_api_state "$csp" >"$d/state.json" || return 1
	rm -f "$d/port"
	netns_exec "$ns" python3 "tests/cloud/fake_${csp}_api.py" --state "$d/state.json" --addr "$CLOUD_API" \
		--port 443 --tls "$d/api.pem" --log "$logs/api.log" >"$d/port" 2>"$logs/api.err" &
	for _ in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.1; done
	[ -s "$d/port" ] || { echo "the $csp API fake did not start: $(tail -1 "$logs/api.err")"; return 1; }
	[ "$csp" = aws ] || return 0
	ip -n "$ns" addr add "$CLOUD_AWS_DNS/16" dev "$NETNS_BRIDGE" || return 1
	netns_exec "$ns" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
		--listen-address="$CLOUD_AWS_DNS" --bind-interfaces --port=53 --user=root \
		--host-record="$CLOUD_AWS_LB_NAME,$CLOUD_LB" --local=/amazonaws.com/ --log-queries --log-facility="$logs/dns.log" \
		--pid-file="$d/dns.pid" >"$d/dns.out" 2>&1 &
	for _ in $(seq 50); do
		netns_exec "$ns" ss -Hlun "sport = :53" 2>/dev/null | grep -q . && return 0
		sleep 0.1
	done
	echo "the DNS server did not start: $(tail -1 "$d/dns.out")"
	return 1
}

# cloud_api_initrd: $work/initrd-api.img, the initrd with a cpio appended whose
# /etc/ssl/certs/ca-certificates.crt (the bundle the API clients read, as the image's initrd
# carries it) is the run's test CA; initrd names it from then on (CLOUD_INITRD_BASE: the one
# it was made from).
cloud_api_initrd() {
	local r=$work/api/initrd-root
	CLOUD_INITRD_BASE=${CLOUD_INITRD_BASE:-$initrd}
	rm -rf "$r" && mkdir -p "$r/etc/ssl/certs" || return 1
	cp "$work/https/ca.crt" "$r/etc/ssl/certs/ca-certificates.crt" || return 1
	{ cat "$CLOUD_INITRD_BASE" && (cd "$r" && find etc | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -n); } \
		>"$work/initrd-api.img" || { echo "the initrd with the test CA failed"; return 1; }
	initrd=$work/initrd-api.img
}

cloud_boot() {
	local ns=$1 csp=$2 name=$3 boot=$4 secs=$5
	shift 5
	cloud_variant_tpm "$name" ${CLOUD_TAMPER:-} || return 1
	cloud_variant_initrd "$boot" || return 1
	cloud_fake "$ns" "$csp" "$name" "$boot" || return 1
	# the kernel's command line (quiet: the kernel does not print it), for the record
	echo "root=/dev/vda rootfstype=ext4 constel.disk-kdf=min constel.csp=$csp constel.attestation-variant=$(cloud_variant) constel.reboot-delay=1 $(cloud_variant_words)$*" >"$logs/$boot.cmdline"
	NODE_NETNS=$ns NODE_STATE_SCSI=$(cloud_state_scsi "$csp") node_vm "$name" "$boot" "$secs" \
		--initrd "$boot_initrd" --append "$(cat "$logs/$boot.cmdline")" &
	vm_pid=$!
}

cloud_boot_end() {
	local rc
	wait "$vm_pid"
	rc=$?
	kill "$fake_pid" 2>/dev/null
	wait "$fake_pid" 2>/dev/null
	return $rc
}

cloud_init() {
	netns_exec "$1" "$tools/constel-init" --workspace "$work/ws" apply \
		--endpoint "$(node_field control-plane-0 2):9000" --measurements "$(cloud_variant_m)" \
		$(cloud_variant_args) --components "$work/components.json" --timeout 300 >"$2" 2>&1
}

cloud_kill_jobs() {
	local j
	for j in $(jobs -p); do pkill -P "$j"; done 2>/dev/null
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
}

# cloud_cluster NS CSP: the three boots (each at most CLOUD_BOOT_S seconds, 600 by default);
# BOOT names: CSP-cp, CSP-worker, CSP-worker-reboot. cp_rc, cli_rc, w_rc, wr_rc: the statuses
# (124: not reached). CLOUD_SAY (a function) is told each step.
cloud_cluster() {
	local ns=$1 csp=$2 s=${CLOUD_BOOT_S:-600}
	local say=${CLOUD_SAY:-:}
	cp_rc=124 cli_rc=124 w_rc=124 wr_rc=124
	cloud_variant_up "$ns" || return 1
	$say "== control-plane-0 ($csp): first boot; constel-init initialises it through the namespace"
	cloud_boot "$ns" "$csp" control-plane-0 "$csp-cp" "$s" ${CLOUD_CP_ARGS:-} || return 1
	if node_wait "$csp-cp" 'init server listening' "$s" "$vm_pid"; then
		cloud_init "$ns" "$logs/$csp-constel-init.out"
		cli_rc=$?
		[ $cli_rc = 0 ] || pkill -P "$vm_pid"
	fi
	cloud_boot_end
	cp_rc=$?
	[ $cp_rc = 0 ] && [ $cli_rc = 0 ] || return 1
	$say "== worker-0 ($csp): first boot; joins through the join service at the load balancer $CLOUD_LB:30090"
	js_args "$(cloud_variant_m)"
	netns_exec "$ns" "$tools/constel-joinservice" --listen "$CLOUD_LB:30090" "${JS_ARGS[@]}" $(cloud_variant_args) \
		>>"$logs/joinservice.log" 2>&1 &
	netns_listening "$ns" "$CLOUD_LB:30090" ||
		{ echo "join service did not start in $ns: $(tail -2 "$logs/joinservice.log")" >&2; return 1; }
	cloud_boot "$ns" "$csp" worker-0 "$csp-worker" "$s" ${CLOUD_WORKER_ARGS:-} || return 1
	cloud_boot_end
	w_rc=$?
	[ $w_rc = 0 ] || return 1
	$say "== worker-0 ($csp): reboot; rejoins with its state disk"
	cloud_boot "$ns" "$csp" worker-0 "$csp-worker-reboot" "$s" ${CLOUD_WORKER_ARGS:-} || return 1
	cloud_boot_end
	wr_rc=$?
	[ $wr_rc = 0 ]
}

# ---- the attestation variant of the boots (CLOUD_VARIANT) ----
# CLOUD_VARIANT (qemu-vtpm when unset; azure-sev-snp with constel.csp=azure) is the nodes'
# constel.attestation-variant= and what constel-init and the join service validate with. For a
# cloud's variant each node's vTPM is provisioned before QEMU starts, as that cloud provisions
# it (build/test/tools/vtpm-provision: tests/attest/vtpm_provision.h's logic against swtpm's
# socket on the node's state dir), the cloud's fake serves what the node fetches besides, and
# the tools trust the test AMD root (--amd-root) under the variant's attestationConfig
# (docs/cloudboot.md says what is real and what is faked).
#   azure-sev-snp: the HCL AK persisted at 0x81000003 and an HCL report in NV 0x01400001 whose
#     SNP report the test chain of tests/attest/azure_snp_test.py signs (one chain per cluster,
#     a report per node: REPORT_DATA is the SHA-256 of runtime data naming that node's AK;
#     trimmed to swtpm's 2048-byte NV limit), THIM's VCEK and chain from the fake IMDS.
#   aws-sev-snp: no SEV-SNP under TCG: the guest's /dev/sev-guest is tests/vm/sev_guest_fake.c
#     (CUSE), started by the pre-init shim of an overlay initrd (qemu-tests/preinit.sh) before
#     the agent, signing with the test chain of tests/attest/snp-test/chain.sh (one per
#     cluster; its template report and certificate table from fake_sev_tsm.py --write); the
#     AK is the agent's own at 0x81008F01 as on qemu-vtpm. CLOUD_SNP_TAMPER=N: the boot's first
#     N reports get a byte of the measurement flipped after signing. docs/sevboot.md.
#   gcp-sev-es: GCE's AK template in NV 0x01c10001 (the AK the agent makes from it, as PEM, in
#     $(cloud_variant_dir)/ak-NAME.pem: getShieldedInstanceIdentity's signingKey of NAME in
#     the GCE fake); the initrd with the test pre-init shim (qemu-tests/preinit.sh) whose step
#     build/vm/gce_pcr0 extends PCR 0 with GCE's firmware events and writes their log to
#     /preinit/eventlog, which constel.event-log= hands to the agent (qboot measures nothing);
#     the tools ask the fake's Compute API at https://CLOUD_API with the run's test CA
#     (--ca-bundle) and a token made for the cluster (GOOGLE_OAUTH_ACCESS_TOKEN, the fake's
#     access_tokens); CLOUD_GCE_OTHER_KEY_BOOT=BOOT: that boot's fake answers the first
#     getShieldedInstanceIdentity with another key ($(cloud_variant_dir)/other.pem).
#   aws-nitro-tpm: nothing to provision (NitroTPM's AK is the agent's own, at 0x81008F01, as on
#     qemu-vtpm; the identity document comes from the fake IMDSv2); the validators' EC2
#     DescribeImages (TpmSupport of the document's AMI) goes to tests/cloud/fake_aws_api.py in
#     the namespace, SigV4-checked, with the validator's own credentials in the environment.
#
#   cloud_variant_up NS [PORT]     what the validators ask, in NS (aws-nitro-tpm: the EC2 fake,
#                                  on PORT when given; CLOUD_AWS_TPM= set and empty: the AMI
#                                  without TpmSupport)
#   cloud_variant_m                the measurements file the tools take (the variant's config)
#   cloud_variant_args             constel-init's and the join service's other options (words)
#   cloud_variant_fake_args        the fake's extra --set options
#   cloud_variant_words            the variant's kernel command-line words (each with a
#                                  trailing blank)
#   cloud_variant_gce_state FILE BOOT   the GCE fake's state amended for the variant
#   cloud_variant_tpm NAME [BYTE]  node NAME's vTPM provisioned (once per state dir); BYTE: the
#                                  HCL report's byte at that offset flipped, then written anew
#   cloud_variant_initrd BOOT      boot_initrd: the initrd BOOT boots (aws-sev-snp: initrd with
#                                  the pre-init overlay of the fake /dev/sev-guest and its
#                                  probe, tests/vm/sev_guest_probe.c; gcp-sev-es: gce_pcr0's)
cloud_variant() { echo "${CLOUD_VARIANT:-qemu-vtpm}"; }
cloud_variant_dir() { echo "$work/variant"; }

cloud_variant_m() {
	local v d
	v=$(cloud_variant) d=$(cloud_variant_dir)
	case $v in
	azure-sev-snp) # the test report's TCB and ID key digest; every PCR zero (qboot measures
		# nothing, PCR 15 before the node lock)
		mkdir -p "$d"
		python3 - "$d/config.json" <<-'PY'
			import json, sys
			m = {str(p): {"expected": "00" * 32, "warnOnly": False} for p in (4, 8, 9, 11, 12, 13, 15)}
			json.dump({"measurements": m, "bootloaderVersion": 3, "teeVersion": 0, "snpVersion": 8,
			           "microcodeVersion": 209, "firmwareSignerConfig": {
			               "acceptedKeyDigests": ["5a" * 48], "enforcementPolicy": "Equal"},
			           "amdRootKey": ""}, open(sys.argv[1], "w"))
		PY
		echo "$d/config.json" ;;
	aws-sev-snp) # the test chain's TCB and its ASVK as amdSigningKey; every PCR zero as above
		mkdir -p "$d"
		python3 - "$d/config.json" "$d/snp/asvk.pem" <<-'PY'
			import json, sys
			m = {str(p): {"expected": "00" * 32, "warnOnly": False} for p in (4, 8, 9, 11, 12, 13, 15)}
			json.dump({"measurements": m, "bootloaderVersion": 3, "teeVersion": 0, "snpVersion": 8,
			           "microcodeVersion": 209, "amdRootKey": "",
			           "amdSigningKey": open(sys.argv[2]).read()}, open(sys.argv[1], "w"))
		PY
		echo "$d/config.json" ;;
	gcp-sev-es) # GCP's enforced PCRs as gce_pcr0's events leave them (PCR 4: the separator
		# on zero; the others zero), and PCR 0 enforced too: GCE's version and NonHostInfo,
		# then the separator; PCR 1, 2, 3, 6 warnOnly (Constellation's GCP measurements)
		mkdir -p "$d"
		python3 - "$d/gce-m.json" <<-'PY'
			import hashlib, json, sys
			H = lambda b: hashlib.sha256(b).digest()
			ext = lambda pcr, d: H(pcr + d)
			ucs2 = "GCE Virtual Firmware v1\0".encode("utf-16-le")
			nhi = b"GCE NonHostInfo\0" + bytes([1]) + bytes(15)
			sep = H(bytes(4))
			pcr = {p: bytes(32) for p in range(16)}
			for d in (H(ucs2), H(nhi)):
			    pcr[0] = ext(pcr[0], d)
			for p in range(8):
			    pcr[p] = ext(pcr[p], sep)
			m = {str(p): {"expected": pcr[p].hex(), "warnOnly": p in (1, 2, 3, 6)}
			     for p in (0, 1, 2, 3, 4, 6, 8, 9, 11, 12, 13, 15)}
			json.dump(m, open(sys.argv[1], "w"))
		PY
		echo "$d/gce-m.json" ;;
	aws-nitro-tpm) # its enforced PCRs, every one zero as above
		mkdir -p "$d"
		python3 -c 'import json, sys; json.dump({str(p): {"expected": "00" * 32, "warnOnly": False} for p in (4, 8, 9, 11, 12, 13, 15)}, open(sys.argv[1], "w"))' "$d/m.json"
		echo "$d/m.json" ;;
	*) echo "$work/m.json" ;;
	esac
}

# The EC2 fake the aws-nitro-tpm validators ask (cloud_aws_api), at 127.0.0.1 in NS: the AMI
# of fake_cloud.py's identity document with TpmSupport v2.0, the validator's credentials
# (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY exported for the tools); its pid in cloud_aws_pid
cloud_variant_up() {
	local d port img
	d=$(cloud_variant_dir)
	case $(cloud_variant) in
	aws-nitro-tpm) ;;
	aws-sev-snp) # the test chain, the template report and the certificate table (VLEK, ASVK)
		mkdir -p "$d/snp" "$d/sev-guest"
		bash tests/attest/snp-test/chain.sh "$d/snp" &&
			python3 tests/attest/fake_sev_tsm.py "$d/sev-guest" "$d/snp" --write --signer vlek ||
			{ echo "the test AMD chain or the fake's files failed: $(tail -2 "$d/snp/openssl.log")" >&2; return 1; }
		return 0 ;;
	gcp-sev-es)
		cloud_variant_gce_up
		return ;;
	*) return 0 ;;
	esac
	mkdir -p "$d"
	AWS_ACCESS_KEY_ID=AKIACONSTELVALIDATOR
	# one made for the cluster (never the caller's own: it goes into the fake's state file)
	[ -n "${cloud_aws_secret:-}" ] || cloud_aws_secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')
	AWS_SECRET_ACCESS_KEY=$cloud_aws_secret
	export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	img='{"ImageId": "ami-0123456789abcdeff", "TpmSupport": "v2.0"}'
	[ -n "${CLOUD_AWS_TPM-v2.0}" ] || img='{"ImageId": "ami-0123456789abcdeff"}'
	printf '{"region": "eu-central-1", "credentials": [{"AccessKeyId": "%s", "SecretAccessKey": "%s"}], "images": [%s]}\n' \
		"$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$img" >"$d/ec2.json"
	rm -f "$d/ec2.port"
	netns_exec "$1" python3 tests/cloud/fake_aws_api.py --state "$d/ec2.json" --log "$logs/validator-ec2.log" \
		--port "${2:-0}" >"$d/ec2.port" 2>>"$logs/validator-ec2.err" &
	cloud_aws_pid=$!
	for _ in $(seq 100); do
		port=$(head -1 "$d/ec2.port" 2>/dev/null)
		[ -n "$port" ] && { cloud_aws_api=http://127.0.0.1:$port; return 0; }
		sleep 0.1
	done
	echo "the validators' EC2 fake did not start: $(tail -1 "$logs/validator-ec2.err")" >&2
	return 1
}

# gcp-sev-es: the validators' token, another RSA key for the refused case (the initrd with
# the pre-init shim and gce_pcr0: cloud_variant_initrd).
cloud_variant_gce_up() {
	local d
	d=$(cloud_variant_dir)
	mkdir -p "$d"
	[ -x "$BUILD/vm/gce_pcr0" ] || { echo "$BUILD/vm/gce_pcr0 is missing (make $BUILD/vm/gce_pcr0)" >&2; return 1; }
	[ -n "${GOOGLE_OAUTH_ACCESS_TOKEN:-}" ] ||
		GOOGLE_OAUTH_ACCESS_TOKEN=ya29.$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
	export GOOGLE_OAUTH_ACCESS_TOKEN
	[ -s "$d/other.pem" ] || openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 2>/dev/null |
		openssl pkey -pubout -out "$d/other.pem" 2>/dev/null ||
		{ echo "another RSA key for the GCE fake failed" >&2; return 1; }
}

cloud_variant_gce_state() {
	[ "$(cloud_variant)" = gcp-sev-es ] || return 0
	python3 - "$1" "$(cloud_variant_dir)" "$GOOGLE_OAUTH_ACCESS_TOKEN" \
		"$([ "${CLOUD_GCE_OTHER_KEY_BOOT:-}" = "$2" ] && echo 1 || echo 0)" <<-'PY'
		import json, os, sys
		path, d, tok, other = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
		s = json.load(open(path))
		for i in s["instances"]:
		    f = os.path.join(d, "ak-%s.pem" % i["name"])
		    if os.path.exists(f):
		        i["signing_key"] = open(f).read()
		s["access_tokens"] = [tok]
		if other:
		    s["other_signing_key"] = open(os.path.join(d, "other.pem")).read()
		    s["other_key_first"] = other
		json.dump(s, open(path, "w"), indent=1)
	PY
}

cloud_variant_words() {
	case $(cloud_variant) in
	gcp-sev-es) echo "constel.event-log=/preinit/eventlog " ;;
	esac
}

cloud_variant_args() {
	case $(cloud_variant) in
	qemu-vtpm) echo "" ;;
	azure-sev-snp) echo "--attestation azure-sev-snp --amd-root $(cloud_variant_dir)/ark.pem" ;;
	aws-sev-snp) echo "--attestation aws-sev-snp --amd-root $(cloud_variant_dir)/snp/ark.pem" ;;
	aws-nitro-tpm) echo "--attestation aws-nitro-tpm --api $cloud_aws_api" ;;
	gcp-sev-es) echo "--attestation gcp-sev-es --api https://$CLOUD_API --ca-bundle $work/https/ca.crt" ;;
	*) echo "--attestation $(cloud_variant)" ;;
	esac
}

cloud_variant_fake_args() {
	local d
	d=$(cloud_variant_dir)
	case $(cloud_variant) in
	azure-sev-snp) echo "--set thim_vcek=$d/vcek.pem --set thim_chain=$d/chain.pem" ;;
	esac
}

# cloud_variant_swtpm DIR: swtpm on the state in DIR at 127.0.0.1 (tpm_pid, tpm_tcti), as the
# unit tests' swtpm.h starts it (tpm2-tss's swtpm TCTI takes the control channel at port + 1)
# (free_port's port is free, the next one may not be: swtpm exiting at once is retried on
# other ports, 5 times at most)
cloud_variant_swtpm() {
	local p c
	for _ in 1 2 3 4 5; do
		p=$(free_port) c=$((p + 1))
		swtpm socket --tpm2 --server "type=tcp,port=$p,bindaddr=127.0.0.1" \
			--ctrl "type=tcp,port=$c,bindaddr=127.0.0.1" --tpmstate "dir=$1" \
			--flags not-need-init,startup-clear --log "file=$1.provision.log" &
		tpm_pid=$!
		tpm_tcti=swtpm:host=127.0.0.1,port=$p
		for _ in $(seq 50); do
			kill -0 "$tpm_pid" 2>/dev/null || break
			python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$p" 2>/dev/null && return 0
			sleep 0.1
		done
		kill -0 "$tpm_pid" 2>/dev/null && break
		wait "$tpm_pid" 2>/dev/null
	done
	echo "swtpm on $1 did not start: $(tail -2 "$1.provision.log")" >&2
	return 1
}

cloud_variant_initrd() {
	local boot=$1 d
	d=$(cloud_variant_dir)
	boot_initrd=$initrd
	case $(cloud_variant) in
	aws-sev-snp) # the fake /dev/sev-guest (CUSE) and its probe, before the agent
		echo "${CLOUD_SNP_TAMPER:+--tamper-first $CLOUD_SNP_TAMPER}" >"$d/sev-guest/args"
		set -- --module cuse --step "$BUILD/vm/sev_guest_fake:50-sev-guest" \
			--step "$BUILD/vm/sev_guest_probe:60-sev-guest-probe" \
			--file "$d/snp/signer.key:/preinit/sev-guest/signer.key" \
			--file "$d/sev-guest/report.bin:/preinit/sev-guest/report.bin" \
			--file "$d/sev-guest/table.bin:/preinit/sev-guest/table.bin" \
			--file "$d/sev-guest/args:/preinit/sev-guest/args" ;;
	gcp-sev-es) # GCE's PCR 0 firmware events and their log (/preinit/eventlog)
		set -- --step "$BUILD/vm/gce_pcr0:10-gce-pcr0" ;;
	*) return 0 ;;
	esac
	BUILD=$BUILD qemu-tests/preinit.sh "$work/initrd-$boot.img" --base "$initrd" "$@" >&2 || return 1
	boot_initrd=$work/initrd-$boot.img
}

cloud_variant_tpm() {
	local name=$1 byte=${2:-} tpm d n rc=0
	local prov=$PWD/$BUILD/test/tools/vtpm-provision
	d=$(cloud_variant_dir) tpm=$work/tpm-$name
	case $(cloud_variant) in
	azure-sev-snp | gcp-sev-es) ;;
	*) return 0 ;;
	esac
	[ -z "$byte" ] && [ "$(cat "$tpm.variant" 2>/dev/null)" = "$(cloud_variant)" ] && return 0
	[ -x "$prov" ] || { echo "$prov is missing (make $BUILD/test/tools/vtpm-provision)" >&2; return 1; }
	mkdir -p "$tpm" "$d"
	cloud_variant_swtpm "$tpm" || return 1
	if [ "$(cloud_variant)" = gcp-sev-es ]; then
		"$prov" "$tpm_tcti" gce >"$d/ak-$name.pem" || rc=1
	elif n=$("$prov" "$tpm_tcti" hcl-ak); then
		# runtime data as the HCL writes it: the AK as a JWK, the VM's configuration
		printf '{"keys":[{"kid":"HCLAkPub","key_ops":["sign"],"kty":"RSA","e":"AQAB","n":"%s"}],"vm-configuration":{"console-enabled":true,"secure-boot":true,"tpm-enabled":true,"vmUniqueId":"5E3C1E43-7A26-4B7D-A1C5-6A3B6A7D3F21"}}' \
			"$n" >"$d/rt-$name.json"
		python3 tests/attest/azure_snp_test.py "$d" "$d/rt-$name.json" &&
			mv "$d/hcl.bin" "$d/hcl-$name.bin" &&
			{ [ -z "$byte" ] || python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2], 0); b = bytearray(open(p, "rb").read()); b[o] ^= 1; open(p, "wb").write(b)' "$d/hcl-$name.bin" "$byte"; } &&
			"$prov" "$tpm_tcti" nv 0x01400001 "$d/hcl-$name.bin" || rc=1
	else
		rc=1
	fi
	kill "$tpm_pid" 2>/dev/null
	wait "$tpm_pid" 2>/dev/null
	[ $rc = 0 ] || { echo "provisioning $name's vTPM for $(cloud_variant) failed" >&2; return 1; }
	if [ -z "$byte" ]; then cloud_variant >"$tpm.variant"; else echo tampered >"$tpm.variant"; fi
}
