#!/usr/bin/env python3
"""A deltalake-written table with a commit added by hand, as other writers
(Spark shallow clones, hand-made repairs, scripts) write them: `add.path` is an
absolute URI into the table itself, spelled with dot segments.

    python3 tests/py/delta_dot_segments.py write ROOT
        writes ROOT/t with deltalake 1.6.6 (partition column p, values v and w,
        version 0), makes the sibling folder ROOT/x, copies a live data file to
        ROOT/t/p=v/dotdot.parquet and ROOT/t/p=w/dot.parquet and commits them
        as version 1 with the paths
            file://ROOT/x/../t/p=v/dotdot.parquet
            file://ROOT/t/./p=w/dot.parquet
        then dates every file 30 days back. Prints {"now_ms": ...}.

    python3 tests/py/delta_dot_segments.py read ROOT
        what readers make of the table: {"version": N, "add_paths": [...] (as
        deltalake reads them from the log), "rows": {path: rows read by
        pyarrow through the URI, as Spark/Hadoop readers resolve it}}.
        deltalake 1.6.6 itself joins every add path onto the table root (it
        does not read absolute local paths), so the file is opened with
        pyarrow's file system from the URI the log holds.
"""
import json
import os
import shutil
import sys
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake


def write(root):
    t = os.path.join(root, "t")
    write_deltalake(t, pa.table({"p": ["v", "w"], "x": [1, 2]}), partition_by=["p"])
    os.makedirs(os.path.join(root, "x"), exist_ok=True)
    src = DeltaTable(t).file_uris()[0]
    now_ms = int(time.time() * 1000)
    adds = []
    for part, name, uri in [
        ("v", "dotdot.parquet", f"file://{root}/x/../t/p=v/dotdot.parquet"),
        ("w", "dot.parquet", f"file://{root}/t/./p=w/dot.parquet"),
    ]:
        dst = os.path.join(t, f"p={part}", name)
        shutil.copy(src, dst)
        adds.append({"add": {"path": uri, "partitionValues": {"p": part},
                             "size": os.path.getsize(dst), "modificationTime": now_ms,
                             "dataChange": True}})
    with open(os.path.join(t, "_delta_log", "%020d.json" % 1), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": now_ms, "operation": "WRITE",
                                           "engineInfo": "hand-written"}}) + "\n")
        for a in adds:
            f.write(json.dumps(a) + "\n")
    old = time.time() - 30 * 86400
    for d, _, files in os.walk(t):
        for n in files:
            os.utime(os.path.join(d, n), (old, old))
    print(json.dumps({"now_ms": now_ms}))


def read(root):
    t = os.path.join(root, "t")
    dt = DeltaTable(t)
    paths = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
    rows = {}
    for p in paths:
        uri = p if ":" in p.split("/")[0] else "file://" + os.path.join(t, p)
        fs, inner = pafs.FileSystem.from_uri(uri)
        rows[p] = pq.read_table(inner, filesystem=fs).num_rows
    print(json.dumps({"version": dt.version(), "add_paths": sorted(paths), "rows": rows}))


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
