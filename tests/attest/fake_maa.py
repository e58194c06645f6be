#!/usr/bin/env python3
"""Test double of Microsoft Azure Attestation (MAA) for azure-sev-snp's MAA fallback.

Written from Microsoft's documentation and the client the contract is:
  * "Signing Certificates - Get" (learn.microsoft.com/en-us/rest/api/attestation/
    signing-certificates/get): GET {instanceUrl}/certs answers a JSON Web Key Set whose keys
    carry the signing certificate in x5c (base64 DER) and a kid; tokens are RS256 JWTs whose
    header names that kid (and the set's URL as jku).
  * MAA's errors are CloudError bodies {"error":{"code":..., "message":...}} with HTTP 400 for a
    request it cannot parse (learn.microsoft.com/en-us/rest/api/attestation/attestation/
    attest-sev-snp-vm, "CloudError").
  * The AzureGuest attest call as go-azguestattestation's maa.GetEncryptedToken makes it
    (POST {instanceUrl}/attest/AzureGuest?api-version=2020-10-01, Content-Type
    application/json, {"AttestationInfo": base64url(JSON)}) and maa.DecryptToken reads the
    answer: {"token": base64url(JSON{Jwt, EncryptedInnerKey, EncryptionParams{Iv},
    AuthenticationData})}, the JWT sealed with AES-GCM (additional data "Transport Key") under
    an inner key encrypted RSAES-PKCS1-v1_5 to the request's EncKeyPub (a TPM key).

Test-only endpoints (not MAA's): GET /test/last-request (the last attest body as received);
POST /test/token {"nonce": b64, "exp_in": s, "nbf_in": s,
"iat_in": s, "key": "listed"|"unlisted", "tamper": bool, "alg": "RS256", "no_nonce": bool}
answers a plain signed token, so the validator's refusals can be driven one at a time.

Usage: fake_maa.py --listen 127.0.0.1:PORT; prints "ready" once it serves."""
import argparse
import base64
import datetime
import json
import os
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import NameOID

API_VERSION = "2020-10-01"


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def make_signer(cn):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .sign(key, hashes.SHA256()))
    der = cert.public_bytes(serialization.Encoding.DER)
    # MAA's kids are base64 of a certificate hash; any stable string does here
    h = hashes.Hash(hashes.SHA256())
    h.update(der)
    kid = base64.b64encode(h.finalize()).decode()
    return {"key": key, "der": der, "kid": kid}


