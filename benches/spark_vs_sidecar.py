#!/usr/bin/env python3
"""Time a sweep plan of one generated Iceberg table on Spark with one and
with two executors (local[1], local[2]) against the sidecar (release
build) on the same table, in the same run, and check that all make the
same plan.

    python3 benches/iceberg_table.py /tmp/lsice-1m > /tmp/lsice-1m.json
    bash scripts/build-component.sh && (cd host-examples/sidecar && cargo build --release)
    python3 benches/spark_vs_sidecar.py /tmp/lsice-1m.json [--runs 3] [--masters 'local[1],local[2]']

Each Spark plan runs in a process of its own (``--one MASTER``), so its
figures are its own: the session's start (the JVM, apart), the plan call,
and the peak memory of the driver's Python process (the planner session,
the keep set, the candidates) and of the JVM (on a local master it is the
driver and the executors at once). The sidecar runs under /usr/bin/time
for its peak memory, with its default listing (names first, as the
executors list); each Spark plan, sealed with the sidecar's origin, must
equal the sidecar's (its report for people lies outside the seal and is
dropped), and every plan must delete the same keys.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "host-examples/spark"))


def sidecar_plan(binary, t, wasm, listing="names"):
    with tempfile.NamedTemporaryFile(suffix=".txt") as timing:
        started = time.monotonic()
        r = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", timing.name, str(binary), "plan", t["location"][len("file://"):],
             "--metadata", t["metadata_location"], "--now", str(t["now_ms"]), "--json"],
            capture_output=True, text=True,
            env={**os.environ, "LAKESWEEP_WASM": str(wasm), "LAKESWEEP_LOCAL_LISTING": listing},
        )
        wall = time.monotonic() - started
        if r.returncode != 0:
            sys.exit(f"sidecar failed: {r.stderr[-2000:]}")
        peak_kib = int(Path(timing.name).read_text().split()[-1])
    return wall, peak_kib, json.loads(r.stdout)


def deletes_digest(keys):
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


def _hwm_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _busy_s():
    """The CPU time (seconds) this process and every process under it
    have taken so far: the driver, the JVM, the Python workers and the
    children they have waited for (/proc's utime, stime, cutime and
    cstime). Its change over a plan call is the CPU that call took,
    whatever else the machine runs."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                # The fields after the command's closing parenthesis.
                f = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(p.name)] = (int(f[1]), sum(int(x) for x in f[11:15]))
    mine, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, (ppid, _) in stats.items() if ppid in mine} - mine
        mine |= more
        grew = bool(more)
    by = {}
    for pid in mine:
        if pid in stats:
            who = "driver" if pid == os.getpid() else "jvm" if stats[pid][0] == os.getpid() else "workers"
            by[who] = by.get(who, 0) + stats[pid][1] / tick
    return by


def _java_pids():
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "comm").read_text().strip() == "java" and os.getppid() != int(p.name):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


