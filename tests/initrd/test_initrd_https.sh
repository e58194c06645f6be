# The agent inside its initrd finds the CA bundle where its https clients look before the
# switch (agent/net/net.h CA_BUNDLE_DEFAULT, no --ca-bundle): initrd/build.sh's archive unpacked
# into a folder, its /init run chrooted there (not PID 1: it runs one command) as
# `install-component` against Python's ssl server on 127.0.0.1. With --ca-bundle of a throwaway
# CA the download succeeds; with this machine's Debian bundle (the default) the server's
# certificate is refused as not issued by a CA of the bundle: the bundle was read and parsed,
# where an initrd without it fails on the missing file. No VM boot: the QEMU node tests' https
# (components) reads the real root's bundle, and no QEMU test calls a cloud API over https.
. tests/lib.sh
set -u
if [ "$(id -u)" != 0 ]; then
	echo "# not root (chroot): the initrd's https tests skipped"
	exit 0
fi
work=$(mktemp -d /tmp/constel-initrd-https-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
deps=$(cat "$BUILD/deps-prefix" 2>/dev/null)
if [ ! -x "$BUILD/constel-agent.stripped" ] || [ ! -x "$deps/sbin/mke2fs" ]; then
	fail initrd_https_inputs "no $BUILD/constel-agent.stripped or $deps/sbin/mke2fs (make agent first)"
	exit 1
fi
mkdir -p "$work/www"

# A throwaway CA and a certificate for 127.0.0.1 (no DNS in the unpacked initrd).
python3 - "$work" <<'PY' || { fail initrd_https_pki "could not make the test CA"; exit 1; }
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
d = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
day = datetime.timedelta(days=1)
def name(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
def pem(c): return c.public_bytes(serialization.Encoding.PEM)
ck = ec.generate_private_key(ec.SECP256R1())
ca = (x509.CertificateBuilder().subject_name(name("constel initrd test CA")).issuer_name(name("constel initrd test CA"))
      .public_key(ck.public_key()).serial_number(x509.random_serial_number())
      .not_valid_before(now - day).not_valid_after(now + 30 * day)
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
      .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
      .sign(ck, hashes.SHA256()))
lk = ec.generate_private_key(ec.SECP256R1())
leaf = (x509.CertificateBuilder().subject_name(name("components.test")).issuer_name(ca.subject)
        .public_key(lk.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - day).not_valid_after(now + 10 * day)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("components.test"),
                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ck, hashes.SHA256()))
open(f"{d}/ca.crt", "wb").write(pem(ca))
open(f"{d}/server.pem", "wb").write(pem(leaf) + lk.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY
head -c 100000 /dev/urandom >"$work/www/payload.bin"
sum="sha256:$(sha256sum <"$work/www/payload.bin" | cut -c1-64)"
python3 - "$work" >"$work/port" 2>"$work/server.log" <<'PY' &
import http.server, os, ssl, sys
d = sys.argv[1]
os.chdir(d + "/www")
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{d}/server.pem")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
[ -n "$port" ] || { fail initrd_https_server "the test server did not start: $(cat "$work/server.log")"; exit 1; }

# unpack IMAGE DIR: the initrd's files into DIR
unpack() { mkdir -p "$2" && gzip -dc "$1" | (cd "$2" && cpio -id --quiet --no-absolute-filenames 2>/dev/null); }
# fetch DIR: /init of the unpacked initrd in DIR downloads the payload to its /tmp/payload,
# with its own defaults (the bundle at /etc/ssl/certs/ca-certificates.crt); stderr in $work/err
fetch() {
	rm -f "$1/tmp/payload"
	timeout 60 chroot "$1" /init install-component --timeout 20 --url "https://127.0.0.1:$port/payload.bin" \
		--hash "$sum" --path /tmp/payload 2>"$work/err"
}

t=initrd_agent_fetches_https_with_the_bundle_it_carries
if BUILD=$BUILD DEPS=$deps initrd/build.sh "$work/ca.img" --ca-bundle "$work/ca.crt" >/dev/null 2>"$work/b.err" &&
	unpack "$work/ca.img" "$work/ca"; then
	fetch "$work/ca"
	rc=$?
	[ $rc = 0 ] && cmp -s "$work/ca/tmp/payload" "$work/www/payload.bin" && pass $t || fail $t "exit $rc: $(cat "$work/err")"
else
	fail $t "initrd/build.sh failed: $(cat "$work/b.err")"
fi

t=initrd_agent_reads_the_debian_bundle_it_carries
if BUILD=$BUILD DEPS=$deps initrd/build.sh "$work/deb.img" >/dev/null 2>"$work/b.err" &&
	unpack "$work/deb.img" "$work/deb"; then
	fetch "$work/deb"
	rc=$?
	[ $rc != 0 ] && [ ! -e "$work/deb/tmp/payload" ] && grep -q 'certificate not issued by a CA of the bundle' "$work/err" &&
		pass $t || fail $t "exit $rc: $(cat "$work/err")"
else
	fail $t "initrd/build.sh failed: $(cat "$work/b.err")"
fi
