"""lakesweep in Python: the planner component (the same ``lakesweep.wasm``
every host loads) in wasmtime-py, with the I/O done here.

    import lakesweep
    p = lakesweep.plan("file:///data/warehouse/db/events",
                       metadata="file:///data/warehouse/db/events/metadata/00042-....metadata.json",
                       now_ms=1796860800000)
    p.document      # the sealed plan, byte for byte what `lakesweep apply` takes
    p.delete        # [(key, size), ...]
    p.summary       # the planner's summary, as a dict

Nothing here decides anything: every verdict, refusal and seal is the
component's, and a refusal is raised as :class:`PlanRefused`.
"""

import json
from dataclasses import dataclass, field as dc_field

from ._apply import Applied, Deletion, apply, store_io
from ._component import Component, PlanRefused, field, record
from ._stores import ArrowStore, LocalStore

__all__ = [
    "plan", "plan_expiry", "check_policy", "delta_head", "digest_manifest", "apply", "Plan", "PlanRefused", "Sweep",
    "PageClassifier", "LocalStore", "ArrowStore", "Deletion", "Applied", "store_io",
]



@dataclass
class Plan:
    """A sealed plan."""

    #: The stored document (``lakesweep.plan.v3``), byte for byte.
    document: str
    #: Its digest.
    digest: str
    #: ``[(relative key, size in bytes), ...]``, sorted by key.
    delete: list
    #: The summary: listed, verdicts, reclaimable, ... (a dict).
    summary: dict
    #: The warnings.
    warnings: list
    #: The final verdict per relative key: ``{key: (verdict, detail)}``.
    decisions: dict = dc_field(default_factory=dict)

    def to_arrow(self):
        """The delete list as a ``pyarrow.Table`` (key, size)."""
        import pyarrow as pa

        return pa.table(
            {
                "key": pa.array([k for k, _ in self.delete], pa.string()),
                "size": pa.array([s for _, s in self.delete], pa.uint64()),
            }
        )


def _listed(o):
    uri, size, mtime_ms, etag = o
    return record(
        key=uri,
        version=record(size=size, last_modified_ms=mtime_ms, etag=etag, version_id=None),
    )


def _listed_json(o):
    """A listed object as the planner's JSON spells it."""
    uri, size, mtime_ms, etag = o
    return {"key": uri, "size": size, "lastModifiedMs": mtime_ms, "etag": etag, "versionId": None}


def _page_json(objects):
    """A page as the planner's JSON page: records cost wasmtime-py far more
    per object than one JSON text per page."""
    return json.dumps(
        [{"key": uri, "size": size, "lastModifiedMs": mtime_ms, "etag": etag} for uri, size, mtime_ms, etag in objects]
    )


