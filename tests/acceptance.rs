//! The one acceptance path, driven the way `apply` and `sweep` drive it: a
//! real plan of a synthetic table, deletes in batches, the core's
//! `accept` before every batch, and a damage check after the last. Commits
//! (that reference old unreferenced files, like `add_files`), legal holds of
//! any generation and leases are injected between every pair of host steps,
//! including the window between a batch's acceptance and its deletes.
//!
//! The property: no key referenced by any head the run saw is deleted
//! without being reported as damage; no key a hold covered when its batch
//! was accepted is deleted; a key deleted and then covered by a hold is
//! reported.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::synth::*;
use common::*;
use lakesweep::{accept, LiveFacts, Request, SealedPlan, Session, SessionConfig, UnsafeReason};
use proptest::prelude::*;

const ORPHANS: usize = 12;

/// One event the world may do between two host steps.
#[derive(Debug, Clone)]
enum Event {
    Nothing,
    /// A commit whose new snapshot references orphan `i` (an old object).
    Commit(usize),
    /// A legal hold on orphan `i`'s key, of this generation.
    Hold(usize, u64),
    /// A legal hold on the whole table.
    TableHold,
    /// A reader lease on the first snapshot.
    Lease,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => Just(Event::Nothing),
        2 => (0..ORPHANS).prop_map(Event::Commit),
        2 => (0..ORPHANS, 0u64..3).prop_map(|(i, g)| Event::Hold(i, g)),
        1 => Just(Event::TableHold),
        1 => Just(Event::Lease),
    ]
}

fn orphan(i: usize) -> String {
    format!("data/o-{i:02}.parquet")
}

/// The simulated table and store.
struct World {
    objects: BTreeMap<String, (Vec<u8>, i64)>,
    snaps: Vec<Snap>,
    version: u32,
    pointer: String,
    holds: Vec<String>,
    leases: Vec<String>,
    deleted: BTreeSet<String>,
    /// Every head (metadata URI) the world had during the run.
    heads: Vec<String>,
}

impl World {
    fn new() -> World {
        let mut objects = BTreeMap::new();
        let snaps: Vec<Snap> = vec![
            (1, vec![(1, 0, "data/a.parquet".into())]),
            (2, vec![(1, 0, "data/b.parquet".into())]),
        ];
        let pointer = write_table(&mut objects, &snaps, 1, UUID, OLD);
        for i in 0..ORPHANS {
            objects.insert(format!("{LOC}/{}", orphan(i)), (b"old".to_vec(), OLD));
        }
        World {
            objects,
            snaps,
            version: 1,
            heads: vec![pointer.clone()],
            pointer,
            holds: Vec::new(),
            leases: Vec::new(),
            deleted: BTreeSet::new(),
        }
    }

    fn context(&self) -> String {
        format!(
            r#"{{"holds":[{}],"leases":[{}]}}"#,
            self.holds.join(","),
            self.leases.join(",")
        )
    }

    fn opts(&self) -> HostOptions {
        HostOptions {
            extra: self.objects.clone(),
            ..HostOptions::synthetic()
        }
    }

    fn config(&self) -> SessionConfig {
        let mut c = SessionConfig::new(LOC, &self.pointer, NOW, RETENTION);
        c.context = Some(self.context());
        c
    }

