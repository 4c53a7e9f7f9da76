#!/usr/bin/env python3
"""Generate a large Iceberg v2 table quickly, for scale benchmarks.

    python3 benches/iceberg_table.py OUT_DIR [--files 1000000] [--snapshots 100]
                                             [--partitions 1000] [--orphans 10000]
                                             [--stats-columns 0] [--force]

Writing a million data files through a query engine takes hours; this writes
the table's metadata directly instead: fastavro writes the manifests and
manifest lists (Iceberg v2 schemas with their field ids, deflate), the
metadata document is written as JSON, and every data file is created empty
(a sweeper reads names, sizes and times, never data files). With
--stats-columns N the table has N more columns and every manifest entry
carries their statistics (sizes, value and null counts, lower and upper
bounds), as an engine writing metrics does: manifests many times larger.

History: --snapshots fast appends; snapshot k adds one manifest of
files/snapshots files and its manifest list names the manifests of
snapshots 1..k. Every snapshot's summary records its totals (so the planner
checks that every manifest list is whole). Data files are spread over
--partitions folders `data/p=N/`. Then --orphans unreferenced files are
planted among them, and every file's modification time is set to 30 days
before now, so the orphans are old garbage and nothing else is deletable.

OUT_DIR must not exist or be empty, unless --force (which deletes it first).
Prints the metadata location and a command that plans the table.
"""
import argparse
import json
import os
import shutil
import sys
import time
import uuid

import fastavro

DAY_MS = 86_400_000

ENTRY = {
    "type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "default": None, "field-id": 4},
        {"name": "data_file", "field-id": 2, "type": {
            "type": "record", "name": "r2", "fields": [
                {"name": "content", "type": "int", "field-id": 134},
                {"name": "file_path", "type": "string", "field-id": 100},
                {"name": "file_format", "type": "string", "field-id": 101},
                {"name": "partition", "field-id": 102, "type": {
                    "type": "record", "name": "r102",
                    "fields": [{"name": "p", "type": ["null", "int"], "default": None, "field-id": 1000}]}},
                {"name": "record_count", "type": "long", "field-id": 103},
                {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
            ]}},
    ]}


