#!/usr/bin/env python3
"""The state-disk header rules of spec §6.2, written a second time, independently of the
agent's C check, over what Debian's cryptsetup prints with `luksDump --dump-json-metadata`.
The Go disk-mapper decodes that JSON strictly (no unknown field) and checks every keyslot,
segment and digest; a header the agent creates must pass. Exit 0 and "ok", or exit 1 and
one line naming what failed.

    cryptsetup luksDump --dump-json-metadata DISK | luks_check.py [--token initialized]
"""
import json
import sys

TOP = {"keyslots", "tokens", "segments", "digests", "config"}
KEYSLOT = {"type", "key_size", "af", "area", "kdf", "priority"}
AF = {"type", "stripes", "hash"}
AREA = {"type", "offset", "size", "encryption", "key_size"}
KDF = {"type", "time", "memory", "cpus", "salt", "hash", "iterations"}
SEGMENT = {"type", "offset", "size", "iv_tweak", "encryption", "sector_size", "integrity", "flags"}
INTEGRITY = {"type", "journal_encryption", "journal_integrity"}
DIGEST = {"type", "keyslots", "segments", "hash", "iterations", "salt", "digest"}
CONFIG = {"json_size", "keyslots_size", "flags", "requirements"}


def fields(obj, allowed, where):
    if not isinstance(obj, dict):
        raise ValueError(f"{where} is not an object")
    extra = set(obj) - allowed
    if extra:
        raise ValueError(f"{where}: unknown field {sorted(extra)[0]}")


def check(d):
    fields(d, TOP, "metadata")
    fields(d.get("config", {}), CONFIG, "config")
    for i, k in d["keyslots"].items():
        w = f"keyslot {i}"
        fields(k, KEYSLOT, w)
        fields(k["af"], AF, w + " af")
        fields(k["area"], AREA, w + " area")
        fields(k["kdf"], KDF, w + " kdf")
        if k["type"] != "luks2" or k["key_size"] not in (64, 96):
            raise ValueError(f"{w}: type {k['type']} key_size {k['key_size']}")
        if (k["af"]["type"], k["af"]["stripes"], k["af"]["hash"]) != ("luks1", 4000, "sha256"):
            raise ValueError(f"{w}: af {k['af']}")
        a = k["area"]
        if (a["type"], a["encryption"], a["key_size"]) != ("raw", "aes-xts-plain64", 64):
            raise ValueError(f"{w}: area {a}")
        f = k["kdf"]
        if f["type"] != "argon2id" or not f.get("memory", 0) > 0 or not f.get("salt"):
            raise ValueError(f"{w}: kdf {f['type']}")
    if not d["segments"]:
        raise ValueError("no segments")
    for i, s in d["segments"].items():
        w = f"segment {i}"
        fields(s, SEGMENT, w)
        if s["type"] != "crypt" or s["sector_size"] != 4096 or s["iv_tweak"] != "0":
            raise ValueError(f"{w}: type {s['type']} sector_size {s['sector_size']}")
        if s["encryption"] != "aes-xts-plain64":
            raise ValueError(f"{w}: encryption {s['encryption']}")
        if "integrity" in s:
            g = s["integrity"]
            fields(g, INTEGRITY, w + " integrity")
            if (g["type"], g["journal_encryption"], g["journal_integrity"]) != (
                "hmac(sha256)", "none", "none"):
                raise ValueError(f"{w}: integrity {g}")
    for i, g in d["digests"].items():
        w = f"digest {i}"
        fields(g, DIGEST, w)
        if g["type"] != "pbkdf2" or g["hash"] != "sha256" or not g["salt"] or not g["digest"]:
            raise ValueError(f"{w}: {g['type']} {g['hash']}")


def initialized(d):
    t = d["tokens"].get("0", {})
    return (t.get("type") == "constellation-state-disk" and isinstance(t.get("keyslots"), list)
            and t.get("diskIsInitialized") is True)


def main():
    try:
        d = json.load(sys.stdin)
        check(d)
    except (ValueError, KeyError, TypeError) as e:
        print(f"refused: {e}")
        return 1
    want = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--token" else None
    state = "initialized" if initialized(d) else "not-initialized"
    if want and state != want:
        print(f"token: {state}, want {want}")
        return 1
    kdfs = sorted({(k["kdf"]["type"], k["kdf"].get("time"), k["kdf"]["memory"], k["kdf"]["cpus"])
                   for k in d["keyslots"].values()})
    print(f"ok {state} kdf {kdfs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
