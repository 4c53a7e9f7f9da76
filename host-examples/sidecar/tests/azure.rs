//! End-to-end against Azurite, the Azure Storage emulator (from npm;
//! `scripts/test.sh` installs it under `.tools/azurite`, or set
//! `LAKESWEEP_AZURITE` to an `azurite-blob` binary): the fixture table is
//! staged in a container with the Azure SDK for Python, then `plan`
//! (`az://`), `apply`, `plan` again, the listing in one sequence of pages
//! and fanned out over folders. Azure goes through the `object_store`
//! crate, which cannot address a key with an empty segment: such a key
//! fails the listing (no plan, nothing deleted), tested here too.

mod common;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

const CONTAINER: &str = "lakesweep";

struct Azurite {
    child: Child,
    endpoint: String,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Azurite's blob service on a port it picks itself and reads the
/// port from the line it prints.
fn start_azurite(name: &str) -> Azurite {
    let bin = std::env::var("LAKESWEEP_AZURITE").unwrap_or_else(|_| {
        repo()
            .join(".tools/azurite/node_modules/.bin/azurite-blob")
            .display()
            .to_string()
    });
    let dir = std::env::temp_dir().join(format!("lakesweep-azurite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(&bin)
        .args(["--blobHost", "127.0.0.1", "--blobPort", "0", "--skipApiVersionCheck", "--location"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{bin} did not start ({e}): scripts/test.sh installs Azurite with npm (or set LAKESWEEP_AZURITE)")
        });
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut tx = Some(tx);
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.split("listens on ").nth(1) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        }
    });
    let endpoint = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("Azurite did not say where it listens");
    Azurite {
        child,
        endpoint,
        _dir: TempDir(dir),
    }
}

/// Uploads the `events` table (and `extra` keys) under
/// `warehouse/demo/events/`; returns the newest Last-Modified, in ms.
fn stage(a: &Azurite, extra: &[&str]) -> i64 {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/azurite_stage.py");
    let o = Command::new("python3")
        .arg(script)
        .args([&a.endpoint, CONTAINER, "warehouse/demo/events"])
        .arg(fixtures().join("warehouse/demo/events"))
        .args(extra)
        .output()
        .expect("python3 with azure-storage-blob (scripts/test.sh installs it)");
    assert!(
        o.status.success(),
        "staging failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["newest_ms"].as_i64().unwrap()
}

use std::path::Path;

fn run(a: &Azurite, args: &[String]) -> std::process::Output {
    run_with(a, args, "16")
}

/// [`run`] with `requests` listing requests in flight
/// (`LAKESWEEP_LIST_REQUESTS`; `1` is one sequence of pages).
fn run_with(a: &Azurite, args: &[String], requests: &str) -> std::process::Output {
    let mut args = args.to_vec();
    if matches!(args.first().map(String::as_str), Some("plan" | "apply")) {
        args.extend([
            "--location-map".into(),
            format!("file:///lakesweep-fixtures=az://{CONTAINER}"),
        ]);
    }
    if args.first().map(String::as_str) == Some("plan") {
        args.extend([
            "--catalog".into(),
            format!("sqlite:{}", fixtures().join("catalog.db").display()),
            "--table".into(),
            "demo.events".into(),
        ]);
    }
    Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(&args)
        .env("AZURE_STORAGE_USE_EMULATOR", "true")
        .env("AZURITE_BLOB_STORAGE_URL", &a.endpoint)
        .env("LAKESWEEP_LIST_REQUESTS", requests)
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .unwrap()
}

#[test]
fn plan_apply_plan_on_azurite() {
    let a = start_azurite("cycle");
    let extras = ["data/extra/orphan-1.parquet", "data/extra/a b+c.parquet"];
    // A month after the newest upload, by the store's own clock.
    let now = stage(&a, &extras) + 30 * 86_400_000;
    let t = expect()["events"].clone();
    let dir = std::env::temp_dir().join(format!("lakesweep-az-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let table = format!("az://{CONTAINER}/warehouse/demo/events");
    let plan_with = |out: bool, requests: &str| {
        let mut args = vec![
            "plan".to_owned(),
            table.clone(),
            "--now".into(),
            now.to_string(),
            "--json".into(),
        ];
        if out {
            args.extend(["--out".into(), plan_path.display().to_string()]);
        }
        let o = run_with(&a, &args, requests);
        assert!(o.status.success(), "{}", out_text(&o));
        json(&o)
    };
    let plan = |out: bool| plan_with(out, "16");
    let v = plan(true);
    let mut want = planted(&t, &["candidate", "young"]);
    want.extend(extras.iter().map(|s| s.to_string()));
    assert_eq!(deletes(&v), want);
    assert_eq!(v["summary"]["referencedNotListed"], 0, "{}", v["summary"]);
    // The listing fanned out over the table's folders (16 requests in
    // flight, or 2) finds what one sequence of pages finds.
    for requests in ["1", "2"] {
        let other = plan_with(false, requests);
        assert_eq!(deletes(&other), want, "{requests} requests in flight");
        assert_eq!(
            other["summary"], v["summary"],
            "{requests} requests in flight"
        );
    }
    let o = run(
        &a,
        &[
            "apply".into(),
            plan_path.display().to_string(),
            "--allow-future-now".into(),
            "--catalog".into(),
            format!("sqlite:{}", fixtures().join("catalog.db").display()),
            "--table".into(),
            "demo.events".into(),
        ],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    let mut done = BTreeSet::new();
    for line in receipts.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["result"], "deleted", "{r}");
        assert!(r["version"]["etag"].is_string(), "Azure gives ETags: {r}");
        done.insert(r["key"].as_str().unwrap().to_owned());
    }
    assert_eq!(done, want);
    let v2 = plan(false);
    assert!(deletes(&v2).is_empty(), "{v2}");
    assert_eq!(v2["summary"]["referencedNotListed"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `object_store` cannot represent a key with an empty segment: the listing
/// fails, so there is no plan and nothing is deleted (never a misread key).
#[test]
fn a_key_azure_cannot_be_addressed_by_refuses_the_plan() {
    let a = start_azurite("double");
    let now = stage(&a, &["data//double.parquet"]) + 30 * 86_400_000;
    let o = run(
        &a,
        &[
            "plan".into(),
            format!("az://{CONTAINER}/warehouse/demo/events"),
            "--now".into(),
            now.to_string(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("listing failed"),
        "{}",
        out_text(&o)
    );
}
