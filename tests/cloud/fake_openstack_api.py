#!/usr/bin/env python3
"""A fake of what a Constellation node on OpenStack asks: the metadata service
(meta_data.json, user_data with the credentials, local-ipv4) and Keystone v3, Nova and
Neutron, in one HTTP server (devstack's layout: /identity/v3, /compute/v2.1, /network), for
tests on 127.0.0.1 or in a network namespace the test makes.

Written from OpenStack's API references:
- Metadata service: https://docs.openstack.org/nova/latest/user/metadata.html
  (/openstack/2018-08-27/meta_data.json with "meta", /openstack/2018-08-27/user_data).
- Keystone v3: https://docs.openstack.org/api-ref/identity/v3/ "Password authentication with
  unscoped authorization": POST /v3/auth/tokens with {"auth": {"identity": {"methods":
  ["password"], "password": {"user": {"name", "domain": {"name"}, "password"}}}}} -> 201, the
  token in the X-Subject-Token header, {"token": {"expires_at", "catalog": [{"type",
  "endpoints": [{"interface", "region", "url"}]}]}}; a wrong password -> 401 {"error":
  {"code": 401, "title": "Unauthorized", "message": "The request you have made requires
  authentication."}}.
- Nova: https://docs.openstack.org/api-ref/compute/ "List Servers Detailed" (GET
  /servers/detail?tags=..., limit/marker, "servers_links" with rel "next"; tags in the answer
  from microversion 2.26, asked with X-OpenStack-Nova-API-Version; addresses
  {net: [{"addr", "version", "OS-EXT-IPS:type"}]}); without or with a bad X-Auth-Token -> 401
  in keystonemiddleware's shape; policy refusal -> 403 {"forbidden": {"code": 403, "message":
  "Policy doesn't allow os_compute_api:servers:detail to be performed."}}; rate limit -> 429
  {"overLimit": {...}}.
- Neutron: https://docs.openstack.org/api-ref/network/v2/ (GET /v2.0/networks?tags=,
  /v2.0/subnets?tags=; 403 {"NeutronError": {"type": "HTTPForbidden", ...}}).

State (--state FILE, JSON):
  {"self": {"name", "uuid", "ip", "meta": {k: v}},
   "user": {"name", "domain", "password"},
   "networks": [{"name", "tags": []}], "subnets": [{"name", "cidr", "tags": []}],
   "servers": [{"name", "id", "tags": [], "addresses": {...}}],
   "token_ttl": 3600, "token_uses": N, "deny": ["os_compute_api:servers:detail", ...],
   "throttle": {"servers": 2}, "page_size": 2, "endless": true}
With --tls PEM it serves https. The port is printed on stdout; every request is one JSON line in --log (no token, no
password)."""
import argparse
import datetime
import http.server
import json
import secrets
import socketserver
import sys
import threading
import urllib.parse

STATE = {}
LOCK = threading.Lock()
LOG = None
TOKENS = {}
CALLS = {}


