#!/usr/bin/env python3
"""Generate a large Delta table with a multi-part checkpoint, quickly.

    python3 benches/delta_multipart_table.py OUT_DIR [--files 1000000] [--parts 10]
        [--row-group 100000] [--partitions 1000] [--orphans 10000] [--expect FILE] [--force]

A Delta writer takes hours to write millions of files; this writes the log
directly instead, the way a table looks after years of appends and a log
cleanup: a multi-part checkpoint at version 100 (pyarrow writes the parts in
the checkpoint schema of the Delta protocol: `add`, `remove`, `metaData`,
`protocol` structs, one action per row; --row-group rows per row group), the
`_last_checkpoint` pointer naming its parts, and three commits after it as
JSON. No commit before the checkpoint is left (log retention removed them).

  checkpoint 100   protocol (1, 2), metaData, --files live adds spread over
                   --partitions folders `bucket=N/`, and 1,000 tombstones
                   dated 30 days ago whose files are still on disk (garbage)
  101              appends 100 files
  102              removes 1,000 of the checkpoint's files (tombstones dated
                   now: their files stay within the retention)
  103              appends 100 files

Every data file is created empty (a sweeper reads names, sizes and times,
never data); --orphans unreferenced files named like a writer's are planted
among them; every file, the log included, is dated 30 days back. So exactly
the orphans and the 1,000 old tombstones' files are deletable under the
default 7-day retention, and deltalake's `vacuum(dry_run=True, full=True)`
reads the same table (see benches/delta_vs_deltalake.py).

Prints the counts, `now_ms` and the time of each phase as one JSON line;
--expect writes the deletable keys (sorted, one per line) to FILE.
"""
import argparse
import json
import os
import shutil
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from iceberg_table import touch  # an empty file with the given time

DAY_MS = 86_400_000
CHECKPOINT = 100
OLD_TOMBSTONES = 1_000
REMOVED_AFTER = 1_000
APPENDED = 100

STR_MAP = pa.map_(pa.string(), pa.string())
DV = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()),
                ("offset", pa.int32()), ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
ADD = pa.struct([("path", pa.string()), ("partitionValues", STR_MAP), ("size", pa.int64()),
                 ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                 ("tags", STR_MAP), ("deletionVector", DV)])
REMOVE = pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()), ("partitionValues", STR_MAP),
                    ("size", pa.int64()), ("deletionVector", DV)])
METADATA = pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                      ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
                      ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                      ("configuration", STR_MAP), ("createdTime", pa.int64())])
PROTOCOL = pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())])
SCHEMA = pa.schema([("add", ADD), ("remove", REMOVE), ("metaData", METADATA), ("protocol", PROTOCOL)])
TABLE_SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "bucket", "type": "integer", "nullable": True, "metadata": {}}]})


def data_file(bucket):
    return f"bucket={bucket}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"


def add(path, bucket, mtime_ms):
    return {"path": path, "partitionValues": [("bucket", str(bucket))], "size": 0,
            "modificationTime": mtime_ms, "dataChange": True}


def remove(path, bucket, ts_ms):
    return {"path": path, "deletionTimestamp": ts_ms, "dataChange": True,
            "extendedFileMetadata": True, "partitionValues": [("bucket", str(bucket))], "size": 0}


