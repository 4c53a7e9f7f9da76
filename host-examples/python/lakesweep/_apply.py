"""Deleting a sealed plan: this package's I/O loop around the planner's
deletion session (the ``deletion`` resource). The session decides the
batches, the acceptance of each against the live facts, whether each
object is still the planned version, the damage check and the outcome;
this module reads the facts it asks for, HEADs and DELETEs what it names,
runs the planner session of the damage check, and hands every receipt to
the caller as it comes. It compares no pointer, generation, version or time
itself, and holds no defaults (the batch size is the planner's).

The work splits in two so that a cluster can spread the HEADs and DELETEs:
:class:`Deletion` (one process: the session) hands each request's objects
to an ``io(kind, targets)`` function, and :func:`store_io` (any process:
HEAD or DELETE, nothing else) is that function for one store.
"""

import json
import time
from dataclasses import dataclass, field as dc_field

from ._component import Component, field, record


def clock_ms():
    """This machine's clock, epoch milliseconds."""
    return time.time_ns() // 1_000_000


_SHARED = {}


def _component(wasm):
    """One planner instance per process (an executor's digests)."""
    c = _SHARED.get(wasm)
    if c is None:
        c = _SHARED.setdefault(wasm, Component(wasm))
    return c


def store_io(store, kind, targets):
    """Carries out one request of a deletion on ``store``: ``kind`` is
    ``"head"`` or ``"delete"``, ``targets`` the request's objects (dicts with
    ``key`` and ``uri``). Yields one answer each, as the session takes them.
    A DELETE is sent once (``store.delete``); an error is an unknown outcome
    (it may have happened). Runs anywhere (an executor)."""
    for t in targets:
        key, uri = t["key"], t["uri"]
        if kind == "head":
            try:
                seen = store.head(uri)
            except Exception as e:  # noqa: BLE001: the store's words go into the receipt
                yield {"key": key, "head": {"kind": "failed", "value": str(e)}}
                continue
            if seen is None:
                yield {"key": key, "head": {"kind": "absent"}}
            else:
                yield {"key": key, "head": {"kind": "found", "value": {
                    "size": seen[0], "lastModifiedMs": seen[1], "etag": seen[2], "versionId": None}}}
            continue
        requested = clock_ms()
        try:
            existed = store.delete(uri)
        except Exception as e:  # noqa: BLE001
            yield {"key": key, "delete": {"kind": "unknown", "value": f"DELETE failed: {e}"},
                   "requestedMs": requested, "answeredMs": None}
            continue
        answer = {"kind": "deleted", "value": None} if existed else {"kind": "absent"}
        yield {"key": key, "delete": answer, "requestedMs": requested, "answeredMs": clock_ms()}


def receipt_json(r):
    """A receipt as the receipts file spells it (as the command line's)."""
    c = r["receipt"]
    out = {
        "key": c["key"], "uri": r["uri"], "result": c["result"], "planned": r["planned"],
        "version": c["version"], "requestedMs": c["requestedMs"], "confirmedMs": c["confirmedMs"],
        "deleteMarker": c["deleteMarker"], "detail": c["detail"],
    }
    if c.get("deleteMarkerVersionId") is not None:
        out["deleteMarkerVersionId"] = c["deleteMarkerVersionId"]
    if r.get("restore"):
        out["restore"] = r["restore"]
    return out


@dataclass
class Applied:
    """What a run did: its receipts in the order written (as
    :func:`receipt_json` spells them: every one, or only the ``damaged``
    ones when the run kept none), and the planner's outcome: ``exit``
    (0 done; 1 a key failed, changed, was held or not attempted, or its
    outcome is unknown; 2 refused before anything was tried; 3 damage),
    why it stopped or was refused, and whether the damage check could not
    be made."""

    receipts: list = dc_field(default_factory=list)
    outcome: dict = dc_field(default_factory=dict)

    @property
    def exit(self):
        return self.outcome.get("exit", 0)

    @property
    def stopped(self):
        return self.outcome.get("stopped")

    @property
    def refused(self):
        return self.outcome.get("refused")

    @property
    def damage_unchecked(self):
        return self.outcome.get("damageUnchecked")

    @property
    def damage(self):
        return [r for r in self.receipts if r["result"] == "damaged"]

    def count(self, result):
        """Receipts with this result (the planner's count)."""
        return int(self.outcome.get("results", {}).get(result, 0))


