//! `lakesweep pinot plan|apply` end to end: the layout
//! tests/fixtures/generate_pinot.py wrote with pyarrow, staged with its
//! recorded modification times under three local deep-store roots and on
//! a real S3-compatible server (moto) on 127.0.0.1. No Pinot controller
//! can run here: its REST calls go to a local HTTP server that serves the
//! state documents and records every request.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::Value;

const ROOTS: [&str; 3] = ["controller", "server", "broker"];
const NOW: &str = "2026-11-30T12:00:00Z";

fn layout_dir() -> PathBuf {
    repo().join("tests/fixtures/pinot")
}

/// A staged copy of the layout, with its mtimes.
struct Layout {
    root: PathBuf,
    l: Value,
}

impl Layout {
    fn new(name: &str) -> Layout {
        let root =
            std::env::temp_dir().join(format!("lakesweep-pinot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&layout_dir(), &root);
        let l: Value =
            serde_json::from_slice(&std::fs::read(root.join("layout.json")).unwrap()).unwrap();
        for (rel, ms) in l["mtimes"].as_object().unwrap() {
            set_mtime(&root.join("deepstore").join(rel), ms.as_i64().unwrap());
        }
        Layout { root, l }
    }

    fn state_args(&self) -> Vec<String> {
        let f = |n: &str| self.root.join(n).display().to_string();
        vec![
            "--table-config".into(),
            f("table-config.json"),
            "--ideal-state".into(),
            f("idealstate.json"),
            "--watermark".into(),
            f("watermark.json"),
            "--active".into(),
            f("active.json"),
        ]
    }

    fn roots(&self) -> Vec<String> {
        let mut a = Vec::new();
        for r in ROOTS {
            a.extend([
                "--root".into(),
                self.root.join("deepstore").join(r).display().to_string(),
            ]);
        }
        a
    }

    fn plan_args(&self) -> Vec<String> {
        let mut a = vec!["pinot".into(), "plan".into()];
        a.extend(self.state_args());
        a.extend(self.roots());
        a.extend(["--now".into(), NOW.into()]);
        a
    }

    fn folder(&self, root: &str, id: &str) -> PathBuf {
        self.root
            .join("deepstore")
            .join(root)
            .join("snapshots/events_OFFLINE")
            .join(id)
    }

    fn id(&self, i: usize) -> String {
        self.l["completed"][i]["snapshotId"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn set_mtime(p: &Path, ms: i64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64))
        .unwrap();
}

/// A local HTTP server standing in for the Pinot controller: GET serves
/// the state documents from `docs` (read at request time), DELETE
/// /segments/... answers 200 (404 for names in `absent`); every request
/// line is recorded.
struct Controller {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Controller {
    fn start(docs: PathBuf, absent: &[&str]) -> Controller {
        Self::start_with(docs, absent, &[], None)
    }

    /// Also answers a DELETE of each `redirect.0` with a 307 to the
    /// DELETE of `redirect.1` (a proxy or load balancer re-aiming it);
    /// `halt`: a file written (path, content) as the first segment DELETE
    /// is answered (an operator halting the run between two deletes).
    fn start_with(
        docs: PathBuf,
        absent: &[&str],
        redirect: &[(&str, &str)],
        mut halt: Option<(PathBuf, String)>,
    ) -> Controller {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let redirect: BTreeMap<String, String> = redirect
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let rec = requests.clone();
        let absent: BTreeSet<String> = absent.iter().map(|s| s.to_string()).collect();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut c) = conn else { continue };
                let mut buf = Vec::new();
                let mut byte = [0u8; 1];
                while !buf.ends_with(b"\r\n\r\n") {
                    match c.read(&mut byte) {
                        Ok(1) => buf.push(byte[0]),
                        _ => break,
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let line = head.lines().next().unwrap_or("").to_owned();
                rec.lock().unwrap().push(line.clone());
                let mut parts = line.split(' ');
                let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let file = match path {
                    "/tables/events_OFFLINE" => Some("table-config.json"),
                    "/tables/events_OFFLINE/idealstate" => Some("idealstate.json"),
                    "/tables/events_OFFLINE/externalTable/checkpoint" => Some("watermark.json"),
                    "/tables/events_OFFLINE/externalTable/activeSnapshots" => Some("active.json"),
                    _ => None,
                };
                let (status, body) = match (method, file) {
                    ("GET", Some(f)) => ("200 OK", std::fs::read_to_string(docs.join(f)).unwrap()),
                    ("DELETE", _) if path.starts_with("/segments/") => {
                        if let Some((f, text)) = halt.take() {
                            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                            std::fs::write(f, text).unwrap();
                        }
                        let seg = path
                            .split('/')
                            .nth(3)
                            .unwrap_or("")
                            .split('?')
                            .next()
                            .unwrap_or("");
                        if let Some(to) = redirect.get(seg) {
                            let body = String::new();
                            let _ = write!(
                                c,
                                "HTTP/1.1 307 Temporary Redirect\r\nLocation: /segments/events/{to}?type=OFFLINE\r\nContent-Length: 0\r\nConnection: close\r\n\r\n{body}"
                            );
                            continue;
                        }
                        if absent.contains(seg) {
                            (
                                "404 Not Found",
                                r#"{"error":"Segment not found"}"#.to_owned(),
                            )
                        } else {
                            ("200 OK", format!(r#"{{"status":"Segment {seg} deleted"}}"#))
                        }
                    }
                    _ => ("404 Not Found", "{}".to_owned()),
                };
                let _ = write!(
                    c,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Controller { url, requests }
    }

    fn state_args(&self) -> Vec<String> {
        let t = format!("{}/tables/events_OFFLINE", self.url);
        vec![
            "--table-config".into(),
            t.clone(),
            "--ideal-state".into(),
            format!("{t}/idealstate"),
            "--watermark".into(),
            format!("{t}/externalTable/checkpoint"),
            "--active".into(),
            format!("{t}/externalTable/activeSnapshots"),
        ]
    }

    fn deletes(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("DELETE "))
            .cloned()
            .collect()
    }
}

fn segments(plan: &Value) -> Vec<String> {
    plan["deleteSegments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["segment"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn plan_from_files_and_from_the_controller_agree_and_apply_deletes_exactly_the_plan() {
    let lay = Layout::new("apply");
    let ctl = Controller::start(lay.root.clone(), &["events_unnamed"]);
    let out = lay.root.join("plan.json");
    let mut a = lay.plan_args();
    a.extend(["--out".into(), out.display().to_string()]);
    let o = lakesweep(&a);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for words in [
        "evicted",
        "in-progress",
        "retention 3d",
        "snapshotDirURI",
        "Nothing was deleted",
    ] {
        assert!(text.contains(words), "{words}: {text}");
    }
    let plan: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        segments(&plan),
        ["events_1", "events_2", "events_3", "events_unnamed"]
    );

    // The same documents through the controller's REST answers: the same plan.
    let mut b: Vec<String> = vec!["pinot".into(), "plan".into(), "--json".into()];
    b.extend(ctl.state_args());
    b.extend(lay.plan_args().into_iter().skip(10));
    let via_http = json(&lakesweep(&b));
    assert_eq!(via_http["digest"], plan["digest"]);

    // Dry run: nothing deleted, nothing sent.
    let mut d = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--dry-run".into(),
    ];
    d.extend(lay.state_args());
    d.extend(lay.roots());
    let o = lakesweep(&d);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(ctl.deletes().is_empty());
    assert!(lay.folder("controller", &lay.id(0)).exists());

    let receipts = lay.root.join("receipts.jsonl");
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
        "--receipts".into(),
        receipts.display().to_string(),
    ];
    ap.extend(ctl.state_args());
    // Another set of roots than the plan's: refused before any delete.
    let mut other = ap.clone();
    other.extend(lay.roots().into_iter().take(4));
    let o = lakesweep(&other);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(ctl.deletes().is_empty());
    ap.extend(lay.roots());
    let o = lakesweep(&ap);
    assert!(o.status.success(), "{}", out_text(&o));
    let deletes = ctl.deletes();
    assert_eq!(deletes.len(), 4, "{deletes:?}");
    for s in ["events_1", "events_2", "events_3", "events_unnamed"] {
        assert!(
            deletes.iter().any(|l| l.starts_with(&format!(
                "DELETE /segments/events/{s}?type=OFFLINE&retention=3d "
            ))),
            "{s}: {deletes:?}"
        );
    }
    // Evicted and orphan folders are gone from every root; retained,
    // in-progress, young and stray ones stay.
    for i in 0..4 {
        for r in ROOTS {
            assert!(
                files_under(&lay.folder(r, &lay.id(i))).is_empty(),
                "{r} {i}"
            );
        }
    }
    for id in [
        lay.id(4),
        lay.id(5),
        lay.l["inProgress"].as_str().unwrap().to_owned(),
        lay.l["orphanNew"].as_str().unwrap().to_owned(),
    ] {
        assert!(
            !files_under(&lay.folder("controller", &id)).is_empty()
                || !files_under(&lay.folder("server", &id)).is_empty(),
            "{id}"
        );
    }
    assert!(lay
        .folder("controller", "0042")
        .join("final.parquet")
        .exists());
    let lines: Vec<Value> = std::fs::read_to_string(&receipts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        4 + plan["deleteObjects"].as_array().unwrap().len()
    );
    assert!(lines
        .iter()
        .any(|l| l["segment"] == "events_unnamed" && l["result"] == "already-absent"));
    assert!(lines
        .iter()
        .filter(|l| l["key"].is_string())
        .all(|l| l["result"] == "deleted"));

    // Planned again: nothing left to sweep, the four segments still in the
    // (unchanged) ideal state are planned again, and the artifacts stay.
    let again = json(&lakesweep(
        &[lay.plan_args(), vec!["--json".into()]].concat(),
    ));
    assert!(again["deleteObjects"].as_array().unwrap().is_empty());
}

#[test]
fn apply_withholds_what_the_live_state_now_protects() {
    let lay = Layout::new("withhold");
    let ctl = Controller::start(lay.root.clone(), &[]);
    let out = lay.root.join("plan.json");
    let o = lakesweep(
        &[
            lay.plan_args(),
            vec!["--out".into(), out.display().to_string()],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", out_text(&o));
    // Meanwhile the in-progress snapshot writes a batch that names events_2
    // (a copy of an evicted snapshot's batch), and an evicted snapshot's
    // object is rewritten.
    let inprog = lay.l["inProgress"].as_str().unwrap().to_owned();
    std::fs::copy(
        lay.folder("controller", &lay.id(1))
            .join("batches/batch-0001.parquet"),
        lay.folder("controller", &inprog)
            .join("batches/batch-0002.parquet"),
    )
    .unwrap();
    let rewritten = lay.folder("broker", &lay.id(0)).join("routing.json");
    std::fs::write(&rewritten, b"{\"routing\": \"rewritten\"}").unwrap();
    set_mtime(&rewritten, 1_700_000_000_000);
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
    ];
    ap.extend(lay.state_args());
    ap.extend(lay.roots());
    let o = lakesweep(&ap);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("withheld: segment events_2"), "{text}");
    assert!(
        text.contains("routing.json: changed since the plan was made"),
        "{text}"
    );
    let deletes = ctl.deletes();
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    assert!(!deletes.iter().any(|l| l.contains("/events_2?")));
    assert!(rewritten.exists());
}

#[test]
fn a_truncated_retained_final_parquet_prunes_nothing_and_asks_for_a_retry() {
    let lay = Layout::new("retry");
    for r in ["controller", "server"] {
        let f = lay.folder(r, &lay.id(5)).join("final.parquet");
        let b = std::fs::read(&f).unwrap();
        std::fs::write(&f, &b[..b.len() - 9]).unwrap();
    }
    let o = lakesweep(&[lay.plan_args(), vec!["--json".into()]].concat());
    assert_eq!(o.status.code(), Some(75), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "retry");
    assert!(v["statusDetail"]
        .as_str()
        .unwrap()
        .contains("final.parquet"));
    assert!(segments(&v).is_empty() && v["deleteObjects"].as_array().unwrap().is_empty());
    // And the removed property, a disabled retention: said, nothing planned.
    let cfg = lay.root.join("table-config.json");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "\"iceberg.snapshotProcessing.retention.enabled\": \"true\"",
        "\"iceberg.snapshotProcessing.retention.enabled\": \"false\"",
    );
    std::fs::write(&cfg, text).unwrap();
    let o = lakesweep(&lay.plan_args());
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("(disabled)"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn another_tables_watermark_is_refused() {
    let lay = Layout::new("foreign");
    let w = lay.root.join("watermark.json");
    let text = std::fs::read_to_string(&w)
        .unwrap()
        .replace("events_OFFLINE", "clicks_OFFLINE");
    std::fs::write(&w, text).unwrap();
    let o = lakesweep(&lay.plan_args());
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("foreign-table"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn three_roots_on_an_s3_server() {
    use object_store::path::Path as OPath;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
    let m = moto();
    let bucket = "pinot-deepstore";
    raw(&m, "PUT", &format!("/{bucket}"), "");
    let store = s3_bucket(&m, bucket);
    let lay = Layout::new("s3");
    let deep = lay.root.join("deepstore");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t0 = rt.block_on(async {
        for rel in files_under(&deep) {
            let key = OPath::parse(format!("pinot/{rel}")).unwrap();
            store
                .put(
                    &key,
                    PutPayload::from(std::fs::read(deep.join(&rel)).unwrap()),
                )
                .await
                .unwrap();
        }
        // The store's clock after the uploads: completions come after it.
        let k = OPath::parse("clock-sentinel").unwrap();
        store
            .put(&k, PutPayload::from(b"t".to_vec()))
            .await
            .unwrap();
        store
            .head(&k)
            .await
            .unwrap()
            .last_modified
            .timestamp_millis()
            + 1001
    });
    // Completions more than a second after every upload (stores may list
    // times to the second), and behind the clock when apply runs.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // The active list, completed (in order) after every upload.
    let mut active: Value =
        serde_json::from_str(&std::fs::read_to_string(lay.root.join("active.json")).unwrap())
            .unwrap();
    for (i, s) in active["snapshots"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        s["completedAtMs"] = (t0 + i as i64).into();
    }
    std::fs::write(lay.root.join("active.json"), active.to_string()).unwrap();
    let mut a = vec!["pinot".to_owned(), "plan".into()];
    a.extend(lay.state_args());
    for r in ROOTS {
        a.extend(["--root".into(), format!("s3://{bucket}/pinot/{r}")]);
    }
    let out = lay.root.join("plan.json");
    a.extend([
        "--now".into(),
        (t0 + 100).to_string(),
        "--min-age".into(),
        "0s".into(),
        "--out".into(),
        out.display().to_string(),
        "--json".into(),
    ]);
    let o = lakesweep_with(&m.aws_env(), &a);
    let plan: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", out_text(&o)));
    assert_eq!(plan["status"], "complete", "{}", plan["statusDetail"]);
    assert_eq!(
        segments(&plan),
        ["events_1", "events_2", "events_3", "events_unnamed"]
    );
    let keys: BTreeSet<String> = plan["deleteObjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap().to_owned())
        .collect();
    for r in ROOTS {
        assert!(
            keys.iter()
                .any(|k| k.starts_with(&format!("s3://{bucket}/pinot/{r}/"))),
            "{r}"
        );
    }
    // Every object listed on S3 carries its ETag; apply deletes exactly them.
    assert!(plan["deleteObjects"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["version"]["etag"].is_string()));
    let ctl = Controller::start(lay.root.clone(), &[]);
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
    ];
    ap.extend(lay.state_args());
    for r in ROOTS {
        ap.extend(["--root".into(), format!("s3://{bucket}/pinot/{r}")]);
    }
    ap.extend(["--min-age".into(), "0s".into()]);
    let o = lakesweep_with(&m.aws_env(), &ap);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(ctl.deletes().len(), 4);
    let left: BTreeSet<String> = rt.block_on(async {
        use futures::TryStreamExt;
        store
            .list(Some(&OPath::parse("pinot").unwrap()))
            .map_ok(|o| format!("s3://{bucket}/{}", o.location))
            .try_collect()
            .await
            .unwrap()
    });
    assert!(
        left.is_disjoint(&keys),
        "{:?}",
        left.intersection(&keys).collect::<Vec<_>>()
    );
    assert_eq!(left.len(), files_under(&deep).len() - keys.len());
}

/// A controller (or a proxy before it) that answers a segment DELETE with a
/// redirect to another, live segment: the DELETE is not followed, the
/// segment's receipt is `unknown` (never `deleted`), the run exits 1, and
/// the live segment is never asked to be deleted.
#[test]
fn a_segment_delete_answered_with_a_redirect_is_unknown_and_never_followed() {
    let lay = Layout::new("redirect");
    let ctl = Controller::start_with(lay.root.clone(), &[], &[("events_2", "events_5")], None);
    let out = lay.root.join("plan.json");
    let mut a = lay.plan_args();
    a.extend(["--out".into(), out.display().to_string()]);
    assert!(lakesweep(&a).status.success());
    let receipts = lay.root.join("receipts.jsonl");
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
        "--receipts".into(),
        receipts.display().to_string(),
    ];
    ap.extend(ctl.state_args());
    ap.extend(lay.roots());
    let o = lakesweep(&ap);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let deletes = ctl.deletes();
    assert!(
        deletes.iter().all(|l| !l.contains("/events_5")),
        "the redirect was followed: {deletes:?}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&receipts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |s: &str| lines.iter().find(|l| l["segment"] == s).unwrap().clone();
    assert_eq!(of("events_2")["result"], "unknown", "{lines:?}");
    assert!(
        of("events_2")["detail"]
            .as_str()
            .unwrap()
            .contains("not followed"),
        "{lines:?}"
    );
    assert_eq!(of("events_1")["result"], "deleted");
}

/// Planned with the server root only, while the in-progress snapshot's
/// batches live in the controller's: the segments they name would look
/// unnamed, so the plan is `retry` (exit 3), naming the snapshot and the
/// roots read, and `pinot apply` of it deletes nothing.
#[test]
fn a_run_without_the_root_holding_the_in_progress_batches_is_retry() {
    let lay = Layout::new("one-root");
    let ctl = Controller::start(lay.root.clone(), &[]);
    let inprog = lay.l["inProgress"].as_str().unwrap().to_owned();
    let server = lay.root.join("deepstore/server").display().to_string();
    let out = lay.root.join("plan.json");
    let mut a = vec!["pinot".to_owned(), "plan".into()];
    a.extend(lay.state_args());
    a.extend(["--root".into(), server.clone(), "--now".into(), NOW.into()]);
    a.extend(["--out".into(), out.display().to_string()]);
    let o = lakesweep(&a);
    let text = out_text(&o);
    assert!(text.contains(&inprog) && text.contains("server"), "{text}");
    let plan: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(plan["status"], "retry", "{plan}");
    assert!(segments(&plan).is_empty());
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
        "--root".into(),
        server,
    ];
    ap.extend(ctl.state_args());
    let o = lakesweep(&ap);
    assert_ne!(o.status.code(), Some(0), "{}", out_text(&o));
    assert!(ctl.deletes().is_empty());
}

/// A fleet halt set while `pinot apply` runs (as its first segment DELETE
/// is answered) stops it before its next DELETE: the rest are
/// `skipped-stopped`, no other request changes anything, every artifact
/// stays; a switch at a deep-store root stops it from the start.
#[test]
fn a_halt_between_two_deletes_stops_pinot_apply_before_the_next() {
    let lay = Layout::new("halt");
    let fleet = lay.root.join("ops/stop.json");
    let doc = r#"{"schema":"lakesweepStop.v1","halted":true,"halt":{"generation":1,"reason":"segments look wrong","by":"oncall","atMs":1}}"#;
    let ctl = Controller::start_with(
        lay.root.clone(),
        &[],
        &[],
        Some((fleet.clone(), doc.to_owned())),
    );
    let out = lay.root.join("plan.json");
    let mut a = lay.plan_args();
    a.extend(["--out".into(), out.display().to_string()]);
    assert!(lakesweep(&a).status.success());
    let receipts = lay.root.join("receipts.jsonl");
    let mut ap = vec![
        "pinot".to_owned(),
        "apply".into(),
        out.display().to_string(),
        "--controller".into(),
        ctl.url.clone(),
        "--receipts".into(),
        receipts.display().to_string(),
        "--stop-switch".into(),
        format!("file://{}", fleet.display()),
    ];
    ap.extend(ctl.state_args());
    ap.extend(lay.roots());
    let o = lakesweep(&ap);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert_eq!(ctl.deletes().len(), 1, "{:?}", ctl.deletes());
    let lines: Vec<Value> = std::fs::read_to_string(&receipts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["result"], "deleted", "{lines:?}");
    assert!(
        lines[1..].iter().all(|l| l["result"] == "skipped-stopped"),
        "{lines:?}"
    );
    assert!(lines[1]["detail"]
        .as_str()
        .unwrap()
        .contains("segments look wrong"));
    for r in ROOTS {
        assert!(!files_under(&lay.folder(r, &lay.id(0))).is_empty(), "{r}");
    }
    // A half-written switch at a deep-store root stops a run from its start.
    std::fs::remove_file(&fleet).unwrap();
    let root = lay.root.join("deepstore/server/_lakesweep/stop.json");
    std::fs::create_dir_all(root.parent().unwrap()).unwrap();
    std::fs::write(&root, "{\"schema\":").unwrap();
    let o = lakesweep(&ap);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert_eq!(ctl.deletes().len(), 1, "{:?}", ctl.deletes());
}
