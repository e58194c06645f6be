#!/usr/bin/env python3
"""A fake of what a Constellation node on GCE asks Google: the metadata server's values and
the default service account's token, and the Compute Engine REST API v1. One HTTP server
answers both path trees (/computeMetadata/v1/... and /compute/v1/...), for tests on 127.0.0.1
or in a network namespace the test makes (there the metadata server's part is reached at
169.254.169.254, the test's own address).

Written from Google's documentation:
- Metadata server: https://cloud.google.com/compute/docs/metadata/querying-metadata (the
  header "Metadata-Flavor: Google" is demanded, a request without it is refused with 403 and
  the answer carries "Metadata-Flavor: Google"; a request with X-Forwarded-For is refused too)
  and https://cloud.google.com/compute/docs/access/authenticate-workloads#applications (GET
  /computeMetadata/v1/instance/service-accounts/default/token -> {"access_token",
  "expires_in", "token_type": "Bearer"}).
- Compute REST v1: https://cloud.google.com/compute/docs/reference/rest/v1/instances/get,
  .../instances/getShieldedInstanceIdentity (GET .../zones/{zone}/instances/{instance}/
  getShieldedInstanceIdentity, IAM permission compute.instances.getShieldedInstanceIdentity,
  a ShieldedInstanceIdentity {"kind": "compute#shieldedInstanceIdentity", "signingKey":
  {"ekPub": PEM}, "encryptionKey": {"ekPub": PEM}}: the vTPM's attestation key, PEM "PUBLIC
  KEY"), .../instances/list, .../zones/list, .../globalForwardingRules/list,
  .../forwardingRules/list (GET https://compute.googleapis.com/compute/v1/projects/{project}/
  ...; query "filter", "maxResults" (default and at most 500), "pageToken"; answers
  {"kind", "id", "items", "nextPageToken", "selfLink"}), the filter syntax of those pages
  (`labels.KEY:VALUE`, `name = "PREFIX*"`, expressions in parentheses joined with AND).
- Errors: https://cloud.google.com/compute/docs/api/handling-errors and
  https://cloud.google.com/apis/design/errors ({"error": {"code", "message", "errors":
  [{"message", "domain", "reason"}], "status"}}): no bearer token -> 401 UNAUTHENTICATED
  reason "required"; a bad or expired token -> 401 reason "authError"; a missing permission
  -> 403 reason "forbidden", message "Required 'compute.instances.list' permission for
  'projects/P'"; a rate limit -> 429 RESOURCE_EXHAUSTED reason "rateLimitExceeded"; an
  unknown resource -> 404 reason "notFound".

State (--state FILE, JSON):
  {"project": "p", "self": "NAME" (the instance the metadata server describes),
   "instances": [{"name", "zone", "networkIP", "labels": {k: v}, "metadata": {k: v},
                  "signing_key": PEM (getShieldedInstanceIdentity's; absent: 404 as for an
                  instance without a vTPM), "encryption_key": PEM (else the signing key)}],
   "access_tokens": ["..."],        tokens accepted besides those the metadata server issues
                                    (a validator's own credentials, given it from outside)
   "other_signing_key": PEM,        with "other_key_first": N: the first N
   "other_key_first": N,              getShieldedInstanceIdentity answers carry this key
   "zones": ["europe-west3-a", ...],
   "forwarding_rules": [{"name", "region" (absent: global), "IPAddress", "portRange",
                          "labels": {k: v}}],
   "token_ttl": 3599,               expires_in of each token issued
   "token_uses": N,                 a token stops working after N calls (revoked early)
   "deny": ["compute.instances.list", ...],   IAM permissions the service account lacks
   "throttle": {"instances.list": 2, ...},    that many first calls answered 429
   "page_size": 2,                  a page's cap below what the caller asks
   "endless": "instances.list"}     that listing never ends: every page names a next one
The port is printed on stdout (--port 0 picks one); every request is one JSON line in --log
(the Authorization header is never logged, only whether there was one).
"""
import argparse
import base64
import http.server
import json
import re
import secrets
import socketserver
import sys
import threading
import time
import urllib.parse

STATE = {}
LOCK = threading.Lock()
LOG = None
TOKENS = {}  # token -> {"expires": time, "uses": n}
CALLS = {}  # method -> calls so far
MD = "/computeMetadata/v1/"
API = "/compute/v1/projects/"


class Fail(Exception):
    def __init__(self, status, reason, message, gstatus=None, domain="global"):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.gstatus, self.domain = gstatus, domain


