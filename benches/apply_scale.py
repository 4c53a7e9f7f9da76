#!/usr/bin/env python3
"""One sealed plan of many deletes applied by the sidecar and by the Python
package, each on its own hard-linked copy of the same generated table.

    python3 benches/apply_scale.py [--orphans 100000] [--files 20000]
        [--cache DIR] [--runs 3] [--lakesweep BIN] [--wasm W]

The deltalake table is the one benches/ledger_cycle.py generates (cached
in --cache). `lakesweep plan` seals a plan deleting the planted orphans;
then, --runs times each, `lakesweep apply PLAN` and the Python package's
`lakesweep.apply(PLAN, LocalStore())` (receipts written to a file as they
come, none kept in memory) run on a fresh copy of the table, timed with
farm-bench side by side (the copy is made inside both timed commands, so
both carry it). Afterwards one more run of each is checked: every receipt
`deleted`, exit 0, every orphan gone, every live file there.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ledger_cycle import generate, table_files, tombstoned, REPO  # noqa: E402

PY_APPLY = r"""
import json, sys, lakesweep
doc = open(sys.argv[1]).read()
with open(sys.argv[2], "w") as out:
    done = lakesweep.apply(doc, lakesweep.LocalStore(), keep_receipts=False,
                           sink=lambda r: out.write(json.dumps(r) + "\n"))
sys.exit(done.exit)
"""


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--orphans", type=int, default=100_000)
    a.add_argument("--files", type=int, default=20_000)
    a.add_argument("--runs", type=int, default=3)
    a.add_argument("--cache", required=True, help="where the generated table is kept between runs")
    a.add_argument("--lakesweep", default=os.environ.get(
        "LAKESWEEP_SIDECAR", str(REPO / "host-examples/sidecar/target/release/lakesweep")))
    a.add_argument("--wasm", default=str(REPO / "target/lakesweep.wasm"))
    args = a.parse_args()
    template, live = generate(Path(args.cache), args.files, args.orphans)
    tmp = Path(tempfile.mkdtemp(prefix="lakesweep-apply-"))
    try:
        # The plan names the table's location: both copies live there in
        # turn (each timed command makes its own copy at that path).
        table = tmp / "t"
        subprocess.run(["cp", "-al", str(template), str(table)], check=True)
        orphans = table_files(table) - set(live) - tombstoned(table)
        plan = tmp / "plan.json"
        p = subprocess.run([args.lakesweep, "plan", str(table), "--format", "delta", "--out", str(plan),
                            "--json", "--wasm", args.wasm], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"plan failed:\n{p.stderr}")
        planned = {d["key"] for d in json.loads(plan.read_text())["delete"]}
        if planned != orphans:
            sys.exit(f"the plan deletes {len(planned)} keys, {len(orphans)} orphans were planted")
        print(f"sealed a plan of {len(planned):,} deletes", flush=True)
        script = tmp / "apply.py"
        script.write_text(PY_APPLY)
        fresh = f"rm -rf {table} {tmp}/r.jsonl && cp -al {template} {table}"
        side = f"{fresh} && exec {args.lakesweep} apply {plan} --wasm {args.wasm} --receipts {tmp}/r.jsonl >/dev/null"
        py = f"{fresh} && exec {sys.executable} {script} {plan} {tmp}/p.jsonl"
        subprocess.run(["farm-bench", "-n", str(args.runs), "--warmup", "0", "--timeout", "3600",
                        "--vs", f"sh -c '{side}'", "--", "sh", "-c", py], check=False)
        for name, cmd, receipts in (("sidecar", side, tmp / "r.jsonl"), ("python", py, tmp / "p.jsonl")):
            code = subprocess.run(cmd, shell=True).returncode
            rows = [json.loads(x) for x in receipts.read_text().splitlines()]
            results = {r["result"] for r in rows}
            after = table_files(table)
            ok = (code == 0 and len(rows) == len(planned) and results == {"deleted"}
                  and not (after & orphans) and set(live) <= after)
            print(f"{name}: exit {code}, {len(rows):,} receipts {sorted(results)}, "
                  f"{len(after & orphans)} orphans left, {len(set(live) - after)} live files lost: "
                  f"{'ok' if ok else 'WRONG'}", flush=True)
            if not ok:
                sys.exit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
