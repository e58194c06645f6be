#!/usr/bin/env python3
"""What each component contributes to a static binary, from its GNU ld map file.

Sums the sizes of the input sections that end up in the loaded image (code, read-only and
initialised data; not .bss, not debug info), grouped by the archive they came from, and
prints one row per component. Usage: mapsize.py MAPFILE STRIPPED_BINARY
"""
import os
import re
import sys

# Output sections whose bytes are in the file; .bss/.tbss take no file space.
IMAGE = re.compile(r'^\.(text|rodata|data|init_array|fini_array|eh_frame|eh_frame_hdr|'
                   r'gcc_except_table|tdata|init|fini|preinit_array|got|rela)')

COMPONENTS = [
    (re.compile(r'libconstel\.a|/musl/agent/'), 'constel-agent (ours)'),
    # our code is one LTO unit (Makefile: -flto): the link's ltrans objects are all ours
    (re.compile(r'\.ltrans\d*\.ltrans\.o$'), 'constel-agent (ours)'),
    (re.compile(r'-linux-musl/(libc\.a|[A-Za-z]*crt[1in]\.o)'), 'musl libc'),
    (re.compile(r'libgcc|crtbegin|crtend'), 'libgcc'),
    (re.compile(r'libbearssl\.a'), 'bearssl'),
    (re.compile(r'libprotobuf-nanopb\.a'), 'nanopb'),
    (re.compile(r'libnghttp2\.a'), 'nghttp2'),
    (re.compile(r'libtss2-[a-z-]+\.a'), 'tpm2-tss'),
    (re.compile(r'libcryptsetup\.a'), 'cryptsetup'),
    (re.compile(r'libjson-c\.a'), 'json-c'),
    (re.compile(r'libdevmapper\.a'), 'libdm'),
    (re.compile(r'libuuid\.a'), 'libuuid'),
    (re.compile(r'libnettle\.a'), 'nettle'),
    (re.compile(r'libhogweed\.a'), 'nettle hogweed'),
    (re.compile(r'libsodium\.a'), 'libsodium'),
    (re.compile(r'libz\.a'), 'zlib'),
]

INPUT = re.compile(r'^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$')
INPUT_ONE_LINE = re.compile(r'^ (\S+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$')
OUTPUT = re.compile(r'^(\.\S+|/DISCARD/)')


def component(path):
    for pattern, name in COMPONENTS:
        if pattern.search(path):
            return name
    return 'other (' + os.path.basename(path.split('(')[0]) + ')'


def parse(mapfile):
    sizes = {}
    in_map = False
    out_sec = None
    pending = False
    with open(mapfile) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('Linker script and memory map'):
                in_map = True
                continue
            if not in_map:
                continue
            m = OUTPUT.match(line)
            if m:
                out_sec = m.group(1)
                pending = False
                continue
            if out_sec is None or not IMAGE.match(out_sec):
                continue
            m = INPUT_ONE_LINE.match(line)
            if m:
                size, path = int(m.group(2), 16), m.group(3)
            elif pending and INPUT.match(line):
                m = INPUT.match(line)
                size, path = int(m.group(1), 16), m.group(2)
            else:
                # A long input-section name stands alone; its address, size and file follow.
                pending = bool(re.match(r'^ \S+$', line))
                continue
            pending = False
            if size == 0 or path.startswith('load address'):
                continue
            name = component(path)
            sizes[name] = sizes.get(name, 0) + size
    return sizes


def main():
    mapfile, binary = sys.argv[1], sys.argv[2]
    sizes = parse(mapfile)
    total_file = os.path.getsize(binary)
    counted = sum(sizes.values())
    print(f"{'component':<24} {'bytes':>10} {'KiB':>8} {'share':>7}")
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print(f"{name:<24} {size:>10,} {size / 1024:>8.1f} {100 * size / total_file:>6.1f}%")
    rest = total_file - counted
    print(f"{'ELF headers, alignment':<24} {rest:>10,} {rest / 1024:>8.1f} {100 * rest / total_file:>6.1f}%")
    print(f"{'total (stripped file)':<24} {total_file:>10,} {total_file / 1024:>8.1f} {100.0:>6.1f}%")


if __name__ == '__main__':
    main()
