# The shipped agent binary: fully static, and its command line behaves as documented.
. tests/lib.sh
agent=$BUILD/constel-agent

t=agent_is_statically_linked
if file "$agent" | grep -q 'statically linked' &&
	ldd "$agent" 2>&1 | grep -q 'not a dynamic executable' &&
	LC_ALL=C readelf -d "$agent" | grep -q 'There is no dynamic section'; then
	pass $t
else
	fail $t "$(file "$agent"); $(ldd "$agent" 2>&1)"
fi

t=agent_stripped_copy_is_smaller_and_runs
if [ -x "$agent.stripped" ] && [ "$(stat -c %s "$agent.stripped")" -lt "$(stat -c %s "$agent")" ] &&
	"$agent.stripped" --version >/dev/null; then
	pass $t
else
	fail $t "missing, not smaller, or does not run"
fi

t=agent_version_lists_every_pinned_dependency
out=$("$agent" --version)
missing=
while read -r name src ver; do
	case $name in '' | '#'*) continue ;; esac
	grep -qE "^$name +$src +$(printf '%s' "$ver" | sed 's/[.+]/\\&/g') " <<<"$out" || missing="$missing $name"
done <deps/versions.txt
for name in bearssl nanopb nghttp2 tpm2-tss cryptsetup json-c libsodium zlib; do
	grep -q "^$name " <<<"$out" || missing="$missing $name"
done
if [ -z "$missing" ] && grep -q "^constel-agent $(cat VERSION)$" <<<"$out"; then
	pass $t
else
	fail $t "not listed:$missing"
fi

# The libraries that can say their own version must agree with the pinned Debian version.
t=agent_version_matches_what_the_linked_libraries_report
bad=
for pair in nghttp2:1.52.0 json-c:0.16 libsodium:1.0.18 zlib:1.2.13 libdm:1.02.185; do
	grep -qE "^${pair%%:*} .* ${pair#*:}" <<<"$out" || bad="$bad ${pair%%:*}"
done
if [ -z "$bad" ]; then pass $t; else fail $t "reported version differs for:$bad"; fi

t=agent_help_lists_the_commands_and_options
out=$("$agent" --help)
if [ $? = 0 ] && grep -q '^Commands:' <<<"$out" && grep -q '^  version ' <<<"$out" &&
	grep -q -- '--tpm TCTI' <<<"$out" && grep -q -- '-v N' <<<"$out" &&
	[ "$("$agent" help)" = "$out" ]; then
	pass $t
else
	fail $t "help text incomplete"
fi

# Usage errors: exit 2, exactly one line on stderr, nothing on stdout.
usage_error() {
	local t=$1 want=$2 out err rc
	shift 2
	err=$("$agent" "$@" 2>&1 >/dev/null)
	rc=$?
	out=$("$agent" "$@" 2>/dev/null)
	if [ $rc = 2 ] && [ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] &&
		[ "$err" = "$want" ]; then
		pass "$t"
	else
		fail "$t" "exit $rc, stderr '$err', stdout '$out'"
	fi
}
usage_error agent_unknown_option_exits_2_with_one_line \
	"constel-agent: unknown option '--frobnicate' (see --help)" --frobnicate
usage_error agent_unknown_command_exits_2 \
	"constel-agent: unknown command 'frobnicate' (see --help)" frobnicate
usage_error agent_no_command_exits_2 "constel-agent: no command given (see --help)"
usage_error agent_bad_verbosity_exits_2 \
	"constel-agent: option -v: level must be -1, 0, 1 or 2, got '7'" -v 7 version
usage_error agent_bad_tpm_exits_2 \
	"constel-agent: option --tpm: tcti swtpm: port must be 1 to 65534, got '0'" \
	--tpm swtpm:port=0 version
usage_error agent_usage_error_quoting_a_newline_stays_one_line \
	"constel-agent: unknown command 'a?b' (see --help)" "$(printf 'a\nb')"

# The host commands' own options: the same one-line usage errors, before anything is done.
usage_error agent_join_missing_option_exits_2 \
	"constel-agent join: option --name is required" join --endpoint 127.0.0.1:1 --role worker \
	--disk-uuid u --ssh-host-key /nonexistent/k --out /nonexistent/o --attestation dummy
usage_error agent_join_refuses_a_name_the_join_service_refuses \
	"constel-agent join: option --name: the JoinService takes only lowercase letters, digits, '-' and '_' (at most 63)" \
	join --endpoint 127.0.0.1:1 --name node.example --role worker --disk-uuid u \
	--ssh-host-key /nonexistent/k --out /nonexistent/o --attestation dummy
usage_error agent_join_bad_role_exits_2 \
	"constel-agent join: option --role: worker or control-plane" join --endpoint 127.0.0.1:1 \
	--name n --role master --disk-uuid u --ssh-host-key /nonexistent/k --out /nonexistent/o \
	--attestation dummy
usage_error agent_serve_init_bad_timeout_exits_2 \
	"constel-agent serve-init: option --kubeadm-timeout: 'soon' is not 1..86400 seconds" \
	serve-init --listen 127.0.0.1:0 --init-secret-hash h --disk-uuid u --out o --kubeadm true \
	--kubeadm-timeout soon
usage_error agent_install_component_bad_timeout_exits_2 \
	"constel-agent install-component: option --timeout: 'abc' is not 1..3600 seconds" \
	install-component --url data:,x --path /x --timeout abc
usage_error agent_net_dhcp_bad_timeout_exits_2 \
	"constel-agent net-dhcp: option --timeout: '5s' is not 0..86400 seconds (0: retry forever)" \
	net-dhcp --timeout 5s
usage_error agent_rejoin_unknown_option_exits_2 \
	"constel-agent rejoin: unknown option '--name'" rejoin --name n
# the line names every variant the agent knows (the list grows with the variants), dummy last
known=$(for v in aws-nitro-tpm aws-sev-snp azure-sev-snp azure-tdx gcp-sev-es gcp-sev-snp qemu-vtpm; do
	"$agent" --tpm swtpm:host=127.0.0.1,port=1 attest --attestation $v --nonce 00 \
		--user-data "$(printf '00%.0s' $(seq 32))" 2>&1 | grep -q 'unknown attestation variant' ||
		printf '%s, ' $v
done)
usage_error agent_unknown_attestation_variant_exits_2 \
	"constel-agent serve-recover: unknown attestation variant 'sev' (${known}dummy)" \
	serve-recover --listen 127.0.0.1:0 --disk-uuid u --out o --attestation sev
usage_error agent_attest_needs_32_bytes_of_user_data \
	"constel-agent attest: option --user-data: 32 bytes in hex" attest --nonce 00 --user-data 0011

t=agent_serve_init_refuses_a_malformed_hash_file
printf 'not a hash\n' >"${TMPDIR:-/tmp}/constel-badhash.$$"
err=$("$agent" serve-init --listen 127.0.0.1:0 --init-secret-hash "${TMPDIR:-/tmp}/constel-badhash.$$" \
	--disk-uuid u --out "${TMPDIR:-/tmp}/constel-badhash-out.$$" --kubeadm true --attestation dummy 2>&1)
rc=$?
rm -rf "${TMPDIR:-/tmp}/constel-badhash.$$" "${TMPDIR:-/tmp}/constel-badhash-out.$$"
if [ $rc = 1 ] && grep -q 'bcrypt hash: 10 characters, want 60' <<<"$err"; then
	pass $t
else
	fail $t "exit $rc: $err"
fi
