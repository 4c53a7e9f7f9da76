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

from ._component import Component, PlanRefused, field, record
from ._stores import ArrowStore, LocalStore

__all__ = ["plan", "plan_expiry", "check_policy", "Plan", "PlanRefused", "LocalStore", "ArrowStore"]

DAY_MS = 86_400_000


@dataclass
class Plan:
    """A sealed plan."""

    #: The stored document (``lakesweep.plan.v2``), byte for byte.
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


def plan(
    table,
    metadata=None,
    now_ms=None,
    *,
    store=None,
    format="iceberg",
    retention_ms=None,
    location_map=(),
    policy=None,
    context=None,
    keep_versions=(),
    log_cleanup=False,
    pointer_authoritative=False,
    memory_budget_bytes=1 << 30,
    origin=None,
    wasm=None,
):
    """Plans a sweep of ``table`` (its location URI) at ``now_ms`` (epoch
    milliseconds; required: the planner reads no clock). ``metadata`` is
    the current metadata document (Iceberg; Delta reads its log).
    ``store`` answers reads and listings (default: a :class:`LocalStore`
    whose pointer is ``metadata``). Raises :class:`PlanRefused` when the
    planner refuses; then nothing may be deleted."""
    if now_ms is None:
        raise ValueError("now_ms is required: the planner reads no clock")
    store = store or LocalStore(pointer=lambda: metadata)
    c = Component(wasm)
    cfg = record(
        table_location=table.rstrip("/"),
        format=format,
        metadata_location="" if format == "delta" else metadata,
        now_ms=int(now_ms),
        file_retention_ms=int(retention_ms if retention_ms is not None else (7 if format == "delta" else 3) * DAY_MS),
        keep_deleted_entries=True,
        allow_short_retention=False,
        location_map=[record(**{"from": f, "to": t}) for f, t in location_map],
        policy=policy,
        context=context,
        keep_versions=[int(v) for v in keep_versions],
        log_cleanup=bool(log_cleanup),
        pointer_authoritative=bool(pointer_authoritative),
        memory_budget_bytes=int(memory_budget_bytes),
        origin=origin,
    )
    session = c.call("[static]session.start", cfg)
    decisions = {}

    def drain():
        for d in c.call("[method]session.drain-decisions", session):
            decisions[field(d, "relative_key")] = (d.verdict, d.detail)

    while True:
        reads, lists, pointer_asked = [], [], False
        while True:
            r = c.call("[method]session.poll-request", session)
            if r is None:
                break
            if r.tag == "read-blob":
                reads.append(r.payload)
            elif r.tag == "list":
                lists.append(r.payload)
            else:
                pointer_asked = True
        if not reads and not lists and not pointer_asked:
            break
        for uri in reads:
            b = store.read(uri)
            if b is None:
                c.call("[method]session.handle-missing", session, uri)
            else:
                c.call("[method]session.handle-blob", session, uri, bytes(b))
            drain()
        for prefix in lists:
            held = None
            for page in store.list(prefix):
                if held is not None:
                    c.call("[method]session.handle-page", session, [_listed(o) for o in held], False)
                    drain()
                held = page
            c.call("[method]session.handle-page", session, [_listed(o) for o in (held or [])], True)
            drain()
        if pointer_asked:
            c.call("[method]session.handle-pointer", session, store.pointer())
            drain()
    sealed = c.call("[method]session.finish", session)
    doc = sealed.document
    v = json.loads(doc)
    return Plan(
        document=doc,
        digest=sealed.digest,
        delete=[(d["key"], d["size"]) for d in v["delete"]],
        summary=v["summary"],
        warnings=v["warnings"],
        decisions=decisions,
    )


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
