//! The Delta transaction log of one sweep: what the listing of `_delta_log/`
//! holds, which checkpoint and commits must be read, the replayed state
//! (live files, their deletion vectors, tombstones, change-data files), and
//! which log entries log retention allows removing.
//!
//! ```text
//! list _delta_log/ ──► newest complete checkpoint ≤ every version to keep
//!   ──► read every commit after it (in any order): the paths they touch
//!   ──► read the checkpoint (+ V2 sidecars): an add of an untouched path is
//!       live from the checkpoint to the newest version, kept as it is read
//!   ──► replay the rest in version order, recording live files at each
//!       kept version
//! ```
//! A gap in the commit sequence, a missing checkpoint part or an unreadable
//! file stops the plan: a version that cannot be reconstructed cannot be
//! told apart from garbage.

use std::collections::{BTreeMap, BTreeSet};

use crate::hashing::{Map, Set};

use crate::error::MalformedReason;
use crate::error::{Error, Result, UnsafeReason};
use crate::spec::delta::{
    self, check_protocol, dv_file, log_file, Action, LogFile, LogPath, Metadata, Protocol,
};

/// One object of the `_delta_log/` listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogEntry {
    pub size: u64,
    pub last_modified_ms: i64,
    pub etag: Option<String>,
}

/// The checkpoint a replay starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub version: u64,
    /// Names relative to `_delta_log/` (one file, or every part).
    pub files: Vec<String>,
}

/// What must be read to reconstruct the versions the sweep keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    /// The newest version: of the newest commit, or of the newest checkpoint
    /// when the log holds no commit at or after it (a checkpoint-only log).
    pub latest: u64,
    /// The file that defines `latest` (relative to `_delta_log/`): its
    /// commit, or the first file of its checkpoint when it has no commit.
    pub latest_file: String,
    /// The checkpoint to start from, if any (otherwise version 0).
    pub checkpoint: Option<Checkpoint>,
    /// Commits to replay after the checkpoint, ascending.
    pub commits: Vec<u64>,
    /// Commits before the checkpoint still inside the file-retention window:
    /// read only for their change-data files and tombstones.
    pub recent_before: Vec<u64>,
}

/// The listing of `_delta_log/`, by name relative to it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogListing {
    pub files: BTreeMap<String, LogEntry>,
}

/// The versions that must stay readable after log cleanup: every version
/// from `from` to `to` (the newest), and each of `extra`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MustStay {
    pub from: u64,
    pub to: u64,
    pub extra: BTreeSet<u64>,
}

impl LogListing {
    fn commits(&self) -> BTreeMap<u64, &LogEntry> {
        self.files
            .iter()
            .filter_map(|(n, e)| match log_file(n) {
                LogFile::Commit(v) => Some((v, e)),
                _ => None,
            })
            .collect()
    }

    /// Commit times made monotonic by version, as Delta's log cleanup and
    /// timestamp time travel do: each commit's time is at least the previous
    /// commit's (adjusted) time + 1 ms, so a young commit makes every later
    /// one young too, whatever its own file time says.
    pub fn commit_times(&self) -> BTreeMap<u64, i64> {
        let mut out = BTreeMap::new();
        let mut prev: Option<i64> = None;
        for (v, e) in self.commits() {
            let t = match prev {
                Some(p) => e.last_modified_ms.max(p.saturating_add(1)),
                None => e.last_modified_ms,
            };
            out.insert(v, t);
            prev = Some(t);
        }
        out
    }

    /// The versions that must stay readable when log entries older than
    /// `cutoff_ms` go: the newest, every version a timestamp inside the log
    /// retention resolves to (from the newest version whose monotonic commit
    /// time is older than the cutoff, so the version current at the cutoff
    /// stays too), and `keep`. `None` when no version is that old: then
    /// nothing may go.
    pub fn must_stay(&self, cutoff_ms: i64, latest: u64, keep: &BTreeSet<u64>) -> Option<MustStay> {
        let from = self
            .commit_times()
            .into_iter()
            .filter(|(_, t)| *t < cutoff_ms)
            .map(|(v, _)| v)
            .next_back()?;
        Some(MustStay {
            from: from.min(latest),
            to: latest,
            extra: keep.clone(),
        })
    }

