#!/usr/bin/env python3
"""An independent oracle for what a Delta table still needs: its live data
files (from deltalake 1.6.6's own `file_uris()`) and the deletion-vector files
those files use (deltalake does not expose them, so the log is replayed here
with pyarrow's Parquet reader and json, cross-checked against deltalake's live
list). Tests compare lakesweep's plans against it; nothing is shared with
lakesweep's Rust reader.

    python3 tests/py/delta_live.py TABLE_DIR

Prints {"live": [...], "live_dvs": [...]}: relative paths as on disk, sorted.
"""
import json
import os
import re
import sys
from urllib.parse import unquote

import pyarrow.parquet as pq
from deltalake import DeltaTable

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_uuid(text):
    out = bytearray()
    for i in range(0, len(text), 5):
        v = 0
        for c in text[i : i + 5]:
            v = v * 85 + Z85.index(c)
        out += v.to_bytes(4, "big")
    h = out.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def dv_file(dv):
    if not dv or dv.get("storageType") == "i":
        return None
    p = dv["pathOrInlineDv"]
    if dv["storageType"] == "p":
        return unquote(p)
    prefix, uid = p[:-20], p[-20:]
    name = f"deletion_vector_{z85_uuid(uid)}.bin"
    return f"{prefix}/{name}" if prefix else name


def dv_key(dv):
    if not dv:
        return ""
    return f"{dv['storageType']}:{dv['pathOrInlineDv']}:{dv.get('offset')}"


def checkpoint_rows(log, name):
    """add/remove rows of a checkpoint file, following V2 sidecars."""
    path = os.path.join(log, name)
    if name.endswith(".json"):
        rows = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    else:
        rows = pq.read_table(path).to_pylist()
    out = []
    for r in rows:
        sc = r.get("sidecar")
        if sc:
            out += pq.read_table(os.path.join(log, "_sidecars", unquote(sc["path"]))).to_pylist()
        else:
            out.append(r)
    return out


def replay(table_dir):
    log = os.path.join(table_dir, "_delta_log")
    names = os.listdir(log)
    commits = sorted(int(n[:20]) for n in names if re.fullmatch(r"\d{20}\.json", n))
    cps = {}
    for n in names:
        m = re.fullmatch(r"(\d{20})\.checkpoint(\..+)?\.(parquet|json)", n)
        if m:
            cps.setdefault(int(m.group(1)), []).append(n)
    complete = []
    for v, files in cps.items():
        single = [f for f in files if f.count(".") == 2 or len(f.split(".")) == 4]
        parts = [f for f in files if len(f.split(".")) == 5]
        if single:
            complete.append((v, single[:1]))
        elif parts and len(parts) == int(parts[0].split(".")[3]):
            complete.append((v, sorted(parts)))
    live = {}
    start = 0
    if complete:
        v, files = max(complete)
        start = v + 1
        for f in files:
            for r in checkpoint_rows(log, f):
                a = r.get("add")
                if a:
                    dv = a.get("deletionVector")
                    live[(unquote(a["path"]), dv_key(dv))] = dv_file(dv)
    for v in (c for c in commits if c >= start):
        for line in open(os.path.join(log, f"{v:020}.json"), encoding="utf-8"):
            if not line.strip():
                continue
            act = json.loads(line)
            if "remove" in act:
                r = act["remove"]
                live.pop((unquote(r["path"]), dv_key(r.get("deletionVector"))), None)
            if "add" in act:
                a = act["add"]
                dv = a.get("deletionVector")
                live[(unquote(a["path"]), dv_key(dv))] = dv_file(dv)
    return live


def main():
    table_dir = os.path.realpath(sys.argv[1])
    theirs = sorted(
        os.path.relpath(u[len("file://") :] if u.startswith("file://") else u, table_dir)
        for u in DeltaTable(table_dir).file_uris()
    )
    mine = replay(table_dir)
    if sorted({p for p, _ in mine}) != theirs:
        raise SystemExit(f"delta_live: replay disagrees with deltalake: {sorted(mine)} vs {theirs}")
    dvs = sorted({f for f in mine.values() if f})
    json.dump({"live": theirs, "live_dvs": dvs}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
    # deltalake's runtime threads can abort the interpreter at shutdown
    # ("terminate called without an active exception"); the answer is out.
    sys.stdout.flush()
    os._exit(0)