class Fail(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status, self.body = status, body


def unauthorized():
    return Fail(401, {"error": {"code": 401, "title": "Unauthorized", "message":
                                "The request you have made requires authentication."}})


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def check_token(h):
    tok = h.get("X-Auth-Token")
    with LOCK:
        t = TOKENS.get(tok) if tok else None
        if t is None or now() >= t["expires"] or t["uses"] >= STATE.get("token_uses", 1 << 30):
            raise unauthorized()
        t["uses"] += 1


def throttle(kind):
    with LOCK:
        CALLS[kind] = CALLS.get(kind, 0) + 1
        n = CALLS[kind]
    if n <= STATE.get("throttle", {}).get(kind, 0):
        raise Fail(429, {"overLimit": {"code": 429, "message": "Over limit",
                                       "retryAfter": "0"}})


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, ctype="application/json", extra=None):
        out = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    def log(self, rec):
        if LOG:
            with LOCK:
                LOG.write(json.dumps(rec) + "\n")
                LOG.flush()

    def base(self):
        scheme = "https" if getattr(self.server, "tls", False) else "http"
        return scheme + "://" + self.headers.get("Host", "127.0.0.1")

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        rec = {"path": u.path, "method": "POST"}
        if u.path != "/identity/v3/auth/tokens":
            self.answer(404, {"error": {"code": 404, "message": "not found"}})
            return
        try:
            req = json.loads(body)
            ident = req["auth"]["identity"]
            user = ident["password"]["user"]
            ok = ident["methods"] == ["password"] and \
                user["name"] == STATE["user"]["name"] and \
                user["domain"]["name"] == STATE["user"]["domain"] and \
                user["password"] == STATE["user"]["password"]
        except (ValueError, KeyError, TypeError):
            rec["status"] = 400
            self.log(rec)
            self.answer(400, {"error": {"code": 400, "title": "Bad Request",
                                        "message": "Malformed request"}})
            return
        if not ok:
            rec["status"] = 401
            self.log(rec)
            self.answer(401, unauthorized().body)
            return
        tok = "gAAAAA" + secrets.token_urlsafe(96)
        exp = now() + datetime.timedelta(seconds=STATE.get("token_ttl", 3600))
        with LOCK:
            TOKENS[tok] = {"expires": exp, "uses": 0}
        b = self.base()
        cat = [{"type": "identity", "name": "keystone", "endpoints": [
                    {"interface": "public", "region": "RegionOne", "url": b + "/identity"}]},
               {"type": "compute", "name": "nova", "endpoints": [
                    {"interface": "internal", "region": "RegionOne", "url": "http://10.9.9.9/x"},
                    {"interface": "public", "region": "RegionOne", "url": b + "/compute/v2.1"}]},
               {"type": "network", "name": "neutron", "endpoints": [
                    {"interface": "public", "region": "RegionOne", "url": b + "/network"}]}]
        out = {"token": {"methods": ["password"], "user": {"name": STATE["user"]["name"]},
                         "expires_at": exp.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                         "issued_at": now().strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                         "catalog": cat}}
        rec["status"] = 201
        self.log(rec)
        self.answer(201, out, extra={"X-Subject-Token": tok})

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        rec = {"path": u.path, "query": u.query, "auth": "X-Auth-Token" in self.headers}
        me = STATE.get("self", {})
        try:
            if u.path == "/openstack/2018-08-27/meta_data.json":
                status, body = 200, {"uuid": me["uuid"], "name": me["name"],
                                     "project_id": "p1", "availability_zone": "nova",
                                     "meta": me.get("meta", {})}
            elif u.path == "/openstack/2018-08-27/user_data":
                status, body = 200, json.dumps(STATE.get("user_data", {})).encode()
            elif u.path == "/1.0/meta-data/local-ipv4":
                status, body = 200, me["ip"].encode()
            elif u.path == "/compute/v2.1/servers/detail":
                check_token(self.headers)
                if "os_compute_api:servers:detail" in STATE.get("deny", []):
                    raise Fail(403, {"forbidden": {"code": 403, "message": "Policy doesn't "
                                     "allow os_compute_api:servers:detail to be performed."}})
                throttle("servers")
                mv = self.headers.get("X-OpenStack-Nova-API-Version", "2.1")
                tag = q.get("tags", [""])[0]
                srv = [dict(s) for s in STATE.get("servers", []) if not tag or tag in s["tags"]]
                if tuple(int(x) for x in mv.split(".")) < (2, 26):
                    for s in srv:
                        s.pop("tags", None)
                start = 0
                if "marker" in q:
                    ids = [s["id"] for s in srv]
                    if q["marker"][0] in ids:
                        start = ids.index(q["marker"][0]) + 1
                    elif STATE.get("endless"):
                        start = len(srv)  # the empty pages of a listing without end
                    else:
                        raise Fail(400, {"badRequest": {"code": 400, "message":
                                         "marker [%s] not found" % q["marker"][0]}})
                size = STATE.get("page_size", 1000)
                page = srv[start:start + size]
                body = {"servers": page}
                if STATE.get("endless") or (start + size < len(srv) and page):
                    marker = page[-1]["id"] if page else secrets.token_hex(4)
                    body["servers_links"] = [{"rel": "next", "href": self.base() +
                                              "/compute/v2.1/servers/detail?tags=%s&marker=%s" %
                                              (tag, marker)}]
                status = 200
            elif u.path in ("/network/v2.0/networks", "/network/v2.0/subnets"):
                check_token(self.headers)
                kind = u.path.rsplit("/", 1)[1]
                pol = "get_network" if kind == "networks" else "get_subnet"
                if pol in STATE.get("deny", []):
                    raise Fail(403, {"NeutronError": {"type": "HTTPForbidden", "message":
                                     "rule:%s is disallowed by policy" % pol, "detail": ""}})
                tag = q.get("tags", [""])[0]
                status, body = 200, {kind: [x for x in STATE.get(kind, [])
                                            if not tag or tag in x["tags"]]}
            else:
                status, body = 404, {"error": {"code": 404, "message": "not found"}}
        except Fail as e:
            status, body = e.status, e.body
        rec["status"] = status
        self.log(rec)
        self.answer(status, body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--tls", help="PEM with the certificate and its key: serve https (the "
                    "clouds' Keystone, Nova and Neutron are https)")
    args = ap.parse_args()
    with open(args.state) as f:
        STATE.update(json.load(f))
    if args.log:
        LOG = open(args.log, "a")
    srv = Server((args.addr, args.port), Handler)
    if args.tls:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        srv.tls = True
    port = srv.server_address[1]
    # user_data names Keystone at this server
    STATE.setdefault("user_data", {}).update({
        "openstack-auth-url": "%s://%s:%d/identity/v3" % ("https" if args.tls else "http",
                                                          args.addr, port),
        "openstack-username": STATE["user"]["name"],
        "openstack-user-domain-name": STATE["user"]["domain"],
        "openstack-password": STATE["user"].get("user_data_password",
                                                STATE["user"]["password"]),
        "openstack-region-name": "RegionOne",
        "openstack-load-balancer-endpoint": STATE.get("lb", "192.0.2.10")})
    print(port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
