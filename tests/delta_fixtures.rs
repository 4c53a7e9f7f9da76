//! Delta Lake planning over the project's own deltalake-written tables
//! (`tests/fixtures/delta`, made by `tests/fixtures/generate_delta.py`) and
//! over delta-rs's public fixtures in `../shared` when present.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use lakesweep::{Error, SessionConfig, TableFormat, UnsafeReason, Verdict};
use serde_json::Value;

const DAY: i64 = 86_400_000;
const HOUR: i64 = 3_600_000;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta")
}

struct Fixture {
    name: String,
    location: String,
    expect: Value,
}

impl Fixture {
    fn load(name: &str) -> Fixture {
        let all: Value =
            serde_json::from_slice(&std::fs::read(dir().join("expect.json")).unwrap()).unwrap();
        Fixture {
            name: name.into(),
            location: format!("file://{}", dir().join(name).display()),
            expect: all[name].clone(),
        }
    }
    fn generated_at(&self) -> i64 {
        self.expect["generated_at_ms"].as_i64().unwrap()
    }
    fn set(&self, key: &str) -> BTreeSet<String> {
        match &self.expect[key] {
            Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
            Value::Object(o) => o.keys().cloned().collect(),
            _ => panic!("{key}"),
        }
    }
    fn planted(&self, class: &str) -> BTreeSet<String> {
        self.expect["planted"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, c)| c.as_str() == Some(class))
            .map(|(k, _)| k.clone())
            .collect()
    }
    fn opts(&self) -> HostOptions {
        let mut o = HostOptions::synthetic();
        o.mtimes = self.expect["mtimes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect();
        o.mtime_base = Some(self.location.clone());
        o
    }
    fn config(&self, now: i64, retention: i64) -> SessionConfig {
        let mut c = SessionConfig::new(&self.location, "", now, retention);
        c.format = TableFormat::Delta;
        c
    }
    fn uri(&self, rel: &str) -> String {
        format!("{}/{rel}", self.location)
    }
}

fn deletes(run: &Run) -> BTreeSet<String> {
    run.plan().delete.into_iter().map(|d| d.key).collect()
}

fn union(sets: &[BTreeSet<String>]) -> BTreeSet<String> {
    sets.iter().flatten().cloned().collect()
}

#[test]
fn events_inside_the_retention_deletes_only_old_orphans() {
    let f = Fixture::load("events");
    let now = f.generated_at() + DAY;
    let run = run_native(f.config(now, 7 * DAY), &f.opts()).unwrap();
    let want = union(&[f.planted("old-orphan"), f.planted("cdc-orphan")]);
    assert_eq!(deletes(&run), want);
    let v = run.verdicts();
    for live in f.set("live") {
        assert_eq!(v[&live].verdict, Verdict::Referenced, "{live}");
        assert!(
            v[&live].detail.contains("live file of Delta version 13"),
            "{}",
            v[&live].detail
        );
    }
    for t in f.set("tombstones") {
        assert_eq!(v[&t].verdict, Verdict::Referenced, "{t}");
        assert!(v[&t].detail.contains("tombstone"), "{}", v[&t].detail);
    }
    for c in f.set("cdc") {
        assert_eq!(v[&c].verdict, Verdict::Referenced, "{c}");
        assert!(v[&c].detail.contains("change-data"), "{}", v[&c].detail);
    }
    for k in union(&[f.planted("fresh-orphan"), f.planted("failed-commit")]) {
        assert_eq!(v[&k].verdict, Verdict::Young, "{k}");
    }
    for k in union(&[f.planted("hidden"), f.planted("staging")]) {
        assert_eq!(v[&k].verdict, Verdict::Hidden, "{k}");
    }
    for (k, d) in &v {
        if k.starts_with("_delta_log/") {
            assert_eq!(d.verdict, Verdict::Hidden, "{k}");
        }
    }
    let plan = run.plan();
    assert!(plan
        .tokens
        .metadata_location
        .ends_with("_delta_log/00000000000000000013.json"));
    assert_eq!(plan.tokens.refs["version"], 13);
    assert_eq!(plan.summary.referenced_not_listed, 0);
}

#[test]
fn events_after_the_retention_deletes_tombstones_and_change_data() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    let run = run_native(f.config(now, 7 * DAY), &f.opts()).unwrap();
    let want = union(&[
        f.set("tombstones"),
        f.set("cdc"),
        f.planted("old-orphan"),
        f.planted("cdc-orphan"),
        f.planted("fresh-orphan"),
        f.planted("failed-commit"),
    ]);
    assert_eq!(deletes(&run), want);
    assert!(deletes(&run).is_disjoint(&f.set("live")));
}

#[test]
fn decisions_do_not_depend_on_pages_or_read_order() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    let base = run_native(f.config(now, 7 * DAY), &f.opts()).unwrap();
    for (page, shuffle) in [(1, 7), (5, 3), (13, 0), (1000, 1)] {
        let mut o = f.opts();
        o.page_size = page;
        o.shuffle = shuffle;
        let run = run_native(f.config(now, 7 * DAY), &o).unwrap();
        assert_eq!(
            run.plan().digest,
            base.plan().digest,
            "page {page} shuffle {shuffle}"
        );
    }
}

