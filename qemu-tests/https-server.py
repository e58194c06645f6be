#!/usr/bin/env python3
"""The components server of the whole-node boots: HTTPS on 127.0.0.1 with a certificate of the
run's throwaway CA (qemu-tests/lib-node.sh makes both), serving one folder. The guest reaches
it through a guestfwd rule, under a host name of the test root's /etc/hosts.

  GET /redirect/N/PATH   302 to /redirect/N-1/PATH (absolute https URL, the request's Host),
                         and /redirect/1/PATH to /PATH: a chain of N redirects
  GET /PATH              the file

Each request is one log line on stderr with the server name the client sent (SNI), so a test
can check the client named the host. Prints "port N" on stdout once it listens.
"""
import argparse
import http.server
import os
import re
import ssl
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--root", required=True, help="the folder served")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--bind", default="127.0.0.1", help="the address (a network namespace's)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kw):
            super().__init__(*args, directory=root, **kw)

        def do_GET(self):
            m = re.match(r"/redirect/(\d{1,3})/(.*)", self.path)
            if m:
                n, rest = int(m.group(1)), m.group(2)
                loc = "/%s" % rest if n <= 1 else "/redirect/%d/%s" % (n - 1, rest)
                self.send_response(302)
                self.send_header("Location", "https://%s%s" % (self.headers.get("Host", ""), loc))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, fmt, *args):
            sys.stderr.write("%s sni=%s %s\n" % (self.address_string(),
                                                 getattr(self.connection, "sni", "-"),
                                                 fmt % args))
            sys.stderr.flush()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)

    def on_sni(sock, name, _ctx):
        sock.sni = name or "-"  # the SSLSocket of this connection

    ctx.sni_callback = on_sni
    srv = http.server.ThreadingHTTPServer((a.bind, a.port), Handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
