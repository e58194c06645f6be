# A component URL by name, resolved the way a node resolves it after switch_root: the agent's
# (static musl) resolver reads /etc/resolv.conf, here bind-mounted (as net/resolv.c does on the
# node) to name a DNS server, Debian's dnsmasq, that alone knows components.test. All of it in a
# mount and network namespace this test makes: only its loopback carries traffic.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-httpsdns-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
command -v dnsmasq >/dev/null || { fail https_dns_setup "dnsmasq missing"; exit 0; }
if [ "$(id -u)" != 0 ] || ! unshare -m -n true 2>/dev/null; then
	echo "# not root or no namespaces: https_dns tests skipped"
	exit 0
fi
mkdir -p "$work/www"
head -c 100000 /dev/urandom >"$work/www/payload.bin"
python3 - "$work" <<'PY' || { fail https_dns_setup "could not make the test CA"; exit 0; }
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
d, now, day = sys.argv[1], datetime.datetime.now(datetime.timezone.utc), datetime.timedelta(days=1)
def name(cn): return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
ck, lk = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
ca = (x509.CertificateBuilder().subject_name(name("constel dns test CA")).issuer_name(name("constel dns test CA"))
    .public_key(ck.public_key()).serial_number(1).not_valid_before(now - day).not_valid_after(now + day)
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ck, hashes.SHA256()))
leaf = (x509.CertificateBuilder().subject_name(name("components.test")).issuer_name(ca.subject)
    .public_key(lk.public_key()).serial_number(2).not_valid_before(now - day).not_valid_after(now + day)
    .add_extension(x509.SubjectAlternativeName([x509.DNSName("components.test")]), critical=False)
    .sign(ck, hashes.SHA256()))
open(f"{d}/ca.crt", "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(f"{d}/leaf.pem", "wb").write(leaf.public_bytes(serialization.Encoding.PEM) + lk.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY
printf 'nameserver 127.0.0.1\n' >"$work/resolv.conf"
printf '127.0.0.1 localhost\n' >"$work/hosts"

# inside the namespaces: $1 = "dns" to run the DNS server, anything else for none
cat >"$work/inside.sh" <<'SH'
set -u
work=$1 agent=$2 mode=$3
ip link set lo up
mount --make-rprivate /
mount --bind "$work/resolv.conf" /etc/resolv.conf && mount --bind "$work/hosts" /etc/hosts || exit 3
if [ "$mode" = dns ]; then
	dnsmasq --keep-in-foreground --listen-address=127.0.0.1 --bind-interfaces --port=53 \
		--no-resolv --no-hosts --local=/test/ --host-record=components.test,127.0.0.1 \
		--pid-file="$work/dnsmasq.pid" --log-facility="$work/dnsmasq.log" --log-queries &
	dns=$!
fi
python3 - "$work" >"$work/port" 2>"$work/server.log" <<'PY' &
import http.server, os, ssl, sys
os.chdir(sys.argv[1] + "/www")
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1] + "/leaf.pem")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True); s.serve_forever()
PY
web=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
sleep 0.3 # dnsmasq binds its port
"$agent" install-component --root "$work/root" --timeout 3 --ca-bundle "$work/ca.crt" \
	--url "https://components.test:$(cat "$work/port")/payload.bin" --path /opt/payload 2>"$work/err"
rc=$?
kill $web ${dns:-} 2>/dev/null
wait 2>/dev/null
exit $rc
SH

t=https_name_resolved_through_the_resolv_conf_dns_server
unshare -m -n bash "$work/inside.sh" "$work" "$agent" dns
rc=$?
if [ $rc = 0 ] && cmp -s "$work/www/payload.bin" "$work/root/opt/payload" &&
	grep -q 'query\[A\] components.test' "$work/dnsmasq.log"; then
	pass $t
else
	fail $t "exit $rc: $(cat "$work/err"); dnsmasq: $(tail -3 "$work/dnsmasq.log" 2>&1)"
fi

t=https_name_without_a_dns_server_fails_at_the_timeout_naming_it
rm -rf "$work/root"
unshare -m -n bash "$work/inside.sh" "$work" "$agent" none
rc=$?
[ $rc = 1 ] && [ ! -e "$work/root/opt/payload" ] && grep -q 'not fetched within 3 s (components.test:' "$work/err" &&
	pass $t || fail $t "exit $rc: $(cat "$work/err")"
