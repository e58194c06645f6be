#!/bin/bash
# The guest kernel of the QEMU tests: Debian's newest installed kernel, booted on the fast
# path of ../shared/notes/qemu.md §4.3 (the uncompressed PVH vmlinux with qboot: ~3 s less per
# boot than letting the guest decompress the bzImage under TCG). Prints shell assignments:
#   KVER=6.1.0-56-amd64  VMLINUX=/var/cache/.../vmlinux  BZIMAGE=/boot/vmlinuz-...  MODDIR=/lib/modules/...
# VMLINUX is empty when the kernel has no PVH entry note; the runner then boots BZIMAGE with
# SeaBIOS. The extracted vmlinux is cached outside the clone, keyed by the bzImage's hash.
set -euo pipefail
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}

kver=
for d in $(ls -d /lib/modules/*/ 2>/dev/null | sort -V); do
	k=$(basename "$d")
	[ -r "/boot/vmlinuz-$k" ] && kver=$k
done
[ -n "$kver" ] || { echo "kernel.sh: no /boot/vmlinuz-* with modules (apt-get install linux-image-amd64)" >&2; exit 1; }
bz=/boot/vmlinuz-$kver
key=$(sha256sum "$bz" | cut -c1-16)
dir=$cache/kernel-$kver-$key
if [ ! -f "$dir/vmlinux" ]; then
	mkdir -p "$dir"
	python3 - "$bz" "$dir" <<'PY'
import lzma, os, struct, sys
bz, out = sys.argv[1], sys.argv[2]
data = open(bz, "rb").read()
off = data.find(b"\xfd7zXZ\x00")  # Debian builds with CONFIG_KERNEL_XZ
if off < 0:
    sys.exit("kernel.sh: no XZ stream in " + bz)
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[off:])

def has_pvh_note(e):
    # ELF64 program headers: a PT_NOTE holding name "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY).
    if e[:4] != b"\x7fELF" or e[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", e, 32)
    phentsize, phnum = struct.unpack_from("<HH", e, 54)
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", e, phoff + i * phentsize)
        if ptype != 4:
            continue
        p, end = off, off + filesz
        while p + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", e, p)
            name = e[p + 12:p + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            p += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False

tmp = os.path.join(out, "vmlinux.tmp.%d" % os.getpid())
name = "vmlinux" if has_pvh_note(elf) else "vmlinux.no-pvh"
open(tmp, "wb").write(elf)
os.rename(tmp, os.path.join(out, name))
if name != "vmlinux":
    open(os.path.join(out, "vmlinux"), "wb").close()  # marks "extracted, not bootable by PVH"
PY
fi
vmlinux=$dir/vmlinux
[ -s "$vmlinux" ] || vmlinux=
echo "KVER=$kver"
echo "VMLINUX=$vmlinux"
echo "BZIMAGE=$bz"
echo "MODDIR=/lib/modules/$kver"
