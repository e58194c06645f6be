#!/usr/bin/env python3
"""Fakes of the clouds' node-local endpoints, for tests in a network namespace the test makes
(169.254.169.254 and 168.63.129.16 are then the test's own addresses). One program, one table
of routes per cloud (ROUTES), so that later fakes (the control-plane APIs) add rows.

Written from the clouds' documentation; each endpoint demands what the real one demands and
fails as it fails:

- GCP, the metadata server: https://cloud.google.com/compute/docs/metadata/querying-metadata
  (GET http://169.254.169.254/computeMetadata/v1/..., header "Metadata-Flavor: Google", else
  403; a request with X-Forwarded-For is refused with 403; every answer carries
  "Metadata-Flavor: Google"; values are text; unknown paths 404) and
  https://cloud.google.com/compute/docs/troubleshooting/troubleshoot-metadata-server (codes).
- Azure, IMDS: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
  (GET /metadata/instance?api-version=...&format=json with "Metadata: true", else 400
  {"error": "Bad request. Required metadata header not specified"}; no api-version: 400 with
  "newest-versions"; X-Forwarded-For: 400) with the body of the REST spec's example
  GetInstanceMetadata.json (2021-02-01), trimmed to the fields a node reads. THIM on the same
  server (https://learn.microsoft.com/azure/security/fundamentals/trusted-hardware-identity-management:
  GET /metadata/THIM/amd/certification, "Metadata: true" as every IMDS path, no api-version;
  JSON {vcekCert, tcbm, certificateChain, cacheControl}) serves the PEM files of --set
  thim_vcek=PATH and thim_chain=PATH (404 without them); --set maa_url=URL adds the tag
  constellation-maa-url.
- Azure, the wireserver (168.63.129.16): the protocol WALinuxAgent, cloud-init and Afterburn
  speak (x-ms-version 2012-11-30; GET /machine/?comp=goalstate, POST /machine?comp=health with
  text/xml). Its refusal of a request without x-ms-version is modelled as 400 with an XML
  <Error>; the shape of that body is not documented (an assumption), the refusal is.
- AWS, IMDSv2: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html
  (PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds 1..21600, else 400; a PUT
  with X-Forwarded-For 403; with http_tokens=required a GET without a valid, unexpired token
  is 401) and instance-identity-documents.html for the document's fields;
  iam/security-credentials/ (the role's name) and .../<role> (Code, LastUpdated, Type,
  AccessKeyId, SecretAccessKey, Token, Expiration) from instancedata-data-categories.html and
  iam-roles-for-amazon-ec2.html#instance-metadata-security-credentials.
- OpenStack: https://docs.openstack.org/nova/latest/user/metadata.html (meta_data.json,
  user_data, the EC2-compatible /1.0/meta-data/local-ipv4; no header demanded).

--set KEY=VALUE sets a field of the instance (INSTANCE below), among them Azure's scale_set and
vmss_instance (the scale-set VM IMDS's compute.resourceId names) and OpenStack's auth_url
(user_data's openstack-auth-url: where the test's Keystone listens).

Every request is logged as one JSON line to --log (method, path, headers, body, status) for
the test to read.
"""
import argparse
import http.server
import json
import secrets
import socketserver
import sys
import threading
import time
import xml.etree.ElementTree as ET

