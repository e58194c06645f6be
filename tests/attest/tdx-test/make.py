#!/usr/bin/env python3
"""Makes the TDX test collateral in this folder (run it here; needs openssl): a test root
(CN Intel SGX Root CA, O=Test), a PCK CA and a PCK certificate with Intel's SGX extensions
(1.2.840.113741.1.13.1: TCB components 5,5,2,2,3,1,0,3,0..., PCE SVN 11, PCE ID 0000, FMSPC
50806f000000), a TCB signing certificate, a TDX quote v4 signed through that chain
(TEE TCB SVN 03 00 05 ...), and two TCB infos (issued 2026-11-01, next update 2027-06-01) signed by the test TCB signing key: one whose
first level the platform reaches (UpToDate), one whose first level asks for more (component 1
= 6) so the second (OutOfDate) is chosen; and the rest of a PCS collateral folder for that
quote (tcbinfo.json = the UpToDate one, QE identity, PCK and root CA CRLs, issuer chains,
pckcrl-revoked.der listing the PCK); the root CA CRL's distribution point, in the root and
its CAs, is https://certificates.trustedservices.intel.com/test/SGXRootCA-test.der. Keeps the attestation key (test-ak.key) and the quote's
certification data (test-qe-cert-data.bin) for the fake /acc/tdquote. Used by
tests/attest/test_tdx.c and test_tdx_quote.sh. The certificates are valid from when it is run,
for 100 years; the tests check at 2027-01-01."""
import hashlib, json, os, struct, subprocess

def run(*a, **k):
    return subprocess.run(list(a), check=True, capture_output=True, **k).stdout

def der_len(n):
    if n < 0x80: return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, 'big')
    return bytes([0x80 | len(b)]) + b

