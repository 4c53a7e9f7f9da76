"""A sweep plan of one table on Spark, for tables whose listing is too
large for one machine. Nothing here decides anything: the planner
component (through the `lakesweep` Python package, on the driver and in
every executor) does.

The driver runs the planner session until its keep set is complete: it
reads the table's metadata and manifest lists, and the executors read the
manifests, a slice each, and send back each manifest's digest (what the
session needs of it: entries and paths, not the column statistics; each
plain path already resolved to its key's fingerprint, against the
resolution the session offers), which the session checks as it would the
bytes and merges. The driver exports the keep set
and broadcasts its bytes in 8 MiB pieces (never holding them whole), and
its session cuts the table's listing (and
each write root's) into splits of bounded size where the keys are (a
local table: boundaries sampled on the executors, so one flat folder
spreads too; an object store through ``pyarrow.fs``, which lists no key
range: its folders, listed level by level on the driver, each level's
entries passing through it). Each executor loads the
keep set once, checks it against the pointer the driver read, lists its
splits, classifies them and settles their owner checks (another table's
metadata stops the job), writes its decisions to files, and sends back
only each split's partial result: its candidates and counts. The driver's
session proves the splits cover the listing exactly once (a split
missing, or answered twice, plans nothing), judges every candidate again,
re-reads the pointer and seals the plan: byte for byte the plan one
machine makes, with the driver holding the keep set and the candidates,
never the listing's objects.

Applying a sealed plan (:func:`apply`): the driver reads the live facts
and asks the planner before every batch; the executors HEAD and delete the
batch's keys, each only while the planner says it is the pinned version,
and send back a receipt per key, which the driver writes as it arrives;
after the last batch the driver's damage check names any deleted key the
live table needs. With ``--shares N`` the executors run N deletion
sessions instead, one per share of the plan the planner cuts, each
accepted before each of its batches and checking its own deletes for
damage, each writing its receipts to its own file; the planner combines
their outcomes, refusing unless every share answered exactly once.

    spark-submit lakesweep_spark.py plan TABLE --metadata URI --now TIME [--older-than 3d] [--out plan.json]
    spark-submit lakesweep_spark.py apply PLAN.json --metadata URI [--root URI=DIR] [--receipts FILE] [--dry-run]
    spark-submit lakesweep_spark.py apply PLAN.json --metadata URI --shares N [--receipts DIR]

Times are RFC 3339 (``2026-12-01T00:00:00Z``) or epoch milliseconds,
durations as the command line writes them (``3d``, ``1h 30m``). Spark logs
warnings only (``log4j2-quiet.properties``; ``--verbose`` for Spark's INFO
stream), and a local master binds the driver to 127.0.0.1.

``--metadata`` is the pointer for the whole run of the command: a commit
landing during it is not seen. ``--catalog sqlite:PATH|rest:URL --table
NS.NAME`` reads it from the catalog each time it is needed (the plan's
start and seal, every batch of an apply); from a job, call :func:`apply`
with a ``pointer`` function (``lakesweep.catalog_pointer``).
"""

import argparse
import os
import sys

import lakesweep
from lakesweep import LocalStore, Sweep


def executor_store(spec, pointer=None):
    """The store a process lists and reads through, from a picklable
    spec: ``{"local": [[uri, dir], ...]}`` or ``{"s3": {pyarrow S3FileSystem
    options}}``; ``pointer`` reads the metadata location (the driver's)."""
    if "s3" in spec:
        import pyarrow.fs as pafs

        return lakesweep.ArrowStore(pafs.S3FileSystem(**spec["s3"]), pointer=pointer)
    return LocalStore(roots=[tuple(r) for r in spec.get("local", [])], pointer=pointer)


def _sample_partition(spec, every):
    def run(units):
        store = executor_store(spec)
        for base, whole in units:
            yield store.sample_names(base, whole, every)

    return run


