//! Delta log integrity and log cleanup on a deltalake-written table
//! (`tests/fixtures/delta-log/checkpointed`, made by
//! `tests/fixtures/generate_delta_log.py`: 12 versions, a checkpoint after
//! every one). Each test stages a scratch copy holding the checkpoints it
//! wants and lists the log with the modification times it wants.
//!
//! The deltalake checks run `$LAKESWEEP_PYTHON` (default: `python3`), which
//! must import deltalake 1.6.6: without it those tests fail, they never pass
//! silently.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use lakesweep::rebuildable_versions;
use lakesweep::{
    Decision, Error, ListedObject, Request, Session, SessionConfig, TableFormat, Verdict,
};
use proptest::prelude::*;
use serde_json::Value;

const DAY: i64 = 86_400_000;
const NOW: i64 = 1_900_000_000_000;
/// Delta's default log retention (30 days): the cutoff of every test here.
const CUTOFF: i64 = NOW - 30 * DAY;
const LATEST: u64 = 11;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta-log/checkpointed")
}

/// Data files of each version, as deltalake lists them (relative).
fn files_of() -> BTreeMap<u64, BTreeSet<String>> {
    let e: Value = serde_json::from_slice(
        &std::fs::read(fixture().join("../expect.json")).expect("delta-log/expect.json"),
    )
    .unwrap();
    e["checkpointed"]["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(v, f)| {
            (
                v.parse().unwrap(),
                f.as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn commit(v: u64) -> String {
    format!("{v:020}.json")
}
fn checkpoint(v: u64) -> String {
    format!("{v:020}.checkpoint.parquet")
}

/// A scratch copy of the table (removed on drop).
struct Staged {
    dir: PathBuf,
    location: String,
    opts: HostOptions,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Staged {
    /// Copies the table keeping only the checkpoints in `checkpoints`;
    /// commit `v` is listed with time `commit_ms[v]`, checkpoint `v` with
    /// `checkpoint_ms(v)`, everything else (data files) as written now.
    fn new(
        tag: &str,
        checkpoints: &BTreeSet<u64>,
        commit_ms: &[i64],
        checkpoint_ms: impl Fn(u64) -> i64,
    ) -> Staged {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "lakesweep-deltalog-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        copy_tree(&fixture(), &dir);
        let log = dir.join("_delta_log");
        let mut opts = HostOptions::synthetic();
        let location = format!("file://{}", dir.display());
        opts.mtime_base = Some(location.clone());
        opts.default_mtime = Some(NOW);
        for v in 0..=LATEST {
            opts.mtimes
                .insert(format!("_delta_log/{}", commit(v)), commit_ms[v as usize]);
            if checkpoints.contains(&v) {
                opts.mtimes
                    .insert(format!("_delta_log/{}", checkpoint(v)), checkpoint_ms(v));
            } else {
                std::fs::remove_file(log.join(checkpoint(v))).unwrap();
            }
        }
        // `_last_checkpoint` names the newest checkpoint the writer made;
        // a staged copy without it has none (readers then list the log).
        if !checkpoints.contains(&LATEST) {
            std::fs::remove_file(log.join("_last_checkpoint")).unwrap();
        }
        Staged {
            dir,
            location,
            opts,
        }
    }

    fn config(&self, keep: &BTreeSet<u64>, log_cleanup: bool) -> SessionConfig {
        let mut c = SessionConfig::new(&self.location, "", NOW, 7 * DAY);
        c.format = TableFormat::Delta;
        c.log_cleanup = log_cleanup;
        c.keep_versions = keep.iter().map(|v| *v as i64).collect();
        c
    }

    fn plan(&self, keep: &BTreeSet<u64>, log_cleanup: bool) -> Result<Run, Error> {
        run_native(self.config(keep, log_cleanup), &self.opts)
    }

    /// Carries out a plan's deletes on the copy.
    fn apply(&self, run: &Run) -> BTreeSet<String> {
        let mut gone = BTreeSet::new();
        for d in run.plan().delete {
            std::fs::remove_file(self.dir.join(&d.key)).unwrap();
            gone.insert(d.key);
        }
        gone
    }

    fn log_names(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// The oracle, written apart from the planner: commit times made monotonic
/// (each at least the previous + 1 ms); the versions that must stay
/// readable are the newest version whose time is older than the cutoff
/// through the newest, plus the kept ones. `None`: no version is that old.
fn must_stay(commit_ms: &[i64], keep: &BTreeSet<u64>) -> Option<BTreeSet<u64>> {
    let mut t = Vec::new();
    for (v, &raw) in commit_ms.iter().enumerate() {
        t.push(if v == 0 { raw } else { raw.max(t[v - 1] + 1) });
    }
    let from = (0..=LATEST).rev().find(|&v| t[v as usize] < CUTOFF)?;
    Some((from..=LATEST).chain(keep.iter().copied()).collect())
}

/// Loads every version of `versions` with the planner (a replay from the
/// log that remains, refused if a version cannot be rebuilt) and checks
/// each keeps exactly deltalake's files of that version.
fn planner_loads(s: &Staged, versions: &BTreeSet<u64>) {
    let files = files_of();
    for &v in versions {
        let run = s
            .plan(&BTreeSet::from([v]), false)
            .unwrap_or_else(|e| panic!("version {v} no longer loads: {e}"));
        let verdicts = run.verdicts();
        for f in &files[&v] {
            let d = &verdicts[f];
            assert_eq!(d.verdict, Verdict::Referenced, "version {v}: {f}: {d:?}");
        }
    }
}

/// Loads every version of `versions` with deltalake and compares its files
/// with the ones deltalake listed when it wrote the table. Fails (never
/// skips) without a python that imports deltalake.
fn deltalake_loads(dir: &Path, versions: &BTreeSet<u64>) -> u64 {
    const SCRIPT: &str = r#"
import json, os, sys
import deltalake
path, versions = sys.argv[1], json.loads(sys.argv[2])
out = {}
for v in versions:
    t = deltalake.DeltaTable(path, version=v)
    assert t.version() == v, (t.version(), v)
    out[str(v)] = sorted(os.path.relpath(u.removeprefix("file://"), path) for u in t.file_uris())
latest = deltalake.DeltaTable(path).version()
print(json.dumps({"version": deltalake.__version__, "latest": latest, "files": out}))
"#;
    let vs: Vec<u64> = versions.iter().copied().collect();
    let o = Command::new(python())
        .args([
            "-c",
            SCRIPT,
            &dir.display().to_string(),
            &serde_json::to_string(&vs).unwrap(),
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "`{}` did not run ({e}): these tests need python with deltalake==1.6.6 (set LAKESWEEP_PYTHON)",
                python()
            )
        });
    assert!(
        o.status.success(),
        "deltalake could not load versions {vs:?} of {} (python `{}` needs deltalake==1.6.6):\n{}",
        dir.display(),
        python(),
        String::from_utf8_lossy(&o.stderr)
    );
    let got: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["version"], "1.6.6", "deltalake version");
    let files = files_of();
    for v in versions {
        let listed: BTreeSet<String> = got["files"][v.to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(listed, files[v], "deltalake's files of version {v}");
    }
    got["latest"].as_u64().unwrap()
}

fn log_deletes(run: &Run) -> BTreeSet<String> {
    run.plan()
        .delete
        .into_iter()
        .map(|d| d.key)
        .filter(|k| k.starts_with("_delta_log/"))
        .collect()
}

// --- class 1: log cleanup on non-monotonic commit times ---------------------

#[test]
fn log_cleanup_with_a_young_commit_between_old_ones_keeps_what_versions_3_and_6_need() {
    // Commits 0-2 old, 3 young (its file rewritten, or a skewed clock),
    // 4-8 old again, 9-11 young; old checkpoints at 2, 5 and 8. Judged on
    // raw file times, cleanup stopped at checkpoint 8 and removed commits
    // 0-7 but 3 and checkpoints 2 and 5: versions 3-7 could no longer be
    // rebuilt. On monotonic times, versions 3.. are inside the retention
    // (and 2 is the one current at the cutoff): only commits 0 and 1 go.
    let old = NOW - 60 * DAY;
    let mut times: Vec<i64> = (0..=LATEST as i64).map(|v| old + v * 1000).collect();
    times[3] = NOW - DAY;
    for t in &mut times[9..] {
        *t = NOW - DAY;
    }
    let cps = BTreeSet::from([2, 5, 8]);
    let s = Staged::new("skew", &cps, &times, |v| old + v as i64 * 1000 + 500);
    let run = s.plan(&BTreeSet::new(), true).unwrap();
    let want: BTreeSet<String> = [commit(0), commit(1)]
        .iter()
        .map(|n| format!("_delta_log/{n}"))
        .collect();
    assert_eq!(log_deletes(&run), want);
    s.apply(&run);
    let must = must_stay(&times, &BTreeSet::new()).unwrap();
    assert_eq!(must, (2..=LATEST).collect());
    let readable = rebuildable_versions(s.log_names());
    assert!(must.is_subset(&readable), "{must:?} vs {readable:?}");
    planner_loads(&s, &must);
    deltalake_loads(&s.dir, &must);
}

#[test]
fn log_cleanup_keeps_versions_of_leases_and_holds_and_deltalake_reads_every_one() {
    // Everything old: cleanup may go up to the newest old checkpoint (8),
    // unless a kept version needs more; a lease on version 4 keeps
    // checkpoint 2 and commits 3-4.
    let old = NOW - 60 * DAY;
    let times: Vec<i64> = (0..=LATEST as i64).map(|v| old + v * 1000).collect();
    let cps = BTreeSet::from([2, 5, 8]);
    let s = Staged::new("lease", &cps, &times, |v| old + v as i64 * 1000 + 500);
    let run = s.plan(&BTreeSet::new(), true).unwrap();
    let mut want: BTreeSet<String> = (0..8)
        .map(|v| format!("_delta_log/{}", commit(v)))
        .collect();
    want.insert(format!("_delta_log/{}", checkpoint(2)));
    want.insert(format!("_delta_log/{}", checkpoint(5)));
    assert_eq!(log_deletes(&run), want);

    let keep = BTreeSet::from([4]);
    let run = s.plan(&keep, true).unwrap();
    let want: BTreeSet<String> = (0..2)
        .map(|v| format!("_delta_log/{}", commit(v)))
        .collect();
    assert_eq!(log_deletes(&run), want);
    s.apply(&run);
    let must = must_stay(&times, &keep).unwrap();
    assert_eq!(must, BTreeSet::from([4, 11]));
    planner_loads(&s, &must);
    // deltalake reads every version from 2 on (the checkpoint stays).
    deltalake_loads(&s.dir, &(2..=LATEST).collect());
}

#[test]
fn log_cleanup_is_refused_when_a_version_inside_the_retention_cannot_be_rebuilt_already() {
    // Commit 6 is missing below the replayed checkpoint 8 (lost earlier):
    // versions 6 and 7 are inside the retention but cannot be rebuilt, so
    // the proof fails and nothing of the log is planned; the sweep goes on.
    let old = NOW - 60 * DAY;
    let mut times: Vec<i64> = (0..=LATEST as i64).map(|v| old + v * 1000).collect();
    for t in &mut times[6..] {
        *t = NOW - DAY;
    }
    let s = Staged::new("hole", &BTreeSet::from([2, 8]), &times, |_| old);
    std::fs::remove_file(s.dir.join("_delta_log").join(commit(6))).unwrap();
    let run = s.plan(&BTreeSet::new(), true).unwrap();
    assert!(log_deletes(&run).is_empty(), "{:?}", log_deletes(&run));
    let w = run.plan().warnings;
    assert!(
        w.iter()
            .any(|w| w.contains("log cleanup refused") && w.contains("version 6")),
        "{w:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Random commit and checkpoint times (commits before `split` older
    /// than the log retention, later ones younger, and any of them, or of
    /// the checkpoints, skewed to a random time: old and young mixed in any
    /// order), random checkpoints kept, random kept versions: after the
    /// plan's deletes, every version that must stay readable is rebuilt by
    /// the planner's own check and loaded by the planner, and no commit
    /// whose monotonic time is inside the retention was deleted.
    #[test]
    fn log_cleanup_never_removes_what_a_readable_version_needs(
        split in 0u64..=LATEST + 1,
        base in proptest::collection::vec(1i64..30, (LATEST + 1) as usize),
        skew in proptest::collection::vec(
            proptest::option::weighted(0.2, 0i64..60), (LATEST + 1) as usize),
        cp_delay in proptest::collection::vec(0i64..3, (LATEST + 1) as usize),
        cp_skew in proptest::collection::vec(
            proptest::option::weighted(0.15, 0i64..60), (LATEST + 1) as usize),
        cps in proptest::collection::btree_set(0u64..=LATEST, 0..6),
        keep in proptest::collection::btree_set(0u64..=LATEST, 0..3),
    ) {
        let times: Vec<i64> = (0..=LATEST as usize)
            .map(|v| match skew[v] {
                Some(d) => NOW - d * DAY,
                None if (v as u64) < split => CUTOFF - base[v] * DAY,
                None => NOW - base[v] * DAY,
            })
            .collect();
        let cp_time = |v: u64| match cp_skew[v as usize] {
            Some(d) => NOW - d * DAY,
            None => times[v as usize] + cp_delay[v as usize] * DAY,
        };
        let s = Staged::new("prop", &cps, &times, cp_time);
        let run = s.plan(&keep, true).unwrap();
        let deleted = log_deletes(&run);
        s.apply(&run);
        match must_stay(&times, &keep) {
            None => prop_assert!(deleted.is_empty(), "{deleted:?}"),
            Some(must) => {
                let readable = rebuildable_versions(s.log_names());
                prop_assert!(
                    must.is_subset(&readable),
                    "must stay {must:?}, readable {readable:?}, deleted {deleted:?}"
                );
                let lowest = *must.iter().next().unwrap();
                for k in &deleted {
                    let v: u64 = k["_delta_log/".len()..][..20].parse().unwrap();
                    prop_assert!(v < lowest, "{k} deleted, but version {lowest} must stay");
                }
                // The planner loads the oldest version that must stay (and
                // with it, every later one: the replay runs through them).
                planner_loads(&s, &BTreeSet::from([lowest]));
            }
        }
    }
}

// --- class 2: empty, action-less or unparsable commits; the newest commit's identity

fn all_old() -> Vec<i64> {
    (0..=LATEST as i64)
        .map(|v| NOW - 60 * DAY + v * 1000)
        .collect()
}

#[test]
fn an_empty_or_unparsable_newest_commit_is_refused_naming_the_file() {
    let name = commit(LATEST + 1);
    for (what, bytes) in [
        ("0 bytes", &b""[..]),
        ("blank lines", b"\n\n"),
        ("no action", b"{}\n"),
        ("not JSON", b"PAR1\x00\x00garbage"),
        (
            "cut short",
            br#"{"commitInfo":{"timestamp":1}}
{"add":{"path":"part-x.parquet","si"#,
        ),
    ] {
        let s = Staged::new("empty", &BTreeSet::from([8]), &all_old(), |_| {
            NOW - 50 * DAY
        });
        std::fs::write(s.dir.join("_delta_log").join(&name), bytes).unwrap();
        let mut o = s.opts.clone();
        o.mtimes.insert(format!("_delta_log/{name}"), NOW - DAY);
        let e = run_native(s.config(&BTreeSet::new(), false), &o).unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{what}: {e}");
        assert!(e.to_string().contains(&name), "{what}: {e}");
    }
    // An empty commit in the middle is refused too.
    let s = Staged::new("empty-mid", &BTreeSet::from([8]), &all_old(), |_| {
        NOW - 50 * DAY
    });
    std::fs::write(s.dir.join("_delta_log").join(commit(9)), b"").unwrap();
    let e = s.plan(&BTreeSet::new(), false).unwrap_err();
    assert!(e.to_string().contains(&commit(9)), "{e}");
}

#[test]
fn an_empty_commit_landing_during_the_sweep_is_refused() {
    let s = Staged::new("empty-next", &BTreeSet::from([8]), &all_old(), |_| {
        NOW - 50 * DAY
    });
    let mut o = s.opts.clone();
    let uri = format!("{}/_delta_log/{}", s.location, commit(LATEST + 1));
    o.replace.insert(uri, Vec::new());
    let e = run_native(s.config(&BTreeSet::new(), false), &o).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert!(e.to_string().contains(&commit(LATEST + 1)), "{e}");
}

/// The native session, with an entity tag on every listed object.
struct Etagged(Session);

impl Planner for Etagged {
    fn poll_request(&mut self) -> Option<Request> {
        self.0.poll_request()
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), Error> {
        self.0.handle_blob(uri, bytes)
    }
    fn handle_missing(&mut self, uri: String) -> Result<(), Error> {
        self.0.handle_missing(uri)
    }
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<(), Error> {
        let tagged = objects
            .into_iter()
            .map(|o| ListedObject {
                etag: Some(format!("\"{}-{}\"", o.size, o.last_modified_ms)),
                ..o
            })
            .collect();
        self.0.handle_page(tagged, is_last)
    }
    fn handle_pointer(&mut self, loc: Option<String>) -> Result<(), Error> {
        self.0.handle_pointer(loc)
    }
    fn drain_decisions(&mut self) -> Vec<Decision> {
        self.0.drain_decisions()
    }
}

impl Finish for Etagged {
    fn finish_json(&mut self) -> Result<String, Error> {
        self.0.finish().map(|p| p.to_json())
    }
}

#[test]
fn the_newest_commit_identity_is_recorded() {
    let times = all_old();
    let s = Staged::new("identity", &BTreeSet::from([8]), &times, |_| NOW - 50 * DAY);
    let mut p = Etagged(Session::start(s.config(&BTreeSet::new(), false)).unwrap());
    let run = drive(&mut p, "", &s.opts).unwrap();
    let id = p.0.delta_newest_commit().expect("identity").clone();
    let file = s.dir.join("_delta_log").join(commit(LATEST));
    let size = std::fs::metadata(&file).unwrap().len();
    assert_eq!(id.version, LATEST);
    assert_eq!(id.uri, run.plan().tokens.metadata_location);
    assert!(
        id.uri.ends_with(&format!("/_delta_log/{}", commit(LATEST))),
        "{}",
        id.uri
    );
    assert_eq!(id.size, size);
    assert_eq!(id.last_modified_ms, Some(times[LATEST as usize]));
    assert_eq!(
        id.etag,
        Some(format!("\"{size}-{}\"", times[LATEST as usize]))
    );
    // Same version number, rewritten commit: the identity differs.
    let s2 = Staged::new("identity2", &BTreeSet::from([8]), &times, |_| {
        NOW - 50 * DAY
    });
    let f2 = s2.dir.join("_delta_log").join(commit(LATEST));
    let mut text = std::fs::read(&f2).unwrap();
    text.extend_from_slice(b"\n{\"commitInfo\":{\"timestamp\":2}}\n");
    std::fs::write(&f2, text).unwrap();
    let mut p2 = Etagged(Session::start(s2.config(&BTreeSet::new(), false)).unwrap());
    drive(&mut p2, "", &s2.opts).unwrap();
    let id2 = p2.0.delta_newest_commit().unwrap();
    assert_eq!(id2.version, id.version);
    assert_ne!((id2.size, &id2.etag), (id.size, &id.etag));
    // A commit found by the re-check becomes the newest, with the size read
    // (the listing never saw it: no time, no tag).
    let mut o = s.opts.clone();
    let next = format!("{}/_delta_log/{}", s.location, commit(LATEST + 1));
    let body = b"{\"commitInfo\":{\"timestamp\":3}}\n".to_vec();
    o.replace.insert(next.clone(), body.clone());
    let mut p3 = Etagged(Session::start(s.config(&BTreeSet::new(), false)).unwrap());
    drive(&mut p3, "", &o).unwrap();
    let id3 = p3.0.delta_newest_commit().unwrap();
    assert_eq!(
        (
            id3.version,
            id3.uri.as_str(),
            id3.size,
            id3.last_modified_ms,
            id3.etag.as_deref()
        ),
        (LATEST + 1, next.as_str(), body.len() as u64, None, None)
    );
}

// --- class 3: a log holding a checkpoint and no commit ----------------------

#[test]
fn a_checkpoint_only_log_is_read_at_the_checkpoint_version() {
    let s = Staged::new("cp-only", &BTreeSet::from([5]), &all_old(), |_| {
        NOW - 50 * DAY
    });
    for v in 0..=LATEST {
        std::fs::remove_file(s.dir.join("_delta_log").join(commit(v))).unwrap();
    }
    // deltalake reads it, at version 5.
    assert_eq!(deltalake_loads(&s.dir, &BTreeSet::from([5])), 5);
    let run = s.plan(&BTreeSet::new(), true).unwrap();
    let v = run.verdicts();
    for f in &files_of()[&5] {
        assert_eq!(v[f].verdict, Verdict::Referenced, "{f}: {:?}", v[f]);
        assert!(v[f].detail.contains("Delta version 5"), "{:?}", v[f]);
    }
    let plan = run.plan();
    assert!(
        plan.tokens
            .metadata_location
            .ends_with(&format!("/_delta_log/{}", checkpoint(5))),
        "{}",
        plan.tokens.metadata_location
    );
    // Log cleanup has nothing to remove: the checkpoint is all there is.
    assert!(log_deletes(&run).is_empty());
    assert_eq!(
        v[&format!("_delta_log/{}", checkpoint(5))].verdict,
        Verdict::Hidden
    );
    // A version below the checkpoint can no longer be rebuilt.
    let e = s.plan(&BTreeSet::from([3]), false).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: lakesweep::UnsafeReason::ProtectedSnapshotMissing,
                ..
            }
        ),
        "{e}"
    );
}

// --- class 4: a checkpoint's files removed by the commits after it ----------

/// Data files (not log entries) with their verdict and reason.
fn data_verdicts(run: &Run) -> BTreeMap<String, (Verdict, String)> {
    run.verdicts()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("_delta_log/"))
        .map(|(k, d)| (k, (d.verdict, d.detail)))
        .collect()
}

/// The planner keeps a checkpoint's adds that no later commit touches as
/// it reads the checkpoint, and replays only the rest. On deltalake's
/// table (a delete at 3, an update at 5, an overwrite at 7 and a delete at
/// 9 remove files earlier checkpoints add), with every tombstone expired:
/// for each checkpoint and kept versions, exactly the files no kept or
/// newest version reads (deltalake's own lists) are deleted, and every
/// data file gets the verdict and reason a replay of the whole log from
/// version 0 gives it, whichever order the reads are answered in.
#[test]
fn files_a_checkpoint_adds_and_later_commits_remove_go_and_kept_versions_keep_theirs() {
    let files = files_of();
    let written: BTreeSet<String> = files.values().flatten().cloned().collect();
    let old = |s: &mut Staged| s.opts.default_mtime = Some(NOW - 50 * DAY);
    let mut whole_log = Staged::new("no-cp", &BTreeSet::new(), &all_old(), |_| 0);
    old(&mut whole_log);
    for cp in [2u64, 4, 6, 8, 10] {
        let mut s = Staged::new("cp-removed", &BTreeSet::from([cp]), &all_old(), |_| {
            NOW - 50 * DAY
        });
        old(&mut s);
        // Reads answered oldest first, then newest first, listings in pages of 3.
        s.opts.page_size = 3;
        for (keep, shuffle) in [
            (vec![], 0),
            (vec![cp], 1),
            (vec![cp + 1], 0),
            (vec![cp + 1], 1),
            (vec![cp, LATEST - 1], 1),
        ] {
            s.opts.shuffle = shuffle;
            let keep: BTreeSet<u64> = keep.into_iter().collect();
            let run = s.plan(&keep, false).unwrap();
            let live: BTreeSet<&String> = keep
                .iter()
                .chain([&LATEST])
                .flat_map(|v| &files[v])
                .collect();
            let want: BTreeSet<String> = written
                .iter()
                .filter(|f| !live.contains(f))
                .cloned()
                .collect();
            let deleted: BTreeSet<String> = run
                .plan()
                .delete
                .into_iter()
                .map(|d| d.key)
                .filter(|k| !k.starts_with("_delta_log/"))
                .collect();
            assert_eq!(
                deleted, want,
                "checkpoint {cp}, kept {keep:?}, shuffle {shuffle}"
            );
            assert!(!want.is_empty(), "checkpoint {cp}: something to delete");
            let reference = whole_log.plan(&keep, false).unwrap();
            assert_eq!(
                data_verdicts(&run),
                data_verdicts(&reference),
                "checkpoint {cp}, kept {keep:?}: verdicts and reasons of a replay from version 0"
            );
        }
    }
}

// --- plan tokens and summary (kill src/plan/delta.rs mutants) ---------------

/// Kills `DeltaSweep::head_identity` -> `None`: the sealed plan carries the
/// newest commit's identity as listed (size, time, tag), and after the
/// re-check that of the commit it found (size read, no time or tag).
#[test]
fn the_plan_tokens_carry_the_newest_commit_as_head() {
    let times = all_old();
    let s = Staged::new("head", &BTreeSet::from([8]), &times, |_| NOW - 50 * DAY);
    let mut p = Etagged(Session::start(s.config(&BTreeSet::new(), false)).unwrap());
    let run = drive(&mut p, "", &s.opts).unwrap();
    let size = std::fs::metadata(s.dir.join("_delta_log").join(commit(LATEST)))
        .unwrap()
        .len();
    let t = times[LATEST as usize];
    assert_eq!(
        run.plan().tokens.head,
        Some(lakesweep::ledger::ObjectVersion {
            size,
            last_modified_ms: t,
            etag: Some(format!("\"{size}-{t}\"")),
            version_id: None,
        })
    );
    let mut o = s.opts.clone();
    let body = b"{\"commitInfo\":{\"timestamp\":3}}\n".to_vec();
    o.replace.insert(
        format!("{}/_delta_log/{}", s.location, commit(LATEST + 1)),
        body.clone(),
    );
    let mut p = Etagged(Session::start(s.config(&BTreeSet::new(), false)).unwrap());
    let run = drive(&mut p, "", &o).unwrap();
    assert_eq!(
        run.plan().tokens.head,
        Some(lakesweep::ledger::ObjectVersion {
            size: body.len() as u64,
            last_modified_ms: 0,
            etag: None,
            version_id: None,
        })
    );
}

/// Kills `DeltaSweep::kept_versions` -> 0 and -> 1, and `!=` -> `==` in
/// it: the summary counts the newest version once plus every other kept one.
#[test]
fn the_summary_counts_the_newest_version_and_each_other_kept_one() {
    let s = Staged::new("count", &BTreeSet::from([2, 8]), &all_old(), |_| {
        NOW - 50 * DAY
    });
    for (keep, want) in [
        (BTreeSet::new(), 1),
        (BTreeSet::from([LATEST]), 1),
        (BTreeSet::from([3, 5, LATEST]), 3),
        (BTreeSet::from([0, 3, 9]), 4),
    ] {
        let run = s.plan(&keep, false).unwrap();
        assert_eq!(run.plan().summary.snapshots, want, "keep {keep:?}");
    }
}

/// Kills `>` -> `>=` and `>` -> `==` in `rechecks > MAX_RECHECKS` of
/// `Session::delta_next_commit`: eight commits landing during one sweep
/// are followed; the ninth stops it.
#[test]
fn eight_commits_landing_during_a_sweep_are_followed_and_a_ninth_is_refused() {
    let s = Staged::new("rechecks", &BTreeSet::from([8]), &all_old(), |_| {
        NOW - 50 * DAY
    });
    let landed = |n: u64| {
        let mut o = s.opts.clone();
        for v in LATEST + 1..=LATEST + n {
            o.replace.insert(
                format!("{}/_delta_log/{}", s.location, commit(v)),
                format!("{{\"commitInfo\":{{\"timestamp\":{v}}}}}\n").into_bytes(),
            );
        }
        run_native(s.config(&BTreeSet::new(), false), &o)
    };
    let run = landed(8).unwrap();
    let plan = run.plan();
    assert_eq!(plan.summary.rechecks, 8);
    assert!(
        plan.tokens
            .metadata_location
            .ends_with(&format!("/_delta_log/{}", commit(LATEST + 8))),
        "{}",
        plan.tokens.metadata_location
    );
    let e = landed(9).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: lakesweep::UnsafeReason::TableChanging,
                ..
            }
        ),
        "{e}"
    );
}
