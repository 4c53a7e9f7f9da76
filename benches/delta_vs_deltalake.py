#!/usr/bin/env python3
"""Time `lakesweep plan` against deltalake's full vacuum dry run on one Delta table.

    python3 benches/delta_vs_deltalake.py TABLE_DIR [--runs 5] [--lakesweep PATH] [--manifest-cache]

Make the table with benches/delta_table.py (100,000 files and a checkpoint by
default). Runs, alternating, --runs times each:

  lakesweep  LAKESWEEP plan TABLE_DIR --format delta --out PLAN.json
             (default binary: host-examples/sidecar/target/release/lakesweep
             under the repository root; it finds target/lakesweep.wasm itself
             and runs it in wasmtime; the component's machine code comes from
             its compile cache, so one more run with the cache off
             (LAKESWEEP_CACHE_DIR="") is reported separately as "cold")
  deltalake  python3 -c 'DeltaTable(TABLE_DIR).vacuum(dry_run=True, full=True)'
             with the default retention, enforced (deltalake from PyPI)

each under `/usr/bin/time -f "%e %M"` (Debian package `time`), which gives the
wall seconds and peak RSS (KiB) of the whole process: for deltalake that
includes starting Python and importing deltalake, so the time of the vacuum
call alone is printed as well. Prints the per-run figures, the medians, the
ratio of the medians (deltalake / lakesweep), the peak memory of each, and as
a sanity check the number of files each would delete (lakesweep: the "delete"
array of its JSON output; deltalake: the returned list) and the size of the
symmetric difference of the two sets (relative keys, compared exactly).

With --manifest-cache, lakesweep then plans once more with --manifest-cache
and a fresh cache folder (filling it: every checkpoint file digested and
filed) and --runs times reading the filed digests, and the medians of both
are printed with their ratio to the plain runs; the delete lists must match.

If lakesweep exits non-zero its stderr is printed and deltalake is still
timed. Exits 0 unless deltalake fails.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_LAKESWEEP = os.path.join(ROOT, "host-examples", "sidecar", "target", "release", "lakesweep")
TIME = "/usr/bin/time"

# The deltalake side: argv[1] table, argv[2] where to write the result.
VACUUM = """
import json, sys, time
from deltalake import DeltaTable
t0 = time.perf_counter()
files = DeltaTable(sys.argv[1]).vacuum(dry_run=True, full=True)
t1 = time.perf_counter()
with open(sys.argv[2], "w") as f:
    json.dump({"seconds": t1 - t0, "files": files}, f)
