//! A listing answered in splits (`Session::split_listing`, a
//! `PageClassifier` per split, `Session::handle_split_result`) seals the
//! plan a listing in pages seals, byte for byte, wherever the boundaries
//! fall and in whatever order the splits come back; and a split missing,
//! answered twice, judged with another keep set or pointer, or planning a
//! key the session keeps, plans nothing.

mod common;

use common::*;
use lakesweep::{
    Error, ListedObject, PageClassifier, Request, Session, SessionConfig, TableFormat,
};
use proptest::prelude::*;

/// How a test host answers the splits it cut.
#[derive(Clone, Default)]
struct Cutting {
    /// Keys of the listing each boundary is taken from: every `every`-th
    /// (0: none, one split).
    every: usize,
    /// Extra boundaries, as suffixes of the listed prefix.
    extra: Vec<String>,
    /// Answer the splits newest first.
    reverse: bool,
    /// Leave this split out.
    skip: Option<usize>,
    /// Answer this split twice.
    twice: Option<usize>,
    /// Judge the splits with this keep set instead of the session's.
    keep_set: Option<Vec<u8>>,
    /// Rewrite each partial result's text before handing it over.
    tamper: Option<fn(String) -> String>,
    /// Take each page by name first (`split_names`), versions only for
    /// the keys it does not settle.
    by_name: bool,
}

fn key_of(o: &ListedObject) -> &str {
    &o.key
}

/// Plans `cfg` on the fixtures with every table listing cut as `cut`
/// says; a Delta log's own listing goes in pages.
fn plan_in_splits(cfg: SessionConfig, opts: &HostOptions, cut: &Cutting) -> Result<String, Error> {
    let start = cfg.metadata_location.clone();
    let mut s = Session::start(cfg)?;
    while let Some(r) = s.poll_request() {
        match r {
            Request::ReadBlob { uri } => match read(&uri, opts) {
                Some(b) => s.handle_blob(uri, b)?,
                None => s.handle_missing(uri)?,
            },
            Request::ResolvePointer => s.handle_pointer(Some(start.clone()))?,
            Request::List { prefix } if !s.keep_set_complete() => {
                let objects = list(prefix.trim_end_matches('/'), opts);
                s.handle_page(objects, true)?;
            }
            Request::List { prefix } => answer_in_splits(&mut s, &prefix, opts, cut)?,
        }
    }
    s.finish().map(|p| p.to_json())
}

fn answer_in_splits(
    s: &mut Session,
    prefix: &str,
    opts: &HostOptions,
    cut: &Cutting,
) -> Result<(), Error> {
    let mut objects = list(prefix.trim_end_matches('/'), opts);
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    let mut boundaries: Vec<String> = match cut.every {
        0 => vec![],
        n => objects
            .iter()
            .skip(n - 1)
            .step_by(n)
            .map(|o| o.key.clone())
            .collect(),
    };
    boundaries.extend(cut.extra.iter().map(|e| format!("{prefix}{e}")));
    let splits = s.split_listing(boundaries)?;
    let keep_set = match &cut.keep_set {
        Some(k) => k.clone(),
        None => s.export_keep_set()?,
    };
    let mut order: Vec<usize> = (0..splits.len()).collect();
    if cut.reverse {
        order.reverse();
    }
    if let Some(i) = cut.twice {
        order.push(i);
    }
    for i in order {
        if cut.skip == Some(i) {
            continue;
        }
        // Each split on its own worker: a classifier loaded from the bytes.
        let mut c = PageClassifier::load(keep_set.clone())?;
        c.begin_split(splits[i].clone())?;
        let mine: Vec<ListedObject> = objects
            .iter()
            .filter(|o| splits[i].contains(key_of(o)))
            .cloned()
            .collect();
        for page in mine.chunks(7) {
            let page = if cut.by_name {
                let names = page.iter().map(|o| o.key.clone()).collect();
                let needed = c.split_names(names)?;
                needed.iter().map(|&i| page[i as usize].clone()).collect()
            } else {
                page.to_vec()
            };
            for d in c.split_page(page.clone())? {
                if d.verdict == lakesweep::Verdict::OwnerCheck {
                    let o = page.iter().find(|o| o.key == d.key).unwrap().clone();
                    let bytes = read(&o.key, opts);
                    c.settle_metadata_file(o, bytes)?;
                }
            }
        }
        let mut result = c.end_split()?;
        if let Some(t) = cut.tamper {
            result = t(result);
        }
        s.handle_split_result(result)?;
    }
    Ok(())
}

