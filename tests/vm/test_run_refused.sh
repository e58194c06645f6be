# make run (qemu-tests/run-main.sh) when the measurements do not match: with RUN_MEASUREMENTS,
# $BUILD/measurements.json with PCR 9 changed. It prints the measurements it enforces, boots
# control-plane-0 through OVMF and the UKI of make uki, constel-init refuses the node, and the
# run ends with status 1 and one line on stderr naming the PCR, the expected value and the one
# the node quoted (which is make measurements' PCR 9); no QEMU or swtpm of it is left. About
# 20-40 s; its logs in $BUILD/run-refused-logs (make run's own stay in $BUILD/run-logs).
. tests/lib.sh
work=$(mktemp -d /tmp/constel-runref-XXXXXX)
trap 'rm -rf "$work"' EXIT
m=$BUILD/measurements.json
for f in "$m" "$BUILD/constel-esp.img" "$BUILD/tools/constel-init"; do
	[ -e "$f" ] || { fail make_run_refused_setup "$f is missing (make tools uki measurements)"; exit 1; }
done
python3 - "$m" >"$work/m.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["9"]["expected"] = "ab" * 32
print(json.dumps(m))
PY
pcr() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["expected"])' "$1" "$2"; }
logs=$PWD/$BUILD/run-refused-logs
NODE_LOGS=$logs RUN_MEASUREMENTS=$work/m.json timeout 400 bash qemu-tests/run-main.sh >"$work/out" 2>"$work/err"
rc=$?

t=make_run_prints_the_measurements_it_enforces
want=$(for k in 4 8 9 11 12 13 15; do printf 'PCR %2s  %s...\n' $k "$(pcr "$work/m.json" $k | cut -c1-16)"; done)
got=$(grep -o 'PCR [ 0-9]\{2\}  [0-9a-f]\{16\}\.\.\.' "$work/out")
[ "$got" = "$want" ] && pass $t || fail $t "got '$(tr '\n' '|' <<<"$got")', want '$(tr '\n' '|' <<<"$want")'"

t=make_run_boots_the_node_through_ovmf_and_the_uki
grep -aq 'BdsDxe: starting Boot' "$logs/control-plane-0.log" 2>/dev/null &&
	grep -aq 'constel-agent starting as PID 1' "$logs/control-plane-0.log" && pass $t ||
	fail $t "no OVMF boot option or no agent in $logs/control-plane-0.log"

t=make_run_ends_with_one_line_when_constel_init_refuses_the_measurements
line="make run: constel-init refused control-plane-0's attestation: measurement validation failed: PCR 9: expected abababababababab..., got $(pcr "$m" 9 | cut -c1-16)..."
[ $rc = 1 ] && [ "$(cat "$work/err")" = "$line" ] && pass $t ||
	fail $t "status $rc, stderr '$(head -c 600 "$work/err" | tr '\n' '|')', want '$line'"

t=make_run_leaves_no_qemu_or_swtpm_after_a_refusal
# the PIDs vm.py wrote into the boot's summary when it stopped them
pids=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s["qemu_pid"], s["swtpm_pid"])' \
	"$logs/control-plane-0.log.json" 2>&1)
left=
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[[ $pids =~ ^[0-9]+\ [0-9]+$ ]] && [ -z "$left" ] && pass $t || fail $t "QEMU and swtpm '$pids', still running:$left"
