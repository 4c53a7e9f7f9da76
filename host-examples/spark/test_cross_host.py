"""Every deleting host drives the planner's one deletion session: the same
kind of table (pyiceberg, a SQL catalog, five old orphans), planned and
applied through the sidecar, the Python package, Spark on local[2] and
Node, each with a real commit (pyiceberg's add_files, adopting the last
orphan) landing while its first batch of two is deleted, give the same
receipts (keys, results, reasons, with each copy's root and metadata file
names written alike) and the same exit status: the first batch deleted,
the rest stopped, no damage.

The same tables give the same sealed plan on every host, with and without
a retention policy (decisions, window, tokens), the copy's root written
alike."""

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import lakesweep
import lakesweep_spark

REPO = Path(__file__).resolve().parents[2]
PY_TABLE = REPO / "host-examples/sidecar/tests/py/iceberg_table.py"
NODE = REPO / "host-examples/node"
DAY = 86_400_000
NOW = None  # set per test: a month ahead of the tables' files


def sidecar():
    return os.environ.get("LAKESWEEP_SIDECAR") or str(REPO / "target/debug/lakesweep")


def py_table(d, *args):
    out = subprocess.run([sys.executable, str(PY_TABLE), *args[:1], str(d), *args[1:]],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


def pointer_of(d):
    """The SQL catalog's pointer now."""
    c = sqlite3.connect(d / "catalog.db")
    try:
        return c.execute("SELECT metadata_location FROM iceberg_tables WHERE table_name = 't'").fetchone()[0]
    finally:
        c.close()


def table(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    info = py_table(d, "write")
    orphans = py_table(d, "orphans", "5", "10")
    return d, info, orphans


def month_ahead():
    import time

    return time.time_ns() // 1_000_000 + 30 * DAY


def normalized(receipts, d):
    """(key, result, detail) per receipt, the copy's root and metadata file
    names written alike, sorted."""
    root = f"file://{d}"
    out = []
    for r in receipts:
        detail = (r.get("detail") or "").replace(root, "<root>")
        detail = re.sub(r"\d{5}-[0-9a-f-]{36}\.metadata\.json", "<metadata>", detail)
        out.append((r["key"], r["result"], detail))
    return sorted(out)


def adopt(d, key):
    """A writer's commit adopting `key` (pyiceberg's add_files)."""
    py_table(d, "add", key)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[2]").appName("lakesweep-cross-host")
         .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
    yield s
    s.stop()


def run_sidecar(d, info, orphans, now):
    plan_file = d / "plan.json"
    catalog = ["--catalog", f"sqlite:{d}/catalog.db", "--table", "demo.t"]
    subprocess.run([sidecar(), "plan", info["location"], *catalog, "--now", str(now), "--out", str(plan_file)],
                   check=True, capture_output=True)
    hook = d / "hook.sh"
    hook.write_text(f"#!/bin/sh\nif [ \"$1\" = 1 ]; then {sys.executable} '{PY_TABLE}' add '{d}' '{orphans[-1]}'; fi\n")
    hook.chmod(0o755)
    r = subprocess.run([sidecar(), "apply", str(plan_file), "--batch", "2", "--allow-future-now"],
                       capture_output=True, text=True, env={**os.environ, "LAKESWEEP_TEST_HOOK": str(hook)})
    lines = [json.loads(x) for x in Path(f"{plan_file}.receipts.jsonl").read_text().splitlines()]
    return r.returncode, lines


def py_plan(d, info, now, **options):
    store = lakesweep.LocalStore(pointer=lambda: pointer_of(d))
    return store, lakesweep.plan(info["location"], pointer_of(d), now, store=store,
                                 pointer_authoritative=True, **options)


def run_python(d, info, orphans, now):
    store, p = py_plan(d, info, now)
    lines = []

    def sink(r):
        if not lines:
            adopt(d, orphans[-1])
        lines.append(r)

    done = lakesweep.apply(p.document, store, batch=2, allow_future_now=True, sink=sink, check=False)
    return done.exit, lines


def run_spark(spark, d, info, orphans, now):
    _, p = py_plan(d, info, now)
    lines = []

    def sink(r):
        if not lines:
            adopt(d, orphans[-1])
        lines.append(r)

    done = lakesweep_spark.apply(spark, p.document, store_spec={"local": []}, pointer=lambda: pointer_of(d),
                                 batch=2, allow_future_now=True, sink=sink)
    return done.exit, lines


NODE_SCRIPT = r"""
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { apply, plan, LocalStore } from './src/index.js';
const [dir, table, now, adopted, python, script, out] = process.argv.slice(2);
const pointer = async () => execFileSync(python, ['-c',
  `import sqlite3;print(sqlite3.connect('${dir}/catalog.db').execute("SELECT metadata_location FROM iceberg_tables WHERE table_name='t'").fetchone()[0])`]
).toString().trim();
const store = new LocalStore({ pointer });
const p = await plan({ table, metadata: await pointer(), nowMs: BigInt(now), pointerAuthoritative: true }, store);
const lines = [];
const done = await apply(p.document, store, {
  batch: 2, allowFutureNow: true,
  sink: (r) => {
    if (!lines.length) execFileSync(python, [script, 'add', dir, adopted]);
    lines.push({ key: r.receipt.key, result: r.receipt.result, detail: r.receipt.detail ?? null });
  },
});
writeFileSync(out, JSON.stringify({ exit: done.outcome.exit, lines, document: p.document }));
"""


def run_node(d, info, orphans, now):
    script = NODE / "cross-host.mjs"
    script.write_text(NODE_SCRIPT)
    out = d / "node.json"
    try:
        subprocess.run(["node", str(script), str(d), info["location"], str(now), orphans[-1], sys.executable,
                        str(PY_TABLE), str(out)], check=True, cwd=NODE, capture_output=True, text=True)
    finally:
        script.unlink()
    v = json.loads(out.read_text())
    return v["exit"], v["lines"]


def test_a_commit_during_the_first_batch_gives_the_same_receipts_on_every_host(spark, tmp_path):
    now = month_ahead()
    results = {}
    for name, run in (("sidecar", run_sidecar), ("python", run_python), ("node", run_node),
                      ("spark", lambda d, i, o, n: run_spark(spark, d, i, o, n))):
        d, info, orphans = table(tmp_path, name)
        code, lines = run(d, info, orphans, now)
        results[name] = (code, normalized(lines, d))
        # Nothing live was lost: the adopted orphan is there, the table reads.
        assert (Path(info["location"][len("file://"):]) / orphans[-1]).exists(), name
        assert py_table(d, "check")["rows"] > 0
    want = results["sidecar"]
    assert want[0] == 1, want
    got = [(k, r) for k, r, _ in want[1]]
    assert [r for _, r in got] == ["deleted", "deleted", "skipped-stopped", "skipped-stopped", "skipped-stopped"], got
    assert "table generation" in want[1][2][2], want
    for name, r in results.items():
        assert r == want, f"{name} differs from the sidecar:\n{r}\n{want}"


def test_the_same_table_policy_and_clock_give_the_same_plan_on_every_host(tmp_path):
    """Without a window given (the core's default) and under a policy."""
    d, info, _ = table(tmp_path, "plans")
    now = month_ahead()
    uuid = json.loads(Path(pointer_of(d)[len("file://"):]).read_text())["table-uuid"]
    policy = json.dumps({"schema": "lakehouseRetentionPolicy.v1",
                         "binding": {"tableUuid": uuid, "format": "iceberg"},
                         "fileRetention": {"orphanSafetyInterval": "5d"}})
    policy_file = d / "policy.json"
    policy_file.write_text(policy)
    sealed = lambda doc: {k: v for k, v in json.loads(doc).items() if k in ("delete", "tokens", "warnings")}  # noqa: E731
    for extra_cli, extra_py in (([], {}), (["--policy", str(policy_file)], {"policy": policy})):
        out = d / "cli.json"
        subprocess.run([sidecar(), "plan", info["location"], "--catalog", f"sqlite:{d}/catalog.db", "--table", "demo.t",
                        "--now", str(now), "--out", str(out), *extra_cli], check=True, capture_output=True)
        cli = sealed(out.read_text())
        _, p = py_plan(d, info, now, **extra_py)
        py = sealed(p.document)
        assert py == cli, (py, cli)
        window = 5 * DAY if extra_py else 3 * DAY
        assert cli["tokens"]["fileRetentionMs"] == window
