//! Delta Lake through the real binary and component: plan -> apply -> plan
//! on deltalake-written tables (and deltalake still reads them), against an
//! independent oracle of live files and deletion vectors
//! (`tests/py/delta_live.py`), and against deltalake's own VACUUM dry runs
//! (`tests/py/delta_vacuum.py`), with every difference classified.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

const DAY: i64 = 86_400_000;

fn delta_fixtures() -> PathBuf {
    repo().join("tests/fixtures/delta")
}

/// A table of delta-rs's public fixtures beside the checkout. The test
/// using it is `#[ignore]`d (a fresh clone has no `../shared`);
/// `scripts/test.sh` runs it with `--ignored` whenever `../shared/fixtures`
/// exists, and then a missing table is a failure, never a skip.
fn shared(table: &str) -> PathBuf {
    let p = repo().join("../shared/fixtures/delta-rs").join(table);
    assert!(
        p.is_dir(),
        "{} is missing: run this test only where ../shared/fixtures exists",
        p.display()
    );
    p
}

fn set_mtime(p: &Path, ms: i64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64))
        .unwrap();
}

/// A scratch copy of a Delta table with its mtimes set.
struct Staged {
    root: PathBuf,
    expect: Value,
    /// The one time its files' times derive from: the generator's clock
    /// when it wrote the table (its recorded mtimes and the log's times
    /// are its own), or the newest file of a copy restamped from it.
    base_ms: i64,
}

