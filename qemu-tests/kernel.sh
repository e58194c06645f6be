#!/bin/bash
# The guest kernel of the QEMU tests: Debian's newest installed kernel, booted on the fast
# path of docs/qemu.md §4.3 (the uncompressed PVH vmlinux with qboot: ~3 s less per
# boot than letting the guest decompress the bzImage under TCG). Prints shell assignments:
#   KVER=6.1.0-56-amd64
#   VMLINUX=/var/cache/constel-agent/kernel-<kver>-<hash>/vmlinux   (empty: no PVH entry)
#   BZIMAGE=/boot/vmlinuz-<kver>
#   MODDIR=/lib/modules/<kver>
# With VMLINUX empty the runner boots BZIMAGE with SeaBIOS instead. The vmlinux is cached
# outside the clone (it is 65 MB), keyed by the bzImage's hash so a kernel update re-extracts.
#   eval "$(qemu-tests/kernel.sh)"
set -euo pipefail
cache=${CONSTEL_CACHE:-/var/cache/constel-agent}

# Newest kernel that has both its modules and its image (a removed kernel can leave modules).
kver=
for d in $(find /lib/modules -mindepth 1 -maxdepth 1 -type d | sort -V); do
	k=$(basename "$d")
	[ -r "/boot/vmlinuz-$k" ] && kver=$k
done
[ -n "$kver" ] || { echo "kernel.sh: no /boot/vmlinuz-* with modules (apt-get install linux-image-amd64)" >&2; exit 1; }
bz=/boot/vmlinuz-$kver
dir=$cache/kernel-$kver-$(sha256sum "$bz" | cut -c1-16)
mkdir -p "$dir" 2>/dev/null || { echo "kernel.sh: cannot create $dir (set CONSTEL_CACHE to a writable directory)" >&2; exit 1; }

# Extract once (about 2 s), then only re-check the PVH note: cheap, and it also covers a cache
# file that was not written by this script.
vmlinux=$(python3 - "$bz" "$dir/vmlinux" <<'PY'
import lzma, os, struct, sys, tempfile
bz, out = sys.argv[1], sys.argv[2]

if not os.path.exists(out):
    data = open(bz, "rb").read()
    off = data.find(b"\xfd7zXZ\x00")  # Debian builds with CONFIG_KERNEL_XZ
    if off < 0:
        sys.exit("kernel.sh: no XZ stream in %s (not an XZ-compressed Debian kernel?)" % bz)
    # The decompressor stops at the end of the XZ stream; the bzImage trailer after it is ignored.
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[off:])
    # Atomic: a concurrent run or a reader never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(out), prefix=".vmlinux.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(elf)
        os.chmod(tmp, 0o644)
        os.rename(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise

def has_pvh_note(path):
    """A PT_NOTE with name "Xen" and type 18 (XEN_ELFNOTE_PHYS32_ENTRY): the PVH entry point."""
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2:  # ELF64 only
            return False
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        phdrs = f.read(phentsize * phnum)
        for i in range(phnum):
            ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", phdrs, i * phentsize)
            if ptype != 4:  # PT_NOTE
                continue
            f.seek(off)
            notes = f.read(filesz)
            p = 0
            while p + 12 <= len(notes):
                namesz, descsz, ntype = struct.unpack_from("<III", notes, p)
                name = notes[p + 12:p + 12 + namesz].rstrip(b"\0")
                if name == b"Xen" and ntype == 18:
                    return True
                p += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False

print(out if has_pvh_note(out) else "")
PY
)
[ -n "$vmlinux" ] || echo "kernel.sh: $dir/vmlinux has no PVH entry note: boot the bzImage with SeaBIOS (slower)" >&2
echo "KVER=$kver"
echo "VMLINUX=$vmlinux"
echo "BZIMAGE=$bz"
echo "MODDIR=/lib/modules/$kver"