fn delta_events() -> (SessionConfig, HostOptions) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
    let expect: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("expect.json")).unwrap()).unwrap();
    let location = format!("file://{}", dir.join("events").display());
    let e = &expect["events"];
    let mut o = HostOptions::synthetic();
    o.mtimes = e["mtimes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect();
    o.mtime_base = Some(location.clone());
    let now = e["generated_at_ms"].as_i64().unwrap() + 86_400_000;
    let mut c = SessionConfig::new(&location, "", now, 7 * 86_400_000);
    c.format = TableFormat::Delta;
    (c, o)
}

fn every_table() -> Vec<(String, SessionConfig, HostOptions)> {
    let mut out: Vec<_> = tables()
        .into_iter()
        .map(|t| (t.name.clone(), t.config(), HostOptions::for_table(&t)))
        .collect();
    let (c, o) = delta_events();
    out.push(("delta events".into(), c, o));
    out
}

#[test]
fn splits_seal_the_plan_pages_seal_on_every_fixture() {
    for (name, cfg, opts) in every_table() {
        let pages = run_native(cfg.clone(), &opts).unwrap().plan_json;
        for cut in [
            Cutting::default(),
            Cutting {
                every: 1,
                ..Default::default()
            },
            Cutting {
                every: 3,
                reverse: true,
                ..Default::default()
            },
            Cutting {
                every: 50,
                extra: vec!["data/".into(), "zzz".into(), "metadata/v".into()],
                ..Default::default()
            },
        ] {
            let split = plan_in_splits(cfg.clone(), &opts, &cut)
                .unwrap_or_else(|e| panic!("{name}, every {}: {e}", cut.every));
            assert_eq!(split, pages, "{name}, every {}", cut.every);
        }
    }
}

#[test]
fn a_write_root_outside_the_location_is_cut_and_sealed_too() {
    let (opts, meta, ext) = common::synth::table_with_data_root();
    let cfg = SessionConfig::new(
        common::synth::LOC,
        &meta,
        common::synth::NOW,
        common::synth::RETENTION,
    );
    let pages = run_native(cfg.clone(), &opts).unwrap().plan_json;
    assert!(
        pages.contains(&format!("{ext}/data/orphan.parquet")),
        "{pages}"
    );
    for every in [0, 1, 2] {
        let cut = Cutting {
            every,
            reverse: every == 2,
            ..Default::default()
        };
        assert_eq!(
            plan_in_splits(cfg.clone(), &opts, &cut).unwrap(),
            pages,
            "every {every}"
        );
    }
}

#[test]
fn splits_by_name_seal_the_plan_a_listing_by_name_seals() {
    for (name, cfg, opts) in every_table() {
        let start = cfg.metadata_location.clone();
        let mut s = ByName(Session::start(cfg.clone()).unwrap(), 0);
        let by_name = drive(&mut s, &start, &opts).unwrap().plan_json;
        assert!(s.1 > 0, "{name}: some keys settled by name");
        let cut = Cutting {
            every: 4,
            by_name: true,
            reverse: true,
            ..Default::default()
        };
        let split = plan_in_splits(cfg, &opts, &cut).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(split, by_name, "{name}");
    }
}

#[test]
fn a_split_missing_or_answered_twice_plans_nothing() {
    let t = &tables()[0];
    let (cfg, opts) = (t.config(), HostOptions::for_table(t));
    let e = plan_in_splits(
        cfg.clone(),
        &opts,
        &Cutting {
            every: 4,
            skip: Some(2),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Protocol { .. }), "{e:?}");
    assert!(e.to_string().contains("never came back (split 2)"), "{e}");
    let e = plan_in_splits(
        cfg,
        &opts,
        &Cutting {
            every: 4,
            twice: Some(1),
            ..Default::default()
        },
    )
    .unwrap_err();
    // The listing was complete before the repeat: it comes after the last
    // page, or as a second answer of split 1.
    assert!(matches!(e, Error::Protocol { .. }), "{e:?}");
}

