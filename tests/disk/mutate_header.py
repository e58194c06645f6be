#!/usr/bin/env python3
"""Changes a LUKS2 header as an attacker with write access to the disk would: applies CODE
(Python, on the parsed JSON metadata `d`) to the primary header, or to the secondary one
with its sequence number raised so libcryptsetup would prefer it, and makes the checksum
right again. Only the header area is rewritten.

    mutate_header.py IMAGE CODE [secondary]
"""
import hashlib
import json
import struct
import sys

path, code = sys.argv[1], sys.argv[2]
which = sys.argv[3] if len(sys.argv) > 3 else "primary"
with open(path, "r+b") as f:
    b = bytearray(f.read(16 << 20))  # both headers fit: each is at most 4 MiB
    size = struct.unpack(">Q", b[8:16])[0]
    o = size if which == "secondary" else 0
    if o:
        b[o + 16:o + 24] = struct.pack(">Q", struct.unpack(">Q", b[16:24])[0] + 1)
    d = json.loads(bytes(b[o + 4096:o + size]).rstrip(b"\0"))
    exec(code)
    j = json.dumps(d, separators=(",", ":")).encode()
    b[o + 4096:o + size] = j + b"\0" * (size - 4096 - len(j))
    b[o + 448:o + 512] = b"\0" * 64
    b[o + 448:o + 480] = hashlib.sha256(bytes(b[o:o + size])).digest()
    f.seek(0)
    f.write(b)
