#!/usr/bin/env python3
"""A fake of Azure Resource Manager as a Constellation node calls it, for tests on 127.0.0.1.

Written from the ARM REST reference:
- https://learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/list (GET
  /subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets)
- https://learn.microsoft.com/rest/api/compute/virtual-machine-scale-set-vms/list (GET
  .../virtualMachineScaleSets/SS/virtualMachines)
- https://learn.microsoft.com/rest/api/compute/virtual-machine-scale-set-vms/get (GET
  .../virtualMachineScaleSets/SS/virtualMachines/N: one VM, as a list item)
- https://learn.microsoft.com/rest/api/virtualnetwork/network-interface-in-vm-ss/get-virtual-machine-scale-set-network-interface
  (GET .../virtualMachineScaleSets/SS/virtualMachines/N/networkInterfaces/NIC, published only at
  api-version 2018-10-01 and older, under Microsoft.Compute)
- https://learn.microsoft.com/rest/api/load-balancer/load-balancers/list and
  https://learn.microsoft.com/rest/api/virtualnetwork/public-ip-addresses/get
- https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling
  (429 with Retry-After) and .../troubleshooting/common-deployment-errors (the error shape
  {"error": {"code", "message"}}: MissingApiVersionParameter, InvalidApiVersionParameter 400;
  AuthenticationFailed, InvalidAuthenticationToken, ExpiredAuthenticationToken 401;
  AuthorizationFailed 403; ResourceNotFound 404), and list results' {"value", "nextLink"}
  (https://learn.microsoft.com/rest/api/azure/#async-operations-throttling-and-paging).

Tokens are the ones tests/cloud/fake_cloud.py's IMDS issues: fake.<expires_on>.<HMAC-SHA256 of
expires_on with --token-key>; a token past expires_on is refused as ARM refuses an expired one.

State (--state FILE, JSON):
  {"subscription": S, "resource_group": RG,
   "scale_sets": [{"name", "tags": {k: v}, "vms": [{"instanceId", "computerName", "ip"}]}],
   "load_balancers": [{"name", "tags", "frontends": [{"publicIP": NAME or null, "privateIP"}]}],
   "public_ips": {NAME: IP},
   "deny": [permission, ...],        the managed identity lacks these (403 AuthorizationFailed)
   "throttle": {route: N},           the first N calls of a route are 429 (Retry-After: 1)
   "revoke": N,                      the first N calls with a good token are 401 (expired early)
   "page_size": {route: N},          a list page holds N items (default 1000)
   "endless": route}                 that list's pages never end (empty pages with nextLink)
  routes: vmss, vms, vm, nic, lbs, pip.
The port is printed on stdout (--port 0 picks one); every request is one JSON line in --log.
With --tls PEM it serves https (the real ARM is https only).
"""
import argparse
import hashlib
import hmac
import http.server
import json
import re
import socketserver
import sys
import threading
import time
import urllib.parse

STATE = {}
COUNT = {}
LOCK = threading.Lock()
LOG = None
KEY = b""
PROV = r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
ROUTES = [  # name, regex, permission, api-versions the service publishes (a selection)
    ("vmss", PROV + r"Microsoft\.Compute/virtualMachineScaleSets$",
     "Microsoft.Compute/virtualMachineScaleSets/read",
     ["2021-11-01", "2022-03-01", "2022-08-01", "2022-11-01", "2023-03-01", "2023-07-01", "2023-09-01", "2024-03-01"]),
    ("vms", PROV + r"Microsoft\.Compute/virtualMachineScaleSets/(?P<ss>[^/]+)/virtualMachines$",
     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
     ["2021-11-01", "2022-03-01", "2022-08-01", "2022-11-01", "2023-03-01", "2023-07-01", "2023-09-01", "2024-03-01"]),
    ("vm", PROV + r"Microsoft\.Compute/virtualMachineScaleSets/(?P<ss>[^/]+)/virtualMachines/(?P<vm>[^/]+)$",
     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
     ["2021-11-01", "2022-03-01", "2022-08-01", "2022-11-01", "2023-03-01", "2023-07-01", "2023-09-01", "2024-03-01"]),
    ("nic", PROV + r"Microsoft\.Compute/virtualMachineScaleSets/(?P<ss>[^/]+)/virtualMachines/(?P<vm>[^/]+)/networkInterfaces/(?P<nic>[^/]+)$",
     "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read",
     ["2017-03-30", "2018-10-01"]),
    ("lbs", PROV + r"Microsoft\.Network/loadBalancers$", "Microsoft.Network/loadBalancers/read",
     ["2022-07-01", "2022-09-01", "2023-02-01", "2023-04-01", "2023-05-01", "2023-09-01"]),
    ("pip", PROV + r"Microsoft\.Network/publicIPAddresses/(?P<name>[^/]+)$",
     "Microsoft.Network/publicIPAddresses/read",
     ["2022-07-01", "2022-09-01", "2023-02-01", "2023-04-01", "2023-05-01", "2023-09-01"]),
]


