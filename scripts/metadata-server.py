#!/usr/bin/python3
"""Serves a directory as a cloud metadata service for the e2e boots:
a file's content for a file, and for a directory its entries one per
line (directories with a trailing slash), which is how the OpenStack and
EC2 services list versions and keys. Usage: metadata-server.py DIR ADDR PORT
"""
import http.server
import os
import sys

ROOT, ADDR, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        rel = os.path.normpath(self.path.split("?")[0]).lstrip("/")
        path = os.path.realpath(os.path.join(ROOT, rel))
        if not path.startswith(os.path.realpath(ROOT)):
            self.send_error(403)
            return
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            body = "\n".join(n + ("/" if os.path.isdir(os.path.join(path, n)) else "") for n in names).encode()
        elif os.path.isfile(path):
            with open(path, "rb") as f:
                body = f.read()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("metadata: " + (fmt % args) + "\n")


http.server.ThreadingHTTPServer((ADDR, PORT), Handler).serve_forever()