#[test]
fn a_kept_version_keeps_the_files_it_read() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    let mut cfg = f.config(now, 7 * DAY);
    // Version 3 is before the checkpoint (8): replay starts at version 0.
    cfg.keep_versions = vec![3];
    let run = run_native(cfg, &f.opts()).unwrap();
    let v = run.verdicts();
    let kept_at_3: Vec<&String> = v
        .iter()
        .filter(|(_, d)| d.detail == "live file of Delta version 3")
        .map(|(k, _)| k)
        .collect();
    // Three appends of 8 partitions each, all removed by the overwrite at 4.
    assert_eq!(kept_at_3.len(), 24, "{kept_at_3:?}");
    for k in kept_at_3 {
        assert!(f.set("tombstones").contains(k), "{k}");
        assert!(!deletes(&run).contains(k));
    }
    // A version above the newest one cannot be protected.
    let mut cfg = f.config(now, 7 * DAY);
    cfg.keep_versions = vec![99];
    let e = run_native(cfg, &f.opts()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::ProtectedSnapshotMissing,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_live_lease_on_a_version_keeps_it_like_keep_versions() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    let mut cfg = f.config(now, 7 * DAY);
    cfg.context = Some(format!(
        r#"{{"leases":[{{"snapshotId":5,"purpose":"training","owner":"ml","expiresAtMs":{},"readerGeneration":1}}]}}"#,
        now + DAY
    ));
    let run = run_native(cfg, &f.opts()).unwrap();
    assert!(run
        .verdicts()
        .values()
        .any(|d| d.detail == "live file of Delta version 5"));
}

#[test]
fn the_retention_check_refuses_a_window_shorter_than_the_tables() {
    let f = Fixture::load("events");
    let now = f.generated_at() + DAY;
    let e = run_native(f.config(now, DAY), &f.opts()).unwrap_err();
    assert!(matches!(e, Error::InvalidOptions { .. }), "{e}");
    assert!(
        e.to_string().contains("deletedFileRetentionDuration"),
        "{e}"
    );
    let mut cfg = f.config(now + 7 * DAY, HOUR);
    cfg.allow_short_retention = true;
    let run = run_native(cfg, &f.opts()).unwrap();
    assert!(run
        .plan()
        .warnings
        .iter()
        .any(|w| w.contains("retention check overridden")));
}

#[test]
fn log_cleanup_removes_only_entries_below_an_old_checkpoint() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 40 * DAY;
    let mut cfg = f.config(now, 7 * DAY);
    let off = run_native(cfg.clone(), &f.opts()).unwrap();
    assert!(deletes(&off).iter().all(|k| !k.starts_with("_delta_log/")));
    cfg.log_cleanup = true;
    let run = run_native(cfg, &f.opts()).unwrap();
    let logs: BTreeSet<String> = deletes(&run)
        .into_iter()
        .filter(|k| k.starts_with("_delta_log/"))
        .collect();
    let want: BTreeSet<String> = (0..8).map(|v| format!("_delta_log/{v:020}.json")).collect();
    assert_eq!(logs, want);
    let v = run.verdicts();
    assert_eq!(
        v["_delta_log/00000000000000000000.json"].verdict,
        Verdict::ExpiredLog
    );
    assert_eq!(
        run.plan().summary.reclaimable["delta-log"].count,
        8,
        "{:?}",
        run.plan().summary.reclaimable
    );
    // A kept version below the checkpoint keeps the whole log it needs.
    let mut cfg = f.config(now, 7 * DAY);
    cfg.log_cleanup = true;
    cfg.keep_versions = vec![2];
    let run = run_native(cfg, &f.opts()).unwrap();
    assert!(deletes(&run).iter().all(|k| !k.starts_with("_delta_log/")));
}

#[test]
fn a_commit_landing_after_the_listing_demotes_its_files() {
    let f = Fixture::load("events");
    let now = f.generated_at() + DAY;
    let orphan = f.planted("old-orphan").into_iter().next().unwrap();
    let commit = format!(
        "{{\"commitInfo\":{{\"timestamp\":{now}}}}}\n{{\"add\":{{\"path\":\"{}\",\"size\":1,\"modificationTime\":1,\"dataChange\":true,\"partitionValues\":{{}}}}}}\n",
        orphan.replace('%', "%25")
    );
    let mut o = f.opts();
    o.replace.insert(
        f.uri("_delta_log/00000000000000000014.json"),
        commit.into_bytes(),
    );
    let run = run_native(f.config(now, 7 * DAY), &o).unwrap();
    let v = run.verdicts();
    assert_eq!(v[&orphan].verdict, Verdict::Demoted, "{:?}", v[&orphan]);
    assert!(!deletes(&run).contains(&orphan));
    let plan = run.plan();
    assert_eq!(plan.summary.rechecks, 1);
    assert!(plan
        .tokens
        .metadata_location
        .ends_with("00000000000000000014.json"));
}

#[test]
fn simple_table_without_checkpoint() {
    let f = Fixture::load("simple");
    let now = f.generated_at() + 8 * DAY;
    let run = run_native(f.config(now, 7 * DAY), &f.opts()).unwrap();
    assert_eq!(
        deletes(&run),
        union(&[f.set("tombstones"), f.planted("old-orphan")])
    );
}

/// Copies a fixture table into a scratch folder (to break it).
fn scratch(f: &Fixture, tag: &str) -> (Fixture, tempdir::Dir) {
    let tmp = tempdir::Dir::new(tag);
    copy_tree(&dir().join(&f.name), tmp.path());
    let g = Fixture {
        name: f.name.clone(),
        location: format!("file://{}", tmp.path().display()),
        expect: f.expect.clone(),
    };
    (g, tmp)
}

