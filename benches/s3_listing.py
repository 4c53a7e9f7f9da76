#!/usr/bin/env python3
"""Plan a generated Iceberg table on an S3-compatible server, the listing in
one sequence of pages against fanned out over the table's folders.

    python3 benches/s3_listing.py [--files 100000] [--partitions 1000] [--snapshots 10]
                                  [--orphans 1000] [--delays 0,100] [--requests 1,16]
                                  [--runs 3] [--lakesweep BIN] [--wasm W]

Writes the table with benches/iceberg_table.py (manifests written
directly, data files empty, orphans planted), starts moto's S3 server on
127.0.0.1 in this process (werkzeug, a thread per request) and puts every
file into its bucket directly (moto's own backend: uploading 100,000
objects over HTTP would take minutes). Each --delays value in
milliseconds holds every request that long before moto answers it, the
time a real S3 endpoint takes to answer a LIST page (AWS's performance
guidance puts S3's first-byte latency at 100 to 200 ms), which loopback
otherwise hides; 0 is moto as it is. For each delay it plans the
table with each --requests value as LAKESWEEP_LIST_REQUESTS (1: one
sequence of ListObjectsV2 pages; more: the fan-out), alternating,
--runs times, and prints the medians and their ratio to the sequence.
Every plan must list every object and delete exactly the planted orphans;
any difference fails the run.

Version listings are refused (see Delay), so every plan lists with
ListObjectsV2. moto answers each such page by scanning every key of the
bucket and sorting those under the prefix asked for (in Python, under one
interpreter lock): without a delay, a page of one sequence sorts the whole
table while a run's page sorts one run, so that figure mostly says what
moto's own work costs; the delayed figure is the one to read.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUCKET = "lakesweep-bench"
DAY_MS = 86_400_000


DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
          b'<Message>Access Denied</Message></Error>')


class Delay:
    """WSGI middleware: holds each request `ms` milliseconds, then answers;
    a version listing is refused (403 AccessDenied), as a bucket policy
    without s3:ListBucketVersions does, so the planner lists with
    ListObjectsV2 (moto copies every version of the bucket to answer a
    version listing, which would be all this measured)."""

    def __init__(self, app, ms):
        self.app, self.ms = app, ms

    def __call__(self, environ, start_response):
        if self.ms:
            time.sleep(self.ms / 1000)
        if any(q.split("=")[0] == "versions" for q in environ.get("QUERY_STRING", "").split("&")):
            start_response("403 Forbidden", [("Content-Type", "application/xml"),
                                             ("Content-Length", str(len(DENIED)))])
            return [DENIED]
        return self.app(environ, start_response)


def serve(delay_ms):
    """moto's S3 on 127.0.0.1, every request held delay_ms; (server, endpoint)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app = Delay(DomainDispatcherApplication(create_backend_app), delay_ms)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def fill(table, prefix):
    """Puts every file under `table` into the bucket under `prefix`; (count, newest ms)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(BUCKET, "us-east-1")
    n = 0
    for dirpath, _, names in os.walk(table):
        for name in names:
            path = os.path.join(dirpath, name)
            key = f"{prefix}/{os.path.relpath(path, table)}"
            with open(path, "rb") as f:
                backend.put_object(BUCKET, key, f.read())
            n += 1
    return n, int(time.time() * 1000)


def generate(table, args):
    """Writes the table of `args` (files, partitions, snapshots, orphans)
    with benches/iceberg_table.py; what the generator printed."""
    gen = subprocess.run([sys.executable, str(REPO / "benches/iceberg_table.py"), str(table),
                          "--files", str(args.files), "--partitions", str(args.partitions),
                          "--snapshots", str(args.snapshots), "--orphans", str(args.orphans)],
                         capture_output=True, text=True)
    if gen.returncode != 0:
        sys.exit(f"the generator failed:\n{gen.stderr}")
    return json.loads(gen.stdout.strip().splitlines()[-1])


def plan(cmd, env):
    """One plan: (wall seconds, the plan document)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"lakesweep plan failed ({p.returncode}):\n{p.stderr.decode(errors='replace')}")
    return wall, json.loads(p.stdout)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--files", type=int, default=100_000)
    a.add_argument("--partitions", type=int, default=1000)
    a.add_argument("--snapshots", type=int, default=10)
    a.add_argument("--orphans", type=int, default=1000)
    a.add_argument("--delays", default="0,100", help="milliseconds per request, comma-separated")
    a.add_argument("--requests", default="1,16", help="LAKESWEEP_LIST_REQUESTS values, comma-separated")
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--lakesweep", default=os.environ.get(
        "LAKESWEEP_SIDECAR", str(REPO / "host-examples/sidecar/target/release/lakesweep")))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    args = a.parse_args()

    with tempfile.TemporaryDirectory(prefix="lakesweep-s3bench-") as base:
        table = Path(base) / "table"
        made = generate(table, args)
        prefix = "warehouse/t"
        t = time.perf_counter()
        objects, newest = fill(table, prefix)
        print(f"{objects:,} objects in {args.partitions:,} partition folders put into moto "
              f"in {time.perf_counter() - t:.1f} s")
        s3_table = f"s3://{BUCKET}/{prefix}"
        metadata = made["metadata_location"].replace(f"file://{table}", s3_table)
        want = sorted(f"data/p={i % args.partitions}/orphan-{i:07d}.parquet" for i in range(args.orphans))
        now = newest + 30 * DAY_MS
        requests = [int(r) for r in args.requests.split(",")]
        for delay in [int(d) for d in args.delays.split(",")]:
            server, endpoint = serve(delay)
            env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                       AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
            cmd = [args.lakesweep, "plan", s3_table, "--metadata", metadata,
                   "--location-map", f"file://{table}={s3_table}", "--now", str(now),
                   "--json", "--wasm", args.wasm]
            times = {r: [] for r in requests}
            for _ in range(args.runs):
                for r in requests:
                    wall, p = plan(cmd, dict(env, LAKESWEEP_LIST_REQUESTS=str(r)))
                    deleted = sorted(d["key"] for d in p["delete"])
                    listed = p["summary"]["listed"]["count"]
                    if deleted != want or listed != objects:
                        sys.exit(f"{r} requests in flight: the plan listed {listed} of {objects} objects "
                                 f"and deletes {len(deleted)} keys, not the {len(want)} planted")
                    times[r].append(wall)
            server.shutdown()
            base_s = statistics.median(times[requests[0]])
            for r in requests:
                m = statistics.median(times[r])
                print(f"delay {delay} ms per request, LAKESWEEP_LIST_REQUESTS={r}: plan {m:.2f} s "
                      f"(median of {args.runs}; {base_s / m:.2f}x the first)")


if __name__ == "__main__":
    main()
