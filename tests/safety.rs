//! The safety rules, one test each, plus property tests over random histories
//! and random page splits: nothing referenced is ever a candidate, and the
//! plan does not depend on paging.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::synth::*;
use common::*;
use lakesweep::{
    Error, ListedObject, PageClassifier, PageColumns, SessionConfig, UnsafeReason, Verdict,
};
use proptest::prelude::*;

fn cfg(meta: &str) -> SessionConfig {
    SessionConfig::new(LOC, meta, NOW, RETENTION)
}

fn entries(paths: &[&str]) -> Vec<(i64, i64, String)> {
    paths.iter().map(|p| (1, 0, p.to_string())).collect()
}

fn base() -> (HostOptions, String) {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/a.parquet", "data/b.parquet"]))],
        1,
        UUID,
        OLD,
    );
    (o, meta)
}

fn unsafe_reason(e: Error) -> UnsafeReason {
    match e {
        Error::Unsafe { reason, .. } => reason,
        other => panic!("expected unsafe, got {other}"),
    }
}

#[test]
fn commit_landing_during_the_sweep_demotes_its_files() {
    let (mut o, meta1) = base();
    // A writer uploaded data/late.parquet long ago and commits it while we list.
    o.extra
        .insert(format!("{LOC}/data/late.parquet"), (b"x".to_vec(), OLD));
    let mut later = o.extra.clone();
    let meta2 = write_table(
        &mut later,
        &[
            (1, entries(&["data/a.parquet", "data/b.parquet"])),
            (2, entries(&["data/late.parquet"])),
        ],
        2,
        UUID,
        NOW - 60_000,
    );
    o.extra = later;
    o.pointers = vec![meta2.clone()];
    let run = run_native(cfg(&meta1), &o).unwrap();
    let v = run.verdicts();
    assert_eq!(
        v["data/late.parquet"].verdict,
        Verdict::Demoted,
        "{}",
        v["data/late.parquet"].detail
    );
    let plan = run.plan();
    assert!(plan.delete.iter().all(|d| d.key != "data/late.parquet"));
    assert_eq!(plan.tokens.metadata_location, meta2);
    assert_eq!(plan.summary.rechecks, 1);
    assert!(
        !plan.summary.verdicts.contains_key("candidate")
            || plan.summary.verdicts["candidate"].count == plan.delete.len() as u64
    );
}

#[test]
fn a_table_that_keeps_changing_is_refused() {
    let (mut o, meta1) = base();
    let mut pointers = vec![];
    for v in 2..12 {
        let m = write_table(
            &mut o.extra,
            &[
                (1, entries(&["data/a.parquet"])),
                (v, entries(&["data/a.parquet"])),
            ],
            v as u32,
            UUID,
            OLD,
        );
        pointers.push(m);
    }
    o.pointers = pointers;
    assert_eq!(
        unsafe_reason(run_native(cfg(&meta1), &o).err().unwrap()),
        UnsafeReason::TableChanging
    );
}

#[test]
fn a_metadata_file_of_another_table_refuses_the_whole_plan() {
    let (mut o, meta) = base();
    let mut other = BTreeMap::new();
    let foreign = write_table(
        &mut other,
        &[],
        7,
        "ffffffff-0000-4000-8000-000000000002",
        OLD,
    );
    o.extra.insert(foreign.clone(), other[&foreign].clone());
    o.extra
        .insert(format!("{LOC}/data/orphan.parquet"), (b"x".to_vec(), OLD));
    let e = run_native(cfg(&meta), &o).err().unwrap();
    assert!(e.to_string().contains("belongs to another table"), "{e}");
    assert_eq!(unsafe_reason(e), UnsafeReason::ForeignTable);
}

#[test]
fn an_orphan_metadata_file_of_this_table_is_a_candidate_and_garbage_json_is_kept() {
    let (mut o, meta) = base();
    let mut mine = BTreeMap::new();
    let stray = write_table(&mut mine, &[], 42, UUID, OLD);
    o.extra.insert(stray.clone(), mine[&stray].clone());
    o.extra.insert(
        format!("{LOC}/metadata/99999-torn.metadata.json"),
        (b"{\"format-vers".to_vec(), OLD),
    );
    // Its metadata-log names the pointer's document: from a file-system
    // pointer that means the pointer lags, and nothing is planned.
    let e = run_native(cfg(&meta), &o).unwrap_err();
    assert_eq!(unsafe_reason(e), UnsafeReason::StalePointer);
    // From a catalog (compare-and-set) it is a failed commit's leftover.
    let mut c = cfg(&meta);
    c.pointer_authoritative = true;
    let run = run_native(c, &o).unwrap();
    let v = run.verdicts();
    assert_eq!(
        v["metadata/00042-x.metadata.json"].verdict,
        Verdict::Candidate
    );
    assert_eq!(
        v["metadata/99999-torn.metadata.json"].verdict,
        Verdict::Unverified
    );
}

#[test]
fn near_misses_are_kept_and_reported() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/p=100%25/a.parquet", "data/B.parquet"]))],
        1,
        UUID,
        OLD,
    );
    for k in [
        "data/p=100%/a.parquet",
        "data/p=100%2525/a.parquet",
        "data/b.parquet",
        "data//B.parquet",
        "data/c.parquet",
    ] {
        o.extra.insert(format!("{LOC}/{k}"), (b"x".to_vec(), OLD));
    }
    let run = run_native(cfg(&meta), &o).unwrap();
    let v = run.verdicts();
    for k in [
        "data/p=100%/a.parquet",
        "data/p=100%2525/a.parquet",
        "data/b.parquet",
        "data//B.parquet",
    ] {
        assert_eq!(v[k].verdict, Verdict::NearMiss, "{k}");
    }
    assert_eq!(v["data/p=100%25/a.parquet"].verdict, Verdict::Referenced);
    let plan = run.plan();
    assert_eq!(
        plan.delete
            .iter()
            .map(|d| d.key.as_str())
            .collect::<Vec<_>>(),
        vec!["data/c.parquet"]
    );
    assert!(plan.warnings.iter().any(|w| w.contains("near-miss kept")));
}

