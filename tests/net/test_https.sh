# The https:// client (net/https.c, net/cabundle.c, http_fetch's redirects) through
# `constel-agent install-component`, against Python's ssl server (a TLS implementation we did
# not write) on 127.0.0.1, with a throwaway CA made here: the certificate is checked against
# --ca-bundle and the host name (sent as SNI), expired and foreign certificates are refused
# with one line naming the host, redirects are followed up to 10, https -> http is refused.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-https-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/www" "$work/root"

# The PKI: CA "one" (in the bundle, between a comment, a key and a broken certificate as a
# real bundle may hold), CA "two" (not in it); leaf certificates for localhost from one (good),
# for another name from one, for localhost from one but expired, for localhost from two, and
# for the address 127.0.0.1 from one.
python3 - "$work" <<'PY' || { fail https_test_pki "could not make the test CA"; exit 0; }
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
d = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
day = datetime.timedelta(days=1)
def name(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
def pem(c): return c.public_bytes(serialization.Encoding.PEM)
def ca(cn, key):
    return (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - day).not_valid_after(now + 30 * day)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256()))
def leaf(out, dns, ca_cert, ca_key, nb, na, key, ip=None):
    san = [x509.DNSName(dns)] + ([x509.IPAddress(ipaddress.ip_address(ip))] if ip else [])
    c = (x509.CertificateBuilder().subject_name(name(dns)).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(nb).not_valid_after(na)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .sign(ca_key, hashes.SHA256()))
    open(f"{d}/{out}.pem", "wb").write(pem(c) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
k1 = ec.generate_private_key(ec.SECP256R1()); c1 = ca("constel test CA one", k1)
k2 = rsa.generate_private_key(public_exponent=65537, key_size=2048); c2 = ca("constel test CA two", k2)
ek = ec.generate_private_key(ec.SECP256R1()); rk = rsa.generate_private_key(public_exponent=65537, key_size=2048)
leaf("good", "localhost", c1, k1, now - day, now + 10 * day, ek)
leaf("goodrsa", "localhost", c1, k1, now - day, now + 10 * day, rk)
leaf("wrongname", "other.example", c1, k1, now - day, now + 10 * day, ek)
leaf("ipgood", "components.test", c1, k1, now - day, now + 10 * day, ek, ip="127.0.0.1")
leaf("expired", "localhost", c1, k1, now - 10 * day, now - day, ek)
leaf("otherca", "localhost", c2, k2, now - day, now + 10 * day, ek)
broken = pem(c2).replace(b"MII", b"MIX", 1)  # decodes as base64, not as a certificate
open(f"{d}/bundle.crt", "wb").write(b"# constel test bundle\n" + broken + pem(c1) +
    b"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
open(f"{d}/bundle-one.crt", "wb").write(pem(c1))
open(f"{d}/bundle-two.crt", "wb").write(pem(c2))
PY

# The servers: one https port per certificate, one plain http port; /r/N redirects N times
# (odd N with an absolute Location, even N relative) before /payload.bin; /tohttp redirects
# https -> http; /tohttps http -> https. Every SNI the servers saw goes to sni.log.
python3 - "$work" >"$work/ports" 2>"$work/server.log" <<'PY' &
import http.server, os, ssl, sys, threading, time
d = sys.argv[1]
os.chdir(d + "/www")
ports = {}
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def go(self, loc):
        self.send_response(302); self.send_header("Location", loc)
        self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        p, tls = self.path, self.server.tls
        me = ("https" if tls else "http") + "://localhost:%d" % self.server.server_address[1]
        if p.startswith("/r/"):
            n = int(p[3:])
            if n == 0: self.path = "/payload.bin"
            elif n % 2: return self.go("%s/r/%d" % (me, n - 1))
            else: return self.go("%d" % (n - 1))
        elif p.startswith("/slow/"):
            time.sleep(1.5)
            n = int(p[6:])
            return self.go("%d" % (n - 1)) if n else self.go("/payload.bin")
        elif p == "/tohttp": return self.go("http://localhost:%d/payload.bin" % ports["http"])
        elif p == "/tohttps": return self.go("https://localhost:%d/payload.bin" % ports["good"])
        return super().do_GET()
def serve(key, cert):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    s.tls = cert is not None
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(f"{d}/{cert}.pem")
        def sni(sock, name, c):
            open(f"{d}/sni.log", "a").write(f"{key} {name}\n")
        ctx.sni_callback = sni
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    ports[key] = s.server_address[1]
    threading.Thread(target=s.serve_forever, daemon=True).start()
for k in ["good", "goodrsa", "wrongname", "expired", "otherca", "ipgood"]: serve(k, k)
serve("http", None)
print(" ".join("%s=%d" % kv for kv in ports.items()), flush=True)
threading.Event().wait()
PY
for _ in $(seq 50); do [ -s "$work/ports" ] && break; sleep 0.1; done
port() { tr ' ' '\n' <"$work/ports" | sed -n "s/^$1=//p"; }
head -c 200000 /dev/urandom >"$work/www/payload.bin"
sum="sha256:$(sha256sum <"$work/www/payload.bin" | cut -c1-64)"
n=0
install() { # install URL [ARGS]: into a fresh path, stderr in $work/err; sets $dest
	n=$((n + 1))
	dest=$work/root/opt/c$n
	"$agent" install-component --root "$work/root" --timeout 20 --url "$1" --hash "$sum" \
		--path "/opt/c$n" "${@:2}" 2>"$work/err"
}
bundle=(--ca-bundle "$work/bundle-one.crt")
one_line() { [ "$(wc -l <"$work/err")" = 1 ] && grep -q "$1" "$work/err"; }
installed() { cmp -s "$work/www/payload.bin" "$dest"; }

t=https_good_certificate_and_sni_fetched
install "https://localhost:$(port good)/payload.bin" --ca-bundle "$work/bundle.crt"
rc=$?
if [ $rc = 0 ] && installed && grep -qx "good localhost" "$work/sni.log" &&
	grep -q 'certificates skipped' "$work/err"; then
	pass $t
else
	fail $t "exit $rc: $(cat "$work/err"); sni: $(cat "$work/sni.log" 2>&1)"
fi

t=https_rsa_server_key_fetched
install "https://localhost:$(port goodrsa)/payload.bin" "${bundle[@]}" && installed && pass $t ||
	fail $t "$(cat "$work/err")"

t=https_wrong_host_name_refused_with_one_line
install "https://localhost:$(port wrongname)/payload.bin" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && ! [ -e "$dest" ] && one_line 'localhost: certificate is not for this host name' &&
	pass $t || fail $t "exit $rc: $(cat "$work/err")"

t=https_expired_certificate_refused
install "https://localhost:$(port expired)/payload.bin" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && ! [ -e "$dest" ] && one_line 'localhost: certificate expired' && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=https_certificate_of_another_ca_refused_naming_the_host
install "https://localhost:$(port otherca)/payload.bin" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && ! [ -e "$dest" ] && one_line 'localhost: certificate not issued by a CA of the bundle' &&
	pass $t || fail $t "exit $rc: $(cat "$work/err")"

t=https_the_other_bundle_accepts_only_the_other_ca
install "https://localhost:$(port otherca)/payload.bin" --ca-bundle "$work/bundle-two.crt" &&
	installed && install "https://localhost:$(port good)/payload.bin" \
	--ca-bundle "$work/bundle-two.crt"
rc=$?
[ $rc = 1 ] && one_line 'not issued by a CA of the bundle' && pass $t || fail $t "exit $rc: $(cat "$work/err")"

t=https_default_bundle_is_the_roots
mkdir -p "$work/root/etc/ssl/certs"
cp "$work/bundle.crt" "$work/root/etc/ssl/certs/ca-certificates.crt"
install "https://localhost:$(port good)/payload.bin" && installed && pass $t || fail $t "$(cat "$work/err")"
rm -r "$work/root/etc"

t=https_unreadable_bundle_is_one_line
install "https://localhost:$(port good)/payload.bin" --ca-bundle "$work/missing.crt"
rc=$?
[ $rc = 1 ] && one_line "CA bundle $work/missing.crt: No such file" && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=https_redirect_chain_of_3_followed
install "https://localhost:$(port good)/r/3" "${bundle[@]}" && installed && pass $t ||
	fail $t "$(cat "$work/err")"

t=https_redirect_chain_of_10_followed
install "https://localhost:$(port good)/r/10" "${bundle[@]}" && installed && pass $t ||
	fail $t "$(cat "$work/err")"

t=https_redirect_chain_of_11_refused
install "https://localhost:$(port good)/r/11" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && ! [ -e "$dest" ] && one_line 'more than 10 redirects' && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=https_redirect_to_http_refused
install "https://localhost:$(port good)/tohttp" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && ! [ -e "$dest" ] && one_line 'redirect from https to http refused' && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=http_redirect_to_https_followed
install "http://localhost:$(port http)/tohttps" "${bundle[@]}" && installed && pass $t ||
	fail $t "$(cat "$work/err")"

t=http_needs_no_bundle_until_a_redirect_to_https
install "http://127.0.0.1:$(port http)/payload.bin" --ca-bundle "$work/missing.crt" && installed &&
	install "http://localhost:$(port http)/tohttps" --ca-bundle "$work/missing.crt"
rc=$?
[ $rc = 1 ] && one_line 'https without a CA bundle: CA bundle .*missing.crt: No such file' && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=http_redirect_chain_stays_plain
install "http://127.0.0.1:$(port http)/r/4" && installed && pass $t || fail $t "$(cat "$work/err")"

t=https_address_checked_against_the_ip_names_without_sni
install "https://127.0.0.1:$(port ipgood)/payload.bin" "${bundle[@]}"
rc=$?
[ $rc = 0 ] && installed && grep -qx "ipgood None" "$work/sni.log" && pass $t ||
	fail $t "exit $rc: $(cat "$work/err"); sni: $(cat "$work/sni.log")"

t=https_address_not_in_the_certificate_refused
install "https://127.0.0.1:$(port good)/payload.bin" "${bundle[@]}"
rc=$?
[ $rc = 1 ] && one_line '127.0.0.1: certificate is not for this host address' && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=https_redirects_share_one_deadline
# each hop answers after 1.5 s: a deadline per hop would fetch the file after 6 s; the shared
# 2 s budget gives up during the second hop (the bound leaves a loaded machine 3 s to spare)
start=$(date +%s%N)
"$agent" install-component --root "$work/root" --timeout 2 --url "https://localhost:$(port good)/slow/3" \
	--path /opt/slow "${bundle[@]}" 2>"$work/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ $rc = 1 ] && [ $ms -lt 5000 ] && ! [ -e "$work/root/opt/slow" ] &&
	grep -q 'not fetched within 2 s' "$work/err" && pass $t || fail $t "exit $rc after $ms ms: $(cat "$work/err")"

t=https_silent_server_times_out
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >"$work/silent" &
for _ in $(seq 50); do [ -s "$work/silent" ] && break; sleep 0.1; done
start=$(date +%s%N)
"$agent" install-component --root "$work/root" --timeout 2 --url "https://localhost:$(cat "$work/silent")/x" \
	--path /opt/silent "${bundle[@]}" 2>"$work/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ $rc = 1 ] && [ $ms -lt 4000 ] && grep -q 'not fetched within 2 s' "$work/err" && pass $t ||
	fail $t "exit $rc after $ms ms: $(cat "$work/err")"
