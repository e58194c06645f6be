#!/usr/bin/env python3
"""A fake of Azure IMDS's TDX quote endpoint, for tests on 127.0.0.1 only.

Written from Microsoft's documentation of Azure Instance Metadata Service
(https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service: every request
must carry the header "Metadata: true", else 400 Bad Request with a JSON error; no proxy) and
from the client Constellation ships for Azure TDX VMs (internal/attestation/azure/tdx/
issuer.go: POST /acc/tdquote, JSON {"report": base64url(TDREPORT), unpadded} -> 200
{"quote": base64url(quote), unpadded}).

Where the real service has Intel's Quoting Enclave sign the TD's report, this fake makes a
TDX quote v4 from the test chain of tests/attest/tdx-test/ (make.py): the header and body of
its quote.dat with REPORTDATA taken from the TDREPORT (REPORTMACSTRUCT offset 128), signed by
the test attestation key (test-ak.key, with openssl), followed by the test QE report
certification data (QE report, its PCK signature, the test PCK chain). The quote verifies
with the test collateral and root (--intel-root tdx-test/root-test.pem).

Usage: fake_tdquote.py [--tamper]; prints its port on the first line of stdout.
--tamper: the quote's body is changed after signing (a validator must refuse it)."""
import base64, http.server, json, os, struct, subprocess, sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tdx-test')
TEMPLATE = open(os.path.join(HERE, 'quote.dat'), 'rb').read()
QE_CERT_DATA = open(os.path.join(HERE, 'test-qe-cert-data.bin'), 'rb').read()
AK_KEY = os.path.join(HERE, 'test-ak.key')
TAMPER = '--tamper' in sys.argv


def sign_raw(msg):
    d = subprocess.run(['openssl', 'dgst', '-sha256', '-sign', AK_KEY], input=msg,
                       capture_output=True, check=True).stdout
    i, out = 2, b''
    for _ in range(2):
        l = d[i + 1]
        out += int.from_bytes(d[i + 2:i + 2 + l], 'big').to_bytes(32, 'big')
        i += 2 + l
    return out


def quote_for(tdreport):
    signed = bytearray(TEMPLATE[:632])
    signed[48 + 520:48 + 584] = tdreport[128:192]  # REPORTDATA
    signed = bytes(signed)
    ak = TEMPLATE[700:764]
    sd = sign_raw(signed) + ak + QE_CERT_DATA
    q = bytearray(signed + struct.pack('<I', len(sd)) + sd)
    if TAMPER:
        q[48 + 136] ^= 1  # MRTD, after signing
    return bytes(q)


def b64url_raw_decode(s):
    if not isinstance(s, str) or '=' in s:
        raise ValueError('not unpadded base64url')
    return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))


class H(http.server.BaseHTTPRequestHandler):
    def answer(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json; charset=utf-8')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.headers.get('Metadata') != 'true':
            return self.answer(400, {'error': 'Bad request. Required metadata header not specified'})
        self.answer(404, {'error': 'Not found'})

    def do_POST(self):
        if self.headers.get('Metadata') != 'true':
            return self.answer(400, {'error': 'Bad request. Required metadata header not specified'})
        if self.headers.get('X-Forwarded-For'):
            return self.answer(400, {'error': 'Bad request. Request is forwarded'})
        if self.path != '/acc/tdquote':
            return self.answer(404, {'error': 'Not found'})
        n = int(self.headers.get('Content-Length') or 0)
        try:
            req = json.loads(self.rfile.read(n))
            td = b64url_raw_decode(req['report'])
            if len(td) != 1024:
                raise ValueError('a TDREPORT is 1024 bytes')
        except Exception as e:  # the real service answers 400 to a malformed report
            return self.answer(400, {'error': 'Bad request. %s' % e})
        q = quote_for(td)
        self.answer(200, {'quote': base64.urlsafe_b64encode(q).decode().rstrip('=')})

    def log_message(self, *a):
        pass


srv = http.server.HTTPServer(('127.0.0.1', 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
