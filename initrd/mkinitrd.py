#!/usr/bin/env python3
"""The project's one initramfs writer: a newc cpio archive written directly, so that the same
inputs give the same bytes on any machine (sorted names, inode numbers 1..n in that order, owner
0:0, fixed modes, every mtime SOURCE_DATE_EPOCH, device numbers 0), then gzip or zstd at fixed
settings. The guest has no modprobe, so the kernel modules come with everything they depend on,
as plain .ko (a .ko.xz, .ko.zst or .ko.gz of the kernel package is unpacked here); /etc/modules.list
names them in load order and /etc/modules.dep what each waits for (agent/boot/modules.c reads
both). A module given as NAME:PHASE (or under a "#@ PHASE" line of --modules-file) is first
needed by that boot phase (PHASES; a bare NAME: "network", before the network); each module
then gets the earliest phase of the modules that need it, the list is sorted by phase
(dependencies stay first), and /etc/modules.phase says the phase of each, so that the agent
loads the network's modules first and the rest in the background.

  mkinitrd.py OUT --init BIN --kver KVER [--modules "name[:phase] ..."] [--modules-file F]
              [--phase NAME:PHASE ...]
              [--file SRC:/DEST]... [--module-root DIR] [--compress gzip|zstd|none] [--sizes]
"""
import argparse
import gzip
import io
import lzma
import os
import stat
import subprocess
import sys

# Mount points /init needs: the kernel's built-in initramfs has only /dev and /root.
MOUNT_POINTS = ["/bin", "/dev", "/etc", "/proc", "/run", "/sbin", "/sys", "/tmp"]
MODULES_LIST = "/etc/modules.list"
MODULES_DEP = "/etc/modules.dep"
MODULES_PHASE = "/etc/modules.phase"
# Where agent/net/net.h's CA_BUNDLE_DEFAULT reads the roots for https:// (initrd/build.sh).
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# The boot phases that need modules, in boot order (agent/boot/boot.h enum modules_phase).
PHASES = ["network", "root", "verity", "disk", "handover"]
GZIP_LEVEL = 9
# -19 is what docs/qemu.md §3 booted; one thread, because zstd's multithreaded output
# is framed differently and ZSTD_NBTHREADS in the environment must not change the bytes.
ZSTD_ARGS = ["zstd", "-q", "-19", "-T1", "-c"]


def die(msg):
    sys.exit("mkinitrd: " + msg)


class Tree:
    """The archive's entries by path ("/a/b"): ("dir",), ("file", bytes, mode, part) or
    ("link", target, part)."""

    def __init__(self):
        self.entries = {}

    def add_dir(self, path):
        while path != "/" and path not in self.entries:
            self.entries[path] = ("dir",)
            path = os.path.dirname(path)

    def add_file(self, path, data, mode, part):
        if path in self.entries:
            die("%s is given twice" % path)
        self.add_dir(os.path.dirname(path))
        self.entries[path] = ("file", data, mode, part)

    def add_link(self, path, target, part):
        if path in self.entries:
            die("%s is given twice" % path)
        self.add_dir(os.path.dirname(path))
        self.entries[path] = ("link", target.encode(), part)


