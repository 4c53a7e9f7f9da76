//! The two-phase deletion ledger, driven through a simulated host (a table
//! whose references, leases, holds and store contents the test controls),
//! and through the real planner on the fixture tables where the fault is
//! about what the planner sees. Every plan a ledger step folds in or an
//! approval compares is sealed by the real planner (natively, over a
//! synthetic Iceberg table written from the simulated one), so its tokens
//! (metadata location, hold generation, lease watermark, context digest)
//! are the planner's own. Each fault-matrix test is named after its fault;
//! the outcome is always a postponed deletion or an explicit
//! `DELETE_UNKNOWN`, never a lost live object.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::synth::{self, Snap};
use common::*;
use lakesweep::ledger::{
    DeleteResult, Ledger, LiveState, Move, ObjectState, ObjectVersion, Observation, ProbePurpose,
    Receipt,
};
use lakesweep::{
    Decision, Error, ListedObject, Request, SealedPlan, Session, SessionConfig, UnsafeReason,
};
use proptest::prelude::*;

const LOC: &str = synth::LOC;
const DAY: i64 = 86_400_000;
const WINDOW: i64 = 3 * DAY;
const QUARANTINE: i64 = DAY;
/// Modification time of the table's metadata files (all referenced).
const METADATA_MTIME: i64 = T0 - 20 * DAY;

/// The simulated table and store.
#[derive(Debug, Clone, Default)]
struct World {
    /// What the store holds: key -> version.
    store: BTreeMap<String, ObjectVersion>,
    /// Keys referenced by retained snapshots (one snapshot per key).
    referenced: BTreeSet<String>,
    /// Each key's snapshot: the one that references it, or the one that
    /// last did (expired since, or never committed: a reader can still hold
    /// a lease on it).
    snapshot_of: BTreeMap<String, i64>,
    last_snapshot: i64,
    /// Reader leases by key.
    leased: BTreeMap<String, Lease>,
    /// Legal holds: key (as a path prefix) -> hold generation.
    held: BTreeMap<String, u64>,
    /// Metadata generation (every commit bumps it).
    generation: u64,
    /// The hold registry's generation counter.
    hold_generation: u64,
    /// The reader registry's generation counter.
    reader_generation: u64,
    /// Every key the host ever deleted, with whether it was live then.
    deleted_live: Vec<String>,
    deleted: Vec<String>,
    /// Every move the ledger showed (all of them: these ledgers are small).
    moves: Vec<Move>,
    /// The ledger's folder as last saved.
    ledger_files: BTreeMap<String, Vec<u8>>,
}

/// A reader's lease on a key's snapshot.
#[derive(Debug, Clone)]
struct Lease {
    snapshot: i64,
    reader_generation: u64,
    expires_at_ms: i64,
}

fn version(mtime: i64, tag: &str) -> ObjectVersion {
    ObjectVersion {
        size: 100,
        last_modified_ms: mtime,
        etag: Some(format!("\"{tag}\"")),
        version_id: None,
    }
}

/// The URI of the table's metadata document of `generation` (as
/// `synth::write_table` names it).
fn metadata_uri(generation: u64) -> String {
    format!("{LOC}/metadata/{generation:05}-x.metadata.json")
}

/// The real planner, fed listing pages that carry the store's ETags and
/// version ids (`HostOptions` lists sizes and times only).
struct Tagged<'a> {
    session: Session,
    listing: &'a BTreeMap<String, ObjectVersion>,
}

impl Planner for Tagged<'_> {
    fn poll_request(&mut self) -> Option<Request> {
        self.session.poll_request()
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), Error> {
        self.session.handle_blob(uri, bytes)
    }
    fn handle_missing(&mut self, uri: String) -> Result<(), Error> {
        self.session.handle_missing(uri)
    }
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<(), Error> {
        let objects = objects
            .into_iter()
            .map(|mut o| {
                let rel = o.key.strip_prefix(&format!("{LOC}/")).unwrap_or_default();
                if let Some(v) = self.listing.get(rel) {
                    o.size = v.size;
                    o.last_modified_ms = v.last_modified_ms;
                    o.etag = v.etag.clone();
                    o.version_id = v.version_id.clone();
                }
                o
            })
            .collect();
        self.session.handle_page(objects, is_last)
    }
    fn handle_pointer(&mut self, loc: Option<String>) -> Result<(), Error> {
        self.session.handle_pointer(loc)
    }
    fn drain_decisions(&mut self) -> Vec<Decision> {
        self.session.drain_decisions()
    }
}

impl Finish for Tagged<'_> {
    fn finish_json(&mut self) -> Result<String, Error> {
        self.session.finish().map(|p| p.to_json())
    }
}