def error_body(e):
    err = {"code": e.status, "message": e.message,
           "errors": [{"message": e.message, "domain": e.domain, "reason": e.reason}]}
    if e.gstatus:
        err["status"] = e.gstatus
    return json.dumps({"error": err}).encode()


def parse_filter(f):
    """A list of (field, op, value) the filter ANDs; None when it is not one we know."""
    if not f:
        return []
    parts = re.split(r"\s+AND\s+", f.strip())
    out = []
    for p in parts:
        p = p.strip()
        if p.startswith("(") and p.endswith(")"):
            p = p[1:-1].strip()
        m = re.fullmatch(r'labels\.([a-z0-9_-]+)\s*:\s*"?([a-z0-9_*-]*)"?', p)
        if m:
            out.append(("label", m.group(1), m.group(2)))
            continue
        m = re.fullmatch(r'name\s*=\s*"([^"]*)"', p)
        if m:
            out.append(("name", "=", m.group(1)))
            continue
        return None
    return out


def matches(flt, name, labels):
    for kind, a, b in flt:
        if kind == "label":
            # ':' is "has": the label exists and (for a value) equals it; '*' any value
            if a not in labels or (b not in ("", "*") and labels[a] != b):
                return False
        elif kind == "name":
            pat = "^" + re.escape(b).replace(r"\*", ".*") + "$"
            if not re.match(pat, name):
                return False
    return True


def instance_res(inst):
    p = STATE["project"]
    zl = "https://www.googleapis.com/compute/v1/projects/%s/zones/%s" % (p, inst["zone"])
    res = {"kind": "compute#instance", "id": str(abs(hash(inst["name"])) % 10**19),
           "name": inst["name"], "zone": zl, "status": inst.get("status", "RUNNING"),
           "machineType": zl + "/machineTypes/n2d-standard-4",
           "networkInterfaces": [{"kind": "compute#networkInterface", "name": "nic0",
                                  "network": "https://www.googleapis.com/compute/v1/projects/"
                                             "%s/global/networks/net" % p,
                                  "networkIP": inst["networkIP"]}],
           "metadata": {"kind": "compute#metadata", "fingerprint": "abc=",
                        "items": [{"key": k, "value": v}
                                  for k, v in inst.get("metadata", {}).items()]},
           "selfLink": zl + "/instances/" + inst["name"]}
    if inst.get("labels"):
        res["labels"] = inst["labels"]
        res["labelFingerprint"] = "42WmSpB8rSM="
    return res


def page(kind, items, q, self_link, method):
    """One page of a list answer."""
    try:
        max_results = int(q.get("maxResults", ["500"])[0])
    except ValueError:
        raise Fail(400, "invalid", "Invalid value for field 'maxResults'", "INVALID_ARGUMENT")
    if not 0 <= max_results <= 500:
        raise Fail(400, "invalid", "Invalid value for field 'maxResults': %d. Must be less "
                   "than or equal to 500" % max_results, "INVALID_ARGUMENT")
    size = min(max_results or 500, STATE.get("page_size", 500))
    start = 0
    tok = q.get("pageToken", [""])[0]
    if tok:
        try:
            d = json.loads(base64.urlsafe_b64decode(tok.encode()))
            start = int(d["o"])
        except (ValueError, KeyError, TypeError):
            raise Fail(400, "invalid", "Invalid value for field 'pageToken'",
                       "INVALID_ARGUMENT")
    out = {"kind": kind, "id": "projects/%s" % STATE["project"], "selfLink": self_link}
    chunk = items[start:start + size]
    if chunk:
        out["items"] = chunk
    if start + size < len(items) or STATE.get("endless") == method:
        out["nextPageToken"] = base64.urlsafe_b64encode(json.dumps(
            {"o": start + size, "n": secrets.token_hex(4)}).encode()).decode()
    return out


