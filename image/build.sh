#!/bin/bash
# The node image, built by mkosi 14 and cached outside the clone (image/README.md):
#   image/build.sh OUTDIR
# OUTDIR gets (symbolic links into the cache):
#   disk.raw           the GPT disk: 1 ESP (\EFI\BOOT\BOOTX64.EFI = the UKI), 2 the squashfs
#                      root (root-x86-64), 3 its dm-verity hash tree (root-x86-64-verity); the
#                      partition UUIDs are the halves of the root hash, as mkosi writes them
#   constel-image.efi  the UKI: the image's systemd-stub and kernel, the agent's initrd for that
#                      kernel (with the root's CA bundle), mkosi.conf's KernelCommandLine plus
#                      "roothash=<hex>"
#   esp.img            the ESP alone; cmdline, roothash, initrd.img, os-release: the UKI's parts
#   measurements.json  image/measure.py --uki constel-image.efi --zero 8,12,13,15
#   info               the cache keys, the kernel version, sizes and what was rebuilt
# Two stages, each in its own cache folder (CONSTEL_CACHE, default /var/cache/constel-agent):
#   image-root-<hash>  the mkosi build (the Debian packages from the mirror, minutes): keyed by
#                      the recipe (mkosi.conf with its package list, mkosi.finalize,
#                      mkosi.mksquashfs-tool, bin/veritysetup, ROOT_RECIPE below, mkosi's version)
#   image-<hash>       the initrd, the UKI, the ESP, the disk, the measurements (seconds): keyed
#                      by the root's key and the agent, the static mke2fs, initrd/, this script
#                      and uki.py, esp.sh, measure.py; a new agent rebuilds only this stage
# mkosi's package cache (image-apt) survives recipe changes, so a changed recipe downloads
# only what changed. BUILD (default build) and DEPS name the agent's build as initrd/build.sh
# takes them. Needs root (mkosi: loop devices, mounts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "image/build.sh: $*" >&2; exit 1; }
log() { echo "image/build.sh: $*" >&2; }
[ $# = 1 ] || die "usage: image/build.sh OUTDIR"
out=$1
BUILD=${BUILD:-build}
DEPS=${DEPS:-$(cat "$BUILD/deps-prefix" 2>/dev/null || true)}
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}
# Bumped whenever what this script does with mkosi's output in the root stage changes.
ROOT_RECIPE=2
# Every time stamp of the image (squashfs inodes and superblock, the UKI's PE header, the
# initrd's cpio, the ESP's FAT entries): part of the recipe, not the build's clock.
export SOURCE_DATE_EPOCH=1700000000
agent=$BUILD/constel-agent.stripped mke2fs=$DEPS/sbin/mke2fs
[ -x "$agent" ] || die "$agent is missing (make agent)"
[ -n "$DEPS" ] && [ -x "$mke2fs" ] || die "no static mke2fs at '$DEPS/sbin/mke2fs' (make agent)"
for t in mkosi mksquashfs unsquashfs veritysetup sfdisk debootstrap; do
	command -v $t >/dev/null || die "$t is missing (deps/host-setup.sh)"
done
[ "$(id -u)" = 0 ] || die "mkosi needs root"