impl World {
    fn metadata(&self) -> String {
        metadata_uri(self.generation)
    }
    /// Whether `k` is referenced, leased (a lease live at `now`) or held.
    fn live(&self, k: &str, now: i64) -> bool {
        self.referenced.contains(k)
            || self.held.contains_key(k)
            || self.leased.get(k).is_some_and(|l| l.expires_at_ms > now)
    }
    /// `k`'s snapshot (a new id for a key no snapshot ever referenced).
    fn snapshot(&mut self, k: &str) -> i64 {
        if let Some(id) = self.snapshot_of.get(k) {
            return *id;
        }
        self.last_snapshot += 1;
        self.snapshot_of.insert(k.to_owned(), self.last_snapshot);
        self.last_snapshot
    }
    /// The real planner's sealed plan at `now` over `listing` (the store, or
    /// a stale copy of it): the table is written as Iceberg metadata of
    /// generation `generation` with one snapshot per referenced key, the
    /// pointer names it, and the context is `context()`. `Err` when the
    /// planner refuses (a lease on a snapshot the table no longer has).
    fn plan_over(
        &self,
        listing: &BTreeMap<String, ObjectVersion>,
        now: i64,
        deleted_index: Option<Vec<u8>>,
    ) -> Result<SealedPlan, Error> {
        let mut snaps: Vec<Snap> = self
            .referenced
            .iter()
            .map(|k| (self.snapshot_of[k], vec![(1, 0, k.clone())]))
            .collect();
        snaps.sort();
        let mut opts = HostOptions::synthetic();
        let generation = u32::try_from(self.generation).unwrap();
        let pointer = synth::write_table(
            &mut opts.extra,
            &snaps,
            generation,
            synth::UUID,
            METADATA_MTIME,
        );
        assert_eq!(pointer, self.metadata());
        // Only this generation's metadata is listed (expiry removed the
        // manifests of expired snapshots); data files are the listing's.
        opts.extra
            .retain(|k, _| k.starts_with(&format!("{LOC}/metadata/")));
        for (k, v) in listing {
            opts.extra.insert(
                format!("{LOC}/{k}"),
                (vec![0; v.size as usize], v.last_modified_ms),
            );
        }
        let mut cfg = SessionConfig::new(LOC, &pointer, now, WINDOW);
        cfg.context = Some(self.context());
        cfg.deleted_index = deleted_index;
        let mut p = Tagged {
            session: Session::start(cfg)?,
            listing,
        };
        let plan = drive(&mut p, &pointer, &opts)?.plan();
        assert_eq!(plan.tokens.metadata_location, self.metadata());
        Ok(plan)
    }
    fn plan(&self, now: i64) -> SealedPlan {
        self.plan_over(&self.store, now, None).unwrap()
    }
    /// The context document the planner is given: a lease per leased key
    /// (on its snapshot), a path-prefix hold per held key.
    fn context(&self) -> String {
        let leases: Vec<String> = self
            .leased
            .iter()
            .map(|(k, l)| {
                format!(
                    r#"{{"snapshotId":{},"owner":"{k}","purpose":"read","expiresAtMs":{},"readerGeneration":{}}}"#,
                    l.snapshot, l.expires_at_ms, l.reader_generation
                )
            })
            .collect();
        let holds: Vec<String> = self
            .held
            .iter()
            .map(|(k, generation)| {
                format!(
                    r#"{{"scope":{{"pathPrefix":"{k}"}},"generation":{generation},"reason":"case"}}"#,
                )
            })
            .collect();
        format!(
            r#"{{"leases":[{}],"holds":[{}]}}"#,
            leases.join(","),
            holds.join(",")
        )
    }
    fn live_state(&self) -> LiveState {
        LiveState {
            metadata_location: self.metadata(),
            context: Some(self.context()),
            blocked: BTreeMap::new(),
            head: None,
            clock_ms: None,
            allow_future_now: true,
        }
    }
    /// A commit whose snapshot references `k` (a new snapshot unless one
    /// already does).
    fn commit_reference(&mut self, k: &str) {
        if !self.referenced.contains(k) {
            self.last_snapshot += 1;
            self.snapshot_of.insert(k.to_owned(), self.last_snapshot);
        }
        self.referenced.insert(k.into());
        self.generation += 1;
    }
    /// Snapshot expiry: the snapshot referencing `k` goes.
    fn unreference(&mut self, k: &str) {
        if self.referenced.remove(k) {
            self.generation += 1;
        }
    }
    /// A reader leases `k`'s snapshot until `expires_at_ms` with a newer
    /// reader generation. For an unreferenced key that snapshot is gone:
    /// the planner refuses to plan while the lease lives.
    fn lease_until(&mut self, k: &str, expires_at_ms: i64) {
        self.reader_generation += 1;
        self.lease_quietly_until(k, expires_at_ms);
    }
    fn lease(&mut self, k: &str) {
        self.lease_until(k, i64::MAX);
    }
    /// A lease registered with a reader generation no newer than the others.
    fn lease_quietly_until(&mut self, k: &str, expires_at_ms: i64) {
        let lease = Lease {
            snapshot: self.snapshot(k),
            reader_generation: self.reader_generation,
            expires_at_ms,
        };
        self.leased.insert(k.into(), lease);
    }
    fn lease_quietly(&mut self, k: &str) {
        self.lease_quietly_until(k, i64::MAX);
    }
    fn end_lease(&mut self, k: &str) {
        self.leased.remove(k);
        self.reader_generation += 1;
    }
    fn hold(&mut self, k: &str) {
        self.hold_generation += 1;
        self.held.insert(k.into(), self.hold_generation);
    }
}

/// Something that happens between sealing the plan and approving it.
type Between<'a> = Box<dyn FnMut(&mut World) + 'a>;

/// Knobs for one run's faults.
#[derive(Default)]
struct Faults<'a> {
    /// Runs after the plan is sealed, before approval.
    between: Option<Between<'a>>,
    /// Plan over this listing instead of the store (stale replica, eventual consistency).
    listing: Option<BTreeMap<String, ObjectVersion>>,
    /// Receipts of these keys are lost.
    lose_receipts: BTreeSet<String>,
}

#[derive(Debug)]
struct RunOutcome {
    /// Why the planner refused to seal a plan (then nothing else happened).
    refused: Option<UnsafeReason>,
    granted: bool,
    differences: Vec<String>,
    deleted: Vec<String>,
}

/// One sweep run: plan, step, HEADs, approval, deletes, receipts. A run
/// whose plan the planner refuses stops there (`between` still happens).
fn run(l: &mut Ledger, w: &mut World, now: i64, mut f: Faults) -> RunOutcome {
    // Planned against the ledger's deleted keys, as every sweep is.
    let index = Some(l.deleted_index());
    let plan = match w.plan_over(f.listing.as_ref().unwrap_or(&w.store), now, index) {
        Ok(plan) => plan,
        Err(Error::Unsafe {
            reason: reason @ UnsafeReason::ProtectedSnapshotMissing,
            ..
        }) => {
            if let Some(between) = f.between.as_mut() {
                between(w);
            }
            return RunOutcome {
                refused: Some(reason),
                granted: false,
                differences: Vec::new(),
                deleted: Vec::new(),
            };
        }
        Err(e) => panic!("the planner failed: {e}"),
    };
    let m = l.begin_step(&plan, now).unwrap();
    w.moves.extend(m.sample);
    // Archives the step asks for (to name damage), from the saved folder.
    while let Some(name) = l.next_read() {
        match w.ledger_files.get(&name) {
            Some(b) => l.handle_read(&name, b).unwrap(),
            None => l.handle_missing(&name).unwrap(),
        }
    }
    let probes = l.probes();
    let obs: Vec<Observation> = probes
        .iter()
        .map(|p| Observation {
            key: p.key.clone(),
            seen: w.store.get(&p.key).cloned(),
            blocked: None,
        })
        .collect();
    w.moves.extend(l.observe(&obs, now).unwrap().sample);
    if let Some(between) = f.between.as_mut() {
        between(w);
    }
    let (approval, m) = l.approve(&plan, &w.live_state(), now).unwrap();
    w.moves.extend(m.sample);
    let mut receipts = Vec::new();
    let mut deleted = Vec::new();
    for k in &l.approved_keys() {
        let pinned = l.object(k).unwrap().version.clone();
        let result = match w.store.get(k) {
            None => DeleteResult::AlreadyAbsent,
            Some(v) if !pinned.matches(v) => DeleteResult::SkippedChanged,
            Some(_) => {
                w.store.remove(k);
                if w.live(k, now) {
                    w.deleted_live.push(k.clone());
                }
                w.deleted.push(k.clone());
                deleted.push(k.clone());
                DeleteResult::Deleted
            }
        };
        if !f.lose_receipts.contains(k) {
            receipts.push(Receipt {
                key: k.clone(),
                result,
                version: Some(pinned),
                requested_ms: now,
                confirmed_ms: Some(now),
                delete_marker: false,
                delete_marker_version_id: None,
                detail: None,
            });
        }
    }
    w.moves.extend(l.record(receipts, now).unwrap().sample);
    // Stored and read back, as every host does between runs.
    *l = reopen(l, w);
    RunOutcome {
        refused: None,
        granted: approval.granted,
        differences: approval.differences,
        deleted,
    }
}

