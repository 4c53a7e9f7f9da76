//! End-to-end against a real S3-compatible server on 127.0.0.1 (moto's
//! server, from PyPI; `.ci/run` installs it): the fixture table is uploaded
//! with 1,100 extra orphans, so the listing takes several real
//! ListObjectsV2 pages; `plan` (through an `s3a://` table URI), `apply`,
//! `plan` again.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use common::*;
use futures::StreamExt;
use object_store::path::Path as OPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

const BUCKET: &str = "lakesweep-e2e";
const EXTRA: usize = 1100;

/// Starts moto (`common::moto`) and creates the bucket.
fn start_moto() -> Moto {
    let moto = common::moto();
    // Create the bucket (moto accepts unsigned requests).
    raw(&moto, "PUT", &format!("/{BUCKET}"), "");
    moto
}

/// Runs the binary against the S3 server. `plan`, `apply` and `sweep` get
/// the fixtures' SQL catalog as their live pointer (its metadata location is
/// mapped onto the bucket by `--location-map`) unless a pointer is given.
fn run(m: &Moto, args: &[String]) -> std::process::Output {
    run_with(m, args, &[])
}

/// [`run`] with more environment variables.
fn run_with(m: &Moto, args: &[String], envs: &[(&str, &str)]) -> std::process::Output {
    let mut args = args.to_vec();
    if matches!(
        args.first().map(String::as_str),
        Some("plan" | "apply" | "sweep")
    ) && !args.iter().any(|a| a == "--metadata" || a == "--catalog")
    {
        args.extend([
            "--catalog".into(),
            format!("sqlite:{}", fixtures().join("catalog.db").display()),
            "--table".into(),
            "demo.events".into(),
        ]);
    }
    Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(&args)
        .envs(m.aws_env())
        .envs(envs.iter().copied())
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .unwrap()
}

/// A time at which every object uploaded so far is `days` old, taken from
/// the store's own clock: a sentinel object written after them (outside the
/// table), its Last-Modified plus `days`. Nothing here reads this machine's
/// clock or the fixtures' dates, so the tests mean the same on any day.
fn days_after_uploads(m: &Moto, days: i64) -> i64 {
    let store = s3(m);
    let key = OPath::parse("clock-sentinel").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let meta = rt.block_on(async {
        store
            .put(&key, PutPayload::from(b"t".to_vec()))
            .await
            .unwrap();
        store.head(&key).await.unwrap()
    });
    meta.last_modified.timestamp_millis() + days * 86_400_000
}

