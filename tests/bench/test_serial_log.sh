# The one reader of the QEMU benches' serial logs (tests/bench/serial_log.py), on a log as
# vm.py writes it: stamped lines only, the first line holding a text, the last @@DATA of a key,
# no value from a boot without a log; and the Python of boot-vm.sh and first-boot.sh, which
# read their logs with it, still compiles.
. tests/lib.sh
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
printf '%s\n' 'qemu: no stamp' '[    0.512] [    0.000000] Linux version 6.1' \
	'[    1.250] constel-agent starting as PID 1' '[    1.300] @@DATA timeline {"a": 1}' \
	'[    2.000] @@DATA timeline {"a": 2}' '[    3.125] @@STANDIN kubelet --flag' >"$d/w0.log"
t=bench_serial_log_reads_stamps_first_lines_and_the_last_data
out=$(python3 - "$d" <<'PY' 2>&1
import sys
sys.path.insert(0, "tests/bench")
from serial_log import SerialLog
log = SerialLog(sys.argv[1])
print(len(list(log.lines("w0"))), log.first("w0", "starting as PID 1"),
      log.first("w0", "@@STANDIN kubelet "), log.first("w0", "nothing"), log.data("w0", "timeline"),
      log.data("missing", "timeline"))
PY
)
if [ "$out" = '5 1.25 3.125 None {"a": 2} None' ]; then
	pass $t
else
	fail $t "$out"
fi

t=bench_boot_vm_and_first_boot_python_compiles
bad=
for f in tests/bench/boot-vm.sh tests/bench/first-boot.sh; do
	awk '/^python3 - .*<<.(EOF|PY).$/ { p = 1; next } p && /^(EOF|PY)$/ { p = 0 } p' "$f" >"$d/x.py"
	if [ ! -s "$d/x.py" ] || ! grep -q 'from serial_log import SerialLog' "$d/x.py" ||
		! python3 -m py_compile "$d/x.py" 2>"$d/err"; then
		bad="$bad $f: $(tail -1 "$d/err" 2>/dev/null)"
	fi
done
if [ -z "$bad" ]; then
	pass $t
else
	fail $t "$bad"
fi
