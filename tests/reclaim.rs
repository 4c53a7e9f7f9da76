//! The what-if engine (`lakesweep::reclaim`, the browser simulator's) on
//! the pyiceberg fixture tables: the snapshots it retains are
//! `plan_expiry`'s, and the objects it says an expiry frees are exactly
//! those a sweep plan of the table after that expiry deletes beyond a plan
//! of the table as it is (the expiry's new metadata served beside the old).

mod common;

use std::collections::BTreeSet;

use common::*;
use lakesweep::reclaim::{CurveField, ReclaimBuilder, ReclaimIndex, SizedKey};
use lakesweep::{plan_expiry, Context, ExpiryRequest, Policy, Verdict};

const DAY: i64 = 86_400_000;

fn index(t: &Table) -> ReclaimIndex {
    let read = |uri: &str| std::fs::read(vpath(uri).unwrap()).unwrap();
    let mut b = ReclaimBuilder::start(&t.metadata_location, &read(&t.metadata_location)).unwrap();
    while let Some(uri) = b.next_read() {
        b.handle_blob(&uri, &read(&uri)).unwrap();
    }
    let listing: Vec<SizedKey> = list(&t.location, &HostOptions::for_table(t))
        .into_iter()
        .map(|o| SizedKey {
            key: o.key[t.location.len() + 1..].to_owned(),
            size: o.size,
            last_modified_ms: o.last_modified_ms,
        })
        .collect();
    b.finish(&listing).unwrap()
}

fn policy(t: &Table, retain_last: u32, max_age: &str) -> Policy {
    let md: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vpath(&t.metadata_location).unwrap()).unwrap())
            .unwrap();
    Policy::parse(&format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{}","format":"iceberg"}},
        "snapshotRetention":{{"retainLast":{retain_last},"maxSnapshotAge":"{max_age}"}},
        "fileRetention":{{"orphanSafetyInterval":"3d"}}}}"#,
        md["table-uuid"].as_str().unwrap()
    ))
    .unwrap()
}

/// Candidates of a plan of the table at `pointer` (the new metadata in
/// `opts.extra` when it is the expiry's), judged a year later.
fn candidates(t: &Table, pointer: &str, opts: &HostOptions) -> BTreeSet<String> {
    let cfg = lakesweep::SessionConfig::new(&t.location, pointer, t.now_ms + 365 * DAY, 3 * DAY);
    let run = run_native(cfg, opts).unwrap();
    run.verdicts()
        .into_values()
        .filter(|d| d.verdict == Verdict::Candidate)
        .map(|d| d.relative_key)
        .collect()
}

#[test]
fn what_ifs_retain_as_expiry_and_free_what_the_next_sweep_deletes() {
    let mut checked = 0;
    for t in tables() {
        let idx = index(&t);
        for (retain_last, age) in [(1, "0d"), (2, "1d"), (3, "0d"), (1, "3650d")] {
            let p = policy(&t, retain_last, age);
            let now = t.now_ms + 400 * DAY;
            let w = idx
                .what_if(Some(p.clone()), Context::default(), now)
                .unwrap();
            let req = ExpiryRequest {
                metadata_location: t.metadata_location.clone(),
                now_ms: now,
                policy: Some(p),
                context: Context::default(),
                expire_ids: Vec::new(),
                dr_metadata: Vec::new(),
            };
            let e = plan_expiry(
                &req,
                &std::fs::read(vpath(&t.metadata_location).unwrap()).unwrap(),
            )
            .unwrap();
            assert_eq!(w.retain, e.retain, "{} {retain_last} {age}", t.name);
            assert_eq!(w.expired, e.expired);
            let kept: Vec<i64> = w.retain.iter().map(|r| r.snapshot_id).collect();
            let freed: BTreeSet<String> = idx
                .freed_keys(&kept, usize::MAX)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert_eq!(freed.len() as u64, w.freed_objects);
            // 400 days on, everything freed is older than the window.
            assert_eq!(
                (w.freed_now_objects, w.freed_now_bytes),
                (w.freed_objects, w.freed_bytes)
            );
            // The sweep after the expiry, against the sweep before it.
            let opts = HostOptions::for_table(&t);
            let before = candidates(&t, &t.metadata_location, &opts);
            let after = if e.new_metadata.is_null() {
                before.clone()
            } else {
                let mut o = opts.clone();
                let uri = format!("{}/metadata/99999-what-if.metadata.json", t.location);
                o.extra.insert(
                    uri.clone(),
                    (serde_json::to_vec(&e.new_metadata).unwrap(), t.now_ms),
                );
                let mut c = candidates(&t, &uri, &o);
                // The old current metadata document is not the expiry's to free.
                c.retain(|k| !k.ends_with(".metadata.json"));
                c
            };
            let swept: BTreeSet<String> = after.difference(&before).cloned().collect();
            assert_eq!(
                freed, swept,
                "{} retainLast {retain_last} maxSnapshotAge {age}",
                t.name
            );
            checked += usize::from(!freed.is_empty());
        }
    }
    assert!(checked >= 2, "some what-if frees something");
}