class Sweep:
    """One planner session, step by step, for hosts that split the work
    (the page mode's coordinator, a Spark driver): :meth:`until_listing`
    answers the planner's reads until its keep set is complete,
    :meth:`export_keep_set` gives it to page classifiers elsewhere,
    :meth:`feed` hands over listing pages (any order, any size),
    :meth:`finish` re-reads the pointer as the planner asks and seals.

    ``manifests``, if given, reads and decodes Iceberg manifests elsewhere
    (e.g. on a cluster's executors): called with the URIs of the manifest
    reads the planner asked for at once, it yields ``(uri, digest)`` for
    each (``digest`` from :func:`digest_manifest`; ``None``: the manifest
    does not exist); the session checks each as it would the bytes."""

    def __init__(self, table, metadata=None, now_ms=None, *, store=None, format="iceberg", retention_ms=None,
                 location_map=(), policy=None, context=None, keep_versions=(), log_cleanup=False,
                 allow_short_retention=False,
                 pointer_authoritative=False, memory_budget_bytes=None, origin=None, wasm=None, manifests=None,
                 foreign_roots=(), prior_pointers=(), deleted_index=None):
        if now_ms is None:
            raise ValueError("now_ms is required: the planner reads no clock")
        self.store = store or LocalStore(pointer=lambda: metadata)
        self.c = Component(wasm)
        cfg = record(
            table_location=table.rstrip("/"),
            format=format,
            metadata_location="" if format == "delta" else metadata,
            now_ms=int(now_ms),
            # None: the planner's default (the policy's, else the format's).
            file_retention_ms=None if retention_ms is None else int(retention_ms),
            keep_deleted_entries=True,
            allow_short_retention=bool(allow_short_retention),
            location_map=[record(**{"from": f, "to": t}) for f, t in location_map],
            policy=policy,
            context=context,
            keep_versions=[int(v) for v in keep_versions],
            log_cleanup=bool(log_cleanup),
            pointer_authoritative=bool(pointer_authoritative),
            memory_budget_bytes=None if memory_budget_bytes is None else int(memory_budget_bytes),
            origin=origin,
            foreign_roots=[record(root=r, owner=o) for r, o in foreign_roots],
            prior_pointers=list(prior_pointers),
            deleted_index=None if deleted_index is None else bytes(deleted_index),
        )
        self.session = self.c.call("[static]session.start", cfg)
        self.manifests = manifests
        self.decisions = {}
        self.listings = []

    def _call(self, name, *args):
        return self.c.call(f"[method]session.{name}", self.session, *args)

    def _drain(self):
        for d in json.loads(self._call("drain-decisions-json")):
            self.decisions[d["relativeKey"]] = (d["verdict"], d["detail"])

    def _answer(self):
        """Answers every read and pointer request asked for; returns False
        when nothing was asked. Listings asked for are queued."""
        reads = []
        pointer = False
        while True:
            r = self._call("poll-request")
            if r is None:
                break
            if r.tag == "read-blob":
                reads.append(r.payload)
            elif r.tag == "list":
                self.listings.append(r.payload)
            else:
                pointer = True
        asked_any = bool(reads) or pointer
        if self.manifests is not None:
            digested = [u for u in reads if self._call("is-manifest-read", u)]
            if digested:
                asked = set(digested)
                reads = [u for u in reads if u not in asked]
                left = set(digested)
                for uri, digest in self.manifests(digested):
                    left.discard(uri)
                    if digest is None:
                        self._call("handle-missing", uri)
                    else:
                        self._call("handle-manifest-digest", uri, digest)
                    self._drain()
                if left:
                    raise ValueError(f"the manifest reader answered no digest for {sorted(left)[:3]}")
        for uri in reads:
            b = self.store.read(uri)
            if b is None:
                self._call("handle-missing", uri)
            else:
                self._call("handle-blob", uri, bytes(b))
            self._drain()
        if pointer:
            self._call("handle-pointer", self.store.pointer())
            self._drain()
        return asked_any

    def until_listing(self):
        """Answers reads until the planner waits for a listing; returns the
        prefixes it asks to have listed now (each once; empty when it asks
        for none)."""
        while self._answer():
            pass
        asked, self.listings = self.listings, []
        return asked

    def until_keep_set(self):
        """Serves reads and the listings the keep set needs (a Delta log)
        until the keep set is complete; returns the prefixes of the table
        listing it asks for then (not served)."""
        while True:
            prefixes = self.until_listing()
            if not prefixes or self.keep_set_complete():
                return prefixes
            for prefix in prefixes:
                pages = list(self.store.list(prefix)) or [[]]
                for i, page in enumerate(pages):
                    self.feed(page, i == len(pages) - 1)

    def keep_set_complete(self):
        """Whether every reference is known (the next listing is the
        table's own, which may be listed anywhere)."""
        return bool(self._call("keep-set-complete"))

    def export_keep_set(self):
        """The keep set's bytes, for :class:`PageClassifier` elsewhere."""
        # In pieces: wasmtime-py refuses to take a list of more than a few
        # MiB back from a component in one call (its host-call fuel).
        parts = []
        while True:
            part = bytes(self._call("export-keep-set-range", sum(map(len, parts)), 1 << 20))
            if not part:
                return b"".join(parts)
            parts.append(part)

    def referenced(self, keys):
        """Which of ``keys`` (relative to the table) the complete keep set
        references: ``[(key, why)]``."""
        return [tuple(p) for p in self._call("referenced", list(keys))]

    def feed(self, objects, last):
        """One listing page: ``[(uri, size, mtime_ms, etag), ...]``."""
        self._call("handle-page-json", _page_json(objects), bool(last))
        self._drain()

    def finish(self):
        """Answers what is left (the pointer re-read, reads a re-check asks
        for) and seals the plan."""
        if self.until_listing():
            raise ValueError("the planner still asks for a listing: serve until_listing() first")
        sealed = self._call("finish")
        doc = sealed.document
        v = json.loads(doc)
        return Plan(
            document=doc,
            digest=sealed.digest,
            delete=[(d["key"], d["size"]) for d in v["delete"]],
            summary=v["summary"],
            warnings=v["warnings"],
            decisions=self.decisions,
        )


