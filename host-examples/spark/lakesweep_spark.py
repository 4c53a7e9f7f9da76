"""A sweep plan of one table on Spark, for tables whose listing is too
large for one machine. Nothing here decides anything: the planner
component (through the `lakesweep` Python package, on the driver and in
every executor) does.

The driver runs the planner session until its keep set is complete (the
table's metadata and manifests), exports the keep set and broadcasts its
bytes. The table's folders are listed by the executors, a slice each; each
executor loads the keep set once, checks it against the pointer the driver
read, classifies its pages and settles owner checks (another table's
metadata stops the job). The driver hands every page to its session, which
re-reads the pointer and seals the plan: byte for byte the plan one
machine makes.

    spark-submit lakesweep_spark.py TABLE --metadata URI --now MS [--root URI=DIR] [--out plan.json]
"""

import argparse
import sys

import lakesweep
from lakesweep import LocalStore, PageClassifier, Sweep

_CLASSIFIER = {}


def executor_store(spec, pointer=None):
    """The store a process lists and reads through, from a picklable
    spec: ``{"local": [[uri, dir], ...]}`` or ``{"s3": {pyarrow S3FileSystem
    options}}``; ``pointer`` reads the metadata location (the driver's)."""
    if "s3" in spec:
        import pyarrow.fs as pafs

        return lakesweep.ArrowStore(pafs.S3FileSystem(**spec["s3"]), pointer=pointer)
    return LocalStore(roots=[tuple(r) for r in spec.get("local", [])], pointer=pointer)


def _classify_partition(keep_set, digest, pointer, spec):
    def run(folders):
        store = executor_store(spec)
        c = _CLASSIFIER.get(digest)
        if c is None:
            c = _CLASSIFIER.setdefault(digest, PageClassifier(keep_set.value))
        try:
            c.check_pointer(pointer)
            for folder in folders:
                for page in store.list(folder):
                    yield page, c.classify(page, store.read)
        except BaseException:
            # An instance that failed (or trapped) is not reused by later tasks.
            _CLASSIFIER.pop(digest, None)
            raise

    return run


def plan(spark, table, metadata, now_ms, *, store_spec, pointer=None, partitions=None, **options):
    """Plans ``table`` with the listing spread over Spark's executors.
    ``store_spec`` (see :func:`executor_store`) says how every process
    reaches the table; ``pointer`` reads the metadata location now (default:
    ``metadata``). Returns ``(plan, executor_decisions)``: the sealed
    :class:`lakesweep.Plan` and every page's decisions as the executors
    made them (a driver keeping only counts can drop them)."""
    import hashlib

    if pointer is None and options.get("format") == "delta":
        # A Delta table's pointer is its newest log entry, as the planner names it.
        pointer = lambda: lakesweep.delta_head(table, executor_store(store_spec))  # noqa: E731
    pointer = pointer or (lambda: metadata)
    store = executor_store(store_spec, pointer)
    s = Sweep(table, metadata, now_ms, store=store, **options)
    sc = spark.sparkContext
    decided = []
    while True:
        prefixes = s.until_listing()
        if not prefixes:
            return s.finish(), decided
        if not s.keep_set_complete():
            # A listing the keep set needs first (a Delta log): the driver's.
            for prefix in prefixes:
                pages = list(store.list(prefix)) or [[]]
                for i, page in enumerate(pages):
                    s.feed(page, i == len(pages) - 1)
            continue
        keep_set = s.export_keep_set()
        digest = hashlib.sha256(keep_set).hexdigest()
        shipped = sc.broadcast(keep_set)
        live = pointer()
        for prefix in prefixes:
            folders, beside = store.children(prefix)
            n = partitions or max(1, min(len(folders), sc.defaultParallelism * 4))
            # Pages stream to the driver partition by partition (the whole
            # listing is never held at once); the one before is held back
            # until the next arrives, so the last is flagged.
            held = beside
            if folders:
                rdd = sc.parallelize(folders, n).mapPartitions(
                    _classify_partition(shipped, digest, live, store_spec)
                )
                for page, ds in rdd.toLocalIterator():
                    decided.extend(ds)
                    if held:
                        s.feed(held, False)
                    held = page
            s.feed(held or [], True)
        shipped.unpersist()


def main(argv=None):
    from pyspark.sql import SparkSession

    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("table")
    a.add_argument("--metadata", required=True, help="the current metadata document (Iceberg)")
    a.add_argument("--now", type=int, required=True, help="epoch milliseconds")
    a.add_argument("--root", action="append", default=[], help="URI=DIR: serve a URI prefix from a local folder")
    a.add_argument("--location-map", action="append", default=[], help="FROM=TO")
    a.add_argument("--out", help="write the sealed plan here")
    args = a.parse_args(argv)
    spark = SparkSession.builder.appName("lakesweep-plan").getOrCreate()
    spec = {"local": [r.split("=", 1) for r in args.root]}
    p, _ = plan(
        spark, args.table, args.metadata, args.now, store_spec=spec,
        location_map=[m.split("=", 1) for m in args.location_map],
    )
    if args.out:
        with open(args.out, "w") as f:
            f.write(p.document)
    print(f"lakesweep: {len(p.delete)} objects to delete; plan {p.digest}")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