#[test]
fn a_listing_where_nothing_referenced_matches_is_refused() {
    // The host lists a copy whose keys were all percent-decoded and upper-cased.
    let (o, meta) = base();
    let mut listed = HostOptions::synthetic();
    for (k, v) in &o.extra {
        let rel = k.strip_prefix(&format!("{LOC}/")).unwrap();
        listed
            .extra
            .insert(format!("{LOC}/{}", rel.to_uppercase()), v.clone());
    }
    // Reads still find the real blobs.
    for (k, v) in &o.extra {
        listed.replace.insert(k.clone(), v.0.clone());
    }
    let e = run_native(cfg(&meta), &listed).err().unwrap();
    assert_eq!(unsafe_reason(e), UnsafeReason::NoReferencedKeyListed);
    // A version hint in that listing (judged referenced by its name alone)
    // does not make it the table's.
    listed.extra.insert(
        format!("{LOC}/metadata/version-hint.text"),
        (b"1".to_vec(), 0),
    );
    let e = run_native(cfg(&meta), &listed).err().unwrap();
    assert_eq!(unsafe_reason(e), UnsafeReason::NoReferencedKeyListed);
    // Listed by names, the same (the hint is settled by its name).
    let mut p = ByName(lakesweep::Session::start(cfg(&meta)).unwrap(), 0);
    let e = drive(&mut p, &meta, &listed).err().unwrap();
    assert_eq!(unsafe_reason(e), UnsafeReason::NoReferencedKeyListed);
    assert_eq!(p.1, 1, "the version hint alone");
}

#[test]
fn a_table_location_with_dot_or_empty_segments_is_refused() {
    let (_, meta) = base();
    for loc in ["s3://b/wh/x/../t", "s3://b/wh/./t", "s3://b/wh//t"] {
        let mut c = cfg(&meta);
        c.table_location = loc.into();
        let e = lakesweep::Session::start(c).err().unwrap();
        assert!(
            e.to_string().contains("`.`, `..` or empty segment"),
            "{loc}: {e}"
        );
    }
}

#[test]
fn location_checks() {
    let (o, meta) = base();
    let wrong = SessionConfig::new(
        "file:///lakesweep-fixtures/synthetic/db/t2",
        &meta,
        NOW,
        RETENTION,
    );
    let e = run_native(wrong, &o).err().unwrap();
    // The refusal names the exact mapping that would plan a moved table.
    let Error::Unsafe { detail, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(
        detail.contains(&format!(
            "location_map {LOC}=file:///lakesweep-fixtures/synthetic/db/t2"
        )),
        "{detail}"
    );
    assert_eq!(unsafe_reason(e), UnsafeReason::LocationMismatch);
    // `startsWith` without the slash: a sibling table's file is a host error, never a candidate.
    let mut o2 = o.clone();
    o2.extra
        .insert(format!("{LOC}2/data/x.parquet"), (b"x".to_vec(), OLD));
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    let e = drive(&mut s, &meta, &o2);
    assert!(e.is_ok(), "the sibling is not listed under the prefix");
    let objs = vec![lakesweep::ListedObject {
        key: format!("{LOC}2/data/x.parquet"),
        size: 1,
        last_modified_ms: OLD,
        etag: None,
        version_id: None,
    }];
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    while let Some(r) = s.poll_request() {
        if let lakesweep::Request::ReadBlob { uri } = r {
            s.handle_blob(uri.clone(), o.extra[&uri].0.clone()).unwrap();
        }
    }
    assert!(matches!(
        s.handle_page(objs, true),
        Err(Error::Protocol { .. })
    ));
    assert!(s.finish().is_err(), "a failed session never seals a plan");
    // A bucket root is never a table location.
    assert!(matches!(
        lakesweep::Session::start(SessionConfig::new("s3://bucket/", &meta, NOW, RETENTION)),
        Err(Error::InvalidOptions { .. })
    ));
}

#[test]
fn bad_input_gives_a_typed_error_and_no_plan() {
    let (o, meta) = base();
    let list = format!("{LOC}/metadata/snap-1.avro");
    let manifest = format!("{LOC}/metadata/m-1.avro");
    let cases: Vec<(&str, String, Vec<u8>)> = vec![
        (
            "truncated manifest",
            manifest.clone(),
            o.extra[&manifest].0[..o.extra[&manifest].0.len() - 3].to_vec(),
        ),
        (
            "manifest one byte short",
            manifest.clone(),
            o.extra[&manifest].0[..o.extra[&manifest].0.len() - 1].to_vec(),
        ),
        (
            "truncated manifest list",
            list.clone(),
            o.extra[&list].0[..o.extra[&list].0.len() - 20].to_vec(),
        ),
        ("wrong magic", list.clone(), b"PAR1garbage".to_vec()),
        (
            "malformed metadata",
            meta.clone(),
            b"{\"format-version\": 2, \"location\": ".to_vec(),
        ),
        (
            "unknown format version",
            meta.clone(),
            String::from_utf8(o.extra[&meta].0.clone())
                .unwrap()
                .replace("\"format-version\":2", "\"format-version\":4")
                .into_bytes(),
        ),
    ];
    for (name, uri, bytes) in cases {
        let mut bad = o.clone();
        bad.replace.insert(uri, bytes);
        let e = run_native(cfg(&meta), &bad)
            .err()
            .unwrap_or_else(|| panic!("{name}: must fail"));
        let ok = match name {
            "unknown format version" => matches!(e, Error::Unsupported { .. }),
            _ => matches!(e, Error::Malformed { .. }),
        };
        assert!(ok, "{name}: {e}");
    }
    let mut missing = o.clone();
    missing.missing.push(manifest);
    assert_eq!(
        unsafe_reason(run_native(cfg(&meta), &missing).err().unwrap()),
        UnsafeReason::MissingMetadata
    );
}

#[test]
fn options_that_would_eat_live_data_are_refused() {
    let (mut o, meta) = base();
    let mut short = cfg(&meta);
    short.file_retention_ms = Some(60_000);
    assert!(matches!(
        lakesweep::Session::start(short),
        Err(Error::InvalidOptions { .. })
    ));
    let text = String::from_utf8(o.extra[&meta].0.clone())
        .unwrap()
        .replace(
            "\"properties\":{}",
            "\"properties\":{\"gc.enabled\":\"false\"}",
        );
    o.extra.get_mut(&meta).unwrap().0 = text.into_bytes();
    assert_eq!(
        unsafe_reason(run_native(cfg(&meta), &o).err().unwrap()),
        UnsafeReason::GcDisabled
    );
}

#[test]
fn protocol_errors_poison_the_session() {
    let (o, meta) = base();
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    assert!(matches!(
        s.handle_blob("file:///nope".into(), vec![]),
        Err(Error::Protocol { .. })
    ));
    assert!(s.poll_request().is_none());
    assert!(s
        .handle_blob(meta.clone(), o.extra[&meta].0.clone())
        .is_err());
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    assert!(matches!(
        s.handle_page(vec![], true),
        Err(Error::Protocol { .. })
    ));
    // Names before the listing was asked for: refused, and the session
    // plans nothing after.
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    assert!(matches!(
        s.handle_names(vec![format!("{LOC}/data/a.parquet")]),
        Err(Error::Protocol { .. })
    ));
    assert!(s.poll_request().is_none());
}

/// A hold whose prefix covers only referenced files matches listed keys
/// whether they were settled by name or judged with their versions: no
/// "matches no listed key" warning either way, and the same plan.
#[test]
fn a_hold_over_keys_settled_by_name_still_matches_them() {
    let (o, meta) = base();
    let mut c = cfg(&meta);
    c.context = Some(r#"{"holds":[{"scope":{"pathPrefix":"data/"},"generation":0}]}"#.into());
    let by_version = run_native(c.clone(), &o).unwrap().plan();
    let mut p = ByName(lakesweep::Session::start(c).unwrap(), 0);
    let by_name = drive(&mut p, &meta, &o).unwrap().plan();
    assert_eq!(
        p.1, 5,
        "two data files, the manifest list, the manifest and the metadata"
    );
    assert!(
        !by_name
            .warnings
            .iter()
            .any(|w| w.contains("matches no listed key")),
        "{:?}",
        by_name.warnings
    );
    assert_eq!(by_name.warnings, by_version.warnings);
    assert_eq!(by_name.digest, by_version.digest);
}

/// Names first: a referenced key is settled by its name whatever the
/// host would have said of its size and time; every other key (young,
/// old, near-miss, hidden, metadata) is asked back for its version; a key
/// outside the table fails the session; names after the last page, too.
#[test]
fn listed_names_settle_only_referenced_keys() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/a.parquet", "data/p=100%25/b.parquet"]))],
        1,
        UUID,
        OLD,
    );
    let mut s = lakesweep::Session::start(cfg(&meta)).unwrap();
    let prefix = loop {
        match s.poll_request().expect("a request") {
            lakesweep::Request::ReadBlob { uri } => {
                s.handle_blob(uri.clone(), read(&uri, &o).unwrap()).unwrap()
            }
            lakesweep::Request::List { prefix } => break prefix,
            r => panic!("{r:?}"),
        }
    };
    let keys: Vec<String> = [
        "data/a.parquet",
        "data/p=100%25/b.parquet",
        "data/p=100%/b.parquet",
        "data/orphan.parquet",
        "data/.hidden.parquet",
        "metadata/00009-stray.metadata.json",
        "metadata/version-hint.text",
        "data/A.parquet",
    ]
    .iter()
    .map(|k| format!("{prefix}{k}"))
    .collect();
    assert_eq!(s.handle_names(keys.clone()).unwrap(), [2, 3, 4, 5, 7]);
    assert!(
        s.drain_decisions().is_empty(),
        "no decision for a key settled by name"
    );
    // The same page twice is answered the same (and counted twice).
    assert_eq!(s.handle_names(keys.clone()).unwrap(), [2, 3, 4, 5, 7]);
    assert!(s.handle_names(vec![]).unwrap().is_empty());
    let mut outside = lakesweep::Session::start(cfg(&meta)).unwrap();
    while let Some(lakesweep::Request::ReadBlob { uri }) = outside.poll_request() {
        outside
            .handle_blob(uri.clone(), read(&uri, &o).unwrap())
            .unwrap();
    }
    let e = outside
        .handle_names(vec!["file:///elsewhere/data/a.parquet".into()])
        .unwrap_err();
    assert!(matches!(e, Error::Protocol { .. }), "{e}");
    assert!(
        outside.handle_page(vec![], true).is_err(),
        "failed for good"
    );
    s.handle_page(vec![], true).unwrap();
    assert!(matches!(
        s.handle_names(vec![keys[0].clone()]),
        Err(Error::Protocol { .. })
    ));
}