def _boundaries(sc, store, spec, prefix, split_size):
    """Keys to cut the listing of ``prefix`` at, about ``split_size`` keys
    apart. A store that samples names (a local table) is sampled on the
    executors: the driver lists folder names a few levels down, until
    there are enough folders to spread over the executors, and each
    executor samples its share (one name in ``split_size // 16``, by a
    hash of the name); the driver sorts the samples and cuts every
    ``split_size`` keys. Other stores give their own boundaries. The
    boundaries decide the balance only: the planner makes the splits and
    proves they cover the listing."""
    if not hasattr(store, "sample_names"):
        return store.sample_boundaries(prefix, split_size)
    every = max(1, split_size // 16)
    want = 8 * sc.defaultParallelism
    units = [(prefix.rstrip("/"), True)]
    for _ in range(3):
        if len(units) >= want:
            break
        deeper = []
        for base, whole in units:
            if not whole:
                deeper.append((base, False))
                continue
            folders, files = store.folders_of(base)
            if files:
                deeper.append((base, False))
            deeper.extend((f"{base}/{f}", True) for f in folders)
        units = deeper
    if not units:
        return []
    rdd = sc.parallelize(units, min(len(units), want)).mapPartitions(_sample_partition(spec, every))
    out, held = [], 0
    for key in sorted(k for part in rdd.collect() for k in part):
        held += every
        if held >= split_size:
            out.append(key)
            held = 0
    return out


def _split_pages(store, split, c, by_name):
    """The pages of ``split`` to classify: with ``by_name`` (a store that
    lists names without a stat), each page of names goes to the
    classifier first, and only the keys it does not settle by name are
    stat-ed."""
    if not (by_name and hasattr(store, "split_name_pages")):
        yield from store.list_split(split)
        return
    for names in store.split_name_pages(split):
        page = []
        for i in c.split_names(names):
            v = store.version(names[i])
            if v is not None:
                page.append((names[i], *v))
        yield page


def store_spec_for(table, roots=(), s3_endpoint=None):
    """The store spec (see :func:`executor_store`) for ``table``: S3 for
    an ``s3://`` (``s3a://``, ``s3n://``) table, through ``s3_endpoint``
    when given; else the local file system, ``roots`` (``URI=DIR``)
    serving URI prefixes from folders."""
    scheme = table.partition("://")[0] if "://" in table else "file"
    if scheme in ("s3", "s3a", "s3n"):
        if roots:
            raise ValueError("--root serves local folders; an s3:// table is read from S3")
        options = {}
        if s3_endpoint:
            endpoint_scheme, sep, host = s3_endpoint.partition("://")
            if not sep or endpoint_scheme not in ("http", "https") or not host:
                raise ValueError(f"--s3-endpoint {s3_endpoint}: give it as http://host:port or https://host:port")
            options = {"endpoint_override": host.rstrip("/"), "scheme": endpoint_scheme}
        return {"s3": options}
    if scheme != "file":
        raise ValueError(f"{table}: the job reads file:// and s3:// tables")
    if s3_endpoint:
        raise ValueError("--s3-endpoint is for s3:// tables")
    return {"local": [r.split("=", 1) for r in roots]}


def _same_build(driver):
    """Raises unless this process runs the driver's lakesweep (``driver``:
    the driver's :func:`lakesweep.component_identity`). Then freezes what
    the worker has loaded, once (see :func:`_freeze_loaded`)."""
    mine = lakesweep.component_identity()
    if mine != tuple(driver):
        raise ExecutorsNotReady(
            f"this executor runs another lakesweep (component {mine[1][:12]}) than the driver "
            f"(component {driver[1][:12]}): install the same package everywhere"
        )
    _freeze_loaded()


def _freeze_loaded():
    """Freezes the objects this Python worker holds (the component,
    wasmtime, the package) for the collector, once a process: pyspark's
    worker runs a full collection after every task it is reused for, and
    with the component loaded that pass took 23 ms a task. What later
    tasks make is still collected."""
    import gc

    if gc.get_freeze_count() == 0:
        gc.freeze()


def _split_partition(keep_set, digest, pointer, spec, decisions, root, by_name=True, driver=None):
    """Lists, classifies and tallies each split of a partition on its
    executor; yields each split's partial result. ``keep_set``: the
    broadcasts of the keep set's pieces, in order (``digest`` names the
    whole). The decisions on every
    object that is not referenced go to ``decisions``/``root``-``index``.jsonl
    (written whole, then renamed: a task run again writes it again).
    ``by_name``: see :func:`_split_pages`."""
    def run(splits):
        import json

        if driver is not None:
            _same_build(driver)
        store = executor_store(spec)
        # Once per Python worker (kept by the installed package: this
        # closure's own globals are a copy in every task).
        c = lakesweep.shared_classifier(digest, lambda: b"".join(piece.value for piece in keep_set))
        try:
            c.check_pointer(pointer)
            for split in splits:
                c.begin_split(split)
                out, path = None, None
                if decisions:
                    path = os.path.join(decisions, f"{root:03d}-{split['index']:07d}.jsonl")
                    out = open(path + ".part", "w")
                refusal = None
                try:
                    for page in _split_pages(store, split, c, by_name):
                        for rel, verdict, why in c.split_page(page, store.read):
                            if out:
                                out.write(json.dumps({"relativeKey": rel, "verdict": verdict, "detail": why}) + "\n")
                    result = c.end_split()
                except lakesweep.PlanRefused:
                    # The classifier refused the split (another table's
                    # metadata in it, say): its refusal goes back in the
                    # split's place, so the driver's session fails with
                    # it. A task that raised would be run again, and a
                    # retry after the cause vanished would come back clean.
                    refusal = c.split_refusal()
                    if refusal is None:
                        raise
                finally:
                    if out:
                        try:
                            out.close()
                        except OSError:
                            if refusal is None:
                                raise
                if refusal is not None:
                    # Yielded last: nothing of this task can fail after it.
                    lakesweep.drop_classifier(digest)
                    yield refusal
                    return
                if path:
                    os.replace(path + ".part", path)
                yield result
        except BaseException:
            # An instance that failed (or trapped) is not reused by later
            # tasks; its open split is dropped with it.
            lakesweep.drop_classifier(digest)
            raise

    return run


def _gathered(sc, rdd, n, width=None, ahead=0, all_submitted=None):
    """The results of the ``n`` partitions of ``rdd``, group by group: each
    group of ``width`` partitions (default: twice as many as the cluster
    runs at once) is one job, so the executors work in parallel
    (``toLocalIterator`` runs one job per partition, one after another).
    With ``ahead`` (jobs that delete nothing), that many later groups'
    jobs are submitted while the driver waits for and takes in this one's
    results: with two, the next job is queued before this one ends, so an
    executor that finishes its last task of a group starts on the next
    group at once instead of waiting for the group's slowest task (Spark
    runs the jobs first come, first served). The driver holds ``ahead +
    1`` groups' results at most, and the jobs already submitted when the
    driver stops taking results run to their end. Never for jobs that
    change anything: each of their groups starts only once the driver took
    the last. ``all_submitted``, if given, is called once the last group's
    job is handed on (a job submitted after that runs after it)."""
    width = width or max(1, 2 * sc.defaultParallelism)
    groups = [list(range(start, min(n, start + width))) for start in range(0, n, width)]
    if not ahead:
        for i, g in enumerate(groups):
            if i == len(groups) - 1 and all_submitted is not None:
                all_submitted()
            yield from sc.runJob(rdd, list, g)
        return
    if not groups:
        if all_submitted is not None:
            all_submitted()
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=ahead, thread_name_prefix="lakesweep-gather")
    try:
        later = iter(groups)
        pending = deque()

        def submit(g):
            pending.append(pool.submit(sc.runJob, rdd, list, g))
            if g is groups[-1] and all_submitted is not None:
                # Handed to the pool, the job reaches Spark within a call:
                # a job submitted after this one almost always runs after
                # it (an order for speed only, nothing depends on it).
                all_submitted()

        for _, g in zip(range(ahead), later):
            submit(g)
        while pending:
            done = pending.popleft().result()
            nxt = next(later, None)
            if nxt is not None:
                submit(nxt)
            yield from done
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _digest_partition(spec, driver=None, resolution=None):
    """Reads and digests each file of a partition on its executor; yields
    ``(uri, (length, packed))``: the digest text's length in bytes and the
    text compressed with zstd (it travels through the JVM to the driver;
    zstd took a third of the CPU zlib took and packed a quarter smaller,
    at ten million keys), or ``None`` for a missing file. With the session's ``resolution``, a
    manifest's plain paths are resolved here, to their keys'
    fingerprints: the driver merges keys, it does not resolve paths."""
    def run(uris):
        import pyarrow as pa

        if driver is not None:
            _same_build(driver)
        store = executor_store(spec)
        for uri in uris:
            b = store.read(uri)
            if b is None:
                yield uri, None
                continue
            text = lakesweep.digest_file(uri, b, resolution=resolution).encode()
            yield uri, (len(text), pa.compress(text, codec="zstd", asbytes=True))

    return run