class Deletion:
    """Applies one sealed plan document, through the planner's deletion
    session.

    ``store`` reads the live facts (``pointer()``: the metadata location
    now; ``list()`` of a Delta table's log); ``context`` is a function
    returning the context document now (or ``None``), read again before
    every batch; ``clock`` the host's clock. ``batch`` (keys per batch)
    and ``keys`` (only these keys of the plan) are passed on; none: the
    planner's. ``share=(index, of)`` or ``(index, of, attempt)``: only that
    share of the plan's deletes, as the planner cuts them (one of ``of``
    sessions applying it at once; :func:`combine_shares` makes their
    outcomes one); ``attempt`` (from 0) says which attempt at the share
    this is (a task run again: 1), so the planner knows an earlier one may
    have deleted keys this one does not come to.
    ``stop_switches``: a fleet's stop switches (URIs), read with the
    table's own before every batch; ``switch_store`` reads them (default:
    ``store``). While one is set, nothing is deleted."""

    def __init__(self, document, store, *, location_map=(), context=None, clock=clock_ms,
                 allow_future_now=False, wasm=None, batch=None, dry_run=False, keys=None, share=None,
                 stop_switches=(), switch_store=None):
        self.c = Component(wasm)
        self.wasm = wasm
        self.document = document
        self.store = store
        self.location_map = [tuple(m) for m in location_map]
        self.context = context or (lambda: None)
        self.clock = clock
        self.switch_store = switch_store or store
        # Checked by the planner (schema, digest); only its header crosses
        # back (a plan of a million deletes is larger than one call may carry).
        plan = self.c.call("[static]plan.load", document)
        self.table = field(self.c.call("[method]plan.header", plan), "table_location")
        plan.drop(self.c.store)
        cfg = record(
            plan=document,
            location_map=[record(**{"from": f, "to": t}) for f, t in self.location_map],
            batch_size=None if batch is None else int(batch),
            dry_run=bool(dry_run),
            allow_future_now=bool(allow_future_now),
            store_gives_etags=bool(getattr(store, "gives_etags", False)),
            keys=None if keys is None else list(keys),
            share=self._share(share),
            stop_switches=list(stop_switches),
        )
        self.session = self.c.call("[static]deletion.start", cfg)

    @staticmethod
    def _share(share):
        # (index, of) or (index, of, attempt), whole numbers; the planner
        # checks the values.
        if share is None:
            return None
        if not isinstance(share, (tuple, list)) or len(share) not in (2, 3) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in share):
            raise ValueError(f"share must be (index, of) or (index, of, attempt), whole numbers: {share!r}")
        return record(index=share[0], of=share[1], attempt=share[2] if len(share) == 3 else 0)

    def _call(self, name, *args):
        return self.c.call(f"[method]deletion.{name}", self.session, *args)

    def _switches(self, uris):
        # Each read as the store answers it; the planner decides what it means.
        out = []
        for uri in uris:
            try:
                data = self.switch_store.read(uri)
                answer = ({"kind": "absent"} if data is None else
                          {"kind": "present", "value": bytes(data).decode("utf-8", "replace")})
            except Exception as e:  # noqa: BLE001: an unreadable switch stops the run
                answer = {"kind": "failed", "value": str(e)}
            out.append({"uri": uri, "answer": answer})
        return out

    def _facts(self, log_prefix, switches=()):
        from . import _listed_json

        try:
            # The switches first: a halt set before the facts are read is seen.
            read_switches = self._switches(switches)
            if log_prefix:
                log = [_listed_json(o) for page in self.store.list(log_prefix) for o in page]
                facts = {"pointer": None, "log": log}
            else:
                facts = {"pointer": self.store.pointer(), "log": []}
            facts["context"] = self.context()
            facts["clockMs"] = int(self.clock())
            facts["switches"] = read_switches
            return {"facts": facts}
        except Exception as e:  # noqa: BLE001: the session stops (or cannot check damage), never guesses
            return {"factsFailed": str(e)}

    def _damage_check(self, config, count):
        from . import Sweep

        try:
            # The deleted keys, in pieces.
            keys = []
            while len(keys) < count:
                piece = self._call("damage-keys", len(keys), 4096)
                if not piece:
                    break
                keys.extend(piece)
            s = Sweep(config["tableLocation"], config["metadataLocation"] or None, config["nowMs"],
                      store=self.store, format=config["format"], retention_ms=config["fileRetentionMs"],
                      location_map=[(m["from"], m["to"]) for m in config["locationMap"]],
                      allow_short_retention=config["allowShortRetention"], context=config["context"],
                      prior_pointers=config["priorPointers"], wasm=self.wasm)
            s.until_keep_set()
            return {"referenced": [list(p) for p in s.referenced(keys)]}
        except Exception as e:  # noqa: BLE001
            return {"referencedFailed": str(e)}

    def run(self, io=None, sink=None, keep_receipts=True):
        """Drives the session to its end. ``io(kind, targets)`` carries out
        a HEAD or DELETE request (default :func:`store_io` on this store; a
        cluster job spreading it works too) and yields the answers;
        ``sink(receipt)`` gets each receipt as it is made (write it out at
        once). ``keep_receipts=False`` keeps only the ``damaged`` ones in the
        result (a run of a million keys: the sink has them all). Returns
        :class:`Applied`."""
        io = io or (lambda kind, targets: store_io(self.store, kind, targets))
        put = sink or (lambda r: None)
        out = Applied()

        def drain():
            # At most a few thousand a call: until none is left.
            while True:
                piece = json.loads(self._call("drain-receipts-json"))
                if not piece:
                    return
                for r in piece:
                    line = receipt_json(r)
                    put(line)
                    if keep_receipts or line["result"] == "damaged":
                        out.receipts.append(line)

        while True:
            answers, heads, deletes = [], [], []
            while True:
                text = self._call("poll-request-json")
                if text is None:
                    break
                req = json.loads(text)
                kind = req["kind"]
                if kind == "read-facts":
                    answers.append(self._facts(req.get("logPrefix"), req.get("switches") or ()))
                elif kind == "head":
                    heads.extend(req["objects"])
                elif kind == "delete":
                    deletes.extend(req["objects"])
                elif kind == "check-damage":
                    answers.append(self._damage_check(req["config"], req["keys"]))
            # Every object asked for at once, one io call per kind (a
            # cluster spreads each): DELETEs (each just shown to be the
            # planned version) first.
            if deletes:
                answers.extend(io("delete", deletes))
            if heads:
                answers.extend(io("head", heads))
            if not answers:
                if self._call("is-done"):
                    break
                raise RuntimeError("the deletion session waits for nothing this host was asked (a bug)")
            self._call("handle-answers-json", json.dumps(answers))
            drain()
        drain()
        out.outcome = json.loads(self._call("outcome-json"))
        return out


