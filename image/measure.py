#!/usr/bin/env python3
"""Precomputes the boot measurements an initrd takes part in (spec §2.7), as the JSON of
Constellation's measurements ({"<pcr>": {"expected": "<hex>", "warnOnly": false}}), for the
`measurements:` of constellation-conf.yaml. SHA-256 bank; every PCR starts at zero.

  PCR 4   the firmware's EV_EFI_ACTION "Calling EFI Application from Boot Option", the
          separator, then the Authenticode hash of each PE image it starts: the --pre-stage
          images (a boot loader), the UKI, and the kernel in its .linux section, which
          systemd-stub starts with LoadImage(). Needs --uki.
  PCR 9   the kernel's EFI stub (Linux >= 6.1): the LoadOptions systemd-stub hands it (the
          .cmdline as UTF-16LE, NUL included), then the initrd it got through LOAD_FILE2.
  PCR 11  systemd-stub: for each UKI section in the stub's fixed order, the section's name
          with its NUL, then the section's data. --phase adds systemd-pcrphase's words (the
          agent runs none: it is the initrd's only program).

  --zero 8,12,13,15 adds those PCRs as all-zero, enforced: with --uki, the full set a
  Constellation QEMU node enforces (4, 8, 9, 11, 12, 13, 15; spec §2.7) for a UKI the firmware
  starts directly (no boot loader, no load options: PCR 12 stays zero).

  measure.py --uki UKI.efi [--pre-stage BOOTLOADER.efi]... [--stub N] [--phase P] [--zero L] [-v]
  measure.py --linux K --initrd I --cmdline FILE [--osrel F] [--uname F] ... [--stub N]
"""
import argparse
import hashlib
import json
import re
import struct
import sys

# The sections systemd-stub measures into PCR 11, in its order (src/fundamental/tpm-pcr.h of
# systemd 252, uki.h later). 252 is Debian bookworm's, what mkosi 14 puts into the UKI; 253
# added .uname and .sbat, 256 .ucode. .pcrsig is never measured: it signs the result.
SECTIONS_252 = [".linux", ".osrel", ".cmdline", ".initrd", ".splash", ".dtb", ".pcrpkey"]
SECTIONS_LATER = [".linux", ".osrel", ".cmdline", ".initrd", ".ucode", ".splash", ".dtb",
                  ".uname", ".sbat", ".pcrpkey"]

log_events = False


def die(msg):
    sys.exit("measure: " + msg)


def sha256(b):
    return hashlib.sha256(b).digest()


class Pcr:
    def __init__(self, index):
        self.index, self.value = index, bytes(32)

    def extend(self, digest, what):
        self.value = sha256(self.value + digest)
        if log_events:
            print("PCR %2d += %s  %s" % (self.index, digest.hex(), what), file=sys.stderr)


class Pe:
    """The parts of a PE/COFF image the measurements need, with every offset checked."""

    def __init__(self, data, name):
        self.data, self.name = data, name
        if data[:2] != b"MZ" or len(data) < 0x40:
            die("%s: not a PE image (no MZ header)" % name)
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if pe + 24 > len(data) or data[pe:pe + 4] != b"PE\0\0":
            die("%s: not a PE image (no PE signature)" % name)
        nsect, = struct.unpack_from("<H", data, pe + 6)
        optsize, = struct.unpack_from("<H", data, pe + 20)
        self.opt = opt = pe + 24
        magic, = struct.unpack_from("<H", data, opt)
        if magic not in (0x10B, 0x20B):
            die("%s: unknown optional header magic %#x" % (name, magic))
        dirs = opt + (96 if magic == 0x10B else 112)
        ndirs, = struct.unpack_from("<I", data, dirs - 4)
        self.size_of_headers, = struct.unpack_from("<I", data, opt + 60)
        self.checksum_at = opt + 64
        self.certdir_at = dirs + 4 * 8 if ndirs > 4 else None
        self.cert_size = struct.unpack_from("<II", data, self.certdir_at)[1] if ndirs > 4 else 0
        self.sections = []
        for i in range(nsect):
            at = opt + optsize + 40 * i
            if at + 40 > len(data):
                die("%s: section table runs past the end" % name)
            sname = data[at:at + 8].rstrip(b"\0").decode("ascii", "replace")
            vsize, vaddr, rsize, rptr = struct.unpack_from("<IIII", data, at + 8)
            if rptr + rsize > len(data):
                die("%s: section %s runs past the end" % (name, sname))
            self.sections.append((sname, vsize, rsize, rptr))

    def section(self, name):
        """What the loaded image holds for a section: its VirtualSize bytes, raw data first,
        zeros after (the stub reads sections from memory, not from the file)."""
        for sname, vsize, rsize, rptr in self.sections:
            if sname == name:
                raw = self.data[rptr:rptr + min(vsize, rsize)]
                return raw + bytes(vsize - len(raw))
        return None

    def authenticode(self):
        """The Authenticode SHA-256 (Microsoft's PE/COFF spec, "Calculating the PE Image
        Hash"): the headers without the checksum and the certificate-table entry, the sections
        in file order, then what follows them, without the certificate table."""
        d, h = self.data, hashlib.sha256()
        if self.certdir_at is None:
            h.update(d[:self.checksum_at])
            h.update(d[self.checksum_at + 4:self.size_of_headers])
        else:
            h.update(d[:self.checksum_at])
            h.update(d[self.checksum_at + 4:self.certdir_at])
            h.update(d[self.certdir_at + 8:self.size_of_headers])
        hashed = self.size_of_headers
        for _, _, rsize, rptr in sorted(self.sections, key=lambda s: s[3]):
            if rsize:
                h.update(d[rptr:rptr + rsize])
                hashed += rsize
        if len(d) > hashed:
            h.update(d[hashed:len(d) - self.cert_size])
        return h.digest()