def rows_table(kind, rows):
    """A checkpoint table of one kind of action (`add`, `remove`, ...), the
    other columns null."""
    cols = {}
    for field in SCHEMA:
        if field.name == kind:
            cols[field.name] = pa.array(rows, type=field.type)
        else:
            cols[field.name] = pa.nulls(len(rows), type=field.type)
    return pa.table(cols, schema=SCHEMA)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--orphans", type=int, default=10_000)
    ap.add_argument("--expect", help="write the deletable keys here, one per line")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    if os.path.exists(a.out) and os.listdir(a.out):
        if not a.force:
            sys.exit(f"{a.out} exists and is not empty (--force deletes it)")
        shutil.rmtree(a.out)
    if a.files < OLD_TOMBSTONES + REMOVED_AFTER or a.parts < 2:
        sys.exit(f"--files must be at least {OLD_TOMBSTONES + REMOVED_AFTER} and --parts at least 2")
    log = os.path.join(a.out, "_delta_log")
    os.makedirs(log)
    for b in range(a.partitions):
        os.makedirs(os.path.join(a.out, f"bucket={b}"))
    now_ms = int(time.time() * 1000)
    old_ms = now_ms - 30 * DAY_MS
    old_s = old_ms / 1000
    laps = {}
    t = time.perf_counter()

    live = [(data_file(i % a.partitions), i % a.partitions) for i in range(a.files)]
    gone = [(data_file(i % a.partitions), i % a.partitions) for i in range(OLD_TOMBSTONES)]
    # The checkpoint's parts: part 1 holds protocol and metaData, then the
    # adds and the old tombstones are spread evenly (made part by part).
    files = live + gone
    per = -(-len(files) // a.parts)
    meta = {"id": str(uuid.uuid4()), "name": None, "description": None,
            "format": {"provider": "parquet", "options": []}, "schemaString": TABLE_SCHEMA,
            "partitionColumns": ["bucket"], "configuration": [], "createdTime": old_ms}
    for part in range(a.parts):
        chunk = [("add", add(p, b, old_ms)) if i < len(live) else ("remove", remove(p, b, old_ms))
                 for i, (p, b) in enumerate(files[part * per:(part + 1) * per], start=part * per)]
        tables = []
        if part == 0:
            tables.append(rows_table("protocol", [{"minReaderVersion": 1, "minWriterVersion": 2}]))
            tables.append(rows_table("metaData", [meta]))
        for kind in ("add", "remove"):
            rows = [r for k, r in chunk if k == kind]
            if rows:
                tables.append(rows_table(kind, rows))
        name = f"{CHECKPOINT:020}.checkpoint.{part + 1:010}.{a.parts:010}.parquet"
        pq.write_table(pa.concat_tables(tables), os.path.join(log, name),
                       row_group_size=a.row_group, compression="snappy")
    with open(os.path.join(log, "_last_checkpoint"), "w") as f:
        json.dump({"version": CHECKPOINT, "size": len(files) + 2, "parts": a.parts}, f)
    laps["checkpoint_s"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    appended = []
    for v in (CHECKPOINT + 1, CHECKPOINT + 2, CHECKPOINT + 3):
        # In JSON a partitionValues map is an object.
        info = {"commitInfo": {"timestamp": old_ms, "operation": "WRITE"}}
        if v == CHECKPOINT + 2:
            info["commitInfo"]["operation"] = "DELETE"
            body = [{"remove": dict(remove(p, b, now_ms), partitionValues={"bucket": str(b)})}
                    for p, b in live[:REMOVED_AFTER]]
        else:
            new = [(data_file(i % a.partitions), i % a.partitions) for i in range(APPENDED)]
            appended += new
            body = [{"add": dict(add(p, b, old_ms), partitionValues={"bucket": str(b)})}
                    for p, b in new]
        with open(os.path.join(log, f"{v:020}.json"), "w") as f:
            for r in [info] + body:
                f.write(json.dumps(r) + "\n")

    for p, _ in live + gone + appended:
        touch(os.path.join(a.out, p), old_s)
    orphans = [data_file(i * 7919 % a.partitions) for i in range(a.orphans)]
    for p in orphans:
        touch(os.path.join(a.out, p), old_s)
    for name in os.listdir(log):
        os.utime(os.path.join(log, name), (old_s, old_s))
    laps["files_s"] = round(time.perf_counter() - t, 1)
    print(json.dumps({"table": os.path.abspath(a.out), "live": len(live) - REMOVED_AFTER + len(appended),
                      "checkpoint_rows": len(files) + 2, "parts": a.parts,
                      "deletable": len(orphans) + len(gone), "now_ms": now_ms, **laps}))
    if a.expect:
        with open(a.expect, "w") as f:
            f.writelines(k + "\n" for k in sorted(orphans + [p for p, _ in gone]))


if __name__ == "__main__":
    main()