def _inflated(pairs):
    """:func:`_digest_partition`'s pairs with each digest's text again."""
    import pyarrow as pa

    for uri, packed in pairs:
        if packed is None:
            yield uri, None
        else:
            size, data = packed
            try:
                text = pa.decompress(data, decompressed_size=size, codec="zstd", asbytes=True).decode()
            except (OSError, UnicodeDecodeError, pa.ArrowException) as e:
                # Damaged on its way: the plan stops here, naming the file.
                raise ValueError(f"the digest of {uri} came back damaged ({e})") from None
            yield uri, text


def _io_partition(spec, kind):
    def run(targets):
        yield from lakesweep.store_io(executor_store(spec), kind, list(targets))

    return run


def plan(spark, table, metadata, now_ms, *, store_spec, pointer=None, split_size=50_000, decisions=None,
         listing="names", progress=None, **options):
    """Plans ``table`` with the listing spread over Spark's executors.
    ``store_spec`` (see :func:`executor_store`) says how every process
    reaches the table; ``pointer`` reads the metadata location now
    (default: ``metadata``; a Delta table's: its newest log entry).

    The driver's session builds the keep set (the executors decode the
    manifests) and cuts each listing it asks for into splits of about
    ``split_size`` keys (boundaries sampled on the executors); each executor
    lists its splits, classifies them against the broadcast keep set and
    sends back only each split's partial result (its candidates and
    counts); the session proves the splits cover the listing exactly once
    and seals. ``decisions``, a folder every executor can write to, gets
    each split's decisions on the objects that are not referenced (JSON
    lines; :func:`read_decisions`). ``listing``: ``names`` (a local table's
    keys are walked by name, and only those the keep set does not settle
    by name are stat-ed, as the command line's default) or ``stat`` (every
    object's version, as an object store lists). ``progress``, if given,
    is called with one line per stage (the keep set, each listing's cut,
    its splits back, the seal), each with its time. Returns ``(plan,
    decisions)``."""
    if listing not in ("names", "stat"):
        raise ValueError(f"listing: {listing!r} is not names or stat")
    import threading
    import time

    clock = [time.monotonic()]

    def stage(text):
        if progress is not None:
            now = time.monotonic()
            progress(f"{text} ({now - clock[0]:.2f} s)")
            clock[0] = now

    if pointer is None and options.get("format") == "delta":
        # A Delta table's pointer is its newest log entry, as the planner names it.
        pointer = lambda: lakesweep.delta_head(table, executor_store(store_spec))  # noqa: E731
    pointer = pointer or (lambda: metadata)
    store = executor_store(store_spec, pointer)
    sc = spark.sparkContext
    if sc.getConf().get("spark.speculation", "false").strip().lower() == "true":
        # Two attempts at one split: the one that finishes first answers it,
        # and a clean attempt could answer a split another refused.
        raise ValueError("spark.speculation is on: turn it off for lakesweep jobs (a speculative attempt could "
                         "answer a split another attempt refused)")
    # Every task that decides checks that it runs the driver's build.
    driver = lakesweep.component_identity()
    # Set once the executors may sample the table's listing (see below).
    sample = threading.Event()

    def manifests(uris):
        # At most 16 files a task: a task's digests travel through the JVM
        # as one result (a manifest of 10,000 files digests to about 0.7 MB
        # of text, compressed before it travels).
        n = max(partitions_for(len(uris)), -(-len(uris) // 16))
        rdd = sc.parallelize(uris, n).mapPartitions(_digest_partition(store_spec, driver, s.manifest_resolution()))
        # A job a round of the executors, three queued: the driver takes in
        # the first digests one round after they start, and the last job,
        # whose digests it takes in after the executors are done, is small.
        # The listing is sampled once every job of digests is queued: the
        # executors sample while the driver takes in the last digests.
        return _inflated(_gathered(sc, rdd, n, sc.defaultParallelism, ahead=3, all_submitted=sample.set))

    def partitions_for(n):
        return max(1, min(n, sc.defaultParallelism * 4))

    if decisions:
        os.makedirs(decisions, exist_ok=True)
        if any(n.endswith(".jsonl") for n in os.listdir(decisions)):
            # Another run's files would read as this one's.
            raise ValueError(f"{decisions}: holds decisions of another run already (give an empty folder)")
    s = Sweep(table, metadata, now_ms, store=store, manifests=manifests, **options)
    # The table's own listing is sampled while the keep set is built: once
    # a round of manifests' digests is all queued (the executors sample
    # while the driver takes in the last of them, and while it ships the
    # keep set), or, with no digests to make, once the keep set is built.
    # The boundaries only balance the splits: the planner cuts the listing
    # it asks for and proves the splits cover it, whatever was sampled; a
    # prefix it asks for that was not guessed is sampled then.
    from concurrent.futures import ThreadPoolExecutor

    failed = threading.Event()

    def sampled_when_asked(prefix):
        sample.wait()
        if failed.is_set():
            return []
        return _boundaries(sc, store, store_spec, prefix, split_size)

    try:
        early = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakesweep-sample")
        guessed = {table.rstrip("/") + "/": early.submit(sampled_when_asked, table.rstrip("/") + "/")}
        early.shutdown(wait=False)
        return _plan_splits(sc, s, store, store_spec, pointer, guessed, sample, split_size, decisions, listing,
                            driver, stage)
    except BaseException:
        # A plan that failed samples nothing more.
        failed.set()
        raise
    finally:
        # Whatever happened, the sampling thread is not left waiting.
        sample.set()


def _plan_splits(sc, s, store, store_spec, pointer, guessed, sample, split_size, decisions, listing, driver, stage):
    """:func:`plan` from the keep set on: ships it, has each listing it
    asks for cut, listed and classified on the executors, and seals."""
    import hashlib

    root = 0
    while True:
        # A listing the keep set needs first (a Delta log) is the driver's.
        prefixes = s.until_keep_set()
        # No manifests to digest (or none left): sample now.
        sample.set()
        if not prefixes:
            done = s.finish()
            stage(f"sealed: {len(done.delete)} objects to delete")
            return done, decisions
        stage("keep set built")
        # Shipped piece by piece: the driver never holds the whole keep set
        # outside its session (85 MB at ten million keys).
        hashed, shipped, size = hashlib.sha256(), [], 0
        try:
            for piece in s.export_keep_set_pieces():
                hashed.update(piece)
                size += len(piece)
                shipped.append(sc.broadcast(piece))
        except BaseException:
            for piece in shipped:
                piece.unpersist()
            raise
        digest = hashed.hexdigest()
        stage(f"keep set shipped ({size} bytes)")
        live = pointer()
        for prefix in prefixes:
            sampled = guessed.pop(prefix, None)
            boundaries = sampled.result() if sampled else _boundaries(sc, store, store_spec, prefix, split_size)
            splits = s.split_listing(boundaries)
            stage(f"{prefix}: cut into {len(splits)} splits")
            # One split a partition: Spark hands the next to whichever
            # executor is free.
            rdd = sc.parallelize(splits, len(splits)).mapPartitions(
                _split_partition(shipped, digest, live, store_spec, decisions, root, listing == "names", driver)
            )
            # Groups of eight splits a core: a partial result is small.
            for result in _gathered(sc, rdd, len(splits), 8 * sc.defaultParallelism, ahead=2):
                s.feed_split(result)
            stage(f"{prefix}: {len(splits)} splits listed and classified")
            root += 1
        for piece in shipped:
            piece.unpersist()


def read_decisions(folder):
    """The decisions :func:`plan` wrote to ``folder``: ``(relative key,
    verdict, detail)`` for every listed object that is not referenced."""
    import json

    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name)) as f:
                for line in f:
                    d = json.loads(line)
                    yield d["relativeKey"], d["verdict"], d["detail"]