def read_file(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        die("%s: %s: %s" % (what, path, e.strerror))


# The module suffixes a kernel package may ship, and how the writer unpacks them: the initrd
# stores plain .ko only (the archive is compressed as a whole; compressing each module too only
# costs the guest a second decompression, and Debian 12's kernel cannot do it at all, see
# docs/qemu.md section 2).
KO_UNPACK = {".ko.xz": "xz", ".ko.zst": "zstd", ".ko.gz": "gzip"}


def parse_modules(words, path):
    """[(name, phase)] of --modules words (NAME or NAME:PHASE) and of a modules file (one name
    a line; "#@ PHASE" sets the phase of the names after it; other "#" lines are comments)."""
    out = []
    for w in words:
        name, _, phase = w.partition(":")
        out.append((name, phase or "network"))
    if path:
        phase = "network"
        for n, line in enumerate(read_file(path, "--modules-file").decode().splitlines(), 1):
            words = line.split()
            if line.startswith("#@"):
                if len(words) != 2:
                    die("%s:%d: want '#@ PHASE'" % (path, n))
                phase = words[1]
            elif words and not line.startswith("#"):
                if len(words) != 1:
                    die("%s:%d: one module name a line" % (path, n))
                out.append((words[0], phase))
    for name, phase in out:
        if phase not in PHASES:
            die("module %s: no such phase '%s' (one of %s)" % (name, phase, " ".join(PHASES)))
    return out


def set_phases(names, overrides):
    """names ([(name, phase)]) with the phase of each module that overrides (NAME:PHASE words)
    names replaced; a name that is not listed, or a phase that does not exist, is an error."""
    want = {}
    for w in overrides:
        name, _, phase = w.partition(":")
        if phase not in PHASES:
            die("--phase %s: no such phase '%s' (one of %s)" % (w, phase, " ".join(PHASES)))
        if name not in (n for n, _ in names):
            die("--phase %s: module %s is not in the list" % (w, name))
        want[name] = phase
    return [(n, want.get(n, p)) for n, p in names]


def by_phase(order, phases):
    """order (as resolve_modules returns it) sorted by phase, stably, the wait sets renumbered;
    and the phase of each."""
    new = sorted(range(len(order)), key=lambda i: (phases[i], i))
    where = {old: k for k, old in enumerate(new)}
    out = [(order[i][0], order[i][1], {where[j] for j in order[i][2]}) for i in new]
    for k, (_, inside, waits) in enumerate(out):
        if any(j >= k for j in waits):  # a dependency of a later phase than its dependent
            die("module %s: a dependency would load after it" % inside)
    return out, [phases[i] for i in new]


def resolve_modules(names, kver, root):
    """modprobe's "insmod PATH" lines, dependencies first, in the order the names are given;
    shared dependencies keep their first place. names: [(name, phase index)]. Returns
    ([(host path, path in the archive, set of indexes into the result this module must wait
    for)], [phase index of each]): a module's phase is the earliest of the names whose chain
    holds it; a module waits for what modprobe --show-depends prints for it (its modules.dep
    dependencies and the soft dependencies modprobe loads first), so that a loader may load
    the others in parallel and skip only what needs a module that found no hardware."""
    seen, order, phases = {}, [], []
    for name, phase in names:
        for host, inside in show_depends(name, kver, root):
            if inside not in seen:
                seen[inside] = len(order)
                order.append((host, inside, set()))
                phases.append(phase)
            i = seen[inside]
            phases[i] = min(phases[i], phase)
    # What each module waits for: its own chain (its dependencies and soft dependencies), not
    # everything before it in the chain of the name it came with: scsi_common came after
    # hv_vmbus in hv_storvsc's chain, and off Azure hv_vmbus's ENODEV would skip it and with it
    # GCP's SCSI disks.
    for i, (host, inside, waits) in enumerate(order):
        mod = os.path.basename(inside)[:-len(".ko")]
        waits.update(seen[d] for _, d in show_depends(mod, kver, root)
                     if d != inside and seen.get(d, i) < i)
    return by_phase(order, phases)


def show_depends(name, kver, root):
    """modprobe --show-depends NAME: [(host path, path in the archive)], dependencies first."""
    where = ["-d", root] if root != "/" else []
    r = subprocess.run(["modprobe"] + where + ["-S", kver, "--show-depends", name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["modprobe failed"])[-1]
        die("module %s (kernel %s): %s" % (name, kver, why.replace("modprobe: FATAL: ", "")))
    out = []
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != "insmod":  # "builtin NAME": nothing to load
            continue
        host = words[1]
        inside = "/" + host[len(root):].lstrip("/") if root != "/" else host
        for suffix in KO_UNPACK:
            if inside.endswith(suffix):
                inside = inside[:-len(suffix)] + ".ko"
        if not inside.endswith(".ko"):
            die("module %s: %s is not a .ko file" % (name, inside))
        out.append((host, inside))
    return out


def read_module(host):
    """The plain .ko of a module file, unpacked when the kernel package ships it compressed."""
    data = read_file(host, "module")
    how = next((v for k, v in KO_UNPACK.items() if host.endswith(k)), None)
    try:
        if how == "xz":
            return lzma.decompress(data)
        if how == "gzip":
            return gzip.decompress(data)
        if how == "zstd":
            r = subprocess.run(["zstd", "-q", "-d", "-c"], input=data, capture_output=True)
            if r.returncode != 0:
                raise ValueError(r.stderr.decode(errors="replace").strip())
            return r.stdout
    except FileNotFoundError:
        die("module %s: zstd is not installed (apt-get install zstd)" % host)
    except (lzma.LZMAError, OSError, EOFError, ValueError) as e:
        die("module %s: cannot unpack: %s" % (host, e))
    return data


def newc_header(ino, mode, nlink, mtime, size, namesize):
    # magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
    # rdevminor, namesize, check
    fields = [ino, mode, 0, 0, nlink, mtime, size, 0, 0, 0, 0, namesize, 0]
    return b"070701" + b"".join(b"%08X" % v for v in fields)


def pad4(n):
    return (4 - n % 4) % 4


def write_cpio(tree, mtime):
    """The archive's bytes and the bytes each part contributes (its data; headers, names and
    padding count as "cpio overhead")."""
    out = io.BytesIO()
    sizes = {}
    paths = sorted(tree.entries, key=lambda p: p.encode())  # a parent sorts before its children
    subdirs = {}
    for p in paths:
        if tree.entries[p][0] == "dir":
            parent = os.path.dirname(p)
            subdirs[parent] = subdirs.get(parent, 0) + 1

    def emit(ino, mode, nlink, name, data):
        name = name.encode() + b"\0"
        hdr = newc_header(ino, mode, nlink, mtime, len(data), len(name))
        out.write(hdr + name + b"\0" * pad4(len(hdr) + len(name)))
        out.write(data + b"\0" * pad4(len(data)))
        return len(hdr) + len(name) + pad4(len(hdr) + len(name)) + pad4(len(data))

    overhead = 0
    for ino, p in enumerate(paths, start=1):
        e = tree.entries[p]
        if e[0] == "dir":
            mode = stat.S_IFDIR | (0o1777 if p == "/tmp" else 0o755)
            overhead += emit(ino, mode, 2 + subdirs.get(p, 0), p[1:], b"")
        elif e[0] == "file":
            overhead += emit(ino, stat.S_IFREG | e[2], 1, p[1:], e[1])
            sizes[e[3]] = sizes.get(e[3], 0) + len(e[1])
        else:
            overhead += emit(ino, stat.S_IFLNK | 0o777, 1, p[1:], e[1])
            sizes[e[2]] = sizes.get(e[2], 0) + len(e[1])
    overhead += emit(0, 0, 1, "TRAILER!!!", b"")
    sizes["cpio overhead"] = overhead
    return out.getvalue(), sizes


def compress(data, how):
    if how == "none":
        return data
    if how == "gzip":
        # No name, mtime 0: the header carries nothing of the build machine or time.
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0,
                           compresslevel=GZIP_LEVEL) as g:
            g.write(data)
        return buf.getvalue()
    try:
        r = subprocess.run(ZSTD_ARGS, input=data, capture_output=True)
    except FileNotFoundError:
        die("zstd: not installed (apt-get install zstd)")
    if r.returncode != 0:
        die("zstd: " + r.stderr.decode(errors="replace").strip())
    return r.stdout


def part_of(path):
    if path == "/init":
        return "init"
    if path.startswith("/lib/modules/"):
        return "kernel modules"
    if path == "/sbin/mke2fs":
        return "mke2fs"
    if path == CA_BUNDLE:
        return "CA bundle"
    return "other files"


def main():
    ap = argparse.ArgumentParser(prog="mkinitrd.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--init", default="", help="the program that becomes /init")
    ap.add_argument("--kver", default="", help="kernel version the modules are for")
    ap.add_argument("--modules", default="",
                    help="module names, space separated, each NAME or NAME:PHASE")
    ap.add_argument("--modules-file", default="",
                    help="more modules: a file like initrd/modules.txt")
    ap.add_argument("--phase", action="append", default=[], metavar="NAME:PHASE",
                    help="the first phase that needs a listed module, in place of its mark (an "
                    "OS image whose root is not ext4: ext4:disk)")
    ap.add_argument("--module-root", default="/",
                    help="root whose /lib/modules/KVER holds the modules (an OS image's tree)")
    ap.add_argument("--file", action="append", default=[], metavar="SRC:/DEST")
    ap.add_argument("--symlink", action="append", default=[], metavar="/PATH:TARGET")
    ap.add_argument("--compress", choices=["gzip", "zstd", "none"], default="gzip")
    ap.add_argument("--sizes", action="store_true", help="print the size table by part")
    a = ap.parse_args()

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "0")
    if not epoch.isdigit() or int(epoch) >= 1 << 32:
        die("SOURCE_DATE_EPOCH '%s' is not a number of seconds" % epoch)
    if not a.init:
        die("--init BIN is missing: the initrd needs a program to run as /init")
    names = set_phases(parse_modules(a.modules.split(), a.modules_file), a.phase)
    if not a.kver and names:
        die("--kver KVER is missing: the modules must match the kernel that boots")
    if not os.path.isfile(a.init) or not os.access(a.init, os.X_OK):
        die("--init: '%s' is not an executable file" % a.init)

    tree = Tree()
    for d in MOUNT_POINTS:
        tree.add_dir(d)
    tree.add_file("/init", read_file(a.init, "--init"), 0o755, "init")

    mods, phases = resolve_modules([(n, PHASES.index(p)) for n, p in names], a.kver,
                                   a.module_root)
    for host, inside, _ in mods:
        tree.add_file(inside, read_module(host), 0o644, "kernel modules")
    tree.add_file(MODULES_LIST, "".join(m[1] + "\n" for m in mods).encode(), 0o644,
                  "other files")
    # Line i of modules.dep: "i: j k ..." (1-based lines of modules.list, each before i) names
    # the modules that module i waits for (agent/boot/modules.c loads the rest in parallel).
    if mods:
        tree.add_file(MODULES_DEP, "".join(
            "%d:%s\n" % (i, "".join(" %d" % (j + 1) for j in sorted(m[2])))
            for i, m in enumerate(mods, start=1)).encode(), 0o644, "other files")
    # Line i of modules.phase: "i: PHASE", the first boot phase that needs module i; only when
    # some module can wait (without it the agent loads all before the network).
    if any(phases):
        tree.add_file(MODULES_PHASE, "".join(
            "%d: %s\n" % (i, PHASES[p]) for i, p in enumerate(phases, start=1)).encode(), 0o644,
            "other files")

    for f in a.file:
        src, sep, dest = f.partition(":")
        if not sep or not src or not dest.startswith("/") or dest == "/":
            die("--file '%s': want SRC:/absolute/dest" % f)
        if not os.path.isfile(src):
            die("--file: '%s' is not a file" % src)
        dest = os.path.normpath(dest)
        mode = 0o755 if os.stat(src).st_mode & stat.S_IXUSR else 0o644
        tree.add_file(dest, read_file(src, "--file"), mode, part_of(dest))
    for s in a.symlink:
        path, sep, target = s.partition(":")
        if not sep or not path.startswith("/") or not target:
            die("--symlink '%s': want /PATH:TARGET" % s)
        tree.add_link(os.path.normpath(path), target, part_of(path))

    archive, sizes = write_cpio(tree, int(epoch))
    packed = compress(archive, a.compress)
    tmp = a.out + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(tmp, "wb") as f:
        f.write(packed)
    os.replace(tmp, a.out)

    if a.sizes:
        print("%-28s %12s" % ("part (uncompressed)", "bytes"))
        for part in ["init", "kernel modules", "mke2fs", "CA bundle", "other files",
                     "cpio overhead"]:
            if part in sizes:
                extra = " (%d .ko)" % len(mods) if part == "kernel modules" else ""
                print("%-28s %12d" % (part + extra, sizes[part]))
        print("%-28s %12d" % ("total (uncompressed)", len(archive)))
        print("%-28s %12d" % ("total (%s)" % a.compress, len(packed)))


if __name__ == "__main__":
    main()
