"""lakesweep in Python: the planner component (the same ``lakesweep.wasm``
every host loads) in wasmtime-py, with the I/O done here.

    import datetime as dt
    import lakesweep
    p = lakesweep.plan("file:///data/warehouse/db/events",
                       metadata="file:///data/warehouse/db/events/metadata/00042-....metadata.json",
                       now=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc), retention="3d")
    p.document      # the sealed plan, byte for byte what `lakesweep apply` takes
    p.delete        # [(key, size), ...]
    p.summary       # the planner's summary, as a dict

Times are epoch milliseconds, aware ``datetime`` values or RFC 3339 text;
durations milliseconds, ``timedelta`` values or text (``"3d"``,
``"1h 30m"``, read by the planner as the command line reads them).
Nothing here decides anything: every verdict, refusal and seal is the
component's, and a refusal is raised as :class:`PlanRefused`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field as dc_field
from typing import Callable, Iterable, Optional

from ._apply import Applied, ApplyFailed, Deletion, apply, combine_shares, store_io
from ._catalogs import CatalogError, catalog_pointer
from ._component import Component, PlanRefused, field, record
from ._stores import ArrowStore, LocalStore
from ._values import Document, Duration, LocationMap, Time, document, duration_ms, epoch_ms, location_map

__all__ = [
    "plan", "plan_expiry", "check_policy", "parse_duration", "delta_head", "digest_manifest", "digest_checkpoint",
    "digest_file", "apply", "Plan",
    "ExpiryPlan", "PlanRefused", "ApplyFailed", "Sweep", "PageClassifier", "shared_classifier", "drop_classifier",
    "LocalStore", "ArrowStore", "Deletion",
    "Applied", "combine_shares", "store_io", "component_identity", "catalog_pointer", "CatalogError", "__version__",
]

try:
    from importlib.metadata import version as _version

    __version__ = _version("lakesweep")
except Exception:  # noqa: BLE001: run from a checkout, not installed
    __version__ = "0.1.0"


def component_identity(wasm=None):
    """This process's lakesweep: ``(package version, SHA-256 of the
    component it loads)``. The component is compiled (or taken from the
    cache) and loaded here, once per process, so a worker that calls this
    first plans without that wait."""
    from . import _component

    c = Component(wasm)
    # The digest of the bytes this process compiled, not of the file now.
    return __version__, _component._DIGESTS[c.path]


def parse_duration(text: str, *, wasm=None) -> int:
    """A duration written as documents and the command line write it
    (``"12h"``, ``"1h 30m"``, ``"2w"``) in milliseconds, read by the
    planner. Raises :class:`PlanRefused` (invalid-options) naming what is
    wrong."""
    return int(Component(wasm).call("parse-duration", text))



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
    decisions: dict = dc_field(default_factory=dict, repr=False)
    #: ``iceberg`` or ``delta``.
    format: str = ""

    def __repr__(self) -> str:
        freed = sum(s for _, s in self.delete)
        return (f"<Plan {self.format} {self.digest[:12]}: {len(self.delete)} to delete "
                f"({freed} bytes), {len(self.warnings)} warnings>")

    def to_arrow(self):
        """The delete list as a ``pyarrow.Table`` (key, size)."""
        import pyarrow as pa

        return pa.table(
            {
                "key": pa.array([k for k, _ in self.delete], pa.string()),
                "size": pa.array([s for _, s in self.delete], pa.uint64()),
            }
        )


_location_map = location_map


#: Bytes a piece of a large value: its hex text is twice as long.
_PIECE = 8 << 20


def _pieces(read):
    """The bytes ``read(offset)`` gives as hex text piece by piece (at
    most :data:`_PIECE` bytes each; an empty piece ends them): large
    values cross as text, which wasmtime-py moves in one copy (a list of
    bytes crosses value by value, and one call carries only so much).
    Returned as the ``bytearray`` they were gathered in: a keep set of ten
    million keys is 85 MB, and a copy into ``bytes`` would hold it twice."""
    out = bytearray()
    while True:
        part = read(len(out))
        if not part:
            return out
        out += bytes.fromhex(part)


def _each_piece(read):
    """:func:`_pieces`, one piece at a time (``bytes`` each): a host that
    sends them on one by one never holds the whole value."""
    at = 0
    while True:
        part = read(at)
        if not part:
            return
        piece = bytes.fromhex(part)
        at += len(piece)
        yield piece


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

    ``manifests``, if given, reads and decodes Iceberg manifests and Delta
    checkpoint files elsewhere (e.g. on a cluster's executors): called
    with the URIs of such reads the planner asked for at once, it yields
    ``(uri, digest)`` for each (``digest`` from :func:`digest_file`,
    best with ``resolution=`` :meth:`manifest_resolution`; ``None``: the
    file does not exist); the session checks each as it would the bytes."""

    def __init__(self, table: str, metadata: Optional[str] = None, now: Optional[Time] = None, *,
                 now_ms: Optional[Time] = None, store=None, format: str = "iceberg",
                 retention: Optional[Duration] = None, retention_ms: Optional[Duration] = None,
                 location_map: LocationMap = (), policy: Document = None, context: Document = None,
                 keep_versions: Iterable[int] = (), log_cleanup: bool = False, allow_short_retention: bool = False,
                 pointer_authoritative: bool = False, memory_budget_bytes: Optional[int] = None,
                 origin: Optional[str] = None, wasm=None, manifests: Optional[Callable] = None,
                 foreign_roots=(), prior_pointers=(), deleted_index: Optional[bytes] = None):
        if now is not None and now_ms is not None:
            raise TypeError("give now or now_ms, not both")
        when = now if now is not None else now_ms
        if when is None:
            raise ValueError("now is required: the planner reads no clock")
        if retention is not None and retention_ms is not None:
            raise TypeError("give retention or retention_ms, not both")
        if format not in ("iceberg", "delta"):
            raise ValueError(f"format: {format!r} is not iceberg or delta")
        self.store = store or LocalStore(pointer=lambda: metadata)
        self.c = Component(wasm)
        window = duration_ms(retention if retention is not None else retention_ms, "retention",
                             lambda t: self.c.call("parse-duration", t))
        cfg = record(
            table_location=table.rstrip("/"),
            format=format,
            metadata_location="" if format == "delta" else metadata,
            now_ms=epoch_ms(when, "now"),
            # None: the planner's default (the policy's, else the format's).
            file_retention_ms=window,
            keep_deleted_entries=True,
            allow_short_retention=bool(allow_short_retention),
            location_map=[record(**{"from": f, "to": t}) for f, t in _location_map(location_map)],
            policy=document(policy, "policy"),
            context=document(context, "context"),
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
            # Iceberg manifests and Delta checkpoint files, digested elsewhere.
            kinds = {}
            for u in reads:
                if self._call("is-manifest-read", u):
                    kinds[u] = "handle-manifest-digest"
                elif self._call("is-checkpoint-read", u):
                    kinds[u] = "handle-checkpoint-digest"
            if kinds:
                reads = [u for u in reads if u not in kinds]
                left = set(kinds)
                for uri, digest in self.manifests(sorted(kinds)):
                    if uri not in left:
                        raise ValueError(f"the manifest reader answered {uri}, which was not asked for (or twice)")
                    left.discard(uri)
                    if digest is None:
                        self._call("handle-missing", uri)
                    else:
                        self._call(kinds[uri], uri, digest)
                    self._drain()
                if left:
                    raise ValueError(f"the manifest reader answered no digest for {sorted(left)[:3]}")
        for uri in reads:
            b = self.store.read(uri)
            if b is None:
                self._call("handle-missing", uri)
            else:
                # As hex text: one copy into the component (see _pieces).
                self._call("handle-blob-hex", uri, bytes(b).hex())
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

    def manifest_resolution(self):
        """What the ``manifests`` reader may resolve manifests' paths
        against (``digest_file(uri, data, resolution=...)``): this build's
        rules of resolution and the table location, as one opaque string to
        pass on; ``None`` when paths must travel as written (a location
        mapping is set, or the location has other spellings). Fixed for
        the sweep's life; the session refuses a digest resolved against
        anything else."""
        return self._call("manifest-resolution")

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
        """The keep set's bytes (a ``bytearray``), for
        :class:`PageClassifier` elsewhere."""
        return _pieces(lambda at: self._call("export-keep-set-hex", at, _PIECE))

    def export_keep_set_pieces(self):
        """:meth:`export_keep_set`'s bytes in pieces of at most 8 MiB, in
        order (a generator): a host that ships them one by one never holds
        the whole keep set."""
        return _each_piece(lambda at: self._call("export-keep-set-hex", at, _PIECE))

    def referenced(self, keys):
        """Which of ``keys`` (relative to the table) the complete keep set
        references: ``[(key, why)]``."""
        return [tuple(p) for p in self._call("referenced", list(keys))]

    def feed(self, objects, last):
        """One listing page: ``[(uri, size, mtime_ms, etag), ...]``."""
        self._call("handle-page-json", _page_json(objects), bool(last))
        self._drain()

    def split_listing(self, boundaries):
        """Cuts the table listing asked for now (one prefix
        :meth:`until_keep_set` returned) into splits at ``boundaries`` (keys
        under the prefix, any order, e.g. a sample of the listing's names):
        a list of splits, each a dict ``{index, of,
        prefix, after, through}`` to list and classify elsewhere
        (:meth:`PageClassifier.begin_split`) and answer with
        :meth:`feed_split`. The planner proves the answers cover the
        listing exactly once."""
        return [
            {"index": x.index, "of": x.of, "prefix": x.prefix, "after": x.after, "through": x.through}
            for x in self._call("split-listing", list(boundaries))
        ]

    def feed_split(self, result):
        """One split's partial result (:meth:`PageClassifier.end_split`'s
        text), or its refusal (:meth:`PageClassifier.split_refusal`'s: the
        session fails with it); after the last split the listing is over."""
        self._call("handle-split-result", result)
        self._drain()

    def splits_outstanding(self):
        """The indices of the splits not answered yet."""
        return list(self._call("splits-outstanding"))

    def finish(self):
        """Answers what is left (the pointer re-read, reads a re-check asks
        for) and seals the plan."""
        if self.until_listing():
            raise ValueError("the planner still asks for a listing: serve until_listing() first")
        # Sealed into a plan the component holds; its document crosses as
        # hex text in pieces (a typed plan of many deletes crosses record
        # by record, and may be larger than one call carries).
        sealed = self._call("seal")
        try:
            digest = field(self.c.call("[method]plan.header", sealed), "digest")
            n = self.c.call("[method]plan.document-length", sealed)
            doc = _pieces(lambda at: self.c.call("[method]plan.document-hex", sealed, at, _PIECE))
        finally:
            sealed.drop(self.c.store)
        if len(doc) != n:
            raise ValueError(f"the plan's document is {len(doc)} bytes, not the {n} it says")
        doc = doc.decode()
        v = json.loads(doc)
        return Plan(
            document=doc,
            digest=digest,
            delete=[(d["key"], d["size"]) for d in v["delete"]],
            summary=v["summary"],
            warnings=v["warnings"],
            decisions=self.decisions,
            format=v.get("format", ""),
        )


class PageClassifier:
    """A keep set loaded where pages are listed (an executor, a function):
    the session's verdicts for any page of the table, without a session."""

    def __init__(self, keep_set, *, wasm=None):
        self.c = Component(wasm)
        # As hex text: one copy into the component (see _pieces).
        self.handle = self.c.call("[static]page-classifier.load-hex", memoryview(keep_set).hex())

    def check_pointer(self, live):
        """Raises :class:`PlanRefused` unless the keep set was built on the
        document the pointer names now."""
        self.c.call("[method]page-classifier.check-pointer", self.handle, live)

    def classify(self, objects, read):
        """Decisions for one page (``[(uri, size, mtime_ms, etag), ...]``):
        ``[(relative key, verdict, detail), ...]``; owner checks are settled
        with ``read(uri)`` (another table's metadata raises)."""
        ds = json.loads(self.c.call("[method]page-classifier.classify-json", self.handle, _page_json(objects)))
        return self._settled(ds, objects, read)

    def _settled(self, ds, objects, read):
        """``ds`` (the component's decisions on some of ``objects``) as
        ``(relative key, verdict, detail)``, each owner check settled with
        the metadata file ``read(uri)`` gives."""
        out = []
        by_key = None
        for d in ds:
            if d["verdict"] == "owner-check":
                if by_key is None:
                    by_key = {o[0]: o for o in objects}
                o = by_key[d["key"]]
                b = read(o[0])
                s = self.c.call(
                    "[method]page-classifier.settle-metadata-file", self.handle, _listed(o),
                    None if b is None else bytes(b),
                )
                out.append((field(s, "relative_key"), s.verdict, s.detail))
            else:
                out.append((d["relativeKey"], d["verdict"], d["detail"]))
        return out


    def begin_split(self, split):
        """Opens ``split`` (a dict from :meth:`Sweep.split_listing`) for
        listing: its keys go through :meth:`split_page` in ascending
        order, and :meth:`end_split` gives the partial result."""
        self.c.call("[method]page-classifier.begin-split", self.handle, record(**split))

    def split_page(self, objects, read):
        """Classifies and tallies one page of the open split
        (``[(uri, size, mtime_ms, etag), ...]``, ascending, after the
        previous page's): ``[(relative key, verdict, detail), ...]`` for
        every object that is not referenced (those are counted only);
        owner checks are settled with ``read(uri)``."""
        ds = json.loads(self.c.call("[method]page-classifier.split-page-json", self.handle, _page_json(objects)))
        return self._settled(ds, objects, read)

    def split_names(self, uris):
        """Takes part of the open split by name (``uris`` ascending, after
        the previous ones): every key the keep set references is settled
        by its name; returns the indices of the others, whose versions go
        to :meth:`split_page` (any gone meanwhile left out)."""
        return list(self.c.call("[method]page-classifier.split-names-json", self.handle, json.dumps(uris)))

    def end_split(self):
        """The open split's partial result (JSON text) for
        :meth:`Sweep.feed_split`."""
        return self.c.call("[method]page-classifier.end-split", self.handle)

    def split_refusal(self):
        """After a call on an open split raised :class:`PlanRefused`: the
        split's refusal (JSON text), once, to send to :meth:`Sweep.feed_split`
        in the split's place (the session then fails with this error, and no
        later attempt at the split can answer it); ``None`` if no split was
        refused since the last call."""
        return self.c.call("[method]page-classifier.split-refusal", self.handle)


#: Page classifiers of this process, by their keep set's digest.
_CLASSIFIERS = {}


def shared_classifier(digest, keep_set):
    """The :class:`PageClassifier` of this process for the keep set whose
    digest is ``digest`` (any stable name of its bytes): loaded once, from
    ``keep_set()`` (a function: the bytes are fetched only to load), and
    kept for the tasks that follow (a cluster's Python worker serves many).
    Call :func:`drop_classifier` after a failure: an instance that failed
    is not reused."""
    c = _CLASSIFIERS.get(digest)
    if c is None:
        c = _CLASSIFIERS.setdefault(digest, PageClassifier(keep_set()))
    return c


def drop_classifier(digest):
    """Forgets this process's classifier of ``digest`` (see
    :func:`shared_classifier`)."""
    _CLASSIFIERS.pop(digest, None)


def plan(table: str, metadata: Optional[str] = None, now: Optional[Time] = None, *,
         now_ms: Optional[Time] = None, store=None, format: str = "iceberg",
         retention: Optional[Duration] = None, retention_ms: Optional[Duration] = None,
         location_map: LocationMap = (), policy: Document = None, context: Document = None,
         keep_versions: Iterable[int] = (), log_cleanup: bool = False, allow_short_retention: bool = False,
         pointer_authoritative: bool = False, memory_budget_bytes: Optional[int] = None,
         origin: Optional[str] = None, wasm=None, manifests: Optional[Callable] = None,
         foreign_roots=(), prior_pointers=(), deleted_index: Optional[bytes] = None) -> Plan:
    """Plans a sweep of ``table`` (its location URI) as of ``now`` (required:
    the planner reads no clock). ``metadata`` is the current metadata
    document (Iceberg; Delta reads its log). ``store`` answers reads and
    listings (default: a :class:`LocalStore` whose pointer is
    ``metadata``). ``retention`` is the file-retention window (none: the
    policy's, else the format's default); ``location_map`` maps the roots
    the metadata names onto where the table is now; ``policy`` and
    ``context`` are JSON documents (text or dicts); ``keep_versions`` and
    ``log_cleanup`` are Delta's. Raises :class:`PlanRefused` when the
    planner refuses; then nothing may be deleted."""
    s = Sweep(table, metadata, now, now_ms=now_ms, store=store, format=format, retention=retention,
              retention_ms=retention_ms, location_map=location_map, policy=policy, context=context,
              keep_versions=keep_versions, log_cleanup=log_cleanup, allow_short_retention=allow_short_retention,
              pointer_authoritative=pointer_authoritative, memory_budget_bytes=memory_budget_bytes, origin=origin,
              wasm=wasm, manifests=manifests, foreign_roots=foreign_roots, prior_pointers=prior_pointers,
              deleted_index=deleted_index)
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


def digest_file(uri, data, *, resolution=None, wasm=None):
    """What a session needs of the Iceberg manifest or Delta checkpoint
    file ``data`` read at ``uri`` (the URI exactly as the session asked for
    it; a Delta checkpoint's name ends ``.parquet`` or ``.json`` under
    ``_delta_log/``): its sealed digest (:func:`digest_manifest`, with
    ``resolution`` if given, or :func:`digest_checkpoint`)."""
    if "/_delta_log/" in uri:
        return digest_checkpoint(uri, data, wasm=wasm)
    return digest_manifest(uri, data, resolution=resolution, wasm=wasm)


def digest_checkpoint(uri, data, *, wasm=None):
    """What a session needs of the Delta checkpoint file ``data`` (a part,
    a V2 checkpoint, a sidecar) read at ``uri``: a sealed digest for
    :class:`Sweep`'s ``manifests`` reader. Raises :class:`PlanRefused`
    (malformed) for bytes that are not a readable checkpoint."""
    from ._apply import _component

    return _component(wasm).call("digest-checkpoint", uri, bytes(data))


def digest_manifest(uri, data, *, resolution=None, wasm=None):
    """What a session needs of the Iceberg manifest ``data`` read at ``uri``
    (the URI exactly as the session asked for it): a small sealed digest
    for :class:`Sweep`'s ``manifests`` reader (text). With ``resolution``
    (the session's :meth:`Sweep.manifest_resolution`), each path naming a
    plain key under the table is written as the key's fingerprint, so the
    session merges keys instead of resolving paths. Raises
    :class:`PlanRefused` (malformed) for bytes that are not a readable
    manifest, (invalid) for a resolution no session gives."""
    from ._apply import _component

    if resolution is not None:
        return _component(wasm).call("digest-manifest-resolved", resolution, uri, bytes(data))
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


@dataclass(repr=False)
class ExpiryPlan:
    """Which snapshots expire, and why the rest stay."""

    #: The stored document (``lakesweep.expiry.v1``), byte for byte.
    document: str
    #: Snapshot ids that expire, ascending.
    expire: list
    #: ``{snapshot id: why}`` of the snapshots that expire.
    expired: dict
    #: ``{snapshot id: [reasons]}`` of the snapshots that stay.
    retain: dict
    #: Refs the policy removes.
    remove_refs: list
    #: The planner's warnings.
    warnings: list

    def __repr__(self) -> str:
        return f"<ExpiryPlan: {len(self.expire)} expire, {len(self.retain)} retained, {len(self.warnings)} warnings>"


def plan_expiry(metadata_location: str, metadata_bytes: bytes, now: Optional[Time] = None, *,
                now_ms: Optional[Time] = None, policy: Document = None, context: Document = None,
                expire_ids: Iterable[int] = (), wasm=None) -> ExpiryPlan:
    """Which snapshots of the Iceberg metadata document expire as of
    ``now`` under ``policy`` and ``context`` (JSON text or dicts), and why
    the rest stay (an :class:`ExpiryPlan`; ``.document`` is what
    ``lakesweep expire`` takes)."""
    if now is not None and now_ms is not None:
        raise TypeError("give now or now_ms, not both")
    when = now if now is not None else now_ms
    if when is None:
        raise ValueError("now is required: the planner reads no clock")
    c = Component(wasm)
    e = c.call(
        "plan-expiry",
        metadata_location,
        bytes(metadata_bytes),
        document(policy, "policy"),
        document(context, "context"),
        epoch_ms(when, "now"),
        [int(i) for i in expire_ids],
        [],
    )
    v = json.loads(e.document)
    return ExpiryPlan(
        document=e.document,
        expire=[int(x) for x in v.get("expire", [])],
        expired={int(x["snapshotId"]): x["why"] for x in v.get("expired", [])},
        retain={int(r["snapshotId"]): list(r.get("reasons", [])) for r in v.get("retain", [])},
        remove_refs=list(v.get("removeRefs", [])),
        warnings=list(v.get("warnings", [])),
    )


def check_policy(policy: Document, *, wasm=None) -> dict:
    """A retention policy's (JSON text or a dict) errors and warnings by
    field, and its digest: ``{"errors": [(field, message)], "warnings":
    [...], "digest": str}``."""
    c = Component(wasm)
    r = c.call("check-policy", document(policy, "policy"))
    pairs = lambda fs: [(f.field, f.message) for f in fs]  # noqa: E731
    return {"errors": pairs(r.errors), "warnings": pairs(r.warnings), "digest": r.digest}