#[test]
fn curves_are_what_ifs_and_a_synthetic_table_is_measurable() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let idx = index(&t);
    let p = policy(&t, 1, "0d");
    let now = t.now_ms + 400 * DAY;
    let pts = idx
        .curve(
            &p,
            &Context::default(),
            now,
            CurveField::RetainLast,
            &[1, 2, 3, 50],
        )
        .unwrap();
    for pt in &pts {
        let w = idx
            .what_if(
                Some(policy(&t, pt.value as u32, "0d")),
                Context::default(),
                now,
            )
            .unwrap();
        assert_eq!(
            (pt.retained, pt.freed_bytes),
            (w.retain.len() as u64, w.freed_bytes)
        );
    }
    assert!(
        pts.windows(2).all(|w| w[0].freed_bytes >= w[1].freed_bytes),
        "{pts:?}"
    );

    let now = 1_796_040_000_000;
    let s = ReclaimIndex::synthetic(100, 10_000, 7, 42, now);
    assert_eq!((s.snapshot_count(), s.object_count()), (100, 10_000));
    let p = Policy::parse(
        r#"{"schema":"lakehouseRetentionPolicy.v1","binding":{"tableUuid":"00000000-0000-0000-0000-000000000000","format":"iceberg"},
        "snapshotRetention":{"retainLast":10,"maxSnapshotAge":"1h"},"fileRetention":{"orphanSafetyInterval":"3d"}}"#,
    )
    .unwrap();
    let w = s.what_if(Some(p), Context::default(), now).unwrap();
    assert_eq!(w.retain.len(), 10);
    // Fast appends: only files rewritten away before the tenth-newest
    // snapshot are freed.
    assert!(
        w.freed_objects > 0 && w.freed_objects < 1_000,
        "{}",
        w.freed_objects
    );
}

#[test]
fn a_missing_manifest_or_an_unasked_answer_is_refused() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let md = std::fs::read(vpath(&t.metadata_location).unwrap()).unwrap();
    let mut b = ReclaimBuilder::start(&t.metadata_location, &md).unwrap();
    let first = b.next_read().unwrap();
    assert!(b.handle_missing(&first).is_err());
    assert!(b.handle_blob("file:///elsewhere/x.avro", b"").is_err());
    assert!(b.clone().finish(&[]).is_err(), "finished before every read");
    assert!(ReclaimBuilder::start(&t.metadata_location, b"{not json").is_err());
}

#[test]
fn the_window_splits_what_goes_at_once_from_what_goes_later() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let idx = index(&t);
    // A window longer than the table's whole history: everything freed
    // is younger than it, and waits.
    let mut p = policy(&t, 1, "0d");
    p.file_retention.orphan_safety_interval = lakesweep::DurationMs(3650 * DAY);
    let w = idx
        .what_if(Some(p), Context::default(), t.now_ms + 400 * DAY)
        .unwrap();
    assert!(w.freed_objects > 0);
    assert_eq!((w.freed_now_objects, w.freed_now_bytes), (0, 0));
}

#[test]
fn a_location_spelled_otherwise_is_keyed_canonically() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let md = std::fs::read_to_string(vpath(&t.metadata_location).unwrap()).unwrap();
    let spelled = md.replace("file:///lakesweep-fixtures/", "file:/lakesweep-fixtures/");
    assert_ne!(md, spelled);
    let b = ReclaimBuilder::start(&t.metadata_location, spelled.as_bytes()).unwrap();
    assert_eq!(b.location(), t.location);
}
