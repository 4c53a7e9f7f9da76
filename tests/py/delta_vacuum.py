#!/usr/bin/env python3
"""Ask deltalake (delta-rs) which files its VACUUM would delete, as a peer for
lakesweep's Delta planner. A dry run: nothing is deleted, nothing committed.

    pip install deltalake==1.6.6
    python3 tests/py/delta_vacuum.py TABLE_DIR --retention-hours H [--full] [--no-enforce]

Prints one JSON object:
    {"files": [relative paths as on disk, sorted], "raw": [what deltalake returned]}

What deltalake 1.6.6 returns from DeltaTable.vacuum(dry_run=True), on a local
table: paths relative to the table root, '/'-separated, no scheme, spelling
the names as they are on disk (the object_store path, so `category=100%25/...`
for the directory literally named `category=100%25`; NOT the log's
URI-encoded `category=100%2525/...`, and not decoded to `category=100%/...`).
So "files" is "raw" sorted, after checking each entry names an existing file
under TABLE_DIR; a file:// URI or an absolute path, should a later version
return one, is made relative to TABLE_DIR.

How deltalake 1.6.6 decides (measured on the generated fixtures; worth
knowing when comparing with lakesweep):
  * tombstones (files named by a `remove` the snapshot still carries) expire
    by the remove action's deletionTimestamp against now - retention; their
    mtime is ignored (a tombstone with a future mtime still goes at 0 h, one
    aged 30 days by mtime but removed just now stays at 24 h);
  * lite (default) deletes only expired tombstones;
  * --full also deletes files that are neither live nor tombstones (orphans,
    _change_data/ files, whether or not a `cdc` action names them) once their
    mtime is older than now - retention;
  * a path is skipped as hidden only when the whole relative path starts with
    '.' or '_' (except _change_data/ and _delta_index/): `_staging/x`,
    `.top-level` and `_delta_log/...` are kept, but a dot-file inside a
    partition directory (`category=a%20b/.x.crc`) is not hidden to it;
  * with enforcement (the default) a retention below the table's
    delta.deletedFileRetentionDuration (168 h by default) is an error.
"""
import argparse
import json
import os
import sys
from urllib.parse import unquote, urlparse

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError


def to_rel(entry, table_dir):
    if entry.startswith("file://"):
        entry = unquote(urlparse(entry).path)
    if os.path.isabs(entry):
        entry = os.path.relpath(entry, table_dir)
    rel = entry.replace(os.sep, "/")
    if not os.path.isfile(os.path.join(table_dir, rel)):
        raise SystemExit(f"delta_vacuum: deltalake named {entry!r}, which is not a file under {table_dir}")
    return rel


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table_dir")
    ap.add_argument("--retention-hours", type=int, required=True)
    ap.add_argument("--full", action="store_true", help="vacuum mode full (also untracked files)")
    ap.add_argument("--no-enforce", action="store_true", help="allow a retention below the table's minimum")
    args = ap.parse_args(argv)
    table_dir = os.path.realpath(args.table_dir)
    try:
        raw = DeltaTable(table_dir).vacuum(
            retention_hours=args.retention_hours,
            dry_run=True,
            enforce_retention_duration=not args.no_enforce,
            full=args.full,
        )
    except DeltaError as e:
        raise SystemExit(f"delta_vacuum: {e}")
    files = sorted(to_rel(e, table_dir) for e in raw)
    json.dump({"files": files, "raw": list(raw)}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
    # deltalake's runtime threads can abort the interpreter at shutdown
    # ("terminate called without an active exception"); the answer is out.
    sys.stdout.flush()
    os._exit(0)