def combine_shares(document, outcomes, *, wasm=None):
    """The outcome of a run of ``document`` cut into shares, from every
    share's outcome (:attr:`Applied.outcome`, any order), as the planner
    combines them: it refuses (:class:`lakesweep.PlanRefused`) unless they
    are every share of one cut of this plan, each once. Returns
    :class:`Applied` with the combined outcome and no receipts."""
    c = Component(wasm)
    plan = c.call("[static]plan.load", document)
    try:
        whole = c.call("[method]plan.combine-shares-json", plan, [json.dumps(o) for o in outcomes])
    finally:
        plan.drop(c.store)
    return Applied(outcome=json.loads(whole))


class ApplyFailed(Exception):
    """A run that did not delete every key of its plan: refused before
    anything (``exit`` 2), stopped, a key failed, changed or held (1), or
    damage found or not checkable (3). ``applied`` is the run's
    :class:`Applied`: its receipts (``receipts``, ``damage``) and the
    planner's outcome."""

    def __init__(self, applied):
        self.applied = applied
        self.receipts = applied.receipts
        self.exit = applied.exit
        o = applied.outcome
        why = o.get("refused") or o.get("stopped") or []
        if isinstance(why, str):
            why = [why]
        parts = []
        if applied.damage:
            parts.append(f"damage: {len(applied.damage)} deleted keys were still referenced")
        if applied.damage_unchecked:
            parts.append(f"the damage check could not be made: {applied.damage_unchecked}")
        parts.extend(str(w) for w in why)
        results = ", ".join(f"{k} {v}" for k, v in sorted(o.get("results", {}).items()) if v)
        head = {2: "refused, nothing deleted", 3: "DAMAGE"}.get(self.exit, "not every key was deleted")
        super().__init__(f"{head} (exit {self.exit}): {'; '.join(parts) or results or 'see the receipts'}")


def apply(document, store, *, dry_run=False, sink=None, keep_receipts=True, check=True, **options):
    """Applies a sealed plan on this machine (see :class:`Deletion` for the
    options). Returns :class:`Applied` when every key was deleted (or was
    already absent); otherwise raises :class:`ApplyFailed` carrying the
    receipts, unless ``check=False`` (then the :class:`Applied` is returned
    whatever happened)."""
    done = Deletion(document, store, dry_run=dry_run, **options).run(
        sink=sink, keep_receipts=keep_receipts)
    if check and done.exit != 0:
        raise ApplyFailed(done)
    return done