    /// Complete checkpoints by version (a multi-part set with a missing part
    /// is ignored). A classic file is preferred, then V2, then parts.
    pub fn checkpoints(&self) -> BTreeMap<u64, Checkpoint> {
        let mut single: BTreeMap<u64, String> = BTreeMap::new();
        let mut v2: BTreeMap<u64, String> = BTreeMap::new();
        let mut parts: BTreeMap<(u64, u64), BTreeMap<u64, String>> = BTreeMap::new();
        for name in self.files.keys() {
            match log_file(name) {
                LogFile::Checkpoint(v) => {
                    single.insert(v, name.clone());
                }
                LogFile::CheckpointV2 { version, .. } => {
                    v2.entry(version).or_insert_with(|| name.clone());
                }
                LogFile::CheckpointPart {
                    version,
                    part,
                    parts: n,
                } => {
                    parts
                        .entry((version, n))
                        .or_default()
                        .insert(part, name.clone());
                }
                _ => {}
            }
        }
        let mut out = BTreeMap::new();
        for ((version, n), got) in parts {
            if got.len() as u64 == n {
                out.insert(
                    version,
                    Checkpoint {
                        version,
                        files: got.into_values().collect(),
                    },
                );
            }
        }
        for (version, name) in v2.into_iter().chain(single) {
            out.insert(
                version,
                Checkpoint {
                    version,
                    files: vec![name],
                },
            );
        }
        out
    }

    /// The newest version and the file that defines it: the newest commit's,
    /// or a newer complete checkpoint's first file (a log holding a
    /// checkpoint and no commit after it is read at the checkpoint's
    /// version, as Delta readers do).
    pub fn newest(&self) -> Option<(u64, String)> {
        let newest_commit = self.commits().into_keys().next_back();
        let newest_checkpoint = self.checkpoints().into_values().next_back();
        match (newest_commit, newest_checkpoint) {
            (Some(v), Some(c)) if c.version > v => {
                Some((c.version, c.files.first().cloned().unwrap_or_default()))
            }
            (Some(v), _) => Some((v, delta::commit_name(v))),
            (None, Some(c)) => Some((c.version, c.files.first().cloned().unwrap_or_default())),
            (None, None) => None,
        }
    }

    /// Chooses the checkpoint and commits that reconstruct the latest version
    /// and every version in `keep` (each must be at most the latest).
    pub fn read_plan(
        &self,
        log_uri: &str,
        keep: &BTreeSet<u64>,
        window_start_ms: i64,
    ) -> Result<ReadPlan> {
        let commits = self.commits();
        let Some((latest, latest_file)) = self.newest() else {
            return Err(Error::unsafe_(
                UnsafeReason::MissingMetadata,
                format!("`{log_uri}` holds no commit and no complete checkpoint: not a Delta table, or its log was removed; nothing is deleted"),
            ));
        };
        if let Some(v) = keep.iter().find(|&&v| v > latest) {
            return Err(Error::unsafe_(
                UnsafeReason::ProtectedSnapshotMissing,
                format!("version {v} is protected but the table's newest version is {latest}"),
            ));
        }
        let oldest_needed = keep.iter().next().copied().unwrap_or(latest).min(latest);
        let checkpoint = self
            .checkpoints()
            .into_values()
            .rfind(|c| c.version <= oldest_needed);
        let first = checkpoint.as_ref().map(|c| c.version + 1).unwrap_or(0);
        let missing: Vec<u64> = (first..=latest)
            .filter(|v| !commits.contains_key(v))
            .take(3)
            .collect();
        if let Some(&gap) = missing.first() {
            let earliest = commits
                .keys()
                .next()
                .copied()
                .into_iter()
                .chain(self.checkpoints().into_keys().next())
                .min()
                .unwrap_or(0);
            if oldest_needed < latest && gap <= oldest_needed && gap < earliest {
                return Err(Error::unsafe_(
                    UnsafeReason::ProtectedSnapshotMissing,
                    format!("version {oldest_needed} is protected but can no longer be reconstructed (no checkpoint at or below it, and the log starts at version {earliest})"),
                ));
            }
            return Err(Error::malformed(MalformedReason::Inconsistent,
                log_uri,
                format!(
                    "commit {gap} is missing (the log goes from {} to {latest}{}): the table state cannot be reconstructed",
                    if checkpoint.is_some() {
                        format!("a checkpoint at {}", first - 1)
                    } else {
                        "version 0 with no checkpoint".to_owned()
                    },
                    if missing.len() > 1 { ", and more are missing" } else { "" }
                ),
            ));
        }
        let recent_before = commits
            .iter()
            .filter(|(v, e)| **v < first && e.last_modified_ms >= window_start_ms)
            .map(|(v, _)| *v)
            .collect();
        Ok(ReadPlan {
            latest,
            latest_file,
            checkpoint,
            commits: (first..=latest).collect(),
            recent_before,
        })
    }

    /// Log entries that log retention allows removing, with the reason (see
    /// [`LogListing::cleanup_boundary`] and [`LogListing::expired_below`]).
    #[cfg(test)]
    pub fn expired(
        &self,
        cutoff_ms: i64,
        latest: u64,
        keep: &BTreeSet<u64>,
    ) -> BTreeMap<String, String> {
        let Some(must) = self.must_stay(cutoff_ms, latest, keep) else {
            return BTreeMap::new();
        };
        match self.cleanup_boundary(cutoff_ms, &must) {
            Some(c) => {
                let out = self.expired_below(cutoff_ms, c.version);
                let trusted = BTreeSet::from([c.version]);
                match self.prove_rebuildable(&out, &must, &trusted) {
                    Ok(()) => out,
                    Err(_) => BTreeMap::new(),
                }
            }
            None => BTreeMap::new(),
        }
    }