INSTANCE = {
    "name": "constel-worker-0",
    "ip": "10.9.0.2",
    "role": "worker",
    "uid": "c0ffee42",
    "init_secret_hash": "$2a$10$0123456789012345678901uMvcQ9mDmbXJMMvl8Lw3CHSWsWrANMO",
    "project": "constel-test",
    "zone": "europe-west3-b",
    "project_number": "123456789012",
    "az": "eu-central-1b",
    "instance_id": "i-0123456789abcdef0",
    "uuid": "b0fa911b-69d4-4476-bbe2-1c92bff6535c",
    "lb": "34.1.2.3",
    "incarnation": "7",
    "container_id": "a511aa6d-29e7-4f53-8788-55655dfe848f",
    "instance_name": "f6cd1d7ef1644557b9059345e5ba890c._constel-worker-0",
    # AWS: the instance profile's role and its temporary credentials (aws_expires: seconds
    # from the request on; the real ones live about 6 h and are renewed 5 min before)
    # Azure: the managed identity's token (its lifetime; the key fake_azure_api.py checks)
    "azure_token_ttl": "86399",
    "azure_token_key": "fake-arm-key",
    "aws_role": "constel-node-role",
    "aws_key_id": "ASIAEXAMPLEKEYID0001",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws_token": "IQoJb3JpZ2luX2VjEXAMPLETOKEN//////////wEaDGV1LWNlbnRyYWwtMSJGMEQ=",
    "aws_expires": "21600",
}
LOG_LOCK = threading.Lock()
TOKENS = {}  # IMDSv2 token -> expiry (monotonic)
HEALTH = []  # the wireserver's reports, as parsed
BUSY = [0]  # the first requests answered 503 (--busy N)


class Reply(Exception):
    def __init__(self, status, body, ctype="text/plain", headers=()):
        self.status, self.body, self.ctype, self.headers = status, body, ctype, list(headers)


# ---- GCP ----
def gce_routes(i):
    attrs = {"constellation-init-secret-hash": i["init_secret_hash"], "serial-port-enable": "TRUE"}
    values = {
        "instance/name": i["name"],
        "instance/hostname": i["name"] + "." + i["zone"] + ".c." + i["project"] + ".internal",
        "instance/zone": "projects/%s/zones/%s" % (i["project_number"], i["zone"]),
        "instance/network-interfaces/0/ip": i["ip"],
        "project/project-id": i["project"],
    }
    values.update({"instance/attributes/" + k: v for k, v in attrs.items()})
    return values


def gcp(h, method, path, query, body):
    hdr = [("Metadata-Flavor", "Google")]
    if h.headers.get("X-Forwarded-For"):
        raise Reply(403, "Forbidden\n", headers=hdr)
    if h.headers.get("Metadata-Flavor") != "Google":
        raise Reply(403, "Your client does not have permission to get URL %s from this server. "
                    "Missing Metadata-Flavor:Google header.\n" % path, "text/html", hdr)
    if method != "GET":
        raise Reply(405, "Method Not Allowed\n", headers=hdr)
    prefix = "/computeMetadata/v1/"
    v = gce_routes(INSTANCE).get(path[len(prefix):]) if path.startswith(prefix) else None
    if v is None:
        raise Reply(404, "Not Found\n", "text/html", hdr)
    raise Reply(200, v, "application/text", hdr)