class MAA:
    def __init__(self, base):
        self.base = base
        self.listed = make_signer("fake MAA signing key")
        self.unlisted = make_signer("a key MAA does not publish")
        self.last = b""

    def jwks(self):
        return {"keys": [{"x5c": [base64.b64encode(self.listed["der"]).decode()],
                          "kid": self.listed["kid"], "kty": "RSA"}]}

    def token(self, claims, signer, alg="RS256", tamper=False):
        hdr = {"alg": alg, "jku": self.base + "/certs", "kid": signer["kid"], "typ": "JWT"}
        signing_input = (b64url(json.dumps(hdr, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        sig = signer["key"].sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        if tamper:
            sig = bytes([sig[0] ^ 1]) + sig[1:]
        return signing_input + "." + b64url(sig)

    def claims(self, nonce_b64, now, exp_in=8 * 3600, nbf_in=0, iat_in=0, extra=None):
        c = {"exp": now + exp_in, "iat": now + iat_in, "iss": self.base, "jti": os.urandom(16).hex(),
             "nbf": now + nbf_in, "x-ms-attestation-type": "azurevm",
             "x-ms-isolation-tee": {"x-ms-attestation-type": "sevsnpvm",
                                    "x-ms-compliance-status": "azure-compliant-cvm"},
             "x-ms-ver": "1.0"}
        rt = {}
        if nonce_b64 is not None:
            rt["client-payload"] = {"nonce": nonce_b64}
        if extra:
            rt.update(extra)
        c["x-ms-runtime"] = rt
        return c


def rsa_key_of_tpmt_public(b):
    """The RSA public key of a TPMT_PUBLIC (or a TPM2B_PUBLIC around one)."""
    def parse(b):
        typ, _name_alg, _attrs, plen = struct.unpack(">HHIH", b[:10])
        if typ != 0x0001:
            raise ValueError("EncKeyPub is not an RSA key")
        o = 10 + plen
        sym, = struct.unpack(">H", b[o:o + 2]); o += 2
        if sym != 0x0010:
            o += 4
        scheme, = struct.unpack(">H", b[o:o + 2]); o += 2
        if scheme != 0x0010:
            o += 2
        _bits, exp, nlen = struct.unpack(">HIH", b[o:o + 8]); o += 8
        n = b[o:o + nlen]
        if len(n) != nlen or o + nlen != len(b) or nlen < 128:
            raise ValueError("EncKeyPub is malformed")
        return rsa.RSAPublicNumbers(exp or 65537, int.from_bytes(n, "big")).public_key()
    try:
        return parse(b)
    except (ValueError, struct.error):
        if len(b) >= 2 and struct.unpack(">H", b[:2])[0] == len(b) - 2:
            return parse(b[2:])
        raise ValueError("EncKeyPub is not a TPMT_PUBLIC")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    maa = None

    def log_message(self, *a):
        pass

    def reply(self, code, obj=None, text=None):
        body = text.encode() if text is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if text is not None else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def cloud_error(self, code, msg):
        self.reply(400, {"error": {"code": code, "message": msg}})

    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/certs":
            return self.reply(200, self.maa.jwks())
        if u.path == "/test/last-request":  # test-only: the last attest body, as received
            return self.reply(200, text=self.maa.last.decode("latin-1"))
        self.reply(404, {"error": {"code": "NotFound", "message": "no such path"}})

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > (1 << 20):
            raise ValueError("request too large")
        return self.rfile.read(n)

    def do_POST(self):
        u = urlsplit(self.path)
        q = parse_qs(u.query)
        try:
            raw = self.body()
        except ValueError as e:
            return self.cloud_error("RequestTooLarge", str(e))
        if u.path == "/test/token":
            return self.test_token(raw)
        if u.path != "/attest/AzureGuest":
            return self.reply(404, {"error": {"code": "NotFound", "message": "no such path"}})
        self.maa.last = raw
        if q.get("api-version") != [API_VERSION]:
            return self.cloud_error("InvalidParameter",
                                    "The api-version query parameter is missing or not supported")
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self.reply(415, {"error": {"code": "UnsupportedMediaType",
                                              "message": "application/json expected"}})
        try:
            req = json.loads(raw)
            info = json.loads(unb64url(req["AttestationInfo"]))
            if info["AttestationProtocolVersion"] != "2.0":
                raise ValueError("AttestationProtocolVersion is not 2.0")
            nonce = info["ClientPayload"]["nonce"]
            base64.b64decode(nonce, validate=True)
            iso = info["IsolationInfo"]
            if iso["Type"] != "SevSnp":
                raise ValueError("IsolationInfo.Type is not SevSnp")
            proof = json.loads(base64.b64decode(iso["Evidence"]["Proof"], validate=True))
            report = unb64url(proof["SnpReport"])
            if len(report) < 1184:
                raise ValueError("SnpReport is shorter than an SNP report")
            base64.b64decode(proof["VcekCertChain"], validate=True)
            runtime = json.loads(base64.b64decode(iso["Evidence"]["RunTimeData"], validate=True))
            tpm = info["TpmInfo"]
            for f in ("AikCert", "AikPub", "EncKeyCertifyInfo", "EncKeyCertifyInfoSignature",
                      "EncKeyPub", "PcrQuote", "PcrSignature"):
                if not base64.b64decode(tpm[f], validate=True):
                    raise ValueError("TpmInfo.%s is empty" % f)
            if tpm["PcrSet"] != list(range(8)):
                raise ValueError("PcrSet is not PCRs 0-7")
            enc = rsa_key_of_tpmt_public(base64.b64decode(tpm["EncKeyPub"]))
        except (ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
            return self.cloud_error("InvalidParameter", "Failed to parse attestation info: %s" % e)
        now = int(time.time())
        jwt = self.maa.token(self.maa.claims(nonce, now, extra={"keys": runtime.get("keys", [])}),
                             self.maa.listed).encode()
        inner, iv = os.urandom(32), os.urandom(12)
        sealed = AESGCM(inner).encrypt(iv, jwt, b"Transport Key")
        tok = {"Jwt": base64.b64encode(sealed[:-16]).decode(),
               "EncryptedInnerKey": base64.b64encode(enc.encrypt(inner, padding.PKCS1v15())).decode(),
               "EncryptionParams": {"Iv": base64.b64encode(iv).decode()},
               "AuthenticationData": base64.b64encode(sealed[-16:]).decode()}
        self.reply(200, {"token": b64url(json.dumps(tok).encode())})

    def test_token(self, raw):
        try:
            r = json.loads(raw)
        except json.JSONDecodeError:
            return self.reply(400, text="not JSON")
        now = int(time.time())
        c = self.maa.claims(None if r.get("no_nonce") else r.get("nonce", ""), now,
                            r.get("exp_in", 8 * 3600), r.get("nbf_in", 0), r.get("iat_in", 0))
        signer = self.maa.unlisted if r.get("key") == "unlisted" else self.maa.listed
        self.reply(200, text=self.maa.token(c, signer, r.get("alg", "RS256"), r.get("tamper", False)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    a = ap.parse_args()
    host, port = a.listen.rsplit(":", 1)
    Handler.maa = MAA("http://%s" % a.listen)
    srv = HTTPServer((host, int(port)), Handler)
    print("ready", flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