    fn apply(&mut self, e: &Event) {
        match e {
            Event::Nothing => {}
            Event::Commit(i) => {
                let id = 100 + self.snaps.len() as i64;
                self.snaps.push((id, vec![(1, 0, orphan(*i))]));
                self.version += 1;
                self.pointer = write_table(&mut self.objects, &self.snaps, self.version, UUID, NOW);
                // A commit references an existing object; it never brings a
                // deleted one back.
                for k in &self.deleted {
                    self.objects.remove(&format!("{LOC}/{k}"));
                }
                self.heads.push(self.pointer.clone());
            }
            Event::Hold(i, g) => self.holds.push(format!(
                r#"{{"scope":{{"pathPrefix":"{}"}},"generation":{g}}}"#,
                orphan(*i)
            )),
            Event::TableHold => self
                .holds
                .push(r#"{"scope":"table","generation":0}"#.to_owned()),
            Event::Lease => self.leases.push(format!(
                r#"{{"snapshotId":1,"expiresAtMs":{},"readerGeneration":0}}"#,
                NOW + DAY
            )),
        }
    }

    fn facts(&self) -> LiveFacts {
        LiveFacts {
            metadata_location: self.pointer.clone(),
            head: None,
            context: Some(self.context()),
            clock_ms: NOW,
            allow_future_now: false,
        }
    }

    /// Keys (relative) the metadata `head` references, by a session that
    /// stops once its keep set is complete.
    fn referenced(&self, head: &str, keys: Vec<String>) -> Vec<(String, String)> {
        let mut c = SessionConfig::new(LOC, head, NOW, RETENTION);
        c.context = Some(self.context());
        let mut s = match Session::start(c) {
            Ok(s) => s,
            Err(e) => panic!("damage session: {e:?}"),
        };
        let opts = self.opts();
        while let Some(r) = s.poll_request() {
            match r {
                Request::ReadBlob { uri } => {
                    let b = opts.extra.get(&uri).map(|(b, _)| b.clone());
                    match b {
                        Some(b) => s.handle_blob(uri, b).unwrap(),
                        None => s.handle_missing(uri).unwrap(),
                    }
                }
                Request::List { .. } => break,
                Request::ResolvePointer => unreachable!("no listing was served"),
            }
        }
        assert!(s.keep_set_complete());
        s.referenced(keys).unwrap()
    }
}

/// What one batched run did.
#[derive(Debug, Default)]
struct Outcome {
    deleted: BTreeSet<String>,
    damage: BTreeSet<String>,
    stopped: bool,
    /// Keys covered by a hold at their batch's acceptance but deleted.
    held_deleted: Vec<String>,
}

/// The host loop of `apply` (crate `deletion` in the sidecar), over the
/// simulated store. `events[i]` happen at the i-th host step boundary.
fn run(world: &mut World, plan: &SealedPlan, batch: usize, events: &[Event]) -> Outcome {
    let mut ev = events.iter().cycle();
    let mut next_event = |w: &mut World| w.apply(ev.next().unwrap_or(&Event::Nothing));
    let mut out = Outcome::default();
    let keys: Vec<String> = plan.delete.iter().map(|d| d.key.clone()).collect();
    next_event(world); // between the plan and the first batch
    for chunk in keys.chunks(batch) {
        let acc = accept(plan, &world.facts()).unwrap();
        if !acc.granted {
            out.stopped = true;
            break;
        }
        // Held when the batch was accepted, by an independent reading of
        // the context (not the core's answer).
        let held_then: BTreeSet<&String> = chunk.iter().filter(|k| held(world, k)).collect();
        next_event(world); // the window between acceptance and the deletes
        for k in chunk {
            if !acc.allows(k) {
                continue;
            }
            if held_then.contains(k) {
                out.held_deleted.push(k.clone());
            }
            world.objects.remove(&format!("{LOC}/{k}"));
            world.deleted.insert(k.clone());
            out.deleted.insert(k.clone());
        }
        next_event(world); // after the batch
    }
    // The final check.
    let acc = accept(plan, &world.facts()).unwrap();
    for k in &out.deleted {
        if acc.denied.contains_key(k) {
            out.damage.insert(k.clone());
        }
    }
    if !acc.granted && !out.deleted.is_empty() {
        let head = world.pointer.clone();
        for (k, _) in world.referenced(&head, out.deleted.iter().cloned().collect()) {
            out.damage.insert(k);
        }
    }
    out
}

fn held(world: &World, k: &str) -> bool {
    lakesweep::Context::parse(&world.context())
        .unwrap()
        .protects(k)
        .is_some()
}

fn plan_of(world: &World) -> SealedPlan {
    let r = run_native(world.config(), &world.opts()).unwrap();
    r.plan()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn no_live_or_held_key_is_deleted_unreported(
        batch in 1usize..6,
        events in proptest::collection::vec(event(), 1..12),
    ) {
        let mut w = World::new();
        let plan = plan_of(&w);
        prop_assert_eq!(plan.delete.len(), ORPHANS);
        let out = run(&mut w, &plan, batch, &events);
        prop_assert!(out.held_deleted.is_empty(), "held keys deleted: {:?}", out.held_deleted);
        // Every head the run saw: what it references and this run deleted
        // must be in the damage report.
        for head in w.heads.clone() {
            for (k, why) in w.referenced(&head, out.deleted.iter().cloned().collect()) {
                prop_assert!(out.damage.contains(&k), "`{}` ({}) deleted, referenced by {}, not reported", k, why, head);
            }
        }
        // Every deleted key a hold now covers is reported.
        for k in &out.deleted {
            if held(&w, k) {
                prop_assert!(out.damage.contains(k), "`{}` deleted and held now, not reported", k);
            }
        }
    }
}

#[test]
fn a_commit_between_batches_stops_the_run() {
    let mut w = World::new();
    let plan = plan_of(&w);
    // Batch 1 deletes o-00 and o-01; then a commit references o-05.
    let out = run(
        &mut w,
        &plan,
        2,
        &[Event::Nothing, Event::Nothing, Event::Commit(5)],
    );
    assert!(out.stopped);
    assert_eq!(out.deleted.len(), 2, "{out:?}");
    assert!(!out.deleted.contains(&orphan(5)));
    assert!(out.damage.is_empty());
}

#[test]
fn a_commit_in_the_last_window_is_reported_as_damage() {
    let mut w = World::new();
    let plan = plan_of(&w);
    // One batch with everything; the commit lands between its acceptance
    // and its deletes and references o-07, which is then deleted.
    let out = run(&mut w, &plan, ORPHANS, &[Event::Nothing, Event::Commit(7)]);
    assert!(!out.stopped);
    assert!(out.deleted.contains(&orphan(7)));
    assert_eq!(out.damage, BTreeSet::from([orphan(7)]), "{out:?}");
}

#[test]
fn holds_of_any_generation_and_table_holds_and_leases_stop_the_run() {
    for e in [
        Event::Hold(3, 0),
        Event::Hold(3, 2),
        Event::TableHold,
        Event::Lease,
    ] {
        let mut w = World::new();
        let plan = plan_of(&w);
        let out = run(&mut w, &plan, 4, &[e.clone(), Event::Nothing]);
        assert!(out.stopped, "{e:?}");
        assert!(out.deleted.is_empty(), "{e:?}: {out:?}");
    }
}

#[test]
fn a_hold_known_to_the_plan_denies_only_its_key() {
    let mut w = World::new();
    w.apply(&Event::Hold(4, 0));
    let plan = plan_of(&w);
    // The planner keeps the held key; acceptance with the same context is granted.
    assert!(!plan.delete.iter().any(|d| d.key == orphan(4)));
    let acc = accept(&plan, &w.facts()).unwrap();
    assert!(acc.granted, "{acc:?}");
}

#[test]
fn a_plan_made_on_a_stale_pointer_is_refused() {
    // Version 2 exists beside the pointer's version 1 and descends from it.
    let mut w = World::new();
    let old = w.pointer.clone();
    w.apply(&Event::Commit(2));
    let mut c = SessionConfig::new(LOC, &old, NOW, RETENTION);
    c.context = Some(w.context());
    let e = run_native(c.clone(), &w.opts()).unwrap_err();
    assert!(
        matches!(
            e,
            lakesweep::Error::Unsafe {
                reason: UnsafeReason::StalePointer,
                ..
            }
        ),
        "{e:?}"
    );
    // From an authoritative catalog the newer document is a failed commit's
    // leftover: planned, and said.
    c.pointer_authoritative = true;
    let plan = run_native(c, &w.opts()).unwrap().plan();
    assert!(plan.warnings.iter().any(|w| w.contains("failed commit")));
}

#[test]
fn a_stale_pointer_of_a_v1_table_without_uuid_is_refused_too() {
    let mut w = World::new();
    let old = w.pointer.clone();
    w.apply(&Event::Commit(2));
    // Both documents as v1 tables that never had a table-uuid.
    for uri in [old.clone(), w.pointer.clone()] {
        let mut md: serde_json::Value = serde_json::from_slice(&w.objects[&uri].0).unwrap();
        md["format-version"] = 1.into();
        md.as_object_mut().unwrap().remove("table-uuid");
        w.objects
            .insert(uri, (serde_json::to_vec(&md).unwrap(), NOW));
    }
    let e = run_native(SessionConfig::new(LOC, &old, NOW, RETENTION), &w.opts()).unwrap_err();
    assert!(
        matches!(
            e,
            lakesweep::Error::Unsafe {
                reason: UnsafeReason::StalePointer,
                ..
            }
        ),
        "{e:?}"
    );
}
