#!/usr/bin/env python3
"""Time a sweep plan of one Iceberg table on Spark (local[N]) against the
sidecar (release build) on the same table, in the same run, and check that
both make the same plan to the digest.

    python3 benches/iceberg_table.py /tmp/lsice-1m > /tmp/lsice-1m.json
    bash scripts/build-component.sh && (cd host-examples/sidecar && cargo build --release)
    python3 benches/spark_vs_sidecar.py /tmp/lsice-1m.json [--runs 3] [--master local[2]]

Needs pyspark and the lakesweep Python package (scripts/test.sh installs
both into .venv). The sidecar runs under /usr/bin/time for its peak memory.
Spark's time is the plan call on a started session (its JVM start is
printed apart); the Spark plan is sealed with the sidecar's origin, so the
two documents must be equal byte for byte (the sidecar's report for people
lies outside the seal and is dropped).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "host-examples/spark"))


def sidecar_plan(binary, t, wasm):
    with tempfile.NamedTemporaryFile(suffix=".txt") as timing:
        started = time.monotonic()
        r = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", timing.name, str(binary), "plan", t["location"][len("file://"):],
             "--metadata", t["metadata_location"], "--now", str(t["now_ms"]), "--json"],
            capture_output=True, text=True, env={**os.environ, "LAKESWEEP_WASM": str(wasm)},
        )
        wall = time.monotonic() - started
        if r.returncode != 0:
            sys.exit(f"sidecar failed: {r.stderr[-2000:]}")
        peak_kib = int(Path(timing.name).read_text().split()[-1])
    return wall, peak_kib, json.loads(r.stdout)


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("table", help="the JSON benches/iceberg_table.py printed")
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--master", default="local[2]")
    a.add_argument("--sidecar", default=str(REPO / "host-examples/sidecar/target/release/lakesweep"))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    args = a.parse_args()
    t = json.loads(Path(args.table).read_text())
    from pyspark.sql import SparkSession

    from lakesweep_spark import plan

    started = time.monotonic()
    spark = (SparkSession.builder.master(args.master).appName("lakesweep-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.addPyFile(str(REPO / "host-examples/spark/lakesweep_spark.py"))
    jvm = time.monotonic() - started
    side_times, spark_times, peaks = [], [], []
    for run in range(args.runs):
        wall, peak, side = sidecar_plan(args.sidecar, t, args.wasm)
        side_times.append(wall)
        peaks.append(peak)
        started = time.monotonic()
        p, decided = plan(spark, t["location"], t["metadata_location"], t["now_ms"], store_spec={"local": []},
                          origin=side["origin"])
        spark_times.append(time.monotonic() - started)
        del side["report"]
        if json.loads(p.document) != side:
            sys.exit("the plans differ")
        print(f"run {run + 1}: sidecar {wall:.2f} s ({peak / 1024:.0f} MiB peak), Spark {spark_times[-1]:.2f} s; "
              f"{side['summary']['listed']['count']} objects listed, {len(p.delete)} to delete, same plan "
              f"{p.digest[:12]}", flush=True)
    spark.stop()
    s, k = statistics.median(side_times), statistics.median(spark_times)
    print(f"median of {args.runs}: sidecar {s:.2f} s, {statistics.median(peaks) / 1024:.0f} MiB peak; "
          f"Spark {args.master} {k:.2f} s ({k / s:.2f}x the sidecar's time; session start {jvm:.1f} s apart)")


if __name__ == "__main__":
    main()