def gate(method, permission, auth):
    if not auth:
        raise Fail(401, "required", "Request is missing required authentication credential. "
                   "Expected OAuth 2 access token, login cookie or other valid authentication "
                   "credential. See https://developers.google.com/identity/sign-in/web/devconsole"
                   "-project.", "UNAUTHENTICATED")
    m = re.fullmatch(r"Bearer ([A-Za-z0-9._~+/=-]+)", auth)
    with LOCK:
        t = TOKENS.get(m.group(1)) if m else None
        if m and t is None and m.group(1) in STATE.get("access_tokens", []):
            t = TOKENS[m.group(1)] = {"expires": time.time() + 3600, "uses": 0}
        ok = t is not None and time.time() < t["expires"] and \
            t["uses"] < STATE.get("token_uses", 1 << 30)
        if ok:
            t["uses"] += 1
    if not ok:
        raise Fail(401, "authError", "Request had invalid authentication credentials. "
                   "Expected OAuth 2 access token, login cookie or other valid authentication "
                   "credential.", "UNAUTHENTICATED")
    if permission in STATE.get("deny", []):
        raise Fail(403, "forbidden", "Required '%s' permission for 'projects/%s'" %
                   (permission, STATE["project"]))
    with LOCK:
        CALLS[method] = CALLS.get(method, 0) + 1
        n = CALLS[method]
    if n <= STATE.get("throttle", {}).get(method, 0):
        raise Fail(429, "rateLimitExceeded", "Quota exceeded for quota metric 'Read requests' "
                   "and limit 'Read requests per minute' of service 'compute.googleapis.com'",
                   "RESOURCE_EXHAUSTED", "usageLimits")


def compute(path, q, auth):
    """(method, answer) of a Compute API GET."""
    p = STATE["project"]
    base = "https://www.googleapis.com/compute/v1/projects/%s/" % p
    parts = path.split("/")
    if not parts or parts[0] != p:
        raise Fail(404, "notFound", "The resource 'projects/%s' was not found" % parts[0])
    rest = parts[1:]
    flt = parse_filter(q.get("filter", [""])[0])
    if flt is None:
        raise Fail(400, "invalid", "Invalid value for field 'filter': '%s'. Invalid list "
                   "filter expression." % q.get("filter", [""])[0], "INVALID_ARGUMENT")
    if rest == ["zones"]:
        gate("zones.list", "compute.zones.list", auth)
        zones = [{"kind": "compute#zone", "name": z, "status": "UP",
                  "region": base + "regions/" + z.rsplit("-", 1)[0],
                  "selfLink": base + "zones/" + z}
                 for z in STATE.get("zones", []) if matches(flt, z, {})]
        return "zones.list", page("compute#zoneList", zones, q, base + "zones", "zones.list")
    if len(rest) == 3 and rest[0] == "zones" and rest[2] == "instances":
        gate("instances.list", "compute.instances.list", auth)
        if rest[1] not in STATE.get("zones", []):
            raise Fail(404, "notFound", "The resource 'projects/%s/zones/%s' was not found" %
                       (p, rest[1]))
        items = [instance_res(i) for i in STATE.get("instances", [])
                 if i["zone"] == rest[1] and matches(flt, i["name"], i.get("labels", {}))]
        return "instances.list", page("compute#instanceList", items, q,
                                      base + "zones/%s/instances" % rest[1], "instances.list")
    if len(rest) == 5 and rest[0] == "zones" and rest[2] == "instances" and \
            rest[4] == "getShieldedInstanceIdentity":
        gate("instances.getShieldedInstanceIdentity",
             "compute.instances.getShieldedInstanceIdentity", auth)
        for i in STATE.get("instances", []):
            if i["zone"] == rest[1] and i["name"] == rest[3] and i.get("signing_key"):
                with LOCK:
                    n = CALLS["instances.getShieldedInstanceIdentity"]
                key = i["signing_key"]
                if n <= STATE.get("other_key_first", 0):
                    key = STATE["other_signing_key"]
                return "instances.getShieldedInstanceIdentity", {
                    "kind": "compute#shieldedInstanceIdentity",
                    "signingKey": {"ekPub": key},
                    "encryptionKey": {"ekPub": i.get("encryption_key", i["signing_key"])}}
        raise Fail(404, "notFound", "The resource 'projects/%s/zones/%s/instances/%s' was not "
                   "found" % (p, rest[1], rest[3]))
    if len(rest) == 4 and rest[0] == "zones" and rest[2] == "instances":
        gate("instances.get", "compute.instances.get", auth)
        for i in STATE.get("instances", []):
            if i["zone"] == rest[1] and i["name"] == rest[3]:
                return "instances.get", instance_res(i)
        raise Fail(404, "notFound", "The resource 'projects/%s/zones/%s/instances/%s' was not "
                   "found" % (p, rest[1], rest[3]))
    glob = rest == ["global", "forwardingRules"]
    if glob or (len(rest) == 3 and rest[0] == "regions" and rest[2] == "forwardingRules"):
        method = "globalForwardingRules.list" if glob else "forwardingRules.list"
        gate(method, "compute.globalForwardingRules.list" if glob else
             "compute.forwardingRules.list", auth)
        region = None if glob else rest[1]
        items = []
        for fr in STATE.get("forwarding_rules", []):
            if fr.get("region") != region or not matches(flt, fr["name"], fr.get("labels", {})):
                continue
            r = {"kind": "compute#forwardingRule", "name": fr["name"],
                 "IPAddress": fr["IPAddress"], "IPProtocol": "TCP",
                 "portRange": fr["portRange"], "labels": fr.get("labels", {}),
                 "loadBalancingScheme": "EXTERNAL"}
            if region:
                r["region"] = base + "regions/" + region
            items.append(r)
        return method, page("compute#forwardingRuleList", items, q, base + "/".join(rest),
                            method)
    raise Fail(404, "notFound", "The requested URL was not found on this server.")


