#!/usr/bin/env python3
"""Fetches the attestation document an aTLS server (the agent's init or recovery server)
puts into its certificate for our nonce, as Constellation's CLI would see it (spec §1.2, §1.6):
a TLS handshake with the nonce as standard base64 in the SNI, then the certificate's extension
1.3.9900.5.1 (qemu-vtpm), written to --out. The connection is closed right after the
handshake: nothing is sent. Then constel-verify and the Go peer (atlspeer verify-qemu) can check
the same document. Exit 0 with the document written, 1 with one line saying why.

  atls-doc.py --addr 127.0.0.1:PORT --nonce HEX --out FILE [--timeout S]
"""
import argparse
import base64
import socket
import ssl
import sys

QEMU_VTPM_OID = bytes([0x06, 0x05, 0x2B, 0xCD, 0x2C, 0x05, 0x01])  # DER OID 1.3.9900.5.1


def der_len(buf, at):
    """(length, offset of the content) of the DER element whose length byte is at `at`."""
    n = buf[at]
    if n < 0x80:
        return n, at + 1
    k = n & 0x7F
    if k == 0 or k > 4 or at + 1 + k > len(buf):
        raise ValueError("bad DER length")
    return int.from_bytes(buf[at + 1:at + 1 + k], "big"), at + 1 + k


def extension(cert):
    """The OCTET STRING value of the qemu-vtpm extension: OID, [critical BOOLEAN], OCTET STRING."""
    at = cert.find(QEMU_VTPM_OID)
    if at < 0:
        raise ValueError("the certificate has no qemu-vtpm attestation extension")
    at += len(QEMU_VTPM_OID)
    if cert[at:at + 1] == b"\x01":  # critical
        n, at = der_len(cert, at + 1)
        at += n
    if cert[at:at + 1] != b"\x04":
        raise ValueError("the extension value is not an OCTET STRING")
    n, at = der_len(cert, at + 1)
    if at + n > len(cert):
        raise ValueError("the extension runs past the certificate")
    return cert[at:at + n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--nonce", required=True, help="32 bytes in hex")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    try:
        nonce = bytes.fromhex(a.nonce)
        host, port = a.addr.rsplit(":", 1)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the attestation is the trust, checked afterwards
        ctx.set_alpn_protocols(["h2"])
        with socket.create_connection((host, int(port)), timeout=a.timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=base64.b64encode(nonce).decode()) as tls:
                cert = tls.getpeercert(binary_form=True)
        doc = extension(cert)
    except (OSError, ValueError) as e:
        sys.exit("atls-doc: %s: %s" % (a.addr, e))
    with open(a.out, "wb") as f:
        f.write(doc)


if __name__ == "__main__":
    main()
