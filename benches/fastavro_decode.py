"""Decodes Avro manifests with fastavro (the Python peer of `benches/core.rs`).

Usage: python3 benches/fastavro_decode.py REPS FILE...
Prints one JSON object: {"records": n, "seconds": best-of-REPS wall time}.
Files are read into memory first, so only decoding is timed, as in the Rust
benchmark.
"""

import io
import json
import sys
import time

import fastavro


def main() -> None:
    reps = int(sys.argv[1])
    blobs = [open(f, "rb").read() for f in sys.argv[2:]]
    best = float("inf")
    records = 0
    for _ in range(reps):
        start = time.perf_counter()
        records = 0
        for b in blobs:
            for _rec in fastavro.reader(io.BytesIO(b)):
                records += 1
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"records": records, "seconds": best}))


if __name__ == "__main__":
    main()