def stat_map(name, field_id, key_id, value_id, value_type):
    """An Iceberg map<int, T> column-statistics field: an Avro array of key/value records."""
    return {"name": name, "field-id": field_id, "default": None, "type": ["null", {
        "type": "array", "logicalType": "map", "items": {
            "type": "record", "name": f"k{key_id}_v{value_id}", "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value_type, "field-id": value_id}]}}]}


STATS = [stat_map("column_sizes", 108, 117, 118, "long"), stat_map("value_counts", 109, 119, 120, "long"),
         stat_map("null_value_counts", 110, 121, 122, "long"), stat_map("lower_bounds", 125, 126, 127, "bytes"),
         stat_map("upper_bounds", 128, 129, 130, "bytes")]


def entry_schema(stats_columns):
    if not stats_columns:
        return ENTRY
    schema = json.loads(json.dumps(ENTRY))
    schema["fields"][4]["type"]["fields"].extend(STATS)
    return schema


def entry_stats(stats_columns, f):
    ids = range(3, 3 + stats_columns)
    lo, hi = f"a{f:08d}".encode(), f"z{f:08d}".encode()
    return {"column_sizes": [{"key": c, "value": 1000 + c} for c in ids],
            "value_counts": [{"key": c, "value": 100} for c in ids],
            "null_value_counts": [{"key": c, "value": 0} for c in ids],
            "lower_bounds": [{"key": c, "value": lo} for c in ids],
            "upper_bounds": [{"key": c, "value": hi} for c in ids]}

MANIFEST_FILE = {
    "type": "record", "name": "manifest_file", "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    ]}

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "p", "required": False, "type": "int"},
    {"id": 2, "name": "v", "required": False, "type": "string"}]}
SPEC = {"spec-id": 0, "fields": [{"name": "p", "transform": "identity", "source-id": 1, "field-id": 1000}]}


def touch(path, mtime_s):
    with open(path, "wb"):
        pass
    os.utime(path, (mtime_s, mtime_s))


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("out")
    a.add_argument("--files", type=int, default=1_000_000)
    a.add_argument("--snapshots", type=int, default=100)
    a.add_argument("--partitions", type=int, default=1000)
    a.add_argument("--orphans", type=int, default=10_000)
    a.add_argument("--stats-columns", type=int, default=0)
    a.add_argument("--force", action="store_true")
    args = a.parse_args()
    if args.snapshots < 1 or args.files < args.snapshots or args.partitions < 1:
        a.error("need --snapshots >= 1, --files >= --snapshots and --partitions >= 1")
    out = os.path.abspath(args.out)
    if os.path.exists(out) and os.listdir(out):
        if not args.force:
            a.error(f"{out} is not empty (use --force to replace it)")
        shutil.rmtree(out)
    loc = f"file://{out}"
    schema = dict(SCHEMA, fields=SCHEMA["fields"] + [
        {"id": c, "name": f"c{c}", "required": False, "type": "string"} for c in range(3, 3 + args.stats_columns)])
    entry = fastavro.parse_schema(entry_schema(args.stats_columns))
    now_ms = time.time_ns() // 1_000_000
    old_s = (now_ms - 30 * DAY_MS) / 1000
    os.makedirs(f"{out}/metadata")
    for p in range(args.partitions):
        os.makedirs(f"{out}/data/p={p}")
    t0 = time.time()
    per = args.files // args.snapshots
    snapshots, manifests, total = [], [], 0
    for k in range(1, args.snapshots + 1):
        sid = 1_000_000 + k
        n = per if k < args.snapshots else args.files - per * (args.snapshots - 1)
        entries = []
        for i in range(n):
            f = total + i
            p = f % args.partitions
            path = f"{loc}/data/p={p}/f-{k:05d}-{f:08d}.parquet"
            touch(path[len("file://"):], old_s)
            data_file = {"content": 0, "file_path": path, "file_format": "PARQUET",
                         "partition": {"p": p}, "record_count": 1, "file_size_in_bytes": 0}
            if args.stats_columns:
                data_file.update(entry_stats(args.stats_columns, f))
            entries.append({"status": 1, "snapshot_id": sid, "sequence_number": k, "file_sequence_number": k,
                            "data_file": data_file})
        total += n
        mpath = f"{out}/metadata/{uuid.uuid4()}-m0.avro"
        with open(mpath, "wb") as fo:
            fastavro.writer(fo, entry, entries, codec="deflate", metadata={
                "schema": json.dumps(schema), "partition-spec": json.dumps(SPEC["fields"]),
                "partition-spec-id": "0", "format-version": "2", "content": "data"})
        manifests.append({"manifest_path": f"file://{mpath}", "manifest_length": os.path.getsize(mpath),
                          "partition_spec_id": 0, "content": 0, "sequence_number": k, "min_sequence_number": k,
                          "added_snapshot_id": sid, "added_files_count": n, "existing_files_count": 0,
                          "deleted_files_count": 0, "added_rows_count": n, "existing_rows_count": 0,
                          "deleted_rows_count": 0})
        lpath = f"{out}/metadata/snap-{sid}-1-{uuid.uuid4()}.avro"
        with open(lpath, "wb") as fo:
            fastavro.writer(fo, fastavro.parse_schema(MANIFEST_FILE), list(reversed(manifests)), codec="deflate",
                            metadata={"snapshot-id": str(sid), "parent-snapshot-id": str(sid - 1),
                                      "sequence-number": str(k), "format-version": "2"})
        ts = now_ms - 30 * DAY_MS + k * 60_000
        snapshots.append({
            "snapshot-id": sid, **({"parent-snapshot-id": sid - 1} if k > 1 else {}), "sequence-number": k,
            "timestamp-ms": ts, "manifest-list": f"file://{lpath}", "schema-id": 0,
            "summary": {"operation": "append", "added-data-files": str(n), "total-data-files": str(total),
                        "total-delete-files": "0", "manifests-created": "1", "manifests-kept": str(k - 1),
                        "added-records": str(n), "total-records": str(total)}})
        for p in (mpath, lpath):
            os.utime(p, (old_s, old_s))
    t1 = time.time()
    for i in range(args.orphans):
        touch(f"{out}/data/p={i % args.partitions}/orphan-{i:07d}.parquet", old_s)
    md = {
        "format-version": 2, "table-uuid": str(uuid.uuid4()), "location": loc,
        "last-sequence-number": args.snapshots, "last-updated-ms": snapshots[-1]["timestamp-ms"],
        "last-column-id": 2 + args.stats_columns, "schemas": [schema], "current-schema-id": 0, "partition-specs": [SPEC],
        "default-spec-id": 0, "last-partition-id": 1000, "properties": {},
        "current-snapshot-id": snapshots[-1]["snapshot-id"], "snapshots": snapshots,
        "snapshot-log": [{"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snapshots],
        "metadata-log": [], "sort-orders": [{"order-id": 0, "fields": []}], "default-sort-order-id": 0,
        "refs": {"main": {"snapshot-id": snapshots[-1]["snapshot-id"], "type": "branch"}},
    }
    mdpath = f"{out}/metadata/00001-{uuid.uuid4()}.metadata.json"
    with open(mdpath, "w") as f:
        json.dump(md, f)
    os.utime(mdpath, (old_s, old_s))
    with open(f"{out}/metadata/version-hint.text", "w") as f:
        f.write("1")
    os.utime(f"{out}/metadata/version-hint.text", (old_s, old_s))
    print(f"{args.files} data files in {args.snapshots} snapshots ({args.partitions} partitions) "
          f"in {t1 - t0:.1f} s, {args.orphans} orphans; {2 * args.snapshots + 2} metadata files", file=sys.stderr)
    print(json.dumps({"location": loc, "metadata_location": f"file://{mdpath}", "now_ms": now_ms}))


if __name__ == "__main__":
    main()