#[test]
fn a_split_judged_with_another_keep_set_or_pointer_plans_nothing() {
    let ts = tables();
    let t = &ts[0];
    let (cfg, opts) = (t.config(), HostOptions::for_table(t));
    // Another table's keep set: another pointer.
    let other = ts.iter().find(|o| o.location != t.location).unwrap();
    let foreign = exported_keep_set(&other.config());
    let e = plan_in_splits(
        cfg.clone(),
        &opts,
        &Cutting {
            keep_set: Some(foreign),
            ..Default::default()
        },
    )
    .unwrap_err();
    // Its classifier refuses the split's prefix, or the session its pointer.
    assert!(
        matches!(e, Error::Protocol { .. } | Error::Unsafe { .. }),
        "{e:?}"
    );
    // The same table with another retention: the same pointer, another keep set.
    let mut longer = cfg.clone();
    longer.file_retention_ms = Some(cfg.file_retention_ms.unwrap() * 2);
    let e = plan_in_splits(
        cfg,
        &opts,
        &Cutting {
            keep_set: Some(exported_keep_set(&longer)),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("another keep set"), "{e}");
}

#[test]
fn a_split_cannot_plan_what_the_session_keeps_or_count_outside_itself() {
    let t = &tables()[0];
    let (cfg, opts) = (t.config(), HostOptions::for_table(t));
    // The current metadata document slipped into a result's candidates.
    fn plant(r: String) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&r).unwrap();
        let key = v["metadataLocation"].as_str().unwrap().to_owned();
        v["candidates"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "key": key, "verdict": "candidate", "size": 1, "lastModifiedMs": 0,
                "etag": null, "versionId": null
            }));
        v.to_string()
    }
    let e = plan_in_splits(
        cfg.clone(),
        &opts,
        &Cutting {
            tamper: Some(plant),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("the session judges it referenced"),
        "{e}"
    );
    // A result claiming another split's range.
    fn widen(r: String) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&r).unwrap();
        v["split"]["through"] = serde_json::Value::Null;
        v.to_string()
    }
    let e = plan_in_splits(
        cfg,
        &opts,
        &Cutting {
            every: 5,
            tamper: Some(widen),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("answers no split"), "{e}");
}

/// The session up to its table listing request: (session, prefix).
fn at_listing(t: &Table) -> (Session, String) {
    let mut s = Session::start(t.config()).unwrap();
    let opts = HostOptions::for_table(t);
    while let Some(r) = s.poll_request() {
        match r {
            Request::ReadBlob { uri } => s
                .handle_blob(uri.clone(), read(&uri, &opts).unwrap())
                .unwrap(),
            Request::List { prefix } => return (s, prefix),
            other => panic!("{other:?}"),
        }
    }
    panic!("no listing asked for")
}

#[test]
fn a_listing_in_pages_and_in_splits_do_not_mix() {
    let t = &tables()[0];
    // Cut after a page: refused.
    let (mut s, prefix) = at_listing(t);
    s.handle_page(vec![], false).unwrap();
    let e = s.split_listing(vec![]).unwrap_err();
    assert!(e.to_string().contains("under way already"), "{e}");
    // A page after the cut: refused, and the session fails.
    let (mut s, prefix2) = at_listing(t);
    assert_eq!(prefix, prefix2);
    s.split_listing(vec![format!("{prefix}data/")]).unwrap();
    assert!(s.handle_page(vec![], true).is_err());
    assert!(s.finish().is_err());
    // A boundary outside the prefix, and a cut before any listing.
    let (mut s, _) = at_listing(t);
    let e = s
        .split_listing(vec!["file:///elsewhere/x".into()])
        .unwrap_err();
    assert!(
        e.to_string().contains("not a key under the listed prefix"),
        "{e}"
    );
    let mut fresh = Session::start(t.config()).unwrap();
    assert!(fresh.split_listing(vec![]).is_err());
    // A session checking a ledger's deleted keys lists in pages.
    let plan = run_native(t.config(), &HostOptions::for_table(t))
        .unwrap()
        .plan();
    let ledger = lakesweep::Ledger::new(&plan, 86_400_000).unwrap();
    let mut cfg = t.config();
    cfg.deleted_index = Some(ledger.deleted_index());
    let mut s = Session::start(cfg).unwrap();
    let opts = HostOptions::for_table(t);
    while let Some(r) = s.poll_request() {
        match r {
            Request::ReadBlob { uri } => s
                .handle_blob(uri.clone(), read(&uri, &opts).unwrap())
                .unwrap(),
            Request::List { .. } => break,
            other => panic!("{other:?}"),
        }
    }
    let e = s.split_listing(vec![]).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any boundaries, keys or not, any order of the splits: the same plan.
    #[test]
    fn any_boundaries_seal_the_same_plan(
        extra in proptest::collection::vec("[a-z/=._0-9-]{1,12}", 0..12),
        every in 0usize..9,
        reverse in any::<bool>(),
    ) {
        let t = &tables()[0];
        let (cfg, opts) = (t.config(), HostOptions::for_table(t));
        let pages = run_native(cfg.clone(), &opts).unwrap().plan_json;
        let split = plan_in_splits(cfg, &opts, &Cutting { every, extra, reverse, ..Default::default() }).unwrap();
        prop_assert_eq!(split, pages);
    }
}

