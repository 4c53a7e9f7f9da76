"""Deleting a sealed plan, in batches, each accepted by the planner against
facts read just before it, every key HEADed and deleted only while the
planner's ``same-version`` says it is the version the plan pinned, a
receipt for every key, and a damage check after the last batch. The same
rules as the ``lakesweep apply`` command; this module compares no pointer,
generation or time itself.

The work splits in two so that a cluster can spread the deletes:
:class:`Deletion` (one process: the plan, the facts, the acceptance, the
damage check) hands each accepted batch to a ``delete_batch`` function,
and :func:`delete_keys` (any process: HEAD, ask, DELETE) is that function
for one store.
"""

import time
from dataclasses import dataclass, field as dc_field

from ._component import Component, field, record

#: Keys per batch: the facts are read and accepted again before each.
BATCH = 256


def clock_ms():
    """This machine's clock, epoch milliseconds."""
    return time.time_ns() // 1_000_000


def version_json(v):
    """An object version as the receipts spell it."""
    if v is None:
        return None
    return {"size": v.size, "lastModifiedMs": field(v, "last_modified_ms"), "etag": v.etag,
            "versionId": field(v, "version_id")}


def _version(d):
    """A receipt's version back into a WIT record."""
    return record(size=d["size"], last_modified_ms=d["lastModifiedMs"], etag=d["etag"], version_id=d["versionId"])


def _receipt(table, key, planned, result, seen=None, detail=None, requested=None):
    now = clock_ms()
    return {
        "key": key, "uri": f"{table}/{key}", "result": result, "planned": planned,
        "version": None if seen is None else {"size": seen[0], "lastModifiedMs": seen[1], "etag": seen[2], "versionId": None},
        "requestedMs": requested or now, "confirmedMs": now, "deleteMarker": False, "detail": detail,
    }


_SAME = {}


def _component(wasm):
    """One planner instance per process for ``same-version``."""
    c = _SAME.get(wasm)
    if c is None:
        c = _SAME.setdefault(wasm, Component(wasm))
    return c


def delete_keys(store, table, items, *, dry_run=False, wasm=None):
    """Deletes ``items`` (``[(key, planned version dict)]``, as a batch
    :class:`Deletion` accepted) from ``store``: each is HEADed, and deleted
    only when the planner says the answer is the pinned version. Yields one
    receipt (dict) per key, as it ends. Runs anywhere (an executor)."""
    c = _component(wasm)
    for key, planned in items:
        uri = f"{table}/{key}"
        requested = clock_ms()
        try:
            seen = store.head(uri)
        except Exception as e:  # noqa: BLE001: the store's words go into the receipt
            yield _receipt(table, key, planned, "failed", None, f"HEAD failed: {e}", requested)
            continue
        if seen is None:
            yield _receipt(table, key, planned, "already-absent", None, None, requested)
            continue
        same = c.call("same-version", _version(planned),
                      record(size=seen[0], last_modified_ms=seen[1], etag=seen[2], version_id=None))
        if not same:
            yield _receipt(table, key, planned, "skipped-changed", seen,
                           "the object is not the version the plan pinned", requested)
            continue
        if dry_run:
            r = _receipt(table, key, planned, "would-delete", seen, None, requested)
            yield r
            continue
        try:
            existed = store.delete(uri)
        except Exception as e:  # noqa: BLE001
            yield _receipt(table, key, planned, "failed", seen, f"DELETE failed: {e}", requested)
            continue
        yield _receipt(table, key, planned, "deleted" if existed else "already-absent", seen, None, requested)


@dataclass
class Applied:
    """What a run did: every receipt in the order written, why it stopped
    early (if it did), damage (deleted keys the live table needs: restore
    them) and whether the damage check could not be made."""

    receipts: list = dc_field(default_factory=list)
    stopped: list = None
    damage: list = dc_field(default_factory=list)
    damage_unchecked: str = None

    def count(self, result):
        """Receipts with this result."""
        return sum(1 for r in self.receipts if r["result"] == result)