mod tempdir {
    use std::path::{Path, PathBuf};
    pub struct Dir(PathBuf);
    impl Dir {
        pub fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir().join(format!(
                "lakesweep-delta-{tag}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
        /// Takes over a folder made elsewhere (removed on drop).
        pub fn adopt(p: PathBuf) -> Dir {
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn malformed_logs_yield_typed_errors_and_no_plan() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    // Each damage is written into a scratch copy, so the listing agrees
    // with the bytes and the parser itself must catch it.
    let damaged = |tag: &str, file: &str, bytes: &[u8]| {
        let (g, tmp) = scratch(&f, tag);
        std::fs::write(vpath(&g.uri(file)).unwrap(), bytes).unwrap();
        (run_native(g.config(now, 7 * DAY), &g.opts()), tmp)
    };
    let cp = "_delta_log/00000000000000000008.checkpoint.parquet";
    let bytes = std::fs::read(vpath(&f.uri(cp)).unwrap()).unwrap();
    // A truncated checkpoint.
    for cut in [bytes.len() - 1, bytes.len() / 2, 8] {
        let (r, _t) = damaged("cut", cp, &bytes[..cut]);
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "cut {cut}: {e}");
    }
    // A commit with invalid JSON.
    let (r, _t) = damaged(
        "json",
        "_delta_log/00000000000000000010.json",
        b"{\"add\":{\"path\":\"x\"",
    );
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("line 1"), "{e}");
    // An unknown reader feature in a later commit.
    let (r, _t) = damaged(
        "feature",
        "_delta_log/00000000000000000012.json",
        br#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["quantumStorage"],"writerFeatures":["quantumStorage"]}}"#,
    );
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("quantumStorage"), "{e}");
    // A commit that vanished between listing and reading.
    let mut o = f.opts();
    o.missing
        .push(f.uri("_delta_log/00000000000000000011.json"));
    let e = run_native(f.config(now, 7 * DAY), &o).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::MissingMetadata,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn gaps_and_incomplete_checkpoints_stop_the_plan() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    // A gap in the version sequence after the checkpoint.
    let (g, _tmp) = scratch(&f, "gap");
    std::fs::remove_file(vpath(&g.uri("_delta_log/00000000000000000010.json")).unwrap()).unwrap();
    let e = run_native(g.config(now, 7 * DAY), &g.opts()).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("commit 10 is missing"), "{e}");
    // Commits before the checkpoint cleaned up, and the checkpoint is a
    // multi-part set with its second part missing: nothing to start from.
    let (g, _tmp) = scratch(&f, "parts");
    let log = vpath(&g.uri("_delta_log")).unwrap();
    for v in 0..8 {
        std::fs::remove_file(log.join(format!("{v:020}.json"))).unwrap();
    }
    std::fs::rename(
        log.join("00000000000000000008.checkpoint.parquet"),
        log.join("00000000000000000008.checkpoint.0000000001.0000000002.parquet"),
    )
    .unwrap();
    let mut o = g.opts();
    o.default_mtime = Some(now - DAY);
    let e = run_native(g.config(now, 7 * DAY), &o).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    // Completed with a copy of part 1: the set is whole, but it holds two
    // protocol and two metaData actions, so it is not a checkpoint.
    std::fs::copy(
        log.join("00000000000000000008.checkpoint.0000000001.0000000002.parquet"),
        log.join("00000000000000000008.checkpoint.0000000002.0000000002.parquet"),
    )
    .unwrap();
    let e = run_native(g.config(now, 7 * DAY), &o).unwrap_err();
    assert!(e.to_string().contains("2 protocol"), "{e}");
    // A log with no commit at all.
    let (g, _tmp) = scratch(&f, "empty");
    std::fs::remove_dir_all(vpath(&g.uri("_delta_log")).unwrap()).unwrap();
    let e = run_native(g.config(now, 7 * DAY), &g.opts()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::MissingMetadata,
                ..
            }
        ),
        "{e}"
    );
}

// --- delta-rs's public fixtures -------------------------------------------

/// A table of delta-rs's public fixtures beside the checkout. The tests
/// using it are `#[ignore]`d (a fresh clone has no `../shared`);
/// `scripts/test.sh` runs them with `--ignored` whenever
/// `../shared/fixtures` exists, and then a missing table is a failure,
/// never a skip.
fn shared(table: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/delta-rs")
        .join(table);
    assert!(
        p.is_dir(),
        "../shared/fixtures/delta-rs/{table} is missing: run these tests only where ../shared/fixtures exists"
    );
    format!("file://{}", p.canonicalize().unwrap().display())
}

/// Plans a shared table far in the future with every file 30 days old.
fn plan_shared(table: &str) -> Result<Run, Error> {
    let loc = shared(table);
    let now = 1_900_000_000_000;
    let mut cfg = SessionConfig::new(&loc, "", now, 7 * DAY);
    cfg.format = TableFormat::Delta;
    let mut o = HostOptions::synthetic();
    o.default_mtime = Some(now - 30 * DAY);
    run_native(cfg, &o)
}

