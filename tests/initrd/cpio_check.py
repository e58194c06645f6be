#!/usr/bin/env python3
"""Reads an initrd (gzip, zstd or plain newc cpio) independently of initrd/mkinitrd.py and
checks what a reproducible archive promises: entries sorted, inode numbers 1..n in order,
owner 0:0, every mtime the given one, device numbers 0, a directory's nlink 2 + its
subdirectories, 4-byte alignment, the trailer last. One line per problem, exit 1 if any.
  cpio_check.py IMAGE --mtime N          check
  cpio_check.py IMAGE --list             print "name mode size" per entry
  cpio_check.py IMAGE --cat NAME         print one file's bytes
"""
import gzip
import stat
import subprocess
import sys


def unpack(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return subprocess.run(["zstd", "-d", "-q", "-c"], input=data, check=True,
                              capture_output=True).stdout
    return data


def entries(data):
    """Yields (fields dict, name, file data, header offset)."""
    off = 0
    names = ["ino", "mode", "uid", "gid", "nlink", "mtime", "size", "devmajor", "devminor",
             "rdevmajor", "rdevminor", "namesize", "check"]
    while True:
        if off % 4 or data[off:off + 6] != b"070701":
            raise ValueError("no newc header at offset %d" % off)
        f = {k: int(data[off + 6 + 8 * i:off + 14 + 8 * i], 16) for i, k in enumerate(names)}
        name_end = off + 110 + f["namesize"]
        name = data[off + 110:name_end - 1].decode()
        if data[name_end - 1] != 0:
            raise ValueError("name at offset %d is not NUL-terminated" % off)
        start = (name_end + 3) & ~3
        yield f, name, data[start:start + f["size"]], off
        if name == "TRAILER!!!":
            return
        off = (start + f["size"] + 3) & ~3


def check(data, mtime):
    problems, seen, prev = [], [], None
    dirs, parents = {}, {}
    for i, (f, name, body, off) in enumerate(entries(data), start=1):
        if name == "TRAILER!!!":
            if len(data) - off > 512:
                problems.append("%d bytes after the trailer" % (len(data) - off))
            break
        seen.append(name)
        if f["ino"] != i:
            problems.append("%s: inode %d, want %d" % (name, f["ino"], i))
        if f["uid"] or f["gid"]:
            problems.append("%s: owner %d:%d" % (name, f["uid"], f["gid"]))
        if f["mtime"] != mtime:
            problems.append("%s: mtime %d, want %d" % (name, f["mtime"], mtime))
        if f["devmajor"] or f["devminor"] or f["rdevmajor"] or f["rdevminor"]:
            problems.append("%s: device numbers not 0" % name)
        if prev is not None and prev.encode() >= name.encode():
            problems.append("%s: not sorted after %s" % (name, prev))
        prev = name
        if stat.S_ISDIR(f["mode"]):
            dirs[name] = f["nlink"]
            parent = name.rpartition("/")[0]
            parents[parent] = parents.get(parent, 0) + 1
        elif f["nlink"] != 1:
            problems.append("%s: nlink %d" % (name, f["nlink"]))
    else:
        problems.append("no TRAILER!!!")
    for d, n in dirs.items():
        if n != 2 + parents.get(d, 0):
            problems.append("%s: nlink %d, want %d" % (d, n, 2 + parents.get(d, 0)))
    return seen, problems


def main():
    data = unpack(sys.argv[1])
    if sys.argv[2] == "--list":
        for f, name, body, _ in entries(data):
            if name != "TRAILER!!!":
                print(name, oct(f["mode"]), f["size"])
    elif sys.argv[2] == "--cat":
        for f, name, body, _ in entries(data):
            if name == sys.argv[3]:
                sys.stdout.buffer.write(body)
                return
        sys.exit("no entry %s" % sys.argv[3])
    else:
        seen, problems = check(data, int(sys.argv[3]))
        for p in problems:
            print(p)
        print("entries %d" % len(seen))
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
