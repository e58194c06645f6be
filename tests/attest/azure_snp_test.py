#!/usr/bin/env python3
"""A test AMD chain and an Azure HCL report for azure-sev-snp's swtpm test.

  azure_snp_test.py DIR RUNTIME_DATA_FILE

writes into DIR: ark.pem (a self-signed ARK-Milan), chain.pem (its SEV-Milan ASK, then the
ARK, as THIM serves them), vcek.pem (an ECDSA P-384 VCEK with AMD's TCB and hardware-ID
extensions, signed by the ASK), report.bin (a version 2 SNP report, VMPL 0, policy 0x30000,
TCB bl=3 tee=0 snp=8 ucode=0xd1, ID_KEY_DIGEST 0x5a*48, REPORT_DATA = SHA-256(runtime data)
then zeros, signed by the VCEK), hcl.bin (the HCL report as NV 0x01400001 holds it: header
"HCLA" v2, the report at 0x20, the IGVM request data at 0x4c0 (type 2, SHA-256), the runtime
data at 0x4d4, zero padding to 2048 bytes, the most one swtpm NV index holds). The
certificates use RSA-PSS SHA-384 with a 48-byte salt, as AMD's; openssl makes them. A chain
already in DIR (chain.pem) is kept: only the report and hcl.bin are made anew.
"""
import hashlib
import os
import struct
import subprocess
import sys

d, rt_path = sys.argv[1], sys.argv[2]
rt = open(rt_path, "rb").read()
chip = bytes.fromhex("c41f") + bytes(62)
PSS = ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:48", "-sigopt",
       "rsa_mgf1_md:sha384", "-sha384"]
SUBJ = "/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=Advanced Micro Devices"
hwid = ":".join("%02x" % b for b in chip)
open(os.path.join(d, "ext.cnf"), "w").write("""[ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
[vcek]
1.3.6.1.4.1.3704.1.1=DER:02:01:00
1.3.6.1.4.1.3704.1.3.1=DER:02:01:03
1.3.6.1.4.1.3704.1.3.2=DER:02:01:00
1.3.6.1.4.1.3704.1.3.3=DER:02:01:08
1.3.6.1.4.1.3704.1.3.8=DER:02:02:00:d1
1.3.6.1.4.1.3704.1.4=DER:%s
""" % hwid)


def ossl(*a):
    subprocess.run(["openssl"] + list(a), cwd=d, check=True, capture_output=True)


# a chain made before in DIR is kept (the nodes of one QEMU cluster share the test AMD root)
if not os.path.exists(os.path.join(d, "chain.pem")):
    ossl("genrsa", "-out", "ark.key", "2048")
    ossl("req", "-new", "-x509", "-key", "ark.key", "-subj", SUBJ + "/CN=ARK-Milan", "-days", "3650",
         *PSS, "-addext", "basicConstraints=critical,CA:TRUE", "-out", "ark.pem")
    ossl("genrsa", "-out", "ask.key", "2048")
    ossl("req", "-new", "-key", "ask.key", "-subj", SUBJ + "/CN=SEV-Milan", "-out", "ask.csr")
    ossl("x509", "-req", "-in", "ask.csr", "-CA", "ark.pem", "-CAkey", "ark.key", "-set_serial", "2",
         "-days", "3650", *PSS, "-extfile", "ext.cnf", "-extensions", "ca", "-out", "ask.pem")
    ossl("ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", "vcek.key")
    ossl("req", "-new", "-key", "vcek.key", "-subj", SUBJ + "/CN=SEV-VCEK", "-out", "vcek.csr")
    ossl("x509", "-req", "-in", "vcek.csr", "-CA", "ask.pem", "-CAkey", "ask.key", "-set_serial", "3",
         "-days", "365", *PSS, "-extfile", "ext.cnf", "-extensions", "vcek", "-out", "vcek.pem")
    with open(os.path.join(d, "chain.pem"), "wb") as f:
        f.write(open(os.path.join(d, "ask.pem"), "rb").read())
        f.write(open(os.path.join(d, "ark.pem"), "rb").read())

tcb = 0xd108000000000003
r = bytearray(1184)
struct.pack_into("<IIQ", r, 0, 2, 1, 0x30000)
struct.pack_into("<IIQQI", r, 0x30, 0, 1, tcb, 0, 0)
r[0x50:0x90] = hashlib.sha256(rt).digest() + bytes(32)
r[0x90:0xc0] = b"\x11" * 48
r[0xe0:0x110] = b"\x5a" * 48
struct.pack_into("<Q", r, 0x180, tcb)
r[0x1a0:0x1e0] = chip
struct.pack_into("<Q", r, 0x1e0, tcb)
r[0x1e8:0x1eb] = bytes((10, 55, 1))
r[0x1ec:0x1ef] = bytes((10, 55, 1))
struct.pack_into("<Q", r, 0x1f0, tcb)
der = subprocess.run(["openssl", "dgst", "-sha384", "-sign", os.path.join(d, "vcek.key")],
                     input=bytes(r[:0x2a0]), capture_output=True, check=True).stdout


def ints(b):  # ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }
    i = 2 if b[1] < 0x80 else 2 + (b[1] & 0x7f)
    out = []
    while i < len(b):
        n = b[i + 1]
        out.append(int.from_bytes(b[i + 2:i + 2 + n], "big"))
        i += 2 + n
    return out


rr, ss = ints(der)
r[0x2a0:0x2e8] = rr.to_bytes(72, "little")
r[0x2e8:0x330] = ss.to_bytes(72, "little")
open(os.path.join(d, "report.bin"), "wb").write(bytes(r))

h = bytearray(2048)
if 0x4d4 + len(rt) > len(h):
    sys.exit("runtime data too long")
h[0:4] = b"HCLA"
struct.pack_into("<III", h, 4, 2, 0x4d4 + len(rt), 2)
h[0x20:0x20 + 1184] = r
struct.pack_into("<IIIII", h, 0x4c0, 20 + len(rt), 1, 2, 1, len(rt))
h[0x4d4:0x4d4 + len(rt)] = rt
open(os.path.join(d, "hcl.bin"), "wb").write(bytes(h))
