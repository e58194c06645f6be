#!/bin/bash
# RUN_CSP=gcp|azure|aws|openstack make run: the test cluster booted as that cloud (as root:
# network namespaces). qemu-tests/cloud-cluster.sh has the set-up: a network namespace with the
# cloud's DHCP lease, tests/cloud/fake_cloud.py as the cloud's node-local endpoints at
# 169.254.169.254 (and Azure's wireserver at 168.63.129.16), the components servers and the
# join service on the namespace's own addresses, nothing routed out. Each node boots the agent's
# initrd directly (qboot, Debian's kernel, constel.csp=CSP on its command line; not the UKI of
# plain make run, whose command line is measured and says csp qemu), swtpm per node, attestation
# qemu-vtpm with PCR 15 enforced. control-plane-0 is initialised by constel-init from inside
# the namespace, worker-0 joins at the load balancer's address and rejoins after a reboot.
# Prints what each node read from its cloud, how it joined and its boot up to the join; ends
# with status 1 and one line when a step fails. The cloud's control-plane API is faked at
# 10.42.0.200:443 over https (cloud_api_up); the node finds its role, UID, hash and load
# balancer there; the command-line words each cloud has (the API's address, the state disk
# where QEMU cannot shape its naming) are in cloud_overrides and printed.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
csp=${1:-${RUN_CSP:-}}
say() { printf '%s\n' "$*"; }
die() { say "make run: $*" >&2; exit 1; }
case $csp in
gcp | azure | aws | openstack) ;;
*) die "RUN_CSP=$csp is not one of gcp, azure, aws, openstack (or leave it empty for the QEMU cluster)" ;;
esac
[ "$(id -u)" = 0 ] || die "RUN_CSP=$csp needs root (a network namespace per run): sudo RUN_CSP=$csp make run"
. tests/lib.sh
work=$(mktemp -d /tmp/constel-runcsp-XXXXXX)
NODE_LOGS=${NODE_LOGS:-$PWD/$BUILD/run-logs}
rm -rf "$NODE_LOGS"
. qemu-tests/lib-node.sh
. qemu-tests/netns.sh
. qemu-tests/cloud-cluster.sh
ns=constel-run-$csp-$$
trap 'cloud_kill_jobs; netns_down "$ns"; cluster_stop 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
t_run=$(date +%s)
for f in "$BUILD/constel-agent.stripped" "$BUILD/vm/standin" "$tools/constel-init" \
	"$tools/constel-joinservice" "$initrd"; do
	[ -e "$f" ] || die "$f is missing: run it as 'RUN_CSP=$csp make run'"
done
say "== setting up: root disk, components, CLI workspace; the namespace $ns as $csp"
cluster_setup >"$work/setup.out" 2>&1 || die "set-up failed: $(tail -3 "$work/setup.out")"
cloud_up "$ns" "$csp" >"$work/up.out" 2>&1 || die "the namespace did not come up: $(tail -2 "$work/up.out")"
cloud_overrides "$csp"
say "    initrd: $initrd, $(stat -c %s "$initrd") bytes; attestation qemu-vtpm, PCR 15 enforced"
if [ "$csp" = gcp ]; then
	say "    the gcp fake: tests/cloud/fake_gce_api.py, the metadata server at 169.254.169.254 and the Compute API at https://$CLOUD_API"
else
	say "    the $csp fake: tests/cloud/fake_cloud.py at 169.254.169.254$([ "$csp" = azure ] && echo ' and 168.63.129.16')"
	say "    the $csp API: tests/cloud/fake_${csp}_api.py at https://$CLOUD_API"
fi
opts=$(cloud_lease_opts "$csp")
say "    the lease: router $NETNS_HOST${opts:+; dnsmasq $opts}"
say "    the API's certificate: of the run's test CA, which is the initrd's CA bundle"
say "    command-line words: control plane '${CLOUD_CP_ARGS:-none}'"
say "                        worker        '${CLOUD_WORKER_ARGS:-none}'"

# what BOOT read and did: its identity line, its join, Azure's report, QEMU start -> join
report() {
	local l=$logs/$1.log
	grep -aoE 'constel-agent: info: (modules: [0-9]+ loaded.*|net: [a-z0-9]+ [0-9./]+ router.*|node: .*, (control plane|worker), .*|disk: .* is the state disk|azure: reported .*|(gcp|azure|aws|openstack): .* from (the Compute API|ARM|EC2|ELBv2|Nova).*|join: IssueJoinTicket at [^ ]*|rejoin: IssueRejoinTicket at [^ ]*|init: request .*)' "$l" |
		sed 's/^constel-agent: info: /    /' | cut -c1-130
	python3 - "$l" <<'PY'
import re, sys
t = {}
for l in open(sys.argv[1], "rb").read().decode("utf-8", "replace").splitlines():
    m = re.match(r"\[\s*([\d.]+)\] (.*)", l)
    if not m:
        continue
    for k, pat in (("agent", "constel-agent starting as PID 1"), ("net", r"info: net: \w+ .* router"),
                   ("node", r"info: node: "), ("join", r"info: (re)?join: Issue|info: init: request")):
        if k not in t and re.search(pat, m.group(2)):
            t[k] = float(m.group(1))
if "agent" in t:
    print("    QEMU start -> agent %.1f s, network %s s, identity %s s, join/init %s s" % (
        t["agent"], *("%.1f" % t[k] if k in t else "-" for k in ("net", "node", "join"))))
PY
}
CLOUD_SAY=say cloud_cluster "$ns" "$csp" 2>"$work/cluster.err"
ok=$?
for b in cp worker worker-reboot; do
	[ -e "$logs/$csp-$b.log" ] || continue
	say "== $csp-$b"
	report "$csp-$b"
done
[ -e "$logs/$csp-constel-init.out" ] && sed 's/^/    constel-init: /' "$logs/$csp-constel-init.out" | grep -v '^    constel-init: $'
[ $ok = 0 ] || die "the $csp cluster failed (control plane $cp_rc, constel-init $cli_rc, worker $w_rc, reboot $wr_rc): $(tail -1 "$work/cluster.err") $(tail_log "$csp-cp" 2>/dev/null) see $logs/"
say "== done in $(($(date +%s) - t_run)) s: control plane initialised, worker joined and rejoined as $csp; logs in $logs/"