#[test]
fn page_mode_gives_the_session_verdicts() {
    for t in tables() {
        let o = HostOptions::for_table(&t);
        assert_page_mode_matches(t.config(), &o, &t.location, &t.name);
        // With a context, the exported keep set carries the protections.
        let mut c = t.config();
        c.context = Some(r#"{"holds":[{"scope":{"pathPrefix":"data/"},"generation":1}]}"#.into());
        let protected = run_native(c.clone(), &o)
            .unwrap()
            .verdicts()
            .values()
            .filter(|d| d.verdict == Verdict::Protected)
            .count();
        assert!(protected > 0, "{}: the hold protects something", t.name);
        assert_page_mode_matches(c, &o, &t.location, &t.name);
    }
}

/// Builds the keep set with a session, exports it, classifies the listing
/// statelessly page by page, and compares with the session's verdicts.
fn assert_page_mode_matches(cfg: SessionConfig, o: &HostOptions, location: &str, name: &str) {
    let run = run_native(cfg.clone(), o).unwrap();
    let mut pc = page_classifier(&cfg);
    assert_eq!(pc.metadata_location(), cfg.metadata_location);
    let listing = list(location, o);
    let mut got = BTreeMap::new();
    for page in listing.chunks(4) {
        // In columns: the same verdict and reason for every object.
        let rows = pc.classify(page.to_vec()).unwrap();
        let cols = pc.classify_columns(PageColumns::of(page).unwrap()).unwrap();
        assert_eq!(cols.verdicts.len(), rows.len(), "{name}");
        for (i, d) in rows.iter().enumerate() {
            assert_eq!(
                (cols.verdicts[i], cols.detail(i)),
                (d.verdict, d.detail.as_str()),
                "{name}: {}",
                d.key
            );
        }
        for d in rows {
            let d = if d.verdict == Verdict::OwnerCheck {
                let obj = page.iter().find(|x| x.key == d.key).unwrap().clone();
                pc.settle_metadata_file(obj, std::fs::read(vpath(&d.key).unwrap()).ok())
                    .unwrap()
            } else {
                d
            };
            got.insert(d.relative_key.clone(), d);
        }
    }
    assert_eq!(got, run.verdicts(), "{name}");
}

/// A page classifier on the keep set a session builds for `cfg`.
fn page_classifier(cfg: &SessionConfig) -> PageClassifier {
    PageClassifier::load(exported_keep_set(cfg)).unwrap()
}

/// Key `key` respelled the ways that sink sweepers: `how` picks one.
fn respell(key: &str, how: usize) -> String {
    let cut = key.rfind('/').unwrap_or(0);
    let (dir, base) = key.split_at(cut);
    match how {
        0 => key.to_owned(),
        1 => format!("{dir}{}", base.to_uppercase()),
        2 => format!("{dir}/{base}"),
        3 => key.replacen('a', "%61", 1),
        4 => format!("{dir}/.{base}"),
        5 => format!("{dir}/x/..{base}"),
        6 => format!("{key}/"),
        7 => key
            .replace(".parquet", ".metadata.json")
            .replace(".avro", ".metadata.json"),
        8 => format!("{dir}/_delta_log{base}"),
        9 => key.replacen("file:///", "file:/", 1),
        10 => format!("{dir}{base}\u{1}"),
        11 => format!("{dir}%2F{}", base.trim_start_matches('/')),
        12 => format!("{dir}/s3:{base}"),
        _ => key.replacen("file:///", "s3://b/", 1),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Page mode in columns gives every object the verdict and reason the
    /// records give, for listed keys respelled the ways that sink sweepers
    /// (case, doubled slashes, encoding, dot segments, folder markers,
    /// control characters, other schemes), young or old, in any page size;
    /// a key that fails one fails the other with the same error.
    #[test]
    fn columns_give_the_record_verdicts_for_any_spelling(
        picks in proptest::collection::vec((0usize..1000, 0usize..14, any::<bool>()), 1..40),
        page in 1usize..9,
    ) {
        let t = &tables()[0];
        let o = HostOptions::for_table(t);
        let pc = page_classifier(&t.config());
        let listing = list(&t.location, &o);
        let objects: Vec<ListedObject> = picks
            .iter()
            .map(|&(i, how, old)| {
                let l = &listing[i % listing.len()];
                ListedObject {
                    key: respell(&l.key, how),
                    size: l.size,
                    last_modified_ms: if old { l.last_modified_ms } else { t.now_ms - 1000 },
                    etag: Some(format!("\"{i}\"")),
                    version_id: None,
                }
            })
            .collect();
        for chunk in objects.chunks(page) {
            let cols = PageColumns::of(chunk).unwrap();
            match (pc.classify(chunk.to_vec()), pc.classify_columns(cols)) {
                (Ok(rows), Ok(cols)) => {
                    prop_assert_eq!(rows.len(), cols.verdicts.len());
                    for (i, d) in rows.iter().enumerate() {
                        prop_assert_eq!(
                            (cols.verdicts[i], cols.detail(i)),
                            (d.verdict, d.detail.as_str()),
                            "{:?}", d.key
                        );
                    }
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "records {:?}, columns {:?}", a.map(|_| ()), b.map(|_| ())),
            }
        }
    }
}

/// A random history: snapshots drawing entries from a pool, plus orphans.
fn history() -> impl Strategy<Value = (Vec<Snap>, Vec<(String, bool)>, usize, u64)> {
    let entry = (0i64..3, 0i64..3, 0usize..24);
    let snap = proptest::collection::vec(entry, 0..8);
    (
        proptest::collection::vec(snap, 1..6),
        proptest::collection::vec((0usize..40, any::<bool>()), 0..12),
        1usize..9,
        1u64..1000,
    )
        .prop_map(|(snaps, orphans, page, seed)| {
            let name = |i: usize| match i % 4 {
                0 => format!("data/f{i}.parquet"),
                1 => format!("data/p=v%25{i}/f.parquet"),
                2 => format!("data/_p=x/f{i}.parquet"),
                _ => format!("data/.h{i}.parquet"),
            };
            let snaps: Vec<Snap> = snaps
                .into_iter()
                .enumerate()
                .map(|(i, es)| {
                    (
                        i as i64 + 1,
                        es.into_iter()
                            .map(|(st, ct, p)| (st, ct, name(p)))
                            .collect(),
                    )
                })
                .collect();
            let orphans = orphans
                .into_iter()
                .map(|(i, old)| (name(i + 100), old))
                .collect();
            (snaps, orphans, page, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn nothing_referenced_is_ever_a_candidate((snaps, orphans, page, seed) in history()) {
        let mut o = HostOptions::synthetic();
        let meta = write_table(&mut o.extra, &snaps, 1, UUID, OLD);
        for (k, old) in &orphans {
            o.extra.entry(format!("{LOC}/{k}")).or_insert((b"x".to_vec(), if *old { OLD } else { NOW - 1000 }));
        }
        let referenced: BTreeSet<String> = snaps
            .iter()
            .flat_map(|(id, es)| {
                let mut v: Vec<String> = es.iter().map(|(_, _, p)| p.clone()).collect();
                v.push(format!("metadata/snap-{id}.avro"));
                v.push(format!("metadata/m-{id}.avro"));
                v
            })
            .chain(std::iter::once("metadata/00001-x.metadata.json".to_owned()))
            .collect();
        let a = run_native(cfg(&meta), &o).unwrap();
        let mut o2 = o.clone();
        o2.page_size = page;
        o2.shuffle = seed;
        let b = run_native(cfg(&meta), &o2).unwrap();
        prop_assert_eq!(&a.plan_json, &b.plan_json);
        prop_assert_eq!(a.verdicts(), b.verdicts());
        let plan = a.plan();
        // Listed by names first, the same deletes under the same seal.
        let mut p = ByName(lakesweep::Session::start(cfg(&meta)).unwrap(), 0);
        let c = drive(&mut p, &meta, &o2).unwrap().plan();
        prop_assert_eq!(&c.delete, &plan.delete);
        prop_assert_eq!(&c.digest, &plan.digest);
        prop_assert_eq!(&c.warnings, &plan.warnings);
        for d in &plan.delete {
            prop_assert!(!referenced.contains(&d.key), "referenced {} is a candidate", d.key);
            prop_assert!(o.extra[&format!("{LOC}/{}", d.key)].1 <= NOW - RETENTION, "young {} is a candidate", d.key);
            // `_p` is a partition field of the synthetic spec: `_p=x/` is not hidden.
            prop_assert!(!d.key.contains("/."), "hidden {} is a candidate", d.key);
        }
        // And garbage really goes: every old, unreferenced, visible orphan is planned.
        let planned: BTreeSet<&str> = plan.delete.iter().map(|d| d.key.as_str()).collect();
        for (k, _) in &orphans {
            let visible = !k.contains("/.");
            let old = o.extra[&format!("{LOC}/{k}")].1 <= NOW - RETENTION;
            if old && visible && !referenced.contains(k) {
                prop_assert!(planned.contains(k.as_str()), "old orphan {} not planned", k);
            }
        }
    }
}

fn policy_doc(uuid: &str, window: &str) -> String {
    format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{uuid}","format":"iceberg"}},
            "fileRetention":{{"orphanSafetyInterval":"{window}","maxWriterDuration":"6h"}}}}"#
    )
}

#[test]
fn holds_and_writers_protect_prefixes_and_the_policy_binds_and_widens() {
    let (mut o, meta) = base();
    for k in [
        "data/case-7/old.parquet",
        "data/_tmp/job-1/part-0.parquet",
        "data/plain-orphan.parquet",
    ] {
        o.extra
            .insert(format!("{LOC}/{k}"), (b"x".to_vec(), NOW - 8 * DAY));
    }
    let verdicts = |c: SessionConfig, o: &HostOptions| run_native(c, o).map(|r| r.verdicts());
    let mut c = cfg(&meta);
    c.context = Some(
        r#"{"holds":[{"scope":{"pathPrefix":"data/case-7/"},"generation":9,"reason":"case 7"}],
            "writers":[{"stagingPrefix":"data/_tmp/job-1/","startedAtMs":0}]}"#
            .into(),
    );
    let v = verdicts(c.clone(), &o).unwrap();
    assert_eq!(v["data/case-7/old.parquet"].verdict, Verdict::Protected);
    assert!(v["data/case-7/old.parquet"].detail.contains("case 7"));
    assert_eq!(
        v["data/_tmp/job-1/part-0.parquet"].verdict,
        Verdict::Protected
    );
    assert_eq!(v["data/plain-orphan.parquet"].verdict, Verdict::Candidate);
    let plan = run_native(c.clone(), &o).unwrap().plan();
    assert_eq!(plan.tokens.hold_generation, 9);
    // With a policy, a writer running past maxWriterDuration is reported.
    let mut cp = c.clone();
    cp.policy = Some(policy_doc(UUID, "3d"));
    let plan = run_native(cp, &o).unwrap().plan();
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("longer than maxWriterDuration")),
        "{:?}",
        plan.warnings
    );

    // A table hold: nothing at all is deleted.
    c.context = Some(r#"{"holds":[{"scope":"table","generation":10}]}"#.into());
    assert!(run_native(c.clone(), &o).unwrap().plan().delete.is_empty());

    // The policy's window is longer than the run's: the 8-day-old orphan is young.
    let mut c = cfg(&meta);
    c.policy = Some(policy_doc(UUID, "10d"));
    let r = run_native(c.clone(), &o).unwrap();
    assert_eq!(
        r.verdicts()["data/plain-orphan.parquet"].verdict,
        Verdict::Young
    );
    assert!(r.plan().tokens.policy_digest.is_some());

    // A policy for another table is refused; so is an inconsistent one.
    c.policy = Some(policy_doc("00000000-0000-4000-8000-000000000000", "10d"));
    let e = run_native(c.clone(), &o).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidOptions { field, .. } if field == "policy.binding.tableUuid"),
        "{e}"
    );
    c.policy = Some(policy_doc(UUID, "2h"));
    assert!(lakesweep::Session::start(c).is_err());
}

