"""An HTTP proxy on 127.0.0.1 that holds every request a fixed time before
passing it on: the round trip a real object store's endpoint takes, which
loopback otherwise hides. It records every request's start and end, so a
bench can read how many were in flight and how fast a listing went.

    proxy = LatencyProxy("http://127.0.0.1:5000", delay_s=0.05).start()
    ... point the client at proxy.endpoint ...
    proxy.listing_rate()   # LIST requests: objects/s, requests in flight
    proxy.stop()

Requests are forwarded as they came (method, path, query, headers and
body; a client signing for the proxy's host name signs `127.0.0.1:port`,
which the upstream server does not check), one upstream connection per
proxy thread. Redirects are passed back, never followed.
"""
import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class LatencyProxy:
    def __init__(self, upstream, delay_s):
        u = urlsplit(upstream)
        self.host, self.port = u.hostname, u.port
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.log = []  # (start, end, method, path, status, response bytes)
        self.server = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self):
        proxy = self
        local = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _forward(self):
                started = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                time.sleep(proxy.delay_s)
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=300)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                except (http.client.HTTPException, OSError):
                    local.conn = None
                    conn.close()
                    self.send_error(502)
                    return
                self.send_response(r.status, r.reason)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # A HEAD's length is the object's, not the (empty) body's.
                length = r.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                with proxy.lock:
                    proxy.log.append((started, time.monotonic(), self.command, self.path, r.status, len(data)))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def reset(self):
        with self.lock:
            self.log = []

    def lists(self):
        """The ListObjectsV2 requests recorded: (start, end)."""
        with self.lock:
            return [(s, e) for s, e, m, p, _, _ in self.log if m == "GET" and "list-type=2" in p]

    def listing_rate(self, objects):
        """For `objects` listed by the LIST requests recorded: (requests,
        span in seconds from the first's start to the last's end, objects
        per second over that span, mean requests in flight over it)."""
        spans = self.lists()
        if not spans:
            return 0, 0.0, 0.0, 0.0
        first = min(s for s, _ in spans)
        last = max(e for _, e in spans)
        span = max(last - first, 1e-9)
        busy = sum(e - s for s, e in spans)
        return len(spans), span, objects / span, busy / span