# ---- Azure IMDS and wireserver ----
def azure_imds(h, method, path, query, body):
    j = "application/json; charset=utf-8"
    if h.headers.get("X-Forwarded-For"):
        raise Reply(400, json.dumps({"error": "Bad request. X-Forwarded-For header is not allowed"}), j)
    if (h.headers.get("Metadata") or "").lower() != "true":
        raise Reply(400, json.dumps({"error": "Bad request. Required metadata header not specified"}), j)
    if path == "/metadata/THIM/amd/certification" and method == "GET":
        if not INSTANCE.get("thim_vcek") or not INSTANCE.get("thim_chain"):
            raise Reply(404, json.dumps({"error": "Not found"}), j)
        with open(INSTANCE["thim_vcek"]) as v, open(INSTANCE["thim_chain"]) as c:
            raise Reply(200, json.dumps({"vcekCert": v.read(), "tcbm": "DB18000000000002",
                                         "certificateChain": c.read(), "cacheControl": "86400"}), j)
    if "api-version" not in query:
        raise Reply(400, json.dumps({
            "error": "Bad request. api-version was not specified in the request. For more "
                     "information refer to aka.ms/azureimds",
            "newest-versions": ["2021-02-01", "2020-12-01", "2020-10-01"]}), j)
    if path == "/metadata/identity/oauth2/token" and method == "GET":
        azure_token(query)
    if path != "/metadata/instance" or method != "GET":
        raise Reply(404, json.dumps({"error": "Not found"}), j)
    i = INSTANCE
    ss = i.get("scale_set", "constel-scale-set-worker")
    rid = ("/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/constel-rg/"
           "providers/Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%s" %
           (ss, i.get("vmss_instance", "0")))
    tags = [("constellation-role", i["role"]), ("constellation-uid", i["uid"]),
            ("constellation-init-secret-hash", i["init_secret_hash"])]
    if i.get("maa_url"):
        tags.append(("constellation-maa-url", i["maa_url"]))
    doc = {
        "compute": {
            "azEnvironment": "AzurePublicCloud", "location": "westeurope", "name": i["name"],
            "osProfile": {"adminUsername": "", "computerName": i["name"], "disablePasswordAuthentication": "true"},
            "osType": "Linux", "resourceGroupName": "constel-rg", "resourceId": rid,
            "subscriptionId": "8d10da13-8125-4ba9-a717-bf7490507b3d",
            "tags": ";".join("%s:%s" % t for t in tags),
            "tagsList": [{"name": k, "value": v} for k, v in tags],
            "vmId": "02aab8a4-74ef-476e-8182-f6d2ba4166a6", "vmScaleSetName": ss,
            "vmSize": "Standard_DC4as_v5", "zone": "",
        },
        "network": {"interface": [{
            "ipv4": {"ipAddress": [{"privateIpAddress": i["ip"], "publicIpAddress": ""}],
                     "subnet": [{"address": "10.9.0.0", "prefix": "16"}]},
            "ipv6": {"ipAddress": []}, "macAddress": "000D3AF806EC"}]},
    }
    raise Reply(200, json.dumps(doc), j)


def azure_token(query):
    """The managed identity's token (how-to-use-vm-token#get-a-token-using-http): api-version
    2018-02-01 and resource demanded; the answer's times are strings. The token is
    fake.<expires_on>.<HMAC of it with azure_token_key>, which fake_azure_api.py checks."""
    import hashlib
    import hmac
    import urllib.parse
    j = "application/json; charset=utf-8"
    if query.get("api-version") != "2018-02-01":
        raise Reply(400, json.dumps({"error": "invalid_request",
                                     "error_description": "Invalid api-version"}), j)
    res = urllib.parse.unquote(query.get("resource", ""))
    if not res:
        raise Reply(400, json.dumps({"error": "invalid_request",
                                     "error_description": "Required audience parameter not specified"}), j)
    ttl = int(INSTANCE["azure_token_ttl"])
    now = int(time.time())
    exp = str(now + ttl)
    mac = hmac.new(INSTANCE["azure_token_key"].encode(), exp.encode(), hashlib.sha256).hexdigest()
    raise Reply(200, json.dumps({
        "access_token": "fake.%s.%s" % (exp, mac), "client_id": "9c8c7a7e-0000-4000-8000-000000000001",
        "expires_in": str(ttl), "expires_on": exp, "ext_expires_in": str(ttl),
        "not_before": str(now), "resource": res, "token_type": "Bearer"}), j)


def wire_error(msg):
    return ('<?xml version="1.0" encoding="utf-8"?><Error xmlns:xsi="http://www.w3.org/2001/'
            'XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><Code>%s</Code>'
            '</Error>' % msg)


