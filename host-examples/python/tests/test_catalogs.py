"""The pointer read from a catalog (``lakesweep.catalog_pointer``): a
pyiceberg table in an Iceberg SQL catalog (sqlite), read directly and
through a REST catalog on 127.0.0.1 (the sidecar's test server: the REST
routes in front of pyiceberg's SqlCatalog), with and without its bearer
token; a catalog spelled otherwise is refused before anything is read."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import lakesweep

REPO = Path(__file__).resolve().parents[3]
PY = REPO / "host-examples/sidecar/tests/py"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("catalog")
    r = subprocess.run([sys.executable, str(PY / "iceberg_table.py"), "write", str(d)],
                       capture_output=True, text=True, check=True)
    info = subprocess.run([sys.executable, str(PY / "iceberg_table.py"), "write-info", str(d)],
                          capture_output=True, text=True, check=True)
    return d, json.loads(info.stdout), r


def serve(d, token=None):
    p = subprocess.Popen([sys.executable, str(PY / "rest_catalog.py"), str(d), *([token] if token else [])],
                         stdout=subprocess.PIPE, text=True)
    port = json.loads(p.stdout.readline())["port"]
    return p, f"http://127.0.0.1:{port}"


def test_the_sql_catalog_names_the_current_metadata(table):
    d, info, _ = table
    pointer = lakesweep.catalog_pointer(f"sqlite:{d}/catalog.db", "demo.t")
    assert pointer() == info["metadata_location"]
    with pytest.raises(lakesweep.CatalogError, match="has no table demo.nope"):
        lakesweep.catalog_pointer(f"sqlite:{d}/catalog.db", "demo.nope")()
    with pytest.raises(lakesweep.CatalogError, match="has no Iceberg SQL catalog schema"):
        empty = d / "empty.db"
        empty.write_bytes(b"")
        lakesweep.catalog_pointer(f"sqlite:{empty}", "demo.t")()


def test_the_rest_catalog_names_the_current_metadata_with_its_token(table, monkeypatch):
    d, info, _ = table
    p, url = serve(d, "s3cr3t")
    try:
        pointer = lakesweep.catalog_pointer(f"rest:{url}", "demo.t")
        monkeypatch.delenv("LAKESWEEP_REST_TOKEN", raising=False)
        with pytest.raises(lakesweep.CatalogError, match="HTTP 401"):
            pointer()
        monkeypatch.setenv("LAKESWEEP_REST_TOKEN", "s3cr3t")
        assert pointer() == info["metadata_location"]
        with pytest.raises(lakesweep.CatalogError, match="HTTP 404"):
            lakesweep.catalog_pointer(f"rest:{url}", "demo.nope")()
    finally:
        p.terminate()
        p.wait()


@pytest.mark.parametrize("catalog, table, why", [
    ("glue", "demo.t", "give sqlite:PATH or rest:URL"),
    ("rest:ftp://h/x", "demo.t", "http:// or https://"),
    ("rest:http://u:p@h/x", "demo.t", "no user or password"),
    ("rest:http://h/x?w=1", "demo.t", "only query"),
    ("sqlite:/x.db", "t", "NAMESPACE.NAME"),
])
def test_a_catalog_spelled_otherwise_is_refused_before_anything_is_read(catalog, table, why):
    with pytest.raises(lakesweep.CatalogError, match=why):
        lakesweep.catalog_pointer(catalog, table)
