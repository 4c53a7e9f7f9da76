//! Sealed metadata bundles over the pyiceberg fixture table: sealing a
//! snapshot's chain, restore verification from the copies (fault 7: a bundle
//! missing one layer keeps its objects in quarantine), and the metadata
//! document that restores an expired snapshot.

mod common;

use std::collections::BTreeMap;

use common::*;
use lakesweep::bundle::{self, Bundle, Layer, SealRequest};
use lakesweep::ledger::{Ledger, ObjectState, ObjectVersion, Observation};
use lakesweep::{plan_expiry, Context, ExpiryRequest, PathMapping, Session};

fn events() -> Table {
    tables().into_iter().find(|t| t.name == "events").unwrap()
}

fn mappings() -> Vec<PathMapping> {
    vec![]
}

fn rel(t: &Table, key: &str) -> String {
    format!("{}/{key}", t.location)
}

/// HEAD from the checkout, with the generator's mtimes.
fn head(t: &Table, key: &str) -> Option<ObjectVersion> {
    let p = vpath(&rel(t, key))?;
    let m = std::fs::metadata(p).ok()?;
    Some(ObjectVersion {
        size: m.len(),
        last_modified_ms: *t.mtimes.get(key)?,
        etag: None,
        version_id: None,
    })
}

/// The oldest snapshot that is not current, and a sealed bundle of it.
fn sealed(t: &Table) -> (Bundle, BTreeMap<String, Vec<u8>>, Vec<u8>) {
    let md_bytes = std::fs::read(vpath(&t.metadata_location).unwrap()).unwrap();
    let md =
        lakesweep::spec::iceberg::TableMetadata::parse(&t.metadata_location, &md_bytes).unwrap();
    let snap = md.snapshots.first().unwrap().snapshot_id;
    let mut blobs = BTreeMap::new();
    let c = loop {
        let c = bundle::chain(
            &t.location,
            &mappings(),
            &t.metadata_location,
            &md_bytes,
            &[snap],
            &blobs,
        )
        .unwrap();
        if c.done {
            break c;
        }
        for k in c.wanted {
            blobs.insert(
                k.clone(),
                std::fs::read(vpath(&rel(t, &k)).unwrap()).unwrap(),
            );
        }
    };
    assert!(c.layers.values().any(|l| *l == Layer::Content));
    let md_key = t
        .metadata_location
        .strip_prefix(&format!("{}/", t.location))
        .unwrap()
        .to_owned();
    let mut heads = BTreeMap::new();
    for k in c.layers.keys().chain([&md_key]) {
        heads.insert(k.clone(), head(t, k));
    }
    let req = SealRequest {
        table_location: t.location.clone(),
        mappings: mappings(),
        metadata_uri: t.metadata_location.clone(),
        snapshot_ids: vec![snap],
        candidate_id: format!("q-{snap}"),
        now_ms: t.now_ms,
        heads,
    };
    let b = bundle::seal(&req, &md_bytes, &blobs).unwrap();
    let mut copies = blobs;
    copies.insert(md_key, md_bytes.clone());
    (b, copies, md_bytes)
}

fn heads_now(t: &Table, b: &Bundle) -> BTreeMap<String, Option<ObjectVersion>> {
    b.entries
        .iter()
        .map(|e| (e.key.clone(), head(t, &e.key)))
        .collect()
}

#[test]
fn a_sealed_bundle_verifies_completely_and_round_trips() {
    let t = events();
    let (b, copies, _) = sealed(&t);
    let text = serde_json::to_string(&b).unwrap();
    let b2 = Bundle::parse(&text).unwrap();
    assert_eq!(b2, b);
    let v = bundle::verify(&b, &mappings(), &copies, &heads_now(&t, &b));
    assert!(v.complete, "{:?}", v.problems);
    assert!(!v.content.is_empty());
    // An edited bundle is refused.
    let tampered = text.replace("\"size\":", "\"size\":1");
    assert!(Bundle::parse(&tampered).is_err());
}