#[test]
fn a_split_refuses_names_out_of_order_and_versions_it_never_named() {
    let t = &tables()[0];
    let (mut s, prefix) = at_listing(t);
    let splits = s.split_listing(vec![format!("{prefix}data/")]).unwrap();
    let keep_set = s.export_keep_set().unwrap();
    let mut c = PageClassifier::load(keep_set.clone()).unwrap();
    c.begin_split(splits[1].clone()).unwrap();
    let e = c
        .split_names(vec![format!("{prefix}data/b"), format!("{prefix}data/a")])
        .unwrap_err();
    assert!(e.to_string().contains("ascending byte order"), "{e}");
    // The failed split is closed: nothing more is taken into it, and its
    // refusal waits to be taken.
    assert!(c.end_split().is_err());
    assert!(c.split_refusal().is_some());
    // A version for a key before the last name: refused.
    c.begin_split(splits[1].clone()).unwrap();
    let needed = c
        .split_names(vec![format!("{prefix}data/x"), format!("{prefix}data/y")])
        .unwrap();
    assert_eq!(needed, vec![0, 1], "unreferenced names need their versions");
    let early = ListedObject {
        key: format!("{prefix}data/w"),
        size: 1,
        last_modified_ms: 0,
        etag: None,
        version_id: None,
    };
    assert!(c.split_page(vec![early]).is_err());
    // A key of the first split in the second: refused.
    let mut c = PageClassifier::load(keep_set).unwrap();
    c.begin_split(splits[1].clone()).unwrap();
    assert!(c.split_names(vec![format!("{prefix}a")]).is_err());
}

#[test]
fn a_newer_metadata_document_a_split_finds_refuses_the_plan_as_pages_do() {
    use common::synth::{write_table, LOC, NOW, OLD, RETENTION, UUID};
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, vec![(1, 0, "data/a.parquet".to_owned())])],
        1,
        UUID,
        OLD,
    );
    // A document of this table whose metadata-log names the pointer's: the
    // pointer lags behind the table.
    let mut mine = std::collections::BTreeMap::new();
    let newer = write_table(&mut mine, &[], 42, UUID, OLD);
    o.extra.insert(newer.clone(), mine[&newer].clone());
    let cfg = SessionConfig::new(LOC, &meta, NOW, RETENTION);
    let pages = run_native(cfg.clone(), &o).unwrap_err();
    for every in [0, 1] {
        let e = plan_in_splits(
            cfg.clone(),
            &o,
            &Cutting {
                every,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e, pages, "every {every}");
        assert!(
            matches!(
                e,
                Error::Unsafe {
                    reason: lakesweep::UnsafeReason::StalePointer,
                    ..
                }
            ),
            "{e:?}"
        );
    }
}

#[test]
fn an_owner_check_is_settled_on_the_version_listed_and_no_other() {
    let t = &tables()[0];
    let opts = HostOptions::for_table(t);
    let (mut s, prefix) = at_listing(t);
    let splits = s.split_listing(vec![]).unwrap();
    let mut c = PageClassifier::load(s.export_keep_set().unwrap()).unwrap();
    c.begin_split(splits[0].clone()).unwrap();
    let mut objects = list(prefix.trim_end_matches('/'), &opts);
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    let checks: Vec<ListedObject> = c
        .split_page(objects.clone())
        .unwrap()
        .into_iter()
        .filter(|d| d.verdict == lakesweep::Verdict::OwnerCheck)
        .map(|d| objects.iter().find(|o| o.key == d.key).unwrap().clone())
        .collect();
    let listed = checks
        .first()
        .expect("the fixture lists an unreferenced metadata document")
        .clone();
    let bytes = read(&listed.key, &opts);
    // A later version (older, say: now a candidate) is not the one listed.
    let mut other = listed.clone();
    other.last_modified_ms -= 30 * 86_400_000;
    let e = c.settle_metadata_file(other, bytes.clone()).unwrap_err();
    assert!(e.to_string().contains("other than the one listed"), "{e}");
    // The failure refused the split: it is closed, its refusal waits.
    assert!(c.split_refusal().is_some());
    assert!(c.end_split().is_err());
    c.begin_split(splits[0].clone()).unwrap();
    c.split_page(objects).unwrap();
    for o in checks {
        let b = read(&o.key, &opts);
        c.settle_metadata_file(o, b).unwrap();
    }
    assert!(c.end_split().is_ok());
}

