//! The Pinot/StarTree snapshot-artifact layout, planned natively on the
//! layout tests/fixtures/generate_pinot.py wrote with pyarrow (three
//! deep-store roots), through every row of the retention behaviour.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::pinot::*;
use lakesweep::pinot::plan::{PinotPlan, PlanStatus, SnapshotRole};
use lakesweep::pinot::{accept_pinot_plan, PinotConfig, PinotRequest, PinotSession};
use lakesweep::{Error, ListedObject, UnsafeReason};
use serde_json::Value;

fn ids() -> Vec<String> {
    layout()["completed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["snapshotId"].as_str().unwrap().to_owned())
        .collect()
}

fn segs(p: &PinotPlan) -> Vec<&str> {
    p.delete_segments
        .iter()
        .map(|s| s.segment.as_str())
        .collect()
}

fn role(p: &PinotPlan, id: &str) -> (SnapshotRole, bool) {
    let s = p.snapshots.iter().find(|s| s.snapshot_id == id).unwrap();
    (s.role, s.swept)
}

/// Snapshot ids whose folders the plan deletes.
fn swept_ids(p: &PinotPlan) -> BTreeSet<String> {
    p.delete_objects
        .iter()
        .map(|o| o.snapshot_id.clone())
        .collect()
}

#[test]
fn max_active_versions_two_evicts_four_and_keeps_the_in_progress_batches() {
    let l = layout();
    let mut h = Host::new();
    // Spellings that could aim a delete elsewhere, inside a swept folder.
    let old = l["orphanOld"].as_str().unwrap();
    for odd in ["../../../../x", "a//b", "./y", "z/"] {
        h.extra.push((
            0,
            format!("controller/snapshots/events_OFFLINE/{old}/{odd}"),
            vec![1],
            1,
        ));
    }
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(p.status, PlanStatus::Complete, "{}", p.status_detail);
    assert_eq!(p.stray.len(), 6, "{:?}", p.stray);
    // An odd key written recently still dates its folder: kept whole.
    let mut h2 = Host::new();
    let f = l["failed"].as_str().unwrap();
    h2.extra.push((
        0,
        format!("controller/snapshots/events_OFFLINE/{f}/a//b"),
        vec![1],
        l["nowMs"].as_i64().unwrap() - 3_600_000 * 2,
    ));
    let p2 = h2.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(role(&p2, f), (SnapshotRole::Orphan, false));
    assert!(p.delete_objects.iter().all(|o| !o.key.contains("/./")
        && !o.key.contains("..")
        && !o.key.ends_with('/')
        && !o.key.contains("a//b")));
    let id = ids();
    assert_eq!(p.settings.max_active_versions, 2);
    assert_eq!(p.settings.deleted_segment_retention, "3d");
    assert!(p
        .settings
        .notes
        .iter()
        .any(|n| n.contains("snapshotDirURI")));
    for sid in &id[..4] {
        assert_eq!(role(&p, sid), (SnapshotRole::Evicted, true), "{sid}");
    }
    for sid in &id[4..] {
        assert_eq!(role(&p, sid), (SnapshotRole::Retained, false));
    }
    let inprog = l["inProgress"].as_str().unwrap();
    assert_eq!(role(&p, inprog), (SnapshotRole::InProgress, false));
    assert_eq!(
        role(&p, l["orphanOld"].as_str().unwrap()),
        (SnapshotRole::Orphan, true)
    );
    assert_eq!(
        role(&p, l["failed"].as_str().unwrap()),
        (SnapshotRole::Orphan, true)
    );
    // Written after the oldest retained snapshot completed: kept.
    assert_eq!(
        role(&p, l["orphanNew"].as_str().unwrap()),
        (SnapshotRole::Orphan, false)
    );
    // events_0 is named only by an evicted snapshot and an in-progress
    // batch; events_7 only by a batch: both kept.
    assert_eq!(
        segs(&p),
        ["events_1", "events_2", "events_3", "events_unnamed"]
    );
    // The stray file and the non-canonical folder are kept, and said why.

    assert!(p
        .delete_objects
        .iter()
        .all(|o| !o.key.contains("/0042/") && !o.key.ends_with("README.txt")));
    // All three roots are swept.
    for r in ROOTS {
        assert!(
            p.delete_objects
                .iter()
                .any(|o| o.key.starts_with(&root_uri(r))),
            "{r}"
        );
    }
    // Every object of a swept folder goes, in every root; nothing else.
    let swept = swept_ids(&p);
    let mtimes: BTreeMap<String, i64> = serde_json::from_value(l["mtimes"].clone()).unwrap();
    let expect: BTreeSet<String> = mtimes
        .keys()
        .filter(|k| swept.iter().any(|id| k.contains(&format!("/{id}/"))))
        .cloned()
        .collect();
    let got: BTreeSet<String> = p.delete_objects.iter().map(|o| Host::rel(&o.key)).collect();
    assert_eq!(role(&p, old), (SnapshotRole::Orphan, true));
    assert_eq!(got, expect);
    assert_eq!(p.summary.objects_deleted as usize, expect.len());
    assert_eq!(PinotPlan::from_json(&p.to_json()).unwrap(), p);
}

#[test]
fn max_active_versions_zero_one_two_five() {
    let id = ids();
    for (n, retained, deleted) in [
        ("0", 5, vec!["events_unnamed"]),
        ("1", 5, vec!["events_unnamed"]),
        (
            "2",
            2,
            vec!["events_1", "events_2", "events_3", "events_unnamed"],
        ),
        ("5", 5, vec!["events_unnamed"]),
    ] {
        let p = Host::new()
            .run(config(config_with(&[("maxActiveVersions", Some(n))])))
            .unwrap();
        assert_eq!(p.status, PlanStatus::Complete, "{n}: {}", p.status_detail);
        let kept: Vec<&str> = p
            .snapshots
            .iter()
            .filter(|s| s.role == SnapshotRole::Retained)
            .map(|s| s.snapshot_id.as_str())
            .collect();
        assert_eq!(
            kept,
            id[6 - retained..]
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            "{n}"
        );
        assert_eq!(segs(&p), deleted, "{n}");
        if n == "0" || n == "1" {
            assert!(
                p.settings.notes.iter().any(|x| x.contains("below 2")),
                "{n}"
            );
        }
        // The oldest snapshot's folder goes whenever it is evicted.
        assert_eq!(role(&p, &id[0]), (SnapshotRole::Evicted, true), "{n}");
    }
    // Six retained: nothing evicted; the folders older than the oldest go.
    let p = Host::new()
        .run(config(config_with(&[("maxActiveVersions", Some("6"))])))
        .unwrap();
    assert!(p.snapshots.iter().all(|s| s.role != SnapshotRole::Evicted));
    assert_eq!(segs(&p), ["events_unnamed"]);
}

#[test]
fn a_snapshot_completing_mid_run_is_judged_on_the_new_state() {
    let l = layout();
    let inprog = l["inProgress"].as_str().unwrap().to_owned();
    let now = l["nowMs"].as_i64().unwrap();
    let mut h = Host::new();
    let (ideal, _, active) = base_state();
    let mut a: Value = serde_json::from_str(&active).unwrap();
    a["snapshots"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"snapshotId": inprog, "completedAtMs": now - 600_000}));
    let w = serde_json::json!({"tableNameWithType": "events_OFFLINE", "snapshotId": inprog, "state": "COMPLETED"});
    h.states.push((ideal, w.to_string(), a.to_string()));
    let later = std::fs::read(dir().join("later-final.parquet")).unwrap();
    h.extra.push((
        1,
        format!("controller/snapshots/events_OFFLINE/{inprog}/final.parquet"),
        later,
        now - 600_000,
    ));
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(p.status, PlanStatus::Complete);
    assert_eq!(p.summary.rechecks, 1);
    assert_eq!(p.tokens.active.len(), 7);
    assert_eq!(role(&p, &inprog), (SnapshotRole::Retained, false));
    // The new newest two (6 and 7) name events_5..7: events_0 is no longer
    // protected by a batch, and snapshot 5 is now evicted.
    assert_eq!(
        segs(&p),
        [
            "events_0",
            "events_1",
            "events_2",
            "events_3",
            "events_4",
            "events_unnamed"
        ]
    );
    // Judged on the first state alone, events_4 would have been kept and
    // events_0 too: the recheck is what moved it.
    assert!(h.state_reads >= 3);
}