#[test]
fn context_naming_snapshots_the_table_lost_refuses_and_dr_metadata_keeps_its_files() {
    // Snapshot 1 referenced a.parquet; the table now has only snapshot 2.
    let mut o = HostOptions::synthetic();
    let old_meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/a.parquet"]))],
        1,
        UUID,
        OLD,
    );
    let meta = write_table(
        &mut o.extra,
        &[(2, entries(&["data/b.parquet"]))],
        2,
        UUID,
        OLD,
    );
    let mut c = cfg(&meta);
    // Without context, a.parquet (only snapshot 1 read it) is garbage.
    let v = run_native(c.clone(), &o).unwrap().verdicts();
    assert_eq!(v["data/a.parquet"].verdict, Verdict::Candidate);
    // A live lease on snapshot 1, which the table no longer has: refuse.
    c.context = Some(format!(
        r#"{{"leases":[{{"snapshotId":1,"owner":"bi","expiresAtMs":{}}}]}}"#,
        NOW + DAY
    ));
    let e = run_native(c.clone(), &o).unwrap_err();
    assert_eq!(unsafe_reason(e), UnsafeReason::ProtectedSnapshotMissing);
    // An expired lease protects nothing and blocks nothing.
    c.context = Some(r#"{"leases":[{"snapshotId":1,"expiresAtMs":0}]}"#.into());
    assert!(run_native(c.clone(), &o).is_ok());
    for ctx in [
        r#"{"holds":[{"scope":{"snapshot":1},"generation":1}]}"#,
        r#"{"holds":[{"scope":{"ref":"audit"},"generation":1}]}"#,
        r#"{"drCheckpoints":[{"snapshotId":1}]}"#,
    ] {
        c.context = Some(ctx.into());
        let e = run_native(c.clone(), &o).unwrap_err();
        assert_eq!(
            unsafe_reason(e),
            UnsafeReason::ProtectedSnapshotMissing,
            "{ctx}"
        );
    }
    // A DR checkpoint by metadata file: its snapshot's files stay, and so does the file.
    c.context = Some(format!(
        r#"{{"drCheckpoints":[{{"metadataFile":"{old_meta}"}}]}}"#
    ));
    let v = run_native(c.clone(), &o).unwrap().verdicts();
    assert_eq!(v["data/a.parquet"].verdict, Verdict::Referenced);
    let rel = old_meta.strip_prefix(&format!("{LOC}/")).unwrap();
    assert_eq!(v[rel].verdict, Verdict::Referenced);
    // Unreadable, it stops the plan.
    o.missing.push(old_meta.clone());
    let e = run_native(c.clone(), &o).unwrap_err();
    assert_eq!(unsafe_reason(e), UnsafeReason::MissingMetadata);
    // Prefixes that could never match are refused, not silently ignored.
    for bad in ["/data/x/", "./data/", "file:/t/data/", ""] {
        let mut c = cfg(&meta);
        c.context = Some(format!(
            r#"{{"holds":[{{"scope":{{"pathPrefix":"{bad}"}},"generation":1}}]}}"#
        ));
        assert!(lakesweep::Session::start(c).is_err(), "{bad}");
    }
}