/// A worker whose classifier refused its split (here: another table's
/// metadata document in it) sends the refusal in the split's place; the
/// session fails with the worker's error, and stays failed: a worker run
/// again after the document vanished cannot answer the split instead. A
/// refusal naming a split never cut, or one that does not parse, fails it
/// too.
#[test]
fn a_split_refused_on_its_worker_fails_the_session_for_good() {
    let ts = tables();
    let t = ts.iter().find(|t| t.name == "events").unwrap();
    let other = ts.iter().find(|t| t.name == "simple_v1").unwrap();
    let clean = HostOptions::for_table(t);
    let mut opts = clean.clone();
    let foreign = format!("{}/data/00000-foreign.metadata.json", t.location);
    let doc = read(&other.metadata_location, &HostOptions::for_table(other)).unwrap();
    opts.extra
        .insert(foreign.clone(), (doc, t.now_ms - 10 * 86_400_000));
    let listed = |o: &HostOptions, prefix: &str| {
        let mut v = list(prefix.trim_end_matches('/'), o);
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    };
    let refuse = |s: &mut Session, prefix: &str| {
        let splits = s.split_listing(vec![]).unwrap();
        let keep_set = s.export_keep_set().unwrap();
        let mut c = PageClassifier::load(keep_set.clone()).unwrap();
        c.begin_split(splits[0].clone()).unwrap();
        let objects = listed(&opts, prefix);
        for d in c.split_page(objects.clone()).unwrap() {
            if d.verdict == lakesweep::Verdict::OwnerCheck {
                let o = objects.iter().find(|o| o.key == d.key).unwrap().clone();
                let bytes = read(&o.key, &opts);
                if let Err(e) = c.settle_metadata_file(o, bytes) {
                    assert!(
                        matches!(
                            e,
                            Error::Unsafe {
                                reason: lakesweep::UnsafeReason::ForeignTable,
                                ..
                            }
                        ),
                        "{e}"
                    );
                    break;
                }
            }
        }
        // No split begins while the refusal waits: a second could replace it.
        let e = c.begin_split(splits[0].clone()).unwrap_err();
        assert!(e.to_string().contains("take its refusal"), "{e}");
        let refusal = c.split_refusal().expect("the split was refused");
        assert!(c.split_refusal().is_none(), "a refusal is taken once");
        (splits, keep_set, refusal)
    };

    let (mut s, prefix) = at_listing(t);
    let (splits, keep_set, refusal) = refuse(&mut s, &prefix);
    let e = s.handle_split_result(refusal).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: lakesweep::UnsafeReason::ForeignTable,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains(&format!(
            "split 0 of 1 under `{prefix}` was refused on its worker: "
        )),
        "{e}"
    );
    // The retry, the document gone: a clean result, and still no plan.
    let mut c = PageClassifier::load(keep_set).unwrap();
    c.begin_split(splits[0].clone()).unwrap();
    let objects = listed(&clean, &prefix);
    for d in c.split_page(objects.clone()).unwrap() {
        if d.verdict == lakesweep::Verdict::OwnerCheck {
            let o = objects.iter().find(|o| o.key == d.key).unwrap().clone();
            let bytes = read(&o.key, &clean);
            c.settle_metadata_file(o, bytes).unwrap();
        }
    }
    let clean_result = c.end_split().unwrap();
    assert_eq!(s.handle_split_result(clean_result).unwrap_err(), e);
    assert_eq!(s.finish().unwrap_err(), e);

    // A refusal of a split this session never cut fails it too.
    let (mut s, prefix) = at_listing(t);
    let (_, _, refusal) = refuse(&mut s, &prefix);
    let forged = refusal.replace("\"index\":0", "\"index\":7");
    assert_ne!(forged, refusal);
    let e = s.handle_split_result(forged).unwrap_err();
    assert!(
        e.to_string().contains("(a split this session did not cut)"),
        "{e}"
    );
    assert!(s.finish().is_err());

    // So does a refusal that does not parse.
    let (mut s, prefix) = at_listing(t);
    let (_, _, refusal) = refuse(&mut s, &prefix);
    let broken = refusal.replace("\"kind\":\"unsafe\"", "\"kind\":\"fine\"");
    assert_ne!(broken, refusal);
    let e = s.handle_split_result(broken).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Protocol {
                reason: lakesweep::ProtocolReason::BadInput,
                ..
            }
        ),
        "{e}"
    );
    assert!(s.finish().is_err());
}
