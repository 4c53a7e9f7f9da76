"""The Spark host on local[2] (pyspark from PyPI): the manifests digested
and the listing classified on the executors, sealed on the driver, give
byte for byte the plans the native core pinned (tests/golden/); a foreign
table's metadata found by an executor stops the job; a plan applied with
the deletes on the executors deletes what the plan says and nothing when
the table moved."""

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest

import lakesweep_spark
from lakesweep_spark import apply, plan, read_decisions

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
        # Large results travel as blocks over the driver's advertised
        # address: loopback, whatever the host name resolves to.
        .config("spark.driver.host", "127.0.0.1")
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


def test_a_digest_travels_compressed_and_one_damaged_on_its_way_stops_the_plan_naming_its_file():
    import pyarrow as pa

    text = 'lakesweep-manifest-digest 2\nuri "s3://b/t/m.avro"\n'.encode()
    packed = (len(text), pa.compress(text, codec="zstd", asbytes=True))
    assert list(lakesweep_spark._inflated([("s3://b/t/m.avro", packed), ("s3://b/t/gone.avro", None)])) == [
        ("s3://b/t/m.avro", text.decode()), ("s3://b/t/gone.avro", None)]
    for damaged in ((packed[0], packed[1][:-2]), (packed[0] + 1, packed[1]), (packed[0], b"not zstd")):
        with pytest.raises(ValueError, match=r"the digest of s3://b/t/m\.avro came back damaged"):
            list(lakesweep_spark._inflated([("s3://b/t/m.avro", damaged)]))


