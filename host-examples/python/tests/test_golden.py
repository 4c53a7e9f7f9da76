"""The component in wasmtime-py plans every fixture table byte for byte as
the native core pinned it (``tests/golden/`` at the repository root), and
its policy check and refusals are the planner's own. The fixtures are
staged into a scratch folder with the modification times their
generators recorded, and served under the neutral roots the pins use."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import lakesweep
from lakesweep import ArrowStore, LocalStore, PlanRefused

REPO = Path(__file__).resolve().parents[3]
VROOT = "file:///lakesweep-fixtures"
VDELTA = "file:///lakesweep-delta-fixtures"
DAY = 86_400_000
# The sidecar scripts/test.sh built (LAKESWEEP_SIDECAR), else the default target folder.
SIDECAR = Path(os.environ.get("LAKESWEEP_SIDECAR") or REPO / "target/debug/lakesweep")


def golden(name):
    return (REPO / "tests/golden" / f"{name}.json").read_text().removesuffix("\n")


def stage(src, dst, tables):
    shutil.copytree(src, dst)
    for table_dir, mtimes in tables.items():
        for rel, ms in mtimes.items():
            ns = ms * 1_000_000
            os.utime(dst / table_dir / rel, ns=(ns, ns))
    return dst


def test_iceberg_plans_and_expiry_plans_equal_the_native_pins(tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    tables = {t["location"][len(VROOT) + 1:]: t["mtimes"] for t in expect.values()}
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", tables)
    for name, t in expect.items():
        store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda t=t: t["metadata_location"])
        for suffix, now in (("", t["now_ms"]), ("-later", t["now_ms"] + 365 * DAY)):
            p = lakesweep.plan(
                t["location"], t["metadata_location"], now, store=store, retention_ms=t["file_retention_ms"]
            )
            assert p.document == golden(f"iceberg-{name}{suffix}"), f"iceberg-{name}{suffix}"
        md = store.read(t["metadata_location"])
        held = '{"holds": [{"scope": "table", "generation": 3, "reason": "audit"}]}'
        for suffix, days, ctx in (("", 0, "{}"), ("-400d", 400, "{}"), ("-400d-held", 400, held)):
            e = lakesweep.plan_expiry(t["metadata_location"], md, t["now_ms"] + days * DAY, context=ctx)
            assert e.document == golden(f"expiry-{name}{suffix}"), f"expiry-{name}{suffix}"


def test_delta_plans_equal_the_native_pins(tmp_path):
    expect = json.loads((REPO / "tests/fixtures/delta/expect.json").read_text())
    root = stage(REPO / "tests/fixtures/delta", tmp_path / "delta", {n: t["mtimes"] for n, t in expect.items()})
    store = LocalStore(roots=[(VDELTA, str(root))])
    for pin, name, days, extra in (
        ("delta-events-1d", "events", 1, {}),
        ("delta-events-8d", "events", 8, {}),
        ("delta-events-40d-log-cleanup", "events", 40, {"log_cleanup": True}),
        ("delta-events-40d-keep-version-2", "events", 40, {"log_cleanup": True, "keep_versions": [2]}),
        ("delta-simple-8d", "simple", 8, {}),
    ):
        now = expect[name]["generated_at_ms"] + days * DAY
        p = lakesweep.plan(f"{VDELTA}/{name}", None, now, store=store, format="delta", **extra)
        assert p.document == golden(pin), pin


def test_a_refusal_is_the_planners_typed_error():
    with pytest.raises(PlanRefused) as e:
        lakesweep.plan("file:///nonexistent/t", "file:///nonexistent/t/metadata/v1.metadata.json", 0)
    assert e.value.kind in ("unsafe", "malformed"), e.value


def test_a_policy_is_checked_by_the_planner():
    good = json.dumps(
        {
            "schema": "lakehouseRetentionPolicy.v1",
            "binding": {"tableUuid": "dca9bf3b-550a-49d3-acf7-5257a503bc7e", "format": "iceberg"},
            "snapshotRetention": {"retainLast": 2, "protectedRefs": ["main"]},
            "fileRetention": {"orphanSafetyInterval": "3d", "maxWriterDuration": "6h"},
        }
    )
    r = lakesweep.check_policy(good)
    assert r["errors"] == [] and len(r["digest"]) == 64
    bad = json.loads(good)
    bad["fileRetention"]["maxWriterDuration"] = "5d"
    r = lakesweep.check_policy(json.dumps(bad))
    assert any("orphanSafetyInterval" in f for f, _ in r["errors"]), r
    assert lakesweep.check_policy(bad) == r, "a dict is the same document"


def test_the_sidecar_plans_the_staged_demo_table_the_same(tmp_path):
    """The sidecar (the component in Rust's wasmtime) and this package on
    the same staged table at the same time: the same deletes, tokens and
    summary (the sidecar's plan also seals how it was made)."""
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    table = root / "warehouse/demo/events"
    local = f"file://{table}"
    mapping = (t["location"], local)
    p = lakesweep.plan(local, t["metadata_location"], t["now_ms"], location_map=[mapping])
    binary = SIDECAR
    assert binary.exists(), f"{binary} is missing: build the sidecar first (scripts/test.sh does)"
    out = subprocess.run(
        [str(binary), "plan", str(table), "--metadata", t["metadata_location"], "--location-map",
         f"{mapping[0]}={mapping[1]}", "--now", str(t["now_ms"]), "--json"],
        capture_output=True, text=True,
        # Every file stat-ed, as this package lists: the summaries' byte
        # tallies then count the referenced files too (by names, the
        # sidecar leaves their sizes unread).
        env={**os.environ, "LAKESWEEP_WASM": str(REPO / "target/lakesweep.wasm"), "LAKESWEEP_LOCAL_LISTING": "stat"},
    )
    assert out.returncode == 0, out.stderr
    side = json.loads(out.stdout)
    mine = json.loads(p.document)
    for key in ("delete", "tokens", "summary", "warnings"):
        assert side[key] == mine[key], key
    assert p.to_arrow().num_rows == len(mine["delete"])
    # Sealed with the sidecar's record of how it was made, the plan is the
    # sidecar's to the digest (its report for people lies outside the seal).
    same = lakesweep.plan(local, t["metadata_location"], t["now_ms"], location_map=[mapping], origin=side["origin"])
    del side["report"]
    assert json.loads(same.document) == side


def test_a_table_on_s3_through_pyarrow_fs_plans_as_the_sidecar_does(tmp_path):
    """moto's S3 server on 127.0.0.1 (scripts/test.sh installs it): the
    fixture table uploaded, planned through ``pyarrow.fs.S3FileSystem`` and
    by the sidecar at the same time. The same keys go, with the same sizes,
    and the summaries agree; pyarrow's listing carries no ETag, so this
    plan pins size and time only (the sidecar's also pins the ETag)."""
    import re
    import boto3
    import pyarrow.fs as pafs

    import time

    log = tmp_path / "moto.log"
    with open(log, "w") as sink:  # a file, not a pipe: moto logs every request
        moto = subprocess.Popen(
            ["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"], stdout=subprocess.DEVNULL, stderr=sink
        )
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            m = re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text())
            port = m.group(1) if m else time.sleep(0.1)
        assert port, "moto did not say its port (pip install 'moto[server]')"
        endpoint = f"http://127.0.0.1:{port}"
        creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
        s3 = boto3.client("s3", endpoint_url=endpoint, **creds)
        s3.create_bucket(Bucket="lakesweep-py")
        src = REPO / "tests/fixtures/generated/warehouse/demo/events"
        for f in src.rglob("*"):
            if f.is_file():
                s3.put_object(Bucket="lakesweep-py", Key=f"events/{f.relative_to(src).as_posix()}", Body=f.read_bytes())
        expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
        t = expect["events"]
        now = int(time.time() * 1000) + 30 * DAY
        table = "s3://lakesweep-py/events"
        fs = pafs.S3FileSystem(
            endpoint_override=endpoint, scheme="http", access_key="testing", secret_key="testing", region="us-east-1"
        )
        p = lakesweep.plan(
            table, t["metadata_location"], now, store=ArrowStore(fs, pointer=lambda: t["metadata_location"]), location_map=[(t["location"], table)]
        )
        binary = SIDECAR
        assert binary.exists(), f"{binary} is missing: build the sidecar first (scripts/test.sh does)"
        out = subprocess.run(
            [str(binary), "plan", table, "--metadata", t["metadata_location"], "--location-map",
             f"{t['location']}={table}", "--now", str(now), "--json"],
            capture_output=True, text=True,
            env={**os.environ, "LAKESWEEP_WASM": str(REPO / "target/lakesweep.wasm"), "AWS_ENDPOINT_URL": endpoint,
                 "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                 "AWS_ALLOW_HTTP": "true"},
        )
        assert out.returncode == 0, out.stderr
        side = json.loads(out.stdout)
        assert [(d["key"], d["size"]) for d in side["delete"]] == p.delete
        assert side["summary"] == p.summary
        assert p.delete, "the planted orphans go"
    finally:
        moto.kill()
        moto.wait()


def test_pyarrow_keys_that_cannot_be_spelled_exactly_refuse():
    """pyarrow trims a trailing `/`: a key and its `key/` twin come back as
    one name twice, and a key with an empty segment cannot be addressed."""
    import pyarrow.fs as pafs

    class Listing:
        type_name = "s3"

        def __init__(self, paths):
            self.paths = paths

        def get_file_info(self, _selector):
            return [pafs.FileInfo(p, type=pafs.FileType.File, size=1, mtime_ns=0) for p in self.paths]

    ok = list(ArrowStore(Listing(["b/t/a", "b/t/c"])).list("s3://b/t/"))
    assert [k for page in ok for k, *_ in page] == ["s3://b/t/a", "s3://b/t/c"]
    for paths in (["b/t/x", "b/t/x"], ["b/t//y"]):
        with pytest.raises(ValueError):
            list(ArrowStore(Listing(paths)).list("s3://b/t/"))
