#!/usr/bin/env python3
"""Generate a large Delta table with deltalake (delta-rs) for GC benchmarks.

    pip install deltalake==1.6.6 pyarrow
    python3 benches/delta_table.py OUT_DIR [--files 100000] [--orphans 10000]
                                           [--partitions 10000] [--force]

Every data file, commit and the checkpoint are written by deltalake itself
(write_deltalake, DeltaTable.delete, DeltaTable.create_checkpoint); only the
orphans are planted by hand. The table is for timing `lakesweep plan` against
`DeltaTable.vacuum(dry_run=True, full=True)`, see benches/delta_vs_deltalake.py.

How the files are made: the table is partitioned by an integer column
`bucket` with --partitions distinct values, and every write carries exactly
one row per bucket, so deltalake writes one tiny parquet file (one row) per
partition per write. A one-row-per-partition write is the cheapest way to get
files out of deltalake: its writer never splits below a record batch
(`target_file_size` and the parquet writer properties do not give one file per
row), while a partition costs it only a file. Partitions per write are capped
by --partitions because the writer keeps an open file per partition in
memory (about 40 KB each).

History (versions, with the default sizes):
  0 .. R-1   create + appends, each one file per bucket (R = files/partitions)
  R          overwrite of 5 buckets (predicate): tombstones, 5 new files
  R+1        delete of 3 whole buckets: tombstones only
  checkpoint (DeltaTable.create_checkpoint) at version R+1
  R+2        append of 100 files (plus any shortfall to reach --files live)
  R+3        delete of 1 bucket: tombstones after the checkpoint
Automatic post-commit checkpoints and log cleanup are turned off, so the
checkpoint above is the only one.

Then --orphans unreferenced files named like deltalake's
(`part-00000-<uuid>-c000.snappy.parquet`, the bytes of a real data file) are
planted in randomly chosen partition directories, and the modification time
of every file under OUT_DIR (data, log, checkpoint, orphans) is set to 30 days
ago, so everything unreferenced is older than the default 7-day retention.
The `remove` actions keep their real deletionTimestamp (now): the tombstoned
files are old on disk but their tombstones are recent.

OUT_DIR must not exist or be empty, unless --force (which deletes it first).
Prints the time of each phase and a summary (files, versions, checkpoint).
"""
import argparse
import json
import os
import random
import shutil
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, PostCommitHookProperties, write_deltalake

DAY = 86_400
NO_HOOKS = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)


class Clock:
    def __init__(self):
        self.start = self.last = time.perf_counter()

    def lap(self, what):
        now = time.perf_counter()
        print(f"  {now - self.last:8.2f} s  {what}", flush=True)
        self.last = now


def rows(buckets, first_id):
    """One row for each bucket in `buckets`, ids from first_id."""
    n = len(buckets)
    ids = pa.array(range(first_id, first_id + n), pa.int64())
    return pa.table(
        {
            "id": ids,
            "bucket": pa.array(buckets, pa.int32()),
            "value": pa.array([float(i) * 0.5 for i in range(first_id, first_id + n)], pa.float64()),
        }
    )