hash_of() { cat "$@" | sha256sum | cut -c1-16; }
t0=$(date +%s.%N)
since() { python3 -c 'import sys, time; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(date +%s.%N)"; }
# prune PREFIX KEEP: of the folders $cache/PREFIX<16 hex digits>, the newest KEEP stay
prune() {
	ls -1dt "$cache/$1"* 2>/dev/null | grep -E "/$1[0-9a-f]{16}\$" | tail -n +$(($2 + 1)) | while read -r d; do
		log "removing the old $d"
		rm -rf "$d"
	done
}

# ---- stage 1: the root (mkosi) ----
root_key=$( (cd "$here" && cat mkosi.conf mkosi.finalize mkosi.mksquashfs-tool mkosi-run bin/veritysetup &&
	echo "$ROOT_RECIPE $SOURCE_DATE_EPOCH $(mkosi --version)") | sha256sum | cut -c1-16)
R=$cache/image-root-$root_key
root_built=no
if [ ! -e "$R/done" ]; then
	tmp=$R.tmp.$$
	rm -rf "$tmp" && mkdir -p "$tmp/out" "$cache/image-apt"
	trap 'rm -rf "$tmp"' EXIT
	log "building the root with mkosi (Debian packages from the mirror; log $tmp/mkosi.log)"
	# mkosi reads mkosi.* from the current folder; its outputs go to -O, its scratch to the
	# workspace (beside them: the squashfs is written there), the .debs to the shared cache.
	rc=0
	(cd "$here" && PATH=$here/bin:$PATH nice -n 5 "$here/mkosi-run" -O "$tmp/out" --workspace-dir "$tmp" \
		--cache "$cache/image-apt" --mksquashfs "$here/mkosi.mksquashfs-tool" -f build) >"$tmp/mkosi.log" 2>&1 || rc=$?
	# mkosi 14 writes each partition through its device node /dev/loopNpM; without udev (a
	# container) that node does not exist and the write makes a regular file of that name in
	# /dev instead, so image.raw holds the partition table but not the data. The split
	# artifacts are the data (the verity tree was computed over that same file); the
	# partitions' types, UUIDs and names come from image.raw's table. The stray files go.
	for f in /dev/loop*p[0-9]*; do
		[ -f "$f" ] && [ ! -L "$f" ] && rm -f "$f"
	done
	if [ $rc != 0 ]; then
		tail -15 "$tmp/mkosi.log" >&2
		die "mkosi failed (exit $rc)"
	fi
	o=$tmp/out/debian~bookworm
	[ -s "$o/image.raw" ] && [ -s "$o/image.root.roothash" ] ||
		die "mkosi left no image.raw/image.root.roothash in $o: $(ls "$o" | tr '\n' ' ')"
	cp --sparse=always "$o/image.root.raw" "$tmp/root.raw"
	cp --sparse=always "$o/image.root.verity" "$tmp/verity.raw"
	sfdisk --json "$o/image.raw" >"$tmp/parts.json"
	python3 - "$tmp/parts.json" "$tmp" <<'PY' || die "mkosi's partition table is not root + verity"
import json, sys
pj, tmp = sys.argv[1:]
t = json.load(open(pj))["partitiontable"]
want = {"4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709": "root", "2C7357ED-EBD2-46D9-AEC1-23D437EC2BF5": "verity"}
parts = {want[p["type"].upper()]: p for p in t["partitions"] if p["type"].upper() in want}
assert set(parts) == {"root", "verity"}, t
for name, p in parts.items():
    open("%s/%s.part" % (tmp, name), "w").write("%s %s %s\n" % (p["type"], p["uuid"], p.get("name", "")))
PY
	tr -d '\n' <"$o/image.root.roothash" >"$tmp/roothash"
	# What the UKI takes from the root: the kernel, its modules (for the agent's initrd), the
	# systemd-stub, os-release. /lib is usr/lib (merged /usr).
	unsquashfs -q -n -d "$tmp/tree" "$tmp/root.raw" boot usr/lib/modules usr/lib/systemd/boot/efi \
		usr/lib/os-release >/dev/null || die "unsquashfs of the root failed"
	ln -s usr/lib "$tmp/tree/lib"
	rm -rf "$o" "$tmp"/root "$tmp"/apt "$tmp"/debian* "$tmp"/.mkosi* 2>/dev/null || true
	date -u +%FT%TZ >"$tmp/done"
	echo "$(since "$t0")" >"$tmp/build-seconds"
	mv "$tmp" "$R"
	trap - EXIT
	root_built="yes, $(cat "$R/build-seconds") s"
	prune image-root- 2
fi
roothash=$(cat "$R/roothash")
kver=$(ls "$R/tree/usr/lib/modules")
[ "$(echo "$kver" | wc -l)" = 1 ] || die "want one kernel in the image, found: $kver"

# ---- stage 2: initrd, UKI, ESP, disk, measurements ----
key=$( (echo "$root_key"; cat "$agent" "$mke2fs" "$repo"/initrd/* "$0" "$here/uki.py" "$here/esp.sh" \
	"$here/measure.py") | sha256sum | cut -c1-16)
F=$cache/image-$key
if [ ! -e "$F/done" ]; then
	tmp=$F.tmp.$$
	rm -rf "$tmp" && mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	# the agent's initrd for the image's kernel: initrd/build.sh's parts (modules.txt, mke2fs)
	# and squashfs, the root's file system
	# (squashfs: the root phase's, loaded in the background like the rest, see modules.txt;
	# ext4, marked root for the test root, is first needed by the state disk here)
	# and the image's own CA bundle (its ca-certificates, current with each rebuild of the image)
	# where the agent's https clients look before the switch (initrd/build.sh --module-root)
	unsquashfs -q -n -d "$tmp/ca" "$R/root.raw" etc/ssl/certs/ca-certificates.crt var/lib/dpkg/status \
		>/dev/null 2>&1 || true
	ca=$tmp/ca/etc/ssl/certs/ca-certificates.crt
	[ -f "$ca" ] && [ ! -L "$ca" ] || die "the image's root has no /etc/ssl/certs/ca-certificates.crt (ca-certificates)"
	ca_version=$(dpkg-query --admindir="$tmp/ca/var/lib/dpkg" -W -f='${Version}' ca-certificates 2>/dev/null) || ca_version=unknown
	python3 "$repo/initrd/mkinitrd.py" "$tmp/initrd.img" --init "$agent" --kver "$kver" \
		--module-root "$R/tree" --modules-file "$repo/initrd/modules.txt" --modules squashfs:root --phase ext4:disk --file "$mke2fs:/sbin/mke2fs" \
		--file "$ca:/etc/ssl/certs/ca-certificates.crt" --compress gzip >/dev/null
	ca_sha=$(sha256sum <"$ca" | cut -c1-64)
	rm -rf "$tmp/ca"
	# the command line as mkosi 14's install_unified_kernel writes it: the configured one, a
	# space, roothash=<hex>
	cl=$(sed -n 's/^KernelCommandLine=//p' "$here/mkosi.conf" | sed 's/^!\* *//')
	[ -n "$cl" ] || die "no KernelCommandLine= in mkosi.conf"
	printf '%s roothash=%s\n' "$cl" "$roothash" >"$tmp/cmdline"
	cp "$R/tree/usr/lib/os-release" "$tmp/os-release"
	"$here/uki.py" --stub "$R/tree/usr/lib/systemd/boot/efi/linuxx64.efi.stub" \
		--linux "$R/tree/boot/vmlinuz-$kver" --initrd "$tmp/initrd.img" --cmdline "$tmp/cmdline" \
		--osrel "$tmp/os-release" -o "$tmp/constel-image.efi"
	"$here/esp.sh" "$tmp/esp.img" "$tmp/constel-image.efi"
	"$here/measure.py" --uki "$tmp/constel-image.efi" --zero 8,12,13,15 >"$tmp/measurements.json"
	# The disk: a fixed disk GUID, 1 MiB alignment, the ESP, then root and verity with mkosi's
	# types, UUIDs and names.
	esp_mib=$(($(stat -c %s "$tmp/esp.img") >> 20))
	root_mib=$((($(stat -c %s "$R/root.raw") + (1 << 20) - 1) >> 20))
	ver_mib=$((($(stat -c %s "$R/verity.raw") + (1 << 20) - 1) >> 20))
	total=$((1 + esp_mib + root_mib + ver_mib + 1))
	rm -f "$tmp/disk.raw" && truncate -s ${total}M "$tmp/disk.raw"
	read -r rt ru rn <"$R/root.part"
	read -r vt vu vn <"$R/verity.part"
	{
		echo "label: gpt"
		echo "label-id: 636F6E73-7465-6C2D-6469-736B00000000"
		echo "first-lba: 2048"
		echo "start=2048, size=$((esp_mib * 2048)), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=636F6E73-7465-6C2D-6573-700000000000, name=\"ESP\""
		echo "size=$((root_mib * 2048)), type=$rt, uuid=$ru, name=\"$rn\", attrs=\"GUID:60\""
		echo "size=$((ver_mib * 2048)), type=$vt, uuid=$vu, name=\"$vn\", attrs=\"GUID:60\""
	} | sfdisk -q --no-reread --no-tell-kernel "$tmp/disk.raw" >/dev/null
	sfdisk --json "$tmp/disk.raw" >"$tmp/parts.json"
	python3 - "$tmp/disk.raw" "$tmp/parts.json" "$tmp/esp.img" "$R/root.raw" "$R/verity.raw" <<'PY'
import json, sys
disk, pj, *blobs = sys.argv[1:]
parts = json.load(open(pj))["partitiontable"]["partitions"]
with open(disk, "r+b") as f:
    for p, blob in zip(parts, blobs):
        data = open(blob, "rb").read()
        assert len(data) <= p["size"] * 512
        f.seek(p["start"] * 512)
        f.write(data)
PY
	{
		echo "root_key $root_key"
		echo "key $key"
		echo "kernel $kver"
		echo "roothash $roothash"
		echo "ca_bundle ca-certificates $ca_version sha256 $ca_sha"
		echo "root_mib $root_mib verity_mib $ver_mib esp_mib $esp_mib disk_mib $total"
		echo "uki_sha256 $(sha256sum "$tmp/constel-image.efi" | cut -c1-64)"
		echo "disk_sha256 $(sha256sum "$tmp/disk.raw" | cut -c1-64)"
	} >"$tmp/info"
	date -u +%FT%TZ >"$tmp/done"
	mv "$tmp" "$F"
	trap - EXIT
	prune image- 3
	log "the UKI and the disk for root $root_key: $F ($(since "$t0") s; root rebuilt: $root_built)"
else
	log "cached: $F (root $R)"
fi
mkdir -p "$out"
for f in disk.raw constel-image.efi esp.img cmdline roothash initrd.img os-release measurements.json info; do
	src=$F/$f
	[ "$f" = roothash ] && src=$R/roothash
	ln -sfn "$src" "$out/$f"
done
echo "$F" >"$out/cache-dir"