#[test]
fn a_missing_or_truncated_retained_final_parquet_prunes_nothing() {
    let id = ids();
    let fin =
        |root: &str, i: usize| format!("{root}/snapshots/events_OFFLINE/{}/final.parquet", id[i]);
    // Missing in one root only: the other copy is read.
    let mut h = Host::new();
    h.hide.insert(fin("controller", 5));
    assert_eq!(
        h.run(config(doc("table-config.json"))).unwrap().status,
        PlanStatus::Complete
    );

    let mut cases: Vec<(&str, Host)> = Vec::new();
    let mut h = Host::new();
    h.hide.insert(fin("controller", 5));
    h.hide.insert(fin("server", 5));
    cases.push(("missing", h));
    let mut h = Host::new();
    h.truncate.insert(fin("server", 4));
    cases.push(("truncated", h));
    let mut h = Host::new();
    h.vanish.insert(fin("controller", 4));
    cases.push(("gone when read", h));
    for (what, mut h) in cases {
        let p = h.run(config(doc("table-config.json"))).unwrap();
        assert_eq!(p.status, PlanStatus::Retry, "{what}");
        assert!(
            p.delete_segments.is_empty() && p.delete_objects.is_empty(),
            "{what}"
        );
        assert!(
            p.status_detail.contains("prune nothing"),
            "{what}: {}",
            p.status_detail
        );
        assert!(PinotPlan::from_json(&p.to_json()).is_ok());
        let approval = accept_pinot_plan(&p.to_json(), &p.to_json()).unwrap();
        assert!(approval.segments.is_empty() && approval.objects.is_empty());
    }
    // A truncated batch of the in-progress snapshot: the same.
    let inprog = layout()["inProgress"].as_str().unwrap().to_owned();
    let mut h = Host::new();
    h.truncate.insert(format!(
        "controller/snapshots/events_OFFLINE/{inprog}/batches/batch-0001.parquet"
    ));
    assert_eq!(
        h.run(config(doc("table-config.json"))).unwrap().status,
        PlanStatus::Retry
    );
}