/// A table whose `live` keys are referenced (one snapshot each) and whose
/// `orphans` are files of snapshots expired earlier, all written at `t0`.
fn world_with(orphans: &[&str], live: &[&str], t0: i64) -> World {
    let mut w = World::default();
    for k in orphans.iter().chain(live) {
        w.store.insert(k.to_string(), version(t0, k));
        w.snapshot(k);
    }
    for k in live {
        w.referenced.insert(k.to_string());
    }
    w
}

/// `l` saved and opened again, its folder kept in `w` (a save writes
/// only the files that changed).
fn reopen(l: &mut Ledger, w: &mut World) -> Ledger {
    let (head, folder) = l.save_whole().expect("the ledger saves");
    w.ledger_files.extend(folder);
    Ledger::open_whole(&head, &w.ledger_files).expect("the ledger opens again")
}

fn new_ledger(w: &World, now: i64) -> Ledger {
    Ledger::new(&w.plan(now), QUARANTINE).unwrap()
}

/// Runs until `key` reaches RESTORE_VERIFIED (the step before approval).
fn to_verified(l: &mut Ledger, w: &mut World, key: &str, now: &mut i64) {
    for _ in 0..6 {
        if l.state_of(key) == Some(ObjectState::RestoreVerified) {
            return;
        }
        let o = run(l, w, *now, Faults::default());
        assert!(o.deleted.is_empty(), "nothing is deleted before approval");
        *now += QUARANTINE;
    }
    panic!("{key} never verified: {:?}", l.object(key));
}

const T0: i64 = synth::NOW;

#[test]
fn lifecycle_goes_through_every_state_one_step_per_run() {
    let mut w = world_with(
        &["data/orphan.parquet"],
        &["data/live.parquet"],
        T0 - 10 * DAY,
    );
    let mut l = new_ledger(&w, T0);
    let k = "data/orphan.parquet";
    let mut states = Vec::new();
    let mut now = T0;
    for _ in 0..7 {
        run(&mut l, &mut w, now, Faults::default());
        states.push(l.state_of(k).unwrap());
        now += QUARANTINE;
    }
    use ObjectState::*;
    assert_eq!(
        states,
        vec![
            Discovered,
            UnreferencedEligible,
            Quarantined,
            RestoreVerified,
            Deleted,
            Verified,
            Verified
        ]
    );
    assert!(!w.store.contains_key(k));
    assert!(w.store.contains_key("data/live.parquet"));
    assert!(l.state_of("data/live.parquet").is_none());
    let g = l.gates();
    assert_eq!(g.deleted_outside_approval, 0);
    assert_eq!(g.approved_not_deleted, 0);
    assert_eq!(g.approvals_after_newer_hold, 0);
    // Verified, it left the objects in flight for the archive.
    assert_eq!((l.in_flight(), l.verified().objects), (0, 1));
    // Every move is a legal transition.
    for m in &w.moves {
        if let Some(f) = m.from {
            assert!(f.can_move_to(m.to), "{m:?}");
        }
    }
}

#[test]
fn quarantine_interval_is_waited_for() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    for i in 0..6 {
        // Many runs in quick succession: quarantine has not passed.
        run(&mut l, &mut w, T0 + i * 1000, Faults::default());
    }
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Quarantined);
    assert!(w.deleted.is_empty());
}

/// Brings `key` to RESTORE_VERIFIED, then runs once with `between` landing
/// after the plan was sealed and before the approval.
fn race_the_approval(key: &str, between: Between<'static>) -> (Ledger, World, i64, RunOutcome) {
    let mut w = world_with(&[key], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, key, &mut now);
    let o = run(
        &mut l,
        &mut w,
        now,
        Faults {
            between: Some(between),
            ..Faults::default()
        },
    );
    (l, w, now, o)
}

#[test]
fn fault_01_lease_registered_after_the_plan_was_sealed_before_approval() {
    let (mut l, mut w, now, o) = race_the_approval(
        "model/features.parquet",
        Box::new(|w: &mut World| w.lease("model/features.parquet")),
    );
    assert!(!o.granted);
    assert!(
        o.differences.iter().any(|d| d.contains("reader leases")),
        "{o:?}"
    );
    assert!(w.store.contains_key("model/features.parquet"));
    assert_eq!(
        l.state_of("model/features.parquet").unwrap(),
        ObjectState::RestoreVerified
    );
    // The next run plans with the lease. It names the snapshot that last
    // referenced the file, which the table no longer has: the planner
    // refuses, so there is no step and no approval while the lease lives.
    let o = run(&mut l, &mut w, now + 1, Faults::default());
    assert_eq!(
        o.refused,
        Some(UnsafeReason::ProtectedSnapshotMissing),
        "{o:?}"
    );
    assert_eq!(
        l.state_of("model/features.parquet").unwrap(),
        ObjectState::RestoreVerified
    );
    assert!(w.store.contains_key("model/features.parquet"));
    assert!(w.deleted.is_empty() && w.deleted_live.is_empty());
}

#[test]
fn fault_02_protected_branch_named_with_different_letter_case() {
    // The table's branch is `audit-branch`; the hold names `AUDIT-BRANCH`.
    // Refs are case-sensitive: the hold protects a ref the table does not
    // have, so the planner cannot tell its files apart and refuses.
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let mut cfg = t.config();
    let refs = run_native(t.config(), &HostOptions::for_table(&t))
        .unwrap()
        .plan()
        .tokens
        .refs;
    let branch = refs.keys().find(|r| *r != "main").unwrap().clone();
    cfg.context = Some(format!(
        r#"{{"holds":[{{"scope":{{"ref":"{}"}},"generation":1,"reason":"audit"}}]}}"#,
        branch.to_uppercase()
    ));
    let e = run_native(cfg, &HostOptions::for_table(&t)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::ProtectedSnapshotMissing,
                ..
            }
        ),
        "{e}"
    );
    // No plan, so no ledger step and no approval.
}