class Fail(Exception):
    def __init__(self, status, code, message, headers=()):
        self.status, self.code, self.message, self.headers = status, code, message, headers


def rid(sub, rg, rest):
    return "/subscriptions/%s/resourceGroups/%s/providers/%s" % (sub, rg, rest)


def authenticate(h):
    auth = h.headers.get("Authorization")
    if not auth:
        raise Fail(401, "AuthenticationFailed",
                   "Authentication failed. The 'Authorization' header is missing.")
    if not auth.startswith("Bearer "):
        raise Fail(401, "AuthenticationFailed",
                   "Authentication failed. The 'Authorization' header is provided in an invalid format.")
    parts = auth[7:].split(".")
    if len(parts) != 3 or parts[0] != "fake" or not hmac.compare_digest(
            hmac.new(KEY, parts[1].encode(), hashlib.sha256).hexdigest(), parts[2]):
        raise Fail(401, "InvalidAuthenticationToken",
                   "The access token is invalid.")
    if int(parts[1]) <= time.time():
        raise Fail(401, "ExpiredAuthenticationToken",
                   "The access token expiry UTC time '%s' is earlier than current UTC time '%s'." %
                   (time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(int(parts[1]))),
                    time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime())))


def page(h, route, items, query, base):
    """One page of items; the skip token is an offset (ARM's is opaque)."""
    size = STATE.get("page_size", {}).get(route, 1000)
    if STATE.get("endless") == route:
        n = int(query.get("$skiptoken", "0")) + 1
        return {"value": [], "nextLink": base + "&$skiptoken=%d" % n}
    off = int(query.get("$skiptoken", "0") or 0)
    out = {"value": items[off:off + size]}
    if off + size < len(items):
        out["nextLink"] = base + "&$skiptoken=%d" % (off + size)
    return out


def vm_json(sub, rg, ss, vm):
    vid = rid(sub, rg, "Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%s" % (ss["name"], vm["instanceId"]))
    return {"name": "%s_%s" % (ss["name"], vm["instanceId"]), "id": vid, "instanceId": vm["instanceId"],
            "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines", "location": "westeurope",
            "tags": ss.get("tags", {}),
            "properties": {"latestModelApplied": True, "vmId": "00000000-0000-4000-8000-%012d" % int(vm["instanceId"]),
                           "provisioningState": "Succeeded",
                           "osProfile": {"computerName": vm["computerName"], "adminUsername": "azureuser"},
                           "networkProfile": {"networkInterfaces": [{"id": vid + "/networkInterfaces/" + ss["name"]}]}}}