    /// The checkpoint log cleanup stops at: the newest complete one at or
    /// below every version that must stay readable, whose files are all
    /// older than `cutoff_ms`. Everything from it on stays.
    pub fn cleanup_boundary(&self, cutoff_ms: i64, must: &MustStay) -> Option<Checkpoint> {
        let lowest = must.extra.iter().copied().chain([must.from]).min()?;
        let old = |name: &String| {
            self.files
                .get(name)
                .is_some_and(|e| e.last_modified_ms < cutoff_ms)
        };
        self.checkpoints()
            .into_values()
            .rfind(|c| c.version <= lowest && c.files.iter().all(old))
    }

    /// Log entries strictly below checkpoint `boundary` that are older than
    /// `cutoff_ms`, by their own time and, for commits, by their monotonic
    /// commit time.
    pub fn expired_below(&self, cutoff_ms: i64, boundary: u64) -> BTreeMap<String, String> {
        let times = self.commit_times();
        let mut out = BTreeMap::new();
        for (name, e) in &self.files {
            if e.last_modified_ms >= cutoff_ms {
                continue;
            }
            if let LogFile::Commit(v) = log_file(name) {
                if times.get(&v).is_none_or(|t| *t >= cutoff_ms) {
                    continue;
                }
            }
            let below = match log_file(name) {
                LogFile::Commit(v)
                | LogFile::Crc(v)
                | LogFile::Checkpoint(v)
                | LogFile::CheckpointPart { version: v, .. }
                | LogFile::CheckpointV2 { version: v, .. } => v < boundary,
                LogFile::Compacted { to, .. } => to < boundary,
                LogFile::LastCheckpoint | LogFile::Other => false,
            };
            if below {
                out.insert(
                    format!("_delta_log/{name}"),
                    format!("log entry older than the log retention and below checkpoint {boundary}, which is itself older"),
                );
            }
        }
        out
    }

    /// Proves that every version of `must` can still be rebuilt once the
    /// entries of `removed` (keys `_delta_log/<name>`) are gone: from a
    /// complete checkpoint in `trusted` (read and validated) that stays, or
    /// from version 0, plus every commit after it up to the version. Says
    /// which version cannot be rebuilt otherwise.
    pub fn prove_rebuildable(
        &self,
        removed: &BTreeMap<String, String>,
        must: &MustStay,
        trusted: &BTreeSet<u64>,
    ) -> std::result::Result<(), String> {
        let remaining = LogListing {
            files: self
                .files
                .iter()
                .filter(|(n, _)| !removed.contains_key(&format!("_delta_log/{n}")))
                .map(|(n, e)| (n.clone(), e.clone()))
                .collect(),
        };
        let starts: BTreeSet<u64> = remaining
            .checkpoints()
            .into_keys()
            .filter(|v| trusted.contains(v))
            .collect();
        let readable = remaining.readable_versions(&starts);
        // The first version of from..=to that is not readable (walking the
        // readable set, not the range, so a huge range costs nothing).
        let mut expect = must.from;
        let mut hole = None;
        for &v in readable.range(must.from..=must.to) {
            if v != expect {
                break;
            }
            expect = v.saturating_add(1);
        }
        if expect <= must.to {
            hole = Some(expect);
        }
        let missing = hole.or_else(|| must.extra.iter().copied().find(|v| !readable.contains(v)));
        match missing {
            None => Ok(()),
            Some(v) => Err(format!(
                "version {v} must stay readable but could not be rebuilt from the log entries that would remain (no kept checkpoint at or below it followed by every commit up to it)"
            )),
        }
    }

    /// Every version that can be rebuilt from this listing: a checkpoint in
    /// `starts`, or commit 0, followed by an unbroken run of commits.
    fn readable_versions(&self, starts: &BTreeSet<u64>) -> BTreeSet<u64> {
        let commits: BTreeSet<u64> = self.commits().into_keys().collect();
        let mut out = BTreeSet::new();
        let mut prev: Option<u64> = None;
        for v in commits
            .iter()
            .chain(starts)
            .copied()
            .collect::<BTreeSet<u64>>()
        {
            let chained = commits.contains(&v)
                && match (v, prev) {
                    (0, _) => true,
                    (_, Some(p)) => p.checked_add(1) == Some(v) && out.contains(&p),
                    (_, None) => false,
                };
            if starts.contains(&v) || chained {
                out.insert(v);
            }
            prev = Some(v);
        }
        out
    }
}

