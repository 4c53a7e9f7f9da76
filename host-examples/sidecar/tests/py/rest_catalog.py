"""An Iceberg REST catalog on 127.0.0.1 for the sidecar's catalog tests.

No REST catalog server installs from the package registries, so this is
the protocol's table routes in front of pyiceberg's own SqlCatalog: loading
a table, listing a namespace, and committing a CommitTableRequest are
pyiceberg's (its requirement checks, its metadata writer, its SQL
compare-and-set), only the HTTP framing is here.

Usage: rest_catalog.py DIR [TOKEN]
  serves the SqlCatalog in DIR/catalog.db (as iceberg_table.py writes it)
  under the prefix `wh`; prints {"port": N} once listening. With TOKEN,
  every request must carry `Authorization: Bearer TOKEN`.
  POST /test/fail-next-commit: the next commit is applied, then answered
  503 (a commit whose outcome the client cannot know).
  POST /test/conflict-next-commit: the next commit is applied, then
  answered 409 (what a gateway's retry of a commit that landed gets).
  POST /test/drop-next-commit: the next commit is not applied, and
  answered 503.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table import CommitTableRequest

PREFIX = "/v1/wh/namespaces/"
state = {"next": None}
lock = threading.Lock()


def catalog(d):
    return SqlCatalog(
        "lakesweep", uri=f"sqlite:///{d}/catalog.db", warehouse=f"file://{d}/warehouse"
    )


def error(code, kind, message):
    return code, {"error": {"message": message, "type": kind, "code": code}}


def route(cat, method, path, body):
    if method == "GET" and path == "/v1/config":
        return 200, {"defaults": {}, "overrides": {"prefix": "wh"}}
    for mode in ("fail", "conflict", "drop"):
        if method == "POST" and path == f"/test/{mode}-next-commit":
            state["next"] = mode
            return 200, {}
    if not path.startswith(PREFIX):
        return error(404, "NotFound", f"no route {path}")
    parts = path[len(PREFIX):].split("/")
    ns = tuple(unquote(parts[0]).split("\x1f"))
    if len(parts) == 2 and parts[1] == "tables" and method == "GET":
        ids = [{"namespace": list(i[:-1]), "name": i[-1]} for i in cat.list_tables(ns)]
        return 200, {"identifiers": ids}
    if len(parts) != 3 or parts[1] != "tables":
        return error(404, "NotFound", f"no route {path}")
    ident = ns + (unquote(parts[2]),)
    try:
        table = cat.load_table(ident)
    except NoSuchTableError as e:
        return error(404, "NoSuchTableException", str(e))
    if method == "GET":
        return 200, {
            "metadata-location": table.metadata_location,
            "metadata": json.loads(table.metadata.model_dump_json(by_alias=True)),
        }
    if method == "POST":
        req = CommitTableRequest.model_validate_json(body)
        mode, state["next"] = state["next"], None
        if mode == "drop":
            return error(503, "ServiceUnavailable", "not applied")
        try:
            with lock:
                r = cat.commit_table(table, req.requirements, req.updates)
        except CommitFailedException as e:
            return error(409, "CommitFailedException", str(e))
        if mode == "fail":
            return error(503, "ServiceUnavailable", "applied, then failed to answer")
        if mode == "conflict":
            return error(409, "CommitFailedException", "a retry of a commit that landed")
        return 200, {
            "metadata-location": r.metadata_location,
            "metadata": json.loads(r.metadata.model_dump_json(by_alias=True)),
        }
    return error(405, "MethodNotAllowed", method)


def main():
    d = sys.argv[1]
    token = sys.argv[2] if len(sys.argv) > 2 else None
    cat = catalog(d)

    class Handler(BaseHTTPRequestHandler):
        def answer(self, method):
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                code, out = error(401, "NotAuthorizedException", "bad token")
            else:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                try:
                    code, out = route(cat, method, urlparse(self.path).path, body)
                except Exception as e:  # a bad request is the client's to see
                    code, out = error(400, "BadRequestException", repr(e))
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.answer("GET")

        def do_POST(self):
            self.answer("POST")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
