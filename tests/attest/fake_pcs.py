#!/usr/bin/env python3
"""A fake of Intel's Provisioning Certification Service (PCS API v4) and of its certificate
host, over TLS on 127.0.0.1, for tests/attest/test_tdx_pcs.sh. Written from Intel's PCS API
documentation (api.portal.trustedservices.intel.com, "Intel SGX and Intel TDX services:
Provisioning Certification Service API v4"):
  GET /tdx/certification/v4/tcb?fmspc=HEX   200 TCB info JSON, header TCB-Info-Issuer-Chain;
                                            404 for an FMSPC it has no TCB info for;
                                            400 without fmspc
  GET /tdx/certification/v4/qe/identity     200 QE identity JSON, SGX-Enclave-Identity-Issuer-Chain
  GET /sgx/certification/v4/pckcrl?ca=processor|platform&encoding=der
                                            200 DER CRL, SGX-PCK-CRL-Issuer-Chain; 400 for
                                            another ca or encoding
  GET <path of the root CA CRL's URL>        the SGX Root CA's CRL (certificates host): the URL
                                            is the CRL distribution point of the root
                                            certificate of the issuer chains (Intel's names
                                            /IntelSGXRootCA.der; the test root another path,
                                            and only that path is served)
Each issuer chain header is the PEM chain URL-encoded, as PCS sends it. The first TCB info
request of a run is answered 429 with Retry-After: 1 (PCS's rate limit, RFC 9110 §10.2.3).
Paths under /big/ serve the TCB info padded past 256 KiB; under /none/ every FMSPC is unknown;
under /slow/ the first TCB info request is answered 429 with Retry-After: 3, and one that comes
before those 3 s have passed is logged "EARLY <path>" and answered 429 again; under /long/
every TCB info request is answered 429 with Retry-After: 3600. Every request is logged as one
line "REQ <path>" to the log file.
usage: fake_pcs.py DIR CERT KEY LOG   (prints "listening on 127.0.0.1 (port N)")"""
import http.server, json, os, ssl, sys, time, urllib.parse
from cryptography import x509

d, cert, key, log = sys.argv[1:5]
files = {n: open(os.path.join(d, n), 'rb').read() for n in (
    'tcbinfo.json', 'tcbinfo-issuer-chain.pem', 'qeidentity.json', 'qeidentity-issuer-chain.pem',
    'pckcrl.der', 'pckcrl-issuer-chain.pem', 'rootcrl.der')}
fmspc = json.loads(files['tcbinfo.json'])['tcbInfo']['fmspc'].lower()
root = x509.load_pem_x509_certificates(files['qeidentity-issuer-chain.pem'])[-1]
cdp = root.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
rootcrl_path = urllib.parse.urlsplit(cdp[0].full_name[0].value).path
state = {}  # mode -> the monotonic time before which a TCB info request is too early

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def send(self, code, body=b'', hdrs=()):
        self.send_response(code)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_GET(self):
        with open(log, 'a') as f:
            f.write('REQ %s\n' % self.path)
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        path, mode = u.path, ''
        for m in ('/big', '/none', '/slow', '/long'):
            if path.startswith(m + '/'):
                path, mode = path[len(m):], m
        chain = lambda n: urllib.parse.quote(files[n].decode(), safe='')
        if path == '/tdx/certification/v4/tcb':
            if 'fmspc' not in q:
                return self.send(400)
            wait = {'/slow': 3, '/long': 3600}.get(mode, 1)
            now = time.monotonic()
            if mode == '/long' or mode not in state:
                state[mode] = now + wait
                return self.send(429, hdrs=[('Retry-After', str(wait))])
            if now < state[mode]:
                with open(log, 'a') as f:
                    f.write('EARLY %s\n' % self.path)
                return self.send(429, hdrs=[('Retry-After', str(int(state[mode] - now) + 1))])
            if mode == '/none' or q['fmspc'].lower() != fmspc:
                return self.send(404)
            body = files['tcbinfo.json']
            if mode == '/big':
                body += b' ' * (300 << 10)
            return self.send(200, body, [('Content-Type', 'application/json'),
                                         ('TCB-Info-Issuer-Chain', chain('tcbinfo-issuer-chain.pem'))])
        if path == '/tdx/certification/v4/qe/identity':
            return self.send(200, files['qeidentity.json'], [
                ('Content-Type', 'application/json'),
                ('SGX-Enclave-Identity-Issuer-Chain', chain('qeidentity-issuer-chain.pem'))])
        if path == '/sgx/certification/v4/pckcrl':
            if q.get('ca') not in ('processor', 'platform') or q.get('encoding', 'pem') != 'der':
                return self.send(400)
            return self.send(200, files['pckcrl.der'], [
                ('Content-Type', 'application/pkix-crl'),
                ('SGX-PCK-CRL-Issuer-Chain', chain('pckcrl-issuer-chain.pem'))])
        if path == rootcrl_path:
            return self.send(200, files['rootcrl.der'], [('Content-Type', 'application/pkix-crl')])
        return self.send(404)

s = http.server.HTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print('listening on 127.0.0.1 (port %d)' % s.server_address[1], flush=True)
s.serve_forever()