def self_instance():
    for i in STATE.get("instances", []):
        if i["name"] == STATE.get("self"):
            return i
    return None


def metadata(path):
    """The metadata server's (status, content type, body)."""
    me = self_instance()
    if path == "instance/service-accounts/default/token":
        tok = "ya29." + secrets.token_urlsafe(48)
        ttl = STATE.get("token_ttl", 3599)
        with LOCK:
            TOKENS[tok] = {"expires": time.time() + ttl, "uses": 0}
        return 200, "application/json", json.dumps(
            {"access_token": tok, "expires_in": ttl, "token_type": "Bearer"}).encode()
    if me is None:
        return 404, "text/html", b"Not Found"
    values = {"instance/name": me["name"],
              "instance/zone": "projects/123456789012/zones/" + me["zone"],
              "project/project-id": STATE["project"],
              "project/numeric-project-id": "123456789012",
              "instance/network-interfaces/0/ip": me["networkIP"]}
    for k, v in me.get("metadata", {}).items():
        values["instance/attributes/" + k] = v
    if path in values:
        return 200, "application/text", values[path].encode()
    return 404, "text/html", b"Not Found"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        rec = {"path": u.path, "query": u.query}
        extra = {}
        if u.path.startswith(MD):
            extra["Metadata-Flavor"] = "Google"
            if self.headers.get("Metadata-Flavor") != "Google" or \
                    self.headers.get("X-Forwarded-For"):
                status, ctype, out = 403, "text/html", (
                    b"Your client does not have permission to get URL <code>%s</code> from "
                    b"this server. Missing Metadata-Flavor:Google header." % u.path.encode())
            else:
                status, ctype, out = metadata(u.path[len(MD):])
            rec["method"] = "metadata"
        elif u.path.startswith(API):
            auth = self.headers.get("Authorization")
            rec["auth"] = bool(auth)
            try:
                rec["method"], res = compute(u.path[len(API):], q, auth)
                status, ctype, out = 200, "application/json; charset=UTF-8", \
                    json.dumps(res).encode()
            except Fail as e:
                status, ctype, out = e.status, "application/json; charset=UTF-8", error_body(e)
                rec["reason"] = e.reason
            if status == 401:
                extra["WWW-Authenticate"] = 'Bearer realm="https://accounts.google.com/"'
        else:
            status, ctype, out = 404, "text/html", b"Not Found"
        rec["status"] = status
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)
        if LOG:
            with LOCK:
                LOG.write(json.dumps(rec) + "\n")
                LOG.flush()

    def do_POST(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()


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
    ap.add_argument("--tls", help="PEM with the certificate and its key: a second listener "
                    "serving https (the Compute API is https only), its port second on stdout")
    ap.add_argument("--tls-listen", metavar="ADDR:PORT", help="where the https listener binds "
                    "(default: --addr, a port picked), e.g. the API's own address on 443")
    args = ap.parse_args()
    with open(args.state) as f:
        STATE.update(json.load(f))
    if args.log:
        LOG = open(args.log, "a")
    srv = Server((args.addr, args.port), Handler)
    ports = [str(srv.server_address[1])]
    if args.tls:
        import ssl
        taddr, tport = args.addr, 0
        if args.tls_listen:
            taddr, _, tport = args.tls_listen.rpartition(":")
        tsrv = Server((taddr, int(tport)), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls)
        tsrv.socket = ctx.wrap_socket(tsrv.socket, server_side=True)
        threading.Thread(target=tsrv.serve_forever, daemon=True).start()
        ports.append(str(tsrv.server_address[1]))
    print(" ".join(ports), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