#[test]
fn a_pointer_that_goes_backwards_is_refused_whichever_read_it_is() {
    let (mut o, meta1) = base();
    let mut later = o.extra.clone();
    let meta2 = write_table(
        &mut later,
        &[
            (1, entries(&["data/a.parquet", "data/b.parquet"])),
            (2, entries(&["data/c.parquet"])),
        ],
        2,
        UUID,
        NOW - 60_000,
    );
    o.extra = later;
    let stale = |r: Result<Run, lakesweep::Error>| match r {
        Err(lakesweep::Error::Unsafe {
            reason: UnsafeReason::StalePointer,
            detail,
        }) => detail,
        other => panic!(
            "not refused as a stale pointer: {:?}",
            other.map(|r| r.plan())
        ),
    };
    // A -> B -> A (the catalog answering an older document while we sweep).
    o.pointers = vec![meta2.clone(), meta1.clone(), meta1.clone()];
    let why = stale(run_native(cfg(&meta1), &o));
    assert!(why.contains("went backwards"), "{why}");
    // Current first, then an older document at the re-check (a lagging
    // replica): the plan is never sealed on the older one.
    o.pointers = vec![meta1.clone(), meta1.clone()];
    let why = stale(run_native(cfg(&meta2), &o));
    assert!(why.contains(&meta1), "{why}");
    // Told what an earlier read of the run named (a plan's pointer, when
    // its deletes are checked): an older document now is refused too...
    o.pointers = vec![meta1.clone()];
    let mut c = cfg(&meta1);
    c.prior_pointers = vec![meta2.clone()];
    stale(run_native(c, &o));
    // ... a newer one, or the same, is not.
    o.pointers = vec![meta2.clone()];
    let mut c = cfg(&meta2);
    c.prior_pointers = vec![meta1.clone(), meta2.clone()];
    assert_eq!(
        run_native(c, &o).unwrap().plan().tokens.metadata_location,
        meta2
    );
    // A prior document deleted since, which the pointer's metadata-log
    // names: it descends from it, fine; one it does not name: refused.
    let mut c = cfg(&meta2);
    c.prior_pointers = vec![format!("{LOC}/metadata/gone.metadata.json")];
    let why = stale(run_native(c, &o));
    assert!(why.contains("cannot be told"), "{why}");
}

