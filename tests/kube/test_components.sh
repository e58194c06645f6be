# The component installer (spec §9) through `constel-agent install-component`: data: URLs,
# http:// from a loopback server (Python's http.server: an HTTP implementation we did not
# write) with GNU tar archives, the hash check, the retried statuses, and archives built to
# escape the install path (Python's tarfile), which must be refused with one line.
. tests/lib.sh
set -u
agent=$PWD/$BUILD/constel-agent
work=$(mktemp -d /tmp/constel-comp-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/www" "$work/root"

# the server: files from www/, and /flaky answers 503 twice before the file
python3 - "$work/www" >"$work/port" 2>"$work/server.log" <<'PY' &
import http.server, os, sys
os.chdir(sys.argv[1])
hits = {"n": 0}
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/flaky"):
            hits["n"] += 1
            if hits["n"] <= 2:
                self.send_response(503); self.send_header("Content-Length", "0"); self.end_headers(); return
            self.path = "/payload.bin"
        return super().do_GET()
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$work/port")
install() { "$agent" install-component --root "$work/root" --timeout 20 "$@" 2>"$work/err"; }
sha() { echo "sha256:$(sha256sum <"$1" | cut -c1-64)"; }

t=component_data_url_base64_installed_with_mode_0544
install --url "data:application/json;base64,$(printf '[{"op":"add"}]' | base64 -w0)" \
	--path /opt/kubernetes/patches/kube-apiserver+json.json
rc=$? # the install's status, taken before any other command
f=$work/root/opt/kubernetes/patches/kube-apiserver+json.json
[ $rc = 0 ] && [ "$(cat "$f")" = '[{"op":"add"}]' ] && [ "$(stat -c %a "$f")" = 544 ] &&
	pass $t || fail $t "exit $rc: $(cat "$work/err")"

t=component_data_url_percent_encoded
install --url 'data:,a%20b%2Fc' --path /x/pct && [ "$(cat "$work/root/x/pct")" = 'a b/c' ] &&
	pass $t || fail $t "$(cat "$work/err")"

t=component_http_file_with_hash
head -c 300000 /dev/urandom >"$work/www/payload.bin"
install --url "$url/payload.bin" --hash "$(sha "$work/www/payload.bin")" --path /run/state/bin/kubelet &&
	cmp -s "$work/www/payload.bin" "$work/root/run/state/bin/kubelet" && pass $t || fail $t "$(cat "$work/err")"

t=component_hash_mismatch_installs_nothing
install --url "$url/payload.bin" --hash "sha256:$(printf '0%.0s' $(seq 64))" --path /run/state/bin/other
rc=$?
[ $rc = 1 ] && [ ! -e "$work/root/run/state/bin/other" ] && [ "$(wc -l <"$work/err")" = 1 ] &&
	grep -q 'hash sha256:' "$work/err" && pass $t || fail $t "exit $rc: $(cat "$work/err")"

t=component_retries_503_then_installs
install --url "$url/flaky" --path /run/state/bin/flaky && cmp -s "$work/www/payload.bin" "$work/root/run/state/bin/flaky" &&
	[ "$(grep -c 'HTTP 503, retrying' "$work/err")" = 2 ] && pass $t || fail $t "$(cat "$work/err")"

t=component_404_is_fatal_with_one_line
install --url "$url/missing.tgz" --path /run/state/bin/missing
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$work/err")" = 1 ] && grep -q 'HTTP 404' "$work/err" && pass $t ||
	fail $t "exit $rc: $(cat "$work/err")"

t=component_gnu_tar_extracted_like_tar_itself
mkdir -p "$work/src/sub/deeper"
printf 'plugin' >"$work/src/bridge" && chmod 755 "$work/src/bridge"
printf 'conf' >"$work/src/sub/deeper/10-net.conf" && chmod 640 "$work/src/sub/deeper/10-net.conf"
long=$(printf 'n%.0s' $(seq 150))
printf 'long' >"$work/src/sub/$long"
ln -s bridge "$work/src/loopback"
tar -C "$work/src" -czf "$work/www/cni.tgz" .
install --url "$url/cni.tgz" --hash "$(sha "$work/www/cni.tgz")" --extract true --path /opt/cni/bin
rc=$?
d=$work/root/opt/cni/bin
if [ $rc = 0 ] && cmp -s "$work/src/bridge" "$d/bridge" && [ "$(stat -c %a "$d/bridge")" = 755 ] &&
	[ "$(stat -c %a "$d/sub/deeper/10-net.conf")" = 640 ] && [ "$(cat "$d/sub/$long")" = long ] &&
	[ "$(readlink "$d/loopback")" = bridge ]; then
	pass $t
else
	fail $t "exit $rc: $(cat "$work/err"); $(ls -lR "$d" 2>&1 | head -20)"
fi

# evil archives: each must be refused naming the entry, and write nothing outside --path
evil() { # evil NAME PYTHON: a tgz in www/NAME.tgz built by PYTHON on tarfile `t`
	python3 - "$work/www/$1.tgz" "$2" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w:gz")
def add(name, data=b"x", type=tarfile.REGTYPE, link=""):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = link; i.size = len(data) if type == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if type == tarfile.REGTYPE else None)
exec(sys.argv[2])
t.close()
PY
}
evil dotdot 'add("ok"); add("../escape")'
evil abslink 'add("etc", type=tarfile.SYMTYPE, link="/etc")'
evil uplink 'add("up", type=tarfile.SYMTYPE, link="../../..")'
evil through 'add("d", type=tarfile.SYMTYPE, link="sub"); add("sub/", type=tarfile.DIRTYPE); add("d/file")'
evil device 'add("null", type=tarfile.CHRTYPE)'
for e in dotdot abslink uplink through device; do
	t=component_tar_refuses_$e
	install --url "$url/$e.tgz" --extract true --path "/evil/$e"
	rc=$?
	if [ $rc = 1 ] && [ "$(wc -l <"$work/err")" -le 2 ] && grep -q 'tar: ' "$work/err" &&
		[ ! -e "$work/root/evil/escape" ] && [ ! -e "$work/root/escape" ]; then
		pass $t
	else
		fail $t "exit $rc: $(cat "$work/err")"
	fi
done

t=component_tar_refuses_a_file_that_is_not_gzip
install --url "$url/payload.bin" --extract true --path /evil/notgz
rc=$?
[ $rc = 1 ] && grep -q 'not a gzip stream' "$work/err" && pass $t || fail $t "exit $rc: $(cat "$work/err")"
