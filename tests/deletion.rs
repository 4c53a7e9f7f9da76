//! The deletion session, driven by a simulated store and a simulated table
//! (written as real Iceberg metadata: the plan and the damage check are
//! the real planner's) that commits, adds holds and rewrites objects at
//! random points between any two host calls. Properties: no key a head the
//! run saw references is deleted without a `damaged` receipt; no key held
//! when its batch was accepted is deleted, and one held after its delete
//! gets a `damaged` receipt; every key ends with exactly one receipt; the
//! outcome matches the receipts.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::synth::{self, Snap};
use common::*;
use lakesweep::deletion::{
    Deletion, DeletionConfig, DeletionOptions, DeletionOutcome, DeletionReceipt, DeletionRequest,
    DeletionShare, Facts, FactsPurpose, HeadAnswer, StoreAnswer,
};
use lakesweep::ledger::{DeleteResult, ObjectVersion};
use lakesweep::{Request, SealedPlan, Session, SessionConfig};
use proptest::prelude::*;

const LOC: &str = synth::LOC;
const NOW: i64 = synth::NOW;
const DAY: i64 = 86_400_000;

/// The simulated table and store.
#[derive(Debug, Clone)]
struct World {
    /// What the store holds: relative key -> version.
    store: BTreeMap<String, ObjectVersion>,
    /// Keys the table references (one snapshot each).
    referenced: Vec<String>,
    /// Path-prefix holds: key -> generation.
    held: BTreeMap<String, u64>,
    generation: u32,
    hold_generation: u64,
    /// Every pointer the run was answered with, and the keys each references.
    seen_heads: Vec<BTreeSet<String>>,
    /// Keys the store deleted, in order.
    deleted: Vec<String>,
    /// Holds in force when each batch's facts were read: batch -> keys.
    held_at_batch: BTreeMap<u32, BTreeSet<String>>,
    /// The batch each key was sent to HEAD in.
    batch_of: BTreeMap<String, u32>,
    /// Holds in force when the facts after the last batch were read.
    held_at_final: BTreeSet<String>,
    rewrites: u64,
}

fn version(tag: &str, mtime: i64) -> ObjectVersion {
    ObjectVersion {
        size: 100,
        last_modified_ms: mtime,
        etag: Some(format!("\"{tag}\"")),
        version_id: None,
    }
}

impl World {
    fn new(orphans: usize) -> World {
        let mut store = BTreeMap::new();
        for i in 0..orphans {
            let k = format!("data/orphan-{i:02}.parquet");
            store.insert(k.clone(), version(&k, NOW - 10 * DAY));
        }
        store.insert("data/live.parquet".into(), version("live", NOW - 10 * DAY));
        World {
            store,
            referenced: vec!["data/live.parquet".into()],
            held: BTreeMap::new(),
            generation: 1,
            hold_generation: 0,
            seen_heads: Vec::new(),
            deleted: Vec::new(),
            held_at_batch: BTreeMap::new(),
            batch_of: BTreeMap::new(),
            held_at_final: BTreeSet::new(),
            rewrites: 0,
        }
    }

    /// The table's metadata objects at this generation (one snapshot per
    /// referenced key), and its pointer.
    fn metadata(&self) -> (BTreeMap<String, (Vec<u8>, i64)>, String) {
        let mut objects = BTreeMap::new();
        let snaps: Vec<Snap> = self
            .referenced
            .iter()
            .enumerate()
            .map(|(i, k)| (i as i64 + 1, vec![(1, 0, k.clone())]))
            .collect();
        let pointer = synth::write_table(
            &mut objects,
            &snaps,
            self.generation,
            synth::UUID,
            NOW - 20 * DAY,
        );
        objects.retain(|k, _| k.starts_with(&format!("{LOC}/metadata/")));
        (objects, pointer)
    }