fn verdicts_of(table: &str) -> BTreeMap<String, lakesweep::Decision> {
    plan_shared(table)
        .unwrap_or_else(|e| panic!("{table}: {e}"))
        .verdicts()
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn shared_deletion_vector_tables_keep_live_vectors() {
    let v = verdicts_of("table-with-dv-small");
    let dv = "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin";
    assert_eq!(v[dv].verdict, Verdict::Referenced);
    assert!(v[dv].detail.contains("deletion vector"), "{}", v[dv].detail);
    // Vectors of files removed long ago go; the live ones stay.
    for (table, live_dv) in [
        ("cdf-table-with-cdc-and-dvs", "Xq<G^UbT+TGkmx<+7Y=5"),
        ("table_with_deletion_logs", "Q6Kt3y1b)0MgZSWwPunr"),
    ] {
        let v = verdicts_of(table);
        let dv = lakesweep::spec::delta::DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: live_dv.into(),
            offset: None,
        };
        let name = lakesweep::spec::delta::dv_file("t", &dv)
            .unwrap()
            .unwrap()
            .as_str()
            .to_owned();
        assert_eq!(v[&name].verdict, Verdict::Referenced, "{table}: {name}");
        assert!(v[&name].detail.contains("deletion vector of a live file"));
    }
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn shared_checkpoint_variants_replay() {
    // V2 checkpoint with sidecars, stale _last_checkpoint, no _last_checkpoint.
    for table in [
        "checkpoint-v2-table",
        "table_failed_last_checkpoint_update",
        "table_with_column_mapping",
        "delta-0.8.0-null-partition",
    ] {
        let r = plan_shared(table);
        let run = r.unwrap_or_else(|e| panic!("{table}: {e}"));
        let plan = run.plan();
        assert!(plan.summary.verdicts["referenced"].count > 0, "{table}");
        assert_eq!(
            plan.summary.referenced_not_listed, 0,
            "{table}: {:?}",
            plan.warnings
        );
        for (k, d) in run.verdicts() {
            if k.starts_with("_delta_log/") {
                assert_eq!(d.verdict, Verdict::Hidden, "{table}: {k}");
            }
        }
    }
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn shared_tables_plan_the_same_from_checkpoint_digests() {
    // Every delta-rs table with a checkpoint (Parquet, V2 JSON with
    // sidecars, multi-version, stale `_last_checkpoint`): the plan from
    // digests is the plan from the bytes, or the same error.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/delta-rs");
    let mut digested = 0;
    let mut tables: Vec<_> = std::fs::read_dir(&root)
        .expect("../shared/fixtures/delta-rs")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    tables.sort();
    for table in tables {
        let log = root.join(&table).join("_delta_log");
        let has_checkpoint = std::fs::read_dir(&log).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().contains(".checkpoint."))
        });
        if !has_checkpoint {
            continue;
        }
        let loc = shared(&table);
        let now = 1_900_000_000_000;
        let mut cfg = SessionConfig::new(&loc, "", now, 7 * DAY);
        cfg.format = TableFormat::Delta;
        let mut o = HostOptions::synthetic();
        o.default_mtime = Some(now - 30 * DAY);
        let from_bytes = run_native(cfg.clone(), &o).map(|r| r.plan_json);
        let mut p = Digesting(lakesweep::Session::start(cfg).unwrap(), 0, 0);
        let from_digests = drive(&mut p, &loc, &o).map(|r| r.plan_json);
        match (&from_bytes, &from_digests) {
            (Ok(a), Ok(b)) => assert!(a == b, "{table}: the plans differ"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{table}"),
            _ => panic!("{table}: bytes {from_bytes:?}, digests {from_digests:?}"),
        }
        if table == "checkpoint-v2-table" {
            assert_eq!(p.2, 2, "{table}: its V2 checkpoint and its sidecar");
        }
        digested += p.2;
    }
    assert!(
        digested >= 6,
        "only {digested} checkpoint files were digested"
    );
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn shared_special_partitions_decode_once_and_keep_crc_files() {
    let v = verdicts_of("delta-0.8.0-special-partition");
    for (k, d) in &v {
        if k.ends_with(".crc") {
            assert_eq!(d.verdict, Verdict::Hidden, "{k}");
        } else if !k.starts_with("_delta_log/") {
            assert_eq!(d.verdict, Verdict::Referenced, "{k}: {}", d.detail);
        }
    }
    assert!(v.keys().any(|k| k.starts_with("x=A%2FA/")));
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn shared_log_without_its_data_files_is_refused() {
    // These ship only their logs: every referenced file is missing, which
    // looks like a wrong location; nothing may be deleted. (The checkpoint
    // without `_last_checkpoint` was found by listing and read first.)
    for table in ["checkpoints_vacuumed", "with_checkpoint_no_last_checkpoint"] {
        let r = plan_shared(table);
        let e = r.unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unsafe {
                    reason: UnsafeReason::NoReferencedKeyListed,
                    ..
                }
            ),
            "{table}: {e}"
        );
    }
}

// --- synthetic logs for the review's findings -------------------------------

const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#;
const METADATA: &str = r#"{"metaData":{"id":"t-1","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#;

/// A Delta table written by hand into a scratch folder: `log` holds
/// (file name under `_delta_log/`, content, mtime), `files` (relative key, mtime).
struct Synth {
    dir: tempdir::Dir,
    location: String,
    opts: HostOptions,
}

fn synth(tag: &str, log: &[(String, String, i64)], files: &[(String, i64)]) -> Synth {
    let dir = tempdir::Dir::new(tag);
    let location = format!("file://{}", dir.path().display());
    let mut opts = HostOptions::synthetic();
    opts.mtime_base = Some(location.clone());
    std::fs::create_dir_all(dir.path().join("_delta_log")).unwrap();
    for (name, text, mtime) in log {
        std::fs::write(dir.path().join("_delta_log").join(name), text).unwrap();
        opts.mtimes.insert(format!("_delta_log/{name}"), *mtime);
    }
    for (rel, mtime) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"parquet").unwrap();
        opts.mtimes.insert(rel.clone(), *mtime);
    }
    Synth {
        dir,
        location,
        opts,
    }
}

fn commit(v: u64) -> String {
    format!("{v:020}.json")
}

fn plan_synth(s: &Synth, now: i64, window: i64) -> Result<Run, Error> {
    let mut cfg = SessionConfig::new(&s.location, "", now, window);
    cfg.format = TableFormat::Delta;
    run_native(cfg, &s.opts)
}

const NOW: i64 = 1_900_000_000_000;

#[test]
fn absolute_paths_with_one_slash_are_absolute_not_relative() {
    // Spark and Hadoop write `file:/tmp/t/x` (one slash); joined onto the
    // root it would name another file and the real one would look orphaned.
    let dir = tempdir::Dir::new("abs-probe");
    let root = dir.path().display().to_string();
    drop(dir);
    let add = format!(
        r#"{{"add":{{"path":"file:{root}/part-abs.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{{}}}}}}"#
    );
    let mut s = synth(
        "abs",
        &[(
            commit(0),
            format!("{PROTOCOL}\n{METADATA}\n{add}\n"),
            NOW - 60 * DAY,
        )],
        &[
            ("part-abs.parquet".into(), NOW - 60 * DAY),
            ("orphan.parquet".into(), NOW - 60 * DAY),
        ],
    );
    // The synth folder is the root the add names.
    if s.dir.path().display().to_string() != root {
        std::fs::rename(s.dir.path(), &root).unwrap();
        s.location = format!("file://{root}");
        s.opts.mtime_base = Some(s.location.clone());
        s.dir = tempdir::Dir::adopt(root.clone().into());
    }
    let run = plan_synth(&s, NOW, 7 * DAY).unwrap();
    let v = run.verdicts();
    assert_eq!(
        v["part-abs.parquet"].verdict,
        Verdict::Referenced,
        "{:?}",
        v["part-abs.parquet"]
    );
    assert_eq!(deletes(&run), ["orphan.parquet".to_owned()].into());
}

