#!/bin/bash
# The agent's initrd: the stripped static agent as /init, the static mke2fs of the dependency
# build as /sbin/mke2fs, and the kernel modules of initrd/modules.txt for the kernel the QEMU
# tests boot (qemu-tests/kernel.sh), or for the kernel inside an OS image tree (--module-root,
# used by image/mkosi.finalize). Prints the size table by part.
#   initrd/build.sh OUT [--compress gzip|zstd] [--module-root DIR]
# BUILD (default build) names the build directory, DEPS the dependency prefix (default: the
# one recorded in $BUILD/deps-prefix).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "initrd/build.sh: $*" >&2; exit 1; }
usage="usage: initrd/build.sh OUT [--compress gzip|zstd] [--module-root DIR] [--ca-bundle FILE]"

out=${1:-}
[ -n "$out" ] && [ "${out#-}" = "$out" ] || die "$usage"
shift
compress=gzip root=/ ca=
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value; $usage"
	case $1 in
	--compress) compress=$2 ;;
	--module-root) root=$2 ;;
	--ca-bundle) ca=$2 ;;
	*) die "unknown argument '$1'; $usage" ;;
	esac
	shift 2
done
BUILD=${BUILD:-build}
DEPS=${DEPS:-$(cat "$BUILD/deps-prefix" 2>/dev/null || true)}
agent=$BUILD/constel-agent.stripped
mke2fs=$DEPS/sbin/mke2fs
[ -x "$agent" ] || die "$agent is missing (make agent)"
[ -n "$DEPS" ] && [ -x "$mke2fs" ] || die "no static mke2fs at '$mke2fs' (set DEPS, or run make once)"

if [ "$root" = / ]; then
	eval "$("$here/../qemu-tests/kernel.sh")"
else
	# An image carries exactly one kernel (mkosi installs linux-image-amd64).
	KVER=$(ls "$root/lib/modules" 2>/dev/null) || true
	[ -n "$KVER" ] && [ "$(echo "$KVER" | wc -l)" = 1 ] ||
		die "want exactly one kernel in $root/lib/modules, found: ${KVER:-none}"
fi

# The CA bundle: where ca-certificates' update-ca-certificates writes it, in the tree whose
# modules go in (a link in an image tree points into that tree, not into this machine).
ca_dest=/etc/ssl/certs/ca-certificates.crt
if [ -z "$ca" ]; then
	ca=${root%/}$ca_dest
	if [ "$root" != / ] && [ -L "$ca" ] && [ "$(readlink "$ca" | cut -c1)" = / ]; then
		ca=${root%/}$(readlink "$ca")
	fi
	ver=$(dpkg-query --admindir="${root%/}/var/lib/dpkg" -W -f='${Version}' ca-certificates 2>/dev/null) || ver=
	what="ca-certificates ${ver:-of unknown version (no dpkg record)}"
else
	what="given with --ca-bundle"
fi
[ -f "$ca" ] && grep -q -- '-----BEGIN CERTIFICATE-----' "$ca" 2>/dev/null ||
	die "no CA bundle (a PEM file of certificates) at $ca: install ca-certificates, or give --ca-bundle FILE"
echo "CA bundle: $ca ($what), sha256 $(sha256sum <"$ca" | cut -c1-64)"
python3 "$here/mkinitrd.py" "$out" --init "$agent" --kver "$KVER" --module-root "$root" \
	--modules-file "$here/modules.txt" --file "$mke2fs:/sbin/mke2fs" --file "$ca:$ca_dest" --compress "$compress" --sizes