def serve(h, route, m, query):
    sub, rg = m.group("sub"), m.group("rg")
    if sub != STATE["subscription"]:
        raise Fail(404, "SubscriptionNotFound", "The subscription '%s' could not be found." % sub)
    if rg.lower() != STATE["resource_group"].lower():
        raise Fail(404, "ResourceGroupNotFound", "Resource group '%s' could not be found." % rg)
    base = "http%s://%s%s?api-version=%s" % ("s" if h.server.tls else "", h.headers.get("Host"),
                                             urllib.parse.urlsplit(h.path).path, query["api-version"])
    sets = STATE.get("scale_sets", [])
    if route == "vmss":
        items = [{"name": s["name"], "id": rid(sub, rg, "Microsoft.Compute/virtualMachineScaleSets/" + s["name"]),
                  "type": "Microsoft.Compute/virtualMachineScaleSets", "location": "westeurope",
                  "tags": s.get("tags", {}), "sku": {"name": "Standard_DC4as_v5", "capacity": len(s["vms"])},
                  "properties": {"provisioningState": "Succeeded"}} for s in sets]
        return page(h, route, items, query, base)
    if route in ("vms", "vm", "nic"):
        ss = [s for s in sets if s["name"].lower() == m.group("ss").lower()]
        if not ss:
            raise Fail(404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets/%s' "
                       "under resource group '%s' was not found." % (m.group("ss"), rg))
        if route == "vms":
            return page(h, route, [vm_json(sub, rg, ss[0], v) for v in ss[0]["vms"]], query, base)
        vm = [v for v in ss[0]["vms"] if v["instanceId"] == m.group("vm")]
        if route == "vm":
            if not vm:
                raise Fail(404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets/%s/"
                           "virtualMachines/%s' under resource group '%s' was not found." %
                           (m.group("ss"), m.group("vm"), rg))
            return vm_json(sub, rg, ss[0], vm[0])
        if not vm or m.group("nic") != ss[0]["name"]:
            raise Fail(404, "ResourceNotFound", "The Resource was not found.")
        nid = rid(sub, rg, "Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%s/networkInterfaces/%s"
                  % (ss[0]["name"], vm[0]["instanceId"], ss[0]["name"]))
        return {"name": ss[0]["name"], "id": nid, "properties": {
            "provisioningState": "Succeeded", "primary": True,
            "ipConfigurations": [{"name": ss[0]["name"], "id": nid + "/ipConfigurations/" + ss[0]["name"],
                                  "properties": {"privateIPAddress": vm[0]["ip"], "privateIPAllocationMethod": "Dynamic",
                                                 "primary": True, "privateIPAddressVersion": "IPv4"}}]}}
    if route == "lbs":
        items = []
        for lb in STATE.get("load_balancers", []):
            lid = rid(sub, rg, "Microsoft.Network/loadBalancers/" + lb["name"])
            fes = []
            for k, f in enumerate(lb.get("frontends", [])):
                p = {"privateIPAllocationMethod": "Dynamic"}
                if f.get("publicIP"):
                    p["publicIPAddress"] = {"id": rid(sub, rg, "Microsoft.Network/publicIPAddresses/" + f["publicIP"])}
                if f.get("privateIP"):
                    p["privateIPAddress"] = f["privateIP"]
                fes.append({"name": "fe%d" % k, "id": lid + "/frontendIPConfigurations/fe%d" % k, "properties": p})
            items.append({"name": lb["name"], "id": lid, "type": "Microsoft.Network/loadBalancers",
                          "location": "westeurope", "tags": lb.get("tags", {}),
                          "properties": {"frontendIPConfigurations": fes, "provisioningState": "Succeeded"}})
        return page(h, route, items, query, base)
    name = m.group("name")
    if name not in STATE.get("public_ips", {}):
        raise Fail(404, "ResourceNotFound", "The Resource 'Microsoft.Network/publicIPAddresses/%s' under "
                   "resource group '%s' was not found." % (name, rg))
    return {"name": name, "id": rid(sub, rg, "Microsoft.Network/publicIPAddresses/" + name),
            "properties": {"ipAddress": STATE["public_ips"][name], "publicIPAllocationMethod": "Static"}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(u.query))
        rec = {"method": "GET", "path": self.path, "auth": bool(self.headers.get("Authorization"))}
        headers = []
        try:
            route = None
            for name, rx, perm, versions in ROUTES:
                m = re.match(rx, u.path, re.I)
                if m:
                    route = name
                    break
            if not route:
                raise Fail(404, "InvalidResourceType", "The resource type could not be found.")
            rec["route"] = route
            if "api-version" not in query:
                raise Fail(400, "MissingApiVersionParameter",
                           "The api-version query parameter (?api-version=) is required for all requests.")
            authenticate(self)
            with LOCK:
                COUNT["revoke"] = COUNT.get("revoke", 0) + 1
                revoked = COUNT["revoke"] <= STATE.get("revoke", 0)
                COUNT[route] = COUNT.get(route, 0) + 1
                throttled = COUNT[route] <= STATE.get("throttle", {}).get(route, 0)
            if revoked:
                raise Fail(401, "ExpiredAuthenticationToken", "The access token has expired.")
            if query["api-version"] not in versions:
                raise Fail(400, "InvalidApiVersionParameter",
                           "The api-version '%s' is invalid. The supported versions are '%s'." %
                           (query["api-version"], ",".join(versions)))
            if perm in STATE.get("deny", []):
                raise Fail(403, "AuthorizationFailed",
                           "The client '9c8c7a7e-0000-4000-8000-000000000001' with object id "
                           "'9c8c7a7e-0000-4000-8000-000000000001' does not have authorization to "
                           "perform action '%s' over scope '%s' or the scope is invalid. If access "
                           "was recently granted, please refresh your credentials." % (perm, u.path))
            if throttled:
                raise Fail(429, "TooManyRequests", "The request is being throttled.",
                           [("Retry-After", "1")])
            status, out = 200, serve(self, route, m, query)
        except Fail as e:
            status, out, headers = e.status, {"error": {"code": e.code, "message": e.message}}, list(e.headers)
            rec["code"] = e.code
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-ms-request-id", "00000000-0000-4000-8000-000000000000")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True
        rec["status"] = status
        if LOG:
            with LOCK:
                LOG.write(json.dumps(rec) + "\n")
                LOG.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls = False


def main():
    global LOG, KEY
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state", required=True)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log")
    ap.add_argument("--token-key", default="fake-arm-key")
    ap.add_argument("--tls", help="PEM with the certificate and its key: serve https")
    a = ap.parse_args()
    with open(a.state) as f:
        STATE.update(json.load(f))
    KEY = a.token_key.encode()
    if a.log:
        LOG = open(a.log, "a")
    srv = Server((a.addr, a.port), Handler)
    if a.tls:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        srv.tls = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