def apply(spark, document, *, store_spec, pointer=None, batch=None, partitions=None,
          dry_run=False, sink=None, keep_receipts=True, shares=None, receipts=None, **options):
    """Applies the sealed plan ``document`` on Spark's executors. ``pointer``
    reads the metadata location now (Iceberg; a Delta table's is its log);
    the other options are :class:`lakesweep.Deletion`'s (``batch``: none,
    the planner's). Returns :class:`lakesweep.Applied`.

    Without ``shares``, the driver runs the planner's deletion session (the
    facts, the acceptance of every batch, the version checks, the damage
    check), each of its requests' objects is split over the executors, and
    their answers come back to it; ``sink(receipt)`` gets every receipt as
    the driver writes it; ``keep_receipts=False`` keeps only the damaged
    ones in the result.

    With ``shares=N``, N deletion sessions run on the executors, one per
    share of the plan's deletes as the planner cuts them: each reads the
    live facts and is accepted before each of its batches, HEADs and
    deletes its keys, checks its own deletes for damage, and writes its
    receipts to ``receipts`` (a folder every executor writes to), one file
    per share, ``share-INDEX-of-N.jsonl`` (a task run again appends to its
    share's file). Only each share's outcome (and any damaged receipts)
    comes back; the planner combines the outcomes, refusing unless every
    share answered exactly once. The result's receipts are the damaged
    ones only. A refusal before any share started raises
    :class:`SharesRefused` (nothing was deleted); a job that fails raises
    Spark's error (a share that did not answer may have deleted)."""
    sc = spark.sparkContext
    if shares is not None:
        if sink is not None or receipts is None:
            raise ValueError("a run in shares writes its receipts to a folder (receipts=), not to a sink")
        return _apply_in_shares(sc, document, store_spec=store_spec, pointer=pointer, batch=batch, shares=shares,
                                folder=receipts, dry_run=dry_run, **options)
    d = lakesweep.Deletion(document, executor_store(store_spec, pointer), batch=batch, dry_run=dry_run,
                           **options)

    def io(kind, targets):
        if not targets:
            return iter(())
        n = partitions or max(1, min(len(targets), sc.defaultParallelism * 4))
        rdd = sc.parallelize(targets, n).mapPartitions(_io_partition(store_spec, kind))
        return _gathered(sc, rdd, n)

    return d.run(io, sink=sink, keep_receipts=keep_receipts)