def azure_wire(h, method, path, query, body):
    x = "text/xml; charset=utf-8"
    i = INSTANCE
    if not h.headers.get("x-ms-version"):
        raise Reply(400, wire_error("MissingRequiredHeader x-ms-version"), x)
    comp = query.get("comp")
    if path in ("/machine", "/machine/") and comp == "goalstate" and method == "GET":
        raise Reply(200, """<?xml version="1.0" encoding="utf-8"?>
<GoalState xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="goalstate10.xsd">
  <Version>2012-11-30</Version>
  <Incarnation>%s</Incarnation>
  <Machine><ExpectedState>Started</ExpectedState><StopRolesDeadlineHint>300000</StopRolesDeadlineHint>
    <LBProbePorts><Port>16001</Port></LBProbePorts><ExpectHealthReport>FALSE</ExpectHealthReport></Machine>
  <Container>
    <ContainerId>%s</ContainerId>
    <RoleInstanceList>
      <RoleInstance>
        <InstanceId>%s</InstanceId>
        <State>Started</State>
        <Configuration><HostingEnvironmentConfig>http://168.63.129.16:80/machine/x?comp=config&amp;type=hostingEnvironmentConfig&amp;incarnation=%s</HostingEnvironmentConfig></Configuration>
      </RoleInstance>
    </RoleInstanceList>
  </Container>
</GoalState>
""" % (i["incarnation"], i["container_id"], i["instance_name"], i["incarnation"]), x)
    if path in ("/machine", "/machine/") and comp == "health" and method == "POST":
        if not (h.headers.get("Content-Type") or "").startswith("text/xml"):
            raise Reply(415, wire_error("UnsupportedMediaType"), x)
        try:
            root = ET.fromstring(body)
        except ET.ParseError as e:
            raise Reply(400, wire_error("InvalidXml %s" % e), x)
        def text(p):
            e = root.find(p)
            return e.text if e is not None else None
        rep = {"incarnation": text("GoalStateIncarnation"),
               "container": text("Container/ContainerId"),
               "instance": text("Container/RoleInstanceList/Role/InstanceId"),
               "state": text("Container/RoleInstanceList/Role/Health/State"),
               "substatus": text("Container/RoleInstanceList/Role/Health/Details/SubStatus"),
               "description": text("Container/RoleInstanceList/Role/Health/Details/Description")}
        if (root.tag != "Health" or rep["incarnation"] != i["incarnation"] or
                rep["container"] != i["container_id"] or rep["instance"] != i["instance_name"] or
                rep["state"] not in ("Ready", "NotReady") or
                (rep["state"] == "NotReady" and not (rep["substatus"] and rep["description"]))):
            raise Reply(400, wire_error("InvalidHealthReport"), x)
        HEALTH.append(rep)
        raise Reply(200, "", x)
    raise Reply(404, wire_error("ResourceNotFound"), x)


def azure(h, method, path, query, body):
    if h.server.server_address[0] == "168.63.129.16" or path.startswith("/machine"):
        return azure_wire(h, method, path, query, body)
    return azure_imds(h, method, path, query, body)


# ---- AWS IMDSv2 ----
def aws(h, method, path, query, body):
    i = INSTANCE
    if path == "/latest/api/token":
        if method != "PUT":
            raise Reply(405, "Method Not Allowed")
        if h.headers.get("X-Forwarded-For"):
            raise Reply(403, "Forbidden")
        ttl = h.headers.get("X-aws-ec2-metadata-token-ttl-seconds") or ""
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            raise Reply(400, "Bad Request")
        tok = secrets.token_urlsafe(40)
        TOKENS[tok] = time.monotonic() + int(ttl)
        raise Reply(200, tok, headers=[("X-aws-ec2-metadata-token-ttl-seconds", ttl)])
    if method != "GET":
        raise Reply(405, "Method Not Allowed")
    tok = h.headers.get("X-aws-ec2-metadata-token")
    if not tok or TOKENS.get(tok, 0) < time.monotonic():  # http_tokens = "required"
        raise Reply(401, "Unauthorized")
    doc = {"accountId": "012345678900", "architecture": "x86_64", "availabilityZone": i["az"],
           "billingProducts": None, "devpayProductCodes": None, "marketplaceProductCodes": None,
           "imageId": "ami-0123456789abcdeff", "instanceId": i["instance_id"],
           "instanceType": "m6a.xlarge", "kernelId": None, "pendingTime": "2026-01-02T03:04:05Z",
           "privateIp": i["ip"], "ramdiskId": None, "region": i["az"][:-1], "version": "2017-09-30"}
    values = {"/latest/dynamic/instance-identity/document": json.dumps(doc, indent=2),
              "/latest/meta-data/local-ipv4": i["ip"],
              "/latest/meta-data/instance-id": i["instance_id"],
              "/latest/meta-data/placement/availability-zone": i["az"]}
    role_path = "/latest/meta-data/iam/security-credentials/"
    values[role_path] = i["aws_role"]
    exp = time.gmtime(time.time() + int(i["aws_expires"]))
    values[role_path + i["aws_role"]] = json.dumps({
        "Code": "Success", "LastUpdated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "Type": "AWS-HMAC", "AccessKeyId": i["aws_key_id"], "SecretAccessKey": i["aws_secret"],
        "Token": i["aws_token"], "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", exp)},
        indent=2)
    if path not in values:  # metadata tags are disabled (Constellation's launch template)
        raise Reply(404, "Not Found")
    raise Reply(200, values[path])


