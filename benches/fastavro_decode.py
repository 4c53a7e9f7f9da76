"""Decodes Avro manifests with fastavro (the Python peer of `benches/core.rs`).

Usage: python3 benches/fastavro_decode.py [--paths] REPS FILE...
Prints one JSON object: {"records": n, "seconds": best-of-REPS wall time},
with `--paths` also "paths": every entry's data_file.file_path, in file
order (read in one more, untimed pass), for the smoke pass to compare.
Files are read into memory first, so only decoding is timed, as in the Rust
benchmark.
"""

import io
import json
import sys
import time

import fastavro


def main() -> None:
    args = sys.argv[1:]
    want_paths = args[:1] == ["--paths"]
    if want_paths:
        args = args[1:]
    reps = int(args[0])
    blobs = [open(f, "rb").read() for f in args[1:]]
    best = float("inf")
    records = 0
    for _ in range(reps):
        start = time.perf_counter()
        records = 0
        for b in blobs:
            for _rec in fastavro.reader(io.BytesIO(b)):
                records += 1
        best = min(best, time.perf_counter() - start)
    out = {"records": records, "seconds": best}
    if want_paths:
        out["paths"] = [
            rec["data_file"]["file_path"]
            for b in blobs
            for rec in fastavro.reader(io.BytesIO(b))
        ]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
