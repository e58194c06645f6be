#!/usr/bin/env python3
"""Builds a unified kernel image (UKI) byte for byte the same from the same inputs: systemd's
EFI stub (Debian's systemd-boot-efi, linuxx64.efi.stub) with the sections .osrel, .cmdline,
.linux and .initrd appended, as ukify and mkosi lay them out, written here instead of by objcopy
(binutils puts the current time into the PE header, so every objcopy build hashes differently
and PCR 4 could never be predicted from source by anyone else).

The layout is a pure function of the inputs: the stub's own headers and sections stay as they
are; each new section gets the next free header slot (the stub leaves room for them before
SizeOfHeaders), a virtual address at the next 4 KiB boundary after the previous section, and
its data at the end of the file padded to FileAlignment with zeros (the stub's COFF symbol
table, which followed its sections, moves behind them). Then NumberOfSections,
SizeOfInitializedData and SizeOfImage are updated, TimeDateStamp is set to SOURCE_DATE_EPOCH
(0 when unset) and the PE checksum is computed over the result (the algorithm of ImageHlp's
CheckSumMappedFile: 16-bit one's-complement sum of the file with the checksum field as zero,
plus the file length). No signature is added (systemd-stub boots unsigned without Secure Boot).

  uki.py [--stub STUB] --linux BZIMAGE --initrd INITRD --cmdline FILE --osrel FILE -o OUT
"""
import argparse
import os
import struct
import sys

SCN_INITIALIZED_DATA_READ = 0x40000040  # IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_MEM_READ
VMA_ALIGN = 0x1000


def die(msg):
    sys.exit("uki: " + msg)


def align(n, a):
    return (n + a - 1) // a * a


def pe_checksum(data):
    """ImageHlp's PE checksum of a file whose checksum field is zero: its 16-bit words summed
    with end-around carry, folded to 16 bits, plus the file's length."""
    n = len(data)
    if n % 2:
        data += b"\0"
    s = sum(struct.unpack("<%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (s + n) & 0xFFFFFFFF


def build(stub, sections, epoch):
    out = bytearray(stub)
    if out[:2] != b"MZ" or len(out) < 0x40:
        die("stub: not a PE image (no MZ header)")
    pe, = struct.unpack_from("<I", out, 0x3C)
    if pe + 24 > len(out) or out[pe:pe + 4] != b"PE\0\0":
        die("stub: not a PE image (no PE signature)")
    nsect, = struct.unpack_from("<H", out, pe + 6)
    optsize, = struct.unpack_from("<H", out, pe + 20)
    opt = pe + 24
    if struct.unpack_from("<H", out, opt)[0] != 0x20B:
        die("stub: not PE32+")
    sect_align, file_align = struct.unpack_from("<II", out, opt + 32)
    size_of_headers, = struct.unpack_from("<I", out, opt + 60)
    ndirs, = struct.unpack_from("<I", out, opt + 108)
    if ndirs > 4 and struct.unpack_from("<II", out, opt + 112 + 4 * 8)[1]:
        die("stub: signed stubs are not supported (the signature would sit before our data)")
    table = opt + optsize
    names, end_va, end_raw = set(), 0, 0
    for i in range(nsect):
        at = table + 40 * i
        names.add(out[at:at + 8].rstrip(b"\0").decode("ascii", "replace"))
        vsize, va, rsize, rptr = struct.unpack_from("<IIII", out, at + 8)
        end_va = max(end_va, va + max(vsize, rsize))
        end_raw = max(end_raw, rptr + rsize)
    # What follows the sections may only be the COFF symbol table (Debian's stub keeps one):
    # it moves behind the new sections, where objcopy would put it too.
    symptr, = struct.unpack_from("<I", out, pe + 12)
    if end_raw != len(out) and symptr != end_raw:
        die("stub: %d bytes after its last section" % (len(out) - end_raw))
    symtab = bytes(out[end_raw:])
    del out[end_raw:]
    if table + 40 * (nsect + len(sections)) > size_of_headers:
        die("stub: no room for %d more section headers" % len(sections))
    if VMA_ALIGN % sect_align:
        die("stub: section alignment %#x" % sect_align)

    init_data = 0
    va = align(end_va, VMA_ALIGN)
    for i, (name, data) in enumerate(sections):
        if name in names:
            die("stub already has a %s section" % name)
        raw = align(len(data), file_align)
        ptr = len(out)
        out += data + bytes(raw - len(data))
        struct.pack_into("<8sIIIIIIHHI", out, table + 40 * (nsect + i), name.encode(),
                         len(data), va, raw, ptr, 0, 0, 0, 0, SCN_INITIALIZED_DATA_READ)
        init_data += raw
        va = align(va + len(data), VMA_ALIGN)
    if symtab:
        struct.pack_into("<I", out, pe + 12, len(out))  # PointerToSymbolTable
        out += symtab
    struct.pack_into("<H", out, pe + 6, nsect + len(sections))
    struct.pack_into("<I", out, pe + 8, epoch)  # TimeDateStamp
    old, = struct.unpack_from("<I", out, opt + 8)
    struct.pack_into("<I", out, opt + 8, old + init_data)  # SizeOfInitializedData
    struct.pack_into("<I", out, opt + 56, align(va, sect_align))  # SizeOfImage
    struct.pack_into("<I", out, opt + 64, 0)
    struct.pack_into("<I", out, opt + 64, pe_checksum(bytes(out)))
    return bytes(out)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def main():
    ap = argparse.ArgumentParser(prog="uki.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--stub", default="/usr/lib/systemd/boot/efi/linuxx64.efi.stub")
    ap.add_argument("--linux", required=True, help="the kernel (bzImage with its EFI stub)")
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--cmdline", required=True, metavar="FILE",
                    help="the kernel command line: one line (its newline is not kept)")
    ap.add_argument("--osrel", required=True, help="the os-release file")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "0")
    if not epoch.isdigit() or int(epoch) >= 1 << 32:
        die("SOURCE_DATE_EPOCH must be a number of seconds below 2^32: %r" % epoch)
    cmdline = read(a.cmdline)
    cmdline = cmdline[:-1] if cmdline.endswith(b"\n") else cmdline
    if b"\n" in cmdline or b"\0" in cmdline or not cmdline.strip():
        die("%s: the command line must be one non-empty line" % a.cmdline)
    # The order ukify and mkosi use; the stub measures in its own fixed order anyway.
    sections = [(".osrel", read(a.osrel)), (".cmdline", cmdline),
                (".linux", read(a.linux)), (".initrd", read(a.initrd))]
    for name, data in sections:
        if not data:
            die("%s is empty" % name)
    image = build(read(a.stub), sections, int(epoch))
    tmp = a.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(image)
    os.replace(tmp, a.output)


if __name__ == "__main__":
    main()