def one(master, table, origin, split_size, java_options=""):
    """One Spark plan in this process: prints its figures as JSON."""
    from lakesweep_spark import plan, session

    t = json.loads(Path(table).read_text())
    before = set(_java_pids())
    started = time.monotonic()
    import shlex

    java = f"--driver-java-options {shlex.quote(java_options)} " if java_options else ""
    # This process's own launch: whatever the environment held would
    # drop the master or the JVM's options.
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--master {master} {java}pyspark-shell"
    spark = session("lakesweep-bench")
    assert spark.sparkContext.master == master, spark.sparkContext.master
    spark.sparkContext.addPyFile(str(REPO / "host-examples/spark/lakesweep_spark.py"))
    jvm = time.monotonic() - started
    stages, driver_cpu = [], [time.process_time()]

    def stage(line):
        # The driver's own CPU in the stage: the rest of its time it waited.
        now = time.process_time()
        stages.append(f"{line} [driver busy {now - driver_cpu[0]:.2f} s; {_hwm_kib(os.getpid()) / 1024:.0f} MiB "
                      f"peak so far]")
        driver_cpu[0] = now

    with tempfile.TemporaryDirectory() as d:
        started, busy, driver_cpu[0] = time.monotonic(), _busy_s(), time.process_time()
        p, decided = plan(spark, t["location"], t["metadata_location"], t["now_ms"], store_spec={"local": []},
                          origin=origin, split_size=split_size, decisions=d,
                          progress=stage)
        took, after = time.monotonic() - started, _busy_s()
        cpu = {k: v - busy.get(k, 0) for k, v in after.items()}
        files = len(os.listdir(d))
    java = [pid for pid in _java_pids() if pid not in before]
    jvm_peak = max((_hwm_kib(pid) for pid in java), default=0)
    py_peak = _hwm_kib(os.getpid())
    spark.stop()
    print(json.dumps({
        "master": master, "session_s": jvm, "plan_s": took, "cpu_s": sum(cpu.values()), "cpu_by": cpu, "python_peak_kib": py_peak, "jvm_peak_kib": jvm_peak,
        "deletes": len(p.delete), "deletes_digest": deletes_digest(k for k, _ in p.delete), "splits": files,
        "listed": p.summary["listed"]["count"], "stages": stages, "document": p.document,
    }))


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("table", help="the JSON benches/iceberg_table.py printed")
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--masters", default="local[1],local[2]")
    a.add_argument("--split-size", type=int, default=50_000)
    a.add_argument("--java-options", default="", help="the JVM's options (spark-submit's --driver-java-options; "
                   "on a local master the driver's JVM runs the executors too)")
    a.add_argument("--one", metavar="MASTER", help="(internal) one Spark plan in this process")
    a.add_argument("--origin", help="(internal) the origin to seal with")
    a.add_argument("--sidecar", default=str(REPO / "host-examples/sidecar/target/release/lakesweep"))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    args = a.parse_args()
    if args.one:
        return one(args.one, args.table, args.origin, args.split_size, args.java_options)
    t = json.loads(Path(args.table).read_text())
    # The plan the Spark plans must equal: the sidecar's, names first as
    # the executors list (sealed with its origin).
    _, _, ref = sidecar_plan(args.sidecar, t, args.wasm)
    del ref["report"]
    want = deletes_digest(d["key"] for d in ref["delete"])
    masters = args.masters.split(",")
    side, spark = [], {m: [] for m in masters}
    for run in range(args.runs):
        wall, peak, plan = sidecar_plan(args.sidecar, t, args.wasm)
        if deletes_digest(d["key"] for d in plan["delete"]) != want:
            sys.exit("the sidecar's delete lists differ between its runs")
        side.append((wall, peak))
        line = [f"run {run + 1}: sidecar {wall:.2f} s ({peak / 1024:.0f} MiB)"]
        for m in masters:
            r = subprocess.run(
                [sys.executable, __file__, args.table, "--one", m, "--origin", ref["origin"],
                 "--split-size", str(args.split_size), f"--java-options={args.java_options}"],
                capture_output=True, text=True, env={**os.environ, "LAKESWEEP_WASM": str(args.wasm)},
            )
            if r.returncode != 0:
                sys.exit(f"Spark {m} failed: {r.stderr[-3000:]}")
            f = json.loads(r.stdout.strip().splitlines()[-1])
            if json.loads(f.pop("document")) != ref:
                sys.exit(f"Spark {m}: the plan differs from the sidecar's")
            if f["deletes_digest"] != want:
                sys.exit(f"Spark {m}: the delete list differs")
            spark[m].append(f)
            by = ", ".join(f"{k} {v:.1f}" for k, v in sorted(f["cpu_by"].items()))
            line.append(f"{m} {f['plan_s']:.2f} s ({f['cpu_s'] / f['plan_s']:.2f} cores busy: CPU s {by}; session start {f['session_s']:.1f} s; driver Python "
                        f"{f['python_peak_kib'] / 1024:.0f} MiB, JVM {f['jvm_peak_kib'] / 1024:.0f} MiB; "
                        f"{f['splits']} splits)")
            print(f"  {m}: " + "; ".join(f["stages"]), flush=True)
        print("; ".join(line) + f"; {ref['summary']['listed']['count']} objects listed, "
              f"{len(ref['delete'])} to delete, the same plan", flush=True)
    s = statistics.median(w for w, _ in side)
    out = [f"median of {args.runs}: sidecar {s:.2f} s, {statistics.median(p for _, p in side) / 1024:.0f} MiB peak"]
    med = {}
    for m in masters:
        med[m] = statistics.median(f["plan_s"] for f in spark[m])
        out.append(f"Spark {m} {med[m]:.2f} s ({med[m] / s:.2f}x the sidecar's time; session start "
                   f"{statistics.median(f['session_s'] for f in spark[m]):.1f} s apart; driver Python peak "
                   f"{max(f['python_peak_kib'] for f in spark[m]) / 1024:.0f} MiB)")
    if len(masters) == 2:
        one_, two = (spark[m] for m in masters)
        out.append(f"{masters[0]} / {masters[1]}: {med[masters[0]] / med[masters[1]]:.2f}x (run by run: "
                   + ", ".join(f"{a['plan_s'] / b['plan_s']:.2f}x" for a, b in zip(one_, two)) + ")")
        # On a machine of `cores` cores, a plan that took `cpu` seconds of
        # CPU cannot take less than cpu / cores: how far two executors
        # could go, given the CPU the first master's plans took (a Python
        # worker that ended during the plan, not waited for, is missed).
        cores = os.cpu_count() or 1
        cpu = statistics.median(f["cpu_s"] for f in one_)
        out.append(f"{masters[0]} kept {cpu / med[masters[0]]:.2f} of {cores} cores busy (its driver works beside "
                   f"its executor): on {cores} cores, with the same CPU, at most "
                   f"{med[masters[0]] / (cpu / cores):.2f}x")
    print("; ".join(out))


if __name__ == "__main__":
    main()
