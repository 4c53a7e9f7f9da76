"""The Spark host on local[2] (pyspark from PyPI): the listing of the
fixture tables spread over executors, classified there with the broadcast
keep set, sealed on the driver, gives byte for byte the plans the native
core pinned (tests/golden/); a foreign table's metadata found by an
executor stops the job."""

import json
import os
import shutil
from pathlib import Path

import pytest

from lakesweep_spark import plan

REPO = Path(__file__).resolve().parents[2]
VROOT = "file:///lakesweep-fixtures"
VDELTA = "file:///lakesweep-delta-fixtures"
DAY = 86_400_000


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("lakesweep-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    yield s
    s.stop()


def golden(name):
    return (REPO / "tests/golden" / f"{name}.json").read_text().removesuffix("\n")


def stage(src, dst, tables):
    shutil.copytree(src, dst)
    for table_dir, mtimes in tables.items():
        for rel, ms in mtimes.items():
            os.utime(dst / table_dir / rel, ns=(ms * 1_000_000, ms * 1_000_000))
    return dst


def test_iceberg_and_delta_plans_on_spark_equal_the_native_pins(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    root = stage(
        REPO / "tests/fixtures/generated", tmp_path / "gen",
        {t["location"][len(VROOT) + 1:]: t["mtimes"] for t in expect.values()},
    )
    for name, t in expect.items():
        for suffix, now in (("", t["now_ms"]), ("-later", t["now_ms"] + 365 * DAY)):
            p, decided = plan(
                spark, t["location"], t["metadata_location"], now,
                store_spec={"local": [[VROOT, str(root)]]}, retention_ms=t["file_retention_ms"],
            )
            assert p.document == golden(f"iceberg-{name}{suffix}"), f"iceberg-{name}{suffix}"
            # What the executors decided is what the plan deletes.
            assert sorted(k for k, v, _ in decided if v == "candidate") == sorted(k for k, _ in p.delete)
    dexpect = json.loads((REPO / "tests/fixtures/delta/expect.json").read_text())
    droot = stage(REPO / "tests/fixtures/delta", tmp_path / "delta", {n: t["mtimes"] for n, t in dexpect.items()})
    p, _ = plan(
        spark, f"{VDELTA}/events", None, dexpect["events"]["generated_at_ms"] + 40 * DAY,
        store_spec={"local": [[VDELTA, str(droot)]]}, format="delta", log_cleanup=True,
    )
    assert p.document == golden("delta-events-40d-log-cleanup")


def test_a_foreign_table_found_by_an_executor_stops_the_job(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    other = expect["simple_v1"]["metadata_location"][len(VROOT) + 1:]
    foreign = root / "warehouse/demo/events/data/00000-foreign.metadata.json"
    shutil.copy(root / other, foreign)
    old = (t["now_ms"] - 10 * DAY) * 1_000_000
    os.utime(foreign, ns=(old, old))
    with pytest.raises(Exception) as e:
        plan(spark, t["location"], t["metadata_location"], t["now_ms"], store_spec={"local": [[VROOT, str(root)]]})
    assert "foreign-table" in str(e.value)
    # The executors' own classification refuses it (not only the driver's
    # session): their partition function, run here on the data folder.
    import hashlib

    from lakesweep import PlanRefused, Sweep
    from lakesweep_spark import _classify_partition

    spec = {"local": [[VROOT, str(root)]]}
    s = Sweep(t["location"], t["metadata_location"], t["now_ms"], store=__import__("lakesweep_spark").executor_store(spec))
    assert s.until_listing()
    keep = s.export_keep_set()

    class Shipped:
        value = keep

    run = _classify_partition(Shipped, hashlib.sha256(keep).hexdigest(), t["metadata_location"], spec)
    with pytest.raises(PlanRefused, match="foreign-table"):
        list(run([f"{t['location']}/data/"]))


def test_the_spark_submit_entry_point_writes_the_plan(tmp_path):
    """`spark-submit lakesweep_spark.py ...` (pyspark's own launcher)."""
    import subprocess

    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    out = tmp_path / "plan.json"
    r = subprocess.run(
        ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         str(Path(__file__).with_name("lakesweep_spark.py")), t["location"],
         "--metadata", t["metadata_location"], "--now", str(t["now_ms"]), "--root", f"{VROOT}={root}",
         "--out", str(out)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.read_text() == golden("iceberg-events")
    assert "objects to delete" in r.stdout
