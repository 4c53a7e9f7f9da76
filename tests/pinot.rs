//! The Pinot/StarTree snapshot-artifact layout, planned natively on the
//! layout tests/fixtures/generate_pinot.py wrote with pyarrow (three
//! deep-store roots), through every row of the retention behaviour.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lakesweep::pinot::plan::{PinotPlan, PlanStatus, SnapshotRole};
use lakesweep::pinot::{accept_pinot_plan, PinotConfig, PinotRequest, PinotSession};
use lakesweep::{Error, ListedObject, UnsafeReason};
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pinot")
}

fn layout() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("layout.json")).unwrap()).unwrap()
}

fn doc(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap()
}

const ROOTS: [&str; 3] = ["controller", "server", "broker"];

fn root_uri(r: &str) -> String {
    format!("file://{}", dir().join("deepstore").join(r).display())
}

/// The table config with `props` set in its ExternalTableSyncTask map
/// (`None` removes the property).
fn config_with(props: &[(&str, Option<&str>)]) -> String {
    let mut v: Value = serde_json::from_str(&doc("table-config.json")).unwrap();
    let m = v
        .pointer_mut("/task/taskTypeConfigsMap/ExternalTableSyncTask")
        .unwrap()
        .as_object_mut()
        .unwrap();
    for (k, val) in props {
        let key = format!("iceberg.snapshotProcessing.retention.{k}");
        match val {
            Some(x) => m.insert(key, Value::String(x.to_string())),
            None => m.remove(&key),
        };
    }
    v.to_string()
}

fn config(table_config: String) -> PinotConfig {
    PinotConfig {
        roots: ROOTS.iter().map(|r| root_uri(r)).collect(),
        table_config,
        now_ms: layout()["nowMs"].as_i64().unwrap(),
        min_age_ms: 3_600_000,
        segment_column: "segmentName".into(),
        origin: None,
    }
}

type State = (String, String, String);

/// A host over the layout on disk, with the recorded mtimes, that can
/// change the world between rounds (a round starts with each state read).
struct Host {
    mtimes: BTreeMap<String, i64>,
    /// The state answered at each read (the last one repeats).
    states: Vec<State>,
    state_reads: usize,
    /// Layout-relative keys hidden from listings.
    hide: BTreeSet<String>,
    /// Layout-relative keys served cut to half their bytes.
    truncate: BTreeSet<String>,
    /// Layout-relative keys listed but gone when read.
    vanish: BTreeSet<String>,
    /// Objects that appear from a round on: (round, rel, bytes, mtime).
    extra: Vec<(usize, String, Vec<u8>, i64)>,
    page_size: usize,
    reverse: bool,
}

fn base_state() -> State {
    (
        doc("idealstate.json"),
        doc("watermark.json"),
        doc("active.json"),
    )
}

impl Host {
    fn new() -> Host {
        let mtimes = serde_json::from_value(layout()["mtimes"].clone()).unwrap();
        Host {
            mtimes,
            states: vec![base_state()],
            state_reads: 0,
            hide: BTreeSet::new(),
            truncate: BTreeSet::new(),
            vanish: BTreeSet::new(),
            extra: Vec::new(),
            page_size: 1000,
            reverse: false,
        }
    }

    fn rel(uri: &str) -> String {
        let base = format!("file://{}/", dir().join("deepstore").display());
        uri.strip_prefix(&base).unwrap().to_owned()
    }

    fn list(&self, prefix: &str) -> Vec<ListedObject> {
        let rel = Self::rel(prefix);
        let round = self.state_reads;
        let mut out: Vec<ListedObject> = self
            .mtimes
            .iter()
            .filter(|(k, _)| k.starts_with(&rel) && !self.hide.contains(*k))
            .map(|(k, ms)| ListedObject {
                key: format!("{prefix}{}", &k[rel.len()..]),
                size: std::fs::metadata(dir().join("deepstore").join(k))
                    .unwrap()
                    .len(),
                last_modified_ms: *ms,
                etag: None,
                version_id: None,
            })
            .collect();
        for (from, k, bytes, ms) in &self.extra {
            if round >= *from && k.starts_with(&rel) {
                out.push(ListedObject {
                    key: format!("{prefix}{}", &k[rel.len()..]),
                    size: bytes.len() as u64,
                    last_modified_ms: *ms,
                    etag: None,
                    version_id: None,
                });
            }
        }
        if self.reverse {
            out.reverse();
        }
        out
    }

    fn read(&self, uri: &str) -> Option<Vec<u8>> {
        let rel = Self::rel(uri);
        if self.vanish.contains(&rel) {
            return None;
        }
        if let Some((_, _, b, _)) = self.extra.iter().find(|e| e.1 == rel) {
            return Some(b.clone());
        }
        let bytes = std::fs::read(dir().join("deepstore").join(&rel)).ok()?;
        Some(if self.truncate.contains(&rel) {
            bytes[..bytes.len() / 2].to_vec()
        } else {
            bytes
        })
    }

    fn run(&mut self, cfg: PinotConfig) -> Result<PinotPlan, Error> {
        let mut s = PinotSession::start(cfg)?;
        while !s.is_done() {
            let mut asked = Vec::new();
            while let Some(r) = s.poll_request() {
                asked.push(r);
            }
            assert!(
                !asked.is_empty(),
                "a session that is not done asks for something"
            );
            if self.reverse {
                asked.reverse();
            }
            for r in asked {
                match r {
                    PinotRequest::ReadState => {
                        let st = self.states[self.state_reads.min(self.states.len() - 1)].clone();
                        self.state_reads += 1;
                        s.handle_state(st.0, st.1, st.2)?;
                    }
                    PinotRequest::List(p) => {
                        let objs = self.list(&p);
                        let pages: Vec<_> = objs.chunks(self.page_size.max(1)).collect();
                        if pages.is_empty() {
                            s.handle_page(p.clone(), vec![], true)?;
                        }
                        for (i, page) in pages.iter().enumerate() {
                            s.handle_page(p.clone(), page.to_vec(), i + 1 == pages.len())?;
                        }
                    }
                    PinotRequest::ReadBlob(u) => match self.read(&u) {
                        Some(b) => s.handle_blob(u, b)?,
                        None => s.handle_missing(u)?,
                    },
                }
            }
        }
        s.finish()
    }
}

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
        ["events_1", "events_2", "events_3", "events_legacy"]
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
        ("0", 5, vec!["events_legacy"]),
        ("1", 5, vec!["events_legacy"]),
        (
            "2",
            2,
            vec!["events_1", "events_2", "events_3", "events_legacy"],
        ),
        ("5", 5, vec!["events_legacy"]),
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
    assert_eq!(segs(&p), ["events_legacy"]);
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
            "events_legacy"
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
        c.segment_column = column.into();
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
    assert_eq!(segs(&p), ["events_1", "events_3", "events_legacy"]);
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
    let edited = plan.to_json().replace("events_legacy", "events_5");
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
