#!/usr/bin/env python3
"""A fake of the AWS control-plane APIs a Constellation node calls, for tests on 127.0.0.1 or
in a network namespace the test makes. One HTTP server answers the three services; which one
a request is for comes from its SigV4 credential scope (ec2, elasticloadbalancing, tagging),
as the real endpoints ec2.<region>.amazonaws.com, elasticloadbalancing.<region>.amazonaws.com
and tagging.<region>.amazonaws.com each accept only their own.

Written from AWS's documentation:
- SigV4: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html and
  https://docs.aws.amazon.com/IAM/latest/UserGuide/signing-elements.html (the date must be
  within 5 minutes of the server's clock; temporary credentials need X-Amz-Security-Token).
  EVERY request's signature is recomputed with an independent implementation, botocore's
  SigV4Auth (Debian's python3-botocore), over the headers the request names in SignedHeaders,
  which must include host and every x-amz-* header sent (X-Amz-Target included).
- EC2 Query API: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Query-Requests.html,
  API_DescribeInstances.html (Filter.N.Name/Filter.N.Value.M with tag:<key>, tag-key,
  instance-state-name, instance-id; InstanceId.N; MaxResults 5..1000 and NextToken, which
  may not be combined with InstanceId), errors-overview.html and
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html#api-error-codes-table-client
  (AuthFailure, SignatureDoesNotMatch, RequestExpired, UnauthorizedOperation 403,
  RequestLimitExceeded 503, the <Response><Errors><Error>... shape, "RequestID"),
  throttling.html (RequestLimitExceeded).
- EC2 DescribeImages: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeImages.html
  (ImageId.N; the response's imagesSet/item with imageId and tpmSupport "v2.0" when the AMI
  has it, absent otherwise; an unknown id is 400 InvalidAMIID.NotFound "The image id
  '[ami-...]' does not exist").
- Resource Groups Tagging API (JSON 1.1):
  https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html
  (X-Amz-Target ResourceGroupsTaggingAPI_20170126.GetResources, Content-Type
  application/x-amz-json-1.1, TagFilters, ResourceTypeFilters, PaginationToken,
  ResourcesPerPage; errors ThrottledException, AccessDeniedException as {"__type", "message"})
  and CommonErrors.html (InvalidSignatureException, ExpiredTokenException,
  UnrecognizedClientException, MissingAuthenticationTokenException: the JSON protocol's names).
- ELBv2: https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeLoadBalancers.html
  (Version 2015-12-01, LoadBalancerArns.member.N, Names.member.N, Marker/NextMarker,
  PageSize; the <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/> shape;
  Throttling 400, AccessDenied 403).

How a failure looks (per protocol, as the real services answer):
  no Authorization           EC2 401 AuthFailure / ELB 403 MissingAuthenticationToken /
                             JSON 400 MissingAuthenticationTokenException
  unknown access key         EC2 401 AuthFailure / ELB 403 InvalidClientTokenId /
                             JSON 400 UnrecognizedClientException
  temporary key, no token    as an unknown key (AWS cannot find the key without its token)
  wrong signature            EC2/ELB 403 SignatureDoesNotMatch / JSON 400 InvalidSignatureException
  token past its Expiration  EC2/ELB 400 ExpiredToken / JSON 400 ExpiredTokenException
  X-Amz-Date off by > 5 min  EC2 400 RequestExpired / ELB 400 SignatureDoesNotMatch ("Signature
                             expired") / JSON 400 InvalidSignatureException
  denied permission          EC2 403 UnauthorizedOperation / ELB 403 AccessDenied /
                             JSON 400 AccessDeniedException
  throttled                  EC2 503 RequestLimitExceeded / ELB 400 Throttling /
                             JSON 400 ThrottledException

State (--state FILE, JSON):
  {"region": "eu-central-1",
   "credentials": [{"AccessKeyId", "SecretAccessKey", "Token" (optional), "Expiration"
                    (optional, RFC 3339 UTC)}],
   "instances": [{"InstanceId", "PrivateIpAddress", "AvailabilityZone", "State",
                  "Tags": {k: v}}],
   "load_balancers": [{"LoadBalancerArn", "LoadBalancerName", "DNSName", "Tags": {k: v}}],
   "images": [{"ImageId", "TpmSupport" (optional, "v2.0")}],
   "deny": ["ec2:DescribeInstances", ...],          IAM permissions the identity lacks
   "throttle": {"ec2:DescribeInstances": 2, ...},   that many first calls are throttled
   "page_size": {"ec2": 5, "tagging": 1, "elb": 1}} a page's cap below what the caller asks
With --tls PEM it serves https (the real endpoints are https only). The port is printed on stdout (--port 0 picks one); every request is one JSON line in --log
(action, status, code, whether the signature verified). No secret is logged.
"""
import argparse
import datetime
import http.server
import json
import socketserver
import sys
import threading
import urllib.parse
import uuid

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
ELB_NS = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"
TAGGING_TARGET = "ResourceGroupsTaggingAPI_20170126."
MAX_BODY = 1 << 20

