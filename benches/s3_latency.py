#!/usr/bin/env python3
"""An S3 listing behind a delay: moto's S3 server on 127.0.0.1, and in
front of it a proxy on 127.0.0.1 that holds every request --delay
milliseconds (benches/latency_proxy.py), as a real endpoint's round trip
does. A generated Iceberg table is planned through the proxy by the
sidecar with each --requests value as LAKESWEEP_LIST_REQUESTS, and by the
Spark job with each --masters value (its executors list through
pyarrow.fs, one request at a time each: a task slot is a request in
flight). For every plan the proxy's record of the ListObjectsV2 requests
gives the listing's rate, requests and objects per second over its span,
and the mean number of requests in flight, against what the delay allows:
in flight / delay.

    bash scripts/build-component.sh && (cd host-examples/sidecar && cargo build --release)
    python3 benches/s3_latency.py [--files 20000] [--partitions 40] [--delay 50]
                                  [--requests 1,4,16] [--masters 'local[2],local[8]'] [--runs 1]

Every plan must list every object and delete exactly the planted orphans.
moto answers a LIST by scanning every key of the bucket in Python under
one interpreter lock: the table is kept small enough that each answer
takes a fraction of the delay, so that the delay, not moto, sets the
pace (the script prints moto's own time per LIST, measured without the
proxy, to show it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benches"))
sys.path.insert(0, str(REPO / "host-examples/spark"))

from latency_proxy import LatencyProxy  # noqa: E402
from s3_listing import BUCKET, DAY_MS, fill, generate, serve  # noqa: E402


def line(who, proxy, objects, delay_s, wall):
    n, span, rate, inflight = proxy.listing_rate(objects)
    bound = inflight / delay_s
    return (f"{who}: plan {wall:.2f} s; {n} LIST requests over {span:.2f} s: {n / span:.1f} requests/s "
            f"({rate:,.0f} objects/s) with {inflight:.1f} in flight on average; in flight / delay = "
            f"{bound:.1f} requests/s ({n / span / bound:.2f} of it)")


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--files", type=int, default=20_000)
    a.add_argument("--partitions", type=int, default=40)
    a.add_argument("--snapshots", type=int, default=4)
    a.add_argument("--orphans", type=int, default=200)
    a.add_argument("--delay", type=int, default=50, help="milliseconds each request is held")
    a.add_argument("--requests", default="1,4,16", help="LAKESWEEP_LIST_REQUESTS values for the sidecar")
    a.add_argument("--masters", default="local[2],local[8]", help="Spark masters ('' for none)")
    a.add_argument("--runs", type=int, default=1)
    a.add_argument("--lakesweep", default=os.environ.get(
        "LAKESWEEP_SIDECAR", str(REPO / "host-examples/sidecar/target/release/lakesweep")))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    args = a.parse_args()
    delay_s = args.delay / 1000

    with tempfile.TemporaryDirectory(prefix="lakesweep-s3latency-") as base:
        table = Path(base) / "table"
        made = generate(table, args)
        prefix = "warehouse/t"
        objects, newest = fill(table, prefix)
        server, upstream = serve(0)
        s3_table = f"s3://{BUCKET}/{prefix}"
        metadata = made["metadata_location"].replace(f"file://{table}", s3_table)
        want = sorted(f"data/p={i % args.partitions}/orphan-{i:07d}.parquet" for i in range(args.orphans))
        now = newest + 30 * DAY_MS
        creds = dict(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")

        def check(who, deleted, listed):
            if sorted(deleted) != want or listed != objects:
                sys.exit(f"{who}: the plan listed {listed} of {objects} objects and deletes {len(deleted)} keys, "
                         f"not the {len(want)} planted")

        def sidecar(endpoint, requests):
            cmd = [args.lakesweep, "plan", s3_table, "--metadata", metadata, "--location-map",
                   f"file://{table}={s3_table}", "--now", str(now), "--json", "--wasm", args.wasm]
            env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, LAKESWEEP_LIST_REQUESTS=str(requests), **creds)
            t = time.monotonic()
            p = subprocess.run(cmd, env=env, capture_output=True)
            wall = time.monotonic() - t
            if p.returncode != 0:
                sys.exit(f"the sidecar failed:\n{p.stderr.decode(errors='replace')}")
            plan = json.loads(p.stdout)
            check(f"sidecar, {requests} in flight", [d["key"] for d in plan["delete"]],
                  plan["summary"]["listed"]["count"])
            return wall

        # moto's own time per LIST, without the proxy.
        bare = LatencyProxy(upstream, 0).start()
        sidecar(bare.endpoint, 1)
        lists = bare.lists()
        bare.stop()
        print(f"{objects:,} objects in {args.partitions} folders; moto alone answers a LIST in "
              f"{sum(e - s for s, e in lists) / len(lists) * 1000:.0f} ms on average ({len(lists)} LISTs, "
              f"one at a time); each request is held {args.delay} ms", flush=True)

        proxy = LatencyProxy(upstream, delay_s).start()
        for _ in range(args.runs):
            for r in [int(x) for x in args.requests.split(",") if x]:
                proxy.reset()
                wall = sidecar(proxy.endpoint, r)
                print(line(f"sidecar, LAKESWEEP_LIST_REQUESTS={r}", proxy, objects, delay_s, wall), flush=True)

        masters = [m for m in args.masters.split(",") if m]
        if masters:
            from pyspark.sql import SparkSession

            from lakesweep_spark import plan as spark_plan

            host, port = proxy.endpoint[len("http://"):].split(":")
            spec = {"s3": {"endpoint_override": f"{host}:{port}", "scheme": "http", "access_key": "bench",
                           "secret_key": "bench", "region": "us-east-1"}}
            for m in masters:
                spark = (SparkSession.builder.master(m).appName("lakesweep-s3-latency")
                         .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
                         .config("spark.driver.host", "127.0.0.1").getOrCreate())
                spark.sparkContext.setLogLevel("ERROR")
                spark.sparkContext.addPyFile(str(REPO / "host-examples/spark/lakesweep_spark.py"))
                for _ in range(args.runs):
                    proxy.reset()
                    t = time.monotonic()
                    p, _ = spark_plan(spark, s3_table, metadata, now, store_spec=spec,
                                      location_map=[f"file://{table}={s3_table}"], listing="stat")
                    wall = time.monotonic() - t
                    check(f"Spark {m}", [k for k, _ in p.delete], p.summary["listed"]["count"])
                    print(line(f"Spark {m}", proxy, objects, delay_s, wall), flush=True)
                spark.stop()
        proxy.stop()
        server.shutdown()


if __name__ == "__main__":
    main()