"""


def timed(cmd, tmp, stdout_path, env=None):
    """Runs cmd under /usr/bin/time; returns (rc, wall s, peak KiB, stderr)."""
    tfile = os.path.join(tmp, "time.txt")
    with open(stdout_path, "wb") as out:
        p = subprocess.run([TIME, "-f", "%e %M", "-o", tfile] + cmd, cwd=ROOT,
                           stdout=out, stderr=subprocess.PIPE,
                           env=None if env is None else {**os.environ, **env})
    with open(tfile) as f:
        # With a non-zero exit, time writes "Command exited with non-zero
        # status N" before the format line.
        last = f.read().strip().splitlines()[-1].split()
    return p.returncode, float(last[0]), int(last[1]), p.stderr.decode(errors="replace")


def lakesweep_deletes(stdout_path, plan_path):
    """The keys of the "delete" array: --json prints strings, the sealed
    plan (--out) holds objects with a "key"."""
    for path in (stdout_path, plan_path):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("delete"), list):
            return [d["key"] if isinstance(d, dict) else d for d in doc["delete"]]
    return None


def cache_runs(a, ls_cmd, tmp, ls_stdout, plan_path, want_keys):
    """Plans with --manifest-cache in a fresh cache folder: once filling it,
    then --runs times reading it. Returns ((wall, KiB), [(wall, KiB)])."""
    env = {"LAKESWEEP_CACHE_DIR": os.path.join(tmp, "digest-cache")}
    cmd = ls_cmd + ["--manifest-cache"]
    out = []
    for i in range(a.runs + 1):
        rc, wall, kib, err = timed(cmd, tmp, ls_stdout, env=env)
        if rc != 0:
            sys.exit(f"lakesweep --manifest-cache failed (exit {rc}):\n{err}")
        keys = lakesweep_deletes(ls_stdout, plan_path)
        if sorted(keys or []) != sorted(want_keys or []):
            sys.exit("lakesweep --manifest-cache planned other deletes than without the cache")
        what = "filling" if i == 0 else "cached"
        print(f"{i:>4} {'lakesweep':<10} {wall:8.2f} {mib(kib):>12}  --manifest-cache {what}", flush=True)
        out.append((wall, kib))
    return out[0], out[1:]


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("table_dir")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lakesweep", default=DEFAULT_LAKESWEEP, help="the lakesweep binary")
    ap.add_argument("--manifest-cache", action="store_true",
                    help="also time plans filling and reading the digest cache")
    a = ap.parse_args()
    table = os.path.abspath(a.table_dir)
    if not os.path.isdir(os.path.join(table, "_delta_log")):
        sys.exit(f"{table} is not a Delta table (no _delta_log/)")
    if not os.access(TIME, os.X_OK):
        sys.exit(f"{TIME} is missing: apt-get install time")
    have_lakesweep = os.access(a.lakesweep, os.X_OK)
    if not have_lakesweep:
        print(f"lakesweep binary not found at {a.lakesweep}: timing deltalake only", flush=True)

    tmp = tempfile.mkdtemp(prefix="lakesweep-delta-bench-")
    plan_path = os.path.join(tmp, "plan.json")
    ls_stdout = os.path.join(tmp, "lakesweep.stdout.json")
    dl_result = os.path.join(tmp, "deltalake.json")
    ls_cmd = [a.lakesweep, "plan", table, "--format", "delta", "--out", plan_path]
    dl_cmd = [sys.executable, "-c", VACUUM, table, dl_result]

    ls_runs, dl_runs = [], []  # (wall s, peak KiB[, vacuum-call s])
    ls_keys = dl_keys = None
    ls_failed = 0
    print(f"table {table}, {a.runs} runs each, alternating")
    if have_lakesweep:
        rc, wall, kib, err = timed(ls_cmd, tmp, ls_stdout, env={"LAKESWEEP_CACHE_DIR": ""})
        print(f"cold lakesweep (component compiled in this run, cache off): {wall:.2f} s, {mib(kib)}"
              + ("" if rc == 0 else f" FAILED exit {rc}"), flush=True)
        # Warm the compile cache so the timed runs measure planning.
        timed(ls_cmd, tmp, ls_stdout)
    print(f"{'run':>4} {'tool':<10} {'wall s':>8} {'peak RSS':>12}  note")
    try:
        for i in range(1, a.runs + 1):
            if have_lakesweep:
                rc, wall, kib, err = timed(ls_cmd, tmp, ls_stdout)
                if rc == 0:
                    ls_runs.append((wall, kib))
                    ls_keys = lakesweep_deletes(ls_stdout, plan_path)
                    n = "?" if ls_keys is None else len(ls_keys)
                    print(f"{i:>4} {'lakesweep':<10} {wall:8.2f} {mib(kib):>12}  delete {n}", flush=True)
                else:
                    ls_failed += 1
                    print(f"{i:>4} {'lakesweep':<10} {wall:8.2f} {mib(kib):>12}  FAILED exit {rc}", flush=True)
                    tail = err.strip()[-4000:]
                    print("       stderr: " + tail.replace("\n", "\n       "), flush=True)
            rc, wall, kib, err = timed(dl_cmd, tmp, os.devnull)
            if rc != 0:
                print(f"deltalake failed (exit {rc}):\n{err}", file=sys.stderr)
                sys.exit(1)
            with open(dl_result) as f:
                res = json.load(f)
            dl_keys = res["files"]
            dl_runs.append((wall, kib, res["seconds"]))
            print(f"{i:>4} {'deltalake':<10} {wall:8.2f} {mib(kib):>12}  delete {len(dl_keys)}, "
                  f"vacuum call {res['seconds']:.2f} s", flush=True)
        cached = cache_runs(a, ls_cmd, tmp, ls_stdout, plan_path, ls_keys) \
            if a.manifest_cache and have_lakesweep and ls_runs else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    dl_med = statistics.median(r[0] for r in dl_runs)
    dl_call = statistics.median(r[2] for r in dl_runs)
    print(f"deltalake  median wall {dl_med:.3f} s (vacuum call alone {dl_call:.3f} s), "
          f"peak RSS max {mib(max(r[1] for r in dl_runs))}, "
          f"median {mib(statistics.median(r[1] for r in dl_runs))}")
    if ls_runs:
        ls_med = statistics.median(r[0] for r in ls_runs)
        print(f"lakesweep  median wall {ls_med:.3f} s, "
              f"peak RSS max {mib(max(r[1] for r in ls_runs))}, "
              f"median {mib(statistics.median(r[1] for r in ls_runs))}"
              + (f" ({ls_failed} failed runs left out)" if ls_failed else ""))
        if ls_med > 0:
            print(f"ratio of medians (deltalake / lakesweep): {dl_med / ls_med:.2f}")
    elif have_lakesweep:
        print(f"lakesweep  all {ls_failed} runs failed: no figures")
    if cached:
        fill, reads = cached
        med = statistics.median(r[0] for r in reads)
        print(f"lakesweep --manifest-cache: filling {fill[0]:.3f} s ({mib(fill[1])}), "
              f"reading digests median {med:.3f} s, peak RSS max {mib(max(r[1] for r in reads))}; "
              f"plain / cached {ls_med / med:.2f}, deltalake / cached {dl_med / med:.2f}")

    print()
    print(f"deltalake would delete {len(dl_keys)} files")
    if ls_keys is None:
        print("lakesweep: no delete list (no successful run, or no \"delete\" array in its output)")
        return
    ours, theirs = set(ls_keys), set(dl_keys)
    print(f"lakesweep would delete {len(ls_keys)} files")
    only_ls, only_dl = sorted(ours - theirs), sorted(theirs - ours)
    print(f"symmetric difference: {len(only_ls) + len(only_dl)} "
          f"(only lakesweep {len(only_ls)}, only deltalake {len(only_dl)})")
    for name, keys in (("only lakesweep", only_ls), ("only deltalake", only_dl)):
        for k in keys[:5]:
            print(f"  {name}: {k}")


if __name__ == "__main__":
    main()