def _share_partition(document, spec, pointer, folder, of, driver, options):
    """Runs each share of a partition (``document``: the plan's broadcast)
    to its end on its executor, its receipts appended to its file; yields
    the share's outcome and damaged receipts, as JSON."""
    def run(indices):
        import json

        from pyspark import TaskContext

        _same_build(driver)
        # Which attempt at the task this is: a task run again after its
        # executor died is told so (the planner decides what that means).
        attempt = TaskContext.get().attemptNumber()
        for i in indices:
            d = lakesweep.Deletion(document.value, executor_store(spec, pointer), share=(i, of, attempt),
                                   **options)
            path = os.path.join(folder, f"share-{i:05d}-of-{of:05d}.jsonl")
            with open(path, "a") as out:
                def write(r):
                    out.write(json.dumps(r) + "\n")
                    out.flush()

                done = d.run(sink=write, keep_receipts=False)
            yield json.dumps({"outcome": done.outcome, "damage": done.receipts})

    return run


class SharesRefused(ValueError):
    """A run in shares refused on the driver, before any share started:
    nothing was deleted."""


def _apply_in_shares(sc, document, *, store_spec, pointer, batch, shares, folder, dry_run, **options):
    import json

    if sc.getConf().get("spark.speculation", "false").strip().lower() == "true":
        raise SharesRefused("spark.speculation is on: turn it off for lakesweep jobs (two attempts at one share "
                            "would delete at once, and the one that answers need not be the one that deleted)")
    options = dict(options, batch=batch, dry_run=dry_run)
    try:
        if os.path.isdir(folder) and os.listdir(folder):
            raise SharesRefused(f"the receipts folder {folder} is not empty: give a new one (one file per share)")
        # The planner checks the plan and the share options here, before
        # any executor deletes anything (a refusal is the whole answer).
        lakesweep.Deletion(document, executor_store(store_spec, pointer), share=(0, shares), **options)
        os.makedirs(folder, exist_ok=True)
    except (lakesweep.PlanRefused, OSError) as e:
        raise SharesRefused(str(e)) from None
    plan = sc.broadcast(document)
    try:
        rdd = sc.parallelize(range(shares), shares).mapPartitions(
            _share_partition(plan, store_spec, pointer, folder, shares, lakesweep.component_identity(), options))
        answers = [json.loads(a) for a in _gathered(sc, rdd, shares, width=shares)]
    finally:
        plan.destroy()
    # The planner says what the shares came to, or that they do not cover
    # the plan (then nothing can be said of the run: PlanRefused).
    done = lakesweep.combine_shares(document, [a["outcome"] for a in answers])
    done.receipts = [r for a in answers for r in a["damage"]]
    return done


