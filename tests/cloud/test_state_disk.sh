# The state disk by each cloud's naming, without udev, on sysfs trees and identify pages shaped
# as each cloud presents its disks (tests/cloud/disk_trees.py): the command says why of each
# disk it looks at and prints the device last; a tree without the disk is one line and exit 1.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-statedisk-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# shape, csp, the device expected ("-" none)
while read -r shape csp want; do
	t=state_disk_${shape//-/_}_as_$csp
	d=$work/$shape.$csp
	python3 tests/cloud/disk_trees.py "$shape" "$d" || { fail $t "no tree"; continue; }
	"$agent" state-disk --csp "$csp" --sys "$d/sys" --dev "$d/dev" >"$d.out" 2>"$d.err"
	rc=$?
	if [ "$want" = - ]; then
		if [ $rc = 1 ] && [ ! -s "$d.out" ] && [ "$(grep -c 'error:' "$d.err")" = 1 ] &&
			grep -q 'no state disk after 0 s: looked for' "$d.err"; then
			pass $t
		else
			fail $t "rc $rc: $(cat "$d.out" "$d.err" | tail -3)"
		fi
	elif [ $rc = 0 ] && [ "$(tail -1 "$d.out")" = "$d/dev/$want" ]; then
		pass $t
	else
		fail $t "rc $rc: $(cat "$d.out" "$d.err" | tail -3)"
	fi
done <<'LIST'
gcp-nvme gcp nvme0n2
gcp-nvme-none gcp -
gcp-scsi gcp sdb
azure azure sdc
azure-lun1 azure -
aws aws nvme1n1
aws-devpath-nul aws nvme1n1
gcp-scsi azure -
azure gcp -
LIST

t=state_disk_unknown_csp_is_one_line
"$agent" state-disk --csp vmware --sys "$work" --dev "$work" >"$work/u.out" 2>"$work/u.err"
rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$work/u.err")" = 1 ] && grep -q 'vmware is not one of' "$work/u.err" &&
	pass $t || fail $t "rc $rc: $(cat "$work/u.err")"

t=state_disk_waits_bounded
s=$(date +%s%N)
"$agent" state-disk --csp aws --sys "$work/gcp-scsi.gcp/sys" --dev "$work/gcp-scsi.gcp/dev" --wait 1 \
	>/dev/null 2>"$work/w.err"
rc=$?
ms=$((($(date +%s%N) - s) / 1000000))
[ $rc = 1 ] && [ $ms -ge 900 ] && [ $ms -lt 30000 ] && grep -q 'waiting up to 1 s' "$work/w.err" &&
	pass $t || fail $t "rc $rc after $ms ms: $(tail -1 "$work/w.err")"
