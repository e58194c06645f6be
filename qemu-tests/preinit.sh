#!/bin/bash
# The overlay initrd of a boot whose evidence the guest's hardware cannot give under TCG: OUT is
# the base initrd (build/initrd.img, or --base INITRD) followed by a second gzip'd cpio, which
# the kernel unpacks over the first (later entries win), holding
#   /init                       build/vm/preinit (tests/vm/preinit.c): mounts, loads the
#                               modules, runs the steps, then execs the agent as PID 1
#   /constel-agent              build/constel-agent.stripped (the base's /init, unchanged)
#   /preinit.d/NAME             each --step SRC:NAME, run in lexical order of NAME
#   /preinit/modules/NN-M.ko    each --module NAME of the kernel the tests boot (kernel.sh's
#                               KVER) with what it depends on, dependencies first, in load
#                               order, plain .ko (unpacked when the kernel's are compressed)
#   DEST                        each --file SRC:DEST
# Written by initrd/mkinitrd.py's cpio writer (sorted names, owner 0:0, fixed modes and
# mtimes, gzip at fixed settings): the same inputs give the same bytes. docs/sevboot.md.
#   qemu-tests/preinit.sh OUT [--base INITRD] [--step SRC:NAME]... [--module NAME]...
#                         [--file SRC:DEST]...
# BUILD names the build directory (default build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "preinit.sh: $*" >&2; exit 1; }
usage="usage: qemu-tests/preinit.sh OUT [--base INITRD] [--step SRC:NAME]... [--module NAME]... [--file SRC:DEST]..."

out=${1:-}
[ -n "$out" ] && [ "${out#-}" = "$out" ] || die "$usage"
shift
BUILD=${BUILD:-build}
base=$BUILD/initrd.img
args=()
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || die "$1 needs a value; $usage"
	case $1 in
	--base) base=$2 ;;
	--step | --module | --file) args+=("$1" "$2") ;;
	*) die "unknown argument '$1'; $usage" ;;
	esac
	shift 2
done
[ -f "$base" ] || die "no base initrd at $base (make initrd)"
for f in "$BUILD/vm/preinit" "$BUILD/constel-agent.stripped"; do
	[ -x "$f" ] || die "$f is missing (make $f)"
done
eval "$("$here/kernel.sh")" # KVER: the modules must match the kernel vm.py boots

exec python3 - "$out" "$base" "$BUILD/vm/preinit" "$BUILD/constel-agent.stripped" "$KVER" \
	"$here/../initrd" "${args[@]}" <<'PY'
import os, stat, sys
out, base, preinit, agent, kver, initrd_dir = sys.argv[1:7]
sys.path.insert(0, initrd_dir)
import mkinitrd as m

rest = sys.argv[7:]
tree = m.Tree()
tree.add_file("/init", m.read_file(preinit, "preinit"), 0o755, "init")
tree.add_file("/constel-agent", m.read_file(agent, "agent"), 0o755, "other files")
tree.add_dir("/preinit/modules")
tree.add_dir("/preinit.d")
seen = []
for opt, val in zip(rest[0::2], rest[1::2]):
    if opt == "--step":
        src, sep, name = val.rpartition(":")
        if not sep or not src or not name or "/" in name or name.startswith("."):
            m.die("--step '%s': want SRC:NAME (a file name)" % val)
        if not os.path.isfile(src) or not os.access(src, os.X_OK):
            m.die("--step: '%s' is not an executable file" % src)
        tree.add_file("/preinit.d/" + name, m.read_file(src, "--step"), 0o755, "other files")
    elif opt == "--module":
        for host, inside in m.show_depends(val, kver, "/"):
            if inside not in seen:
                seen.append(inside)
                tree.add_file("/preinit/modules/%02d-%s" % (len(seen), os.path.basename(inside)),
                              m.read_module(host), 0o644, "kernel modules")
    else:
        src, sep, dest = val.partition(":")
        if not sep or not dest.startswith("/") or dest == "/" or not os.path.isfile(src):
            m.die("--file '%s': want SRC:/absolute/dest, SRC a file" % val)
        mode = 0o755 if os.stat(src).st_mode & stat.S_IXUSR else 0o644
        tree.add_file(os.path.normpath(dest), m.read_file(src, "--file"), mode, "other files")

epoch = os.environ.get("SOURCE_DATE_EPOCH", "0")
if not epoch.isdigit() or int(epoch) >= 1 << 32:
    m.die("SOURCE_DATE_EPOCH '%s' is not a number of seconds" % epoch)
archive, _ = m.write_cpio(tree, int(epoch))
data = m.read_file(base, "--base") + m.compress(archive, "gzip")
tmp = out + ".tmp"
with open(tmp, "wb") as f:
    f.write(data)
os.replace(tmp, out)
PY