#[test]
fn fault_03_writer_uploaded_files_but_has_not_committed() {
    // Through the planner: a writer's staging prefix in the context keeps
    // old, unreferenced files under it `protected`.
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let base = run_native(t.config(), &HostOptions::for_table(&t))
        .unwrap()
        .plan();
    let victim = base.delete.first().unwrap().key.clone();
    let prefix = victim
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap();
    let mut cfg = t.config();
    cfg.context = Some(format!(
        r#"{{"writers":[{{"stagingPrefix":"{prefix}","startedAtMs":{}}}]}}"#,
        t.now_ms - 3_600_000
    ));
    let plan = run_native(cfg, &HostOptions::for_table(&t)).unwrap().plan();
    assert!(plan.delete.iter().all(|d| !d.key.starts_with(&prefix)));
    // Through the ledger: uploaded (young) files never enter it; once they
    // are old the writer's commit references them and they stay out.
    let mut w = world_with(&[], &[], T0);
    w.store
        .insert("data/upload-1.parquet".into(), version(T0 - 60_000, "u1"));
    let mut l = new_ledger(&w, T0);
    run(&mut l, &mut w, T0, Faults::default());
    assert_eq!(l.in_flight(), 0);
    w.commit_reference("data/upload-1.parquet");
    run(&mut l, &mut w, T0 + 5 * DAY, Faults::default());
    assert_eq!(l.in_flight(), 0);
}