class PageClassifier:
    """A keep set loaded where pages are listed (an executor, a function):
    the session's verdicts for any page of the table, without a session."""

    def __init__(self, keep_set, *, wasm=None):
        self.c = Component(wasm)
        self.handle = self.c.call("[static]page-classifier.load", bytes(keep_set))

    def check_pointer(self, live):
        """Raises :class:`PlanRefused` unless the keep set was built on the
        document the pointer names now."""
        self.c.call("[method]page-classifier.check-pointer", self.handle, live)

    def classify(self, objects, read):
        """Decisions for one page (``[(uri, size, mtime_ms, etag), ...]``):
        ``[(relative key, verdict, detail), ...]``; owner checks are settled
        with ``read(uri)`` (another table's metadata raises)."""
        ds = json.loads(self.c.call("[method]page-classifier.classify-json", self.handle, _page_json(objects)))
        out = []
        for o, d in zip(objects, ds):
            if d["verdict"] == "owner-check":
                b = read(o[0])
                s = self.c.call(
                    "[method]page-classifier.settle-metadata-file", self.handle, _listed(o),
                    None if b is None else bytes(b),
                )
                out.append((field(s, "relative_key"), s.verdict, s.detail))
            else:
                out.append((d["relativeKey"], d["verdict"], d["detail"]))
        return out


def plan(table, metadata=None, now_ms=None, **options):
    """Plans a sweep of ``table`` (its location URI) at ``now_ms`` (epoch
    milliseconds; required: the planner reads no clock). ``metadata`` is
    the current metadata document (Iceberg; Delta reads its log).
    ``store`` answers reads and listings (default: a :class:`LocalStore`
    whose pointer is ``metadata``); the other options are the session's
    (``format``, ``retention_ms``, ``location_map``, ``policy``,
    ``context``, ``keep_versions``, ``log_cleanup``, ...). Raises
    :class:`PlanRefused` when the planner refuses; then nothing may be
    deleted."""
    s = Sweep(table, metadata, now_ms, **options)
    while True:
        prefixes = s.until_listing()
        if not prefixes:
            return s.finish()
        for prefix in prefixes:
            held = None
            for page in s.store.list(prefix):
                if held is not None:
                    s.feed(held, False)
                held = page
            s.feed(held or [], True)


def digest_manifest(uri, data, *, wasm=None):
    """What a session needs of the Iceberg manifest ``data`` read at ``uri``
    (the URI exactly as the session asked for it): a small sealed digest
    for :class:`Sweep`'s ``manifests`` reader (text). Raises :class:`PlanRefused`
    (malformed) for bytes that are not a readable manifest."""
    from ._apply import _component

    return _component(wasm).call("digest-manifest", uri, bytes(data))


def delta_head(table, store, *, wasm=None):
    """The newest version of a Delta table as the planner names it (the
    URI of its newest commit, or a newer checkpoint of a checkpoint-only
    log), from the listing of ``_delta_log/``; ``None`` for an empty log.
    This is a Delta table's pointer."""
    c = Component(wasm)
    base = table.rstrip("/")
    listed = [_listed(o) for page in store.list(f"{base}/_delta_log/") for o in page]
    head = c.call("delta-head", base, listed)
    return None if head is None else head.uri


def plan_expiry(metadata_location, metadata_bytes, now_ms, *, policy=None, context=None, expire_ids=(), wasm=None):
    """Which snapshots of the Iceberg metadata document expire at ``now_ms``
    under ``policy`` and ``context`` (JSON text), and why the rest stay:
    the expiry document (``lakesweep.expiry.v1``) as the planner wrote it."""
    c = Component(wasm)
    e = c.call(
        "plan-expiry",
        metadata_location,
        bytes(metadata_bytes),
        policy,
        context,
        int(now_ms),
        [int(i) for i in expire_ids],
        [],
    )
    return e.document


def check_policy(policy_json, *, wasm=None):
    """A retention policy's errors and warnings by field, and its digest:
    ``{"errors": [(field, message)], "warnings": [...], "digest": str}``."""
    c = Component(wasm)
    r = c.call("check-policy", policy_json)
    pairs = lambda fs: [(f.field, f.message) for f in fs]  # noqa: E731
    return {"errors": pairs(r.errors), "warnings": pairs(r.warnings), "digest": r.digest}