def in_list(buckets):
    return "bucket IN (" + ", ".join(str(b) for b in buckets) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--files", type=int, default=100_000, help="live data files, at least (default 100000)")
    ap.add_argument("--orphans", type=int, default=10_000, help="old unreferenced files to plant (default 10000)")
    ap.add_argument("--partitions", type=int, default=10_000, help="distinct values of `bucket` (default 10000)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--force", action="store_true", help="delete OUT_DIR first if it exists")
    a = ap.parse_args()
    if a.partitions < 10:
        sys.exit("--partitions must be at least 10")

    out = os.path.abspath(a.out_dir)
    if os.path.exists(out) and os.listdir(out):
        if not a.force:
            sys.exit(f"{out} exists and is not empty (use --force to replace it)")
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    rng = random.Random(a.seed)
    P = a.partitions
    all_buckets = list(range(P))
    rounds = max(1, -(-a.files // P))
    next_id = 0
    clock = Clock()
    print(f"writing {out}: {rounds} writes x {P} partitions, then removes, checkpoint, 2 commits, "
          f"{a.orphans} orphans", flush=True)

    # 1. create + appends: one one-row file per bucket per write.
    for r in range(rounds):
        write_deltalake(
            out, rows(all_buckets, next_id), partition_by=["bucket"],
            mode="error" if r == 0 else "append",
            post_commithook_properties=NO_HOOKS,
        )
        next_id += P
        clock.lap(f"write {r + 1}/{rounds} ({P} files)")
    dt = DeltaTable(out)

    # 2. removes: overwrite a few buckets, delete a few whole buckets.
    chosen = rng.sample(all_buckets[1:], 9)  # bucket 0 is kept for the final append
    over, gone, gone_late = chosen[:5], chosen[5:8], chosen[8:]
    write_deltalake(
        dt, rows(over, next_id), partition_by=["bucket"], mode="overwrite",
        predicate=in_list(over), post_commithook_properties=NO_HOOKS,
    )
    next_id += len(over)
    clock.lap(f"overwrite buckets {over}")
    dt.update_incremental()
    m = dt.delete(in_list(gone), post_commithook_properties=NO_HOOKS)
    clock.lap(f"delete buckets {gone}: {m.get('num_removed_files')} files removed")

    # 3. checkpoint
    dt.update_incremental()
    dt.create_checkpoint()
    checkpoint_version = dt.version()
    clock.lap(f"checkpoint at version {checkpoint_version}")

    # 4. two JSON commits after the checkpoint: an append (at least 100
    #    files, plus whatever is missing to reach --files), a delete.
    live_now = len(dt.file_uris())
    late_removed = rounds  # one file per write in bucket gone_late
    extra = max(100, a.files - live_now + late_removed)
    free = [b for b in all_buckets if b not in gone and b not in gone_late]
    written = 0
    while written < extra:
        k = min(extra - written, len(free))
        write_deltalake(
            dt, rows(free[:k], next_id), partition_by=["bucket"], mode="append",
            post_commithook_properties=NO_HOOKS,
        )
        next_id += k
        written += k
        dt.update_incremental()
    clock.lap(f"append after checkpoint ({extra} files)")
    m = dt.delete(in_list(gone_late), post_commithook_properties=NO_HOOKS)
    clock.lap(f"delete bucket {gone_late}: {m.get('num_removed_files')} files removed")
    dt.update_incremental()

    # 5. orphans: real parquet bytes under deltalake-like names, in random
    #    partition directories that exist on disk.
    live = dt.file_uris()
    payload = open(live[0], "rb").read()
    dirs = sorted(
        d.path for d in os.scandir(out) if d.is_dir() and d.name.startswith("bucket=")
    )
    for i in range(a.orphans):
        d = rng.choice(dirs)
        name = f"part-{i % 100:05d}-{uuid.UUID(int=rng.getrandbits(128), version=4)}-c000.snappy.parquet"
        with open(os.path.join(d, name), "wb") as f:
            f.write(payload)
    clock.lap(f"planted {a.orphans} orphans in {len(dirs)} partition directories")

    # 6. every file 30 days old.
    old = time.time() - 30 * DAY
    n_files = 0
    total_bytes = 0
    for root, _dirs, files in os.walk(out):
        for f in files:
            p = os.path.join(root, f)
            os.utime(p, (old, old))
            n_files += 1
            total_bytes += os.stat(p).st_size
    clock.lap(f"set mtime of {n_files} files to 30 days ago")

    # Summary
    log = os.path.join(out, "_delta_log")
    cps = sorted(f for f in os.listdir(log) if ".checkpoint." in f)
    cp_rows = sum(pq.ParquetFile(os.path.join(log, f)).metadata.num_rows for f in cps)
    cp_bytes = sum(os.path.getsize(os.path.join(log, f)) for f in cps)
    commits = sorted(f for f in os.listdir(log) if f.endswith(".json"))
    data_on_disk = sum(
        1 for root, _d, files in os.walk(out) if "_delta_log" not in root
        for f in files if f.endswith(".parquet")
    )
    tombstoned_on_disk = data_on_disk - len(live) - a.orphans
    summary = {
        "table": out,
        "version": dt.version(),
        "commits": len(commits),
        "checkpoint_version": checkpoint_version,
        "checkpoint_files": cps,
        "checkpoint_bytes": cp_bytes,
        "checkpoint_rows": cp_rows,
        "partitions": P,
        "partition_dirs": len(dirs),
        "live_files": len(live),
        "tombstoned_files_on_disk": tombstoned_on_disk,
        "orphans": a.orphans,
        "files_on_disk": n_files,
        "bytes_on_disk": total_bytes,
        "seconds": round(time.perf_counter() - clock.start, 1),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