#: Spark's log at warnings only (the job's own lines go to standard output).
QUIET_LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")


class ExecutorsNotReady(RuntimeError):
    """The executors cannot run the job: they cannot load the planner, or
    run another build of it than the driver."""


def ready_executors(spark):
    """Starts the executors' Python workers with the planner component
    loaded, and checks that those this job reached run the driver's
    lakesweep (its version and component, byte for byte): a cluster that
    cannot import the package, or holds another build of it, fails here,
    before the driver reads anything. Raises :class:`ExecutorsNotReady`
    naming the difference. (An executor that joins later is checked by
    the first task that decides anything on it.)"""
    def ready(_):
        # Only the installed package: this module may not be importable
        # on the executors yet (a job adds it to the context after this).
        import gc

        import lakesweep as ls

        identity = ls.component_identity()
        # The component is loaded: freeze it for the collector (as
        # _freeze_loaded does; this module may not be importable here yet).
        if gc.get_freeze_count() == 0:
            gc.freeze()
        yield identity

    sc = spark.sparkContext
    n = 2 * sc.defaultParallelism
    mine = lakesweep.component_identity()
    try:
        seen = set(sc.parallelize(range(n), n).mapPartitions(ready).collect())
    except Exception as e:  # noqa: BLE001: whatever the executors raised, they are not ready
        lines = [x for x in str(e).splitlines() if x.strip()]
        why = next((x.strip() for x in reversed(lines) if "Error" in x), lines[-1] if lines else repr(e))
        raise ExecutorsNotReady(f"the executors cannot load lakesweep: {why[:500]}") from None
    other = sorted(seen - {mine})
    if other:
        raise ExecutorsNotReady(
            f"the executors run another lakesweep ({', '.join(f'{v}, component {d[:12]}' for v, d in other)}) "
            f"than the driver ({mine[0]}, component {mine[1][:12]}): install the same package everywhere"
        )