/// The planner's rebuild check, on names alone: every version a
/// `_delta_log/` holding exactly `names` (relative to it) can rebuild: from a
/// complete checkpoint (every part present) or from commit 0, followed by an
/// unbroken run of commits. Log cleanup proves its plan with this check
/// (trusting only checkpoints it read and validated); tests and hosts can
/// run it on what a log holds after the deletes.
pub fn rebuildable_versions<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> BTreeSet<u64> {
    let listing = LogListing {
        files: names
            .into_iter()
            .map(|n| {
                (
                    n.as_ref().to_owned(),
                    LogEntry {
                        size: 0,
                        last_modified_ms: 0,
                        etag: None,
                    },
                )
            })
            .collect(),
    };
    let starts = listing.checkpoints().into_keys().collect();
    listing.readable_versions(&starts)
}

/// Checks what a checkpoint must hold: exactly one protocol and one
/// metaData action across its files, a `checkpointMetadata` action in a V2
/// checkpoint, and deletion-vector columns when the table uses deletion
/// vectors. `files` are (URI, actions) of its files and sidecars.
pub(crate) fn validate_checkpoint<'a>(
    log_uri: &str,
    cp: &Checkpoint,
    files: impl Iterator<Item = (&'a str, &'a [Action])>,
) -> Result<()> {
    let (mut protocols, mut metadata, mut cp_meta) = (0, 0, 0);
    let mut lacks_dv = None;
    let mut protocol = None;
    for (uri, actions) in files {
        for a in actions {
            match a {
                Action::Protocol(p) => {
                    protocols += 1;
                    protocol = Some(p.clone());
                }
                Action::Metadata(_) => metadata += 1,
                Action::CheckpointMetadata => cp_meta += 1,
                Action::LacksDeletionVectorColumns => lacks_dv = Some(uri.to_owned()),
                _ => {}
            }
        }
    }
    let what = format!("checkpoint {} ({})", cp.version, cp.files.join(", "));
    if protocols != 1 || metadata != 1 {
        return Err(Error::malformed(MalformedReason::Field,
            log_uri,
            format!("{what} holds {protocols} protocol and {metadata} metaData actions (one each expected): damaged or not a checkpoint"),
        ));
    }
    let v2 = cp
        .files
        .iter()
        .any(|f| matches!(log_file(f), LogFile::CheckpointV2 { .. }));
    if v2 && cp_meta == 0 {
        return Err(Error::malformed(
            MalformedReason::Field,
            log_uri,
            format!("{what} is a V2 checkpoint without checkpointMetadata"),
        ));
    }
    let uses_dv = protocol.as_ref().is_some_and(|p| {
        p.reader_features
            .iter()
            .flatten()
            .any(|f| f == "deletionVectors")
    });
    if let (true, Some(f)) = (uses_dv, lacks_dv) {
        return Err(Error::malformed(MalformedReason::Field,
            &f,
            "the table uses deletion vectors but this checkpoint file has no add.deletionVector columns: live vectors would be missed",
        ));
    }
    Ok(())
}

/// Adds to `touched` every path `actions` (a commit read from `uri`) add
/// or remove, decoded as the replay decodes them.
pub(crate) fn touched_paths(
    uri: &str,
    actions: &[Action],
    touched: &mut Set<LogPath>,
) -> Result<()> {
    for a in actions {
        if let Action::Add { path, .. } | Action::Remove { path, .. } = a {
            touched.insert(LogPath::parse(uri, path)?);
        }
    }
    Ok(())
}

/// A file a replayed version references, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kept {
    /// A live data file at `version`.
    Active(LogPath),
    /// The deletion-vector file of a live data file at `version`.
    DeletionVector(LogPath),
}

/// How a file's actions are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A checkpoint (or its sidecars, or parts): reconciled state. Its
    /// removes are tombstones only, so the order of parts does not matter.
    Checkpoint,
    /// A commit after the checkpoint.
    Commit,
    /// A commit before the checkpoint, read for change data and tombstones only.
    Before,
}

/// The replayed table state.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Live adds: (path, deletion-vector id) -> deletion-vector file.
    live: Map<(LogPath, String), Option<LogPath>>,
    /// Removed logical files, keyed like adds (one file may be removed with
    /// several deletion vectors in turn; each DV file has its own
    /// tombstone): -> (deletion timestamp, DV file).
    pub tombstones: Map<(LogPath, String), (Option<i64>, Option<LogPath>)>,
    /// Change-data files with the version that wrote them.
    pub cdc: Vec<(LogPath, u64)>,
    /// The newest protocol.
    pub protocol: Option<Protocol>,
    /// The newest table metadata.
    pub metadata: Option<Metadata>,
}

fn dv_key(dv: &Option<delta::DeletionVector>) -> String {
    match dv {
        None => String::new(),
        Some(d) => format!(
            "{}:{}:{}",
            d.storage_type,
            d.path_or_inline_dv,
            d.offset.unwrap_or(-1)
        ),
    }
}

fn dv_path(uri: &str, dv: &Option<delta::DeletionVector>) -> Result<Option<LogPath>> {
    match dv {
        None => Ok(None),
        Some(d) => dv_file(uri, d),
    }
}

