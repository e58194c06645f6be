#!/bin/bash
# A reproducible test initramfs for the kernel the VM harness boots: a static program as
# /init, kernel modules with everything they depend on (in load order in /etc/modules.list),
# extra files. The archive is written by ../initrd/mkinitrd.py (the project's one writer:
# sorted names, owner 0:0, fixed modes and mtimes, gzip at fixed settings).
#   mkinitrd.sh OUT --init BIN [--modules "name ..."] [--file SRC:DEST]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "mkinitrd.sh: $*" >&2; exit 1; }
usage="usage: mkinitrd.sh OUT --init BIN [--modules \"name ...\"] [--file SRC:DEST]..."

out=${1:-}
[ -n "$out" ] && [ "${out#-}" = "$out" ] || die "$usage"
shift
args=()
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value; $usage"
	case $1 in
	--init | --modules | --file) args+=("$1" "$2") ;;
	*) die "unknown argument '$1'; $usage" ;;
	esac
	shift 2
done
eval "$("$here/kernel.sh")" # KVER: the modules must match the kernel vm.py boots
exec python3 "$here/../initrd/mkinitrd.py" "$out" --kver "$KVER" --compress gzip "${args[@]}"