#[test]
fn a_mapping_whose_target_is_under_its_source_keeps_the_current_metadata() {
    // The table was restored one level down: metadata names `LOC`, files live at `LOC/restore`.
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/a.parquet"]))],
        1,
        UUID,
        OLD,
    );
    let restored: BTreeMap<String, (Vec<u8>, i64)> = o
        .extra
        .iter()
        .map(|(k, v)| (k.replace(LOC, &format!("{LOC}/restore")), v.clone()))
        .collect();
    o.extra = restored;
    let loc = format!("{LOC}/restore");
    let mut c = SessionConfig::new(&loc, &meta, NOW, RETENTION);
    c.location_map = vec![lakesweep::PathMapping {
        from: LOC.into(),
        to: loc.clone(),
    }];
    let run = run_native(c, &o).unwrap();
    let v = run.verdicts();
    let cur = meta.strip_prefix(&format!("{LOC}/")).unwrap();
    assert_eq!(v[cur].verdict, Verdict::Referenced, "{}", v[cur].detail);
    assert!(run.plan().delete.is_empty());
}

#[test]
fn a_stale_hold_list_refuses_the_sweep() {
    let (o, meta) = base();
    let mut c = cfg(&meta);
    c.policy = Some(policy_doc(UUID, "3d").replace(
        r#""fileRetention""#,
        r#""legalHoldGeneration":20,"fileRetention""#,
    ));
    let e = run_native(c.clone(), &o).unwrap_err();
    assert!(e.to_string().contains("stale"), "{e}");
    c.context = Some(r#"{"holds":[{"scope":{"pathPrefix":"data/x/"},"generation":20}]}"#.into());
    assert!(run_native(c, &o).is_ok());
}

#[test]
fn a_data_root_outside_the_location_is_listed_and_swept_by_the_same_rules() {
    let (o, meta, ext) = table_with_data_root();
    let run = run_native(cfg(&meta), &o).unwrap();
    let plan = run.plan();
    let keys: BTreeSet<String> = plan.delete.iter().map(|d| d.key.clone()).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "data/orphan2.parquet".to_owned(),
            format!("{ext}/data/orphan.parquet"),
        ])
    );
    let v = run.verdicts();
    assert_eq!(
        v[&format!("{ext}/data/a.parquet")].verdict,
        Verdict::Referenced
    );
    assert_eq!(
        v[&format!("{ext}/data/_tmp/upload.parquet")].verdict,
        Verdict::Hidden
    );
    assert_eq!(
        plan.summary.swept_prefixes,
        vec![format!("{LOC}/"), format!("{ext}/data/")]
    );
    // Another table's metadata under that root refuses the plan.
    let (mut o, meta, ext) = table_with_data_root();
    let mut other = BTreeMap::new();
    let foreign = write_table(
        &mut other,
        &[],
        3,
        "ffffffff-0000-4000-8000-000000000009",
        OLD,
    );
    o.extra.insert(
        format!("{ext}/data/metadata/00003-x.metadata.json"),
        other[&foreign].clone(),
    );
    let e = run_native(cfg(&meta), &o).unwrap_err();
    assert_eq!(unsafe_reason(e), UnsafeReason::ForeignTable);
}