#[test]
fn fault_07_a_metadata_bundle_missing_one_layer_keeps_objects_in_quarantine() {
    let t = events();
    let (b, mut copies, _) = sealed(&t);
    let manifest = b
        .entries
        .iter()
        .find(|e| e.layer == Layer::Manifest)
        .unwrap()
        .key
        .clone();
    copies.remove(&manifest);
    let v = bundle::verify(&b, &mappings(), &copies, &heads_now(&t, &b));
    assert!(!v.complete);
    assert!(
        v.problems.iter().any(|p| p.contains("missing layer")),
        "{:?}",
        v.problems
    );
    // A content file gone from the store: not restorable either.
    let (b, copies, _) = sealed(&t);
    let mut heads = heads_now(&t, &b);
    let content = b
        .entries
        .iter()
        .find(|e| e.layer == Layer::Content)
        .unwrap()
        .key
        .clone();
    heads.insert(content.clone(), None);
    let v = bundle::verify(&b, &mappings(), &copies, &heads);
    assert!(
        !v.complete && v.problems.iter().any(|p| p.contains("gone")),
        "{:?}",
        v.problems
    );
    // In the ledger: the restore check is blocked, the object stays quarantined.
    let plan = run_native(t.config(), &HostOptions::for_table(&t))
        .unwrap()
        .plan();
    let mut l = Ledger::new(&plan, 0).unwrap();
    for _ in 0..3 {
        l.begin_step(&plan, t.now_ms).unwrap();
    }
    let key = plan.delete[0].key.clone();
    assert_eq!(l.state_of(&key).unwrap(), ObjectState::Quarantined);
    l.begin_step(&plan, t.now_ms).unwrap();
    let probes = l.probes();
    let obs: Vec<Observation> = probes
        .iter()
        .map(|p| Observation {
            key: p.key.clone(),
            seen: Some(p.expect.clone()),
            blocked: Some(format!("bundle q-1 incomplete: missing layer `{manifest}`")),
        })
        .collect();
    let moves = l.observe(&obs, t.now_ms).unwrap();
    assert!(moves.is_empty());
    assert_eq!(l.state_of(&key).unwrap(), ObjectState::Quarantined);
    assert!(l.object(&key).unwrap().why.contains("missing layer"));
}

