#!/usr/bin/env python3
"""Fake of GCE's instances.getShieldedInstanceIdentity, for the gcp-sev-es validator's tests, on
the address the test gives (127.0.0.1).

Written from the Compute Engine API reference:
https://cloud.google.com/compute/docs/reference/rest/v1/instances/getShieldedInstanceIdentity
(GET https://compute.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{resource}/getShieldedInstanceIdentity;
the response is a ShieldedInstanceIdentity: {"kind": "compute#shieldedInstanceIdentity",
"signingKey": {"ekCert", "ekPub"}, "encryptionKey": {"ekCert", "ekPub"}}, ekPub a PEM public
key) and https://cloud.google.com/apis/design/errors (the error body
{"error": {"code", "message", "errors": [...], "status"}}). Like the real API it demands an
OAuth access token ("Authorization: Bearer ...", else 401 UNAUTHENTICATED), answers 404 for an
instance it does not know and 405 for another method.

  fake_gce_shielded.py --listen 127.0.0.1:PORT --token TOKEN \
      --instance PROJECT/ZONE/NAME=SIGNING_KEY_PEM_FILE [...] [--log FILE]
"""
import argparse
import http.server
import json
import re
import socketserver
import sys

ROUTE = re.compile(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)/getShieldedInstanceIdentity$")


def error(code, status, message, reason):
    return code, {"error": {"code": code, "message": message,
                            "errors": [{"message": message, "domain": "global", "reason": reason}],
                            "status": status}}


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with open(self.server.log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "status": code,
                                "authorization": bool(self.headers.get("Authorization"))}) + "\n")

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer " + self.server.token:
            return self.answer(*error(401, "UNAUTHENTICATED",
                                      "Request is missing required authentication credential.",
                                      "required"))
        m = ROUTE.match(self.path.split("?")[0])
        if not m:
            return self.answer(*error(404, "NOT_FOUND", "The requested URL was not found.", "notFound"))
        key = self.server.instances.get(m.groups())
        if key is None:
            return self.answer(*error(404, "NOT_FOUND", "The resource 'projects/%s/zones/%s/instances/%s' was not found" % m.groups(), "notFound"))
        return self.answer(200, {"kind": "compute#shieldedInstanceIdentity",
                                 "signingKey": {"ekPub": key},
                                 "encryptionKey": {"ekPub": key}})

    def do_POST(self):
        self.answer(*error(405, "METHOD_NOT_ALLOWED", "Method not allowed.", "methodNotAllowed"))

    def log_message(self, *a):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--instance", action="append", default=[])
    ap.add_argument("--log", default="/dev/null")
    a = ap.parse_args()
    host, _, port = a.listen.rpartition(":")
    s = Server((host, int(port)), Handler)
    s.token = a.token
    s.log = a.log
    s.instances = {}
    for i in a.instance:
        name, _, path = i.partition("=")
        with open(path) as f:
            s.instances[tuple(name.split("/"))] = f.read()
    print("listening on %s (port %d)" % (a.listen, s.server_address[1]), flush=True)
    s.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