impl Replay {
    /// Applies one file's actions (in version order across calls).
    pub fn apply(
        &mut self,
        uri: &str,
        version: u64,
        actions: Vec<Action>,
        source: Source,
    ) -> Result<()> {
        let state = source != Source::Before;
        for a in actions {
            match a {
                Action::Add { path, dv } if state => {
                    let p = LogPath::parse_owned(uri, path)?;
                    let file = dv_path(uri, &dv)?;
                    self.live.insert((p, dv_key(&dv)), file);
                }
                Action::Remove {
                    path,
                    deletion_timestamp,
                    dv,
                } => {
                    let p = LogPath::parse_owned(uri, path)?;
                    let file = dv_path(uri, &dv)?;
                    let key = (p, dv_key(&dv));
                    if source == Source::Commit {
                        self.live.remove(&key);
                    }
                    let entry = self
                        .tombstones
                        .entry(key)
                        .or_insert((deletion_timestamp, None));
                    // The newest timestamp counts; a missing one stays missing.
                    entry.0 = match (entry.0, deletion_timestamp) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                    if file.is_some() {
                        entry.1 = file;
                    }
                }
                Action::Cdc { path } => {
                    self.cdc.push((LogPath::parse_owned(uri, path)?, version));
                }
                Action::Protocol(p) if state => {
                    check_protocol(uri, &p)?;
                    self.protocol = Some(p);
                }
                Action::Metadata(m) if state => self.metadata = Some(m),
                _ => {}
            }
        }
        Ok(())
    }

    /// Applies a checkpoint file's actions like [`Replay::apply`], except
    /// that an add of a path `touched` does not hold is returned instead
    /// of held: no commit after the checkpoint adds or removes that path,
    /// so it (and its deletion vector) is live in every version from the
    /// checkpoint to the newest. With `touched` `None` every add is held.
    pub fn apply_checkpoint(
        &mut self,
        uri: &str,
        version: u64,
        actions: Vec<Action>,
        touched: Option<&Set<LogPath>>,
    ) -> Result<Vec<Kept>> {
        let mut untouched = Vec::new();
        let mut rest = Vec::new();
        for a in actions {
            match a {
                Action::Add { path, dv } => {
                    let p = LogPath::parse_owned(uri, path)?;
                    let file = dv_path(uri, &dv)?;
                    if touched.is_some_and(|t| !t.contains(&p)) {
                        untouched.push(Kept::Active(p));
                        untouched.extend(file.map(Kept::DeletionVector));
                    } else {
                        self.live.insert((p, dv_key(&dv)), file);
                    }
                }
                other => rest.push(other),
            }
        }
        self.apply(uri, version, rest, Source::Checkpoint)?;
        Ok(untouched)
    }

    /// Takes every file the current state references, leaving it empty
    /// (the newest version's files, without a copy of them).
    pub fn take_live(&mut self) -> impl Iterator<Item = Kept> {
        std::mem::take(&mut self.live)
            .into_iter()
            .flat_map(|((path, _), dv)| {
                std::iter::once(Kept::Active(path)).chain(dv.map(Kept::DeletionVector))
            })
    }