#[test]
fn every_deletion_vector_of_a_tombstone_inside_the_retention_is_kept() {
    // File F's vector is replaced twice inside the window (dv1 -> dv2 -> dv3):
    // readers of the versions with dv1 and dv2 need both files.
    let dv = |n: u32| format!("{:020}", n);
    let name = |n: u32| {
        lakesweep::spec::delta::dv_file(
            "t",
            &lakesweep::spec::delta::DeletionVector {
                storage_type: "u".into(),
                path_or_inline_dv: dv(n),
                offset: None,
            },
        )
        .unwrap()
        .unwrap()
    };
    let rel = |p: lakesweep::spec::delta::LogPath| match p {
        lakesweep::spec::delta::LogPath::Relative(r) => r,
        other => panic!("{other:?}"),
    };
    let dvj = |n: u32| {
        format!(
            r#"{{"storageType":"u","pathOrInlineDv":"{}","offset":1,"sizeInBytes":30,"cardinality":1}}"#,
            dv(n)
        )
    };
    let add = |n: u32| {
        format!(
            r#"{{"add":{{"path":"f.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{{}},"deletionVector":{}}}}}"#,
            dvj(n)
        )
    };
    let rm = |n: u32, ts: i64| {
        format!(
            r#"{{"remove":{{"path":"f.parquet","deletionTimestamp":{ts},"dataChange":true,"deletionVector":{}}}}}"#,
            dvj(n)
        )
    };
    let old = NOW - 80 * DAY;
    let s = synth(
        "dvs",
        &[
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
            (commit(1), format!("{}\n", add(1)), old),
            (
                commit(2),
                format!("{}\n{}\n", rm(1, NOW - 3 * DAY), add(2)),
                NOW - 3 * DAY,
            ),
            (
                commit(3),
                format!("{}\n{}\n", rm(2, NOW - DAY), add(3)),
                NOW - DAY,
            ),
        ],
        &[
            ("f.parquet".into(), old),
            (rel(name(1)), old),
            (rel(name(2)), old),
            (rel(name(3)), old),
        ],
    );
    let run = plan_synth(&s, NOW, 7 * DAY).unwrap();
    assert!(deletes(&run).is_empty(), "{:?}", deletes(&run));
    let v = run.verdicts();
    assert!(
        v[&rel(name(1))].detail.contains("tombstone"),
        "{:?}",
        v[&rel(name(1))]
    );
    // Once the first removal is older than the window, dv1 goes, dv2 stays.
    let run = plan_synth(&s, NOW + 5 * DAY, 7 * DAY).unwrap();
    assert_eq!(deletes(&run), [rel(name(1))].into());
}