def test_iceberg_and_delta_plans_on_spark_equal_the_native_pins(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    root = stage(
        REPO / "tests/fixtures/generated", tmp_path / "gen",
        {t["location"][len(VROOT) + 1:]: t["mtimes"] for t in expect.values()},
    )
    for name, t in expect.items():
        for suffix, now in (("", t["now_ms"]), ("-later", t["now_ms"] + 365 * DAY)):
            # Splits of five keys: several a table, over both executors.
            p, decided = plan(
                spark, t["location"], t["metadata_location"], now,
                store_spec={"local": [[VROOT, str(root)]]}, retention_ms=t["file_retention_ms"],
                split_size=5, decisions=str(tmp_path / f"decisions-{name}{suffix}"), listing="stat",
            )
            assert p.document == golden(f"iceberg-{name}{suffix}"), f"iceberg-{name}{suffix}"
            # What the executors decided (in their files) is what the plan deletes.
            assert len(os.listdir(decided)) >= 2
            assert sorted(k for k, v, _ in read_decisions(decided) if v == "candidate") == sorted(
                k for k, _ in p.delete)
    dexpect = json.loads((REPO / "tests/fixtures/delta/expect.json").read_text())
    droot = stage(REPO / "tests/fixtures/delta", tmp_path / "delta", {n: t["mtimes"] for n, t in dexpect.items()})
    p, _ = plan(
        spark, f"{VDELTA}/events", None, dexpect["events"]["generated_at_ms"] + 40 * DAY,
        store_spec={"local": [[VDELTA, str(droot)]]}, format="delta", log_cleanup=True, split_size=4, listing="stat",
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
    # The executors' own classification refuses it: their partition
    # function, run here on the split that holds the data folder.
    import hashlib

    from lakesweep import PlanRefused, Sweep
    from lakesweep_spark import _split_partition

    spec = {"local": [[VROOT, str(root)]]}
    s = Sweep(t["location"], t["metadata_location"], t["now_ms"], store=__import__("lakesweep_spark").executor_store(spec))
    (prefix,) = s.until_listing()
    keep = s.export_keep_set()
    splits = s.split_listing([f"{prefix}data/", f"{prefix}data/\uffff"])

    class Shipped:
        value = keep

    run = _split_partition([Shipped], hashlib.sha256(keep).hexdigest(), t["metadata_location"], spec, None, 0)
    # The task does not fail (a failed task is run again): it answers the
    # split with its refusal, and stops there.
    (refusal,) = list(run([splits[1], splits[2]]))
    assert json.loads(refusal)["schema"] == "lakesweep.split-refusal.v1"
    s.feed_split(next(run([splits[0]])))
    with pytest.raises(PlanRefused, match="foreign-table") as e:
        s.feed_split(refusal)
    assert "split 1 of 3" in str(e.value)
    # A retry after the document vanished comes back clean, and changes
    # nothing: the session stays refused.
    foreign.unlink()
    clean = next(run([splits[1]]))
    assert json.loads(clean)["schema"] == "lakesweep.split-result.v1"
    for answer in (clean, next(run([splits[2]]))):
        with pytest.raises(PlanRefused, match="foreign-table"):
            s.feed_split(answer)
    with pytest.raises(PlanRefused, match="foreign-table"):
        s.finish()


def test_the_spark_submit_entry_point_writes_the_plan(tmp_path):
    """`spark-submit lakesweep_spark.py ...` (pyspark's own launcher)."""
    import subprocess

    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    out = tmp_path / "plan.json"
    here = Path(__file__).parent
    # The README's recipe: quiet from the start, the JVM's quick compiler
    # only, a local master on loopback (the job binds it), the command
    # line's time and duration forms.
    now = dt.datetime.fromtimestamp(t["now_ms"] / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")
    r = subprocess.run(
        ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--driver-java-options",
         f"-Dlog4j2.configurationFile={here / 'log4j2-quiet.properties'} -XX:TieredStopAtLevel=1",
         str(here / "lakesweep_spark.py"), "plan", t["location"],
         "--metadata", t["metadata_location"], "--now", now.replace("+00:00", "Z"),
         "--older-than", f"{t['file_retention_ms'] // 86_400_000}d", "--root", f"{VROOT}={root}",
         "--out", str(out)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    # The pinned plan, listed names first (the command line's default): the
    # same digest, deletes and tokens; the summary counts the referenced
    # files by name, without their bytes.
    got, want = json.loads(out.read_text()), json.loads(golden("iceberg-events"))
    for k in ("digest", "delete", "tokens", "warnings"):
        assert got[k] == want[k], k
    referenced = want["summary"]["verdicts"]["referenced"]["count"]
    assert got["summary"]["listedByName"] == referenced > 0
    assert "objects to delete" in r.stdout
    info = [line for line in r.stderr.splitlines() if " INFO " in line]
    assert len(info) == 0, info[:10]
    assert len(r.stderr.splitlines()) < 15, r.stderr[-3000:]


def test_the_spark_submit_plan_reads_its_pointer_from_a_catalog(tmp_path):
    """`--catalog sqlite:PATH --table NS.NAME`: the pointer is the
    catalog's, read when the plan starts and again before it is sealed,
    and authoritative as a catalog's is (the planner's judgement of a newer
    document beside it): the plan the package makes in one process with
    the catalog's pointer. A table the catalog does not hold is refused
    (exit 2); a pointer given twice is a usage error."""
    import subprocess

    import lakesweep

    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    catalog = f"sqlite:{root}/catalog.db"
    days = t["file_retention_ms"] // 86_400_000
    here = Path(__file__).parent
    out = tmp_path / "plan.json"

    def submit(*extra):
        return subprocess.run(
            ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
             "--driver-java-options", f"-Dlog4j2.configurationFile={here / 'log4j2-quiet.properties'}",
             str(here / "lakesweep_spark.py"), "plan", t["location"], "--now", str(t["now_ms"]),
             "--older-than", f"{days}d", "--root", f"{VROOT}={root}", "--listing", "stat", *extra],
            capture_output=True, text=True,
        )

    r = submit("--catalog", catalog, "--table", "demo.events", "--out", str(out))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    pointer = lakesweep.catalog_pointer(catalog, "demo.events")()
    assert pointer == t["metadata_location"]
    want = lakesweep.plan(t["location"], pointer, t["now_ms"], retention=f"{days}d", pointer_authoritative=True,
                          store=lakesweep.LocalStore(roots=[(VROOT, str(root))], pointer=lambda: pointer))
    got = json.loads(out.read_text())
    assert [d["key"] for d in got["delete"]] == [k for k, _ in want.delete]
    assert got["tokens"] == json.loads(want.document)["tokens"]
    assert got["digest"] == want.digest

    r = submit("--catalog", catalog, "--table", "demo.nope")
    said = r.stdout + r.stderr
    assert r.returncode == 2 and "has no table demo.nope" in said, said[-3000:]
    r = submit("--catalog", catalog, "--table", "demo.events", "--metadata", t["metadata_location"])
    assert r.returncode == 2 and "not both" in r.stdout + r.stderr


def test_the_cluster_recipe_runs_the_job_from_the_wheel(tmp_path):
    """The README's cluster recipe on local[2]: the wheel built with the
    component inside, installed where the driver and the executors import
    it, and the job submitted; the component comes from the wheel."""
    import subprocess
    import sys
    import zipfile

    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO / "host-examples/python"),
                        "-w", str(dist)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (wheel,) = dist.glob("lakesweep-*.whl")
    assert "lakesweep/lakesweep.wasm" in zipfile.ZipFile(wheel).namelist()
    node = tmp_path / "node"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(node), str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    env = {k: v for k, v in os.environ.items() if k != "LAKESWEEP_WASM"}
    env["PYTHONPATH"] = str(node)
    probe = subprocess.run([sys.executable, "-c", "import lakesweep._component as c; print(c.default_wasm())"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert probe.stdout.strip() == str(node / "lakesweep/lakesweep.wasm"), probe
    here = Path(__file__).parent
    out = tmp_path / "plan.json"
    r = subprocess.run(
        ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.executorEnv.PYTHONPATH={node}",
         "--driver-java-options", f"-Dlog4j2.configurationFile={here / 'log4j2-quiet.properties'}",
         str(here / "lakesweep_spark.py"), "plan", t["location"], "--metadata", t["metadata_location"],
         "--now", str(t["now_ms"]), "--older-than", f"{t['file_retention_ms'] // 86_400_000}d",
         "--root", f"{VROOT}={root}", "--listing", "stat", "--split-size", "10", "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.read_text() == golden("iceberg-events")


def test_executors_with_another_component_are_refused_before_planning(tmp_path):
    """An executor that loads another build of the component (here the
    same one with a custom section added: other bytes, still a component)
    stops the job before the driver reads the table, naming both."""
    import subprocess

    wasm = Path(os.environ.get("LAKESWEEP_WASM") or REPO / "target/lakesweep.wasm")
    other = tmp_path / "other.wasm"
    name, payload = b"lakesweep-test", b"another build"
    body = bytes([len(name)]) + name + payload
    other.write_bytes(wasm.read_bytes() + bytes([0, len(body)]) + body)
    here = Path(__file__).parent
    r = subprocess.run(
        ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.executorEnv.LAKESWEEP_WASM={other}",
         "--driver-java-options", f"-Dlog4j2.configurationFile={here / 'log4j2-quiet.properties'}",
         str(here / "lakesweep_spark.py"), "plan", "file:///nowhere/t", "--metadata",
         "file:///nowhere/t/metadata/v1.metadata.json", "--now", "0", "--out", str(tmp_path / "plan.json")],
        capture_output=True, text=True, env={**os.environ, "LAKESWEEP_WASM": str(wasm)},
    )
    # (spark-submit passes the Python driver's own stderr to its stdout.)
    said = r.stdout + r.stderr
    assert r.returncode == 2, said[-3000:]
    assert "refused, nothing read or deleted: the executors run another lakesweep" in said, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert not (tmp_path / "plan.json").exists()


def test_a_job_that_may_delete_starts_each_group_only_once_the_last_was_taken(spark, tmp_path):
    """Apply's jobs (HEADs, DELETEs) are gathered group by group, never
    ahead: while the driver has not taken a group's answers, no task of
    the next group has run. Jobs that delete nothing run ``ahead`` groups
    ahead (the planner's two: the executors never wait at the end of a
    group for its slowest task)."""
    import time

    for ahead in (0, 1, 2):
        marks = tmp_path / f"marks-{ahead}"
        marks.mkdir()

        def run(items, marks=marks):
            for i in items:
                (marks / str(i)).touch()
                yield i

        rdd = spark.sparkContext.parallelize(range(8), 8).mapPartitions(run)
        g = lakesweep_spark._gathered(spark.sparkContext, rdd, 8, width=2, ahead=ahead)
        assert [next(g), next(g)] == [0, 1]
        want = list(range(2 * (ahead + 1)))
        # The jobs run ahead have run once their marks are all there (a
        # loaded machine may take a while); then nothing more runs.
        for _ in range(100):
            if len(list(marks.iterdir())) >= len(want):
                break
            time.sleep(0.1)
        time.sleep(1.5)
        ran = sorted(int(p.name) for p in marks.iterdir())
        assert ran == want, ran
        assert list(g) == list(range(2, 8))


def test_all_submitted_is_called_once_the_last_group_is_handed_on(spark):
    """``all_submitted`` is called once, when the last group is handed on,
    however far ahead, and for no group at all."""
    sc = spark.sparkContext
    for ahead in (0, 1, 3):
        calls = []
        g = lakesweep_spark._gathered(sc, sc.parallelize(range(4), 4), 4, width=1, ahead=ahead,
                                      all_submitted=lambda: calls.append(1))
        assert next(g) == 0
        assert calls == ([] if ahead < 3 else [1]), (ahead, calls)
        assert list(g) == [1, 2, 3]
        assert calls == [1], (ahead, calls)
    calls = []
    assert list(lakesweep_spark._gathered(sc, sc.parallelize([], 1), 0, ahead=2,
                                          all_submitted=lambda: calls.append(1))) == []
    assert calls == [1]


def test_a_plan_refuses_speculative_attempts(tmp_path):
    """With spark.speculation on, two attempts at one split could race and
    a clean one answer a split the other refused: the plan refuses to run
    (exit 2), before the table is read."""
    import subprocess

    here = Path(__file__).parent
    r = subprocess.run(
        ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.speculation=true",
         "--driver-java-options", f"-Dlog4j2.configurationFile={here / 'log4j2-quiet.properties'}",
         str(here / "lakesweep_spark.py"), "plan", "file:///nowhere/t", "--metadata",
         "file:///nowhere/t/metadata/v1.metadata.json", "--now", "0"],
        capture_output=True, text=True,
    )
    said = r.stdout + r.stderr
    assert r.returncode == 2, said[-3000:]
    assert "refused, nothing deleted: spark.speculation is on" in said, said[-3000:]


def test_apply_on_the_executors_deletes_the_plan_with_a_receipt_per_key(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    rel = t["location"][len(VROOT) + 1:]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {rel: t["mtimes"]})
    spec = {"local": [[VROOT, str(root)]]}
    now = t["now_ms"] + 365 * DAY
    p, _ = plan(spark, t["location"], t["metadata_location"], now, store_spec=spec, retention_ms=t["file_retention_ms"],
                listing="stat")
    assert p.document == golden("iceberg-events-later") and len(p.delete) >= 2
    # The table moved since the plan: nothing is deleted.
    moved = t["metadata_location"].replace(".metadata.json", "-moved.metadata.json")
    done = apply(spark, p.document, store_spec=spec, pointer=lambda: moved, allow_future_now=True)
    assert done.refused and done.receipts == [] and done.exit == 2, done
    assert all((root / rel / k).exists() for k, _ in p.delete)
    # One object rewritten since the plan is kept; the rest go.
    changed = root / rel / p.delete[0][0]
    st = changed.stat()
    changed.write_bytes(changed.read_bytes() + b"new")
    os.utime(changed, ns=(st.st_mtime_ns, st.st_mtime_ns))
    lines = []
    done = apply(spark, p.document, store_spec=spec, pointer=lambda: t["metadata_location"], batch=2,
                 allow_future_now=True, sink=lines.append)
    got = {r["key"]: r["result"] for r in lines}
    assert got == {k: "skipped-changed" if k == p.delete[0][0] else "deleted" for k, _ in p.delete}
    assert changed.exists() and not any((root / rel / k).exists() for k, _ in p.delete[1:])
    assert done.damage == [] and done.damage_unchecked is None
    # The executors' receipts are the single-process apply's: same fields.
    assert set(lines[0]) == {"key", "uri", "result", "planned", "version", "requestedMs", "confirmedMs",
                             "deleteMarker", "detail"}


def test_apply_in_shares_runs_a_deletion_session_per_share_on_the_executors(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    rel = t["location"][len(VROOT) + 1:]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {rel: t["mtimes"]})
    spec = {"local": [[VROOT, str(root)]]}
    p, _ = plan(spark, t["location"], t["metadata_location"], t["now_ms"] + 365 * DAY, store_spec=spec,
                retention_ms=t["file_retention_ms"])
    n = len(p.delete)
    assert n >= 2
    of = n + 1  # one share holds no key
    folder = tmp_path / "receipts"
    with pytest.raises(ValueError, match="folder"):
        apply(spark, p.document, store_spec=spec, pointer=lambda: t["metadata_location"], shares=of)
    # The table moved since the plan: every share holding keys is refused.
    moved = t["metadata_location"].replace(".metadata.json", "-moved.metadata.json")
    done = apply(spark, p.document, store_spec=spec, pointer=lambda: moved, allow_future_now=True, shares=of,
                 receipts=str(tmp_path / "refused"))
    assert done.exit == 2 and len(done.refused) == n, done.outcome
    # A folder that holds receipts already is refused before anything runs,
    # and so is a share count the planner refuses.
    with pytest.raises(ValueError, match="not empty"):
        apply(spark, p.document, store_spec=spec, pointer=lambda: moved, shares=of, receipts=str(tmp_path / "refused"))
    with pytest.raises(ValueError, match="at least 1 share"):
        apply(spark, p.document, store_spec=spec, pointer=lambda: moved, shares=0, receipts=str(folder))
    assert not folder.exists()
    assert all((root / rel / k).exists() for k, _ in p.delete)
    # One object rewritten since the plan is kept; the rest go, each share
    # writing its own receipts on its executor.
    changed = root / rel / p.delete[-1][0]
    st = changed.stat()
    changed.write_bytes(changed.read_bytes() + b"new")
    os.utime(changed, ns=(st.st_mtime_ns, st.st_mtime_ns))
    done = apply(spark, p.document, store_spec=spec, pointer=lambda: t["metadata_location"], batch=1,
                 allow_future_now=True, shares=of, receipts=str(folder))
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"share-{i:05d}-of-{of:05d}.jsonl" for i in range(of)]
    lines = [json.loads(x) for f in files for x in f.read_text().splitlines()]
    # In plan order across the shares, each key once.
    assert [r["key"] for r in lines] == sorted(k for k, _ in p.delete)
    assert {r["key"]: r["result"] for r in lines} == {
        k: "skipped-changed" if k == p.delete[-1][0] else "deleted" for k, _ in p.delete}
    assert done.exit == 1 and done.count("deleted") == n - 1 and done.count("skipped-changed") == 1
    assert done.receipts == [] and done.damage_unchecked is None
    assert changed.exists() and not any((root / rel / k).exists() for k, _ in p.delete[:-1])
    assert set(lines[0]) == {"key", "uri", "result", "planned", "version", "requestedMs", "confirmedMs",
                             "deleteMarker", "detail"}


def test_a_halt_set_between_two_batches_stops_the_spark_apply_before_the_next(spark, tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    rel = t["location"][len(VROOT) + 1:]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {rel: t["mtimes"]})
    spec = {"local": [[VROOT, str(root)]]}
    p, _ = plan(spark, t["location"], t["metadata_location"], t["now_ms"] + 365 * DAY, store_spec=spec,
                retention_ms=t["file_retention_ms"])
    assert len(p.delete) >= 3
    fleet = tmp_path / "ops" / "stop.json"
    halt = json.dumps({"schema": "lakesweepStop.v1", "halted": True,
                       "halt": {"generation": 1, "reason": "listing looks wrong", "by": "oncall", "atMs": 1}})
    lines = []

    def sink(r):
        # Batch 1's receipt is written: an operator halts the fleet.
        lines.append(r)
        fleet.parent.mkdir(parents=True, exist_ok=True)
        fleet.write_text(halt)

    done = apply(spark, p.document, store_spec=spec, pointer=lambda: t["metadata_location"], batch=1,
                 allow_future_now=True, sink=sink, stop_switches=[f"file://{fleet}"])
    results = [r["result"] for r in lines]
    assert results[0] == "deleted" and set(results[1:]) == {"skipped-stopped"}, results
    assert "listing looks wrong" in lines[1]["detail"] and done.exit == 1
    assert all((root / rel / k).exists() for k, _ in p.delete[1:])


def test_the_spark_submit_apply_entry_point(tmp_path):
    import subprocess

    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    rel = t["location"][len(VROOT) + 1:]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {rel: t["mtimes"]})
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(golden("iceberg-events"))
    script = str(Path(__file__).with_name("lakesweep_spark.py"))
    base = ["spark-submit", "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1", script, "apply",
            str(plan_file), "--root", f"{VROOT}={root}"]
    r = subprocess.run(base, capture_output=True, text=True)
    assert r.returncode == 2 and "needs --metadata" in r.stdout + r.stderr
    r = subprocess.run(base + ["--metadata", t["metadata_location"]], capture_output=True, text=True)
    # Judged at a time ahead of this machine's clock: refused unless asked.
    assert r.returncode == 2 and "refused, nothing deleted" in r.stdout, r.stdout + r.stderr[-2000:]
    Path(f"{plan_file}.receipts.jsonl").unlink(missing_ok=True)
    # A dry run in three shares on the executors: a receipts file per share.
    r = subprocess.run(base + ["--metadata", t["metadata_location"], "--allow-future-now", "--dry-run",
                               "--shares", "3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    shares = sorted(Path(f"{plan_file}.receipts").iterdir())
    assert [f.name for f in shares] == [f"share-{i:05d}-of-00003.jsonl" for i in range(3)]
    dry = [json.loads(x) for f in shares for x in f.read_text().splitlines()]
    assert {x["result"] for x in dry} == {"would-delete"} and "would-delete; receipts in" in r.stdout
    r = subprocess.run(base + ["--metadata", t["metadata_location"], "--shares", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--shares: at least 1" in r.stdout + r.stderr
    # A fleet's stop switch, read before every batch (not set: the run goes on).
    r = subprocess.run(base + ["--metadata", t["metadata_location"], "--allow-future-now",
                               "--stop-switch", f"file://{tmp_path}/ops/stop.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in Path(f"{plan_file}.receipts.jsonl").read_text().splitlines()]
    planned = json.loads(golden("iceberg-events"))["delete"]
    assert sorted(x["key"] for x in lines) == sorted(d["key"] for d in planned)
    assert {x["result"] for x in lines} == {"deleted"}
    assert "deleted; receipts in" in r.stdout


def test_a_generated_table_plans_on_spark_to_the_sidecars_digest(spark, tmp_path):
    """A table written by benches/iceberg_table.py (20,000 data files in 20
    snapshots and 100 partitions, 500 old orphans; LAKESWEEP_SPARK_FILES
    scales it): planned on Spark and by the sidecar at the same time, the
    same plan to the digest once sealed with the sidecar's origin."""
    files = int(os.environ.get("LAKESWEEP_SPARK_FILES", "20000"))
    _generated_against_the_sidecar(spark, tmp_path, files, 100, max(100, files // 16))


def test_a_flat_folder_spreads_over_splits(spark, tmp_path):
    """Every data file in one folder: cut where the keys are (splits of 250
    of 4,000 files), not by folders, and the same plan as the sidecar."""
    _generated_against_the_sidecar(spark, tmp_path, 4000, 1, 250, at_least=10, listing="stat")


def _generated_against_the_sidecar(spark, tmp_path, files, partitions, split_size, at_least=1, listing="names"):
    import subprocess
    import sys
    import time

    out = tmp_path / "table"
    gen = subprocess.run(
        [sys.executable, str(REPO / "benches/iceberg_table.py"), str(out), "--files", str(files),
         "--snapshots", "20", "--partitions", str(partitions), "--orphans", str(max(1, files // 40))],
        capture_output=True, text=True, check=True,
    )
    t = json.loads(gen.stdout)
    sidecar = Path(os.environ.get("LAKESWEEP_SIDECAR") or REPO / "target/debug/lakesweep")
    started = time.monotonic()
    r = subprocess.run(
        [str(sidecar), "plan", str(out), "--metadata", t["metadata_location"], "--now", str(t["now_ms"]), "--json"],
        # Names first on both sides (the default): a stat only for the keys
        # the keep set does not settle by name.
        capture_output=True, text=True,
        env={**os.environ, "LAKESWEEP_WASM": str(REPO / "target/lakesweep.wasm"), "LAKESWEEP_LOCAL_LISTING": listing},
    )
    side_s = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    side = json.loads(r.stdout)
    started = time.monotonic()
    p, decided = plan(spark, t["location"], t["metadata_location"], t["now_ms"], store_spec={"local": []},
                      origin=side["origin"], split_size=split_size, decisions=str(tmp_path / "decisions"),
                      listing=listing)
    spark_s = time.monotonic() - started
    del side["report"]
    assert json.loads(p.document) == side
    assert len(p.delete) == max(1, files // 40)
    assert sorted(k for k, v, _ in read_decisions(decided) if v == "candidate") == sorted(k for k, _ in p.delete)
    assert len(os.listdir(decided)) >= at_least
    print(f"\n{files} data files: sidecar (debug) {side_s:.1f} s, Spark local[2] {spark_s:.1f} s")