#[test]
fn a_wrong_segment_column_prunes_nothing() {
    for column in ["segment_name", "filePath", "rowCount"] {
        let mut c = config(doc("table-config.json"));
        c.segment_column = Some(column.into());
        let p = Host::new().run(c).unwrap();
        assert_eq!(p.status, PlanStatus::Retry, "{column}: {}", p.status_detail);
        assert!(p.delete_segments.is_empty() && p.delete_objects.is_empty());
    }
}

#[test]
fn disabled_retention_plans_nothing_and_says_why() {
    let c = config(config_with(&[("enabled", Some("false"))]));
    let mut s = PinotSession::start(c).unwrap();
    assert!(s.is_done());
    assert_eq!(s.poll_request(), None);
    let p = s.finish().unwrap();
    assert_eq!(p.status, PlanStatus::Disabled);
    assert!(p.status_detail.contains("disabled"));
}

#[test]
fn another_tables_documents_are_refused() {
    let (ideal, w, a) = base_state();
    for (i, st) in [
        (
            ideal.clone(),
            w.replace("events_OFFLINE", "clicks_OFFLINE"),
            a.clone(),
        ),
        (
            ideal.clone(),
            w.clone(),
            a.replace("events_OFFLINE", "clicks_OFFLINE"),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut h = Host::new();
        h.states = vec![st];
        match h.run(config(doc("table-config.json"))) {
            Err(Error::Unsafe {
                reason: UnsafeReason::ForeignTable,
                ..
            }) => {}
            other => panic!("{i}: {other:?}"),
        }
    }
    // A listing key outside the prefix is the host's bug.
    let mut s = PinotSession::start(config(doc("table-config.json"))).unwrap();
    let Some(PinotRequest::ReadState) = s.poll_request() else {
        panic!()
    };
    let Some(PinotRequest::List(p)) = s.poll_request() else {
        panic!()
    };
    let outside = ListedObject {
        key: format!("{}../x", p),
        size: 1,
        last_modified_ms: 0,
        etag: None,
        version_id: None,
    };
    let dotted = ListedObject {
        key: format!("{p}{}/../../../x", layout()["orphanOld"].as_str().unwrap()),
        ..outside.clone()
    };
    assert!(s
        .handle_page(p.clone(), vec![outside, dotted], true)
        .is_ok());
    let elsewhere = ListedObject {
        key: "file:///elsewhere/x".into(),
        size: 1,
        last_modified_ms: 0,
        etag: None,
        version_id: None,
    };
    let mut s = PinotSession::start(config(doc("table-config.json"))).unwrap();
    s.poll_request();
    let Some(PinotRequest::List(p)) = s.poll_request() else {
        panic!()
    };
    assert!(matches!(
        s.handle_page(p, vec![elsewhere], true),
        Err(Error::Protocol { .. })
    ));
}

#[test]
fn a_table_that_keeps_changing_is_refused() {
    let (ideal, w, a) = base_state();
    let mut h = Host::new();
    // Every state read shows a newer in-progress snapshot.
    h.states = (0..20)
        .map(|i| {
            (
                ideal.clone(),
                w.replace("7340615108342410007", &format!("73406151083424200{i:02}")),
                a.clone(),
            )
        })
        .collect();
    // Each one with a batch (an in-progress snapshot without one is `retry`).
    let batch = std::fs::read(dir().join(
        "deepstore/controller/snapshots/events_OFFLINE/7340615108342410007/batches/batch-0000.parquet",
    ))
    .unwrap();
    let now = layout()["nowMs"].as_i64().unwrap();
    for i in 0..20 {
        h.extra.push((
            0,
            format!("controller/snapshots/events_OFFLINE/73406151083424200{i:02}/batches/batch-0000.parquet"),
            batch.clone(),
            now - 3_600_000,
        ));
    }
    match h.run(config(doc("table-config.json"))) {
        Err(Error::Unsafe {
            reason: UnsafeReason::TableChanging,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn segments_that_appear_or_go_mid_run_are_never_deleted() {
    let (ideal, w, a) = base_state();
    let mut v: Value = serde_json::from_str(&ideal).unwrap();
    let m = v["OFFLINE"].as_object_mut().unwrap();
    m.insert("events_new".into(), serde_json::json!({"s": "ONLINE"}));
    m.remove("events_2");
    let mut h = Host::new();
    h.states.push((v.to_string(), w, a));
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(p.summary.rechecks, 0);
    assert_eq!(segs(&p), ["events_1", "events_3", "events_unnamed"]);
}

#[test]
fn decisions_do_not_depend_on_page_size_or_order() {
    let base = Host::new().run(config(doc("table-config.json"))).unwrap();
    for (size, reverse) in [(1, false), (3, true), (7, false), (1000, true)] {
        let mut h = Host::new();
        h.page_size = size;
        h.reverse = reverse;
        let p = h.run(config(doc("table-config.json"))).unwrap();
        assert_eq!(p.digest, base.digest, "{size} {reverse}");
    }
}

#[test]
fn apply_accepts_only_what_a_fresh_run_agrees_with() {
    let plan = Host::new().run(config(doc("table-config.json"))).unwrap();
    let same = accept_pinot_plan(&plan.to_json(), &plan.to_json()).unwrap();
    assert!(same.granted);
    assert_eq!(same.segment_retention, "3d");
    assert_eq!(same.segments.len(), 4);
    assert_eq!(same.objects.len(), plan.delete_objects.len());
    // Meanwhile a new batch of the in-progress snapshot names events_1,
    // and an evicted snapshot's object was rewritten.
    let inprog = layout()["inProgress"].as_str().unwrap().to_owned();
    let batch = std::fs::read(
        dir()
            .join("deepstore/controller/snapshots/events_OFFLINE")
            .join(ids()[1].clone())
            .join("batches/batch-0001.parquet"),
    )
    .unwrap();
    let mut h = Host::new();
    h.extra.push((
        0,
        format!("controller/snapshots/events_OFFLINE/{inprog}/batches/batch-0002.parquet"),
        batch,
        0,
    ));
    let rewritten = format!("broker/snapshots/events_OFFLINE/{}/routing.json", ids()[0]);
    h.mtimes.insert(rewritten.clone(), 1);
    let fresh = h.run(config(doc("table-config.json"))).unwrap();
    let a = accept_pinot_plan(&plan.to_json(), &fresh.to_json()).unwrap();
    assert!(!a.granted);
    assert!(!a.segments.contains(&"events_2".to_owned()), "{a:?}");
    assert!(a.withheld.iter().any(|w| w.contains("events_2")), "{a:?}");
    assert!(a.withheld.iter().any(|w| w.contains(&rewritten)), "{a:?}");
    assert_eq!(a.objects.len(), plan.delete_objects.len() - 1);
    // An edited plan is refused.
    let edited = plan.to_json().replace("events_unnamed", "events_5");
    assert!(accept_pinot_plan(&edited, &fresh.to_json()).is_err());
    // A fresh run that says retry approves nothing.
    let mut h = Host::new();
    h.truncate.insert(format!(
        "server/snapshots/events_OFFLINE/{}/final.parquet",
        ids()[5]
    ));
    let retry = h.run(config(doc("table-config.json"))).unwrap();
    let a = accept_pinot_plan(&plan.to_json(), &retry.to_json()).unwrap();
    assert!(a.segments.is_empty() && a.objects.is_empty() && !a.granted);
}

mod wit {
    wasmtime::component::bindgen!({ path: "wit", world: "lakesweep" });
}

/// The component (`target/lakesweep.wasm`) in wasmtime, with no imports.
struct Wasm {
    store: wasmtime::Store<()>,
    api: wit::Lakesweep,
    session: wasmtime::component::ResourceAny,
}

impl Wasm {
    fn start(c: &PinotConfig) -> Result<Wasm, String> {
        use wasmtime::component::{Component, Linker};
        // Compiled once per test binary: compiling is what costs.
        static LOADED: std::sync::OnceLock<(wasmtime::Engine, Component)> =
            std::sync::OnceLock::new();
        let (engine, component) = LOADED.get_or_init(|| {
            let engine = wasmtime::Engine::new(&wasmtime::Config::new()).unwrap();
            let path = std::env::var_os("LAKESWEEP_WASM")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/lakesweep.wasm")
                });
            let component = Component::from_file(&engine, &path).unwrap_or_else(|e| {
                panic!("{}: {e} (run scripts/build-component.sh)", path.display())
            });
            (engine, component)
        });
        let mut store = wasmtime::Store::new(engine, ());
        let api = wit::Lakesweep::instantiate(&mut store, component, &Linker::new(engine)).unwrap();
        let cfg = wit::lakesweep::planner::types::PinotConfig {
            roots: c.roots.clone(),
            table_config: c.table_config.clone(),
            now_ms: c.now_ms,
            min_age_ms: c.min_age_ms,
            segment_column: c.segment_column.clone(),
            origin: c.origin.clone(),
        };
        let session = api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_start(&mut store, &cfg)
            .unwrap()
            .map_err(|e| format!("{e:?}"))?;
        Ok(Wasm {
            store,
            api,
            session,
        })
    }

    fn finish(&mut self) -> Result<String, String> {
        let p = self
            .api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_finish(&mut self.store, self.session)
            .unwrap()
            .map_err(|e| format!("{e:?}"))?;
        Ok(p.document)
    }
}

impl PinotPlanner for Wasm {
    type E = String;
    fn poll(&mut self) -> Option<PinotRequest> {
        use wit::lakesweep::planner::types::PinotRequest as R;
        let r = self
            .api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_poll_request(&mut self.store, self.session)
            .unwrap();
        r.map(|r| match r {
            R::ReadState => PinotRequest::ReadState,
            R::List(p) => PinotRequest::List(p),
            R::ReadBlob(u) => PinotRequest::ReadBlob(u),
        })
    }
    fn state(&mut self, ideal: String, w: String, a: String) -> Result<(), String> {
        self.api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_handle_state(&mut self.store, self.session, &ideal, &w, &a)
            .unwrap()
            .map_err(|e| format!("{e:?}"))
    }
    fn page(&mut self, prefix: String, o: Vec<ListedObject>, last: bool) -> Result<(), String> {
        use wit::lakesweep::planner::types as wt;
        let objs: Vec<wt::ListedObject> = o
            .into_iter()
            .map(|o| wt::ListedObject {
                key: o.key,
                version: wt::ObjectVersion {
                    size: o.size,
                    last_modified_ms: o.last_modified_ms,
                    etag: o.etag,
                    version_id: o.version_id,
                },
            })
            .collect();
        self.api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_handle_page(&mut self.store, self.session, &prefix, &objs, last)
            .unwrap()
            .map_err(|e| format!("{e:?}"))
    }
    fn blob(&mut self, uri: String, bytes: Option<Vec<u8>>) -> Result<(), String> {
        let api = self.api.lakesweep_planner_planner().pinot_session();
        match bytes {
            Some(b) => api.call_handle_blob(&mut self.store, self.session, &uri, &b),
            None => api.call_handle_missing(&mut self.store, self.session, &uri),
        }
        .unwrap()
        .map_err(|e| format!("{e:?}"))
    }
    fn is_done(&mut self) -> bool {
        self.api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_is_done(&mut self.store, self.session)
            .unwrap()
    }
}

#[test]
fn the_component_plans_byte_for_byte_like_the_crate() {
    let inprog = layout()["inProgress"].as_str().unwrap().to_owned();
    let id = ids();
    type Setup = Box<dyn Fn(&mut Host)>;
    let scenarios: Vec<(&str, PinotConfig, Setup)> = vec![
        ("base", config(doc("table-config.json")), Box::new(|_| {})),
        (
            "max 5",
            config(config_with(&[("maxActiveVersions", Some("5"))])),
            Box::new(|_| {}),
        ),
        (
            "max 0",
            config(config_with(&[("maxActiveVersions", Some("0"))])),
            Box::new(|_| {}),
        ),
        (
            "disabled",
            config(config_with(&[("enabled", Some("false"))])),
            Box::new(|_| {}),
        ),
        (
            "truncated final",
            config(doc("table-config.json")),
            Box::new(move |h| {
                h.truncate.insert(format!(
                    "server/snapshots/events_OFFLINE/{}/final.parquet",
                    ids()[5]
                ));
            }),
        ),
        (
            "missing final",
            config(doc("table-config.json")),
            Box::new(move |h| {
                for r in ["controller", "server"] {
                    h.hide.insert(format!(
                        "{r}/snapshots/events_OFFLINE/{}/final.parquet",
                        ids()[4]
                    ));
                }
            }),
        ),
        (
            "completes mid-run",
            config(doc("table-config.json")),
            Box::new(move |h| {
                let (ideal, _, active) = base_state();
                let now = layout()["nowMs"].as_i64().unwrap();
                let mut a: Value = serde_json::from_str(&active).unwrap();
                a["snapshots"].as_array_mut().unwrap().push(
                    serde_json::json!({"snapshotId": inprog, "completedAtMs": now - 600_000}),
                );
                let w = serde_json::json!({"tableNameWithType": "events_OFFLINE",
                    "snapshotId": inprog, "state": "COMPLETED"});
                h.states.push((ideal, w.to_string(), a.to_string()));
                let later = std::fs::read(dir().join("later-final.parquet")).unwrap();
                h.extra.push((
                    1,
                    format!("controller/snapshots/events_OFFLINE/{inprog}/final.parquet"),
                    later,
                    now - 600_000,
                ));
            }),
        ),
    ];
    assert_eq!(id.len(), 6);
    for (name, cfg, setup) in scenarios {
        let mut h = Host::new();
        setup(&mut h);
        let native = h.run(cfg.clone()).unwrap().to_json();
        let mut h = Host::new();
        setup(&mut h);
        let mut w = Wasm::start(&cfg).unwrap();
        h.drive(&mut w).unwrap();
        assert_eq!(w.finish().unwrap(), native, "{name}");
    }
    // Fails closed the same way: another table's watermark.
    let (ideal, wm, a) = base_state();
    let mut h = Host::new();
    h.states = vec![(ideal, wm.replace("events_OFFLINE", "clicks_OFFLINE"), a)];
    let mut w = Wasm::start(&config(doc("table-config.json"))).unwrap();
    let e = h.drive(&mut w).unwrap_err();
    assert!(e.contains("ForeignTable"), "{e}");
}

#[test]
fn a_retained_final_parquet_cut_anywhere_never_yields_deletions() {
    let rel = format!("server/snapshots/events_OFFLINE/{}/final.parquet", ids()[4]);
    let bytes = std::fs::read(dir().join("deepstore").join(&rel)).unwrap();
    for cut in 0..bytes.len() {
        let mut h = Host::new();
        h.extra
            .push((0, rel.clone(), bytes[..cut].to_vec(), h.mtimes[&rel]));
        h.hide.insert(rel.clone());
        let p = h.run(config(doc("table-config.json"))).unwrap();
        assert_eq!(p.status, PlanStatus::Retry, "cut at {cut}");
        assert!(p.delete_segments.is_empty() && p.delete_objects.is_empty());
    }
}

mod mutations {
    use super::*;
    use proptest::prelude::*;

    fn inputs() -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = [
            "table-config.json",
            "idealstate.json",
            "watermark.json",
            "active.json",
        ]
        .iter()
        .map(|n| (n.to_string(), doc(n).into_bytes()))
        .collect();
        out.push((
            "later-final.parquet".into(),
            std::fs::read(dir().join("later-final.parquet")).unwrap(),
        ));
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// The safety rule, over maxActiveVersions, page size, order and
        /// the minimum age: no segment a retained snapshot or an in-progress
        /// batch names is deleted, and no object of a retained or
        /// in-progress folder, nor one younger than the minimum age.
        #[test]
        fn nothing_live_is_ever_deleted(max in 0u32..9, page in 1usize..20, reverse in any::<bool>(), age_h in 0i64..300) {
            let l = layout();
            let mut c = config(config_with(&[("maxActiveVersions", Some(&max.to_string()))]));
            c.min_age_ms = Some(age_h * 3_600_000);
            let mut h = Host::new();
            h.page_size = page;
            h.reverse = reverse;
            let p = h.run(c).unwrap();
            let effective = if max < 2 { 5 } else { max as usize };
            let completed = l["completed"].as_array().unwrap();
            let retained = &completed[completed.len().saturating_sub(effective)..];
            let mut live: BTreeSet<String> = retained
                .iter()
                .flat_map(|c| c["segments"].as_array().unwrap().iter())
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            live.extend(l["batchSegments"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()));
            for s in &p.delete_segments {
                prop_assert!(!live.contains(&s.segment), "{} deleted", s.segment);
            }
            let mut folders: BTreeSet<String> = retained.iter().map(|c| c["snapshotId"].as_str().unwrap().to_owned()).collect();
            folders.insert(l["inProgress"].as_str().unwrap().to_owned());
            let now = l["nowMs"].as_i64().unwrap();
            for o in &p.delete_objects {
                prop_assert!(!folders.contains(&o.snapshot_id), "{} deleted", o.key);
                prop_assert!(o.version.last_modified_ms <= now - age_h * 3_600_000);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Any cut, flip or splice of any input: a value or a typed error,
        /// never a panic.
        #[test]
        fn mutated_inputs_never_panic(which in 0usize..5, at in any::<usize>(), byte in any::<u8>(), cut in any::<bool>()) {
            let (name, mut b) = inputs().swap_remove(which);
            if cut {
                b.truncate(at % (b.len() + 1));
            } else if !b.is_empty() {
                let i = at % b.len();
                b[i] ^= byte;
            }
            let text = String::from_utf8_lossy(&b);
            let _ = lakesweep::pinot::artifact::segments(&b, "segmentName");
            let _ = lakesweep::pinot::settings::RetentionSettings::from_table_config(&text);
            let _ = lakesweep::pinot::documents::ideal_state_segments(&text, "events_OFFLINE", "OFFLINE");
            let _ = lakesweep::pinot::documents::Watermark::parse(&text, "events_OFFLINE");
            let _ = lakesweep::pinot::documents::active_snapshots(&text, "events_OFFLINE");
            prop_assert!(!name.is_empty());
        }
    }
}

/// The adversarial cases: what stays must protect its segments, whatever
/// the state documents say or lag.
#[test]
fn what_stays_protects_its_segments_when_the_state_lags_or_lies() {
    let l = layout();
    let now = l["nowMs"].as_i64().unwrap();
    let id = ids();
    let (ideal, w, a) = base_state();
    // A folder whose name is not a canonical id protects what it names.
    let p = Host::new().run(config(doc("table-config.json"))).unwrap();
    assert!(!segs(&p).contains(&"events_legacy"));

    // The plan when the ideal state also names `odd` segments: the same
    // deletions as without them, and a warning for each.
    let with_odd = |odd: [&str; 3]| {
        let mut v: Value = serde_json::from_str(&ideal).unwrap();
        for o in odd {
            v["OFFLINE"][o] = serde_json::json!({"s": "ONLINE"});
        }
        let mut h = Host::new();
        h.states = vec![(v.to_string(), w.clone(), a.clone())];
        let p = h.run(config(doc("table-config.json"))).unwrap();
        assert_eq!(
            segs(&p),
            ["events_1", "events_2", "events_3", "events_unnamed"]
        );
        assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
        p
    };

    // Segment names a URL may resolve elsewhere are never deleted.
    with_odd([".", "..", "a\u{7}b"]);

    // A name equal to a kept segment's up to case, encoding or spaces is a
    // near-miss: kept, with a warning; the unrelated ones still go.
    let p = with_odd(["EVENTS_5", "events%5F6", "events_4 "]);
    assert!(
        p.warnings.iter().all(|w| w.contains("near-miss")),
        "{:?}",
        p.warnings
    );

    // The active list lags: snapshot 9 completed (its final.parquet names
    // events_2) and the watermark moved on, but the list does not hold it.
    let lagging = "7340615108342410009";
    let mut h = Host::new();
    let wm = serde_json::json!({"tableNameWithType": "events_OFFLINE", "snapshotId": "7340615108342410010", "state": "IN_PROGRESS"});
    h.states = vec![(ideal.clone(), wm.to_string(), a.clone())];
    let names_2 = std::fs::read(
        dir()
            .join("deepstore/controller/snapshots/events_OFFLINE")
            .join(&id[1])
            .join("final.parquet"),
    )
    .unwrap();
    h.extra.push((
        0,
        format!("controller/snapshots/events_OFFLINE/{lagging}/final.parquet"),
        names_2.clone(),
        now - 1_800_000,
    ));
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(role(&p, lagging), (SnapshotRole::Orphan, false));
    assert!(!segs(&p).contains(&"events_2"), "{:?}", segs(&p));
    // The former in-progress folder is no longer the watermark's, but it
    // is recent: kept, and its batches still protect events_0.
    assert!(!segs(&p).contains(&"events_0"));

    // COMPLETED but not yet active, without a final.parquet: retry.
    let mut h = Host::new();
    let wm = serde_json::json!({"tableNameWithType": "events_OFFLINE", "snapshotId": l["inProgress"], "state": "COMPLETED"});
    h.states = vec![(ideal.clone(), wm.to_string(), a.clone())];
    assert_eq!(
        h.run(config(doc("table-config.json"))).unwrap().status,
        PlanStatus::Retry
    );

    // IN_PROGRESS for a snapshot the active list already holds: its
    // batches still protect (batch-0001 of snapshot 6 names events_6 only;
    // give it one naming events_2).
    let mut h = Host::new();
    let wm = serde_json::json!({"tableNameWithType": "events_OFFLINE", "snapshotId": id[5], "state": "IN_PROGRESS"});
    h.states = vec![(ideal.clone(), wm.to_string(), a.clone())];
    h.extra.push((
        0,
        format!(
            "controller/snapshots/events_OFFLINE/{}/batches/batch-0009.parquet",
            id[5]
        ),
        names_2,
        now - 7_200_000,
    ));
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert!(!segs(&p).contains(&"events_2"), "{:?}", segs(&p));

    // A completion time after the run's clock (microseconds for ms?) is refused.
    let mut av: Value = serde_json::from_str(&a).unwrap();
    av["snapshots"][5]["completedAtMs"] = (now * 1000).into();
    let mut h = Host::new();
    h.states = vec![(ideal.clone(), w.clone(), av.to_string())];
    assert!(matches!(
        h.run(config(doc("table-config.json"))),
        Err(Error::Malformed { .. })
    ));

    // An odd key landing between the listing and the re-read: judged again.
    let mut h = Host::new();
    h.extra.push((
        2,
        format!("controller/snapshots/events_OFFLINE/{}/x//y", id[0]),
        vec![1],
        now - 100,
    ));
    let p = h.run(config(doc("table-config.json"))).unwrap();
    assert_eq!(p.summary.rechecks, 1);
    assert_eq!(role(&p, &id[0]), (SnapshotRole::Evicted, false));
}

/// Without the root holding the in-progress snapshot's batches (here the
/// controller's), the segments they name would look unnamed: the plan is
/// `retry`, naming the snapshot and the roots read, and deletes nothing.
#[test]
fn an_in_progress_snapshot_without_its_batches_in_any_root_prunes_nothing() {
    let l = layout();
    let inprog = l["inProgress"].as_str().unwrap();
    let mut cfg = config(doc("table-config.json"));
    cfg.roots = vec![root_uri("server"), root_uri("broker")];
    let p = Host::new().run(cfg).unwrap();
    assert_eq!(p.status, PlanStatus::Retry, "{}", p.status_detail);
    assert!(p.status_detail.contains(inprog), "{}", p.status_detail);
    assert!(
        p.status_detail.contains(&root_uri("server")),
        "{}",
        p.status_detail
    );
    assert!(p.delete_segments.is_empty() && p.delete_objects.is_empty());
    // With every root, the same table is planned.
    let p = Host::new().run(config(doc("table-config.json"))).unwrap();
    assert_eq!(p.status, PlanStatus::Complete, "{}", p.status_detail);
}