def stub_sections(stub, uki=None):
    if stub is None and uki is not None:
        magic = uki.section(".sdmagic") or b""
        m = re.search(rb"systemd-stub (\d+)", magic)
        if not m:
            die("%s: no systemd-stub version in .sdmagic; say --stub N" % uki.name)
        stub = int(m.group(1))
    stub = 252 if stub is None else stub
    if uki is not None and uki.section(".profile") is not None:
        die("%s: multi-profile UKIs (.profile) are not supported" % uki.name)
    return stub, (SECTIONS_252 if stub <= 252 else SECTIONS_LATER)


def stub_cmdline(raw):
    """The command line systemd-stub builds from .cmdline for the kernel's LoadOptions: UTF-8
    up to the first NUL, control characters as spaces, trailing spaces dropped; UTF-16LE with
    its NUL, which is what the kernel measures."""
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    text = "".join(" " if ord(c) <= 0x1F else c for c in text).rstrip(" ")
    return (text + "\0").encode("utf-16-le")


def pcr4(stages):
    p = Pcr(4)
    p.extend(sha256(b"Calling EFI Application from Boot Option"), "EV_EFI_ACTION")
    p.extend(sha256(bytes(4)), "EV_SEPARATOR")
    for name, digest in stages:
        p.extend(digest, "EV_EFI_BOOT_SERVICES_APPLICATION " + name)
    return p.value


def pcr9(cmdline, initrd):
    p = Pcr(9)
    p.extend(sha256(stub_cmdline(cmdline)), "EV_EVENT_TAG LOADED_IMAGE::LoadOptions")
    p.extend(sha256(initrd), "EV_EVENT_TAG Linux initrd")
    return p.value


def pcr11(sections, order, phases):
    p = Pcr(11)
    for name in order:
        data = sections.get(name)
        if not data:  # absent or empty: the stub skips it
            continue
        p.extend(sha256(name.encode() + b"\0"), "section name " + name)
        p.extend(sha256(data), "section data " + name)
    for word in phases:
        p.extend(sha256(word.encode()), "phase " + word)
    return p.value


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def main():
    global log_events
    ap = argparse.ArgumentParser(prog="measure.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--uki", help="the unified kernel image: every PCR from it")
    ap.add_argument("--pre-stage", action="append", default=[], metavar="EFI",
                    help="a PE image the firmware starts before the UKI (systemd-boot)")
    for s in SECTIONS_LATER:
        ap.add_argument("--" + s[1:], metavar="FILE", help="the %s section's content" % s)
    ap.add_argument("--stub", type=int, help="systemd-stub's major version (default: the "
                    "UKI's .sdmagic, else 252)")
    ap.add_argument("--phase", default="", help="systemd-pcrphase words, colon separated")
    ap.add_argument("--zero", default="", metavar="PCRS",
                    help="PCRs to add as all-zero, enforced, comma separated (8,12,13,15)")
    ap.add_argument("-v", action="store_true", help="list each event on stderr")
    a = ap.parse_args()
    zero = [w for w in a.zero.split(",") if w]
    if any(not w.isdigit() or int(w) > 23 or int(w) in (4, 9, 11) for w in zero):
        die("--zero takes PCR indexes 0-23 other than 4, 9, 11: %r" % a.zero)
    log_events = a.v

    parts = {s: getattr(a, s[1:]) for s in SECTIONS_LATER}
    out = {}
    if a.uki:
        if any(parts.values()):
            die("give --uki or the sections, not both")
        uki = Pe(read(a.uki), a.uki)
        stub, order = stub_sections(a.stub, uki)
        sections = {s: uki.section(s) for s in order}
        if not sections[".linux"]:
            die("%s: no .linux section" % a.uki)
        stages = [(p, Pe(read(p), p).authenticode()) for p in a.pre_stage]
        stages += [("UKI " + a.uki, uki.authenticode()),
                   ("Linux (.linux)", Pe(sections[".linux"], ".linux").authenticode())]
        out[4] = pcr4(stages)
    else:
        if a.pre_stage:
            die("--pre-stage needs --uki")
        missing = [s for s in (".linux", ".initrd", ".cmdline") if not parts[s]]
        if missing:
            die("missing %s (or give --uki)" % ", ".join("--" + s[1:] for s in missing))
        stub, order = stub_sections(a.stub)
        unknown = [s for s in parts if parts[s] and s not in order]
        if unknown:
            die("systemd-stub %d does not measure %s" % (stub, ", ".join(unknown)))
        sections = {s: read(p) for s, p in parts.items() if p}
        print("measure: PCR 4 needs the whole UKI (--uki): left out", file=sys.stderr)
    if not sections.get(".cmdline") or not sections.get(".initrd"):
        die("PCR 9 needs a .cmdline and an .initrd")
    if sections.get(".pcrpkey"):
        # The stub then appends a cpio of it to the initrd the kernel measures: not modelled.
        die("PCR 9 with a .pcrpkey section is not supported")
    out[9] = pcr9(sections[".cmdline"], sections[".initrd"])
    out[11] = pcr11(sections, order, [w for w in a.phase.split(":") if w])
    for w in zero:
        out[int(w)] = bytes(32)
    print(json.dumps({str(k): {"expected": v.hex(), "warnOnly": False}
                      for k, v in sorted(out.items())}, indent=2))


if __name__ == "__main__":
    main()