    /// Every file the current state references.
    pub fn live_files(&self) -> Vec<Kept> {
        let mut out = Vec::with_capacity(self.live.len());
        for ((path, _), dv) in &self.live {
            out.push(Kept::Active(path.clone()));
            if let Some(f) = dv {
                out.push(Kept::DeletionVector(f.clone()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(names: &[(&str, i64)]) -> LogListing {
        LogListing {
            files: names
                .iter()
                .map(|(n, t)| {
                    (
                        n.to_string(),
                        LogEntry {
                            size: 1,
                            last_modified_ms: *t,
                            etag: None,
                        },
                    )
                })
                .collect(),
        }
    }
    fn c(v: u64) -> String {
        format!("{v:020}.json")
    }

    #[test]
    fn newest_complete_checkpoint_and_gaps() {
        let mut names: Vec<(String, i64)> = (0..=12).map(|v| (c(v), 0)).collect();
        names.push((format!("{:020}.checkpoint.parquet", 5), 0));
        // A multi-part checkpoint at 10 with a part missing is ignored.
        names.push((
            format!("{:020}.checkpoint.0000000001.0000000002.parquet", 10),
            0,
        ));
        let l = listing(
            &names
                .iter()
                .map(|(n, t)| (n.as_str(), *t))
                .collect::<Vec<_>>(),
        );
        let p = l.read_plan("log", &BTreeSet::new(), 0).unwrap();
        assert_eq!(p.latest, 12);
        assert_eq!(p.checkpoint.as_ref().unwrap().version, 5);
        assert_eq!(p.commits, (6..=12).collect::<Vec<_>>());
        // Keeping version 3 starts from version 0.
        let p = l.read_plan("log", &BTreeSet::from([3]), 0).unwrap();
        assert!(p.checkpoint.is_none());
        assert_eq!(p.commits.len(), 13);
        // A gap after the checkpoint is malformed.
        let mut gap = l.clone();
        gap.files.remove(&c(8));
        let e = gap.read_plan("log", &BTreeSet::new(), 0).unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
        // Old commits gone: version 3 cannot be rebuilt any more.
        let mut cleaned = l.clone();
        for v in 0..5 {
            cleaned.files.remove(&c(v));
        }
        cleaned.read_plan("log", &BTreeSet::new(), 0).unwrap();
        let e = cleaned
            .read_plan("log", &BTreeSet::from([3]), 0)
            .unwrap_err();
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
        assert!(LogListing::default()
            .read_plan("log", &BTreeSet::new(), 0)
            .is_err());
    }

    #[test]
    fn log_cleanup_stops_below_an_old_checkpoint() {
        // Commits 0..=9 are old (t=0), 10.. are new (t=100); checkpoints at 4 (old) and 8 (new).
        let mut names: Vec<(String, i64)> = (0..=12)
            .map(|v| (c(v), if v < 10 { 0 } else { 100 }))
            .collect();
        names.push((format!("{:020}.checkpoint.parquet", 4), 0));
        names.push((format!("{:020}.checkpoint.parquet", 8), 100));
        names.push(("_last_checkpoint".into(), 0));
        let l = listing(
            &names
                .iter()
                .map(|(n, t)| (n.as_str(), *t))
                .collect::<Vec<_>>(),
        );
        let none = BTreeSet::new();
        let e = l.expired(50, 12, &none);
        let want: Vec<String> = (0..4).map(|v| format!("_delta_log/{}", c(v))).collect();
        assert_eq!(e.keys().cloned().collect::<Vec<_>>(), want);
        // A kept version at 2 needs everything from version 0.
        assert!(l.expired(50, 12, &BTreeSet::from([2])).is_empty());
        assert!(l.expired(-1, 12, &none).is_empty());
    }

    #[test]
    fn commit_times_are_made_monotonic_before_judging_age() {
        // Commit 3 is young between old ones: versions 3.. are all young
        // (time travel to a time after commit 3 resolves to them).
        let times = [0, 1, 2, 100, 3, 4, 5, 6];
        let mut names: Vec<(String, i64)> = times
            .iter()
            .enumerate()
            .map(|(v, t)| (c(v as u64), *t))
            .collect();
        names.push((format!("{:020}.checkpoint.parquet", 2), 2));
        names.push((format!("{:020}.checkpoint.parquet", 5), 5));
        let l = listing(
            &names
                .iter()
                .map(|(n, t)| (n.as_str(), *t))
                .collect::<Vec<_>>(),
        );
        let t = l.commit_times();
        assert_eq!(
            t.values().copied().collect::<Vec<_>>(),
            vec![0, 1, 2, 100, 101, 102, 103, 104]
        );
        let none = BTreeSet::new();
        let must = l.must_stay(50, 7, &none).unwrap();
        assert_eq!((must.from, must.to), (2, 7));
        // Raw times would stop at checkpoint 5 and remove commit 3, which
        // version 3 needs; monotonic times stop at checkpoint 2.
        let e = l.expired(50, 7, &none);
        let want: Vec<String> = (0..2).map(|v| format!("_delta_log/{}", c(v))).collect();
        assert_eq!(e.keys().cloned().collect::<Vec<_>>(), want);
        // The proof catches a plan that would lose version 3 (or 6).
        let bad: BTreeMap<String, String> = [c(3), format!("{:020}.checkpoint.parquet", 2)]
            .iter()
            .map(|n| (format!("_delta_log/{n}"), String::new()))
            .collect();
        let trusted = BTreeSet::from([2, 5]);
        let err = l.prove_rebuildable(&bad, &must, &trusted).unwrap_err();
        assert!(err.contains("version 3"), "{err}");
        let bad: BTreeMap<String, String> = [format!("{:020}.checkpoint.parquet", 5), c(5)]
            .iter()
            .map(|n| (format!("_delta_log/{n}"), String::new()))
            .collect();
        let err = l.prove_rebuildable(&bad, &must, &trusted).unwrap_err();
        assert!(err.contains("version 5"), "{err}");
        // An untrusted (unvalidated) checkpoint proves nothing.
        let gone: BTreeMap<String, String> = (0..3)
            .map(|v| (format!("_delta_log/{}", c(v)), String::new()))
            .collect();
        assert!(l
            .prove_rebuildable(&gone, &must, &BTreeSet::from([2]))
            .is_ok());
        assert!(l.prove_rebuildable(&gone, &must, &BTreeSet::new()).is_err());
    }

    #[test]
    fn a_checkpoint_only_log_is_read_at_the_checkpoint_version() {
        let l = listing(&[(&format!("{:020}.checkpoint.parquet", 4), 0)]);
        let p = l.read_plan("log", &BTreeSet::new(), 0).unwrap();
        assert_eq!(p.latest, 4);
        assert_eq!(p.checkpoint.unwrap().version, 4);
        assert!(p.commits.is_empty());
        assert_eq!(p.latest_file, format!("{:020}.checkpoint.parquet", 4));
        let e = l.read_plan("log", &BTreeSet::from([3]), 0).unwrap_err();
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

    fn names(l: &[(String, i64)]) -> LogListing {
        listing(&l.iter().map(|(n, t)| (n.as_str(), *t)).collect::<Vec<_>>())
    }
    fn cp(v: u64) -> String {
        format!("{v:020}.checkpoint.parquet")
    }

    /// Kills `<` -> `<=` in `LogListing::must_stay`: a commit whose
    /// (monotonic) time is exactly the cutoff is not older than it.
    #[test]
    fn a_commit_exactly_at_the_cutoff_is_not_older_than_it() {
        let l = names(&[(c(0), 10), (c(1), 50), (c(2), 60)]);
        let none = BTreeSet::new();
        let m = l.must_stay(50, 2, &none).unwrap();
        assert_eq!((m.from, m.to), (0, 2));
        // Only commit 0 (t=50, the cutoff) is not old: no version is.
        let l = names(&[(c(0), 50), (c(1), 60)]);
        assert_eq!(l.must_stay(50, 1, &none), None);
        assert!(l.expired(50, 1, &none).is_empty());
    }

    /// Kills `<` -> `<=` in `LogListing::cleanup_boundary`: a checkpoint
    /// file written exactly at the cutoff is not older than it, so cleanup
    /// stops at the older checkpoint below.
    #[test]
    fn a_checkpoint_exactly_at_the_cutoff_is_not_a_cleanup_boundary() {
        let mut n: Vec<(String, i64)> = (0..=6)
            .map(|v| (c(v), if v < 5 { 0 } else { 100 }))
            .collect();
        n.push((cp(2), 0));
        n.push((cp(4), 50));
        let l = names(&n);
        let must = l.must_stay(50, 6, &BTreeSet::new()).unwrap();
        assert_eq!(must.from, 4);
        assert_eq!(l.cleanup_boundary(50, &must).unwrap().version, 2);
        // One millisecond older, checkpoint 4 is the boundary.
        n.last_mut().unwrap().1 = 49;
        assert_eq!(names(&n).cleanup_boundary(50, &must).unwrap().version, 4);
    }

    /// Kills `<` -> `==`, `>`, `<=` in `LogListing::expired_below` on
    /// compacted files: only one ending strictly below the boundary goes.
    #[test]
    fn a_compacted_file_goes_only_when_it_ends_below_the_boundary() {
        let comp = |a: u64, b: u64| format!("{a:020}.{b:020}.compacted.json");
        let mut n: Vec<(String, i64)> = (0..=8).map(|v| (c(v), 0)).collect();
        n.extend([(comp(0, 3), 0), (comp(2, 5), 0), (comp(4, 7), 0)]);
        let e = names(&n).expired_below(50, 5);
        assert!(
            e.contains_key(&format!("_delta_log/{}", comp(0, 3))),
            "{e:?}"
        );
        assert!(
            !e.contains_key(&format!("_delta_log/{}", comp(2, 5))),
            "{e:?}"
        );
        assert!(
            !e.contains_key(&format!("_delta_log/{}", comp(4, 7))),
            "{e:?}"
        );
        let commits: Vec<String> = (0..5).map(|v| format!("_delta_log/{}", c(v))).collect();
        assert!(commits.iter().all(|k| e.contains_key(k)), "{e:?}");
        assert_eq!(e.len(), 6, "{e:?}");
    }

    fn protocol(readers: &[&str]) -> Protocol {
        Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: Some(readers.iter().map(|s| s.to_string()).collect()),
            writer_features: Some(readers.iter().map(|s| s.to_string()).collect()),
        }
    }
    fn metadata(id: &str) -> Metadata {
        Metadata {
            id: id.into(),
            ..Metadata::default()
        }
    }

    /// Kills `==` -> `!=` in `validate_checkpoint`'s deletion-vector test:
    /// only the `deletionVectors` reader feature requires the DV columns.
    #[test]
    fn only_the_deletion_vector_feature_requires_deletion_vector_columns() {
        let check = |readers: &[&str]| {
            let cp = Checkpoint {
                version: 1,
                files: vec![cp(1)],
            };
            let actions = vec![
                Action::Protocol(protocol(readers)),
                Action::Metadata(metadata("t")),
                Action::LacksDeletionVectorColumns,
            ];
            validate_checkpoint("log", &cp, [("log/cp", actions.as_slice())].into_iter())
        };
        let e = check(&["deletionVectors"]).unwrap_err();
        assert!(e.to_string().contains("deletion vectors"), "{e}");
        check(&["columnMapping"]).unwrap();
        check(&[]).unwrap();
    }

    /// Kills the match guards `state` -> `true` on protocol and metaData
    /// in `Replay::apply`: a commit before the checkpoint (read for change
    /// data and tombstones only, after the checkpoint) does not set the
    /// table's protocol or metadata.
    #[test]
    fn a_commit_before_the_checkpoint_does_not_set_protocol_or_metadata() {
        let mut r = Replay::default();
        r.apply(
            "log/cp",
            5,
            vec![
                Action::Protocol(protocol(&["deletionVectors"])),
                Action::Metadata(metadata("new")),
            ],
            Source::Checkpoint,
        )
        .unwrap();
        r.apply(
            "log/3",
            3,
            vec![
                Action::Protocol(protocol(&["columnMapping"])),
                Action::Metadata(metadata("old")),
            ],
            Source::Before,
        )
        .unwrap();
        assert_eq!(r.protocol, Some(protocol(&["deletionVectors"])));
        assert_eq!(r.metadata, Some(metadata("new")));
        // A commit after it does.
        r.apply(
            "log/6",
            6,
            vec![
                Action::Protocol(protocol(&["columnMapping"])),
                Action::Metadata(metadata("newer")),
            ],
            Source::Commit,
        )
        .unwrap();
        assert_eq!(r.protocol, Some(protocol(&["columnMapping"])));
        assert_eq!(r.metadata, Some(metadata("newer")));
    }

    /// An add or remove of one of a few paths (some spelled with a percent
    /// escape, some absolute), with no deletion vector, an inline one or
    /// one in a file.
    fn file_action() -> impl proptest::strategy::Strategy<Value = Action> {
        use proptest::prelude::*;
        let path = prop::sample::select(vec![
            "a.parquet",
            "b.parquet",
            "d=1/c.parquet",
            "d%3D1/c.parquet",
            "s3://b/t/a.parquet",
            "e.parquet",
        ]);
        let dv = prop::sample::select(vec![
            None,
            Some(("i", "x")),
            Some(("p", "s3://b/t/dv0.bin")),
            Some(("p", "s3://b/t/dv1.bin")),
        ]);
        (path, dv, any::<bool>(), prop::option::of(0i64..10)).prop_map(|(p, dv, add, ts)| {
            let dv = dv.map(|(t, v)| delta::DeletionVector {
                storage_type: t.into(),
                path_or_inline_dv: v.into(),
                offset: None,
            });
            if add {
                Action::Add { path: p.into(), dv }
            } else {
                Action::Remove {
                    path: p.into(),
                    deletion_timestamp: ts,
                    dv,
                }
            }
        })
    }

    /// The distinct files (a file kept twice is kept).
    fn distinct(kept: impl IntoIterator<Item = Kept>) -> BTreeSet<String> {
        kept.into_iter().map(|k| format!("{k:?}")).collect()
    }

    proptest::proptest! {
        /// Keeping a checkpoint's adds that no later commit touches as the
        /// checkpoint is read, instead of replaying them, leaves exactly
        /// the live files and tombstones of the full replay: nothing live
        /// is missed, and nothing removed stays live.
        #[test]
        fn untouched_checkpoint_adds_are_the_live_files_the_replay_would_hold(
            checkpoint in proptest::collection::vec(file_action(), 0..12),
            commits in proptest::collection::vec(proptest::collection::vec(file_action(), 0..5), 0..4),
        ) {
            let uri = "s3://b/t/_delta_log/00000000000000000003.checkpoint.parquet";
            let commit_uri = |i: usize| format!("s3://b/t/_delta_log/{:020}.json", 4 + i);
            let mut whole = Replay::default();
            whole.apply(uri, 3, checkpoint.clone(), Source::Checkpoint).unwrap();
            let mut touched = Set::default();
            for (i, c) in commits.iter().enumerate() {
                whole.apply(&commit_uri(i), 4 + i as u64, c.clone(), Source::Commit).unwrap();
                touched_paths(&commit_uri(i), c, &mut touched).unwrap();
            }
            let mut split = Replay::default();
            let untouched = split.apply_checkpoint(uri, 3, checkpoint, Some(&touched)).unwrap();
            for (i, c) in commits.into_iter().enumerate() {
                split.apply(&commit_uri(i), 4 + i as u64, c, Source::Commit).unwrap();
            }
            let mut live = split.live_files();
            live.extend(untouched);
            proptest::prop_assert_eq!(distinct(live), distinct(whole.live_files()));
            proptest::prop_assert_eq!(split.tombstones, whole.tombstones);
        }
    }

    #[test]
    fn without_the_later_commits_every_checkpoint_add_is_held() {
        let add = Action::Add {
            path: "a.parquet".into(),
            dv: None,
        };
        let mut r = Replay::default();
        let untouched = r
            .apply_checkpoint(
                "s3://b/t/_delta_log/x.checkpoint.parquet",
                1,
                vec![add],
                None,
            )
            .unwrap();
        assert!(untouched.is_empty());
        assert_eq!(r.live_files().len(), 1);
    }
}