def session(name, verbose=False):
    """The job's Spark session: warnings only unless ``verbose`` (a driver
    already running keeps its log; its level is set here), a local
    master (``local``, ``local[N]``, the default) bound to 127.0.0.1 so a
    laptop's job is reachable from nowhere else. Its executors are ready
    (:func:`ready_executors`) when it is returned."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # The JVM first (spark-submit's, or one started here), so the conf
    # holds what spark-submit was given (--master, --conf).
    SparkContext._ensure_initialized()
    conf = SparkConf()
    master = conf.get("spark.master", "local[*]")
    b = SparkSession.builder.appName(name)
    if not conf.contains("spark.master"):
        b = b.master(master)
    if master.startswith("local"):
        for k in ("spark.driver.bindAddress", "spark.driver.host"):
            if not conf.contains(k):
                b = b.config(k, "127.0.0.1")
    if not verbose:
        opts = conf.get("spark.driver.extraJavaOptions", "")
        if "log4j" not in opts:
            b = b.config("spark.driver.extraJavaOptions", f"{opts} -Dlog4j2.configurationFile={QUIET_LOG}".strip())
        b = b.config("spark.ui.showConsoleProgress", "false")
    spark = b.getOrCreate()
    if not verbose:
        spark.sparkContext.setLogLevel("WARN")
    try:
        ready_executors(spark)
    except BaseException:
        spark.stop()
        raise
    return spark


def main(argv=None):
    import json

    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = a.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="plan a sweep, the listing spread over the executors")
    p.add_argument("table")
    p.add_argument("--metadata", help="the current metadata document (Iceberg; or --catalog and --table)")
    p.add_argument("--format", choices=("iceberg", "delta"), default="iceberg")
    p.add_argument("--now", required=True, help="the time the plan is judged at: RFC 3339 or epoch milliseconds")
    p.add_argument("--older-than", help="the file-retention window (3d, 1h 30m; default: the policy's, else the format's)")
    p.add_argument("--policy", help="a retention policy document (JSON file)")
    p.add_argument("--context", help="a context document (holds, leases; JSON file)")
    p.add_argument("--out", help="write the sealed plan here")
    p.add_argument("--decisions", metavar="DIR",
                   help="a folder every executor can write: each split's decisions on the objects not referenced "
                        "(JSON lines)")
    p.add_argument("--split-size", type=int, default=50_000, metavar="N",
                   help="keys per listing split, about (default 50000)")
    p.add_argument("--listing", choices=("names", "stat"), default="names",
                   help="a local table: walk names and stat only what the keep set does not settle by name "
                        "(default), or stat every file")
    ap = sub.add_parser("apply", help="apply a sealed plan, the deletes spread over the executors")
    ap.add_argument("plan", help="the sealed plan file")
    ap.add_argument("--metadata", help="Iceberg: the table's current metadata location, as its catalog names it now "
                    "(used for the whole run: a commit during it is not seen; --catalog reads it before every batch)")
    ap.add_argument("--receipts", help="receipts file (JSON Lines); default PLAN.receipts.jsonl; with --shares "
                    "a folder every executor writes to (one file per share), default PLAN.receipts/")
    ap.add_argument("--shares", type=int, metavar="N",
                    help="run N deletion sessions on the executors, one per share of the plan's deletes (each "
                         "accepted before each of its batches, each checking its own deletes for damage); "
                         "default: one session on the driver, its HEADs and DELETEs spread over the executors")
    ap.add_argument("--dry-run", action="store_true", help="check everything, delete nothing")
    ap.add_argument("--stop-switch", action="append", default=[], metavar="URI",
                    help="a fleet's stop switch, read with the table's own (TABLE/_lakesweep/stop.json) "
                         "before every batch; while one is set nothing is deleted (repeatable)")
    ap.add_argument("--allow-future-now", action="store_true",
                    help="accept a plan judged at a time ahead of this machine's clock (what-if runs, tests)")
    for x in (p, ap):
        x.add_argument("--catalog", help="read the pointer from a catalog, each time it is needed: sqlite:PATH (an "
                       "Iceberg SQL catalog) or rest:URL[?warehouse=W] (token in LAKESWEEP_REST_TOKEN); with --table")
        x.add_argument("--table", dest="catalog_table", metavar="NS.NAME", help="the table's name in --catalog")
        x.add_argument("--root", action="append", default=[], help="URI=DIR: serve a URI prefix from a local folder")
        x.add_argument("--s3-endpoint", metavar="URL",
                       help="an S3-compatible endpoint (http://host:port) for s3:// tables; default: AWS, "
                            "credentials and region as pyarrow finds them")
        x.add_argument("--location-map", action="append", default=[], help="FROM=TO")
        x.add_argument("--verbose", action="store_true", help="Spark's own INFO log too")
    args = a.parse_args(argv)
    if bool(args.catalog) != bool(args.catalog_table):
        a.error("--catalog and --table go together")
    if args.catalog and args.metadata:
        a.error("give --metadata or --catalog and --table, not both")
    if args.catalog and args.command == "plan" and args.format != "iceberg":
        a.error("--catalog names an Iceberg table's pointer; a Delta table's is its log")
    catalog = None
    if args.catalog:
        try:
            catalog = lakesweep.catalog_pointer(args.catalog, args.catalog_table)
        except ValueError as e:
            a.error(str(e))
    if args.command == "plan" and args.format == "iceberg" and not (args.metadata or catalog):
        a.error("plan of an Iceberg table needs --metadata (its current metadata location) or --catalog and --table")
    if args.command == "apply":
        if args.shares is not None and args.shares < 1:
            a.error("--shares: at least 1")
        with open(args.plan) as f:
            document = f.read()
        if json.loads(document).get("format") != "delta" and not (args.metadata or catalog):
            # The pointer is the catalog's answer now, never the plan's own.
            a.error("apply of an Iceberg plan needs --metadata (the table's current metadata location, as its "
                    "catalog names it now) or --catalog and --table")
    from lakesweep._values import epoch_ms, location_map

    try:
        maps = location_map(args.location_map)
        now = None if args.command != "plan" else (int(args.now) if args.now.isdigit() else epoch_ms(args.now, "--now"))
        read = lambda p: open(p).read() if p else None  # noqa: E731
        extra = {} if args.command != "plan" else {
            "format": args.format, "retention": args.older_than,
            "policy": read(args.policy), "context": read(args.context),
        }
    except (ValueError, OSError) as e:
        a.error(str(e))
    try:
        spec = store_spec_for(args.table if args.command == "plan" else json.loads(document).get("tableLocation", ""),
                              args.root, args.s3_endpoint)
    except ValueError as e:
        a.error(str(e))
    try:
        spark = session(f"lakesweep-{args.command}", args.verbose)
    except ExecutorsNotReady as e:
        print(f"lakesweep: refused, nothing read or deleted: {e}", file=sys.stderr)
        return 2
    try:
        if args.command == "plan":
            print(f"lakesweep: planning {args.table} on Spark ({spark.sparkContext.master})", file=sys.stderr)
            if catalog:
                # The catalog's pointer, read now and again before sealing;
                # a catalog decides commits, so a newer document beside its
                # pointer is a failed commit's (the planner's judgement).
                extra.update(pointer=catalog, pointer_authoritative=True)
            try:
                pl, _ = plan(spark, args.table, catalog() if catalog else args.metadata, now, store_spec=spec,
                             location_map=maps, split_size=args.split_size, decisions=args.decisions,
                             listing=args.listing,
                             progress=lambda line: print(f"lakesweep: {line}", file=sys.stderr, flush=True),
                             **extra)
            except (lakesweep.PlanRefused, ValueError) as e:
                # Planning deletes nothing: a refusal (or an option refused,
                # a catalog that cannot be read) is the whole answer.
                print(f"lakesweep: refused, nothing deleted: {e}", file=sys.stderr)
                return 2
            if args.out:
                with open(args.out, "w") as f:
                    f.write(pl.document)
            print(f"lakesweep: {len(pl.delete)} objects to delete; plan {pl.digest}")
            return 0
        metadata = args.metadata
        common = dict(store_spec=spec, pointer=catalog or (lambda: metadata), location_map=maps,
                      dry_run=args.dry_run, allow_future_now=args.allow_future_now, stop_switches=args.stop_switch)
        if args.shares is not None:
            path = args.receipts or f"{args.plan}.receipts"
            try:
                done = apply(spark, document, shares=args.shares, receipts=path, **common)
            except SharesRefused as e:
                # Refused on the driver before any share started.
                print(f"lakesweep: refused, nothing deleted: {e}")
                return 2
            except Exception as e:  # noqa: BLE001: a share that never answered may have deleted unchecked
                print(f"lakesweep: DAMAGE UNCHECKED: not every share answered, and a share that did not may have "
                      f"deleted without its damage check: {e}; check the receipts in {path}")
                return 3
        else:
            path = args.receipts or f"{args.plan}.receipts.jsonl"
            with open(path, "a") as out:
                def sink(r):
                    out.write(json.dumps(r) + "\n")
                    out.flush()

                done = apply(spark, document, sink=sink, keep_receipts=False, **common)
        counts = {k: done.count(k) for k in ("deleted", "would-delete", "already-absent", "skipped-changed",
                                             "skipped-protected", "skipped-stopped", "failed", "unknown")}
        print("lakesweep: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + f"; receipts in {path}")
        if done.refused:
            print("lakesweep: refused, nothing deleted: " + "; ".join(done.refused))
        if done.damage or done.damage_unchecked:
            print(f"lakesweep: DAMAGE: {len(done.damage)} deleted keys the live table needs"
                  + (f" (damage check failed: {done.damage_unchecked})" if done.damage_unchecked else ""))
        if done.stopped:
            print("lakesweep: the run stopped: " + "; ".join(done.stopped))
        # The planner's outcome names the exit status.
        return done.exit
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
