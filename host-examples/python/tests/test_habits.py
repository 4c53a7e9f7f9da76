"""The package in Python's habits: times as datetimes or RFC 3339 text,
durations as timedeltas or the command line's text, location maps as
mappings or ``FROM=TO``, errors with a reason and a dict of details, one
object per kind of result, a short repr, and the compiled component kept
between processes."""

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lakesweep
from lakesweep import LocalStore, PlanRefused

REPO = Path(__file__).resolve().parents[3]
VROOT = "file:///lakesweep-fixtures"
DAY = 86_400_000


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = tmp_path_factory.mktemp("habits") / "gen"
    shutil.copytree(REPO / "tests/fixtures/generated", root)
    table_dir = root / t["location"][len(VROOT) + 1:]
    for rel, ms in t["mtimes"].items():
        os.utime(table_dir / rel, ns=(ms * 1_000_000, ms * 1_000_000))
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    return t, store


def test_times_durations_and_maps_in_their_python_forms_plan_the_same(events):
    t, store = events
    base = lakesweep.plan(t["location"], t["metadata_location"], now_ms=t["now_ms"], store=store,
                          retention_ms=t["file_retention_ms"])
    when = dt.datetime.fromtimestamp(t["now_ms"] / 1000, tz=dt.timezone.utc)
    window = dt.timedelta(milliseconds=t["file_retention_ms"])
    for now, retention in (
        (when, window),
        (when.isoformat().replace("+00:00", "Z"), f"{t['file_retention_ms'] // 3_600_000}h"),
        (when.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))), window),
        (t["now_ms"], t["file_retention_ms"]),
    ):
        p = lakesweep.plan(t["location"], t["metadata_location"], now, store=store, retention=retention)
        assert p.document == base.document, (now, retention)
    # A location map as a mapping, as FROM=TO, as pairs: the same map.
    for m in ({"file:///elsewhere": "file:///x"}, "file:///elsewhere=file:///x", [("file:///elsewhere", "file:///x")]):
        assert lakesweep._values.location_map(m) == [("file:///elsewhere", "file:///x")]
    with pytest.raises(ValueError, match="FROM=TO"):
        lakesweep._values.location_map(["no-equals-sign"])
    with pytest.raises(ValueError, match="no time zone"):
        lakesweep.plan(t["location"], t["metadata_location"], dt.datetime(2026, 1, 1), store=store)
    with pytest.raises(ValueError, match="RFC 3339"):
        lakesweep.plan(t["location"], t["metadata_location"], "yesterday", store=store)
    with pytest.raises(TypeError, match=r"plan\(\) got an unexpected keyword argument 'older_than'"):
        lakesweep.plan(t["location"], t["metadata_location"], when, store=store, older_than="3d")


def test_durations_are_read_by_the_planner_as_the_command_line_reads_them():
    assert lakesweep.parse_duration("1h 30m") == 90 * 60_000
    assert lakesweep.parse_duration("3d") == 3 * DAY
    with pytest.raises(PlanRefused) as e:
        lakesweep.parse_duration("3 days")
    assert e.value.kind == "invalid-options" and e.value.reason == "invalid-options"
    assert e.value.details["field"] == "duration" and "unit" in e.value.details["detail"]
    assert e.value.who_must_act == "operator"


def test_a_refusal_has_a_reason_and_details_and_reads_cleanly():
    with pytest.raises(PlanRefused) as e:
        lakesweep.plan("file:///nonexistent/t", "file:///nonexistent/t/metadata/v1.metadata.json", 0)
    err = e.value
    assert isinstance(err.details, dict) and err.details.get("reason") == err.reason, err.details
    assert err.reason in ("missing-metadata", "location-mismatch", "encoding"), err.reason
    assert " : " not in str(err) and not str(err).endswith(": "), str(err)
    assert str(err).startswith(("unsafe to proceed (", "malformed input (")), str(err)


def test_one_object_per_kind_of_result_and_short_reprs(events):
    t, store = events
    p = lakesweep.plan(t["location"], t["metadata_location"], t["now_ms"], store=store, retention="3d")
    assert isinstance(p, lakesweep.Plan) and len(repr(p)) < 200, repr(p)
    assert repr(p).startswith("<Plan iceberg ") and f"{len(p.delete)} to delete" in repr(p)
    md = store.read(t["metadata_location"])
    e = lakesweep.plan_expiry(t["metadata_location"], md, t["now_ms"], policy=None)
    assert isinstance(e, lakesweep.ExpiryPlan) and json.loads(e.document)["schema"] == "lakesweep.expiry.v1"
    assert set(e.expire) == set(e.expired) and e.retain, e
    assert len(repr(e)) < 100
    good = {"schema": "lakehouseRetentionPolicy.v1", "binding": {"tableUuid": "u-1", "format": "iceberg"},
            "fileRetention": {"orphanSafetyInterval": "1h 30m"}}
    r = lakesweep.check_policy(good)
    assert r["errors"] == [] and r == lakesweep.check_policy(json.dumps(good))


def test_the_package_says_its_version_and_ships_its_types():
    assert isinstance(lakesweep.__version__, str) and lakesweep.__version__[0].isdigit()
    assert (Path(lakesweep.__file__).parent / "py.typed").exists()


def test_the_compiled_component_is_kept_between_processes(tmp_path):
    """A second process loads what the first compiled: the cache file is
    written once, named by the component's and wasmtime's identity."""
    env = {**os.environ, "LAKESWEEP_CACHE_DIR": str(tmp_path / "cache")}
    code = "import lakesweep; print(lakesweep.parse_duration('1h'))"
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "3600000", out
    files = list((tmp_path / "cache").glob("python-*.cwasm"))
    assert len(files) == 1, files
    first = files[0].stat().st_mtime_ns
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    assert files[0].stat().st_mtime_ns == first, "loaded, not compiled and written again"
    # A damaged cache file is compiled again, never trusted.
    files[0].write_bytes(b"not a compiled component")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3600000"
    # Empty: no cache at all.
    env["LAKESWEEP_CACHE_DIR"] = ""
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
