//! `apply` and `sweep` through the core's one acceptance path, on real
//! pyiceberg tables: commits that register old unreferenced files
//! (`add_files`) landing between batches and inside the last batch's
//! window, holds of any generation, table holds and leases given after the
//! plan, lagging pointers, and a first sweep of a table. Commits and holds
//! land exactly where the test wants them through `LAKESWEEP_TEST_HOOK`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// A pyiceberg table with `n` old orphans and a sealed plan deleting them.
struct Setup {
    t: PyTable,
    orphans: Vec<String>,
    plan: PathBuf,
}

impl Setup {
    fn new(name: &str, n: usize, plan_extra: &[&str]) -> Setup {
        let t = PyTable::new(name);
        let orphans: Vec<String> = serde_json::from_value(py(&[
            "orphans",
            t.dir.to_str().unwrap(),
            &n.to_string(),
            "10",
        ]))
        .unwrap();
        let plan = t.dir.join("plan.json");
        let mut a = vec!["plan".to_owned(), t.location()];
        a.extend(t.pointer());
        a.extend(["--out".into(), plan.display().to_string(), "--json".into()]);
        a.extend(plan_extra.iter().map(|s| s.to_string()));
        let v = json(&lakesweep(&a));
        if plan_extra.is_empty() {
            let want: BTreeSet<String> = orphans.iter().cloned().collect();
            assert_eq!(deletes(&v), want, "{v}");
        }
        Setup { t, orphans, plan }
    }

    fn apply(&self, extra: &[&str], hook: Option<&Path>) -> std::process::Output {
        let plan = self.plan.display().to_string();
        self.command(&[&["apply", &plan], extra].concat(), hook)
    }

    /// `sweep TABLE POINTER --quarantine 0ms --json EXTRA...`.
    fn sweep(&self, extra: &[&str], hook: Option<&Path>) -> std::process::Output {
        let table = self.t.location();
        let base = ["sweep", &table, "--quarantine", "0ms", "--json"];
        self.command(&[&base[..], extra].concat(), hook)
    }

    /// `lakesweep ARGS POINTER`, with `hook` as `LAKESWEEP_TEST_HOOK`.
    fn command(&self, args: &[&str], hook: Option<&Path>) -> std::process::Output {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lakesweep"));
        c.args(args)
            .args(self.t.pointer())
            .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"));
        if let Some(h) = hook {
            c.env("LAKESWEEP_TEST_HOOK", h);
        }
        c.output().unwrap()
    }

    fn exists(&self, key: &str) -> bool {
        self.t.root().join(key).exists()
    }