def tlv(t, v): return bytes([t]) + der_len(len(v)) + v
def seq(*v): return tlv(0x30, b''.join(v))
def integer(n): 
    b = n.to_bytes(max(1, (n.bit_length() + 8) // 8), 'big')
    return tlv(0x02, b)
SGX = bytes.fromhex('2a864886f84d010d01')
def oid(*sub): return tlv(0x06, SGX + bytes(sub))

comps = [5, 5, 2, 2, 3, 1, 0, 3] + [0] * 8
tcb = seq(*[seq(oid(2, i + 1), integer(c)) for i, c in enumerate(comps)],
          seq(oid(2, 17), integer(11)), seq(oid(2, 18), tlv(0x04, bytes(comps))))
ext = seq(seq(oid(1), tlv(0x04, bytes(16))), seq(oid(2), tcb), seq(oid(3), tlv(0x04, b'\0\0')),
          seq(oid(4), tlv(0x04, bytes.fromhex('50806f000000'))))

for n in ('root', 'ca', 'pck', 'tcbsign', 'ak'):
    run('openssl', 'ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', n + '.key')
days = ['-days', '36500']
# The root CA CRL's URL, in the CRL distribution point of the root and of the CAs it issues as
# in Intel's chains, but at a path of its own: the PCS client must read it from there (the fake
# PCS serves the root CA CRL at that path only).
ROOT_CDP = 'crlDistributionPoints=URI:https://certificates.trustedservices.intel.com/test/SGXRootCA-test.der'
run('openssl', 'req', '-new', '-x509', '-key', 'root.key', '-subj', '/CN=Intel SGX Root CA/O=Test',
    '-set_serial', '1', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', ROOT_CDP,
    '-out', 'root.pem', *days)
def issue(name, cn, issuer, serial, extlines):
    run('openssl', 'req', '-new', '-key', name + '.key', '-subj', '/CN=%s/O=Test' % cn, '-out', name + '.csr')
    open(name + '.ext', 'w').write(extlines)
    run('openssl', 'x509', '-req', '-in', name + '.csr', '-CA', issuer + '.pem', '-CAkey', issuer + '.key',
        '-set_serial', str(serial), '-extfile', name + '.ext', '-out', name + '.pem', *days)
    os.remove(name + '.csr'); os.remove(name + '.ext')
issue('ca', 'Intel SGX PCK Platform CA', 'root', 2, 'basicConstraints=critical,CA:TRUE\n' + ROOT_CDP + '\n')
issue('pck', 'Intel SGX PCK Certificate', 'ca', 3,
      'basicConstraints=critical,CA:FALSE\n1.2.840.113741.1.13.1=DER:%s\n' % ext.hex())
issue('tcbsign', 'Intel SGX TCB Signing', 'root', 4, 'basicConstraints=critical,CA:FALSE\n' + ROOT_CDP + '\n')

def sign(key, msg):
    d = run('openssl', 'dgst', '-sha256', '-sign', key, input=msg)
    i, out = 2, b''
    for _ in range(2):
        l = d[i + 1]; out += int.from_bytes(d[i + 2:i + 2 + l], 'big').to_bytes(32, 'big'); i += 2 + l
    return out

QE_MRSIGNER = 'dc9e2a7c6f948f17474e34a7fc43ed030f7c1563f1babddf6340c82e0e54a8c5'
ak = run('openssl', 'ec', '-in', 'ak.key', '-pubout', '-outform', 'DER')[-64:]
pem = b''.join(open(n + '.pem', 'rb').read() for n in ('pck', 'ca', 'root'))
hdr = struct.pack('<HHIHH', 4, 2, 0x81, 0, 0) + bytes.fromhex('939a7233f79c4ca9940a0db3957f0607') + bytes(20)
body = bytearray(584); body[0:3] = b'\x03\x00\x05'
body[16:64] = hashlib.sha384(b'test MRSEAM').digest()         # MRSEAM
body[128:136] = bytes.fromhex('e702060000000000')             # XFAM
body = bytes(body)
auth = bytes(range(32))
qe = bytearray(384); qe[320:352] = hashlib.sha256(ak + auth).digest()
qe[48] = 0x11                                                  # ATTRIBUTES
qe[128:160] = bytes.fromhex(QE_MRSIGNER)                       # MRSIGNER
qe[256:260] = struct.pack('<HH', 2, 4)                         # ISVPRODID 2, ISVSVN 4
qe = bytes(qe)
qcd = qe + sign('pck.key', qe) + struct.pack('<H', 32) + auth + struct.pack('<HI', 5, len(pem)) + pem
sd = sign('ak.key', hdr + body) + ak + struct.pack('<HI', 6, len(qcd)) + qcd
open('quote.dat', 'wb').write(hdr + body + struct.pack('<I', len(sd)) + sd)

def level(sgx, status):
    return {"tcb": {"sgxtcbcomponents": [{"svn": s} for s in sgx], "pcesvn": 11,
                    "tdxtcbcomponents": [{"svn": s} for s in [3, 0, 5] + [0] * 13]},
            "tcbDate": "2023-02-15T00:00:00Z", "tcbStatus": status}
def tcbinfo(fname, first):
    ti = {"id": "TDX", "version": 3, "issueDate": "2026-11-01T00:00:00Z",
          "nextUpdate": "2027-06-01T00:00:00Z", "fmspc": "50806f000000", "pceId": "0000",
          "tcbType": 0, "tcbEvaluationDataNumber": 15,
          "tdxModule": {"mrsigner": "00" * 48, "attributes": "0000000000000000",
                        "attributesMask": "FFFFFFFFFFFFFFFF"},
          "tcbLevels": [level(first, "UpToDate"), level(comps, "OutOfDate")]}
    s = json.dumps(ti, separators=(',', ':')).encode()
    open(fname, 'wb').write(b'{"tcbInfo":' + s + b',"signature":"' + sign('tcbsign.key', s).hex().encode() + b'"}')
tcbinfo('tcbinfo-uptodate.json', comps)
tcbinfo('tcbinfo-outofdate.json', [6] + comps[1:])
open('tcbinfo-issuer-chain.pem', 'wb').write(open('tcbsign.pem', 'rb').read() + open('root.pem', 'rb').read())
run('openssl', 'x509', '-in', 'root.pem', '-outform', 'DER', '-out', 'root.der')

# The rest of a collateral folder (constel-verify tdx-quote --tdx-collateral): QE identity,
# CRLs (with cryptography's builder: openssl's CLI needs a CA database for a CRL).
qi = {"id": "TD_QE", "version": 2, "issueDate": "2026-11-01T00:00:00Z",
      "nextUpdate": "2027-06-01T00:00:00Z", "tcbEvaluationDataNumber": 15,
      "miscselect": "00000000", "miscselectMask": "FFFFFFFF",
      "attributes": "11000000000000000000000000000000",
      "attributesMask": "FBFFFFFFFFFFFFFF0000000000000000", "mrsigner": QE_MRSIGNER.upper(),
      "isvprodid": 2, "tcbLevels": [{"tcb": {"isvsvn": 4}, "tcbDate": "2023-02-15T00:00:00Z",
                                     "tcbStatus": "UpToDate"}]}
s = json.dumps(qi, separators=(',', ':')).encode()
open('qeidentity.json', 'wb').write(b'{"enclaveIdentity":' + s + b',"signature":"' + sign('tcbsign.key', s).hex().encode() + b'"}')
open('qeidentity-issuer-chain.pem', 'wb').write(open('tcbinfo-issuer-chain.pem', 'rb').read())
open('pckcrl-issuer-chain.pem', 'wb').write(open('ca.pem', 'rb').read() + open('root.pem', 'rb').read())
import datetime
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
def crl(fname, issuer, revoked):
    cert = x509.load_pem_x509_certificate(open(issuer + '.pem', 'rb').read())
    key = serialization.load_pem_private_key(open(issuer + '.key', 'rb').read(), None)
    b = (x509.CertificateRevocationListBuilder().issuer_name(cert.subject)
         .last_update(datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc))
         .next_update(datetime.datetime(2027, 6, 1, tzinfo=datetime.timezone.utc)))
    for n in revoked:
        b = b.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(n)
            .revocation_date(datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)).build())
    open(fname, 'wb').write(b.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.DER))