#[test]
fn restore_brings_an_expired_snapshot_back_and_the_sweep_keeps_its_files() {
    let t = events();
    let (b, _, md_bytes) = sealed(&t);
    let snap = b.snapshot_ids[0];
    // Expire it (as `expire --commit` would), then restore from the bundle.
    let plan = plan_expiry(
        &ExpiryRequest {
            metadata_location: t.metadata_location.clone(),
            now_ms: t.now_ms + 400 * 86_400_000,
            policy: None,
            context: Context::default(),
            expire_ids: vec![snap],
            dr_metadata: vec![],
        },
        &md_bytes,
    )
    .unwrap();
    assert!(plan.expire.contains(&snap), "{:?}", plan.retain);
    let expired = serde_json::to_vec(&plan.new_metadata).unwrap();
    let restored = bundle::restore_metadata(
        "file:///x/00012.metadata.json",
        &expired,
        &b,
        &md_bytes,
        t.now_ms,
    )
    .unwrap();
    let md = lakesweep::spec::iceberg::TableMetadata::parse("r", &restored).unwrap();
    assert!(md.snapshots.iter().any(|s| s.snapshot_id == snap));
    assert_eq!(md.refs[&format!("restored/{snap}")].snapshot_id, snap);
    // A bundle of another table is refused.
    let mut other = b.clone();
    other.table_uuid = Some("someone-else".into());
    assert!(bundle::restore_metadata("u", &expired, &other, &md_bytes, 0).is_err());
    // Negative control: over the expired document, the sweep would delete
    // files of the bundle (that is what the quarantine protects).
    let expired_uri = format!("{}/metadata/00098-expired.metadata.json", t.location);
    let mut o = HostOptions::for_table(&t);
    o.extra
        .insert(expired_uri.clone(), (expired.clone(), t.now_ms));
    let mut cfg = t.config();
    cfg.metadata_location = expired_uri.clone();
    let mut s = Session::start(cfg).unwrap();
    let before = drive(&mut s, &expired_uri, &o).unwrap();
    let would: Vec<String> = before
        .plan()
        .delete
        .into_iter()
        .map(|d| d.key)
        .filter(|k| b.entries.iter().any(|e| &e.key == k))
        .collect();
    assert!(
        !would.is_empty(),
        "the expiry frees none of the bundle's files"
    );
    // The sweep over the restored document keeps every file of the bundle.
    let dir = std::env::temp_dir().join(format!("lakesweep-restore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let restored_uri = format!("{}/metadata/00099-restored.metadata.json", t.location);
    let mut o = HostOptions::for_table(&t);
    o.extra
        .insert(restored_uri.clone(), (restored.clone(), t.now_ms));
    let mut cfg = t.config();
    cfg.metadata_location = restored_uri.clone();
    let mut s = Session::start(cfg).unwrap();
    let run = drive(&mut s, &restored_uri, &o).unwrap();
    let deleted: std::collections::BTreeSet<String> =
        run.plan().delete.into_iter().map(|d| d.key).collect();
    for e in &b.entries {
        assert!(!deleted.contains(&e.key), "{} would be deleted", e.key);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rewritten_layer_refuses_the_restore_and_a_missing_one_is_put_back() {
    let t = events();
    let (b, copies, _) = sealed(&t);
    let list = b
        .entries
        .iter()
        .find(|e| e.layer == Layer::ManifestList)
        .unwrap()
        .clone();
    // The store holds another object at the list's key (another snapshot's
    // list written over it): restoring would time-travel to other data.
    let mut heads = heads_now(&t, &b);
    let mut other = list.version.clone();
    other.size += 1;
    heads.insert(list.key.clone(), Some(other));
    let v = bundle::verify(&b, &mappings(), &copies, &heads);
    assert!(!v.complete);
    assert!(
        v.problems
            .iter()
            .any(|p| p.contains("rewritten") && p.contains(&list.key)),
        "{:?}",
        v.problems
    );
    // Gone from the store: complete, and the copy is put back.
    let mut heads = heads_now(&t, &b);
    heads.insert(list.key.clone(), None);
    let v = bundle::verify(&b, &mappings(), &copies, &heads);
    assert!(v.complete, "{:?}", v.problems);
    assert_eq!(v.put_back, vec![list.key.clone()]);
    // Not asked at all: the host broke the protocol; never "fine".
    let mut heads = heads_now(&t, &b);
    heads.remove(&list.key);
    let v = bundle::verify(&b, &mappings(), &copies, &heads);
    assert!(!v.complete);
}

#[test]
fn a_bundle_an_earlier_lakesweep_sealed_still_verifies_and_restores() {
    // `tests/golden/legacy/bundle.v1.json`: a bundle of every snapshot of
    // `simple_v1`, as lakesweep 0.1 stored it (snake_case keys).
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/legacy/bundle.v1.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\"last_modified_ms\""));
    let b = Bundle::parse(&text).expect("a v1 bundle is read");
    assert_eq!(
        b.schema,
        bundle::BUNDLE_SCHEMA,
        "carried on as the current schema"
    );
    let t = tables()
        .into_iter()
        .find(|t| t.name == "simple_v1")
        .unwrap();
    assert_eq!(b.table_location, t.location);
    assert!(b.entries.iter().all(|e| e.version.last_modified_ms > 0));
    // Its copies are the fixture's own files: it verifies against the store now.
    let copies: BTreeMap<String, Vec<u8>> = b
        .entries
        .iter()
        .filter(|e| e.sha256.is_some())
        .map(|e| {
            (
                e.key.clone(),
                std::fs::read(vpath(&rel(&t, &e.key)).unwrap()).unwrap(),
            )
        })
        .collect();
    let v = bundle::verify(&b, &mappings(), &copies, &heads_now(&t, &b));
    assert!(v.complete, "{:?}", v.problems);
    // Saved again, it is the current spelling, and reads back the same.
    let again = Bundle::parse(&b.to_json()).unwrap();
    assert_eq!(again, b);
    assert!(b.to_json().contains("\"lastModifiedMs\""));
    // An edited v1 bundle is refused like any other.
    let tampered = text.replacen("\"size\":", "\"size\":1", 1);
    assert!(Bundle::parse(&tampered).is_err());
}
