"""A real deltalake table for the sidecar's shadow-rollout test (deltalake 1.6.6).

Usage:
  delta_shadow.py make DIR    write a partitioned Delta table at DIR (three
                              appends: live files only, so both jobs judge
                              every candidate by its modification time),
                              plant garbage beside it, and date
                              every data file 30 days ago (the log keeps its
                              own times); prints JSON: {"old": [orphans dated
                              30 days ago], "mid": orphan dated 10.5 days ago,
                              "hidden": an orphan with a hidden name below the
                              top level, "rows": rows}
  delta_shadow.py rows DIR    rows of the current version
"""
import json
import os
import sys
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

DAY = 86_400


def date(path, seconds_ago):
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def plant(dir, rel, seconds_ago):
    p = os.path.join(dir, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(b"PAR1 garbage PAR1")
    date(p, seconds_ago)
    return rel


def make(dir):
    for i in range(3):
        t = pa.table({"part": ["a", "b"], "n": [i, i + 10]})
        write_deltalake(dir, t, partition_by=["part"], mode="append")
    for root, _, files in os.walk(dir):
        if "_delta_log" in root:
            continue
        for f in files:
            date(os.path.join(root, f), 30 * DAY)
    old = [plant(dir, "part=a/part-00000-orphan-old-1.parquet", 30 * DAY),
           plant(dir, "part-00000-orphan-old-2.parquet", 30 * DAY)]
    mid = plant(dir, "part=b/part-00000-orphan-mid.parquet", int(10.5 * DAY))
    hidden = plant(dir, "part=a/.part-00000-orphan-hidden.parquet", 30 * DAY)
    print(json.dumps({"old": old, "mid": mid, "hidden": hidden, "rows": rows(dir)}), flush=True)


def rows(dir):
    return DeltaTable(dir).to_pyarrow_table().num_rows


if __name__ == "__main__":
    cmd, dir = sys.argv[1], sys.argv[2]
    if cmd == "make":
        make(dir)
    else:
        print(json.dumps({"rows": rows(dir)}), flush=True)
    # deltalake's runtime threads can abort a normal interpreter shutdown.
    os._exit(0)
