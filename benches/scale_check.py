#!/usr/bin/env python3
"""Plan a generated table of N files end to end and check the plan.

    python3 benches/scale_check.py [--format iceberg|delta] [--files 1000000]
                                   [--snapshots 100] [--parts 10] [--row-group 100000]
                                   [--orphans 10000] [--lakesweep BIN] [--wasm W]
                                   [--stats-columns 0] [--manifest-cache] [--dir DIR] [--keep]

Writes the table, an Iceberg one with benches/iceberg_table.py (manifests
written directly, --snapshots fast appends) or a Delta one with
benches/delta_multipart_table.py (a checkpoint of --parts parts, --row-group
rows per row group, and commits after it); data files are created empty and
orphans planted 30 days old. Times the listing's own cost on the same tree
(a walk that reads every file's size and time, as a plan must), then runs
`lakesweep plan DIR --json` and checks the plan: every listed object, and
exactly the planted garbage to delete. Prints the plan's wall time and peak memory (the sidecar process's
own, from wait4) next to the walk's time. Exits non-zero on any difference.

scripts/test.sh runs it on 1,000,000 files with the test build of the
sidecar; the figures in docs/benchmark.md come from the release build.

Iceberg: --stats-columns N writes column statistics for N columns into every
manifest entry (as engines do). --manifest-cache plans twice more with
`--manifest-cache` in a fresh cache folder (the first fills it, the second
reads every manifest's digest from it) and checks that all three plans are
the same plan.
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

REPO = Path(__file__).resolve().parent.parent


def walk_cost(root):
    """Seconds to walk `root` reading every file's size and time."""
    t = time.perf_counter()
    n = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    st = e.stat(follow_symlinks=False)
                    n += st.st_size >= 0 and st.st_mtime > 0
    return time.perf_counter() - t, n


def run_plan(cmd, env=None):
    """Runs one plan; returns (wall seconds, peak MiB, the plan)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        errf.seek(0)
        err = errf.read()
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"lakesweep plan failed ({code}):\n{err.decode(errors='replace')}")
    return wall, usage.ru_maxrss / 1024, json.loads(out)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--format", choices=["iceberg", "delta"], default="iceberg")
    a.add_argument("--files", type=int, default=1_000_000)
    a.add_argument("--snapshots", type=int, default=100, help="Iceberg: fast appends")
    a.add_argument("--parts", type=int, default=10, help="Delta: checkpoint parts")
    a.add_argument("--row-group", type=int, default=100_000, help="Delta: checkpoint rows per row group")
    a.add_argument("--orphans", type=int, default=10_000)
    a.add_argument("--lakesweep", default=os.environ.get(
        "LAKESWEEP_SIDECAR", str(REPO / "host-examples/sidecar/target/release/lakesweep")))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    a.add_argument("--stats-columns", type=int, default=0, help="Iceberg: statistics per manifest entry")
    a.add_argument("--manifest-cache", action="store_true", help="Iceberg: plan again from a manifest cache")
    a.add_argument("--dir", help="where to write the table (default: a temporary folder)")
    a.add_argument("--keep", action="store_true", help="keep the table afterwards")
    args = a.parse_args()

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lakesweep-scale-"))
    table = base / "table"
    try:
        t = time.perf_counter()
        common = [str(table), "--force", "--files", str(args.files), "--orphans", str(args.orphans),
                  "--partitions", "1000"]
        if args.format == "iceberg":
            gen = [str(REPO / "benches/iceberg_table.py"), *common, "--snapshots", str(args.snapshots),
                   "--stats-columns", str(args.stats_columns)]
            shape = f"{args.snapshots} snapshots"
        else:
            expect = base / "expect.txt"
            gen = [str(REPO / "benches/delta_multipart_table.py"), *common, "--parts", str(args.parts),
                   "--row-group", str(args.row_group), "--expect", str(expect)]
            shape = f"a checkpoint of {args.parts} parts"
        gen = subprocess.run([sys.executable, *gen], capture_output=True, text=True)
        if gen.returncode != 0:
            sys.exit(f"the generator failed:\n{gen.stderr}")
        made = json.loads(gen.stdout)
        print(f"generated {args.format} table: {args.files:,} files, {shape}, {args.orphans:,} orphans "
              f"in {time.perf_counter() - t:.1f} s")
        walk_s, walked = walk_cost(str(table))
        cmd = [args.lakesweep, "plan", str(table), "--now", str(made["now_ms"]), "--json", "--wasm", args.wasm]
        if args.format == "iceberg":
            cmd += ["--metadata", made["metadata_location"]]
            want = sorted(f"data/p={i % 1000}/orphan-{i:07d}.parquet" for i in range(args.orphans))
        else:
            cmd += ["--format", "delta"]
            want = expect.read_text().split()
        wall, peak_mib, plan = run_plan(cmd)
        deleted = sorted(d["key"] for d in plan["delete"])
        listed = plan["summary"]["listed"]["count"]
        problems = []
        if deleted != want:
            extra = sorted(set(deleted) - set(want))[:5]
            missing = sorted(set(want) - set(deleted))[:5]
            problems.append(f"the plan deletes {len(deleted)} keys, not the {len(want)} planted "
                            f"(extra {extra}, missing {missing})")
        if listed != walked:
            problems.append(f"the plan listed {listed} objects, the walk found {walked}")
        print(f"lakesweep plan: {wall:.2f} s, {peak_mib:.0f} MiB peak; {listed:,} objects listed, "
              f"{len(deleted):,} to delete, keep set {plan['summary']['keepSetBytes'] / max(1, args.files):.1f} "
              f"bytes per file")
        print(f"the listing's own cost (a walk reading every size and time): {walk_s:.2f} s "
              f"(plan / walk = {wall / walk_s:.1f}x)")
        if args.manifest_cache and args.format == "iceberg":
            env = dict(os.environ, LAKESWEEP_CACHE_DIR=str(base / "cache"))
            for run in ("filling", "reading"):
                c_wall, c_peak, c_plan = run_plan(cmd + ["--manifest-cache"], env)
                print(f"lakesweep plan --manifest-cache, {run} the cache: {c_wall:.2f} s, {c_peak:.0f} MiB peak "
                      f"(plan / walk = {c_wall / walk_s:.1f}x)")
                if c_plan["digest"] != plan["digest"]:
                    problems.append(f"the plan {run} the manifest cache differs from the plan without it")
        if problems:
            sys.exit("; ".join(problems))
        print("ok: every object listed, exactly the planted garbage to delete")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
