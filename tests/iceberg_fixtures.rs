//! The generated pyiceberg tables: every planted orphan gets exactly its
//! expected verdict, everything the writer wrote is referenced, and decisions
//! do not depend on page size or order.

mod common;

use common::*;
use lakesweep::Verdict;

#[test]
fn plans_delete_exactly_the_old_planted_orphans() {
    for t in tables() {
        let run = run_native(t.config(), &HostOptions::for_table(&t)).unwrap();
        let plan = run.plan();
        let verdicts = run.verdicts();
        let expected_delete: Vec<&String> = t
            .planted
            .iter()
            .filter(|(_, v)| v.as_str() == "candidate")
            .map(|(k, _)| k)
            .collect();
        let got: Vec<&String> = plan.delete.iter().map(|d| &d.key).collect();
        assert_eq!(got, expected_delete, "{}: delete list", t.name);
        for (rel, want) in &t.planted {
            assert_eq!(
                verdicts[rel].verdict.as_str(),
                want,
                "{}: {rel}: {}",
                t.name,
                verdicts[rel].detail
            );
        }
        for (rel, d) in &verdicts {
            if !t.planted.contains_key(rel) {
                assert_eq!(
                    d.verdict,
                    Verdict::Referenced,
                    "{}: {rel} written by pyiceberg must be referenced",
                    t.name
                );
            }
        }
        assert_eq!(
            verdicts.len(),
            t.mtimes.len(),
            "{}: every listed object has one verdict",
            t.name
        );
        assert_eq!(plan.summary.referenced_not_listed, 0, "{}", t.name);
        assert!(plan.summary.snapshots >= 3);
    }
}

#[test]
fn decisions_do_not_depend_on_paging_or_order() {
    for t in tables() {
        let base = run_native(t.config(), &HostOptions::for_table(&t)).unwrap();
        for (page_size, shuffle) in [(1, 0), (1, 7), (3, 1), (7, 12345), (64, 99)] {
            let mut o = HostOptions::for_table(&t);
            o.page_size = page_size;
            o.shuffle = shuffle;
            let r = run_native(t.config(), &o).unwrap();
            assert_eq!(
                r.plan_json, base.plan_json,
                "{} page {page_size} shuffle {shuffle}",
                t.name
            );
            assert_eq!(r.verdicts(), base.verdicts());
        }
    }
}

#[test]
fn reasons_name_their_evidence() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let run = run_native(t.config(), &HostOptions::for_table(&t)).unwrap();
    let v = run.verdicts();
    let enc = v
        .keys()
        .find(|k| k.starts_with("data/category=100%25/"))
        .expect("encoded partition listed");
    assert_eq!(v[enc].verdict, Verdict::Referenced);
    assert!(v[enc].detail.contains("data file"), "{}", v[enc].detail);
    let snap = v.keys().find(|k| k.starts_with("metadata/snap-")).unwrap();
    assert!(
        v[snap].detail.starts_with("manifest list of snapshot"),
        "{}",
        v[snap].detail
    );
    assert!(v["data/orphan-fresh.parquet"]
        .detail
        .contains("ago; file retention is 3d"));
    assert!(v["data/_SUCCESS"]
        .detail
        .contains("hidden path component `_SUCCESS`"));
    let plan = run.plan();
    eprintln!("{}", serde_json::to_string_pretty(&plan.summary).unwrap());
    assert_eq!(
        plan.summary.verdicts["candidate"].count,
        plan.delete.len() as u64
    );
    assert_eq!(plan.summary.listed.count, t.mtimes.len() as u64);
}