/// Uploads the `events` table under `warehouse/demo/events/` plus the extras.
fn upload(m: &Moto) -> BTreeSet<String> {
    let store = s3(m);
    let table = fixtures().join("warehouse/demo/events");
    let mut files: Vec<(String, Vec<u8>)> = files_under(&table)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(table.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect();
    let extras: BTreeSet<String> = (0..EXTRA)
        .map(|i| format!("data/extra/orphan-{i:05}.parquet"))
        .collect();
    files.extend(extras.iter().map(|k| (k.clone(), b"orphan".to_vec())));
    // A version-hint.text naming the current metadata file, as some writers
    // leave it (not a Hadoop version: the tests point at the SQL catalog).
    let cur = expect()["events"]["metadata_location"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    files.push(("metadata/version-hint.text".into(), cur.into_bytes()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        futures::stream::iter(files)
            .map(|(rel, bytes)| {
                let store = &store;
                async move {
                    let key = OPath::parse(format!("warehouse/demo/events/{rel}")).unwrap();
                    store.put(&key, PutPayload::from(bytes)).await.unwrap();
                }
            })
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
    });
    extras
}

#[test]
fn plan_apply_plan_on_an_s3_server() {
    let m = start_moto();
    let extras = upload(&m);
    let t = expect()["events"].clone();
    let loc = format!("s3://{BUCKET}/warehouse/demo/events");
    let cur = t["metadata_location"].as_str().unwrap();
    let meta = cur.replace("file:///lakesweep-fixtures", &format!("s3://{BUCKET}"));
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    // Judge a month after the uploads, so every unreferenced, unhidden
    // object is old enough.
    let now = days_after_uploads(&m, 30).to_string();
    let dir = std::env::temp_dir().join(format!("lakesweep-s3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let plan_args = |out: bool| {
        let mut a: Vec<String> = vec![
            "plan".into(),
            loc.replace("s3://", "s3a://"),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            now.clone(),
            "--json".into(),
        ];
        if out {
            a.extend(["--out".into(), plan_path.display().to_string()]);
        }
        a
    };
    let v = json(&run(&m, &plan_args(true)));
    assert!(v["tokens"]["metadataLocation"].as_str().unwrap() == meta);
    let mut want = planted(&t, &["candidate", "young"]);
    want.extend(extras.iter().cloned());
    assert_eq!(deletes(&v), want);
    assert_eq!(v["summary"]["referencedNotListed"], 0, "{}", v["summary"]);
    assert!(v["summary"]["listed"]["count"].as_u64().unwrap() > 1000);

    let o = run(
        &m,
        &[
            "apply".into(),
            plan_path.display().to_string(),
            "--location-map".into(),
            map.clone(),
            "--allow-future-now".into(),
        ],
    );
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    let mut keys = BTreeSet::new();
    for line in receipts.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["result"], "deleted", "{r}");
        assert!(r["version"]["etag"].is_string(), "S3 gives ETags: {r}");
        keys.insert(r["key"].as_str().unwrap().to_owned());
    }
    assert_eq!(keys, want);

    let v2 = json(&run(&m, &plan_args(false)));
    assert!(deletes(&v2).is_empty(), "{v2}");
    assert_eq!(v2["summary"]["referencedNotListed"], 0);
    assert_eq!(
        v2["summary"]["referencedKeys"],
        v["summary"]["referencedKeys"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fault-injecting HTTP proxy in front of moto: one request per
/// connection; `fail(request_line, n)` says whether the n-th request gets
/// the given status instead of reaching the server.
fn proxy(
    upstream: &str,
    status: &'static str,
    fail: impl Fn(&str, usize) -> bool + Send + Sync + 'static,
) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let up = upstream.trim_start_matches("http://").to_owned();
    let count = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(fail);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let (up, count, fail) = (up.clone(), count.clone(), fail.clone());
            std::thread::spawn(move || {
                // Read the request head (the proxied requests have no body).
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match client.read(&mut b) {
                        Ok(1) => head.push(b[0]),
                        _ => return,
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let line = text.lines().next().unwrap_or("").to_owned();
                let n = count.fetch_add(1, Ordering::SeqCst);
                if fail(&line, n) {
                    // A 403 is what a bucket policy answers: AccessDenied.
                    let body = if status.starts_with("403") {
                        "<Error><Code>AccessDenied</Code><Message>Injected</Message></Error>"
                    } else {
                        "<Error><Code>Injected</Code></Error>"
                    };
                    let _ = write!(
                        client,
                        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    return;
                }
                let mut fwd = String::new();
                for l in text.split("\r\n").filter(|l| !l.is_empty()) {
                    if !l.to_ascii_lowercase().starts_with("connection:") {
                        fwd.push_str(l);
                        fwd.push_str("\r\n");
                    }
                }
                fwd.push_str("Connection: close\r\n\r\n");
                let Ok(mut server) = TcpStream::connect(&up) else {
                    return;
                };
                if server.write_all(fwd.as_bytes()).is_err() {
                    return;
                }
                let _ = std::io::copy(&mut server, &mut client);
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn store_errors_are_retried_and_a_failing_listing_leaves_no_plan() {
    let m = start_moto();
    upload(&m);
    let now = days_after_uploads(&m, 30);
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    let plan_via = |endpoint: &str| {
        let mut env = m.aws_env();
        env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
        env.push(("AWS_ENDPOINT_URL", endpoint.to_owned()));
        Command::new(env!("CARGO_BIN_EXE_lakesweep"))
            .args([
                "plan",
                &format!("s3://{BUCKET}/warehouse/demo/events"),
                "--location-map",
                &map,
                "--now",
                &now.to_string(),
                "--json",
                "--catalog",
                &format!("sqlite:{}", fixtures().join("catalog.db").display()),
                "--table",
                "demo.events",
            ])
            .envs(env)
            .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
            .output()
            .unwrap()
    };
    let direct = json(&plan_via(&m.endpoint));
    assert!(deletes(&direct).len() > EXTRA, "{direct}");
    // Every third request is throttled (503): retried with backoff, same plan.
    let flaky = proxy(&m.endpoint, "503 Slow Down", |_, n| n % 3 == 1);
    let retried = json(&plan_via(&flaky));
    assert_eq!(deletes(&retried), deletes(&direct));
    assert_eq!(retried["digest"], direct["digest"]);
    // The second page of the listing is refused (403, not retryable): no plan.
    let broken = proxy(&m.endpoint, "403 Forbidden", |line, _| {
        (line.contains("versions") && line.contains("key-marker="))
            || (line.contains("list-type=2") && line.contains("continuation-token"))
    });
    let o = plan_via(&broken);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("listing failed"), "{err}");
}

/// Versioning enabled: every receipt names the version deleted and the
/// delete marker hiding it (an undo removes the marker). Suspended: new
/// objects get the "null" version and deleting one removes it for good, so
/// no receipt may promise an undo.
fn versioned_bucket_receipts(status: &str) {
    let m = start_moto();
    raw(
        &m,
        "PUT",
        &format!("/{BUCKET}?versioning"),
        &format!(
            r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>{status}</Status></VersioningConfiguration>"#
        ),
    );
    upload(&m);
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    let dir = std::env::temp_dir().join(format!("lakesweep-s3v-{status}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let table = format!("s3://{BUCKET}/warehouse/demo/events");
    let now = days_after_uploads(&m, 30);
    let plan = |out: bool| {
        let mut a = vec![
            "plan".to_owned(),
            table.clone(),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            now.to_string(),
            "--json".into(),
        ];
        if out {
            a.extend(["--out".into(), plan_path.display().to_string()]);
        }
        json(&run(&m, &a))
    };
    let v = plan(true);
    let planned = deletes(&v);
    assert!(planned.len() > EXTRA);
    let o = run(
        &m,
        &[
            "apply".into(),
            plan_path.display().to_string(),
            "--location-map".into(),
            map.clone(),
            "--allow-future-now".into(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    assert_eq!(receipts.lines().count(), planned.len());
    let kept = status == "Enabled";
    for line in receipts.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["result"], "deleted", "{r}");
        // The version that was current when deleted: what an undo restores.
        assert_eq!(r["version"]["versionId"].is_string(), kept, "{r}");
        assert_eq!(
            r["deleteMarker"], kept,
            "an undo only where one exists: {r}"
        );
        if kept {
            assert!(r["deleteMarkerVersionId"].is_string(), "{r}");
        }
    }
    // Deleted means gone from the listing (a delete marker hides the old version).
    assert!(deletes(&plan(false)).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_versioned_bucket_gets_receipts_with_version_ids() {
    versioned_bucket_receipts("Enabled");
}

#[test]
fn a_suspended_bucket_does_not_promise_an_undo() {
    versioned_bucket_receipts("Suspended");
}

fn s3(m: &Moto) -> object_store::aws::AmazonS3 {
    s3_bucket(m, BUCKET)
}

/// One unsigned request; returns (status line, body).
fn request(m: &Moto, method: &str, path: &str) -> (String, String) {
    let port = m.endpoint.rsplit(':').next().unwrap();
    let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp).into_owned();
    let status = text.lines().next().unwrap_or("").to_owned();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// The text between `<tag>` and `</tag>` after `from`.
fn xml_after<'a>(body: &'a str, from: &str, tag: &str) -> Option<&'a str> {
    let rest = &body[body.find(from)?..];
    let open = format!("<{tag}>");
    let start = rest.find(&open)? + open.len();
    let end = rest[start..].find(&format!("</{tag}>"))?;
    Some(&rest[start..start + end])
}

/// The fault matrix's store-backed cases: the whole two-phase lifecycle on a
/// versioned bucket; fault 11 (a delete marker removed by an operator: an
/// undo, so the object is protected and starts over, never re-deleted on
/// the old quarantine); fault 10 (a run that died after its approval: no
/// receipt, so DELETE_UNKNOWN, reconciled by HEAD); a stale lock stops a run.
#[test]
fn two_phase_sweep_on_a_versioned_bucket_fault_10_lost_receipt_fault_11_delete_marker() {
    let m = start_moto();
    raw(
        &m,
        "PUT",
        &format!("/{BUCKET}?versioning"),
        r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#,
    );
    let extras = upload(&m);
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    let table = format!("s3://{BUCKET}/warehouse/demo/events");
    let now0 = days_after_uploads(&m, 30);
    let sweep = |day: i64, cmd: &str| {
        let mut a = vec![cmd.to_owned(), table.clone()];
        if cmd == "sweep" {
            a.extend([
                "--location-map".into(),
                map.clone(),
                "--now".into(),
                (now0 + day * 86_400_000).to_string(),
                "--allow-future-now".into(),
            ]);
        }
        a.push("--json".into());
        let o = run(&m, &a);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
        (o.status.code(), v)
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = s3(&m);
    // The ledger as `ledger show` reads it back (archived objects too).
    let ledger = || -> serde_json::Value {
        let o = run(
            &m,
            &[
                "ledger".into(),
                "show".into(),
                table.clone(),
                "--json".into(),
                "--archived".into(),
            ],
        );
        json(&o)
    };
    let state =
        |l: &serde_json::Value, k: &str| l["objects"][k]["state"].as_str().unwrap().to_owned();
    let victim = extras.iter().next().unwrap().clone();

    // Four runs: discovered, eligible, quarantined, restore-verified; nothing deleted.
    for (day, want) in [
        (0, "DISCOVERED"),
        (1, "UNREFERENCED_ELIGIBLE"),
        (2, "QUARANTINED"),
        (3, "RESTORE_VERIFIED"),
    ] {
        let (code, _) = sweep(day, "sweep");
        assert_eq!(code, Some(0));
        assert_eq!(state(&ledger(), &victim), want, "day {day}");
    }
    // Fifth: one approval, deletes, receipts naming the kept version.
    let (code, v) = sweep(4, "sweep");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["approval"]["granted"], true);
    let l = ledger();
    assert_eq!(state(&l, &victim), "DELETED");
    let approved = v["approval"]["approved"].as_u64().unwrap() as usize;
    assert!(approved > EXTRA, "{approved}");
    let receipt = l["objects"][victim.as_str()]["receipt"].clone();
    assert_eq!(receipt["result"], "deleted");
    assert_eq!(receipt["deleteMarker"], true, "{receipt}");
    let kept_version = receipt["version"]["versionId"].as_str().unwrap().to_owned();
    assert_eq!(v["gates"]["deletedOutsideApproval"], 0);
    assert_eq!(v["gates"]["approvedNotDeleted"], 0);

    // Fault 11: an operator removes the delete marker; the kept version is current again.
    let key = format!("warehouse/demo/events/{victim}");
    let (_, listing) = request(&m, "GET", &format!("/{BUCKET}?versions&prefix={key}"));
    let marker = xml_after(&listing, "<DeleteMarker>", "VersionId")
        .unwrap()
        .to_owned();
    let (status, _) = request(&m, "DELETE", &format!("/{BUCKET}/{key}?versionId={marker}"));
    assert!(
        status.contains(" 204") || status.contains(" 200"),
        "{status}"
    );
    let back = rt
        .block_on(store.head(&OPath::parse(&key).unwrap()))
        .unwrap();
    assert_eq!(back.version.as_deref(), Some(kept_version.as_str()));
    // The next run sees the pinned version back after a confirmed delete:
    // an undo, so the object is protected (no second delete on the old
    // quarantine); everything else is verified gone.
    let (code, v) = sweep(5, "sweep");
    assert_eq!(code, Some(0), "{v}");
    let l = ledger();
    assert_eq!(state(&l, &victim), "PROTECTED");
    let others_verified = l["objects"]
        .as_object()
        .unwrap()
        .values()
        .filter(|o| o["state"] == "VERIFIED")
        .count();
    assert_eq!(others_verified, approved - 1);

    // Fault 10: a run approved keys, their deletes went through, and the run
    // died before its receipts were recorded (killed by the test hook after
    // its last batch). A late orphan walks the lifecycle for it.
    let late = "data/extra/late-orphan.parquet";
    rt.block_on(async {
        let k = OPath::parse(format!("warehouse/demo/events/{late}")).unwrap();
        store.put(&k, PutPayload::from("late")).await.unwrap();
    });
    for day in 6..=9 {
        let (code, v) = sweep(day, "sweep");
        assert_eq!(code, Some(0), "day {day}: {v}");
    }
    assert_eq!(state(&ledger(), late), "RESTORE_VERIFIED");
    let hook_dir = std::env::temp_dir().join(format!("lakesweep-s3-hook-{}", std::process::id()));
    std::fs::create_dir_all(&hook_dir).unwrap();
    let hook = hook_dir.join("kill.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\n[ \"$1\" = final ] && kill -9 $PPID\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sweep_args = |day: i64| {
        vec![
            "sweep".to_owned(),
            table.clone(),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            (now0 + day * 86_400_000).to_string(),
            "--allow-future-now".into(),
            "--catalog".into(),
            format!("sqlite:{}", fixtures().join("catalog.db").display()),
            "--table".into(),
            "demo.events".into(),
        ]
    };
    let o = Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(sweep_args(10))
        .envs(m.aws_env())
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .env("LAKESWEEP_TEST_HOOK", &hook)
        .output()
        .unwrap();
    assert!(!o.status.success(), "the run was killed");
    let _ = std::fs::remove_dir_all(&hook_dir);
    assert_eq!(state(&ledger(), late), "DELETE_APPROVED");
    let gone =
        rt.block_on(store.head(&OPath::parse(format!("warehouse/demo/events/{late}")).unwrap()));
    assert!(gone.is_err(), "the delete went through before the run died");
    // The dead run's lock stops the next one, and says so.
    let o = run(&m, &sweep_args(11));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("holds"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    rt.block_on(async {
        let lock = OPath::parse("warehouse/demo/events/_lakesweep/ledger.json.lock").unwrap();
        store.delete(&lock).await.unwrap();
    });
    // `reconcile` settles it by HEAD: gone, so VERIFIED; no receipt was lost
    // silently (the history says it was unknown).
    let (code, v) = sweep(0, "reconcile");
    assert_eq!(code, Some(0), "{v}");
    let l = ledger();
    assert_eq!(state(&l, late), "VERIFIED", "{v}");
    // It was unknown once, and is reconciled.
    assert!(v["gates"]["unknownTotal"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["gates"]["unknownTotal"], v["gates"]["unknownReconciled"]);
    // Every referenced file of the table is still there.
    let plan = run(
        &m,
        &[
            "plan".into(),
            table.clone(),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            (now0 + 7 * 86_400_000).to_string(),
            "--json".into(),
        ],
    );
    let p = json(&plan);
    assert_eq!(p["summary"]["referencedNotListed"], 0, "{p}");
    // `ledger show` reads it back.
    let o = run(&m, &["ledger".into(), "show".into(), table.clone()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("VERIFIED"));
}

/// Percent-encodes a key for a request line (unreserved bytes and `/` kept).
fn enc(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Keys are bytes: a key with `//`, folder markers, trailing-slash twins
/// (some straddling a listing page boundary), spaces and `+`, a control
/// character. The listing succeeds, markers are kept as folder markers,
/// the control-character key as unaddressable, and `apply` deletes exactly
/// the listed keys; on a versioned bucket the plan pins every version id and
/// each receipt names the version deleted and the delete marker created,
/// both found again in the bucket's version listing.
fn odd_keys(versioned: bool) {
    let m = start_moto();
    if versioned {
        raw(
            &m,
            "PUT",
            &format!("/{BUCKET}?versioning"),
            r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#,
        );
    }
    let extras = upload(&m);
    let t = expect()["events"].clone();
    let odd_delete = ["data//double.parquet", "data/a b+c.parquet", "data/twin"];
    let mut markers: Vec<String> = ["data/", "data/sub/", "data/twin/"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // The table's own folder marker (S3A and consoles write one): not under
    // the table, never listed as one of its objects, never a reason to stop.
    raw(&m, "PUT", &format!("/{BUCKET}/warehouse/demo/events/"), "");
    // Twins across the first page boundary (1,000 keys) of the listing.
    markers.extend((900..1050).map(|i| format!("data/extra/orphan-{i:05}.parquet/")));
    // A control character: kept as unaddressable. (Unversioned only: moto's
    // ListObjectVersions ignores `encoding-type=url` and writes the raw
    // byte into its XML, which no XML parser accepts; S3 encodes it.)
    let ctl = "data/ctl\u{1}.parquet";
    let ctls: Vec<&str> = if versioned { vec![] } else { vec![ctl] };
    for k in odd_delete.iter().chain(&ctls) {
        raw(
            &m,
            "PUT",
            &format!("/{BUCKET}/warehouse/demo/events/{}", enc(k)),
            "odd",
        );
    }
    for k in &markers {
        raw(
            &m,
            "PUT",
            &format!("/{BUCKET}/warehouse/demo/events/{}", enc(k)),
            "",
        );
    }
    let now = days_after_uploads(&m, 30);
    let dir = std::env::temp_dir().join(format!(
        "lakesweep-s3odd-{versioned}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    let table = format!("s3://{BUCKET}/warehouse/demo/events");
    let plan_with = |out: bool, envs: &[(&str, &str)]| {
        let mut a = vec![
            "plan".to_owned(),
            table.clone(),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            now.to_string(),
            "--json".into(),
        ];
        if out {
            a.extend(["--out".into(), plan_path.display().to_string()]);
        }
        let o = run_with(&m, &a, envs);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        json(&o)
    };
    let plan = |out: bool| plan_with(out, &[]);
    let v = plan(true);
    // The listing fanned out over the table's folders (the default, 16
    // requests in flight; runs of folders under `data/`, `data/extra/`'s
    // twins and `category=a+b/id=301/` among them) finds what one sequence
    // of pages finds, and so does a fan-out of 2: the same plan, key for key.
    for n in ["1", "2"] {
        let w = plan_with(false, &[("LAKESWEEP_LIST_REQUESTS", n)]);
        assert_eq!(deletes(&w), deletes(&v), "{n} requests in flight");
        assert_eq!(
            w["report"]["keep"], v["report"]["keep"],
            "{n} requests in flight"
        );
        assert_eq!(w["summary"], v["summary"], "{n} requests in flight");
    }
    if versioned {
        // A bucket policy without s3:ListBucketVersions: every version
        // listing is refused (403 AccessDenied). Each listing falls back to
        // ListObjectsV2, in one sequence and fanned out over the odd folder
        // names alike, and finds the same keys, now pinned by size, time
        // and ETag instead of a version id; the report says why.
        let refusing = proxy(&m.endpoint, "403 Forbidden", |line, _| {
            line.contains("?versions") || line.contains("&versions")
        });
        for n in ["1", "16"] {
            let w = plan_with(
                false,
                &[
                    ("AWS_ENDPOINT_URL", refusing.as_str()),
                    ("LAKESWEEP_LIST_REQUESTS", n),
                ],
            );
            assert_eq!(deletes(&w), deletes(&v), "{n} requests in flight");
            assert_eq!(w["report"]["keep"], v["report"]["keep"], "{n}");
            for d in w["delete"].as_array().unwrap() {
                assert!(d["versionId"].is_null(), "{n}: {d}");
            }
            let notes = w["report"]["storeNotes"].to_string();
            assert!(
                notes.contains("the version listing failed (AccessDenied"),
                "{n}: {notes}"
            );
        }
    }
    let mut want = planted(&t, &["candidate", "young"]);
    want.extend(extras.iter().cloned());
    want.extend(odd_delete.iter().map(|s| s.to_string()));
    assert_eq!(deletes(&v), want);
    let reason = |v: &serde_json::Value, key: &str| {
        v["report"]["keep"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == key)
            .map(|k| k["reason"].as_str().unwrap().to_owned())
    };
    for k in &markers {
        assert_eq!(reason(&v, k).as_deref(), Some("folder-marker"), "{k}");
    }
    for k in &ctls {
        assert_eq!(reason(&v, k).as_deref(), Some("unaddressable"));
    }
    let sealed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let pinned: std::collections::BTreeMap<String, serde_json::Value> = sealed["delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["key"].as_str().unwrap().to_owned(), d.clone()))
        .collect();
    for d in pinned.values() {
        // LIST pins the version id on a versioned bucket (none otherwise).
        assert_eq!(d["versionId"].is_string(), versioned, "{d}");
    }

    let o = run(
        &m,
        &[
            "apply".into(),
            plan_path.display().to_string(),
            "--location-map".into(),
            map.clone(),
            "--allow-future-now".into(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    let mut done = BTreeSet::new();
    for line in receipts.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = r["key"].as_str().unwrap();
        assert_eq!(r["result"], "deleted", "{r}");
        if versioned {
            assert_eq!(
                r["version"]["versionId"], pinned[key]["versionId"],
                "the version deleted is the one planned: {r}"
            );
            assert!(r["deleteMarkerVersionId"].is_string(), "{r}");
        }
        done.insert(key.to_owned());
    }
    assert_eq!(done, want);
    if versioned {
        // Each odd key's receipt is found in ListObjectVersions: the planned
        // version, now noncurrent, under the marker the receipt names.
        for line in receipts.lines() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let key = r["key"].as_str().unwrap();
            if !odd_delete.contains(&key) {
                continue;
            }
            let (status, body) = request(
                &m,
                "GET",
                &format!(
                    "/{BUCKET}?versions&prefix={}",
                    enc(&format!("warehouse/demo/events/{key}"))
                ),
            );
            assert!(status.contains("200"), "{status} {body}");
            let marker = xml_after(&body, "<DeleteMarker>", "VersionId").unwrap();
            assert_eq!(Some(marker), r["deleteMarkerVersionId"].as_str());
            let version = xml_after(&body, "<Version>", "VersionId").unwrap();
            assert_eq!(Some(version), r["version"]["versionId"].as_str());
            assert_eq!(xml_after(&body, "<Version>", "IsLatest"), Some("false"));
        }
    }
    // Nothing left to delete; the markers and the control-character key stay.
    let v2 = plan(false);
    assert!(deletes(&v2).is_empty(), "{v2}");
    for k in markers
        .iter()
        .map(String::as_str)
        .chain(ctls.iter().copied())
    {
        assert!(reason(&v2, k).is_some(), "{k} still listed and kept");
    }
    assert_eq!(v2["summary"]["referencedNotListed"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn odd_keys_are_addressed_byte_for_byte() {
    odd_keys(false);
}

#[test]
fn odd_keys_on_a_versioned_bucket_pin_versions_and_name_delete_markers() {
    odd_keys(true);
}

/// `--manifest-cache` on S3: digests are filed under each manifest's ETag;
/// the second plan reads them instead of the manifests and makes the same
/// plan; a manifest overwritten with other bytes is read again (and here
/// refused), and once its own bytes are back (the same ETag) the digest
/// filed for them serves again.
#[test]
fn manifest_digests_are_cached_by_etag() {
    let m = start_moto();
    upload(&m);
    let map = format!("file:///lakesweep-fixtures=s3://{BUCKET}");
    let now = days_after_uploads(&m, 30).to_string();
    let dir = std::env::temp_dir().join(format!("lakesweep-s3-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plan = |cached: bool| {
        let mut a: Vec<String> = vec![
            "plan".into(),
            format!("s3://{BUCKET}/warehouse/demo/events"),
            "--location-map".into(),
            map.clone(),
            "--now".into(),
            now.clone(),
        ];
        if cached {
            a.push("--manifest-cache".into());
        }
        let mut c = Command::new(env!("CARGO_BIN_EXE_lakesweep"));
        c.args(&a)
            .args([
                "--catalog",
                &format!("sqlite:{}", fixtures().join("catalog.db").display()),
                "--table",
                "demo.events",
            ])
            .envs(m.aws_env())
            .env("LAKESWEEP_CACHE_DIR", &dir)
            .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"));
        c.output().unwrap()
    };
    let text = |o: &std::process::Output| {
        assert!(o.status.success(), "{}", out_text(o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let plain = text(&plan(false));
    let first = text(&plan(true));
    assert!(!first.contains("from the digest cache"), "{first}");
    let second = text(&plan(true));
    assert!(second.contains("from the digest cache"), "{second}");
    let delete_lines = |t: &str| -> Vec<String> {
        t.lines()
            .skip_while(|l| !l.starts_with("would delete"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(delete_lines(&second), delete_lines(&plain));
    assert!(!delete_lines(&plain).is_empty());

    // Overwrite one manifest with a byte changed (same length).
    let store = s3(&m);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let manifest = rt.block_on(async {
        let prefix = OPath::parse("warehouse/demo/events/metadata").unwrap();
        let mut l = store.list(Some(&prefix));
        while let Some(o) = l.next().await {
            let p = o.unwrap().location;
            let name = p.filename().unwrap().to_owned();
            if name.ends_with(".avro") && !name.starts_with("snap-") {
                return p;
            }
        }
        panic!("no manifest uploaded")
    });
    let original =
        rt.block_on(async { store.get(&manifest).await.unwrap().bytes().await.unwrap() });
    let mut damaged = original.to_vec();
    *damaged.last_mut().unwrap() ^= 0xff;
    rt.block_on(async {
        store
            .put(&manifest, PutPayload::from(damaged))
            .await
            .unwrap()
    });
    let o = plan(true);
    assert!(!o.status.success(), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(manifest.filename().unwrap()), "{err}");
    // Its own bytes again: the same ETag, the filed digest stands.
    rt.block_on(async {
        store
            .put(&manifest, PutPayload::from(original.to_vec()))
            .await
            .unwrap()
    });
    let again = text(&plan(true));
    assert_eq!(delete_lines(&again), delete_lines(&plain));
    assert!(again.contains("from the digest cache"), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
}
