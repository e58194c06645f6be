#!/bin/bash
# RUN_CSP= make run (qemu-tests/run-main.sh -> qemu-tests/run-cloud.sh): a value that is no
# cloud's ends the run at once with one line, before any boot; as a user other than root it
# says root is needed; RUN_CSP=openstack (as root) boots the cluster as OpenStack: each node
# reads its identity from the fake metadata service in the run's network namespace, the
# control plane is initialised, the worker joins at the load balancer from user_data and
# rejoins, and nothing of the run (QEMU, swtpm, the namespace) is left. Three boots.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh
work=$(mktemp -d /tmp/constel-runcsp-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

t=make_run_refuses_a_run_csp_that_is_no_clouds
RUN_CSP=vmware timeout 60 bash qemu-tests/run-main.sh >"$work/out" 2>"$work/err"
rc=$?
line="make run: RUN_CSP=vmware is not one of gcp, azure, aws, openstack (or leave it empty for the QEMU cluster)"
[ $rc = 1 ] && [ "$(cat "$work/err")" = "$line" ] && [ ! -s "$work/out" ] && pass $t ||
	fail $t "status $rc, stderr '$(head -c 300 "$work/err" | tr '\n' '|')'"

if [ "$(id -u)" != 0 ]; then
	echo "# not root: RUN_CSP boots skipped"
	exit 0
fi
t=make_run_with_run_csp_says_it_needs_root
if command -v setpriv >/dev/null; then
	RUN_CSP=gcp timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups bash qemu-tests/run-main.sh >"$work/out" 2>"$work/err"
	rc=$?
	[ $rc = 1 ] && grep -q '^make run: RUN_CSP=gcp needs root' "$work/err" && pass $t ||
		fail $t "status $rc, stderr '$(head -c 300 "$work/err" | tr '\n' '|')'"
fi

t=make_run_with_run_csp_openstack_boots_the_cluster_as_openstack
logs=$PWD/$BUILD/run-csp-logs
NODE_LOGS=$logs RUN_CSP=openstack timeout 1500 nice -n 5 bash qemu-tests/run-main.sh >"$work/out" 2>"$work/err"
rc=$?
if [ $rc = 0 ] && grep -aq 'starting as PID 1 (csp openstack,' "$logs/openstack-cp.log" &&
	grep -q '^    node: control-plane-0, control plane, 10.42.1.100' "$work/out" &&
	grep -q '^    join: IssueJoinTicket at 10.42.0.100:30090' "$work/out" &&
	grep -q '^    rejoin: IssueRejoinTicket at 10.42.0.100:30090' "$work/out" &&
	grep -q '^== done in .* as openstack' "$work/out"; then
	pass $t
else
	fail $t "status $rc: $(tail -c 300 "$work/err" | tr '\n' '|') $(tail -3 "$work/out" | tr '\n' '|')"
fi
t=make_run_with_run_csp_leaves_no_namespace_qemu_or_swtpm
left=$(ip netns list | grep -c '^constel-run-openstack-')
procs=$(pgrep -fa "qemu-system.*$logs|swtpm.*$logs" | grep -v pgrep)
[ "$left" = 0 ] && [ -z "$procs" ] && pass $t || fail $t "$left namespaces, processes: $(head -c 200 <<<"$procs")"