    /// A hook script: at `step`, run `body` (sh).
    fn hook(&self, step: &str, body: &str) -> PathBuf {
        let p = self.t.dir.join("hook.sh");
        std::fs::write(
            &p,
            format!("#!/bin/sh\nset -e\nif [ \"$1\" = \"{step}\" ]; then\n{body}\nfi\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// The shell line that registers `key` with the table (a real commit).
    fn add(&self, key: &str) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/iceberg_table.py");
        format!(
            "python3 '{}' add '{}' '{key}'",
            script.display(),
            self.t.dir.display()
        )
    }

    fn receipts(&self) -> Vec<Value> {
        std::fs::read_to_string(format!("{}.receipts.jsonl", self.plan.display()))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn rows(&self) -> u64 {
        py(&["check", self.t.dir.to_str().unwrap()])["rows"]
            .as_u64()
            .unwrap()
    }
}

fn results(rs: &[Value], result: &str) -> BTreeSet<String> {
    rs.iter()
        .filter(|r| r["result"] == result)
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_commit_between_batches_stops_apply_and_keeps_the_file_it_registers() {
    let s = Setup::new("acc-stop", 8, &[]);
    let rows_before = s.rows();
    let last = s.orphans[7].clone();
    // Batch 2 was accepted; before its deletes a writer registers the last orphan.
    let hook = s.hook("2", &s.add(&last));
    let o = s.apply(&["--batch", "2"], Some(&hook));
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("STOPPED"),
        "{}",
        out_text(&o)
    );
    let rs = s.receipts();
    let deleted = results(&rs, "deleted");
    assert_eq!(deleted, s.orphans[..4].iter().cloned().collect(), "{rs:?}");
    assert_eq!(
        results(&rs, "skipped-stopped"),
        s.orphans[4..].iter().cloned().collect()
    );
    assert!(s.exists(&last), "the registered file survived");
    assert!(results(&rs, "damaged").is_empty());
    // The table reads, including the adopted file's row.
    assert_eq!(s.rows(), rows_before + 1);
}

#[test]
fn a_commit_inside_the_last_batch_window_is_reported_as_damage() {
    let s = Setup::new("acc-damage", 4, &[]);
    let last = s.orphans[3].clone();
    // The last batch (2 of 2) was accepted; the commit lands before its deletes.
    let hook = s.hook("2", &s.add(&last));
    let o = s.apply(&["--batch", "2"], Some(&hook));
    let text = out_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains(&format!("DAMAGE: {last}")), "{text}");
    let rs = s.receipts();
    assert_eq!(results(&rs, "damaged"), BTreeSet::from([last.clone()]));
    let d = rs.iter().find(|r| r["result"] == "damaged").unwrap();
    assert!(d["detail"].as_str().unwrap().contains("needs it"), "{d}");
    assert!(d["restore"].is_string(), "{d}");
}

#[test]
fn holds_table_holds_and_leases_given_after_the_plan_refuse_apply() {
    let s = Setup::new("acc-holds", 3, &[]);
    let current = s.t.info["current"].as_i64().unwrap();
    let far = 4_102_444_800_000i64; // 2100
    let cases = [
        // A hold whose generation is 0, not newer than anything.
        (
            "holds",
            format!(
                r#"[{{"scope":{{"pathPrefix":"{}"}},"generation":0}}]"#,
                s.orphans[1]
            ),
        ),
        ("holds", r#"[{"scope":"table","generation":0}]"#.to_owned()),
        (
            "leases",
            format!(r#"[{{"snapshotId":{current},"expiresAtMs":{far},"readerGeneration":0}}]"#),
        ),
    ];
    for (kind, doc) in cases {
        let f = s.t.dir.join(format!("{kind}.json"));
        std::fs::write(&f, &doc).unwrap();
        let o = s.apply(&[&format!("--{kind}"), f.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(2), "{doc}: {}", out_text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("cannot be applied"),
            "{}",
            out_text(&o)
        );
        for k in &s.orphans {
            assert!(s.exists(k), "{doc}: {k} deleted");
        }
    }
}

#[test]
fn a_hold_known_to_the_plan_keeps_its_key_and_the_rest_goes() {
    let t_hold = r#"[{"scope":{"pathPrefix":"data/orphan-001"},"generation":0}]"#;
    let dir = std::env::temp_dir().join(format!("lakesweep-holdfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("holds.json");
    std::fs::write(&f, t_hold).unwrap();
    let s = Setup::new("acc-known-hold", 3, &["--holds", f.to_str().unwrap()]);
    let o = s.apply(&["--holds", f.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.exists("data/orphan-001.parquet"));
    assert!(!s.exists("data/orphan-000.parquet"));
    assert!(!s.exists("data/orphan-002.parquet"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_hold_arriving_between_batches_stops_the_run() {
    let dir = std::env::temp_dir().join(format!("lakesweep-holdlate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("holds.json");
    std::fs::write(&f, "[]").unwrap();
    let s = Setup::new("acc-late-hold", 6, &["--holds", f.to_str().unwrap()]);
    let hold = r#"[{"scope":{"pathPrefix":"data/orphan-005"},"generation":0}]"#;
    let hook = s.hook("2", &format!("printf '%s' '{hold}' > '{}'", f.display()));
    let o = s.apply(
        &["--batch", "2", "--holds", f.to_str().unwrap()],
        Some(&hook),
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(s.exists("data/orphan-005.parquet"));
    assert!(s.exists("data/orphan-004.parquet"), "batch 3 never ran");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_lagging_pointer_is_refused_and_version_hint_follows_the_hadoop_rule() {
    let t = PyTable::new("acc-lag");
    let meta = t.root().join("metadata");
    let mut docs: Vec<String> = std::fs::read_dir(&meta)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".metadata.json"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 3, "{docs:?}");
    // A fixed pointer to an older document: newer ones descend from it.
    let plan = |pointer: &[String]| {
        let mut a = vec!["plan".to_owned(), t.location()];
        a.extend(pointer.iter().cloned());
        a.push("--json".into());
        lakesweep(&a)
    };
    let o = plan(&[
        "--metadata".into(),
        meta.join(&docs[1]).display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("(stale-pointer)"), "{err}");
    assert!(err.contains("lags"), "{err}");
    // The catalog's pointer is the newest: planned.
    let o = plan(&t.pointer());
    assert!(o.status.success(), "{}", out_text(&o));

    // Hadoop names beside pyiceberg's: v1 (older) and v2 (the newest).
    std::fs::copy(meta.join(&docs[1]), meta.join("v1.metadata.json")).unwrap();
    std::fs::copy(
        meta.join(docs.last().unwrap()),
        meta.join("v2.metadata.json"),
    )
    .unwrap();
    for hint in ["v1.metadata.json", "1", "00001-lagging.metadata.json"] {
        std::fs::write(meta.join("version-hint.text"), hint).unwrap();
        let v = json(&plan(&[]));
        assert!(
            v["tokens"]["metadataLocation"]
                .as_str()
                .unwrap()
                .ends_with("/metadata/v2.metadata.json"),
            "hint {hint}: {}",
            v["tokens"]
        );
    }
    // No vN documents and a hint that is not a number: refused.
    std::fs::remove_file(meta.join("v1.metadata.json")).unwrap();
    std::fs::remove_file(meta.join("v2.metadata.json")).unwrap();
    std::fs::write(meta.join("version-hint.text"), &docs[0]).unwrap();
    let o = plan(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a version number"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn the_first_sweep_of_a_table_makes_its_folder_and_takes_the_lock() {
    let s = Setup::new("acc-sweep", 2, &[]);
    assert!(!s.t.root().join("_lakesweep").exists());
    let mut a = vec!["sweep".to_owned(), s.t.location()];
    a.extend(s.t.pointer());
    let o = lakesweep(&a);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.t.root().join("_lakesweep/ledger.json").exists());
    assert!(!s.t.root().join("_lakesweep/ledger.json.lock").exists());
    // A lock left behind is reported as such.
    std::fs::write(s.t.root().join("_lakesweep/ledger.json.lock"), "{}").unwrap();
    let o = lakesweep(&a);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("holds"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn a_write_data_path_outside_the_table_is_listed_and_its_orphans_go() {
    let t = PyTable::with_data_path("acc-datapath", Some("ext/data"));
    let orphans: Vec<String> =
        serde_json::from_value(py(&["orphans", t.dir.to_str().unwrap(), "2", "10"])).unwrap();
    assert!(
        orphans.iter().all(|k| k.contains("/ext/data/")),
        "{orphans:?}"
    );
    let plan = t.dir.join("plan.json");
    let mut a = vec!["plan".to_owned(), t.location()];
    a.extend(t.pointer());
    a.extend(["--out".into(), plan.display().to_string(), "--json".into()]);
    let v = json(&lakesweep(&a));
    assert_eq!(deletes(&v), orphans.iter().cloned().collect(), "{v}");
    let prefixes = v["summary"]["sweptPrefixes"].as_array().unwrap();
    assert_eq!(prefixes.len(), 2, "{v}");
    assert!(prefixes[1].as_str().unwrap().ends_with("/ext/data/"));
    // Its live data files there are referenced, not deleted.
    let ext = t.dir.join("ext/data");
    let live: Vec<String> = std::fs::read_dir(&ext)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("orphan-"))
        .collect();
    assert!(!live.is_empty());
    let rows = py(&["check", t.dir.to_str().unwrap()])["rows"].clone();
    let mut a = vec!["apply".to_owned(), plan.display().to_string()];
    a.extend(t.pointer());
    let o = lakesweep(&a);
    assert!(o.status.success(), "{}", out_text(&o));
    for k in &orphans {
        assert!(!Path::new(k.trim_start_matches("file://")).exists(), "{k}");
    }
    for n in &live {
        assert!(ext.join(n).exists(), "{n} deleted");
    }
    assert_eq!(py(&["check", t.dir.to_str().unwrap()])["rows"], rows);
}

#[test]
fn a_commit_between_sweep_batches_stops_the_deletes_and_the_key_is_protected() {
    let s = Setup::new("acc-sweep-race", 6, &[]);
    let last = s.orphans[5].clone();
    let sweep = |hook: Option<&Path>| s.sweep(&["--batch", "2"], hook);
    // Discovered, eligible, quarantined, restore-verified: nothing deleted yet.
    for _ in 0..4 {
        let o = sweep(None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    assert!(s.orphans.iter().all(|k| s.exists(k)));
    // The approving run: batch 2 is accepted, then a writer adopts the last orphan.
    let hook = s.hook("2", &s.add(&last));
    let o = sweep(Some(&hook));
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["stopped"].is_array(), "{v}");
    assert!(v["damage"].as_array().unwrap().is_empty(), "{v}");
    assert!(s.exists(&last), "the adopted file survived");
    for k in &s.orphans[..4] {
        assert!(!s.exists(k), "{k} (batches 1 and 2) deleted");
    }
    // Keys the run did not reach are protected and start over, never lost.
    let objects = ledger_objects(&s.t.location());
    assert_eq!(objects[&last]["state"], "PROTECTED", "{objects}");
    // The next sweep sees the adopted file as referenced.
    let o = sweep(None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.exists(&last));
}

#[test]
fn reconcile_settles_what_a_killed_sweep_approved_and_the_next_sweep_deletes_it() {
    let s = Setup::new("acc-killed", 4, &[]);
    let sweep = |hook: Option<&Path>| s.sweep(&[], hook);
    for _ in 0..4 {
        let o = sweep(None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    // The approving run dies right after its approval was saved.
    let hook = s.hook("1", "kill -9 $PPID");
    let o = sweep(Some(&hook));
    assert!(!o.status.success());
    let state = |k: &str| -> String {
        ledger_objects(&s.t.location())[k]["state"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(s.orphans.iter().all(|k| state(k) == "DELETE_APPROVED"));
    assert!(s.orphans.iter().all(|k| s.exists(k)));
    // The dead run's lock is reported; once removed, reconcile settles every
    // approved key by HEAD: nothing was deleted, the pinned version is intact.
    std::fs::remove_file(s.t.root().join("_lakesweep/ledger.json.lock")).unwrap();
    let o = lakesweep(&["reconcile", &s.t.location(), "--json"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["moves"].as_array().unwrap().len(),
        2 * s.orphans.len(),
        "{v}"
    );
    assert!(s.orphans.iter().all(|k| state(k) == "RESTORE_VERIFIED"));
    // The next sweep approves again and deletes.
    let o = sweep(None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.orphans.iter().all(|k| !s.exists(k)));
}

#[test]
fn an_expiry_that_loses_the_catalog_swap_leaves_no_bundle_behind() {
    let t = PyTable::new("acc-lost-cas");
    // Another writer wins every compare-and-set: the catalog refuses updates.
    let db = rusqlite::Connection::open(t.dir.join("catalog.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER lost_race BEFORE UPDATE ON iceberg_tables \
         BEGIN SELECT RAISE(ABORT, 'another commit won'); END;",
    )
    .unwrap();
    drop(db);
    let o = t.run("expire", &["--allow-future-now", "--commit"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let bundles = t.root().join("_lakesweep/bundles");
    let left: Vec<_> = std::fs::read_dir(&bundles)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "bundles left behind: {left:?}");
}

/// A retention policy for `t` whose restore-drill gate asks for a drill of
/// `min_bundles` bundles no older than `max_age`.
fn drill_policy(t: &PyTable, min_bundles: u32, max_age: &str) -> String {
    format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{}","format":"iceberg"}},
            "fileRetention":{{"orphanSafetyInterval":"3d"}},
            "restoreDrill":{{"minBundles":{min_bundles},"maxAge":"{max_age}"}}}}"#,
        t.uuid()
    )
}

/// `expire --commit` on `t`: the bundle it sealed (folder, id, document).
fn expire_into_bundle(t: &PyTable) -> (PathBuf, String, Value) {
    let v = json(&t.run("expire", &["--allow-future-now", "--commit", "--json"]));
    let dir = PathBuf::from(
        v["bundle"]
            .as_str()
            .unwrap()
            .strip_prefix("file://")
            .unwrap()
            .strip_suffix("/bundle.json")
            .unwrap(),
    );
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let bundle: Value =
        serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).unwrap()).unwrap();
    (dir, id, bundle)
}

#[test]
fn restore_refuses_a_rewritten_layer_and_puts_back_a_missing_one() {
    let t = PyTable::new("acc-restore");
    let before = py(&["check", t.dir.to_str().unwrap()])["travel"].clone();
    let current = t.info["current"].as_i64().unwrap();
    let run = |cmd: &str, extra: &[&str]| {
        let mut a = vec!["--allow-future-now"];
        a.extend(extra);
        t.run(cmd, &a)
    };
    let (_, id, bundle) = expire_into_bundle(&t);
    let lists: Vec<String> = bundle["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["layer"] == "manifest-list")
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect();
    assert!(!lists.is_empty(), "{bundle}");
    let list = t.root().join(&lists[0]);
    let original = std::fs::read(&list).unwrap();
    // The current snapshot's list written over the expired one's key.
    let cur_list = std::fs::read_dir(t.root().join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(&format!("snap-{current}-"))
        })
        .unwrap();
    std::fs::copy(&cur_list, &list).unwrap();
    let o = run("restore", &["--bundle", &id, "--commit"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("rewritten"),
        "{}",
        out_text(&o)
    );
    // The newest bundle that verifies: none now, and the one passed over
    // is named.
    let o = run("restore", &["--newest", "--commit"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("passed over") && err.contains("no bundle"),
        "{err}"
    );
    // Gone instead: restore puts the bundle's copy back and time travel to
    // every restored snapshot reads its own rows again.
    std::fs::remove_file(&list).unwrap();
    let o = run("restore", &["--newest", "--commit"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&id),
        "{}",
        out_text(&o)
    );
    assert_eq!(std::fs::read(&list).unwrap(), original);
    let after = py(&["check", t.dir.to_str().unwrap()])["travel"].clone();
    assert_eq!(after, before, "every snapshot reads what it read before");
}

#[test]
fn an_edited_or_missing_ledger_is_refused() {
    let t = PyTable::new("acc-ledger");
    let run = |cmd: &str, extra: &[&str]| {
        let mut a = vec!["--allow-future-now"];
        a.extend(extra);
        t.run(cmd, &a)
    };
    // An expiry leaves a bundle; the first sweep makes the ledger.
    assert!(run("expire", &["--commit"]).status.success());
    let o = run("sweep", &[]);
    assert!(o.status.success(), "{}", out_text(&o));
    let ledger = t.root().join("_lakesweep/ledger.json");
    let text = std::fs::read_to_string(&ledger).unwrap();
    // A shorter quarantine typed in by hand: refused.
    let edited = text.replace("\"quarantineMs\": 86400000", "\"quarantineMs\": 0");
    assert_ne!(edited, text);
    std::fs::write(&ledger, &edited).unwrap();
    let o = run("sweep", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("integrity"),
        "{}",
        out_text(&o)
    );
    // Deleted: refused while its mark remains, unless started anew on purpose.
    std::fs::remove_file(&ledger).unwrap();
    let o = run("sweep", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--new-ledger"),
        "{}",
        out_text(&o)
    );
    let o = run("sweep", &["--new-ledger"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(ledger.exists());
}

/// `lakesweep drill`: a seeded sample of the quarantine bundles is verified
/// without committing and recorded in the ledger; the same seed draws the
/// same sample; a rewritten layer fails the drill; a policy's restoreDrill
/// gate refuses approval until a drill of enough bundles has passed.
#[test]
fn a_restore_drill_is_sampled_recorded_and_gates_approval() {
    let t = PyTable::new("acc-drill");
    let run = |cmd: &str, extra: &[&str]| {
        let mut a = vec!["--allow-future-now"];
        a.extend(extra);
        t.run(cmd, &a)
    };
    let (bundle, _, bundle_doc) = expire_into_bundle(&t);
    // Four bundles: the real one and three copies of it under other ids.
    for i in 1..=3 {
        let to = bundle.with_file_name(format!("copy-{i}"));
        common::copy_dir(&bundle, &to);
    }
    let drill = |extra: &[&str]| {
        let mut a = vec!["drill".to_owned(), t.location(), "--json".into()];
        a.extend(extra.iter().map(|s| s.to_string()));
        lakesweep(&a)
    };
    // No ledger yet: a drill has nowhere to be recorded.
    let o = drill(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no ledger"));
    assert!(run("sweep", &[]).status.success());

    let a = json(&drill(&["--sample", "2", "--seed", "7"]));
    let b = json(&drill(&["--sample", "2", "--seed", "7"]));
    assert_eq!(a["drill"]["sampled"], b["drill"]["sampled"], "seeded");
    assert_eq!(a["drill"]["sampled"].as_array().unwrap().len(), 2);
    assert_eq!(a["drill"]["bundlesTotal"], 4);
    assert_eq!(a["drill"]["passed"], true, "{a}");
    let seeds: BTreeSet<String> = (0..16)
        .map(|s| {
            json(&drill(&["--sample", "2", "--seed", &s.to_string()]))["drill"]["sampled"]
                .to_string()
        })
        .collect();
    assert!(seeds.len() > 1, "the seed chooses the sample");

    // A policy asking for a drill of all four bundles: the drills so far
    // verified two, so approval is refused, and says why.
    let policy = t.dir.join("drill-policy.json");
    std::fs::write(&policy, drill_policy(&t, 4, "60d")).unwrap();
    let p = policy.to_str().unwrap();
    let last_approval = || -> Value {
        let l: Value = serde_json::from_slice(
            &std::fs::read(t.root().join("_lakesweep/ledger.json")).unwrap(),
        )
        .unwrap();
        l["approvals"].as_array().unwrap().last().unwrap().clone()
    };
    let o = run("sweep", &["--policy", p]);
    assert!(o.status.success(), "{}", out_text(&o));
    let ap = last_approval();
    assert_eq!(ap["granted"], false);
    assert!(
        ap["differences"]
            .to_string()
            .contains("restore drill of at least 4"),
        "{ap}"
    );

    // A rewritten manifest list in the store: the drill fails (exit 1) and
    // names it; a failed drill never meets the gate.
    let list_key = bundle_doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["layer"] == "manifest-list")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let list = t.root().join(&list_key);
    let original = std::fs::read(&list).unwrap();
    let mtime = std::fs::metadata(&list).unwrap().modified().unwrap();
    std::fs::write(&list, b"not the bundled manifest list").unwrap();
    let o = drill(&["--sample", "4"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let f: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(f["drill"]["passed"], false);
    assert_eq!(f["drill"]["failed"].as_object().unwrap().len(), 4, "{f}");
    assert!(f["drill"]["failed"].to_string().contains(&list_key), "{f}");
    let _ = run("sweep", &["--policy", p]);
    assert!(last_approval()["differences"]
        .to_string()
        .contains("restore drill"));

    // Put right (the same bytes and time: the version bundled), a drill of
    // all four passes and the gate is met.
    std::fs::write(&list, &original).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&list)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let o = drill(&["--sample", "30"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let _ = run("sweep", &["--policy", p]);
    assert!(
        !last_approval()["differences"]
            .to_string()
            .contains("restore drill"),
        "{}",
        last_approval()
    );
    let l: Value =
        serde_json::from_slice(&std::fs::read(t.root().join("_lakesweep/ledger.json")).unwrap())
            .unwrap();
    assert!(
        l["drills"].as_array().unwrap().len() >= 20,
        "every drill is recorded"
    );
}

/// Restore verifies every layer it relies on, whatever is in the store: a
/// manifest rewritten at its key or a content file changed since it was
/// bundled refuses the restore and names the key; a bundle copy that no
/// longer matches its digest too; a manifest that is gone is put back from
/// the verified copy, and time travel to every snapshot then reads what it
/// read before.
#[test]
fn restore_checks_every_layer_against_the_bundle() {
    let t = PyTable::new("acc-layers");
    let before = py(&["check", t.dir.to_str().unwrap()])["travel"].clone();
    let run = |cmd: &str, extra: &[&str]| {
        let mut a = vec!["--allow-future-now"];
        a.extend(extra);
        t.run(cmd, &a)
    };
    let (dir, id, bundle) = expire_into_bundle(&t);
    let key_of = |layer: &str| -> String {
        bundle["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["layer"] == layer)
            .unwrap_or_else(|| panic!("no {layer} in {bundle}"))["key"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let refused = |what: &str, expect: &str| {
        let o = run("restore", &["--bundle", &id, "--commit"]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", out_text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(expect), "{what}: {}", out_text(&o));
    };
    // Same bytes and time back: the version that was bundled.
    let put_right = |path: &Path, bytes: &[u8], mtime: std::time::SystemTime| {
        std::fs::write(path, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    };

    // A manifest rewritten at its key (another manifest's bytes).
    let manifest = t.root().join(key_of("manifest"));
    let m_bytes = std::fs::read(&manifest).unwrap();
    let m_time = std::fs::metadata(&manifest).unwrap().modified().unwrap();
    let other = std::fs::read_dir(t.root().join("metadata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-m0.avro") && *p != manifest)
        .unwrap();
    std::fs::copy(&other, &manifest).unwrap();
    refused("rewritten manifest", "rewritten");
    put_right(&manifest, &m_bytes, m_time);

    // A content file changed since it was bundled.
    let content = t.root().join(key_of("content"));
    let c_bytes = std::fs::read(&content).unwrap();
    let c_time = std::fs::metadata(&content).unwrap().modified().unwrap();
    let mut longer = c_bytes.clone();
    longer.push(0);
    std::fs::write(&content, &longer).unwrap();
    refused("changed content file", "changed since it was bundled");
    put_right(&content, &c_bytes, c_time);

    // The bundle's own copy of a layer tampered with.
    let copy = dir.join("copies").join(key_of("manifest-list"));
    let copy_bytes = std::fs::read(&copy).unwrap();
    std::fs::write(&copy, b"tampered").unwrap();
    refused("tampered copy", "does not match its digest");
    std::fs::write(&copy, &copy_bytes).unwrap();

    // Gone from the store: put back from the verified copy.
    std::fs::remove_file(&manifest).unwrap();
    let o = run("restore", &["--bundle", &id, "--commit"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(std::fs::read(&manifest).unwrap(), m_bytes);
    let after = py(&["check", t.dir.to_str().unwrap()])["travel"].clone();
    assert_eq!(after, before, "every snapshot reads what it read before");
}

/// Under a policy with a restore-drill gate, `sweep` approves and deletes
/// only once a drill passed, and every delete batch is accepted against the
/// same ledger's drills (`ledger-accept`); `apply` refuses such a plan.
#[test]
fn a_drill_gated_sweep_deletes_once_the_drill_passed_and_apply_refuses() {
    let policy = std::env::temp_dir().join(format!(
        "lakesweep-drill-policy-{}.json",
        std::process::id()
    ));
    let p = policy.display().to_string();
    let s = Setup::new("acc-drill-gate", 3, &[]);
    std::fs::write(&policy, drill_policy(&s.t, 1, "7d")).unwrap();
    // A plan made under the policy cannot go through `apply`.
    let mut a = vec!["plan".to_owned(), s.t.location()];
    a.extend(s.t.pointer());
    a.extend([
        "--policy".into(),
        p.clone(),
        "--out".into(),
        s.plan.display().to_string(),
    ]);
    assert!(lakesweep(&a).status.success());
    let o = s.apply(&[], None);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`sweep`"),
        "{}",
        out_text(&o)
    );
    assert!(s.orphans.iter().all(|k| s.exists(k)));
    // Four sweeps walk the orphans to RESTORE_VERIFIED; the fifth would
    // approve, but no drill has passed.
    for _ in 0..4 {
        let o = s.sweep(&["--policy", &p], None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    let o = s.sweep(&["--policy", &p], None);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["approval"]["differences"]
            .to_string()
            .contains("restore drill"),
        "{v}"
    );
    assert!(s.orphans.iter().all(|k| s.exists(k)));
    // The table has no bundles: a drill of all of them (none) passes, and
    // the next sweep approves and deletes, batch by batch.
    let o = lakesweep(&["drill".to_owned(), s.t.location()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let o = s.sweep(&["--policy", &p, "--batch", "1"], None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.orphans.iter().all(|k| !s.exists(k)), "{}", out_text(&o));
    let _ = std::fs::remove_file(&policy);
}

/// A sweep that moves nothing says why, and when the next step becomes
/// possible: the quarantine's end, from the core's outlook of the ledger.
#[test]
fn a_sweep_that_moves_nothing_says_what_waits_and_until_when() {
    let s = Setup::new("acc-outlook", 2, &[]);
    let table = s.t.location();
    let sweep = |json: bool| {
        let mut a = vec!["sweep", table.as_str(), "--quarantine", "2d"];
        if json {
            a.push("--json");
        }
        let o = s.command(&a, None);
        assert!(o.status.success(), "{}", out_text(&o));
        o
    };
    // Discovered, eligible, quarantined: each run moves both orphans on.
    for next in ["DISCOVERED", "UNREFERENCED_ELIGIBLE", "QUARANTINED"] {
        let text = String::from_utf8_lossy(&sweep(false).stdout).into_owned();
        assert!(text.contains(&format!("-> {next} (2)")), "{text}");
        assert!(text.contains("next steps:"), "{text}");
    }
    // The quarantine holds: nothing moves, and the report says until when.
    let text = String::from_utf8_lossy(&sweep(false).stdout).into_owned();
    assert!(text.contains("no object changed state this run"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("QUARANTINED"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("from ") && line.contains("(in 1day 23h"),
        "{line}"
    );
    let v = json(&sweep(true));
    let w = &v["outlook"][0];
    assert_eq!(w["state"], "QUARANTINED", "{v}");
    assert_eq!(w["count"], 2);
    let wait = w["earliestMs"].as_i64().unwrap() - lakesweep_now_ms();
    assert!(wait > 47 * 3_600_000 && wait <= 48 * 3_600_000, "{wait}");
    for o in &s.orphans {
        assert!(s.exists(o), "{o} deleted while in quarantine");
    }
}

/// The wall clock, as the sweep reads it.
fn lakesweep_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `status` over a table swept at a (simulated) time and one never swept:
/// the age of the last step against `--max-age`, objects per state, and the
/// same as Prometheus metrics; exit 1 while a table is stale.
#[test]
fn status_says_which_tables_stopped_being_swept() {
    let s = Setup::new("acc-status", 2, &[]);
    let never = PyTable::new("acc-status-never");
    let t0 = lakesweep_now_ms() + 30 * 86_400_000;
    let table = s.t.location();
    let o = s.command(
        &[
            "sweep",
            &table,
            "--now",
            &t0.to_string(),
            "--allow-future-now",
        ],
        None,
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let status = |tables: &[&str], days_later: i64, extra: &[&str]| {
        let mut a = vec!["status".to_owned()];
        a.extend(tables.iter().map(|t| t.to_string()));
        a.extend([
            "--now".into(),
            (t0 + days_later * 86_400_000).to_string(),
            "--max-age".into(),
            "2d".into(),
        ]);
        a.extend(extra.iter().map(|x| x.to_string()));
        lakesweep(&a)
    };
    // A day later: fresh.
    let o = status(&[&table], 1, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("(1day ago)"), "{text}");
    assert!(text.contains("DISCOVERED"), "{text}");
    assert!(text.contains("gates         all 0"), "{text}");
    // A day before the step (a clock that is wrong): stale, and said so.
    let o = status(&[&table], -1, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("ahead of this clock"), "{text}");

    // Three days later: stale; a table never swept is stale too.
    let o = status(&[&table], 3, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("STALE"));
    let never_table = never.location();
    let metrics = s.t.dir.join("lakesweep.prom");
    let o = status(
        &[&table, &never_table],
        1,
        &["--prometheus", metrics.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("never swept"));
    let prom = std::fs::read_to_string(&metrics).unwrap();
    let t = |table: &str| format!("table=\"{table}\"");
    assert!(
        prom.contains(&format!(
            "lakesweep_last_step_timestamp_seconds{{{}}} {}",
            t(&table),
            t0 as f64 / 1000.0
        )),
        "{prom}"
    );
    assert!(prom.contains(&format!(
        "lakesweep_ledger_objects{{{},state=\"DISCOVERED\"}} 2",
        t(&table)
    )));
    assert!(prom.contains(&format!("lakesweep_stale{{{}}} 0", t(&table))));
    assert!(prom.contains(&format!("lakesweep_stale{{{}}} 1", t(&never_table))));
    assert!(prom.contains(&format!(
        "lakesweep_ledger_readable{{{}}} 0",
        t(&never_table)
    )));
    assert_eq!(prom.matches("# TYPE lakesweep_gate gauge").count(), 1);
    // A ledger kept elsewhere is named with --ledger (one table at a time).
    let ledger = format!("{table}/_lakesweep/ledger.json");
    let o = status(&[&table], 1, &["--ledger", &ledger]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let o = status(
        &[&table],
        1,
        &["--ledger", &format!("{table}/elsewhere.json")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("elsewhere.json: never swept"));
    let o = status(&[&table, &never_table], 1, &["--ledger", &ledger]);
    assert_eq!(o.status.code(), Some(64), "{}", out_text(&o));
}

/// A plan made with a holds file and a leases file, applied with only the
/// leases file given: the plan's holds file is still read, so a hold
/// published in it since the plan refuses the plan and nothing goes.
#[test]
fn apply_with_some_context_files_still_reads_the_plans_others() {
    let dir = std::env::temp_dir().join(format!("lakesweep-ctxfiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let holds = dir.join("holds.json");
    let leases = dir.join("leases.json");
    std::fs::write(&holds, "[]").unwrap();
    std::fs::write(&leases, "[]").unwrap();
    let (h, l) = (holds.to_str().unwrap(), leases.to_str().unwrap());
    let s = Setup::new("acc-ctxfiles", 2, &["--holds", h, "--leases", l]);
    std::fs::write(
        &holds,
        format!(
            r#"[{{"scope":{{"pathPrefix":"{}"}},"generation":1,"reason":"case 9"}}]"#,
            s.orphans[0]
        ),
    )
    .unwrap();
    let o = s.apply(&["--leases", l], None);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot be applied"),
        "{}",
        out_text(&o)
    );
    for k in &s.orphans {
        assert!(s.exists(k), "{k} deleted under a hold");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `status` judges a ledger only for its own table, and a table never
/// swept is stale with or without `--max-age`.
#[test]
fn status_refuses_another_tables_ledger_and_a_never_swept_table_is_stale() {
    let a = Setup::new("acc-status-a", 1, &[]);
    let b = PyTable::new("acc-status-b");
    let o = a.sweep(&["--now", &month_ahead(), "--allow-future-now"], None);
    assert!(o.status.success(), "{}", out_text(&o));
    let a_ledger = format!("{}/_lakesweep/ledger.json", a.t.location());
    let o = lakesweep(&["status", &b.location(), "--ledger", &a_ledger, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["stale"], true, "{v}");
    assert!(
        v[0]["error"].as_str().unwrap().contains("another table"),
        "{v}"
    );
    // Never swept, no --max-age: stale all the same.
    let o = lakesweep(&["status", &b.location()]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(out_text(&o).contains("never swept"), "{}", out_text(&o));
}

/// A sweep deletes its batch; a writer adopts one of the deleted keys and
/// the sweep is killed before its damage check. `reconcile` verifies the
/// delete, but the next sweep's plan, checked against the keys the ledger
/// deleted, finds the key referenced and missing: damage (exit 3, the gate,
/// a restore hint), and `status` raises it until the file is back.
#[test]
fn damage_lost_by_a_kill_is_found_by_the_next_sweep_and_status() {
    let s = Setup::new("acc-kill-damage", 3, &[]);
    let sweep = |hook: Option<&Path>| s.sweep(&[], hook);
    for _ in 0..4 {
        let o = sweep(None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    let adopted = s.orphans[0].clone();
    let keep = s.t.dir.join("adopted.parquet");
    std::fs::copy(s.t.root().join(&adopted), &keep).unwrap();
    // After the last batch: the writer adopts a deleted key (its file put
    // back for the commit, then gone again), and the sweep dies.
    let body = format!(
        "cp '{k}' '{f}'\n{add}\nrm '{f}'\nkill -9 $PPID",
        k = keep.display(),
        f = s.t.root().join(&adopted).display(),
        add = s.add(&adopted)
    );
    let hook = s.hook("final", &body);
    let o = sweep(Some(&hook));
    assert!(!o.status.success());
    assert!(s.orphans.iter().all(|k| !s.exists(k)));
    std::fs::remove_file(s.t.root().join("_lakesweep/ledger.json.lock")).unwrap();
    let o = lakesweep(&["reconcile", &s.t.location(), "--json"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let o = sweep(None);
    assert_eq!(o.status.code(), Some(3), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gates"]["damaged"], 1, "{v}");
    let d = &v["openDamage"][0];
    assert_eq!(d["key"], adopted.as_str(), "{v}");
    assert!(d["restore"].as_str().unwrap().contains("restore"), "{v}");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("not in the listing")),
        "{v}"
    );
    let o = lakesweep(&["status", &s.t.location(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(out_text(&o).contains("damage"), "{}", out_text(&o));
    // Restored: the next sweep resolves it.
    std::fs::copy(&keep, s.t.root().join(&adopted)).unwrap();
    let o = sweep(None);
    assert!(o.status.success(), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gates"]["damaged"], 0, "{v}");
}

/// The ledger's files: a damaged object file stops the sweep naming it
/// (nothing deleted); verified objects leave the files read on every run
/// for an archive, which `ledger show --archived` and `ledger verify` read,
/// and a damaged archive is named by `ledger verify`.
#[test]
fn the_ledgers_files_are_checked_and_verified_objects_are_archived() {
    let s = Setup::new("acc-ledger-files", 3, &[]);
    let folder = s.t.root().join("_lakesweep/ledger.json.d");
    let files = |prefix: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&folder)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix));
        v.sort();
        v
    };
    let flip = |p: &Path| -> Vec<u8> {
        let good = std::fs::read(p).unwrap();
        let mut bad = good.clone();
        let i = bad.len() / 2;
        bad[i] ^= 0x20;
        std::fs::write(p, bad).unwrap();
        good
    };
    let o = s.sweep(&[], None);
    assert!(o.status.success(), "{}", out_text(&o));
    let segments = files("objects-");
    assert_eq!(segments.len(), 1, "{segments:?}");
    let good = flip(&segments[0]);
    let o = s.sweep(&[], None);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let name = segments[0].file_name().unwrap().to_str().unwrap();
    assert!(
        out_text(&o).contains(name),
        "names the file: {}",
        out_text(&o)
    );
    std::fs::write(&segments[0], good).unwrap();
    // Sweeps until every orphan is deleted and verified.
    let verified = || -> Value {
        let o = lakesweep(&["ledger", "show", &s.t.location(), "--json"]);
        assert!(o.status.success(), "{}", out_text(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    for _ in 0..8 {
        if verified()["verified"]["objects"] == 3 {
            break;
        }
        let o = s.sweep(&[], None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    let shown = verified();
    assert_eq!(shown["verified"]["objects"], 3, "{shown}");
    assert_eq!(shown["objects"], serde_json::json!({}), "nothing in flight");
    assert!(s.orphans.iter().all(|k| !s.exists(k)));
    assert!(
        files("objects-").is_empty(),
        "no object file once none is in flight"
    );
    let objects = ledger_objects(&s.t.location());
    for k in &s.orphans {
        assert_eq!(objects[k]["state"], "VERIFIED", "{objects}");
        assert_eq!(objects[k]["receipt"]["result"], "deleted", "{objects}");
    }
    // A killed save's file goes with the next save; anything else stays.
    let stray = folder.join("objects-r000099-0000-ffffffffffffffff.jsonl.gz");
    let other = folder.join("notes.txt");
    std::fs::write(&stray, b"left by a killed save").unwrap();
    std::fs::write(&other, b"not the ledger's").unwrap();
    let o = s.sweep(&[], None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(!stray.exists(), "the stray is removed");
    assert!(other.exists(), "a file the ledger would never write stays");
    let verify = || lakesweep(&["ledger", "verify", &s.t.location(), "--json"]);
    let o = verify();
    assert!(o.status.success(), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["archivesChecked"], 1, "{v}");
    assert_eq!(v["problems"], serde_json::json!([]), "{v}");
    let archives = files("archive-");
    assert_eq!(archives.len(), 1, "{archives:?}");
    flip(&archives[0]);
    let o = verify();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let name = archives[0].file_name().unwrap().to_str().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(name),
        "{}",
        out_text(&o)
    );
}

/// The shell line that runs `lakesweep ARGS` (the same binary and planner).
fn lakesweep_line(args: &[&str]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    format!(
        "LAKESWEEP_WASM='{}' '{}' {} >/dev/null",
        repo().join("target/lakesweep.wasm").display(),
        env!("CARGO_BIN_EXE_lakesweep"),
        quoted.join(" ")
    )
}

#[test]
fn a_fleet_halt_between_batches_stops_apply_before_its_next_batch() {
    let s = Setup::new("acc-halt", 8, &[]);
    let fleet = format!("file://{}", s.t.dir.join("ops/stop.json").display());
    // Batch 2 was accepted; before its deletes an operator halts the fleet.
    let halt = lakesweep_line(&[
        "halt",
        "--stop-switch",
        &fleet,
        "--reason",
        "listing looks wrong",
        "--by",
        "oncall",
    ]);
    let hook = s.hook("2", &halt);
    let o = s.apply(&["--batch", "2", "--stop-switch", &fleet], Some(&hook));
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let rs = s.receipts();
    // Batch 2 was already accepted: it goes; nothing after it does.
    assert_eq!(
        results(&rs, "deleted"),
        s.orphans[..4].iter().cloned().collect(),
        "{rs:?}"
    );
    assert_eq!(
        results(&rs, "skipped-stopped"),
        s.orphans[4..].iter().cloned().collect()
    );
    let stopped = rs
        .iter()
        .find(|r| r["result"] == "skipped-stopped")
        .unwrap();
    assert!(
        stopped["detail"]
            .as_str()
            .unwrap()
            .contains("listing looks wrong"),
        "{stopped}"
    );
    assert!(s.orphans[4..].iter().all(|k| s.exists(k)));
    // While it is set, a new run deletes nothing, and its receipts say why.
    let o = s.apply(&["--stop-switch", &fleet], None);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(s.orphans[4..].iter().all(|k| s.exists(k)));
    // A resume needs who and why; a second resume has nothing to clear.
    let resume = |by: &str| {
        lakesweep(&[
            "resume",
            "--stop-switch",
            &fleet,
            "--reason",
            "checked",
            "--by",
            by,
        ])
    };
    let o = resume("oncall");
    assert!(o.status.success(), "{}", out_text(&o));
    let o = resume("oncall");
    assert!(!o.status.success(), "{}", out_text(&o));
    // Cleared: the rest goes.
    let o = s.apply(&["--stop-switch", &fleet], None);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.orphans.iter().all(|k| !s.exists(k)));
}

#[test]
fn a_switch_that_cannot_be_read_as_one_stops_every_delete() {
    let s = Setup::new("acc-halt-garbage", 2, &[]);
    // The table's own switch, half written: nothing is deleted.
    let sw = s.t.root().join("_lakesweep/stop.json");
    std::fs::create_dir_all(sw.parent().unwrap()).unwrap();
    std::fs::write(&sw, "{\"schema\":\"lakesweepStop.v1\",\"hal").unwrap();
    let o = s.apply(&[], None);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(s.orphans.iter().all(|k| s.exists(k)));
    assert!(
        results(&s.receipts(), "skipped-stopped").len() == 2,
        "{:?}",
        s.receipts()
    );
}

#[test]
fn a_halt_stops_sweep_and_lengthens_the_quarantine_of_what_waits() {
    let s = Setup::new("acc-halt-sweep", 4, &[]);
    let sweep = |extra: &[&str]| s.sweep(extra, None);
    // Discovered, eligible, quarantined, restore-verified: nothing deleted yet.
    for _ in 0..4 {
        let o = sweep(&[]);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    let table = s.t.location();
    let o = lakesweep(&[
        "halt", &table, "--reason", "audit", "--by", "sre", "--extend", "3d", "--json",
    ]);
    assert!(o.status.success(), "{}", out_text(&o));
    let v = json(&o);
    assert_eq!(v["ledgers"][0]["objects"], 4, "{v}");
    let objects = ledger_objects(&table);
    for k in &s.orphans {
        assert_eq!(objects[k]["state"], "QUARANTINED", "{objects}");
    }
    // Status shows the halt and the switch.
    let o = lakesweep(&["status", &table, "--json"]);
    let st = json(&o);
    assert!(st[0]["halted"].as_str().unwrap().contains("audit"), "{st}");
    assert_eq!(st[0]["halts"][0]["by"], "sre", "{st}");
    // Resumed at once: the lengthened quarantine still holds every object.
    let o = lakesweep(&["resume", &table, "--reason", "ok", "--by", "sre"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let o = sweep(&[]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(s.orphans.iter().all(|k| s.exists(k)), "{}", out_text(&o));
    // Three days on, they pass their restore check again and go; the
    // cleared switch's halt is not counted twice.
    let later = (lakesweep_now_ms() + 3 * 86_400_000 + 60_000).to_string();
    for _ in 0..2 {
        let o = sweep(&["--now", &later, "--allow-future-now"]);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    assert!(s.orphans.iter().all(|k| !s.exists(k)));
}

#[test]
fn a_full_restore_drill_into_scratch_reads_the_bundles_rows_and_gates_status() {
    let t = PyTable::new("acc-scratch");
    let before = py(&["check", t.dir.to_str().unwrap()])["travel"].clone();
    // A first sweep makes the ledger the drill is recorded in.
    let mut a = vec!["sweep".to_owned(), t.location()];
    a.extend(t.pointer());
    assert!(lakesweep(&a).status.success());
    let (_, id, bundle) = expire_into_bundle(&t);
    let scratch = format!("file://{}", t.dir.join("scratch/t").display());
    let policy = t.dir.join("policy.json");
    let write_policy = |rpo: &str| {
        let p = format!(
            r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{}","format":"iceberg"}},
                "fileRetention":{{"orphanSafetyInterval":"3d"}},
                "restoreDrill":{{"minBundles":1,"rto":"1h","rpo":"{rpo}","fullEvery":"92d"}}}}"#,
            t.uuid()
        );
        std::fs::write(&policy, p).unwrap();
    };
    write_policy("30d");
    let drill = |into: &str| {
        lakesweep(&[
            "drill",
            &t.location(),
            "--restore-into",
            into,
            "--policy",
            policy.to_str().unwrap(),
            "--json",
        ])
    };
    // Never into the table itself.
    let inside = format!("{}/scratch", t.location());
    let o = drill(&inside);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("overlap"),
        "{}",
        out_text(&o)
    );
    let v = json(&drill(&scratch));
    assert_eq!(v["bundle"], id.as_str(), "{v}");
    assert_eq!(v["passed"], true, "{v}");
    assert!(v["rtoMs"].as_i64().unwrap() >= 0 && v["objects"].as_u64().unwrap() > 2);
    // The scratch table reads the bundle's snapshots' rows, with the table
    // itself out of reach.
    let hidden = t.dir.join("hidden-while-reading");
    std::fs::rename(t.root(), &hidden).unwrap();
    let read = std::panic::catch_unwind(|| py(&["static", v["metadata"].as_str().unwrap()]));
    std::fs::rename(&hidden, t.root()).unwrap();
    let read = read.unwrap();
    let ids: Vec<String> = bundle["snapshotIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.to_string())
        .collect();
    assert!(!ids.is_empty());
    for i in &ids {
        assert_eq!(
            read["travel"][i], before[i],
            "snapshot {i}: {read} {before}"
        );
    }
    assert_eq!(read["current"], v["snapshotId"]);
    assert_eq!(read["location"], scratch.as_str());
    assert_eq!(read["lengths_ok"], true, "{read}");
    // A scratch location that holds objects is refused.
    let o = drill(&scratch);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    // Status shows the drill; one that misses its RPO is a stale gate.
    let st = json(&lakesweep(&["status", &t.location(), "--json"]));
    assert_eq!(st[0]["fullDrill"]["passed"], true, "{st}");
    write_policy("1ms");
    let again = format!("file://{}", t.dir.join("scratch2/t").display());
    let o = drill(&again);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let o = lakesweep(&["status", &t.location()]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("missed its targets"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn a_halt_between_sweep_batches_stops_the_deletes_before_the_next_batch() {
    let s = Setup::new("acc-halt-sweep-race", 6, &[]);
    let fleet = format!("file://{}", s.t.dir.join("ops/stop.json").display());
    let sweep = |hook: Option<&Path>| s.sweep(&["--batch", "2", "--stop-switch", &fleet], hook);
    // Discovered, eligible, quarantined, restore-verified: nothing deleted yet.
    for _ in 0..4 {
        let o = sweep(None);
        assert!(o.status.success(), "{}", out_text(&o));
    }
    // The approving run: batch 2 is accepted, then the fleet is halted.
    let halt = lakesweep_line(&[
        "halt",
        "--stop-switch",
        &fleet,
        "--reason",
        "canary looks wrong",
        "--by",
        "oncall",
    ]);
    let hook = s.hook("2", &halt);
    let o = sweep(Some(&hook));
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["stopped"].to_string().contains("canary looks wrong"),
        "{v}"
    );
    let gone = s.orphans.iter().filter(|k| !s.exists(k)).count();
    assert_eq!(gone, 4, "batches 1 and 2 deleted, nothing after: {v}");
}
