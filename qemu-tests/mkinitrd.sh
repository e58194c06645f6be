#!/bin/bash
# A reproducible test initramfs (gzip'd newc cpio): a static program as /init, kernel modules
# with everything they depend on (resolved with modprobe --show-depends against the guest
# kernel's modules.dep, dependencies first), /etc/modules.list naming them in load order, and
# extra files. Sorted names, owner 0:0, mtimes from SOURCE_DATE_EPOCH (default 0), gzip -n:
# the same inputs give the same bytes.
#   mkinitrd.sh OUT --init BIN [--modules "name ..."] [--file SRC:DEST]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "mkinitrd.sh: $*" >&2; exit 1; }

out=${1:-}
[ -n "$out" ] && [ "${out#-}" = "$out" ] || die "usage: mkinitrd.sh OUT --init BIN [--modules LIST] [--file SRC:DEST]..."
shift
init= modules= files=()
while [ $# -gt 0 ]; do
	case $1 in
	--init) init=$2; shift 2 ;;
	--modules) modules=$2; shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	*) die "unknown argument '$1'" ;;
	esac
done
[ -x "$init" ] || die "--init: '$init' is not an executable file"
eval "$("$here/kernel.sh")"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc" "$root/bin" "$root/sbin" "$root/dev" "$root/proc" "$root/sys" "$root/run" "$root/tmp"
install -m 0755 "$init" "$root/init"
: >"$root/etc/modules.list"
for m in $modules; do
	deps=$(modprobe -S "$KVER" --show-depends "$m" 2>&1) || die "module $m: $deps"
	# "insmod PATH" lines in dependency order; "builtin NAME" needs nothing.
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		[ -f "$path" ] || die "module file $path missing"
		case $path in *.ko) ;; *) die "$path is compressed; this kernel loads plain .ko only" ;; esac
		grep -qxF "$path" "$root/etc/modules.list" && continue
		mkdir -p "$root$(dirname "$path")"
		cp "$path" "$root$path"
		echo "$path" >>"$root/etc/modules.list"
	done <<<"$deps"
done
for f in "${files[@]}"; do
	src=${f%%:*} dest=${f#*:}
	[ -f "$src" ] || die "--file: '$src' missing"
	mkdir -p "$root$(dirname "$dest")"
	cp "$src" "$root$dest"
done
epoch=${SOURCE_DATE_EPOCH:-0}
find "$root" -exec touch -h -d "@$epoch" {} +
mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet | gzip -n -6) >"$out.tmp"
mv "$out.tmp" "$out"