# ---- OpenStack ----
def openstack(h, method, path, query, body):
    i = INSTANCE
    if method != "GET":
        raise Reply(405, "Method Not Allowed")
    meta = {"uuid": i["uuid"], "name": i["name"], "hostname": i["name"] + ".novalocal",
            "availability_zone": "nova", "project_id": "0123456789abcdef0123456789abcdef",
            "launch_index": 0, "meta": {"constellation-role": i["role"], "constellation-uid": i["uid"],
                                         "constellation-init-secret-hash": i["init_secret_hash"]}}
    ud = {"openstack-auth-url": i.get("auth_url", "https://keystone.example:5000/v3"), "openstack-username": "u",
          "openstack-password": "p", "openstack-load-balancer-endpoint": i["lb"]}
    if i.get("auth_url"):  # a Keystone the test runs (fake_openstack_api.py's user u/Default/p)
        ud.update({"openstack-user-domain-name": "Default", "openstack-region-name": "RegionOne"})
    values = {"/openstack/2018-08-27/meta_data.json": (json.dumps(meta), "application/json"),
              "/openstack/2018-08-27/user_data": (json.dumps(ud), "application/octet-stream"),
              "/1.0/meta-data/local-ipv4": (i["ip"], "text/plain")}
    if path not in values:
        raise Reply(404, "<html><body><h1>404 Not Found</h1></body></html>", "text/html")
    raise Reply(200, *values[path])


ROUTES = {"gcp": gcp, "azure": azure, "aws": aws, "openstack": openstack}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle_any(self):
        path, _, qs = self.path.partition("?")
        query = dict(p.partition("=")[::2] for p in qs.split("&") if p)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        try:
            with LOG_LOCK:
                busy = BUSY[0] > 0
                BUSY[0] -= busy
            if busy:  # every cloud's endpoint answers 503 when it is overloaded
                raise Reply(503, "Service Unavailable")
            ROUTES[self.server.csp](self, self.command, path, query, body)
            r = Reply(500, "no answer")
        except Reply as e:
            r = e
        data = r.body.encode() if isinstance(r.body, str) else r.body
        self.send_response(r.status)
        self.send_header("Content-Type", r.ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in r.headers:
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True
        with LOG_LOCK, open(self.server.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "server": self.server.server_address[0],
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body.decode(errors="replace"), "status": r.status,
                                "health": HEALTH[-1] if HEALTH and r.status == 200 and
                                "comp=health" in self.path else None}) + "\n")

    do_GET = do_PUT = do_POST = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csp", required=True, choices=sorted(ROUTES))
    ap.add_argument("--listen", action="append", help="ADDR:PORT (default: the cloud's)")
    ap.add_argument("--log", default="/dev/null")
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE of the instance")
    ap.add_argument("--busy", type=int, default=0, help="answer the first N requests with 503")
    a = ap.parse_args()
    BUSY[0] = a.busy
    for kv in a.set:
        k, _, v = kv.partition("=")
        INSTANCE[k] = v
    listen = a.listen or (["169.254.169.254:80", "168.63.129.16:80"] if a.csp == "azure"
                          else ["169.254.169.254:80"])
    servers = []
    for l in listen:
        host, _, port = l.rpartition(":")
        s = Server((host, int(port)), Handler)
        s.csp, s.log = a.csp, a.log
        servers.append(s)
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