#[test]
fn a_hold_spelled_differently_from_the_keys_protects_its_near_misses_and_says_so() {
    for prefix in ["DATA/held/", "data//held/", "data/h%65ld/"] {
        let (mut o, meta) = base();
        o.extra
            .insert(format!("{LOC}/data/held/x.parquet"), (b"x".to_vec(), OLD));
        o.extra
            .insert(format!("{LOC}/data/free.parquet"), (b"x".to_vec(), OLD));
        // A sibling that only shares the prefix's letters is not held.
        o.extra
            .insert(format!("{LOC}/data/heldover.parquet"), (b"x".to_vec(), OLD));
        let mut c = cfg(&meta);
        c.context = Some(format!(
            r#"{{"holds":[{{"scope":{{"pathPrefix":"{prefix}"}},"generation":0}},
                          {{"scope":{{"pathPrefix":"nowhere/"}},"generation":0}}]}}"#
        ));
        let run = run_native(c, &o).unwrap();
        let v = run.verdicts();
        assert_eq!(
            v["data/held/x.parquet"].verdict,
            Verdict::Protected,
            "{prefix}"
        );
        assert!(
            v["data/held/x.parquet"].detail.contains("near-miss"),
            "{prefix}"
        );
        assert_eq!(
            v["data/free.parquet"].verdict,
            Verdict::Candidate,
            "{prefix}"
        );
        assert_eq!(
            v["data/heldover.parquet"].verdict,
            Verdict::Candidate,
            "{prefix}"
        );
        let w = run.plan().warnings;
        assert!(
            w.iter()
                .any(|x| x.contains(prefix) && x.contains("near-misses")),
            "{prefix}: {w:?}"
        );
        assert!(
            w.iter()
                .any(|x| x.contains("`nowhere/` matches no listed key")),
            "{w:?}"
        );
    }
}

/// Kills: dropping either loop over `statistics` / `partition-statistics`
/// in `walk` (src/plan/iceberg.rs), or parsing them to nothing
/// (src/spec/iceberg/metadata.rs): the files would be old, unreferenced
/// candidates.
#[test]
fn statistics_and_partition_statistics_files_are_referenced_not_candidates() {
    let (mut o, meta) = base();
    let stats = "metadata/1-1-0a1b2c3d.stats";
    let puffin = "metadata/snap-1-stats-9f8e.puffin";
    let pstats = "metadata/partition-stats-1-7a6b.parquet";
    let stray = "metadata/stray-never-named.puffin";
    let mut md: serde_json::Value = serde_json::from_slice(&o.extra[&meta].0).unwrap();
    md["statistics"] = serde_json::json!([
        {"snapshot-id": 1, "statistics-path": format!("{LOC}/{puffin}"),
         "file-size-in-bytes": 7, "file-footer-size-in-bytes": 4, "blob-metadata": []},
        {"snapshot-id": 1, "statistics-path": format!("{LOC}/{stats}"),
         "file-size-in-bytes": 7, "file-footer-size-in-bytes": 4, "blob-metadata": []}
    ]);
    md["partition-statistics"] = serde_json::json!([
        {"snapshot-id": 1, "statistics-path": format!("{LOC}/{pstats}"), "file-size-in-bytes": 7}
    ]);
    o.extra.get_mut(&meta).unwrap().0 = serde_json::to_vec(&md).unwrap();
    for k in [stats, puffin, pstats, stray] {
        o.extra
            .insert(format!("{LOC}/{k}"), (b"PFA1xyz".to_vec(), OLD));
    }
    let run = run_native(cfg(&meta), &o).unwrap();
    let v = run.verdicts();
    for k in [stats, puffin] {
        assert_eq!(v[k].verdict, Verdict::Referenced, "{k}: {:?}", v[k]);
        assert!(
            v[k].detail.contains("statistics file of snapshot 1"),
            "{k}: {}",
            v[k].detail
        );
    }
    assert_eq!(v[pstats].verdict, Verdict::Referenced, "{:?}", v[pstats]);
    assert!(
        v[pstats]
            .detail
            .contains("partition statistics file of snapshot 1"),
        "{}",
        v[pstats].detail
    );
    // Control: an old statistics file no metadata names is a candidate.
    assert_eq!(v[stray].verdict, Verdict::Candidate, "{:?}", v[stray]);
    let plan = run.plan();
    let deleted: Vec<&str> = plan.delete.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(deleted, vec![stray]);
}

/// Kills: dropping the `manifest_length` check of a `Purpose::Manifest`
/// read (`ManifestTally::new`, src/plan/iceberg.rs): a manifest replaced by another valid one (here: the list
/// says one byte more than the manifest holds) would be read as if it were
/// the one the snapshot committed.
#[test]
fn a_manifest_whose_size_differs_from_the_lists_manifest_length_is_refused() {
    let (o, meta) = base();
    let list = format!("{LOC}/metadata/snap-1.avro");
    let manifest = format!("{LOC}/metadata/m-1.avro");
    let len = o.extra[&manifest].0.len() as u64;
    for claimed in [len + 1, len - 1] {
        let mut bad = o.clone();
        // The manifest itself is intact and valid; only the length differs.
        bad.extra.get_mut(&list).unwrap().0 =
            avro::manifest_list(1, &[(manifest.clone(), claimed, 0)]);
        let e = run_native(cfg(&meta), &bad)
            .err()
            .unwrap_or_else(|| panic!("length {claimed} of {len}: must fail"));
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
        assert!(
            e.to_string().contains(&format!(
                "manifest is {len} bytes but its manifest list says {claimed}"
            )),
            "{e}"
        );
    }
    // Control: the true length plans.
    let mut good = o.clone();
    good.extra.get_mut(&list).unwrap().0 = avro::manifest_list(1, &[(manifest, len, 0)]);
    run_native(cfg(&meta), &good).unwrap();
}

#[test]
fn only_the_part_below_an_other_root_counts_for_hidden_components() {
    let (o, meta, ext) = table_with_data_root_at("file:///lakesweep-fixtures/synthetic/_landing");
    let run = run_native(cfg(&meta), &o).unwrap();
    let v = run.verdicts();
    let orphan = &v[&format!("{ext}/data/orphan.parquet")];
    assert_eq!(orphan.verdict, Verdict::Candidate, "{}", orphan.detail);
    assert_eq!(
        v[&format!("{ext}/data/_tmp/upload.parquet")].verdict,
        Verdict::Hidden
    );
}

