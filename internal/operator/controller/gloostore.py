"""Gloo's HTTP store of one PaddleJob, served beside its first parameter server.

Paddle's role maker (PADDLE_GLOO_RENDEZVOUS=3) keeps the rendezvous keys of
the workers' Gloo group here: PUT /<scope>/<key> stores a value, GET returns
it (404 until a rank has stored it), DELETE is a rank saying it is done with
the store and changes nothing. Values stay as long as the pod. Only the
Python standard library: this runs in the job's own Paddle image.
"""

import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

VALUES = {}
LOCK = threading.Lock()


class Store(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Handler(BaseHTTPRequestHandler):
    def _key(self):
        parts = self.path.split("/")
        if len(parts) != 3 or not parts[1] or not parts[2]:
            self._reply(400)
            return None
        return parts[1], parts[2]

    def _reply(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        key = self._key()
        if key is not None:
            with LOCK:
                value = VALUES.get(key)
            if value is None:
                self._reply(404)
            else:
                self._reply(200, value)

    def do_PUT(self):
        key = self._key()
        if key is not None:
            value = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with LOCK:
                VALUES[key] = value
            self._reply(200)

    def do_DELETE(self):
        if self._key() is not None:
            self._reply(200)

    def log_message(self, format, *args):
        pass


def main():
    port = int(sys.argv[1])
    # The kubelet stops this sidecar with SIGTERM once the pod's training
    # containers are done: that is a clean end, not a failure.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = Store(("", port), Handler)
    print("Gloo HTTP store listening on port %d" % server.server_address[1], flush=True)
    server.serve_forever()


main()
