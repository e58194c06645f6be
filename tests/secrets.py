#!/usr/bin/env python3
"""Every secret of a test run, one a line, in the forms a log could hold them (hex, base64
with and without padding, URL-safe base64): what the tests grep their logs for.

  secrets.py [--workspace DIR]... [--master KEYHEX:SALTHEX]... [--hex HEX]... [--raw S]...
             [--pem FILE]... [--scan DIR]...

--workspace: a constel-init workspace (master key and salt, init secret, measurement salt);
--master: a further master secret (the Go peer's CLI); --scan: every LUKS2 image (*.img,
*.raw) in DIR gets its disk key derived from every master secret (spec §3: GetDEK by the
disk's UUID), plus the measurement secret and the SSH CA seed; *.token files and private-key
PEMs found there are added as they are."""
import argparse, base64, hashlib, hmac, json, os, subprocess, sys

out = set()


def add(b):
    if isinstance(b, str):
        b = b.encode()
    if len(b) < 8:
        return
    b64 = base64.b64encode(b).decode()
    out.update({b.hex(), b64, b64.rstrip("="), base64.urlsafe_b64encode(b).decode().rstrip("=")})


def dek(master, kid):
    key, salt = master
    prk = hmac.new(salt, key, hashlib.sha256).digest()
    return hmac.new(prk, ("key-" + kid).encode() + b"\x01", hashlib.sha256).digest()


def pem_body(path):
    for line in open(path, errors="replace"):
        if not line.startswith("-----") and len(line.strip()) > 16:
            out.add(line.strip())


ap = argparse.ArgumentParser()
ap.add_argument("--workspace", action="append", default=[])
ap.add_argument("--master", action="append", default=[])
ap.add_argument("--hex", action="append", default=[])
ap.add_argument("--raw", action="append", default=[])
ap.add_argument("--pem", action="append", default=[])
ap.add_argument("--scan", action="append", default=[])
a = ap.parse_args()

masters = []
for ws in a.workspace:
    p = os.path.join(ws, "constellation-mastersecret.json")
    if not os.path.exists(p):
        continue
    j = json.load(open(p))
    k, s = base64.b64decode(j["key"]), base64.b64decode(j["salt"])
    masters.append((k, s))
    add(k)
    add(s)
    for name in ("init-secret", "measurement-salt"):
        q = os.path.join(ws, name)
        if os.path.exists(q):
            sec = open(q).read().strip()
            out.add(sec)
            add(bytes.fromhex(sec))
for m in a.master:
    k, s = m.split(":")
    masters.append((bytes.fromhex(k), bytes.fromhex(s)))
for h in a.hex:
    add(bytes.fromhex(h))
for r in a.raw:
    out.add(r)
for p in a.pem:
    pem_body(p)
for d in a.scan:
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith((".img", ".raw")):
                u = subprocess.run(["cryptsetup", "luksUUID", p], capture_output=True,
                                   text=True).stdout.strip()
                for m in masters if u else []:
                    add(dek(m, u))
            elif f.endswith(".token"):
                out.add(open(p).read().strip())
            elif f in ("kubelet-client-key.pem", "ssh_host_ed25519_key"):
                pem_body(p)
for m in masters:
    add(dek(m, "measurementSecret"))
    add(dek(m, "ca_emergency_ssh"))
for s in sorted(out):
    if s:
        print(s)
