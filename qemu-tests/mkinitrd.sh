#!/bin/bash
# A reproducible test initramfs (gzip'd newc cpio): a static program as /init, kernel modules
# with everything they depend on, /etc/modules.list naming the .ko files in load order (one
# absolute path a line; the guest has no modprobe, so /init loads exactly these), and extra
# files. The same inputs give the same bytes: sorted names, owner 0:0, fixed modes, every
# mtime = SOURCE_DATE_EPOCH (default 0), cpio --reproducible, gzip -n.
#   mkinitrd.sh OUT --init BIN [--modules "name ..."] [--file SRC:DEST]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "mkinitrd.sh: $*" >&2; exit 1; }
usage="usage: mkinitrd.sh OUT --init BIN [--modules \"name ...\"] [--file SRC:DEST]..."

out=${1:-}
[ -n "$out" ] && [ "${out#-}" = "$out" ] || die "$usage"
shift
init='' modules='' files=()
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value; $usage"
	case $1 in
	--init) init=$2 ;;
	--modules) modules=$2 ;;
	--file) files+=("$2") ;;
	*) die "unknown argument '$1'; $usage" ;;
	esac
	shift 2
done
[ -f "$init" ] && [ -x "$init" ] || die "--init: '$init' is not an executable file"
eval "$("$here/kernel.sh")" # KVER: the modules must match the kernel vm.py boots

umask 022 # directory modes must not depend on the caller's umask
root=$(mktemp -d)
trap 'rm -rf "$root" "$out.tmp"' EXIT
chmod 0755 "$root" # it becomes the guest's "/" (mktemp made it 0700)
# Mount points /init needs: the kernel's built-in initramfs has only /dev and /root.
mkdir -p "$root/etc" "$root/dev" "$root/proc" "$root/sys" "$root/run" "$root/tmp" "$root/bin" "$root/sbin"
install -m 0755 "$init" "$root/init"

# modprobe prints "insmod PATH" lines, dependencies first, and "builtin NAME" for what needs no
# loading; shared dependencies repeat across names, so keep the first occurrence only.
: >"$root/etc/modules.list"
for m in $modules; do
	deps=$(modprobe -S "$KVER" --show-depends "$m" 2>&1) || die "module $m (kernel $KVER): $deps"
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		[ -f "$path" ] || die "module $m: $path is missing"
		case $path in *.ko) ;; *) die "module $m: $path is compressed; this kernel loads plain .ko only (notes §2)" ;; esac
		grep -qxF "$path" "$root/etc/modules.list" && continue
		mkdir -p "$root$(dirname "$path")"
		install -m 0644 "$path" "$root$path"
		echo "$path" >>"$root/etc/modules.list"
	done <<<"$deps"
done

for f in "${files[@]}"; do
	src=${f%%:*} dest=${f#*:}
	[ "$src" != "$f" ] && [ "${dest#/}" != "$dest" ] || die "--file '$f': want SRC:/absolute/dest"
	[ -f "$src" ] || die "--file: '$src' is not a file"
	mkdir -p "$root$(dirname "$dest")"
	cp "$src" "$root$dest" # keeps the executable bit, minus umask
done

find "$root" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-0}" {} +
mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet | gzip -n -9) >"$out.tmp"
mv "$out.tmp" "$out"
