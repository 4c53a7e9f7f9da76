#!/usr/bin/env python3
"""A whole two-phase deletion cycle at scale: `lakesweep sweep` run until
every planted orphan of a deltalake table is VERIFIED.

    python3 benches/ledger_cycle.py [--orphans 100000] [--files 20000]
        [--lakesweep BIN] [--wasm W] [--cache DIR] [--dir DIR] [--keep]

The table is written by deltalake (benches/delta_table.py: --files live
one-row files over 10,000 partitions, a checkpoint, commits after it) and
--orphans unreferenced files planted among them, all dated 30 days back. It
is generated once into --cache (reused when its parameters match) and
hard-linked into a fresh work folder, so a run deletes links, never the
cached table.

Then `lakesweep sweep` runs with a one-hour quarantine at clocks two hours
apart (--now, --allow-future-now), and each run's wall time, peak memory
(the sidecar process's own, from wait4), the ledger's bytes (the head, its
object segments and deleted-key index, apart from the archives of verified
objects' receipts) and its states are printed, until every orphan is
VERIFIED (at most --runs runs). Then it checks: every orphan is gone, every
live file of the table is still there, and the ledger verifies
(`lakesweep ledger verify`). Exits non-zero on any difference.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parent.parent
HOUR_MS = 3_600_000


def run(cmd):
    """Runs one command; returns (wall s, peak MiB, exit code, stdout, stderr)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out.read(), err.read()


def table_files(root):
    """Every data file (relative path) under `root`, the log and ledger aside."""
    found = set()
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel.split(os.sep)[0] in ("_delta_log", "_lakesweep"):
            continue
        for f in files:
            found.add(os.path.normpath(os.path.join(rel, f)))
    return found


def ledger_bytes(root):
    """(live ledger bytes, archive bytes) under `root/_lakesweep`."""
    live = archived = 0
    for d, _dirs, files in os.walk(os.path.join(root, "_lakesweep")):
        for f in files:
            n = os.path.getsize(os.path.join(d, f))
            if f.startswith("archive-"):
                archived += n
            elif not f.endswith((".lock", ".mark")):
                live += n
    return live, archived


def tombstoned(table):
    """The data files the table's log removed (remove actions of its commits
    and its checkpoint): inside the tombstone retention, they are kept."""
    import pyarrow.parquet as pq
    out = set()
    log = Path(table) / "_delta_log"
    for f in sorted(log.iterdir()):
        if f.name.endswith(".json"):
            for line in f.read_text().splitlines():
                a = json.loads(line) if line.strip() else {}
                if "remove" in a:
                    out.add(os.path.normpath(unquote(a["remove"]["path"])))
        elif ".checkpoint." in f.name and f.name.endswith(".parquet"):
            for r in pq.read_table(f, columns=["remove"]).column("remove").to_pylist():
                if r and r.get("path"):
                    out.add(os.path.normpath(unquote(r["path"])))
    return out