fn v2_checkpoint(version: u64, with_meta: bool, metadata_lines: usize) -> String {
    let mut lines = vec![];
    if with_meta {
        lines.push(format!(
            r#"{{"checkpointMetadata":{{"version":{version}}}}}"#
        ));
    }
    lines.push(PROTOCOL.to_owned());
    for _ in 0..metadata_lines {
        lines.push(METADATA.to_owned());
    }
    lines.push(r#"{"add":{"path":"live.parquet","size":7,"modificationTime":1,"dataChange":false,"partitionValues":{}}}"#.to_owned());
    lines.join("\n") + "\n"
}

#[test]
fn checkpoints_must_hold_what_the_protocol_says() {
    let old = NOW - 60 * DAY;
    let table = |cp: String| {
        synth(
            "v2",
            &[
                (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
                (
                    commit(1),
                    r#"{"add":{"path":"live.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{}}}"#.to_owned() + "\n",
                    old,
                ),
                (format!("{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json", 1), cp, old),
            ],
            &[("live.parquet".into(), old)],
        )
    };
    let ok = table(v2_checkpoint(1, true, 1));
    assert!(
        plan_synth(&ok, NOW, 7 * DAY).unwrap().verdicts()["live.parquet"].verdict
            == Verdict::Referenced
    );
    for (cp, why) in [
        (v2_checkpoint(1, false, 1), "checkpointMetadata"),
        (v2_checkpoint(1, true, 2), "metaData"),
        (v2_checkpoint(1, true, 0), "metaData"),
    ] {
        let e = plan_synth(&table(cp), NOW, 7 * DAY).unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
        assert!(e.to_string().contains(why), "{e}");
    }
}

#[test]
fn log_cleanup_reads_the_checkpoint_it_stops_at_and_skips_when_it_is_damaged() {
    let old = NOW - 60 * DAY;
    let young = NOW - DAY;
    let add = r#"{"add":{"path":"live.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{}}}"#;
    let table = |old_cp: String| {
        let mut log: Vec<(String, String, i64)> = vec![
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
            (commit(1), format!("{add}\n"), old),
        ];
        for v in 2..=5 {
            log.push((
                commit(v),
                r#"{"commitInfo":{"timestamp":1}}"#.to_owned() + "\n",
                if v < 4 { old } else { young },
            ));
        }
        log.push((
            format!(
                "{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json",
                3
            ),
            old_cp,
            old,
        ));
        log.push((
            format!(
                "{:020}.checkpoint.aaaaaaaa-2222-3333-4444-555555555555.json",
                5
            ),
            v2_checkpoint(5, true, 1),
            young,
        ));
        synth("cleanup", &log, &[("live.parquet".into(), old)])
    };
    let run_cleanup = |s: &Synth| {
        let mut cfg = SessionConfig::new(&s.location, "", NOW, 7 * DAY);
        cfg.format = TableFormat::Delta;
        cfg.log_cleanup = true;
        run_native(cfg, &s.opts).unwrap()
    };
    // Replay starts at checkpoint 5; cleanup would stop at 3 (old): read it first.
    let good = table(v2_checkpoint(3, true, 1));
    let run = run_cleanup(&good);
    let logs: BTreeSet<String> = deletes(&run)
        .into_iter()
        .filter(|k| k.starts_with("_delta_log/"))
        .collect();
    let want: BTreeSet<String> = (0..3)
        .map(|v| format!("_delta_log/{}", commit(v)))
        .collect();
    assert_eq!(logs, want);
    // Damaged: no cleanup at all, and the plan says why; the sweep itself goes on.
    let bad = table(v2_checkpoint(3, false, 1));
    let run = run_cleanup(&bad);
    assert!(deletes(&run).iter().all(|k| !k.starts_with("_delta_log/")));
    assert!(
        run.plan()
            .warnings
            .iter()
            .any(|w| w.contains("log cleanup skipped")),
        "{:?}",
        run.plan().warnings
    );
}

#[test]
fn a_log_file_whose_size_differs_from_the_listing_is_refused() {
    let f = Fixture::load("events");
    let now = f.generated_at() + 8 * DAY;
    let mut o = f.opts();
    let uri = f.uri("_delta_log/00000000000000000012.json");
    let mut bytes = std::fs::read(vpath(&uri).unwrap()).unwrap();
    bytes.extend_from_slice(b"\n");
    o.replace.insert(uri, bytes);
    let e = run_native(f.config(now, 7 * DAY), &o).unwrap_err();
    assert!(e.to_string().contains("the listing said"), "{e}");
}

/// Kills: treating a remove without `deletionTimestamp` as time zero (or
/// as outside the window) in the tombstone loop of src/plan/delta.rs
/// (`None => Some(DeltaTombstone { dated: false })` -> `None => None`), or
/// dropping the warning.
#[test]
fn a_remove_without_deletion_timestamp_keeps_its_file_and_warns() {
    let old = NOW - 80 * DAY;
    let add = r#"{"add":{"path":"f.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{}}}"#;
    let table = |remove: &str| {
        synth(
            "undated",
            &[
                (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
                (commit(1), format!("{add}\n"), old),
                (commit(2), format!("{remove}\n"), old),
            ],
            &[("f.parquet".into(), old)],
        )
    };
    let undated = table(r#"{"remove":{"path":"f.parquet","dataChange":true}}"#);
    let run = plan_synth(&undated, NOW, 7 * DAY).unwrap();
    let v = run.verdicts();
    assert_eq!(
        v["f.parquet"].verdict,
        Verdict::Referenced,
        "{:?}",
        v["f.parquet"]
    );
    assert!(
        v["f.parquet"].detail.contains("unknown time"),
        "{}",
        v["f.parquet"].detail
    );
    assert!(deletes(&run).is_empty(), "{:?}", deletes(&run));
    let plan = run.plan();
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("1 removed files have no deletionTimestamp")),
        "{:?}",
        plan.warnings
    );
    // Control: the same remove dated long ago lets the file go, silently.
    let dated = table(&format!(
        r#"{{"remove":{{"path":"f.parquet","deletionTimestamp":{},"dataChange":true}}}}"#,
        old + 1000
    ));
    let run = plan_synth(&dated, NOW, 7 * DAY).unwrap();
    assert_eq!(deletes(&run), ["f.parquet".to_owned()].into());
    assert!(!run
        .plan()
        .warnings
        .iter()
        .any(|w| w.contains("deletionTimestamp")));
}

/// Kills: not requesting a V2 checkpoint's sidecar files (the `sidecars`
/// loop in src/plan/delta.rs), or answering a missing sidecar with "no
/// actions": its live files would be old orphans.
#[test]
fn a_v2_checkpoint_whose_sidecar_file_is_missing_is_refused() {
    let old = NOW - 60 * DAY;
    let add = r#"{"add":{"path":"live.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{}}}"#;
    // The checkpoint's adds live only in its sidecar, which is gone.
    let cp = [
        r#"{"checkpointMetadata":{"version":1}}"#.to_owned(),
        PROTOCOL.to_owned(),
        METADATA.to_owned(),
        r#"{"sidecar":{"path":"00000000000000000001.checkpoint.0000000001.0000000001.11111111-aaaa-bbbb-cccc-dddddddddddd.parquet","sizeInBytes":1234,"modificationTime":1}}"#.to_owned(),
    ]
    .join("\n")
        + "\n";
    let s = synth(
        "sidecar",
        &[
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
            (commit(1), format!("{add}\n"), old),
            (
                format!(
                    "{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json",
                    1
                ),
                cp,
                old,
            ),
        ],
        &[("live.parquet".into(), old)],
    );
    let e = plan_synth(&s, NOW, 7 * DAY).unwrap_err();
    assert!(
        e.to_string()
            .contains("_sidecars/00000000000000000001.checkpoint"),
        "{e}"
    );
    assert!(
        matches!(
            e,
            Error::Malformed { .. }
                | Error::Unsafe {
                    reason: UnsafeReason::MissingMetadata,
                    ..
                }
        ),
        "{e}"
    );
}

// --- replay and retention edges (kill src/plan/delta.rs mutants) ------------

fn plan_synth_keeping(s: &Synth, keep: &[i64]) -> Result<Run, Error> {
    let mut cfg = SessionConfig::new(&s.location, "", NOW, 7 * DAY);
    cfg.format = TableFormat::Delta;
    cfg.keep_versions = keep.to_vec();
    run_native(cfg, &s.opts)
}

fn add_line(path: &str) -> String {
    format!(
        r#"{{"add":{{"path":"{path}","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{{}}}}}}"#
    )
}

fn remove_line(path: &str, ts: i64) -> String {
    format!(r#"{{"remove":{{"path":"{path}","deletionTimestamp":{ts},"dataChange":true}}}}"#)
}

/// Kills, in `Session::delta_replay`: `&&` -> `||` in
/// `order != CHECKPOINT && !done_checkpoint` (the state of a kept
/// checkpoint version recorded again after later commits), deleting the
/// `!` of `filter(|_| !done_checkpoint)` (the final state recorded as the
/// checkpoint's), and deleting the `!` of `filter(|s| !s.is_empty())`
/// (the table id lost).
#[test]
fn a_kept_checkpoint_version_keeps_only_the_files_live_at_it() {
    let old = NOW - 60 * DAY;
    let s = synth(
        "kept-cp",
        &[
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
            (commit(1), format!("{}\n", add_line("live.parquet")), old),
            (
                format!(
                    "{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json",
                    1
                ),
                v2_checkpoint(1, true, 1),
                old,
            ),
            (commit(2), format!("{}\n", add_line("x.parquet")), old),
            (
                commit(3),
                format!(
                    "{}\n{}\n",
                    remove_line("x.parquet", old + 3000),
                    add_line("y.parquet")
                ),
                old,
            ),
        ],
        &[
            ("live.parquet".into(), old),
            ("x.parquet".into(), old),
            ("y.parquet".into(), old),
        ],
    );
    let run = plan_synth_keeping(&s, &[1]).unwrap();
    // x was added after version 1 and removed long ago: not live at 1 nor 3.
    assert_eq!(deletes(&run), ["x.parquet".to_owned()].into());
    let v = run.verdicts();
    assert_eq!(v["live.parquet"].detail, "live file of Delta version 1");
    assert_eq!(v["y.parquet"].detail, "live file of Delta version 3");
    assert_eq!(run.plan().table_uuid.as_deref(), Some("t-1"));
}

/// Kills deleting the `CHECKPOINT => ReplaySource::Checkpoint` arm in
/// `Session::delta_replay` (checkpoint files replayed as commits): a
/// checkpoint's removes are tombstones only, so one naming a file the
/// checkpoint also adds (whatever the order of its actions or parts) does
/// not make that file an orphan.
#[test]
fn a_checkpoint_remove_does_not_undo_a_checkpoint_add() {
    let old = NOW - 60 * DAY;
    let cp = [
        r#"{"checkpointMetadata":{"version":1}}"#.to_owned(),
        PROTOCOL.to_owned(),
        METADATA.to_owned(),
        add_line("live.parquet"),
        remove_line("live.parquet", old),
    ]
    .join("\n")
        + "\n";
    let s = synth(
        "cp-remove",
        &[
            (
                format!(
                    "{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json",
                    1
                ),
                cp,
                old,
            ),
            (
                commit(2),
                r#"{"commitInfo":{"timestamp":1}}"#.to_owned() + "\n",
                old,
            ),
        ],
        &[("live.parquet".into(), old)],
    );
    let run = plan_synth(&s, NOW, 7 * DAY).unwrap();
    assert!(deletes(&run).is_empty(), "{:?}", deletes(&run));
    assert_eq!(
        run.verdicts()["live.parquet"].detail,
        "live file of Delta version 2"
    );
}

/// Kills deleting the `RECENT_BEFORE => ReplaySource::Before` arm in
/// `Session::delta_replay` (and the protocol guard `state` -> `true` in
/// `Replay::apply`): a commit before the checkpoint, read only for its
/// change data and tombstones, does not set the protocol, so a reader
/// feature dropped since does not stop the sweep.
#[test]
fn a_feature_dropped_before_the_checkpoint_does_not_stop_the_sweep() {
    let young = NOW - DAY;
    let dropped = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["quantumStorage"],"writerFeatures":["quantumStorage"]}}"#;
    let s = synth(
        "dropped",
        &[
            (commit(0), format!("{dropped}\n{METADATA}\n"), young),
            (
                commit(1),
                format!("{PROTOCOL}\n{}\n", add_line("live.parquet")),
                young,
            ),
            (
                format!(
                    "{:020}.checkpoint.11111111-2222-3333-4444-555555555555.json",
                    1
                ),
                v2_checkpoint(1, true, 1),
                young,
            ),
        ],
        &[("live.parquet".into(), NOW - 60 * DAY)],
    );
    let run = plan_synth(&s, NOW, 7 * DAY).unwrap();
    assert_eq!(run.verdicts()["live.parquet"].verdict, Verdict::Referenced);
    // Control: the same protocol after the checkpoint is refused.
    let s = synth(
        "dropped-after",
        &[
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), young),
            (commit(1), format!("{dropped}\n"), young),
        ],
        &[],
    );
    let e = plan_synth(&s, NOW, 7 * DAY).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
}