#[test]
fn fault_04_eventually_consistent_listing_misses_fresh_objects() {
    let mut w = world_with(&["a", "b"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    // A listing that misses `a` (and a fresh object) makes `a` no longer a
    // candidate: protected, postponed, not deleted on old evidence.
    let mut listing = w.store.clone();
    listing.remove("a");
    w.store.insert("fresh".into(), version(now - 1000, "fresh"));
    run(
        &mut l,
        &mut w,
        now,
        Faults {
            listing: Some(listing),
            ..Faults::default()
        },
    );
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Protected);
    assert!(w.store.contains_key("a"));
    assert!(l.state_of("fresh").is_none());
}

#[test]
fn fault_05_hold_lands_at_the_same_time_as_the_approval() {
    let (l, w, _, o) = race_the_approval(
        "legal/evidence.parquet",
        Box::new(|w: &mut World| w.hold("legal/evidence.parquet")),
    );
    assert!(!o.granted);
    assert!(
        o.differences.iter().any(|d| d.contains("legal holds")),
        "{o:?}"
    );
    assert!(w.store.contains_key("legal/evidence.parquet"));
    assert_eq!(l.gates().approvals_after_newer_hold, 0);
}

#[test]
fn fault_06_protected_snapshots_file_slipped_into_the_candidates() {
    // An earlier (buggy or stale) plan listed a file a protected snapshot
    // reads; it got as far as RESTORE_VERIFIED. The fresh plan does not list
    // it: it is protected and never approved.
    let mut w = world_with(&["snap/data.parquet"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "snap/data.parquet", &mut now);
    w.referenced.insert("snap/data.parquet".into()); // the truth, now seen
    let o = run(&mut l, &mut w, now, Faults::default());
    assert!(o.deleted.is_empty());
    assert_eq!(
        l.state_of("snap/data.parquet").unwrap(),
        ObjectState::Protected
    );
    assert!(w.deleted_live.is_empty());
}

#[test]
fn fault_08_snapshot_expired_while_a_model_still_reads_it() {
    // A live lease names a snapshot the table no longer has (expired under
    // the reader): the planner refuses, nothing is planned or deleted.
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let mut cfg = t.config();
    cfg.context = Some(format!(
        r#"{{"leases":[{{"snapshotId":424242,"purpose":"training","owner":"ml","expiresAtMs":{},"readerGeneration":3}}]}}"#,
        t.now_ms + DAY
    ));
    let e = run_native(cfg, &HostOptions::for_table(&t)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::ProtectedSnapshotMissing,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn fault_09_replica_lagging_listing_from_a_stale_copy() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    // A stale replica shows `a` as it was; the primary has since rewritten
    // it (a writer reused the name); the stale listing also misses `b`.
    let stale = w.store.clone();
    w.store.insert("a".into(), version(T0 + 1000, "a-new"));
    w.store.insert("b".into(), version(T0 - 10 * DAY, "b"));
    for _ in 0..4 {
        run(
            &mut l,
            &mut w,
            now,
            Faults {
                listing: Some(stale.clone()),
                ..Faults::default()
            },
        );
        now += QUARANTINE;
    }
    // The restore check HEADs the primary: another version, so protected.
    assert_eq!(
        l.state_of("a").unwrap(),
        ObjectState::Protected,
        "{:?}",
        l.object("a")
    );
    assert_eq!(w.store["a"].etag.as_deref(), Some("\"a-new\""));
    assert!(l.state_of("b").is_none());
    assert!(w.deleted.is_empty());
}

#[test]
fn fault_10_lost_delete_receipt() {
    let mut w = world_with(&["a", "b"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let o = run(
        &mut l,
        &mut w,
        now,
        Faults {
            lose_receipts: ["a".to_owned()].into(),
            ..Faults::default()
        },
    );
    assert_eq!(o.deleted.len(), 2);
    assert_eq!(
        l.state_of("a").unwrap(),
        ObjectState::DeleteUnknown,
        "never 'deleted' without a receipt"
    );
    assert_eq!(l.state_of("b").unwrap(), ObjectState::Deleted);
    let g = l.gates();
    assert_eq!((g.unknown_total, g.unknown_reconciled), (1, 0));
    // Reconciliation by HEAD: gone.
    run(&mut l, &mut w, now + 1, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Verified);
    let g = l.gates();
    assert_eq!((g.unknown_total, g.unknown_reconciled), (1, 1));
    assert_eq!(g.approved_not_deleted, 0);
}

#[test]
fn fault_10b_failed_delete_is_reconciled_and_retried() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let plan = w.plan(now);
    l.begin_step(&plan, now).unwrap();
    let (a, _) = l.approve(&plan, &w.live_state(), now).unwrap();
    assert!(a.granted);
    let moves = l
        .record(
            vec![Receipt {
                key: "a".into(),
                result: DeleteResult::Failed,
                version: None,
                requested_ms: now,
                confirmed_ms: Some(now),
                delete_marker: false,
                delete_marker_version_id: None,
                detail: Some("503 SlowDown".into()),
            }],
            now,
        )
        .unwrap();
    assert_eq!(moves.sample[0].to, ObjectState::DeleteUnknown);
    // Still there, same version: back to RESTORE_VERIFIED, then a new approval deletes it.
    run(&mut l, &mut w, now + 1, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
    run(&mut l, &mut w, now + 2, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Deleted);
    assert!(!w.store.contains_key("a"));
}

#[test]
fn fault_11_delete_marker_recovered_in_a_versioned_bucket() {
    // The receipt says a delete marker hides the pinned version; an operator
    // removes the marker (the same version is current again). That is an
    // undo, not a failed delete: the object is protected and starts over
    // (no re-delete on the strength of the old quarantine), even though the
    // table still does not reference it.
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    w.store.get_mut("a").unwrap().version_id = Some("v1".into());
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let kept = w.store["a"].clone();
    run(&mut l, &mut w, now, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Deleted);
    w.store.insert("a".into(), kept);
    let o = run(&mut l, &mut w, now + 1, Faults::default());
    assert!(o.deleted.is_empty());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Protected);
    assert!(
        l.object("a").unwrap().why.contains("back"),
        "{}",
        l.object("a").unwrap().why
    );
    // It starts over from DISCOVERED, so a full quarantine passes again.
    run(&mut l, &mut w, now + 2, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Discovered);
    assert!(w.store.contains_key("a"));
}

#[test]
fn a_lease_added_without_a_newer_reader_generation_still_blocks_approval() {
    // Generations are not always bumped; the sealed context digest catches it.
    let (_, w, _, o) = race_the_approval(
        "model/quiet.parquet",
        Box::new(|w: &mut World| w.lease_quietly("model/quiet.parquet")),
    );
    assert!(!o.granted);
    assert!(o.differences.iter().any(|d| d.contains("context")), "{o:?}");
    assert!(w.store.contains_key("model/quiet.parquet"));
}

#[test]
fn a_key_reused_after_verification_is_tracked_again() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    run(&mut l, &mut w, now, Faults::default());
    run(&mut l, &mut w, now + 1, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Verified);
    // A writer reuses the name; later it is an orphan too.
    w.store.insert("a".into(), version(now - 10 * DAY, "a2"));
    run(&mut l, &mut w, now + 2, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::Discovered);
}

#[test]
fn objects_of_an_incomplete_bundle_are_not_approved() {
    let mut w = world_with(&["a", "b"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let plan = w.plan(now);
    l.begin_step(&plan, now).unwrap();
    let mut live = w.live_state();
    live.blocked
        .insert("a".into(), "bundle q-1 is incomplete: missing layer".into());
    let (approval, _) = l.approve(&plan, &live, now).unwrap();
    assert_eq!(approval.approved, 1);
    assert_eq!(l.approved_keys(), vec!["b".to_owned()]);
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
}

#[test]
fn a_ledger_of_another_table_or_a_newer_schema_is_refused() {
    let w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut other = w.plan(T0);
    other.table_location = "s3://lake/other".into();
    assert!(matches!(
        l.begin_step(&other, T0),
        Err(Error::InvalidOptions { .. })
    ));
    let mut l = new_ledger(&w, T0);
    l.begin_step(&w.plan(T0), T0).unwrap();
    let (head, folder) = l.save_whole().unwrap();
    let text = head.replace("lakesweep.ledger.v4", "lakesweep.ledger.v5");
    let e = Ledger::parse(&text).unwrap_err();
    assert!(e.to_string().contains("newer"), "{e}");
    assert!(Ledger::parse("{}").is_err());
    // Read back: the same content.
    let back = Ledger::open_whole(&head, &folder).unwrap();
    assert_eq!(back.objects(0, 10), l.objects(0, 10));
    assert_eq!(back.gates(), l.gates());
    // A ledger edited by hand is refused: a shorter quarantine, a state.
    let edited = head.replace(
        &format!("\"quarantineMs\": {}", l.quarantine_ms()),
        "\"quarantineMs\": 0",
    );
    assert_ne!(edited, head);
    let e = Ledger::parse(&edited).unwrap_err();
    assert!(e.to_string().contains("integrity"), "{e}");
    // A sealed-before ledger (v1) cannot be told from an edited one.
    let v1 = head.replace("lakesweep.ledger.v4", "lakesweep.ledger.v1");
    assert!(Ledger::parse(&v1)
        .unwrap_err()
        .to_string()
        .contains("--new-ledger"));
}

/// A ledger lakesweep 0.1 sealed (`lakesweep.ledger.v2`, snake_case keys),
/// as it stored it: `tests/golden/legacy/ledger.v2.json`.
fn ledger_v2() -> String {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/legacy/ledger.v2.json");
    std::fs::read_to_string(p).expect("the stored v2 ledger")
}

/// A whole ledger lakesweep 0.2 sealed (`lakesweep.ledger.v3`), as it
/// stored it: `tests/golden/legacy/ledger.v3.json`.
fn ledger_v3() -> String {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/legacy/ledger.v3.json");
    std::fs::read_to_string(p).expect("the stored v3 ledger")
}

#[test]
fn a_ledger_an_earlier_lakesweep_sealed_is_read_checked_and_carried_on() {
    for (text, v2) in [(ledger_v2(), true), (ledger_v3(), false)] {
        let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        let field = |camel: &str, snake: &str| {
            stored
                .get(if v2 { snake } else { camel })
                .cloned()
                .unwrap_or_default()
        };
        let mut l = Ledger::parse(&text).expect("an earlier ledger is read");
        // Every object and its pinned version, read through the old spellings.
        let objects = stored["objects"].as_object().unwrap();
        assert!(objects.len() >= 5);
        let verified = objects
            .values()
            .filter(|o| o["state"] == "VERIFIED")
            .count() as u64;
        assert!(verified > 0, "the stored ledger has verified objects");
        for (key, o) in objects {
            let modified = if v2 {
                &o["version"]["last_modified_ms"]
            } else {
                &o["version"]["lastModifiedMs"]
            };
            let v = &l.object(key).unwrap().version;
            assert_eq!(v.last_modified_ms, modified.as_i64().unwrap(), "{key}");
            assert_eq!(
                l.state_of(key).map(|s| serde_json::to_value(s).unwrap()),
                Some(o["state"].clone()),
                "{key}"
            );
        }
        assert_eq!(
            l.quarantine_ms(),
            field("quarantineMs", "quarantine_ms").as_i64().unwrap()
        );
        assert!(!l.approvals().is_empty() && !l.drills().is_empty());
        // Saved as the current schema: its verified objects archived with
        // their receipts, the rest in flight.
        let (head, folder) = l.save_whole().unwrap();
        assert!(
            head.contains("\"schema\": \"lakesweep.ledger.v4\""),
            "{head}"
        );
        let again = Ledger::open_whole(&head, &folder).expect("the carried-on ledger reads back");
        assert_eq!(again.in_flight(), objects.len() as u64 - verified);
        assert_eq!(again.verified().objects, verified);
        for key in objects.keys() {
            assert_eq!(again.state_of(key), l.state_of(key), "{key}");
        }
        assert_eq!(again.gates(), l.gates());
        // Laid out differently, the same content still verifies.
        let flat: String = text.lines().map(str::trim_start).collect();
        assert_ne!(flat, text);
        Ledger::parse(&flat).expect("the layout is not part of the digest");
        // Edited by hand, it is refused: a shorter quarantine, a state moved on.
        let q = if v2 { "quarantine_ms" } else { "quarantineMs" };
        for (from, to) in [
            (
                format!("\"{q}\": {}", l.quarantine_ms()),
                format!("\"{q}\": 1"),
            ),
            (
                "\"QUARANTINED\"".to_owned(),
                "\"UNREFERENCED_ELIGIBLE\"".to_owned(),
            ),
            ("\"revision\": ".to_owned(), "\"revision\": 1".to_owned()),
        ] {
            let edited = text.replacen(&from, &to, 1);
            assert_ne!(edited, text, "{from} is in the stored ledger");
            let e = Ledger::parse(&edited).unwrap_err();
            assert!(e.to_string().contains("integrity"), "{from}: {e}");
        }
    }
    // Its integrity field moved away from the end: not as v2 sealed it.
    let text = ledger_v2();
    let moved = text.replacen("{\n", "{\n  \"integrity\": \"00\",\n", 1);
    assert!(Ledger::parse(&moved).is_err());
}

#[test]
fn an_interrupted_run_leaves_approved_objects_unknown_not_deleted() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let plan = w.plan(now);
    l.begin_step(&plan, now).unwrap();
    l.approve(&plan, &w.live_state(), now).unwrap();
    // The host crashed before recording receipts; the ledger was saved.
    let mut l = reopen(&mut l, &mut w);
    assert_eq!(l.state_of("a").unwrap(), ObjectState::DeleteApproved);
    run(&mut l, &mut w, now + 1, Faults::default());
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
    let g = l.gates();
    assert_eq!(
        (g.unknown_total, g.unknown_reconciled),
        (1, 1),
        "it was unknown once"
    );
}

#[test]
fn receipts_for_unapproved_keys_fail_the_gate() {
    let w = world_with(&["a", "b"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    l.begin_step(&w.plan(T0), T0).unwrap();
    // No approval in this run at all: refused.
    let stray = Receipt {
        key: "a".into(),
        result: DeleteResult::Deleted,
        version: None,
        requested_ms: T0,
        confirmed_ms: Some(T0),
        delete_marker: false,
        delete_marker_version_id: None,
        detail: None,
    };
    assert!(matches!(
        l.record(vec![stray.clone()], T0),
        Err(Error::Unsafe { .. })
    ));
    // With an approval of `b` only, a receipt for `a` is kept for the audit
    // and the gate reads 1.
    let mut w = w;
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "b", &mut now);
    let plan = w.plan(now);
    l.begin_step(&plan, now).unwrap();
    let mut live = w.live_state();
    live.blocked.insert("a".into(), "held".into());
    l.approve(&plan, &live, now).unwrap();
    assert_eq!(l.approved_keys(), vec!["b".to_owned()]);
    l.record(vec![stray], now).unwrap();
    assert_eq!(l.gates().deleted_outside_approval, 1);
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
}

#[test]
fn probes_say_what_they_are_for() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    for _ in 0..3 {
        run(&mut l, &mut w, now, Faults::default());
        now += QUARANTINE;
    }
    l.begin_step(&w.plan(now), now).unwrap();
    let probes = l.probes();
    assert_eq!(probes.len(), 1);
    assert_eq!(probes[0].purpose, ProbePurpose::RestoreCheck);
    assert_eq!(probes[0].expect, w.store["a"]);
}

#[derive(Debug, Clone)]
enum Event {
    /// A commit references an existing file.
    Reference(usize),
    /// Snapshot expiry: a referenced file becomes unreferenced.
    Unreference(usize),
    /// A writer uploads a new file.
    Upload,
    /// A reader lease (for `LEASE_TERM`) on a key's snapshot.
    Lease(usize),
    /// A lease whose reader generation is not newer than the others'.
    QuietLease(usize),
    EndLease(usize),
    Hold(usize),
    /// Time passes.
    Wait(i64),
    /// A sweep run, with an event between plan and approval (or none).
    Sweep(Option<Box<Event>>),
}

/// How long the random interleavings' leases last: a lease on an orphan's
/// (expired) snapshot stops every plan while it lives.
const LEASE_TERM: i64 = DAY;

fn event() -> impl Strategy<Value = Event> {
    let leaf = prop_oneof![
        (0usize..12).prop_map(Event::Reference),
        (0usize..12).prop_map(Event::Unreference),
        Just(Event::Upload),
        (0usize..12).prop_map(Event::Lease),
        (0usize..12).prop_map(Event::QuietLease),
        (0usize..12).prop_map(Event::EndLease),
        (0usize..12).prop_map(Event::Hold),
        (1i64..4).prop_map(|d| Event::Wait(d * DAY)),
    ];
    prop_oneof![
        3 => leaf.clone(),
        4 => proptest::option::of(leaf).prop_map(|e| Event::Sweep(e.map(Box::new))),
    ]
}

fn apply_event(w: &mut World, e: &Event, now: &mut i64, uploads: &mut usize) {
    let key = |w: &World, i: usize| w.store.keys().nth(i % w.store.len().max(1)).cloned();
    match e {
        Event::Reference(i) => {
            if let Some(k) = key(w, *i) {
                w.commit_reference(&k);
            }
        }
        Event::Unreference(i) => {
            if let Some(k) = w
                .referenced
                .iter()
                .nth(*i % w.referenced.len().max(1))
                .cloned()
            {
                w.unreference(&k);
            }
        }
        Event::Upload => {
            *uploads += 1;
            w.store
                .insert(format!("data/up-{uploads}.parquet"), version(*now, "up"));
        }
        Event::Lease(i) => {
            if let Some(k) = key(w, *i) {
                w.lease_until(&k, *now + LEASE_TERM);
            }
        }
        Event::QuietLease(i) => {
            if let Some(k) = key(w, *i) {
                w.lease_quietly_until(&k, *now + LEASE_TERM);
            }
        }
        Event::EndLease(i) => {
            if let Some(k) = w.leased.keys().nth(*i % w.leased.len().max(1)).cloned() {
                w.end_lease(&k);
            }
        }
        Event::Hold(i) => {
            if let Some(k) = key(w, *i) {
                w.hold(&k);
            }
        }
        Event::Wait(ms) => *now += ms,
        Event::Sweep(_) => {}
    }
}

/// The property of `random_interleavings_never_delete_a_live_object`, for
/// one sequence of events.
fn interleaving_deletes_nothing_live(events: &[Event]) -> Result<(), TestCaseError> {
    let orphans: Vec<String> = (0..6).map(|i| format!("data/o-{i}.parquet")).collect();
    let live: Vec<String> = (0..6).map(|i| format!("data/l-{i}.parquet")).collect();
    let o: Vec<&str> = orphans.iter().map(String::as_str).collect();
    let lv: Vec<&str> = live.iter().map(String::as_str).collect();
    let mut w = world_with(&o, &lv, T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    let mut uploads = 0;
    for e in events {
        if let Event::Sweep(between) = e {
            let mut inner = between.as_deref().cloned();
            let mut n = now;
            let mut u = uploads;
            run(
                &mut l,
                &mut w,
                now,
                Faults {
                    between: Some(Box::new(move |w: &mut World| {
                        if let Some(e) = inner.take() {
                            apply_event(w, &e, &mut n, &mut u);
                        }
                    })),
                    ..Faults::default()
                },
            );
            uploads += 1; // keep upload names unique across closures
        } else {
            apply_event(&mut w, e, &mut now, &mut uploads);
        }
        prop_assert!(
            w.deleted_live.is_empty(),
            "deleted live objects: {:?}",
            w.deleted_live
        );
    }
    let g = l.gates();
    prop_assert_eq!(g.deleted_outside_approval, 0);
    prop_assert_eq!(g.approvals_after_newer_hold, 0);
    for m in &w.moves {
        if let Some(f) = m.from {
            prop_assert!(f.can_move_to(m.to), "{:?}", m);
        }
    }
    Ok(())
}

/// The seed of the random interleavings: fixed, so every run replays the
/// same 256 cases (among them commits, leases and holds landing between a
/// plan and its approval once objects are `RESTORE_VERIFIED`); set
/// `PROPTEST_RNG_SEED` to explore others.
const INTERLEAVING_SEED: u64 = 0x6c61_6b65_7377_6565;

fn interleaving_config() -> ProptestConfig {
    use proptest::test_runner::{FileFailurePersistence, RngAlgorithm, RngSeed};
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: 256,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: match default.rng_seed {
            RngSeed::Random => RngSeed::Fixed(INTERLEAVING_SEED),
            explicit => explicit,
        },
        // `tests/ledger.proptest-regressions` (checked in): its cases replay
        // before any new one.
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..default
    }
}

proptest! {
    #![proptest_config(interleaving_config())]

    /// No object referenced by a retained snapshot, a live lease or a hold is
    /// ever deleted, whatever lands between plan and approval.
    #[test]
    fn random_interleavings_never_delete_a_live_object(events in proptest::collection::vec(event(), 1..60)) {
        interleaving_deletes_nothing_live(&events)?;
    }
}

/// The case `tests/ledger.proptest-regressions` records, spelled out so it
/// replays whatever the strategy becomes: a file referenced, unreferenced
/// by the commit that lands between a plan and its approval, carried to
/// `RESTORE_VERIFIED`, then referenced again between the last plan and its
/// approval. Kills: dropping the approval's table-generation comparison
/// (`live.metadata_location != t.metadata_location` in `acceptance::accept`).
#[test]
fn interleaving_regression_a_commit_references_a_verified_orphan_before_approval() {
    use Event::*;
    let events = vec![
        Reference(0),
        Sweep(Some(Box::new(Unreference(0)))),
        Sweep(None),
        Sweep(None),
        Sweep(None),
        Wait(86_400_000),
        Sweep(None),
        Sweep(Some(Box::new(Reference(0)))),
    ];
    interleaving_deletes_nothing_live(&events).unwrap();
}

// --- the version pin (`ObjectVersion::matches`) ----------------------------

fn pinned(ms: i64, etag: Option<&str>, version_id: Option<&str>) -> ObjectVersion {
    ObjectVersion {
        size: 100,
        last_modified_ms: ms,
        etag: etag.map(str::to_owned),
        version_id: version_id.map(str::to_owned),
    }
}

/// Kills: dropping the ETag comparison (`self.etag.is_none() || ...` -> `true`),
/// or comparing ETags only when both sides have one.
#[test]
fn a_version_with_another_etag_in_the_same_second_is_not_the_pinned_one() {
    let p = pinned(T0 + 123, Some("\"a\""), None);
    // HEAD answers whole seconds: same size, same second, same ETag: a match.
    assert!(p.matches(&pinned(T0, Some("\"a\""), None)));
    assert!(p.matches(&pinned(T0 + 999, Some("\"a\""), None)));
    // Another ETag (a rewrite of the same size in the same second): not ours.
    assert!(!p.matches(&pinned(T0 + 123, Some("\"b\""), None)));
    assert!(!p.matches(&pinned(T0, Some("\"b\""), None)));
    // The store no longer gives an ETag: nothing proves it is the same content.
    assert!(!p.matches(&pinned(T0 + 123, None, None)));
    // Size and second still count with an ETag (kills dropping either).
    assert!(!p.matches(&ObjectVersion {
        size: 101,
        ..pinned(T0 + 123, Some("\"a\""), None)
    }));
    assert!(!p.matches(&pinned(T0 + 1000, Some("\"a\""), None)));
}

/// Kills: dropping the version-id comparison, or comparing version ids only
/// when the ETag is absent.
#[test]
fn a_version_with_the_same_etag_and_another_version_id_is_not_the_pinned_one() {
    let p = pinned(T0, Some("\"a\""), Some("v1"));
    assert!(p.matches(&pinned(T0 + 500, Some("\"a\""), Some("v1"))));
    // The same bytes uploaded again get the same ETag and a new version id:
    // deleting without a version id would hide the new one, not ours.
    assert!(!p.matches(&pinned(T0, Some("\"a\""), Some("v2"))));
    assert!(!p.matches(&pinned(T0, Some("\"a\""), None)));
    // A version id alone pins to the second as well.
    let p = pinned(T0 + 10, None, Some("v1"));
    assert!(p.matches(&pinned(T0 + 900, None, Some("v1"))));
    assert!(!p.matches(&pinned(T0 + 10, None, Some("v2"))));
}

/// Kills: comparing whole seconds when the pinned version has neither an
/// ETag nor a version id (`pinned_by_tag` forced true, or decided by the
/// HEAD answer's tags instead of the pinned ones).
#[test]
fn a_version_pinned_without_tags_needs_the_exact_millisecond() {
    let p = pinned(T0 + 123, None, None);
    assert!(p.matches(&pinned(T0 + 123, None, None)));
    assert!(!p.matches(&pinned(T0 + 124, None, None)));
    assert!(!p.matches(&pinned(T0, None, None)));
    // A HEAD answer carrying an ETag does not relax the pin.
    assert!(!p.matches(&pinned(T0, Some("\"a\""), None)));
    assert!(!p.matches(&pinned(T0 + 124, Some("\"a\""), None)));
    assert!(!p.matches(&ObjectVersion {
        size: 99,
        ..pinned(T0 + 123, None, None)
    }));
}

// --- the approval's table generation and context digest --------------------

/// Brings `a` to RESTORE_VERIFIED and starts the next run's step: the
/// ledger, the world and the run's sealed plan, ready for approval.
fn ready_to_approve() -> (Ledger, World, SealedPlan, i64) {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, "a", &mut now);
    let plan = w.plan(now);
    l.begin_step(&plan, now).unwrap();
    (l, w, plan, now)
}

/// Kills: dropping the table-generation comparison in `acceptance::accept`
/// (`live.metadata_location != t.metadata_location`), or the ledger
/// approving when `differences` is not empty.
#[test]
fn approval_is_refused_when_the_live_metadata_location_differs_from_the_plans() {
    let (mut l, w, plan, now) = ready_to_approve();
    // Control: the unchanged table approves `a` (so the refusal below is
    // the pointer's doing, nothing else's).
    let mut control = l.clone();
    let (a, _) = control.approve(&plan, &w.live_state(), now).unwrap();
    assert!(a.granted && control.approved_keys() == ["a"], "{a:?}");
    // A commit landed after the plan: same context, another metadata file.
    let mut live = w.live_state();
    live.metadata_location = metadata_uri(w.generation + 1);
    assert_ne!(live.metadata_location, plan.tokens.metadata_location);
    let (a, moves) = l.approve(&plan, &live, now).unwrap();
    assert!(!a.granted, "{a:?}");
    assert!(a.approved == 0 && moves.is_empty(), "{a:?}");
    assert_eq!(a.differences.len(), 1, "{:?}", a.differences);
    assert!(
        a.differences[0].contains("table generation")
            && a.differences[0].contains(&live.metadata_location),
        "{:?}",
        a.differences
    );
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
    assert!(!l.approvals().last().unwrap().granted);
}

/// Kills: dropping the context-digest comparison in `acceptance::accept`
/// (`ctx.digest() != t.context_digest`): a writer added after the plan
/// changes neither the hold generation nor the lease watermark.
#[test]
fn approval_is_refused_when_only_the_context_digest_differs() {
    let (mut l, w, plan, now) = ready_to_approve();
    let mut live = w.live_state();
    live.context = Some(format!(
        r#"{{"leases":[],"holds":[],"writers":[{{"stagingPrefix":"staging/job-7/","startedAtMs":{now}}}]}}"#
    ));
    let ctx = lakesweep::Context::parse(live.context.as_deref().unwrap()).unwrap();
    assert_eq!(ctx.hold_generation(), plan.tokens.hold_generation);
    assert_eq!(ctx.lease_watermark(), plan.tokens.lease_watermark);
    assert_ne!(ctx.digest(), plan.tokens.context_digest);
    let (a, moves) = l.approve(&plan, &live, now).unwrap();
    assert!(!a.granted, "{a:?}");
    assert!(a.approved == 0 && moves.is_empty(), "{a:?}");
    assert_eq!(a.differences.len(), 1, "{:?}", a.differences);
    assert!(a.differences[0].contains("context"), "{:?}", a.differences);
    assert_eq!(l.state_of("a").unwrap(), ObjectState::RestoreVerified);
}

/// The second recorded case: a lease registered without a newer reader
/// generation between the plan and the approval of verified orphans. Kills:
/// dropping the approval's context-digest comparison.
#[test]
fn interleaving_regression_a_quiet_lease_lands_before_approval() {
    use Event::*;
    let events = vec![
        Sweep(None),
        Sweep(None),
        Sweep(None),
        Wait(86_400_000),
        Sweep(None),
        Sweep(Some(Box::new(QuietLease(6)))),
    ];
    interleaving_deletes_nothing_live(&events).unwrap();
}

/// Every sweep or reconcile step records its time, so an operator sees a
/// sweep that stopped running; it survives the save.
#[test]
fn each_step_records_when_it_ran() {
    let mut w = world_with(&["a"], &[], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    assert_eq!(l.last_step_ms(), None);
    l.begin_step(&w.plan(T0), T0 + 5).unwrap();
    assert_eq!(l.last_step_ms(), Some(T0 + 5));
    l.reconcile_step(T0 + 9).unwrap();
    assert_eq!(l.last_step_ms(), Some(T0 + 9));
    let back = reopen(&mut l, &mut w);
    assert_eq!(back.last_step_ms(), Some(T0 + 9));
}

/// A commit adopts a key the sweep deleted, and the run dies before its
/// damage check: the next run's plan, checked against the ledger's deleted
/// keys, finds the key referenced and missing from the listing. It is
/// damage (the gate, the ledger's record) until the key is back; and a plan
/// not checked against the ledger's deleted keys is refused.
#[test]
fn damage_after_a_kill_is_found_by_the_next_run_and_cleared_when_restored() {
    let k = "data/orphan.parquet";
    let mut w = world_with(&[k], &["data/live.parquet"], T0 - 10 * DAY);
    let mut l = new_ledger(&w, T0);
    let mut now = T0;
    to_verified(&mut l, &mut w, k, &mut now);
    let deleted = run(&mut l, &mut w, now, Faults::default());
    assert_eq!(deleted.deleted, [k]);
    assert_eq!(l.gates().damaged, 0);
    // The kill: no damage check ran. Then a writer adopts the key.
    let pinned = l.object(k).unwrap().version.clone();
    assert_eq!(l.state_of(k), Some(ObjectState::Deleted));
    w.commit_reference(k);
    now += QUARANTINE;
    // A plan made without the ledger's deleted keys is refused.
    let blind = w.plan(now);
    let e = l.clone().begin_step(&blind, now).unwrap_err();
    assert!(e.to_string().contains("deleted-index"), "{e}");
    run(&mut l, &mut w, now, Faults::default());
    let g = l.gates();
    assert_eq!(g.damaged, 1, "{:?}", l.damage());
    let d = l.open_damage().next().unwrap();
    assert_eq!(d.key, k);
    assert_eq!(d.version, pinned);
    assert!(d.why.contains("references it again"), "{}", d.why);
    // Still missing at the next run: still open, recorded once.
    now += QUARANTINE;
    run(&mut l, &mut w, now, Faults::default());
    assert_eq!(l.gates().damaged, 1);
    assert_eq!(l.damage().len(), 1);
    // Restored: listed again, the damage is resolved.
    w.store.insert(k.into(), pinned);
    now += QUARANTINE;
    run(&mut l, &mut w, now, Faults::default());
    assert_eq!(l.gates().damaged, 0, "{:?}", l.damage());
    assert!(l.damage()[0].resolved_ms.is_some());
    // The ledger round-trips with its damage record.
    let back = reopen(&mut l, &mut w);
    assert_eq!(back.damage(), l.damage());
}