STATE = {}
LOG = None
LOCK = threading.Lock()
CALLS = {}


def xml_escape(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Fail(Exception):
    def __init__(self, status, code, message):
        super().__init__(code)
        self.status, self.code, self.message = status, code, message


# the error per protocol: (ec2, elb, json)
ERRORS = {
    "missing": ((401, "AuthFailure", "AWS was not able to validate the provided access credentials"),
                (403, "MissingAuthenticationToken", "Request is missing Authentication Token"),
                (400, "MissingAuthenticationTokenException", "Missing Authentication Token")),
    "unknown": ((401, "AuthFailure", "AWS was not able to validate the provided access credentials"),
                (403, "InvalidClientTokenId", "The security token included in the request is invalid."),
                (400, "UnrecognizedClientException", "The security token included in the request is invalid.")),
    "signature": ((403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."),
                  (403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."),
                  (400, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")),
    "expired": ((400, "ExpiredToken", "The security token included in the request is expired"),
                (400, "ExpiredToken", "The security token included in the request is expired"),
                (400, "ExpiredTokenException", "The security token included in the request is expired")),
    "skew": ((400, "RequestExpired", "Request has expired."),
             (400, "SignatureDoesNotMatch", "Signature expired"),
             (400, "InvalidSignatureException", "Signature expired")),
}
PROTO = {"ec2": 0, "elasticloadbalancing": 1, "tagging": 2}


def fail(kind, service):
    status, code, msg = ERRORS[kind][PROTO.get(service, 0)]
    return Fail(status, code, msg)


def parse_auth(value):
    """'AWS4-HMAC-SHA256 Credential=AK/date/region/service/aws4_request, SignedHeaders=a;b,
    Signature=hex' -> dict, or None."""
    if not value.startswith("AWS4-HMAC-SHA256 "):
        return None
    out = {}
    for part in value[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        out[k] = v
    cred = out.get("Credential", "").split("/")
    if len(cred) != 5 or cred[4] != "aws4_request" or "SignedHeaders" not in out \
            or "Signature" not in out:
        return None
    return {"key": cred[0], "date": cred[1], "region": cred[2], "service": cred[3],
            "signed": out["SignedHeaders"].split(";"), "signature": out["Signature"]}


def rfc3339(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


def verify(handler, body):
    """Checks the request's SigV4 with botocore; returns the service, or raises Fail."""
    auth = handler.headers.get("Authorization")
    target = handler.headers.get("X-Amz-Target", "")
    guess = "tagging" if target else "ec2"
    if not auth:
        raise fail("missing", guess)
    a = parse_auth(auth)
    if a is None:
        raise Fail(400, "IncompleteSignature", "Authorization header requires 'Credential', "
                   "'Signature' and 'SignedHeaders' parameters.")
    service = a["service"]
    if service not in PROTO:
        raise Fail(400, "InvalidAction", "unknown service in the credential scope")
    if a["region"] != STATE["region"]:
        raise fail("signature", service)
    cred = next((c for c in STATE["credentials"] if c["AccessKeyId"] == a["key"]), None)
    token = handler.headers.get("X-Amz-Security-Token")
    if cred is None or (cred.get("Token") and token is None):
        raise fail("unknown", service)
    if cred.get("Token") and token != cred["Token"]:
        raise fail("unknown", service)
    amz_date = handler.headers.get("X-Amz-Date", "")
    try:
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        raise Fail(400, "IncompleteSignature", "X-Amz-Date is missing or malformed")
    now = datetime.datetime.now(datetime.timezone.utc)
    if abs((now - when).total_seconds()) > 300:
        raise fail("skew", service)
    if a["date"] != amz_date[:8]:
        raise fail("signature", service)
    # host and every x-amz-* header sent must be signed (create-signed-request.html); the
    # session token may be left out (AWS accepts it either way)
    must = {"host", "x-amz-date"} | {k.lower() for k in handler.headers.keys()
                                     if k.lower().startswith("x-amz-")}
    must.discard("x-amz-security-token")
    if not must <= set(a["signed"]):
        raise fail("signature", service)
    # the headers the caller signed, as received, and nothing else (AWS does the same)
    headers = {}
    for name in a["signed"]:
        vals = handler.headers.get_all(name)
        if vals is None:
            raise fail("signature", service)
        headers[name] = ",".join(vals)
    url = "http://%s%s" % (handler.headers.get("Host", ""), handler.path)
    req = AWSRequest(method=handler.command, url=url, headers=headers, data=body)
    req.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(cred["AccessKeyId"], cred["SecretAccessKey"],
                                   cred.get("Token")), service, STATE["region"])
    canonical = signer.canonical_request(req)
    expect = signer.signature(signer.string_to_sign(req, canonical), req)
    if expect != a["signature"]:
        raise fail("signature", service)
    if cred.get("Expiration") and rfc3339(cred["Expiration"]) <= now:
        raise fail("expired", service)
    return service


def gate(service, permission):
    if permission in STATE.get("deny", []):
        if service == "ec2":
            raise Fail(403, "UnauthorizedOperation",
                       "You are not authorized to perform this operation.")
        if service == "elasticloadbalancing":
            raise Fail(403, "AccessDenied", "User: arn:aws:sts::012345678900:assumed-role/"
                       "constellation-node/i-0 is not authorized to perform: " + permission)
        raise Fail(400, "AccessDeniedException", "User: arn:aws:sts::012345678900:"
                   "assumed-role/constellation-node/i-0 is not authorized to perform: "
                   + permission)
    with LOCK:
        n = CALLS.get(permission, 0)
        CALLS[permission] = n + 1
    if n < STATE.get("throttle", {}).get(permission, 0):
        if service == "ec2":
            raise Fail(503, "RequestLimitExceeded", "Request limit exceeded.")
        if service == "elasticloadbalancing":
            raise Fail(400, "Throttling", "Rate exceeded")
        raise Fail(400, "ThrottledException", "Rate exceeded")


def page(items, token, size):
    start = 0
    if token:
        try:
            start = int(token.split("-", 1)[1])
        except (IndexError, ValueError):
            return None, None
    rest = items[start:start + size]
    nxt = "page-%d" % (start + size) if start + size < len(items) else None
    return rest, nxt


def query_params(handler, body):
    q = urllib.parse.urlsplit(handler.path).query
    params = urllib.parse.parse_qs(q, keep_blank_values=True)
    if handler.command == "POST":
        ctype = handler.headers.get("Content-Type", "")
        if not ctype.startswith("application/x-www-form-urlencoded"):
            raise Fail(400, "InvalidParameterValue", "unsupported Content-Type")
        for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True).items():
            params.setdefault(k, []).extend(v)
    return {k: v[-1] for k, v in params.items()}


def indexed(params, prefix):
    """prefix.1, prefix.2, ... in order (stops at the first gap)."""
    out, i = [], 1
    while "%s.%d" % (prefix, i) in params:
        out.append(params["%s.%d" % (prefix, i)])
        i += 1
    return out


def describe_instances(p):
    if p.get("Version") != "2016-11-15":
        raise Fail(400, "InvalidParameterValue", "Version must be 2016-11-15 here")
    ids = indexed(p, "InstanceId")
    filters = []
    i = 1
    while "Filter.%d.Name" % i in p:
        filters.append((p["Filter.%d.Name" % i], indexed(p, "Filter.%d.Value" % i)))
        i += 1
    max_results = None
    if "MaxResults" in p:
        if ids:
            raise Fail(400, "InvalidParameterCombination",
                       "The parameter instancesSet cannot be used with the parameter maxResults")
        max_results = int(p["MaxResults"])
        if not 5 <= max_results <= 1000:
            raise Fail(400, "InvalidParameterValue",
                       "Value ( %d ) for parameter maxResults is invalid. Expecting a value "
                       "greater than 5." % max_results)
    insts = []
    for inst in STATE["instances"]:
        if ids and inst["InstanceId"] not in ids:
            continue
        ok = True
        for name, values in filters:
            if name.startswith("tag:"):
                v = inst.get("Tags", {}).get(name[4:])
                ok = ok and v is not None and v in values
            elif name == "tag-key":
                ok = ok and any(k in values for k in inst.get("Tags", {}))
            elif name == "instance-state-name":
                ok = ok and inst.get("State", "running") in values
            elif name == "instance-id":
                ok = ok and inst["InstanceId"] in values
            else:
                raise Fail(400, "InvalidParameterValue",
                           "The filter '%s' is invalid" % name)
        if ok:
            insts.append(inst)
    if ids:
        missing = [x for x in ids if x not in [i["InstanceId"] for i in STATE["instances"]]]
        if missing:
            raise Fail(400, "InvalidInstanceID.NotFound",
                       "The instance ID '%s' does not exist" % missing[0])
    size = len(insts) or 1
    if max_results:
        size = min(max_results, STATE.get("page_size", {}).get("ec2", max_results))
    got, nxt = page(insts, p.get("NextToken"), size)
    if got is None:
        raise Fail(400, "InvalidParameterValue", "Invalid value for NextToken")
    items = []
    for inst in got:
        tags = "".join("<item><key>%s</key><value>%s</value></item>" % (xml_escape(k),
                                                                         xml_escape(v))
                       for k, v in inst.get("Tags", {}).items())
        state = inst.get("State", "running")
        code = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48,
                "stopping": 64, "stopped": 80}[state]
        items.append(
            "<item><reservationId>r-%s</reservationId><ownerId>012345678900</ownerId>"
            "<groupSet/><instancesSet><item><instanceId>%s</instanceId>"
            "<imageId>ami-0123456789abcdef0</imageId><instanceState><code>%d</code>"
            "<name>%s</name></instanceState><privateDnsName>ip-%s.ec2.internal"
            "</privateDnsName><instanceType>m6a.xlarge</instanceType><placement>"
            "<availabilityZone>%s</availabilityZone><groupName/><tenancy>default</tenancy>"
            "</placement><privateIpAddress>%s</privateIpAddress><tagSet>%s</tagSet>"
            "</item></instancesSet></item>"
            % (inst["InstanceId"][2:], xml_escape(inst["InstanceId"]), code, state,
               inst.get("PrivateIpAddress", "").replace(".", "-"),
               xml_escape(inst.get("AvailabilityZone", STATE["region"] + "a")),
               xml_escape(inst.get("PrivateIpAddress", "")), tags))
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<DescribeInstancesResponse xmlns="%s">'
            "<requestId>%s</requestId><reservationSet>%s</reservationSet>%s"
            "</DescribeInstancesResponse>"
            % (EC2_NS, uuid.uuid4(), "".join(items),
               "<nextToken>%s</nextToken>" % nxt if nxt else ""))
    return 200, "text/xml;charset=UTF-8", body.encode()


def describe_images(p):
    if p.get("Version") != "2016-11-15":
        raise Fail(400, "InvalidParameterValue", "Version must be 2016-11-15 here")
    ids = indexed(p, "ImageId")
    known = {i["ImageId"]: i for i in STATE.get("images", [])}
    for x in ids:
        if x not in known:
            raise Fail(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist" % x)
    items = "".join(
        "<item><imageId>%s</imageId><imageState>available</imageState>"
        "<imageOwnerId>012345678900</imageOwnerId><isPublic>false</isPublic>"
        "<architecture>x86_64</architecture><imageType>machine</imageType>"
        "<blockDeviceMapping><item><deviceName>/dev/xvda</deviceName></item></blockDeviceMapping>"
        "%s<bootMode>uefi</bootMode></item>"
        % (xml_escape(i["ImageId"]),
           "<tpmSupport>%s</tpmSupport>" % xml_escape(i["TpmSupport"]) if i.get("TpmSupport") else "")
        for i in (known[x] for x in ids))
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<DescribeImagesResponse xmlns="%s">'
            "<requestId>%s</requestId><imagesSet>%s</imagesSet></DescribeImagesResponse>"
            % (EC2_NS, uuid.uuid4(), items))
    return 200, "text/xml;charset=UTF-8", body.encode()


def describe_load_balancers(p):
    if p.get("Version") != "2015-12-01":
        raise Fail(400, "InvalidAction", "Could not find operation DescribeLoadBalancers "
                   "for version %s" % p.get("Version"))
    arns = indexed(p, "LoadBalancerArns.member")
    names = indexed(p, "Names.member")
    lbs = [lb for lb in STATE["load_balancers"]
           if (not arns or lb["LoadBalancerArn"] in arns)
           and (not names or lb["LoadBalancerName"] in names)]
    for a in arns:
        if a not in [lb["LoadBalancerArn"] for lb in STATE["load_balancers"]]:
            raise Fail(400, "LoadBalancerNotFound",
                       "One or more load balancers not found")
    size = int(p.get("PageSize", "400"))
    size = min(size, STATE.get("page_size", {}).get("elb", size))
    got, nxt = page(lbs, p.get("Marker"), size)
    if got is None:
        raise Fail(400, "ValidationError", "Invalid Marker")
    members = "".join(
        "<member><LoadBalancerArn>%s</LoadBalancerArn><DNSName>%s</DNSName>"
        "<LoadBalancerName>%s</LoadBalancerName><Scheme>internet-facing</Scheme>"
        "<Type>network</Type><State><Code>active</Code></State><IpAddressType>ipv4"
        "</IpAddressType></member>" % (xml_escape(lb["LoadBalancerArn"]),
                                       xml_escape(lb["DNSName"]),
                                       xml_escape(lb["LoadBalancerName"])) for lb in got)
    body = ('<DescribeLoadBalancersResponse xmlns="%s"><DescribeLoadBalancersResult>'
            "<LoadBalancers>%s</LoadBalancers>%s</DescribeLoadBalancersResult>"
            "<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>"
            "</DescribeLoadBalancersResponse>"
            % (ELB_NS, members, "<NextMarker>%s</NextMarker>" % nxt if nxt else "",
               uuid.uuid4()))
    return 200, "text/xml", body.encode()


def get_resources(req):
    tag_filters = req.get("TagFilters", [])
    types = req.get("ResourceTypeFilters", [])
    res = []
    for lb in STATE["load_balancers"]:
        if types and "elasticloadbalancing:loadbalancer" not in types:
            continue
        ok = all(f["Key"] in lb.get("Tags", {}) and
                 (not f.get("Values") or lb["Tags"][f["Key"]] in f["Values"])
                 for f in tag_filters)
        if ok:
            res.append({"ResourceARN": lb["LoadBalancerArn"],
                        "Tags": [{"Key": k, "Value": v} for k, v in lb["Tags"].items()]})
    size = int(req.get("ResourcesPerPage", 100))
    size = min(size, STATE.get("page_size", {}).get("tagging", size))
    got, nxt = page(res, req.get("PaginationToken"), size)
    if got is None:
        raise Fail(400, "InvalidParameterException", "PaginationToken is invalid")
    return 200, "application/x-amz-json-1.1", json.dumps(
        {"PaginationToken": nxt or "", "ResourceTagMappingList": got}).encode()


def error_body(service, e):
    rid = str(uuid.uuid4())
    if service == "tagging":
        return "application/x-amz-json-1.1", json.dumps(
            {"__type": e.code, "message": e.message}).encode()
    if service == "elasticloadbalancing":
        return "text/xml", ('<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s'
                            "</Code><Message>%s</Message></Error><RequestId>%s</RequestId>"
                            "</ErrorResponse>" % (ELB_NS, e.code, xml_escape(e.message),
                                                  rid)).encode()
    return "text/xml;charset=UTF-8", (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
        "<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>"
        % (e.code, xml_escape(e.message), rid)).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        if n > MAX_BODY:
            self.answer(413, "text/plain", b"too large", {})
            return
        body = self.rfile.read(n) if n else b""
        service = "tagging" if self.headers.get("X-Amz-Target") else "ec2"
        rec = {"method": self.command, "path": self.path, "verified": False}
        try:
            service = verify(self, body)
            rec["verified"] = True
            rec["service"] = service
            if service == "tagging":
                target = self.headers.get("X-Amz-Target", "")
                rec["action"] = target
                if self.command != "POST" or target != TAGGING_TARGET + "GetResources":
                    raise Fail(400, "UnknownOperationException", "Unknown operation")
                if not self.headers.get("Content-Type", "").startswith(
                        "application/x-amz-json-1.1"):
                    raise Fail(400, "SerializationException", "bad Content-Type")
                gate(service, "tag:GetResources")
                try:
                    req = json.loads(body or b"{}")
                except ValueError:
                    raise Fail(400, "SerializationException", "body is not JSON")
                status, ctype, out = get_resources(req)
            else:
                p = query_params(self, body)
                rec["action"] = p.get("Action")
                if service == "ec2" and p.get("Action") == "DescribeInstances":
                    gate(service, "ec2:DescribeInstances")
                    status, ctype, out = describe_instances(p)
                elif service == "ec2" and p.get("Action") == "DescribeImages":
                    gate(service, "ec2:DescribeImages")
                    status, ctype, out = describe_images(p)
                elif service == "elasticloadbalancing" and \
                        p.get("Action") == "DescribeLoadBalancers":
                    gate(service, "elasticloadbalancing:DescribeLoadBalancers")
                    status, ctype, out = describe_load_balancers(p)
                else:
                    raise Fail(400, "InvalidAction", "The action %s is not valid for this "
                               "web service." % p.get("Action"))
        except Fail as e:
            status = e.status
            ctype, out = error_body(service, e)
            rec["code"] = e.code
        rec["status"] = status
        extra = {}
        if service == "tagging" and status != 200:
            extra["x-amzn-ErrorType"] = rec.get("code", "")
        self.answer(status, ctype, out, extra)
        if LOG:
            with LOCK:
                LOG.write(json.dumps(rec) + "\n")
                LOG.flush()

    def answer(self, status, ctype, out, extra):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    do_GET = handle_any
    do_POST = handle_any


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
    ap.add_argument("--tls", help="PEM with the certificate and its key: serve https")
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
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