class Deletion:
    """Applies one sealed plan document.

    ``store`` reads the live facts (``pointer()``: the metadata location now;
    for a Delta table the newest commit is found by listing its log);
    ``context`` is a function returning the context document now (or
    ``None``), read again before every batch; ``clock`` the host's clock."""

    def __init__(self, document, store, *, location_map=(), context=None, clock=clock_ms,
                 allow_future_now=False, wasm=None):
        self.c = Component(wasm)
        self.wasm = wasm
        self.document = document
        self.plan = self.c.call("verify-plan", document)
        self.table = field(self.plan, "table_location")
        self.delta = self.plan.format == "delta"
        self.store = store
        self.location_map = [tuple(m) for m in location_map]
        self.maps = [record(**{"from": f, "to": t}) for f, t in self.location_map]
        self.context = context or (lambda: None)
        self.clock = clock
        self.allow_future_now = allow_future_now

    def items(self):
        """Every planned delete: ``[(key, pinned version dict)]``, by key."""
        return [(d.key, version_json(d.version)) for d in self.plan.delete]

    def facts(self):
        """The live facts, read now."""
        from . import _listed

        head = None
        if self.delta:
            listed = [_listed(o) for page in self.store.list(f"{self.table}/_delta_log/") for o in page]
            h = self.c.call("delta-head", self.table, listed)
            if h is None:
                raise ValueError(f"{self.table}: the Delta log holds no version now")
            location, head = h.uri, h.version
        else:
            raw = self.store.pointer()
            if raw is None:
                raise ValueError(f"{self.table}: the catalog names no metadata now (table dropped?)")
            location = self.c.call("canonical-pointer", raw, self.maps)
        return record(metadata_location=location, head=head, context=self.context(), clock_ms=int(self.clock()),
                      allow_future_now=bool(self.allow_future_now))

    def accept(self):
        """The planner's answer for the facts now: (granted, differences,
        {denied key: why})."""
        a = self.c.call("accept-plan", self.document, self.facts())
        return a.granted, list(a.differences), {d.key: d.why for d in a.denied}

    def run(self, delete_batch, *, batch=BATCH, sink=None):
        """Deletes in batches: the facts are accepted before each, and
        ``delete_batch(items)`` (e.g. :func:`delete_keys`, or a cluster
        job calling it) deletes the batch's keys and yields their receipts.
        ``sink(receipt)`` gets each receipt as it is made (write it out at
        once). Returns :class:`Applied`."""
        out = Applied()
        put = sink or (lambda r: None)

        def emit(r):
            put(r)
            out.receipts.append(r)

        rest = self.items()
        deleted = []
        while rest:
            now, rest = rest[:max(1, batch)], rest[max(1, batch):]
            try:
                granted, differences, denied = self.accept()
            except Exception as e:  # noqa: BLE001: unreadable facts stop the run like a refusal
                granted, differences, denied = False, [f"the live state could not be read: {e}"], {}
            if not granted:
                why = "; ".join(differences)
                for key, planned in now + rest:
                    emit(_receipt(self.table, key, planned, "skipped-stopped", None,
                                  f"not deleted: the run stopped ({why})"))
                out.stopped = differences
                break
            todo = []
            for key, planned in now:
                if key in denied:
                    emit(_receipt(self.table, key, planned, "skipped-protected", None, f"not deleted: {denied[key]}"))
                else:
                    todo.append((key, planned))
            answered = set()
            try:
                for r in delete_batch(todo):
                    answered.add(r["key"])
                    # A key absent now may be one this run deleted (a
                    # cluster retries a failed task, whose receipts are
                    # lost), and a DELETE that failed after its HEAD may
                    # have landed: both are checked for damage like a
                    # deleted one.
                    if r["result"] in ("deleted", "already-absent") or (
                            r["result"] == "failed" and r["version"] is not None):
                        deleted.append(r["key"])
                    emit(r)
            except Exception as e:  # noqa: BLE001: deletes may have happened; the run stops and is checked
                why = f"the deletes failed: {e}"
                for key, planned in todo:
                    if key not in answered:
                        deleted.append(key)
                        emit(_receipt(self.table, key, planned, "unknown", None,
                                      f"no answer: may or may not be deleted ({why})"))
                for key, planned in rest:
                    emit(_receipt(self.table, key, planned, "skipped-stopped", None,
                                  f"not deleted: the run stopped ({why})"))
                out.stopped = [why]
                break
        if deleted:
            self._damage_check(deleted, out)
            for r in out.damage:
                put(r)
        return out

    def _damage_check(self, deleted, out):
        """After the last batch: which deleted keys does the live table
        reference, or a live hold cover? A failure to tell is recorded."""
        from . import Sweep

        try:
            granted, _, denied = self.accept()
            found = [(k, f"now covered by {denied[k]}") for k in deleted if k in denied]
            if not granted:
                # The table changed since the plan: the planner says what
                # the live table references now.
                tokens = self.plan.tokens
                metadata = None if self.delta else self.store.pointer()
                s = Sweep(self.table, metadata, field(tokens, "now_ms"), store=self.store,
                          format="delta" if self.delta else "iceberg",
                          retention_ms=field(tokens, "file_retention_ms"),
                          location_map=self.location_map, allow_short_retention=True,
                          context=self.context(), wasm=self.wasm)
                s.until_keep_set()
                found.extend(s.referenced(deleted))
        except Exception as e:  # noqa: BLE001
            out.damage_unchecked = str(e)
            return
        planned = {k: p for k, p in self.items()}
        for key, why in found:
            p = planned[key]
            r = _receipt(self.table, key, p, "damaged", (p["size"], p["lastModifiedMs"], p["etag"]),
                         f"deleted by this run (or absent after it), and the live table needs it: {why}")
            r["restore"] = "no version to restore from on this store: restore the object from a backup or the writer's output"
            out.damage.append(r)


def apply(document, store, *, batch=BATCH, dry_run=False, sink=None, **options):
    """Applies a sealed plan on this machine (see :class:`Deletion` for the
    options). Returns :class:`Applied`."""
    d = Deletion(document, store, **options)
    return d.run(lambda items: delete_keys(store, d.table, items, dry_run=dry_run, wasm=d.wasm), batch=batch, sink=sink)