impl Staged {
    /// One of the project's tables, with the generator's recorded mtimes.
    fn fixture(name: &str, tag: &str) -> Staged {
        let root =
            std::env::temp_dir().join(format!("lakesweep-delta-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&delta_fixtures().join(name), &root);
        let all: Value =
            serde_json::from_slice(&std::fs::read(delta_fixtures().join("expect.json")).unwrap())
                .unwrap();
        let expect = all[name].clone();
        for (rel, ms) in expect["mtimes"].as_object().unwrap() {
            set_mtime(&root.join(rel), ms.as_i64().unwrap());
        }
        let base_ms = expect["generated_at_ms"].as_i64().unwrap();
        Staged {
            root,
            expect,
            base_ms,
        }
    }

    /// A delta-rs public table, every file 30 days older than the newest
    /// file of the copy (its base time).
    fn shared(name: &str, tag: &str) -> Staged {
        Staged::copy_of(&shared(name), tag)
    }

    /// A copy of a table folder, every file 30 days older than the newest
    /// file of the copy (its base time).
    fn copy_of(src: &Path, tag: &str) -> Staged {
        let root =
            std::env::temp_dir().join(format!("lakesweep-delta-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(src, &root);
        let base_ms = newest_mtime_ms(&root);
        for f in files_under(&root) {
            set_mtime(&root.join(f), base_ms - 30 * DAY);
        }
        Staged {
            root,
            expect: Value::Null,
            base_ms,
        }
    }

    fn generated_at(&self) -> i64 {
        self.expect["generated_at_ms"].as_i64().unwrap()
    }

    fn set(&self, key: &str) -> BTreeSet<String> {
        self.expect[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    fn planted(&self) -> BTreeMap<String, String> {
        self.expect["planted"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect()
    }

    fn plan(&self, now: i64, extra: &[&str]) -> std::process::Output {
        let mut a: Vec<String> = vec![
            "plan".into(),
            self.root.display().to_string(),
            "--now".into(),
            now.to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        lakesweep(&a)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn python(script: &str, args: &[String]) -> Value {
    let o = Command::new("python3")
        .arg(repo().join("tests/py").join(script))
        .args(args)
        .output()
        .expect("python3 (scripts/test.sh installs deltalake)");
    assert!(
        o.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// deltalake's VACUUM dry run: `full` or lite, at `hours` (enforcement off at 0).
fn vacuum(dir: &Path, hours: u32, full: bool) -> BTreeSet<String> {
    let mut a = vec![
        dir.display().to_string(),
        "--retention-hours".into(),
        hours.to_string(),
    ];
    if full {
        a.push("--full".into());
    }
    if hours < 168 {
        a.push("--no-enforce".into());
    }
    strings(&python("delta_vacuum.py", &a)["files"])
}

fn row_count(dir: &Path) -> u64 {
    let o = Command::new("python3")
        .args([
            "-c",
            // os._exit: deltalake's runtime threads can abort a normal shutdown.
            "import os, sys; from deltalake import DeltaTable; print(DeltaTable(sys.argv[1]).to_pyarrow_table().num_rows, flush=True); os._exit(0)",
        ])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

#[test]
fn delta_plan_apply_plan_and_deltalake_still_reads_the_table() {
    let s = Staged::fixture("events", "apply");
    let now = s.generated_at() + 8 * DAY;
    let rows = row_count(&s.root);
    let plan_path = s.root.with_extension("plan.json");
    let v = json(&s.plan(now, &["--json", "--out", plan_path.to_str().unwrap()]));
    assert_eq!(v["format"], "delta", "{v}");
    let planned = deletes(&v);
    let live = python("delta_live.py", &[s.root.display().to_string()]);
    assert!(planned.is_disjoint(&strings(&live["live"])));
    assert!(planned.contains("part-00000-orphan-old-top-level-c000.snappy.parquet"));
    assert!(planned.is_superset(&s.set("tombstones")));
    let before = files_under(&s.root);
    let o = lakesweep(&["apply", plan_path.to_str().unwrap(), "--allow-future-now"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let gone: BTreeSet<String> = before.difference(&files_under(&s.root)).cloned().collect();
    assert_eq!(gone, planned);
    assert_eq!(
        row_count(&s.root),
        rows,
        "deltalake reads the same rows after the sweep"
    );
    let again = json(&s.plan(now, &["--json"]));
    assert!(deletes(&again).is_empty(), "{again}");
    assert_eq!(again["summary"]["referencedNotListed"], 0);
    let _ = std::fs::remove_file(&plan_path);
    let _ = std::fs::remove_file(format!("{}.receipts.jsonl", plan_path.display()));
}

#[test]
fn delta_apply_refuses_after_a_new_commit() {
    let s = Staged::fixture("simple", "commit");
    let now = s.generated_at() + 8 * DAY;
    let plan_path = s.root.with_extension("plan.json");
    let o = s.plan(now, &["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    // A writer commits (an empty commit is enough to move the head).
    let next = s.root.join(format!(
        "_delta_log/{:020}.json",
        s.expect["version"].as_u64().unwrap() + 1
    ));
    std::fs::write(
        &next,
        format!("{{\"commitInfo\":{{\"timestamp\":{now}}}}}\n"),
    )
    .unwrap();
    let before = files_under(&s.root);
    let o = lakesweep(&["apply", plan_path.to_str().unwrap(), "--allow-future-now"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("table generation"),
        "{}",
        out_text(&o)
    );
    assert_eq!(files_under(&s.root), before);
    let _ = std::fs::remove_file(&plan_path);
}

#[test]
fn delta_broken_log_refuses_and_deletes_nothing() {
    let s = Staged::fixture("events", "broken");
    let cp = s
        .root
        .join("_delta_log/00000000000000000008.checkpoint.parquet");
    let b = std::fs::read(&cp).unwrap();
    std::fs::write(&cp, &b[..b.len() / 2]).unwrap();
    let o = s.plan(s.generated_at() + 8 * DAY, &["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("malformed"),
        "{}",
        out_text(&o)
    );
    // Too short a window without the override.
    let s = Staged::fixture("simple", "short");
    let o = s.plan(s.generated_at() + 8 * DAY, &["--older-than", "1d"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("deletedFileRetentionDuration"));
}

/// What one comparison with VACUUM found, by class.
#[derive(Debug, Default)]
struct Differences {
    /// In VACUUM's list, kept by lakesweep, per class.
    kept_by_us: BTreeMap<&'static str, BTreeSet<String>>,
    /// In lakesweep's plan, not in VACUUM's list.
    only_ours: BTreeSet<String>,
}

/// Classifies why lakesweep keeps a file VACUUM full would delete.
fn why_kept(key: &str, live_dvs: &BTreeSet<String>) -> &'static str {
    if live_dvs.contains(key) {
        // deltalake 1.6.6 full mode lists live DV files: deleting them breaks the table.
        "live deletion vector (deltalake bug)"
    } else if key
        .split('/')
        .skip(1)
        .any(|c| c.starts_with('.') || c.starts_with('_'))
    {
        // Spark's VACUUM skips hidden names at every depth; delta-rs only at the top.
        "hidden name below the top level"
    } else {
        "UNEXPLAINED"
    }
}

/// lakesweep's plan at `now` with an `hours` window against deltalake's
/// VACUUM dry runs over the same table. VACUUM has no `now`: it judges at
/// this machine's clock, by nature. So it is given the window lengthened
/// by the whole hours the clock is past `now`: every file (by mtime) and
/// tombstone (by removal time) then falls on the same side of both windows
/// whatever day the test runs (up to the rounding's hour past `now - hours`,
/// in which no table here has a file).
fn compare(dir: &Path, now: i64, hours: u32) -> Differences {
    let behind = clock_ms() - now;
    assert!(
        behind >= 0,
        "this machine's clock is behind the time the table is judged at ({now} ms)"
    );
    let vacuum_hours = hours + u32::try_from(behind / 3_600_000).unwrap();
    let older = format!("{hours}h");
    let mut args = vec!["--json", "--older-than", older.as_str()];
    if hours < 168 {
        args.push("--allow-short-retention");
    }
    let out = lakesweep(&{
        let mut a = vec![
            "plan".to_owned(),
            dir.display().to_string(),
            "--now".into(),
            now.to_string(),
        ];
        a.extend(args.iter().map(|s| s.to_string()));
        a
    });
    let ours = deletes(&json(&out));
    let live = python("delta_live.py", &[dir.display().to_string()]);
    let live_files = strings(&live["live"]);
    let live_dvs = strings(&live["live_dvs"]);
    assert!(ours.is_disjoint(&live_files), "a live file in the plan");
    assert!(
        ours.is_disjoint(&live_dvs),
        "a live deletion vector in the plan"
    );
    let full = vacuum(dir, vacuum_hours, true);
    let lite = vacuum(dir, vacuum_hours, false);
    // Lite VACUUM deletes expired tombstones only: we delete every one of them too.
    let lite_missing: BTreeSet<&String> = lite.difference(&ours).collect();
    assert!(
        lite_missing.is_empty(),
        "lite VACUUM deletes what we keep: {lite_missing:?}"
    );
    let mut d = Differences::default();
    for k in full.difference(&ours) {
        d.kept_by_us
            .entry(why_kept(k, &live_dvs))
            .or_default()
            .insert(k.clone());
    }
    d.only_ours = ours.difference(&full).cloned().collect();
    eprintln!(
        "{} at {hours}h (vacuum at {vacuum_hours}h): ours {}, vacuum full {}, lite {}; kept by us: {:?}; only ours: {:?}",
        dir.display(),
        ours.len(),
        full.len(),
        lite.len(),
        d.kept_by_us,
        d.only_ours
    );
    d
}

#[test]
fn vacuum_comparison_on_generated_tables() {
    for hours in [0u32, 168] {
        // Judged when the generator wrote the tables (their own times).
        let s = Staged::fixture("events", &format!("vac-{hours}"));
        let d = compare(&s.root, s.generated_at(), hours);
        assert!(d.only_ours.is_empty(), "{d:?}");
        // The dot-file inside a partition directory is the one difference.
        let hidden: BTreeSet<String> = s
            .planted()
            .into_iter()
            .filter(|(k, c)| c == "hidden" && k.contains('/'))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            d.kept_by_us.keys().copied().collect::<Vec<_>>(),
            vec!["hidden name below the top level"],
            "{d:?}"
        );
        assert_eq!(d.kept_by_us["hidden name below the top level"], hidden);
        let s = Staged::fixture("simple", &format!("vac-simple-{hours}"));
        let d = compare(&s.root, s.generated_at(), hours);
        assert!(d.only_ours.is_empty() && d.kept_by_us.is_empty(), "{d:?}");
    }
}

#[test]
#[ignore = "needs ../shared/fixtures/delta-rs; scripts/test.sh runs it with --ignored where they exist"]
fn vacuum_comparison_on_shared_delta_rs_tables() {
    let tables = [
        "cdf-table-with-cdc-and-dvs",
        "checkpoint-v2-table",
        "delta-0.8.0-null-partition",
        "delta-0.8.0-special-partition",
        "table-with-dv-small",
        "table_failed_last_checkpoint_update",
        "table_with_column_mapping",
        "table_with_deletion_logs",
    ];
    let mut live_dv_kept = 0;
    for t in tables {
        let s = Staged::shared(t, &format!("shared-{t}"));
        let d = compare(&s.root, s.base_ms, 0);
        assert!(!d.kept_by_us.contains_key("UNEXPLAINED"), "{t}: {d:?}");
        assert!(d.only_ours.is_empty(), "{t}: {d:?}");
        live_dv_kept += d
            .kept_by_us
            .get("live deletion vector (deltalake bug)")
            .map_or(0, |s| s.len());
    }
    // deltalake's full mode would delete live DV files of the DV tables; we keep them.
    assert!(live_dv_kept >= 2, "expected deltalake to list live DVs");
}

/// The keys a human report lists under one heading (`would delete`,
/// `kept although unreferenced`).
/// The human report, `--json` and the sealed plan file are one plan seen
/// three ways, on every Delta fixture: the same keys go (expired `_delta_log/` entries included),
/// and nothing that goes is listed as kept.
#[test]
fn report_json_and_plan_file_agree_on_every_key() {
    for (fixture, log_cleanup) in [("events", true), ("events", false), ("simple", false)] {
        let s = Staged::fixture(fixture, "agree");
        let now = s.generated_at() + 40 * DAY;
        let plan_path = s.root.with_extension("agree.json");
        let mut args = vec!["--out", plan_path.to_str().unwrap()];
        if log_cleanup {
            args.push("--log-cleanup");
        }
        let human = s.plan(now, &args);
        args.push("--json");
        let json = s.plan(now, &args);
        let file = one_document(&human, &json, &plan_path, &files_under(&s.root));
        if log_cleanup {
            assert!(
                deletes(&file).iter().any(|k| k.starts_with("_delta_log/")),
                "log cleanup planned: {file}"
            );
        }
        let _ = std::fs::remove_file(&plan_path);
    }
    // The log fixture (a checkpoint after every version), its files aged.
    let s = Staged::copy_of(
        &repo().join("tests/fixtures/delta-log/checkpointed"),
        "agree-log",
    );
    let plan_path = s.root.with_extension("agree.json");
    let now = s.base_ms + 40 * DAY;
    let mut args = vec!["--out", plan_path.to_str().unwrap(), "--log-cleanup"];
    let human = s.plan(now, &args);
    args.push("--json");
    let json = s.plan(now, &args);
    one_document(&human, &json, &plan_path, &files_under(&s.root));
    let _ = std::fs::remove_file(&plan_path);
}

/// `--manifest-cache` on a Delta table: the checkpoint's digest is filed
/// under its identity and a second plan reads it instead of the Parquet,
/// making the same plan; a checkpoint rewritten in place (same length, a
/// byte changed) is read again, not taken from the cache.
#[test]
fn checkpoint_digests_are_cached_and_a_rewritten_checkpoint_is_read_again() {
    let s = Staged::fixture("events", "digest-cache");
    let cache = s.root.with_extension("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let now = (s.generated_at() + 8 * DAY).to_string();
    let plan = |flags: &[&str]| {
        let mut a = vec!["plan", s.root.to_str().unwrap(), "--now", &now];
        a.extend(flags);
        lakesweep_with(&[("LAKESWEEP_CACHE_DIR", cache.display().to_string())], &a)
    };
    let filed = || -> Vec<PathBuf> {
        let mut out = Vec::new();
        for d in std::fs::read_dir(cache.join("digests"))
            .into_iter()
            .flatten()
            .flatten()
        {
            out.extend(
                std::fs::read_dir(d.path())
                    .unwrap()
                    .flatten()
                    .map(|f| f.path()),
            );
        }
        out
    };
    // Staging set the files' times just now: a file changed under a second
    // before the plan is not filed (times advance in clock ticks).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let plain = json(&plan(&["--json"]));
    let first = json(&plan(&["--json", "--manifest-cache"]));
    let digests = filed();
    assert_eq!(digests.len(), 1, "the one checkpoint part: {digests:?}");
    let text = std::fs::read_to_string(&digests[0]).unwrap();
    assert!(
        text.starts_with("lakesweep-checkpoint-digest 2\n"),
        "{text}"
    );
    let second = plan(&["--manifest-cache"]);
    assert!(second.status.success(), "{}", out_text(&second));
    let report = String::from_utf8_lossy(&second.stdout);
    assert!(report.contains("(1 from the digest cache)"), "{report}");
    let second = json(&plan(&["--json", "--manifest-cache"]));
    for v in [&first, &second] {
        assert_eq!(v["digest"], plain["digest"], "the same plan, byte for byte");
    }
    assert!(!deletes(&plain).is_empty());

    // The checkpoint rewritten in place with one byte of its footer's
    // length changed: it no longer reads, and its digest must not stand in.
    let checkpoint = s
        .root
        .join("_delta_log/00000000000000000008.checkpoint.parquet");
    let mut b = std::fs::read(&checkpoint).unwrap();
    let at = b.len() - 8;
    b[at] ^= 0x01;
    std::fs::write(&checkpoint, &b).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for flags in [&["--json"][..], &["--json", "--manifest-cache"]] {
        let o = plan(flags);
        assert!(!o.status.success(), "{flags:?}: {}", out_text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("checkpoint.parquet"), "{err}");
        assert!(
            !err.contains("digest cache"),
            "not the cache's fault: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}