/// Kills `>` -> `>=` in the tombstone window (`Some(t) if t > cutoff`) and
/// in the change-data window (`is_none_or(|&t| t > cutoff)`) of
/// `Session::delta_replay`: a removal, or a change-data commit, exactly at
/// the cutoff (now - window) is outside the window; one a millisecond later
/// is inside.
#[test]
fn a_removal_or_change_data_exactly_at_the_cutoff_is_outside_the_window() {
    let old = NOW - 60 * DAY;
    let cutoff = NOW - 7 * DAY;
    let cdc = |p: &str| {
        format!(r#"{{"cdc":{{"path":"{p}","partitionValues":{{}},"size":7,"dataChange":false}}}}"#)
    };
    let s = synth(
        "edge",
        &[
            (commit(0), format!("{PROTOCOL}\n{METADATA}\n"), old),
            (
                commit(1),
                format!("{}\n{}\n", add_line("a.parquet"), add_line("b.parquet")),
                old,
            ),
            (
                commit(2),
                format!(
                    "{}\n{}\n",
                    remove_line("a.parquet", cutoff),
                    remove_line("b.parquet", cutoff + 1)
                ),
                old,
            ),
            (
                commit(3),
                format!("{}\n", cdc("_change_data/c3.parquet")),
                cutoff,
            ),
            (
                commit(4),
                format!("{}\n", cdc("_change_data/c4.parquet")),
                cutoff + 1,
            ),
        ],
        &[
            ("a.parquet".into(), old),
            ("b.parquet".into(), old),
            ("_change_data/c3.parquet".into(), old),
            ("_change_data/c4.parquet".into(), old),
        ],
    );
    let run = plan_synth(&s, NOW, 7 * DAY).unwrap();
    assert_eq!(
        deletes(&run),
        ["a.parquet".to_owned(), "_change_data/c3.parquet".to_owned()].into()
    );
    let v = run.verdicts();
    assert!(
        v["b.parquet"].detail.contains("tombstone"),
        "{:?}",
        v["b.parquet"]
    );
    assert!(
        v["_change_data/c4.parquet"].detail.contains("change-data"),
        "{:?}",
        v["_change_data/c4.parquet"]
    );
}

/// Kills, in the UniForm test of `Session::delta_replay`: `==` -> `!=` in
/// `x.trim() == "iceberg"`, and each `||` -> `&&` between the property and
/// the `icebergCompatV1`/`icebergCompatV2` writer features: any one of the
/// three reserves `metadata/`.
#[test]
fn any_one_uniform_sign_reserves_the_iceberg_metadata_folder() {
    let old = NOW - 60 * DAY;
    let meta_iceberg = r#"{"metaData":{"id":"t-1","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{"delta.universalFormat.enabledFormats":"iceberg"}}}"#;
    let proto = |f: &str| {
        format!(
            r#"{{"protocol":{{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"{f}]}}}}"#
        )
    };
    let table = |tag: &str, first: String| {
        synth(
            tag,
            &[(commit(0), first, old)],
            &[("metadata/snap-1.avro".into(), old)],
        )
    };
    for (what, first) in [
        ("property", format!("{}\n{meta_iceberg}\n", proto(""))),
        (
            "icebergCompatV1",
            format!("{}\n{METADATA}\n", proto(r#","icebergCompatV1""#)),
        ),
        (
            "icebergCompatV2",
            format!("{}\n{METADATA}\n", proto(r#","icebergCompatV2""#)),
        ),
    ] {
        let run = plan_synth(&table("uniform", first), NOW, 7 * DAY).unwrap();
        let d = &run.verdicts()["metadata/snap-1.avro"];
        assert_eq!(d.verdict, Verdict::Hidden, "{what}: {d:?}");
        assert!(d.detail.contains("UniForm"), "{what}: {d:?}");
    }
    // Control: without any, an old file there is an orphan.
    let run = plan_synth(
        &table("not-uniform", format!("{}\n{METADATA}\n", proto(""))),
        NOW,
        7 * DAY,
    )
    .unwrap();
    assert_eq!(deletes(&run), ["metadata/snap-1.avro".to_owned()].into());
}

/// Every table feature the protocol names today, read from a commit's
/// protocol action (listed in `readerFeatures` too when it is a
/// reader-writer feature): planned when the feature changes nothing about
/// which files a version references or is handled, refused naming it when
/// the log alone cannot say what the table references; an unknown name is
/// refused.
#[test]
fn each_table_feature_in_a_protocol_action_is_planned_or_refused_as_decided() {
    use lakesweep::spec::delta_feature::{Decision, FEATURES};
    let plan_with = |name: &str, reader_writer: bool| {
        let readers = if reader_writer {
            format!(r#""readerFeatures":["{name}"],"#)
        } else {
            String::new()
        };
        let protocol = format!(
            r#"{{"protocol":{{"minReaderVersion":{},"minWriterVersion":7,{readers}"writerFeatures":["{name}"]}}}}"#,
            if reader_writer { 3 } else { 1 }
        );
        let add = r#"{"add":{"path":"part-0.parquet","size":7,"modificationTime":1,"dataChange":true,"partitionValues":{}}}"#;
        let s = synth(
            "feature",
            &[(
                commit(0),
                format!("{protocol}\n{METADATA}\n{add}\n"),
                NOW - 60 * DAY,
            )],
            &[
                ("part-0.parquet".into(), NOW - 60 * DAY),
                ("orphan.parquet".into(), NOW - 60 * DAY),
            ],
        );
        plan_synth(&s, NOW, 7 * DAY)
    };
    for f in FEATURES {
        let r = plan_with(f.name, f.reader_writer);
        match f.decision {
            Decision::Refused(_) => {
                let e = r.err().unwrap_or_else(|| panic!("{} planned", f.name));
                assert!(
                    matches!(e, Error::Unsupported { .. }) && e.to_string().contains(f.name),
                    "{}: {e}",
                    f.name
                );
            }
            Decision::NoFileEffect | Decision::Handled(_) => {
                let run = r.unwrap_or_else(|e| panic!("{}: {e}", f.name));
                assert_eq!(
                    deletes(&run),
                    ["orphan.parquet".to_owned()].into(),
                    "{}",
                    f.name
                );
            }
        }
    }
    for unknown in ["fancyNewThing", "DeletionVectors", "catalogManaged-preview"] {
        let Err(e) = plan_with(unknown, false) else {
            panic!("{unknown} planned")
        };
        assert!(e.to_string().contains(unknown), "{e}");
    }
    // The documentation's table names each feature with its decision.
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/delta.md"),
    )
    .unwrap();
    for f in FEATURES {
        let word = match f.decision {
            Decision::NoFileEffect => "no file effect",
            Decision::Handled(_) => "handled",
            Decision::Refused(_) => "refused",
        };
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", f.name)))
            .unwrap_or_else(|| panic!("docs/delta.md has no row for {}", f.name));
        assert!(row.contains(word), "{}: {row}", f.name);
    }
}
