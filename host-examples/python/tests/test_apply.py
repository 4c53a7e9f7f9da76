"""Applying a sealed plan from Python, and sessions fed manifest digests
instead of manifests: the planner decides, this package carries out."""

import json
import os
import re
from pathlib import Path

import pytest

import lakesweep
from lakesweep import LocalStore, PlanRefused
from test_golden import DAY, REPO, VROOT, golden, stage


@pytest.fixture
def events(tmp_path):
    expect = json.loads((REPO / "tests/fixtures/generated/expect.json").read_text())
    t = expect["events"]
    root = stage(REPO / "tests/fixtures/generated", tmp_path / "gen", {t["location"][len(VROOT) + 1:]: t["mtimes"]})
    return t, root


def on_disk(root, t, key):
    return root / t["location"][len(VROOT) + 1:] / key


def test_a_session_fed_manifest_digests_plans_byte_for_byte_as_on_the_bytes(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    asked = []

    def manifests(uris):
        asked.extend(uris)
        for u in uris:
            b = store.read(u)
            d = lakesweep.digest_manifest(u, b)
            assert len(d) < len(b)
            yield u, d

    now = t["now_ms"] + 365 * DAY
    p = lakesweep.plan(t["location"], t["metadata_location"], now, store=store, manifests=manifests,
                       retention_ms=t["file_retention_ms"])
    assert asked and all(u.endswith(".avro") for u in asked)
    assert p.document == golden("iceberg-events-later")


def _run(s):
    """Drives a :class:`lakesweep.Sweep` to its sealed plan, as ``plan`` does."""
    while True:
        prefixes = s.until_listing()
        if not prefixes:
            return s.finish()
        for prefix in prefixes:
            pages = list(s.store.list(prefix)) or [[]]
            for i, page in enumerate(pages):
                s.feed(page, i == len(pages) - 1)


def test_manifest_digests_resolved_where_read_plan_byte_for_byte_as_the_bytes(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    made = []

    def reader(resolution):
        def manifests(uris):
            for u in uris:
                d = lakesweep.digest_file(u, store.read(u), resolution=resolution())
                made.append(d)
                yield u, d
        return manifests

    now = t["now_ms"] + 365 * DAY
    s = lakesweep.Sweep(t["location"], t["metadata_location"], now, store=store,
                        manifests=reader(lambda: s.manifest_resolution()), retention_ms=t["file_retention_ms"])
    assert s.manifest_resolution() == "plain-keys-xxh3-64/1 " + t["location"].rstrip("/")
    assert _run(s).document == golden("iceberg-events-later")
    # Each digest resolved: its plain paths sent as their keys'
    # fingerprints, the percent-encoded ones (other spellings) as written.
    assert made and all(d.startswith("lakesweep-manifest-digest 3\n") for d in made)
    assert any(re.search(r" #[0-9a-f]{16}\n", d) for d in made)
    assert any(re.search(r' "file:///[^"]*%[^"]*"\n', d) for d in made)
    # Resolved against another location: refused (its keys would be
    # another table's); a location mapping leaves nothing to resolve against.
    with pytest.raises(PlanRefused, match="was resolved against"):
        _run(lakesweep.Sweep(t["location"], t["metadata_location"], now, store=store,
                             manifests=reader(lambda: "plain-keys-xxh3-64/1 file:///elsewhere"),
                             retention_ms=t["file_retention_ms"]))
    mapped = lakesweep.Sweep(t["location"], t["metadata_location"], now, store=store,
                             location_map=[("s3://old/t", t["location"])], retention_ms=t["file_retention_ms"])
    assert mapped.manifest_resolution() is None


def test_a_digest_of_another_manifest_or_a_damaged_one_refuses(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])

    def swapped(uris):
        # Each read answered with the digest of the next manifest's bytes.
        for u, v in zip(uris, uris[1:] + uris[:1]):
            yield u, lakesweep.digest_manifest(v, store.read(v))

    def damaged(uris):
        for u in uris:
            d = lakesweep.digest_manifest(u, store.read(u))
            i = d.index(".parquet")
            yield u, d[:i] + ".parquel" + d[i + len(".parquet"):]

    for reader, why in ((swapped, "was made from"), (damaged, "checksum")):
        with pytest.raises(PlanRefused, match=why):
            lakesweep.plan(t["location"], t["metadata_location"], t["now_ms"], store=store, manifests=reader,
                           retention_ms=t["file_retention_ms"])
    with pytest.raises(PlanRefused) as e:
        lakesweep.digest_manifest("file:///x/m.avro", b"Obj\x01 not a manifest")
    assert e.value.kind == "malformed"


def plan_later(t, store):
    return lakesweep.plan(t["location"], t["metadata_location"], t["now_ms"] + 365 * DAY, store=store,
                          retention_ms=t["file_retention_ms"])


def test_apply_deletes_the_plan_and_writes_a_receipt_per_key(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    assert p.delete
    lines = []
    done = lakesweep.apply(p.document, store, batch=2, sink=lines.append, allow_future_now=True)
    assert [r["key"] for r in done.receipts] == sorted(k for k, _ in p.delete)
    assert {r["result"] for r in done.receipts} == {"deleted"}
    assert lines == done.receipts and not done.stopped and not done.damage and done.damage_unchecked is None
    for k, _ in p.delete:
        assert not on_disk(root, t, k).exists()
    # Everything the plan kept is still there: the table plans the same
    # (nothing left to delete) and its live files are all present.
    again = plan_later(t, store)
    assert again.delete == []
    # A second run of the same plan finds them gone.
    done = lakesweep.apply(p.document, store, allow_future_now=True)
    assert {r["result"] for r in done.receipts} == {"already-absent"}


def test_apply_refuses_a_moved_pointer_before_deleting_anything(events):
    t, root = events
    moved = t["metadata_location"].replace(".metadata.json", "-moved.metadata.json")
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    later = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: moved)
    with pytest.raises(lakesweep.ApplyFailed, match=r"refused, nothing deleted \(exit 2\)") as e:
        lakesweep.apply(p.document, later, allow_future_now=True)
    # Refused before anything was tried: exit 2, no receipts.
    done = e.value.applied
    assert done.refused and done.receipts == [] and done.exit == 2 and e.value.exit == 2, done
    assert all(on_disk(root, t, k).exists() for k, _ in p.delete)
    # A plan judged in the future is refused against this machine's clock.
    done = lakesweep.apply(p.document, store, check=False)
    assert done.refused and any("clock" in d or "future" in d for d in done.refused), done.refused
    assert all(on_disk(root, t, k).exists() for k, _ in p.delete)


def test_apply_keeps_an_object_rewritten_since_the_plan(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    key = p.delete[0][0]
    f = on_disk(root, t, key)
    st = f.stat()
    f.write_bytes(f.read_bytes() + b"rewritten")
    os.utime(f, ns=(st.st_mtime_ns, st.st_mtime_ns))
    with pytest.raises(lakesweep.ApplyFailed) as e:
        lakesweep.apply(p.document, store, allow_future_now=True)
    done = e.value.applied
    assert done.exit == 1 and e.value.receipts == done.receipts
    results = {r["key"]: r["result"] for r in done.receipts}
    assert results.pop(key) == "skipped-changed" and f.exists()
    assert set(results.values()) == {"deleted"}


def test_a_pointer_moving_during_the_run_stops_it_and_the_damage_check_runs(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    assert len(p.delete) >= 2
    calls = []

    def pointer():
        # The catalog moves to an older document of the same table after
        # the first batch was accepted.
        calls.append(1)
        return t["metadata_location"] if len(calls) == 1 else older

    md = json.loads(store.read(t["metadata_location"]))
    older = md["metadata-log"][-1]["metadata-file"]
    moving = LocalStore(roots=[(VROOT, str(root))], pointer=pointer)
    done = lakesweep.apply(p.document, moving, batch=1, allow_future_now=True, check=False)
    results = [r["result"] for r in done.receipts]
    assert results[0] == "deleted" and set(results[1:]) == {"skipped-stopped"}
    assert done.stopped
    # The damage check cannot trust a pointer that went back to an older
    # document than the plan's: it says so (exit 3), never "no damage".
    assert done.damage == [] and "went backwards" in done.damage_unchecked, done.outcome
    assert done.exit == 3


def test_a_plan_applied_in_shares_deletes_each_key_once_and_combines_to_one_outcome(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    n = len(p.delete)
    assert n >= 2
    of = n + 1  # more shares than keys: one holds none
    runs = [lakesweep.Deletion(p.document, store, share=(i, of), batch=1, allow_future_now=True).run()
            for i in range(of)]
    # The planner's cut: contiguous runs of the plan's deletes, in order.
    assert [r["key"] for d in runs for r in d.receipts] == sorted(k for k, _ in p.delete)
    assert [len(d.receipts) for d in runs].count(0) == 1
    outcomes = [d.outcome for d in runs]
    whole = lakesweep.combine_shares(p.document, outcomes[::-1])
    assert whole.exit == 0 and whole.count("deleted") == n and not whole.receipts
    assert not any(on_disk(root, t, k).exists() for k, _ in p.delete)
    # A share missing or answered twice says nothing of the run.
    with pytest.raises(PlanRefused, match="missing"):
        lakesweep.combine_shares(p.document, outcomes[1:])
    with pytest.raises(PlanRefused, match="twice"):
        lakesweep.combine_shares(p.document, outcomes + outcomes[:1])
    # A whole run's outcome is not a share's; keys and a share are not both given.
    with pytest.raises(PlanRefused, match="not of a share"):
        lakesweep.combine_shares(p.document, [lakesweep.apply(p.document, store, allow_future_now=True).outcome])
    with pytest.raises(PlanRefused, match="not both"):
        lakesweep.Deletion(p.document, store, share=(0, 2), keys=[p.delete[0][0]])
    with pytest.raises(PlanRefused, match="numbered from 0"):
        lakesweep.Deletion(p.document, store, share=(2, 2))
    for loose in ("01", (0, 1, 0, 0), (True, 2), (0, 1.5), (-1, 2)):
        with pytest.raises(ValueError, match="share must be"):
            lakesweep.Deletion(p.document, store, share=loose)


def test_a_retried_share_checks_the_keys_it_found_gone_for_damage(events):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    first = lakesweep.Deletion(p.document, store, share=(0, 1), allow_future_now=True).run()
    assert first.exit == 0 and first.count("deleted") == len(p.delete)
    # The task is run again (its executor died before it answered), and
    # the table moves back to an older document after its batch was
    # accepted: the keys it finds gone may be the first attempt's deletes,
    # so its damage check covers them and cannot say "no damage".
    md = json.loads(store.read(t["metadata_location"]))
    older = md["metadata-log"][-1]["metadata-file"]
    calls = []

    def pointer():
        calls.append(1)
        return t["metadata_location"] if len(calls) == 1 else older

    moving = LocalStore(roots=[(VROOT, str(root))], pointer=pointer)
    again = lakesweep.Deletion(p.document, moving, share=(0, 1, 1), allow_future_now=True).run()
    assert again.count("already-absent") == len(p.delete)
    assert again.exit == 3 and "went backwards" in again.damage_unchecked, again.outcome
    # A whole run (not a share) that finds them gone deleted nothing of its own.
    calls.clear()
    whole = lakesweep.apply(p.document, moving, allow_future_now=True, check=False)
    assert whole.exit == 0 and whole.count("already-absent") == len(p.delete)
    # Refused before its first batch (the table moved): a first attempt is
    # refused, nothing done; a later one cannot say its earlier attempt
    # left the table whole.
    moved = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: older)
    first = lakesweep.Deletion(p.document, moved, share=(0, 1, 0), allow_future_now=True).run()
    assert first.exit == 2 and first.refused and first.damage_unchecked is None, first.outcome
    retry = lakesweep.Deletion(p.document, moved, share=(0, 1, 1), allow_future_now=True).run()
    assert retry.exit == 3 and retry.refused and "earlier attempt" in retry.damage_unchecked, retry.outcome


class LostAnswerStore(LocalStore):
    """Deletes, then loses the answer (a timeout after the store acted)."""

    def delete(self, uri):
        super().delete(uri)
        raise TimeoutError("no answer from the store")


@pytest.mark.parametrize("store_class", [LocalStore, LostAnswerStore])
def test_a_delta_commit_landing_during_the_run_stops_it_and_names_the_damage(tmp_path, store_class):
    """A writer commits, between two batches, a file the first batch just
    deleted (an `add` of an old path): the run stops at the next batch, and
    the damage check (a session on the live log) names the key, also when
    the store lost its answer to the DELETE (a `failed` receipt)."""
    from urllib.parse import quote

    from test_golden import VDELTA

    expect = json.loads((REPO / "tests/fixtures/delta/expect.json").read_text())
    root = stage(REPO / "tests/fixtures/delta", tmp_path / "delta", {"events": expect["events"]["mtimes"]})
    store = store_class(roots=[(VDELTA, str(root))])
    now = expect["events"]["generated_at_ms"] + 40 * DAY
    p = lakesweep.plan(f"{VDELTA}/events", None, now, store=store, format="delta")
    data = [k for k, _ in p.delete if not k.startswith(("_delta_log/", "_change_data/"))]
    assert len(p.delete) >= 2 and data, p.delete
    first = sorted(k for k, _ in p.delete)[0]
    log = root / "events/_delta_log"
    head = max(int(f.name[:20]) for f in log.iterdir() if f.name.endswith(".json"))
    landed = []

    def sink(r):
        # Just after the first delete: a writer adds that file back.
        if not landed and r["result"] in ("deleted", "unknown"):
            landed.append(r["key"])
            action = {"add": {"path": quote(r["key"], safe="/="), "partitionValues": {}, "size": 1,
                              "modificationTime": now, "dataChange": True}}
            (log / f"{head + 1:020d}.json").write_text(json.dumps(action) + "\n")

    with pytest.raises(lakesweep.ApplyFailed, match="DAMAGE") as e:
        lakesweep.apply(p.document, store, batch=1, sink=sink, allow_future_now=True)
    done = e.value.applied
    assert landed == [first]
    results = [r["result"] for r in done.receipts]
    # A lost answer is an unknown outcome, never "deleted" or "failed".
    assert results[0] == ("deleted" if store_class is LocalStore else "unknown")
    # Every key one receipt; the damaged one a second, its damage receipt.
    assert set(results[1:-1]) == {"skipped-stopped"} and results[-1] == "damaged", results
    assert done.damage_unchecked is None and done.exit == 3
    assert [r["key"] for r in done.damage] == [first], done.damage
    assert "the live table needs it" in done.damage[0]["detail"]


HALT = json.dumps({"schema": "lakesweepStop.v1", "halted": True,
                   "halt": {"generation": 1, "reason": "listing looks wrong", "by": "oncall", "atMs": 1}})


@pytest.mark.parametrize("where", ["table", "fleet"])
def test_a_halt_set_between_two_batches_stops_the_run_before_the_next(events, tmp_path, where):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    assert len(p.delete) >= 3
    fleet = tmp_path / "ops" / "stop.json"
    switch = on_disk(root, t, "_lakesweep/stop.json") if where == "table" else fleet
    lines = []

    def sink(r):
        # The first receipt is written: an operator halts before batch 2.
        lines.append(r)
        switch.parent.mkdir(parents=True, exist_ok=True)
        switch.write_text(HALT)

    done = lakesweep.apply(p.document, store, batch=1, sink=sink, allow_future_now=True, check=False,
                           stop_switches=[f"file://{fleet}"])
    results = [r["result"] for r in done.receipts]
    assert results[0] == "deleted" and set(results[1:]) == {"skipped-stopped"}, results
    assert "listing looks wrong" in done.receipts[1]["detail"]
    assert done.exit == 1 and done.stopped
    for k, _ in p.delete[1:]:
        assert on_disk(root, t, k).exists()


def test_a_switch_the_store_cannot_read_stops_every_delete(events):
    t, root = events

    class Unreadable(LocalStore):
        def read(self, uri):
            if uri.endswith("/_lakesweep/stop.json"):
                raise OSError("503 Slow Down")
            return super().read(uri)

    store = Unreadable(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    p = plan_later(t, store)
    done = lakesweep.apply(p.document, store, allow_future_now=True, check=False)
    assert {r["result"] for r in done.receipts} == {"skipped-stopped"}
    assert "503 Slow Down" in " ".join(done.stopped)
    for k, _ in p.delete:
        assert on_disk(root, t, k).exists()


def test_an_arrow_store_never_reads_a_uri_of_another_store():
    import pyarrow.fs as pafs

    from lakesweep import ArrowStore

    s3 = ArrowStore(pafs.S3FileSystem(region="us-east-1", endpoint_override="http://127.0.0.1:9"))
    # A switch on GCS read through S3 would look absent: refused instead.
    with pytest.raises(ValueError, match="serves s3"):
        s3.read("gs://ops/stop.json")


def test_the_keep_set_in_pieces_is_the_keep_set_whole_and_loads(events, monkeypatch):
    t, root = events
    store = LocalStore(roots=[(VROOT, str(root))], pointer=lambda: t["metadata_location"])
    s = lakesweep.Sweep(t["location"], t["metadata_location"], t["now_ms"] + 365 * DAY, store=store,
                        retention_ms=t["file_retention_ms"])
    assert s.until_listing()
    whole = s.export_keep_set()
    # Pieces of 100 bytes: many of them, cut inside the arrays' words.
    monkeypatch.setattr(lakesweep, "_PIECE", 100)
    pieces = list(s.export_keep_set_pieces())
    assert len(pieces) > 3 and all(0 < len(p) <= 100 for p in pieces)
    assert b"".join(pieces) == whole
    assert bytes(lakesweep.Sweep.export_keep_set(s)) == bytes(whole)
    lakesweep.PageClassifier(b"".join(pieces))
    with pytest.raises(Exception, match="keep"):
        lakesweep.PageClassifier(b"".join(pieces[:-1]))
