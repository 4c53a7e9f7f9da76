#!/usr/bin/env python3
"""Time applying one sealed plan on Spark (local[2]): one deletion session
on the driver (each batch's HEADs and DELETEs spread over the executors)
against a deletion session per share on the executors (``--shares``), with
the sidecar's ``apply`` on the same plan as the yardstick, in the same run,
and check that every run writes the same receipts (key and result).

    python3 benches/iceberg_table.py /tmp/lsa-m --files 100000 --orphans 20000 > /tmp/lsa.json
    bash scripts/build-component.sh && (cd host-examples/sidecar && cargo build --release)
    python3 benches/spark_apply.py /tmp/lsa.json [--runs 3] [--shares 2,4]

The table the generator wrote is kept as it is: it is moved aside for the
benchmark, before every run a copy of it is made in its place with hard
links (its objects' versions unchanged), the run deletes from the copy,
and at the end the copy goes and the table is moved back. The plan is made once by the
sidecar (its pointer read by a command, as apply reads it again). The
Spark session starts once (its start reported apart); each apply is timed
alone, with the driver's peak memory read after all runs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "host-examples/spark"))


def restage(master, live):
    """``live``: a fresh hard-linked copy of ``master``."""
    shutil.rmtree(live, ignore_errors=True)
    subprocess.run(["cp", "-al", str(master), str(live)], check=True)


def results(lines):
    return sorted((r["key"], r["result"]) for r in lines)


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("table", help="the JSON benches/iceberg_table.py printed (its table stays untouched)")
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--shares", default="2", help="share counts to time, comma-separated")
    a.add_argument("--no-driver", action="store_true",
                   help="leave out the one session on the driver (two Spark jobs a batch: slow at scale)")
    a.add_argument("--sidecar", default=str(REPO / "host-examples/sidecar/target/release/lakesweep"))
    args = a.parse_args()
    t = json.loads(Path(args.table).read_text())
    live = Path(t["location"][len("file://"):])
    master = live.with_name(live.name + ".bench-master")
    if not master.exists():
        os.rename(live, master)
    try:
        run(args, t, master, live)
    finally:
        shutil.rmtree(live, ignore_errors=True)
        os.rename(master, live)


def run(args, t, master, live):
    pointer = t["metadata_location"]
    cmd = f"echo {pointer}"
    work = Path(tempfile.mkdtemp(prefix="lakesweep-apply-"))
    plan_file = work / "plan.json"
    restage(master, live)
    subprocess.run([args.sidecar, "plan", t["location"], "--pointer-cmd", cmd, "--now", str(t["now_ms"]),
                    "--out", str(plan_file)], check=True, capture_output=True)
    document = plan_file.read_text()
    deletes = len(json.loads(document)["delete"])
    figures = {}

    def record(name, seconds, lines):
        figures.setdefault(name, {"s": [], "receipts": None})
        figures[name]["s"].append(seconds)
        got = results(lines)
        if figures[name]["receipts"] is None:
            figures[name]["receipts"] = got
        assert got == figures[name]["receipts"], f"{name}: another run wrote other receipts"

    # The sidecar, as the yardstick.
    for _ in range(args.runs):
        restage(master, live)
        receipts = Path(f"{plan_file}.receipts.jsonl")
        receipts.unlink(missing_ok=True)
        started = time.monotonic()
        subprocess.run([args.sidecar, "apply", str(plan_file), "--pointer-cmd", cmd, "--allow-future-now"],
                       check=True, capture_output=True)
        took = time.monotonic() - started
        record("sidecar", took, [json.loads(x) for x in receipts.read_text().splitlines()])

    from lakesweep_spark import apply, session

    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--master local[2] pyspark-shell")
    started = time.monotonic()
    spark = session("lakesweep-apply-bench")
    spark.sparkContext.addPyFile(str(REPO / "host-examples/spark/lakesweep_spark.py"))
    session_s = time.monotonic() - started
    spec = {"local": []}
    for _ in range(args.runs):
        if not args.no_driver:
            restage(master, live)
            lines = []
            started = time.monotonic()
            done = apply(spark, document, store_spec=spec, pointer=lambda: pointer, allow_future_now=True,
                         sink=lines.append, keep_receipts=False)
            took = time.monotonic() - started
            assert done.exit == 0, done.outcome
            record("spark, one session on the driver", took, lines)
        for n in [int(x) for x in args.shares.split(",")]:
            restage(master, live)
            folder = work / f"receipts-{n}-{time.monotonic_ns()}"
            started = time.monotonic()
            done = apply(spark, document, store_spec=spec, pointer=lambda: pointer, allow_future_now=True,
                         shares=n, receipts=str(folder))
            took = time.monotonic() - started
            assert done.exit == 0, done.outcome
            lines = [json.loads(x) for f in sorted(folder.iterdir()) for x in f.read_text().splitlines()]
            record(f"spark, {n} shares on the executors", took, lines)
    spark.stop()
    want = figures["sidecar"]["receipts"]
    for name, f in figures.items():
        assert f["receipts"] == want, f"{name} wrote other receipts than the sidecar"
    assert len(want) == deletes and {r for _, r in want} == {"deleted"}
    print(f"{deletes} deletes; Spark session start {session_s:.1f} s (not counted)")
    side = statistics.median(figures["sidecar"]["s"])
    for name, f in figures.items():
        m = statistics.median(f["s"])
        print(f"{name:40s} median {m:6.2f} s  (min {min(f['s']):.2f}, max {max(f['s']):.2f}; "
              f"{m / side:.1f}x the sidecar)")
    print("every run: the same receipts (key and result) as the sidecar's")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