def generate(cache, files, orphans):
    """The cached template table, generated when missing or different."""
    want = {"files": files, "orphans": orphans, "generator": "delta_table.py"}
    stamp = cache / "params.json"
    table = cache / "table"
    if stamp.exists() and json.loads(stamp.read_text()) == want and table.is_dir():
        return table, json.loads((cache / "live.json").read_text())
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    t = time.perf_counter()
    gen = subprocess.run(
        [sys.executable, str(REPO / "benches/delta_table.py"), str(table), "--files", str(files),
         "--orphans", str(orphans), "--partitions", "10000"],
        capture_output=True, text=True)
    if gen.returncode != 0:
        sys.exit(f"the generator failed:\n{gen.stderr}\n{gen.stdout}")
    from deltalake import DeltaTable
    live = sorted(os.path.relpath(u.removeprefix("file://"), table) for u in DeltaTable(str(table)).file_uris())
    (cache / "live.json").write_text(json.dumps(live))
    stamp.write_text(json.dumps(want))
    print(f"generated the table ({files:,} live files, {orphans:,} orphans) in {time.perf_counter() - t:.0f} s",
          flush=True)
    return table, live


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--orphans", type=int, default=100_000)
    a.add_argument("--files", type=int, default=20_000)
    a.add_argument("--runs", type=int, default=8, help="give up after this many sweeps")
    a.add_argument("--lakesweep", default=os.environ.get(
        "LAKESWEEP_SIDECAR", str(REPO / "host-examples/sidecar/target/release/lakesweep")))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    a.add_argument("--cache", help="where the generated table is kept between runs "
                   "(default: a temporary folder, removed afterwards)")
    a.add_argument("--dir", help="the work folder (default: a temporary folder)")
    a.add_argument("--keep", action="store_true", help="keep the work folder afterwards")
    args = a.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="lakesweep-cycle-"))
    cache = Path(args.cache) if args.cache else tmp / "cache"
    work = Path(args.dir) if args.dir else tmp / "work"
    try:
        template, live = generate(cache, args.files, args.orphans)
        shutil.rmtree(work, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run(["cp", "-al", str(template), str(work)], check=True)
        print(f"linked a work copy in {time.perf_counter() - t:.1f} s", flush=True)
        before = table_files(work)
        # The planted orphans; the files the table's removes left stay
        # (their tombstones are younger than the retention).
        removed = tombstoned(work) & before
        orphans = before - set(live) - removed
        if len(orphans) != args.orphans:
            sys.exit(f"expected {args.orphans} orphans, found {len(orphans)}")
        now = int(time.time() * 1000)
        rows = []
        print(f"{'run':>3} {'wall s':>8} {'peak MiB':>9} {'ledger B':>12} {'B/object':>9} "
              f"{'archives B':>11}  states")
        for i in range(1, args.runs + 1):
            now += 2 * HOUR_MS
            cmd = [args.lakesweep, "sweep", str(work), "--format", "delta", "--now", str(now),
                   "--allow-future-now", "--quarantine", "1h", "--json", "--wasm", args.wasm]
            wall, peak, code, out, err = run(cmd)
            if code not in (0,):
                sys.exit(f"sweep {i} exited {code}:\n{err.decode(errors='replace')[-4000:]}")
            report = json.loads(out)
            states = report["gates"]["states"]
            in_flight = sum(n for s, n in states.items() if s != "VERIFIED")
            live_b, arch_b = ledger_bytes(work)
            per = live_b / in_flight if in_flight else 0
            rows.append({"run": i, "wallS": round(wall, 2), "peakMiB": round(peak), "ledgerBytes": live_b,
                         "bytesPerObjectInFlight": round(per, 1), "archiveBytes": arch_b, "states": states})
            print(f"{i:>3} {wall:>8.2f} {peak:>9.0f} {live_b:>12,} {per:>9.1f} {arch_b:>11,}  "
                  f"{json.dumps(states, separators=(',', ':'))}", flush=True)
            if states.get("VERIFIED") == len(orphans) and in_flight == 0:
                break
        else:
            sys.exit(f"not every orphan was VERIFIED after {args.runs} sweeps")
        after = table_files(work)
        if after & orphans:
            sys.exit(f"{len(after & orphans)} orphans remain")
        lost = set(live) - after
        if lost:
            sys.exit(f"LIVE FILES DELETED: {sorted(lost)[:10]}")
        if removed - after:
            sys.exit(f"files inside the tombstone retention deleted: {sorted(removed - after)[:10]}")
        wall, peak, code, out, err = run([args.lakesweep, "ledger", "verify", str(work), "--wasm", args.wasm])
        if code != 0:
            sys.exit(f"ledger verify exited {code}:\n{err.decode(errors='replace')}{out.decode()}")
        print(f"ledger verify: {wall:.2f} s, {peak:.0f} MiB peak: {out.decode().strip().splitlines()[-1]}")
        print(json.dumps({"garbage": len(orphans), "liveFiles": len(live), "runs": rows}))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
            if args.dir:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