    fn context(&self) -> String {
        let holds: Vec<String> = self
            .held
            .iter()
            .map(|(k, g)| {
                format!(r#"{{"scope":{{"pathPrefix":"{k}"}},"generation":{g},"reason":"case"}}"#)
            })
            .collect();
        format!(r#"{{"holds":[{}]}}"#, holds.join(","))
    }

    /// The real planner's sealed plan of the table now.
    fn plan(&self) -> SealedPlan {
        let (mut objects, pointer) = self.metadata();
        for (k, v) in &self.store {
            objects.insert(
                format!("{LOC}/{k}"),
                (vec![0; v.size as usize], v.last_modified_ms),
            );
        }
        let mut cfg = SessionConfig::new(LOC, &pointer, NOW, 3 * DAY);
        cfg.context = Some(self.context());
        let opts = HostOptions {
            extra: objects,
            ..HostOptions::synthetic()
        };
        // The listing carries the store's entity tags.
        let mut plan = run_native(cfg, &opts).unwrap().plan();
        for d in &mut plan.delete {
            d.etag = self.store[&d.key].etag.clone();
        }
        plan.digest = plan.compute_digest();
        plan
    }

    /// Which of `keys` the table references at `pointer` (a real planner
    /// session run to a complete keep set), as a host answers CheckDamage.
    fn referenced(
        &self,
        config: SessionConfig,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        let (objects, _) = self.metadata();
        let mut s = Session::start(config).map_err(|e| e.to_string())?;
        loop {
            let Some(r) = s.poll_request() else {
                return Err("the session stopped asking".into());
            };
            match r {
                Request::ReadBlob { uri } => match objects.get(&uri) {
                    Some((b, _)) => s.handle_blob(uri, b.clone()),
                    None => s.handle_missing(uri),
                }
                .map_err(|e| e.to_string())?,
                Request::List { .. } => {
                    return s.referenced(keys.to_vec()).map_err(|e| e.to_string());
                }
                Request::ResolvePointer => return Err("asked for the pointer".into()),
            }
        }
    }

    /// One random event between two host calls.
    fn event(&mut self, e: u8, pick: usize) {
        let orphans: Vec<String> = self
            .store
            .keys()
            .filter(|k| k.contains("orphan"))
            .cloned()
            .collect();
        let any: Vec<String> = (0..12)
            .map(|i| format!("data/orphan-{i:02}.parquet"))
            .collect();
        match e % 8 {
            // A writer adopts a key (present or already deleted).
            0 => {
                let k = &any[pick % any.len()];
                if !self.referenced.contains(k) {
                    self.referenced.push(k.clone());
                    self.generation += 1;
                }
            }
            // A legal hold on a key.
            1 => {
                let k = &any[pick % any.len()];
                self.hold_generation += 1;
                self.held.insert(k.clone(), self.hold_generation);
            }
            // An object rewritten in place.
            2 if !orphans.is_empty() => {
                let k = &orphans[pick % orphans.len()];
                self.rewrites += 1;
                let v = version(&format!("{k}-{}", self.rewrites), NOW - DAY);
                self.store.insert(k.clone(), v);
            }
            _ => {}
        }
    }
}

/// Every receipt `d` holds, drained in as many pieces as it takes.
fn drain_all(d: &mut Deletion, into: &mut Vec<DeletionReceipt>) {
    loop {
        let piece = d.drain_receipts();
        if piece.is_empty() {
            return;
        }
        into.extend(piece);
    }
}

/// Drives a deletion of `plan` over `w`, with `events` (kind, pick) landing
/// one per host call, and returns every receipt and the outcome.
fn drive(
    w: &mut World,
    plan: &SealedPlan,
    events: &[(u8, usize)],
    batch: u32,
) -> (Vec<DeletionReceipt>, DeletionOutcome) {
    let (receipts, outcome) = drive_share(w, plan, events, batch, None, None);
    (receipts, outcome.expect("not killed"))
}

/// [`drive`] of one `share` (none: the whole plan), the host killed after
/// `kill_after` requests (none: never): then the receipts drained so far,
/// and no outcome (it never answered).
fn drive_share(
    w: &mut World,
    plan: &SealedPlan,
    events: &[(u8, usize)],
    batch: u32,
    share: Option<DeletionShare>,
    kill_after: Option<usize>,
) -> (Vec<DeletionReceipt>, Option<DeletionOutcome>) {
    let mut d = Deletion::start(DeletionConfig {
        plan: plan.to_json(),
        options: DeletionOptions {
            batch_size: Some(batch),
            allow_future_now: true,
            share,
            ..DeletionOptions::default()
        },
    })
    .unwrap();
    let mut events = events.iter();
    let mut receipts = Vec::new();
    let mut calls = 0;
    while !d.is_done() {
        let Some(r) = d.poll_request() else {
            panic!("the session waits for nothing: {:?}", d.outcome());
        };
        calls += 1;
        assert!(calls < 10_000, "runaway");
        if kill_after.is_some_and(|k| calls > k) {
            return (receipts, None);
        }
        match r {
            DeletionRequest::ReadFacts {
                purpose, switches, ..
            } => {
                if let Some(&(e, p)) = events.next() {
                    w.event(e, p);
                }
                let (_, pointer) = w.metadata();
                w.seen_heads.push(w.referenced.iter().cloned().collect());
                match purpose {
                    FactsPurpose::Batch(n) => {
                        w.held_at_batch.insert(n, w.held.keys().cloned().collect());
                    }
                    FactsPurpose::Final => w.held_at_final = w.held.keys().cloned().collect(),
                }
                d.handle_facts(Facts {
                    pointer: Some(pointer),
                    log: vec![],
                    context: Some(w.context()),
                    clock_ms: NOW,
                    switches: switches
                        .into_iter()
                        .map(|uri| lakesweep::stop::SwitchReading {
                            uri,
                            answer: lakesweep::stop::SwitchAnswer::Absent,
                        })
                        .collect(),
                })
                .unwrap();
            }
            DeletionRequest::Head { batch, objects } => {
                for t in objects {
                    if let Some(&(e, p)) = events.next() {
                        w.event(e, p);
                    }
                    w.batch_of.insert(t.key.clone(), batch);
                    let a = match w.store.get(&t.key) {
                        Some(v) => HeadAnswer::Found(v.clone()),
                        None => HeadAnswer::Absent,
                    };
                    d.handle_head(t.key, a).unwrap();
                    receipts.extend(d.drain_receipts());
                }
            }
            DeletionRequest::Delete { objects, .. } => {
                for t in objects {
                    if let Some(&(e, p)) = events.next() {
                        w.event(e, p);
                    }
                    let a = match w.store.get(&t.key) {
                        None => StoreAnswer::Absent,
                        Some(v) if t.if_match.is_some() && v.etag != t.if_match => {
                            StoreAnswer::Changed
                        }
                        Some(_) => {
                            w.store.remove(&t.key);
                            w.deleted.push(t.key.clone());
                            StoreAnswer::Deleted(None)
                        }
                    };
                    d.handle_delete(t.key, a, NOW, Some(NOW)).unwrap();
                    receipts.extend(d.drain_receipts());
                }
            }
            DeletionRequest::CheckDamage { config, keys } => {
                if let Some(&(e, p)) = events.next() {
                    w.event(e, p);
                }
                // The deleted keys, in pieces, as a host reads them.
                let mut deleted = Vec::new();
                while (deleted.len() as u64) < keys {
                    let piece = d.damage_keys(deleted.len() as u64, 7);
                    assert!(!piece.is_empty(), "fewer keys than announced");
                    deleted.extend(piece);
                }
                match w.referenced(*config, &deleted) {
                    Ok(r) => d.handle_referenced(r).unwrap(),
                    Err(e) => d.handle_referenced_failed(e).unwrap(),
                }
            }
        }
        drain_all(&mut d, &mut receipts);
    }
    drain_all(&mut d, &mut receipts);
    (receipts, Some(d.outcome()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn no_live_key_is_deleted_unseen_and_every_key_has_one_receipt(
        orphans in 1usize..10,
        batch in 1u32..5,
        events in proptest::collection::vec((0u8..16, 0usize..64), 0..40),
    ) {
        let mut w = World::new(orphans);
        let plan = w.plan();
        prop_assert_eq!(plan.delete.len(), orphans);
        let (receipts, outcome) = drive(&mut w, &plan, &events, batch);
        if outcome.refused.is_some() {
            // Refused before anything was tried: nothing done, no receipts.
            prop_assert!(receipts.is_empty() && w.deleted.is_empty());
            prop_assert_eq!(outcome.exit, 2);
            return Ok(());
        }
        // Every key exactly one receipt (besides a damage receipt).
        let mut per_key: BTreeMap<&str, Vec<DeleteResult>> = BTreeMap::new();
        for r in &receipts {
            per_key.entry(&r.receipt.key).or_default().push(r.receipt.result);
        }
        for d in &plan.delete {
            let rs = per_key.get(d.key.as_str()).cloned().unwrap_or_default();
            let ends: Vec<_> = rs.iter().filter(|r| **r != DeleteResult::Damaged).collect();
            prop_assert_eq!(ends.len(), 1, "{}: {:?}", d.key, rs);
        }
        let damaged: BTreeSet<&str> = receipts
            .iter()
            .filter(|r| r.receipt.result == DeleteResult::Damaged)
            .map(|r| r.receipt.key.as_str())
            .collect();
        let unchecked = outcome.damage_unchecked.is_some();
        for k in &w.deleted {
            // Referenced by a head the run saw: damage, said so.
            let live = w.seen_heads.iter().any(|h| h.contains(k));
            if live {
                prop_assert!(damaged.contains(k.as_str()) || unchecked, "{k} deleted while live, no damage receipt: {receipts:?}");
            }
            // Held when its batch was accepted: never deleted.
            let batch = w.batch_of[k];
            prop_assert!(!w.held_at_batch[&batch].contains(k), "{k} deleted under a hold");
            // Held after, when the run last looked: damage.
            if w.held_at_final.contains(k) {
                prop_assert!(damaged.contains(k.as_str()) || unchecked, "{k} held now, no damage receipt");
            }
        }
        // The outcome matches the receipts.
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for r in &receipts {
            *counts.entry(r.receipt.result.as_str().to_owned()).or_default() += 1;
        }
        prop_assert_eq!(&outcome.results, &counts);
        let troubled = receipts.iter().any(|r| !matches!(r.receipt.result, DeleteResult::Deleted | DeleteResult::AlreadyAbsent | DeleteResult::Damaged));
        let want = if !damaged.is_empty() || unchecked { 3 } else if troubled || outcome.stopped.is_some() { 1 } else { 0 };
        prop_assert_eq!(outcome.exit, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A share killed at any point and run again (attempt 1), with the
    /// table changing around both: every key of the share the first
    /// attempt or the second deleted, and that a head the second saw
    /// references, has a `damaged` receipt from the second, or the
    /// second says its damage is unchecked. The first attempt's outcome
    /// is lost with it: nothing it knew may be needed.
    #[test]
    fn a_retried_share_never_clears_what_its_first_attempt_deleted(
        orphans in 1usize..10,
        batch in 1u32..4,
        of in 1u32..4,
        pick in 0u32..4,
        kill_after in 0usize..40,
        first in proptest::collection::vec((0u8..16, 0usize..64), 0..30),
        second in proptest::collection::vec((0u8..16, 0usize..64), 0..30),
    ) {
        let mut w = World::new(orphans);
        let plan = w.plan();
        let index = pick % of;
        let share = |attempt| Some(DeletionShare { index, of, attempt });
        let (_, lost) = drive_share(&mut w, &plan, &first, batch, share(0), Some(kill_after));
        if lost.is_some() {
            // It ran to its end before the kill: nothing to retry.
            return Ok(());
        }
        let deleted_first: BTreeSet<String> = w.deleted.iter().cloned().collect();
        w.seen_heads.clear();
        w.held_at_batch.clear();
        w.held_at_final.clear();
        let (receipts, outcome) = drive_share(&mut w, &plan, &second, batch, share(1), None);
        let outcome = outcome.unwrap();
        let unchecked = outcome.damage_unchecked.is_some();
        let damaged: BTreeSet<&str> = receipts
            .iter()
            .filter(|r| r.receipt.result == DeleteResult::Damaged)
            .map(|r| r.receipt.key.as_str())
            .collect();
        let cut = DeletionShare { index, of, attempt: 0 }.range(plan.delete.len() as u32).unwrap();
        let mine: BTreeSet<&str> = plan.delete[cut.start as usize..cut.end as usize].iter().map(|d| d.key.as_str()).collect();
        for k in deleted_first.iter().chain(w.deleted.iter()) {
            prop_assert!(mine.contains(k.as_str()), "{k} is not the share's");
            let live = w.seen_heads.iter().any(|h| h.contains(k));
            if live {
                prop_assert!(damaged.contains(k.as_str()) || unchecked,
                    "{k} deleted (first attempt: {}) and live, no damage said: {outcome:?} {receipts:?}", deleted_first.contains(k));
            }
            // Held when the second attempt looked (at a batch, or after
            // the last): damage, said so.
            let held = w.held_at_final.contains(k) || w.held_at_batch.values().any(|h| h.contains(k));
            if held {
                prop_assert!(damaged.contains(k.as_str()) || unchecked,
                    "{k} deleted (first attempt: {}) and held, no damage said: {outcome:?} {receipts:?}", deleted_first.contains(k));
            }
        }
        if outcome.refused.is_some() {
            prop_assert!(unchecked && outcome.exit == 3, "{outcome:?}");
        }
    }
}

/// Without events every orphan goes, in batches, with a receipt each.
#[test]
fn a_quiet_table_loses_its_garbage_and_nothing_else() {
    let mut w = World::new(7);
    let plan = w.plan();
    let (receipts, outcome) = drive(&mut w, &plan, &[], 3);
    assert_eq!(outcome.exit, 0, "{outcome:?}");
    assert_eq!(w.deleted.len(), 7);
    assert!(w.store.contains_key("data/live.parquet"));
    assert_eq!(receipts.len(), 7);
    assert!(receipts
        .iter()
        .all(|r| r.receipt.result == DeleteResult::Deleted));
}

/// A commit adopting a key of the batch being deleted: the damage check
/// (a real planner session on the live pointer) names it, with a hint.
#[test]
fn a_key_adopted_during_its_batch_is_reported_as_damage() {
    let mut w = World::new(2);
    let plan = w.plan();
    // Before the first HEAD of batch 1: adopt orphan 00.
    let (receipts, outcome) = drive(&mut w, &plan, &[(15, 0), (0, 0)], 10);
    assert_eq!(outcome.exit, 3, "{outcome:?} {receipts:?}");
    let d = receipts
        .iter()
        .find(|r| r.receipt.result == DeleteResult::Damaged)
        .unwrap();
    assert_eq!(d.receipt.key, "data/orphan-00.parquet");
    assert!(d.restore.as_deref().unwrap().contains("backup"), "{d:?}");
}