/// Adds an old unreferenced `metadata/00042-x.metadata.json` holding `doc`.
fn with_stray_metadata(doc: serde_json::Value) -> (HostOptions, SessionConfig, String) {
    let (mut o, meta) = base();
    let stray = format!("{LOC}/metadata/00042-x.metadata.json");
    o.extra
        .insert(stray, (serde_json::to_vec(&doc).unwrap(), OLD));
    let mut c = cfg(&meta);
    c.pointer_authoritative = true;
    (o, c, "metadata/00042-x.metadata.json".to_owned())
}

#[test]
fn a_stray_metadata_file_with_our_uuid_is_ours_whatever_location_it_names() {
    let (o, c, rel) = with_stray_metadata(serde_json::json!({
        "format-version": 2, "table-uuid": UUID, "location": "file:///elsewhere/t",
    }));
    let run = run_native(c, &o).unwrap();
    let d = &run.verdicts()[&rel];
    assert_eq!(d.verdict, Verdict::Candidate, "{}", d.detail);
    assert!(
        d.detail
            .starts_with("metadata file of this table that no commit references"),
        "{}",
        d.detail
    );
}

#[test]
fn a_stray_metadata_file_without_uuid_naming_another_location_is_foreign() {
    let (o, c, _) = with_stray_metadata(serde_json::json!({
        "format-version": 1, "location": "file:///elsewhere/t",
    }));
    let e = run_native(c, &o).unwrap_err();
    assert_eq!(unsafe_reason(e), UnsafeReason::ForeignTable);
    // Naming our location it is ours.
    let (o, c, rel) = with_stray_metadata(serde_json::json!({
        "format-version": 1, "location": LOC,
    }));
    let run = run_native(c, &o).unwrap();
    assert_eq!(run.verdicts()[&rel].verdict, Verdict::Candidate);
}

/// A reference on the same scheme whose authority differs from the
/// location's, one of them empty (`file://nas/...` against `file:///...`,
/// `hdfs:///w/t` against `hdfs://nn/w/t`): a reader may resolve it to the
/// location's file system, so the key under the location is kept.
#[test]
fn a_reference_through_another_authority_keeps_the_key_under_the_location() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, entries(&["data/a.parquet"]))],
        1,
        UUID,
        OLD,
    );
    let other = LOC.replacen("file:///", "file://nas/", 1);
    let m = avro::manifest(1, &[(1, 0, format!("{other}/data/a.parquet"))]);
    let m_uri = format!("{LOC}/metadata/m-1.avro");
    let l = avro::manifest_list(1, &[(m_uri.clone(), m.len() as u64, 0)]);
    o.extra.insert(m_uri, (m, OLD));
    o.extra
        .insert(format!("{LOC}/metadata/snap-1.avro"), (l, OLD));
    let v = run_native(cfg(&meta), &o).unwrap().verdicts();
    assert_eq!(
        v["data/a.parquet"].verdict,
        Verdict::Referenced,
        "{:?}",
        v["data/a.parquet"]
    );
}

/// Context rules at their edges: a lease that expires exactly now is no
/// longer live (its missing snapshot does not refuse the plan), and a hold
/// on a snapshot the table still has is honoured, not refused.
#[test]
fn a_lease_ending_now_is_over_and_a_hold_on_a_present_snapshot_is_kept() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(2, entries(&["data/b.parquet"]))],
        2,
        UUID,
        OLD,
    );
    let mut c = cfg(&meta);
    c.context = Some(format!(
        r#"{{"leases":[{{"snapshotId":1,"owner":"bi","expiresAtMs":{NOW}}}]}}"#
    ));
    assert!(
        run_native(c.clone(), &o).is_ok(),
        "a lease ending at now is over"
    );
    c.context = Some(format!(
        r#"{{"leases":[{{"snapshotId":1,"owner":"bi","expiresAtMs":{}}}]}}"#,
        NOW + 1
    ));
    assert!(
        run_native(c.clone(), &o).is_err(),
        "one ms later it is live"
    );
    for hold in [r#"{"snapshot":2}"#, r#"{"ref":"main"}"#] {
        c.context = Some(format!(
            r#"{{"holds":[{{"scope":{hold},"generation":1}}]}}"#
        ));
        let v = run_native(c.clone(), &o).unwrap().verdicts();
        assert_ne!(v["data/b.parquet"].verdict, Verdict::Candidate, "{hold}");
    }
}

/// `base()` with snapshot 1's summary replaced by `summary`.
fn with_summary(summary: serde_json::Value) -> (HostOptions, String) {
    let (mut o, meta) = base();
    let (bytes, t) = o.extra[&meta].clone();
    let mut md: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    md["snapshots"][0]["summary"] = summary;
    o.extra
        .insert(meta.clone(), (serde_json::to_vec(&md).unwrap(), t));
    (o, meta)
}

/// Each summary count is checked on its own (a summary may record only
/// some), the manifest count only against a manifest list, and a snapshot
/// with no count at all is counted and said.
#[test]
fn every_summary_count_is_checked_alone_and_a_summary_without_counts_is_said() {
    use serde_json::json;
    let ok = |s: serde_json::Value| {
        let (o, meta) = with_summary(s.clone());
        run_native(cfg(&meta), &o).unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    let refused = |s: serde_json::Value| {
        let (o, meta) = with_summary(s.clone());
        match run_native(cfg(&meta), &o) {
            Err(Error::Malformed { detail, .. }) => {
                assert!(detail.contains("summary says"), "{detail}")
            }
            other => panic!(
                "{s}: expected a refusal, got {:?}",
                other.map(|r| r.plan().warnings)
            ),
        }
    };
    // Only this snapshot's own change counts.
    ok(json!({"operation": "append", "added-data-files": "2"}));
    refused(json!({"operation": "append", "added-data-files": "3"}));
    // Only the manifest counts (created + kept = entries of the list).
    ok(json!({"operation": "append", "manifests-created": "1", "manifests-kept": "0"}));
    refused(json!({"operation": "append", "manifests-created": "2", "manifests-kept": "0"}));
    // No count at all: planned, and the plan says it could not check.
    let run = ok(json!({"operation": "append"}));
    let plan = run.plan();
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.starts_with("1 snapshots record no totals")),
        "{:?}",
        plan.warnings
    );
}
