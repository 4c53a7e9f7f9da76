"""A table's pointer read from its catalog, for hosts that name a table by
its catalog entry (the Spark job's ``--catalog``): the catalog's answer,
read each time it is asked, is the fact the planner is given; the planner
judges it. Read-only: nothing here writes to a catalog, and no request
follows a redirect.

``sqlite:PATH`` reads an Iceberg SQL catalog (pyiceberg's and Java's JDBC
schema) in a sqlite file, opened read-only; ``rest:URL[?warehouse=W]`` an
Iceberg REST catalog (``GET /v1/config``, then ``GET
…/namespaces/{ns}/tables/{name}``), with the bearer token in
``LAKESWEEP_REST_TOKEN`` if set. The command line reads more catalogs
(Glue, a Trino or Spark catalog's settings).
"""

import json
import os
import sqlite3
import urllib.error
import urllib.parse
import urllib.request


class CatalogError(ValueError):
    """The catalog could not be read, or does not name the table."""


def catalog_pointer(catalog, table):
    """A function of no arguments that reads ``table`` (``NS.NAME``; a
    namespace of several levels ``A.B.NAME``) from ``catalog`` now and
    returns its metadata location. Raises :class:`CatalogError` (a
    ``ValueError``) for a catalog spelled otherwise, now; the function
    raises it for a catalog that cannot be read or holds no such table."""
    namespace, sep, name = (table or "").rpartition(".")
    if not sep or not namespace or not name:
        raise CatalogError(f"--table {table!r}: give NAMESPACE.NAME")
    kind, sep, where = (catalog or "").partition(":")
    if kind == "sqlite" and sep and where:
        return lambda: _sqlite(where, namespace, name)
    if kind == "rest" and sep and where:
        base, warehouse = _rest_spec(catalog, where)
        return lambda: _rest(base, warehouse, namespace, name)
    raise CatalogError(f"--catalog {catalog!r}: give sqlite:PATH or rest:URL[?warehouse=NAME]")


def _sqlite(path, namespace, name):
    if not os.path.isfile(path):
        raise CatalogError(f"catalog {path}: no such file")
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise CatalogError(f"open catalog {path}: {e}") from None
    try:
        rows = conn.execute(
            "SELECT catalog_name, metadata_location FROM iceberg_tables "
            "WHERE table_namespace = ? AND table_name = ?",
            (namespace, name),
        ).fetchall()
    except sqlite3.Error as e:
        raise CatalogError(f"catalog {path} has no Iceberg SQL catalog schema: {e}") from None
    finally:
        conn.close()
    if not rows:
        raise CatalogError(f"catalog {path} has no table {namespace}.{name}")
    if len(rows) > 1:
        names = ", ".join(c for c, _ in rows)
        raise CatalogError(f"catalog {path}: {namespace}.{name} exists in {len(rows)} catalogs ({names}); ambiguous")
    (c, metadata), = rows
    if not metadata:
        raise CatalogError(f"catalog {path}: {namespace}.{name} (catalog `{c}`) has no metadata location")
    return metadata


def _rest_spec(spec, url):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CatalogError(f"--catalog {spec!r}: rest:URL takes an http:// or https:// URL")
    if "@" in parts.netloc:
        raise CatalogError(f"--catalog {spec!r}: no user or password in the URL; give a token in LAKESWEEP_REST_TOKEN")
    warehouse = None
    if parts.query:
        if not parts.query.startswith("warehouse=") or "&" in parts.query or parts.query == "warehouse=":
            raise CatalogError(f"--catalog {spec!r}: the only query rest:URL takes is ?warehouse=NAME")
        warehouse = urllib.parse.unquote(parts.query[len("warehouse="):])
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, warehouse


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise CatalogError(f"{req.full_url} answered {code}, a redirect to {newurl}: not followed")


def _get(url):
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    token = os.environ.get("LAKESWEEP_REST_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise CatalogError(f"rest catalog: GET {url}: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        if isinstance(e, CatalogError):
            raise
        raise CatalogError(f"rest catalog: GET {url}: {e}") from None


def _segment(s):
    return urllib.parse.quote(s, safe="-._~")


def _field(v, *path):
    """``v[path[0]][path[1]]...`` when every step is an object, else None."""
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return v


def _rest(base, warehouse, namespace, name):
    config = _get(f"{base}/v1/config" + (f"?warehouse={_segment(warehouse)}" if warehouse else ""))
    prefix = _field(config, "overrides", "prefix") or _field(config, "defaults", "prefix") or ""
    if not isinstance(prefix, str):
        raise CatalogError(f"rest catalog {base}: its config names a prefix that is not text: {prefix!r}")
    root = f"{base}/v1/{prefix.strip('/')}" if prefix.strip("/") else f"{base}/v1"
    ns = _segment("\x1f".join(namespace.split(".")))
    v = _get(f"{root}/namespaces/{ns}/tables/{_segment(name)}")
    metadata = _field(v, "metadata-location")
    if not isinstance(metadata, str) or not metadata:
        raise CatalogError(f"rest catalog: {namespace}.{name} has no metadata-location")
    return metadata