crl('pckcrl.der', 'ca', [99])
crl('pckcrl-revoked.der', 'ca', [99, 3])   # lists the PCK certificate (serial 3)
crl('rootcrl.der', 'root', [98])
# The TCB info whose first level the platform reaches is the folder's tcbinfo.json; the
# attestation key stays (test key, nothing else) so that a fake IMDS /acc/tdquote can sign
# quotes of any TDREPORT with this collateral (tests/attest/fake_tdquote.py).
open('tcbinfo.json', 'wb').write(open('tcbinfo-uptodate.json', 'rb').read())
run('openssl', 'pkcs8', '-topk8', '-nocrypt', '-in', 'ak.key', '-out', 'test-ak.key')
open('test-qe-cert-data.bin', 'wb').write(struct.pack('<HI', 6, len(qcd)) + qcd)
# The fuzz target of TCB info and QE identity (tests/fuzz/fuzz_tdx_collateral.c) signs what
# it is given with the test TCB signing key, so that the checks after the signature run.
tk = serialization.load_pem_private_key(open('tcbsign.key', 'rb').read(), None)
def carr(name, b):
    return 'static const uint8_t %s[%d] = {\n%s};\n' % (name, len(b), ''.join(
        '\t' + ' '.join('0x%02x,' % c for c in b[i:i + 12]) + '\n' for i in range(0, len(b), 12)))
open('../../fuzz/tdx_collateral_fixture.h', 'w').write(
    '/* Made by tests/attest/tdx-test/make.py: the test quote, root, TCB signing chain and the\n'
    ' * TCB signing key\'s private scalar (a test key; nothing else trusts it). */\n' +
    carr('fx_quote', open('quote.dat', 'rb').read()) + carr('fx_root', open('root.der', 'rb').read()) +
    carr('fx_chain', open('tcbinfo-issuer-chain.pem', 'rb').read()) +
    carr('fx_tcbsign_key', tk.private_numbers().private_value.to_bytes(32, 'big')))
run('clang-format', '-i', '../../fuzz/tdx_collateral_fixture.h')  # the suite checks format
for n in ('root', 'ca', 'pck', 'tcbsign', 'ak'):
    os.remove(n + '.key')
run('openssl', 'x509', '-in', 'root.pem', '-out', 'root-test.pem')
for n in ('ca', 'pck', 'tcbsign', 'root'):
    os.remove(n + '.pem')
