//! Delta Lake sessions: list `_delta_log/`, read every commit after the
//! newest usable checkpoint, then the checkpoint (its adds that no later
//! commit touches are kept as each part is read; the rest are replayed
//! with the commits), check the retention, plan log cleanup, then the
//! common listing; after the listing, commits that landed meanwhile are
//! replayed and demote candidates.
//!
//! ```text
//! start ──► list _delta_log/ ──► read the commits after the checkpoint
//!   ──► read checkpoint (+ sidecars), keeping untouched adds as read
//!   ──► replay (keep set frozen) ──► list location/ ──► pages
//!   ──► read the next commit: present → replay its adds, demote, next;
//!       missing → done
//! ```
//!
//! The half never reaches into the session: [`DeltaSweep`]'s methods and
//! the functions here take what they need as arguments (the run's settings
//! as [`Start`] and [`Rules`], the table's location, the prior pointers)
//! and return what to keep, read and warn ([`KeepPath`], [`Listed`],
//! [`Read`], [`Cleanup`], [`Replayed`]); the session's side
//! (`session::delta`) applies it.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::checkpoint_digest::CheckpointDigest;
use super::requests::Purpose;
use crate::context::{DrCheckpoint, HoldScope};
use crate::delta_log::{
    Checkpoint, Kept, LogEntry, LogListing, MustStay, ReadPlan, Replay, Source as ReplaySource,
};
use crate::duration::human_ms;
use crate::error::{Error, Result};
use crate::error::{MalformedReason, ProtocolReason, UnsafeReason};
use crate::hashing::Set;
use crate::path::{CanonicalUri, TableLocation};
use crate::reach::Source;
use crate::spec::delta::{self as spec, Action, CommitIdentity, LogFile, LogPath};
use crate::verdict::ListedObject;

/// Replay order of checkpoint files (and their sidecars).
const CHECKPOINT: u8 = 0;
/// Replay order of commits before the checkpoint (change data only).
const RECENT_BEFORE: u8 = 1;
/// Replay order of commits after the checkpoint.
const COMMIT: u8 = 2;
/// Read only to validate the checkpoint log cleanup would stop at.
pub(super) const VALIDATE: u8 = 3;

/// The Delta part of a session.
#[derive(Debug, Default)]
pub(super) struct DeltaSweep {
    /// URI of `_delta_log/` (with the trailing slash).
    log_prefix: String,
    log: LogListing,
    plan: Option<ReadPlan>,
    /// Parsed files by (order, version, name). A checkpoint's files keep
    /// only their actions other than adds, removes and change data, to be
    /// validated together: those are applied to `checkpoint_state` as soon
    /// as they are read.
    blobs: BTreeMap<(u8, u64, String), Vec<Action>>,
    /// The checkpoint's state, its files applied as they are read (a
    /// checkpoint is reconciled: the order of its parts does not matter),
    /// so millions of its actions are never held as parsed.
    checkpoint_state: Replay,
    /// Versions whose files are all kept, besides the latest.
    keep_versions: BTreeSet<u64>,
    /// The checkpoint's reads, held back until every commit after it is
    /// read (see `touched`).
    deferred: Vec<(String, Purpose)>,
    /// Every path the commits after the checkpoint add or remove, once
    /// they are read. A checkpoint's add of any other path stays live in
    /// every version from the checkpoint to the newest, so it is kept as
    /// its part is read instead of being held in `checkpoint_state`: the
    /// replay then holds the paths later commits touch, not the millions
    /// a large checkpoint names.
    touched: Option<Set<LogPath>>,
    pub(super) replayed: bool,
    /// The newest version replayed (re-checks go on from here).
    latest: u64,
    /// Log cleanup waits for this checkpoint (and its sidecars) to be read
    /// and validated: (checkpoint, log cutoff).
    pub(super) validating: Option<(crate::delta_log::Checkpoint, i64)>,
    /// Why validation failed, if it did (log cleanup is then skipped).
    validation_failed: Option<String>,
    /// The versions log cleanup must leave readable.
    cleanup_must: Option<MustStay>,
    /// The newest commit (or checkpoint-only version) planned on.
    newest: Option<CommitIdentity>,
}

impl DeltaSweep {
    /// The newest commit's identity as a token: as listed, or (found by
    /// the re-check, read but never listed) its size with time 0, "unknown".
    pub(super) fn head_identity(&self) -> Option<crate::version::ObjectVersion> {
        self.newest.as_ref().map(|n| crate::version::ObjectVersion {
            size: n.size,
            last_modified_ms: n.last_modified_ms.unwrap_or(0),
            etag: n.etag.clone(),
            version_id: None,
        })
    }

    /// Versions kept besides the latest.
    pub(super) fn kept_versions(&self) -> u64 {
        let latest = self.latest;
        self.keep_versions.iter().filter(|&&v| v != latest).count() as u64
    }
}

fn version_of(what: &str, id: i64) -> Result<u64> {
    u64::try_from(id).map_err(|_| {
        Error::invalid(
            "context",
            format!("{what} names {id}, which is not a Delta table version"),
        )
    })
}

/// A path the log names that the session must keep: the log file it was
/// read from (`blob`), the path as decoded (relative to the table, or
/// absolute), and why. The blob's name is shared by every path it names
/// (millions, for a checkpoint's version).
#[derive(Debug, Clone)]
pub(super) struct KeepPath {
    pub(super) blob: Rc<str>,
    pub(super) path: LogPath,
    pub(super) source: Source,
}

impl KeepPath {
    /// `kept`, a file of `version` as read from `blob`.
    pub(super) fn of_version(blob: &Rc<str>, kept: Kept, version: u64) -> KeepPath {
        let (path, source) = match kept {
            Kept::Active(p) => (p, Source::DeltaActive { version }),
            Kept::DeletionVector(p) => (p, Source::DeltaDeletionVector { version }),
        };
        KeepPath {
            blob: Rc::clone(blob),
            path,
            source,
        }
    }
}

/// `files` of `version` as read from `blob`, to keep.
fn keep_files(blob: &str, files: Vec<Kept>, version: u64, out: &mut Vec<KeepPath>) {
    let blob: Rc<str> = blob.into();
    out.extend(
        files
            .into_iter()
            .map(|k| KeepPath::of_version(&blob, k, version)),
    );
}

/// What the session needs of the run's settings to start a Delta sweep.
pub(super) struct Start<'a> {
    /// URI of `_delta_log/` (with the trailing slash).
    pub(super) log_prefix: String,
    /// The operator's kept versions.
    pub(super) keep_versions: &'a [i64],
    /// Leases, holds and DR checkpoints (they name versions).
    pub(super) context: &'a crate::Context,
    /// Evaluation time, ms (a lease ending by then keeps nothing).
    pub(super) now_ms: i64,
}

/// The log listing is complete: the newest commit, and what to read.
pub(super) struct Listed {
    /// URI of the newest commit (or checkpoint-only version's first file).
    pub(super) latest_uri: String,
    /// Log files to read now, with their replay order: the commits, and
    /// the checkpoint's files only when no commit follows the checkpoint
    /// (otherwise [`DeltaSweep::release_checkpoint`] gives them once the
    /// commits are read).
    pub(super) reads: Vec<(String, Purpose)>,
}

/// What a log file read gives the session to do.
#[derive(Default)]
pub(super) struct Read {
    /// Further files to read (a checkpoint's sidecars).
    pub(super) reads: Vec<(String, Purpose)>,
    /// Files to keep now: a checkpoint's adds no later commit touches.
    pub(super) keep: Vec<KeepPath>,
}

/// What the session needs of the run's settings to judge the replayed log.
pub(super) struct Rules {
    /// Evaluation time, ms.
    pub(super) now_ms: i64,
    /// The file-retention window, ms.
    pub(super) window_ms: i64,
    /// Accept a window shorter than the table's retention (and warn).
    pub(super) allow_short_retention: bool,
    /// Plan log cleanup.
    pub(super) log_cleanup: bool,
}

/// The replayed table: the state it says, and what the session records.
pub(super) struct Replayed {
    /// The newest version replayed.
    pub(super) latest: u64,
    /// Versions readable from the log: the checkpoint's to the newest.
    pub(super) readable: BTreeSet<i64>,
    /// The table id (`metaData.id`), when it has one.
    pub(super) table_id: Option<String>,
    /// Its partition columns.
    pub(super) partition_columns: Vec<String>,
    /// The table's metadata and protocol (retention, UniForm, cleanup).
    pub(super) metadata: spec::Metadata,
    pub(super) protocol: spec::Protocol,
}

/// What log cleanup decided.
pub(super) enum Cleanup {
    /// Nothing to plan (no log retention boundary yet).
    Nothing,
    /// These `_delta_log/` entries (name -> why) may go.
    Expired(BTreeMap<String, String>),
    /// Skipped or refused: the plan says why.
    Skipped(String),
    /// The boundary checkpoint must be read and validated first.
    Read(Vec<(String, Purpose)>),
}

impl DeltaSweep {
    /// A sweep of the log under `start.log_prefix`: the versions the
    /// operator, live leases, holds and DR checkpoints keep.
    pub(super) fn start(start: Start<'_>) -> Result<DeltaSweep> {
        let mut keep = BTreeSet::new();
        for v in start.keep_versions {
            keep.insert(u64::try_from(*v).map_err(|_| {
                Error::invalid("keep_versions", format!("{v} is not a table version"))
            })?);
        }
        let ctx = start.context;
        for l in ctx.leases.iter().filter(|l| l.expires_at_ms > start.now_ms) {
            keep.insert(version_of("a lease", l.snapshot_id)?);
        }
        for h in &ctx.holds {
            if let HoldScope::Snapshot(id) = h.scope {
                keep.insert(version_of("a legal hold", id)?);
            }
        }
        for d in &ctx.dr_checkpoints {
            match d {
                DrCheckpoint::SnapshotId(id) => {
                    keep.insert(version_of("a DR checkpoint", *id)?);
                }
                DrCheckpoint::MetadataFile(f) => {
                    return Err(Error::invalid(
                        "context.drCheckpoints",
                        format!(
                        "`{f}`: DR checkpoints of a Delta table name versions, not metadata files"
                    ),
                    ))
                }
            }
        }
        Ok(DeltaSweep {
            log_prefix: start.log_prefix,
            keep_versions: keep,
            ..DeltaSweep::default()
        })
    }

    /// The newest commit planned on (see
    /// [`crate::Session::delta_newest_commit`]).
    pub(super) fn newest(&self) -> Option<&CommitIdentity> {
        self.newest.as_ref()
    }

    /// One page of the `_delta_log/` listing of the table at `location`;
    /// after the last, what to read (`window_start`: the oldest time whose
    /// versions readers may still ask for).
    pub(super) fn log_page(
        &mut self,
        location: &TableLocation,
        objects: Vec<ListedObject>,
        is_last: bool,
        window_start: i64,
    ) -> Result<Option<Listed>> {
        for obj in objects {
            let uri = CanonicalUri::parse(&obj.key).map_err(|e| {
                Error::protocol(
                    ProtocolReason::BadKey,
                    format!("listed key `{}` is not a URI: {e}", obj.key),
                )
            })?;
            let name = location
                .relative(&uri)
                .and_then(|r| r.strip_prefix("_delta_log/"))
                .ok_or_else(|| {
                    Error::protocol(
                        ProtocolReason::BadKey,
                        format!(
                            "listed key `{}` is not under `{}`",
                            obj.key, self.log_prefix
                        ),
                    )
                })?
                .to_owned();
            let entry = LogEntry {
                size: obj.size,
                last_modified_ms: obj.last_modified_ms,
                etag: obj.etag.clone(),
            };
            if self.log.files.insert(name, entry).is_some() {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!("key `{}` listed twice", obj.key),
                ));
            }
        }
        if !is_last {
            return Ok(None);
        }
        let plan = self
            .log
            .read_plan(&self.log_prefix, &self.keep_versions, window_start)?;
        let prefix = &self.log_prefix;
        let read = |order: u8, version: u64, name: &str| {
            (
                format!("{prefix}{name}"),
                Purpose::DeltaLog {
                    order: (order, version),
                },
            )
        };
        let mut reads = Vec::new();
        if let Some(c) = &plan.checkpoint {
            let checkpoint = c.files.iter().map(|f| read(CHECKPOINT, c.version, f));
            if plan.commits.is_empty() {
                self.touched = Some(Set::default());
                reads.extend(checkpoint);
            } else {
                self.deferred = checkpoint.collect();
            }
        }
        for v in &plan.recent_before {
            reads.push(read(RECENT_BEFORE, *v, &spec::commit_name(*v)));
        }
        for v in &plan.commits {
            reads.push(read(COMMIT, *v, &spec::commit_name(*v)));
        }
        let latest_uri = format!("{prefix}{}", plan.latest_file);
        self.latest = plan.latest;
        self.newest = self
            .log
            .files
            .get(&plan.latest_file)
            .map(|e| CommitIdentity {
                version: plan.latest,
                uri: latest_uri.clone(),
                size: e.size,
                last_modified_ms: Some(e.last_modified_ms),
                etag: e.etag.clone(),
            });
        self.plan = Some(plan);
        Ok(Some(Listed { latest_uri, reads }))
    }

    /// A log file was read: parse it now (errors surface at once), replay
    /// later. Returns the sidecars of a checkpoint, to read with it, and
    /// the checkpoint's adds to keep now (see `touched`).
    pub(super) fn log_blob(&mut self, uri: &str, order: (u8, u64), bytes: &[u8]) -> Result<Read> {
        let parsed = self.parse(uri, bytes);
        self.log_actions(uri, order, parsed)
    }

    /// Whether a read of `uri` in replay `order` is of a checkpoint file
    /// (a part, a V2 checkpoint, a sidecar), which a digest may answer.
    pub(super) fn is_checkpoint_read(&self, uri: &str, order: (u8, u64)) -> bool {
        (order.0 == CHECKPOINT || order.0 == VALIDATE) && !self.is_commit(uri)
    }

    /// A checkpoint file's digest, in place of its bytes: its length is
    /// checked and its actions applied as [`DeltaSweep::log_blob`] checks
    /// and applies the bytes'.
    pub(super) fn log_digest(
        &mut self,
        uri: &str,
        order: (u8, u64),
        digest: CheckpointDigest,
    ) -> Result<Read> {
        let parsed = self
            .check_len(uri, digest.source_len)
            .map(|()| digest.actions);
        self.log_actions(uri, order, parsed)
    }

    /// Applies a log file's actions (or its parse error) read in `order`.
    fn log_actions(
        &mut self,
        uri: &str,
        order: (u8, u64),
        parsed: Result<Vec<Action>>,
    ) -> Result<Read> {
        let actions = match (parsed, order.0) {
            (Ok(a), _) => a,
            // A checkpoint read only for log cleanup: damage there skips
            // the cleanup, it does not stop the sweep.
            (Err(e), VALIDATE) => {
                self.validation_failed = Some(e.to_string());
                return Ok(Read::default());
            }
            (Err(e), _) => return Err(e),
        };
        let mut reads = Vec::new();
        if order.0 == CHECKPOINT || order.0 == VALIDATE {
            for a in &actions {
                if let Action::Sidecar { path } = a {
                    let full = match LogPath::parse(uri, path)? {
                        LogPath::Absolute(p) => p,
                        LogPath::Relative(p) => format!("{}_sidecars/{p}", self.log_prefix),
                    };
                    let canon = CanonicalUri::parse(&full)
                        .map_err(|e| {
                            Error::malformed(
                                MalformedReason::Path,
                                uri,
                                format!("sidecar `{full}`: {e}"),
                            )
                        })?
                        .to_uri_string();
                    reads.push((canon, Purpose::DeltaLog { order }));
                }
            }
        }
        let mut keep = Vec::new();
        let actions = if order.0 == CHECKPOINT {
            let (files, control): (Vec<Action>, Vec<Action>) = actions.into_iter().partition(|a| {
                matches!(
                    a,
                    Action::Add { .. } | Action::Remove { .. } | Action::Cdc { .. }
                )
            });
            let state = &mut self.checkpoint_state;
            let untouched = state.apply_checkpoint(uri, order.1, files, self.touched.as_ref())?;
            state.apply(uri, order.1, control.clone(), ReplaySource::Checkpoint)?;
            let blob: Rc<str> = uri.into();
            let version = self.untouched_version();
            keep.extend(
                untouched
                    .into_iter()
                    .map(|k| KeepPath::of_version(&blob, k, version)),
            );
            control
        } else {
            actions
        };
        self.blobs
            .insert((order.0, order.1, uri.to_owned()), actions);
        Ok(Read { reads, keep })
    }

    /// The version a checkpoint's add no later commit touches is kept as:
    /// the oldest kept version from the checkpoint on, else the newest
    /// (the smallest of the reasons the replay would give it).
    fn untouched_version(&self) -> u64 {
        let Some(plan) = &self.plan else {
            return self.latest;
        };
        let from = plan.checkpoint.as_ref().map_or(plan.latest, |c| c.version);
        self.keep_versions
            .range(from..plan.latest)
            .next()
            .copied()
            .unwrap_or(plan.latest)
    }

    /// Whether the checkpoint's reads wait for the commits after it.
    pub(super) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Once the commits after the checkpoint are read: records the paths
    /// they touch and gives the checkpoint's reads.
    pub(super) fn release_checkpoint(&mut self) -> Result<Vec<(String, Purpose)>> {
        let mut touched = Set::default();
        for ((order, _, uri), actions) in &self.blobs {
            if *order == COMMIT {
                crate::delta_log::touched_paths(uri, actions, &mut touched)?;
            }
        }
        self.touched = Some(touched);
        Ok(std::mem::take(&mut self.deferred))
    }

    /// Parses a log file, after checking it is the size the listing said
    /// (a file rewritten or cut since the listing is not the one planned on).
    fn parse(&self, uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
        self.check_len(uri, bytes.len() as u64)?;
        if self.is_commit(uri) {
            spec::parse_commit(uri, bytes)
        } else {
            spec::parse_checkpoint_file(uri, bytes)
        }
    }

    /// Fails (malformed: partial-write) when a file of the log listing was
    /// read at another length than the listing gave.
    fn check_len(&self, uri: &str, len: u64) -> Result<()> {
        let listed = uri
            .strip_prefix(&self.log_prefix)
            .and_then(|name| self.log.files.get(name));
        match listed {
            Some(e) if e.size != len => Err(Error::malformed(
                MalformedReason::PartialWrite,
                uri,
                format!(
                    "read {len} bytes, the listing said {}: truncated or rewritten",
                    e.size
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Whether `uri` names a commit (`_delta_log/N.json`).
    fn is_commit(&self, uri: &str) -> bool {
        uri.strip_prefix(&self.log_prefix)
            .is_some_and(|name| matches!(spec::log_file(name), LogFile::Commit(_)))
    }

    /// A validation read for log cleanup found nothing.
    pub(super) fn validation_missing(&mut self, uri: &str) {
        self.validation_failed = Some(format!("`{uri}` does not exist"));
    }

    /// Log cleanup after its boundary checkpoint was read: plan it, or say why not.
    pub(super) fn finish_validation(&mut self) -> Cleanup {
        let Some((cp, cutoff)) = self.validating.take() else {
            return Cleanup::Nothing;
        };
        let blobs = std::mem::take(&mut self.blobs);
        let check = match self.validation_failed.take() {
            Some(f) => Err(f),
            None => crate::delta_log::validate_checkpoint(
                &self.log_prefix,
                &cp,
                blobs
                    .iter()
                    .filter(|((o, _, _), _)| *o == VALIDATE)
                    .map(|((_, _, u), a)| (u.as_str(), a.as_slice())),
            )
            .map_err(|e| e.to_string()),
        };
        match check {
            Ok(()) => self.plan_cleanup(&cp, cutoff),
            Err(why) => Cleanup::Skipped(format!(
                "log cleanup skipped: checkpoint {} it would stop at is not readable ({why})",
                cp.version
            )),
        }
    }

    /// Plans log cleanup below checkpoint `boundary` (read and validated),
    /// then proves every version that must stay readable can still be
    /// rebuilt from what remains; if not, nothing of the log goes.
    fn plan_cleanup(&self, boundary: &Checkpoint, cutoff: i64) -> Cleanup {
        let Some(must) = &self.cleanup_must else {
            return Cleanup::Nothing;
        };
        let expired = self.log.expired_below(cutoff, boundary.version);
        let mut trusted = BTreeSet::from([boundary.version]);
        if let Some(c) = self.plan.as_ref().and_then(|p| p.checkpoint.as_ref()) {
            trusted.insert(c.version);
        }
        match self.log.prove_rebuildable(&expired, must, &trusted) {
            Ok(()) => Cleanup::Expired(expired),
            Err(why) => Cleanup::Skipped(format!(
                "log cleanup refused: {why}; nothing under _delta_log/ is deleted"
            )),
        }
    }

    /// Replays the checkpoint and the commits after it in version order;
    /// returns the table they make, the replay (whose live files are the
    /// newest version's) and the files of every other kept version on the
    /// way, to keep.
    pub(super) fn replay(&mut self) -> Result<(Replayed, Replay, Vec<KeepPath>)> {
        self.replayed = true;
        self.touched = None;
        let blobs = std::mem::take(&mut self.blobs);
        let Some(plan) = self.plan.clone() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "Delta replay before the log was listed",
            ));
        };
        let log_uri = &self.log_prefix;
        if let Some(c) = &plan.checkpoint {
            crate::delta_log::validate_checkpoint(
                log_uri,
                c,
                blobs
                    .iter()
                    .filter(|((o, _, _), _)| *o == CHECKPOINT)
                    .map(|((_, _, u), a)| (u.as_str(), a.as_slice())),
            )?;
        }
        let kept_version = |v: u64| self.keep_versions.contains(&v);
        let mut keep = Vec::new();
        // The checkpoint's files were applied as they were read.
        let mut replay = std::mem::take(&mut self.checkpoint_state);
        let mut done_checkpoint = false;
        for ((order, version, uri), actions) in blobs {
            if order != CHECKPOINT && !done_checkpoint {
                done_checkpoint = true;
                if let Some(c) = plan.checkpoint.as_ref().filter(|c| kept_version(c.version)) {
                    keep_files(&uri, replay.live_files(), c.version, &mut keep);
                }
            }
            let how = match order {
                CHECKPOINT => continue,
                RECENT_BEFORE => ReplaySource::Before,
                _ => ReplaySource::Commit,
            };
            replay.apply(&uri, version, actions, how)?;
            if order == COMMIT && kept_version(version) && version != plan.latest {
                keep_files(&uri, replay.live_files(), version, &mut keep);
            }
        }
        if let Some(c) = plan.checkpoint.as_ref().filter(|_| !done_checkpoint) {
            if kept_version(c.version) {
                keep_files(log_uri, replay.live_files(), c.version, &mut keep);
            }
        }
        let (Some(protocol), Some(metadata)) = (replay.protocol.clone(), replay.metadata.clone())
        else {
            return Err(Error::malformed(
                MalformedReason::Field,
                log_uri,
                "the replayed log has no protocol or no metaData action",
            ));
        };
        // The newest version's files are left in `replay` for the session
        // to take (`Replay::take_live`) rather than copied here.
        self.latest = plan.latest;
        let replayed = Replayed {
            latest: plan.latest,
            readable: (plan.checkpoint.as_ref().map(|c| c.version).unwrap_or(0)..=plan.latest)
                .map(|v| v as i64)
                .collect(),
            table_id: Some(metadata.id.clone()).filter(|s| !s.is_empty()),
            partition_columns: metadata.partition_columns.clone(),
            metadata,
            protocol,
        };
        Ok((replayed, replay, keep))
    }

    /// Tombstones and change data inside the window (`cutoff`) of the
    /// replayed log, to keep as named in `latest_uri`, and a warning for
    /// removals without a time.
    pub(super) fn recent_removals(
        &self,
        replay: Replay,
        cutoff: i64,
        latest_uri: &str,
    ) -> (Vec<KeepPath>, Option<String>) {
        let (kept, undated) = recent_tombstones(&replay, cutoff);
        let warning = (undated > 0).then(|| format!(
            "{undated} removed files have no deletionTimestamp: kept (a missing time is not time zero)"
        ));
        let change_data = recent_change_data(replay, &self.log, cutoff);
        let blob: Rc<str> = latest_uri.into();
        let keep = kept
            .into_iter()
            .chain(change_data)
            .map(|(path, source)| KeepPath {
                blob: Rc::clone(&blob),
                path,
                source,
            })
            .collect();
        (keep, warning)
    }

    /// Log cleanup: finds the checkpoint below which log retention allows
    /// removing entries, and plans them now (the checkpoint just replayed)
    /// or asks for that checkpoint to be read and validated first.
    pub(super) fn start_log_cleanup(
        &mut self,
        replayed: &Replayed,
        now_ms: i64,
        latest_uri: &str,
    ) -> Result<Cleanup> {
        if replayed.protocol.has_writer_feature("checkpointProtection") {
            return Ok(Cleanup::Skipped(
                "log cleanup skipped: the table has checkpointProtection, which restricts who may remove checkpoints".into(),
            ));
        }
        let log_retention = match replayed.metadata.property("delta.logRetentionDuration") {
            None => spec::DEFAULT_LOG_RETENTION_MS,
            Some(t) => spec::parse_interval(t).ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Field,
                    latest_uri,
                    format!("delta.logRetentionDuration `{t}` is not an interval"),
                )
            })?,
        };
        let log_cutoff = now_ms.saturating_sub(log_retention);
        // Ages are judged on commit times made monotonic by version;
        // every version from the one current at the cutoff to the
        // newest, and every kept version, must stay readable.
        let must = self
            .log
            .must_stay(log_cutoff, replayed.latest, &self.keep_versions);
        let boundary = must
            .as_ref()
            .and_then(|m| self.log.cleanup_boundary(log_cutoff, m));
        self.cleanup_must = must;
        let replayed_checkpoint = self.plan.as_ref().and_then(|p| p.checkpoint.as_ref());
        Ok(match boundary {
            None => Cleanup::Nothing,
            // The checkpoint just replayed was validated already.
            Some(b) if replayed_checkpoint == Some(&b) => self.plan_cleanup(&b, log_cutoff),
            // Any other is read and validated before anything below it goes.
            Some(b) => {
                let reads = b
                    .files
                    .iter()
                    .map(|f| {
                        (
                            format!("{}{f}", self.log_prefix),
                            Purpose::DeltaLog {
                                order: (VALIDATE, b.version),
                            },
                        )
                    })
                    .collect();
                self.validating = Some((b, log_cutoff));
                Cleanup::Read(reads)
            }
        })
    }

    /// The commit after the newest one replayed, to read (the re-check).
    pub(super) fn next_commit(&self) -> (String, Purpose) {
        let next = self.latest + 1;
        (
            format!("{}{}", self.log_prefix, spec::commit_name(next)),
            Purpose::DeltaNextCommit { version: next },
        )
    }

    /// A commit that landed during the sweep (`uri`, `version`, read as
    /// `bytes`): it becomes the newest, and every file it adds, removes or
    /// records as change data is kept.
    pub(super) fn landed_commit(
        &mut self,
        uri: &str,
        version: u64,
        bytes: &[u8],
    ) -> Result<Vec<KeepPath>> {
        let mut replay = Replay::default();
        replay.apply(
            uri,
            version,
            spec::parse_commit(uri, bytes)?,
            ReplaySource::Commit,
        )?;
        let mut keep = Vec::new();
        keep_files(uri, replay.live_files(), version, &mut keep);
        let blob: Rc<str> = uri.into();
        let keep_path = |path: LogPath, source: Source| KeepPath {
            blob: Rc::clone(&blob),
            path,
            source,
        };
        for (path, v) in std::mem::take(&mut replay.cdc) {
            keep.push(keep_path(path, Source::DeltaChangeData { version: v }));
        }
        for ((p, _), (_, dv)) in &replay.tombstones {
            keep.push(keep_path(p.clone(), Source::DeltaTombstone { dated: true }));
            if let Some(f) = dv {
                keep.push(keep_path(f.clone(), Source::DeltaTombstone { dated: true }));
            }
        }
        self.latest = version;
        self.newest = Some(CommitIdentity {
            version,
            uri: uri.to_owned(),
            size: bytes.len() as u64,
            last_modified_ms: None,
            etag: None,
        });
        Ok(keep)
    }
}

/// Delta's `retentionDurationCheck`: a window shorter than the table's
/// `delta.deletedFileRetentionDuration` is refused unless overridden (then
/// the plan warns, the returned warning).
pub(super) fn check_retention(
    metadata: &spec::Metadata,
    rules: &Rules,
    latest_uri: &str,
) -> Result<Option<String>> {
    let table_retention = match metadata.property("delta.deletedFileRetentionDuration") {
        None => spec::DEFAULT_DELETED_FILE_RETENTION_MS,
        Some(t) => spec::parse_interval(t).ok_or_else(|| {
            Error::malformed(
                MalformedReason::Field,
                latest_uri,
                format!("delta.deletedFileRetentionDuration `{t}` is not an interval"),
            )
        })?,
    };
    let window = rules.window_ms;
    if window >= table_retention {
        return Ok(None);
    }
    if !rules.allow_short_retention {
        return Err(Error::invalid(
            "file_retention_ms",
            format!(
                "{} is shorter than the table's delta.deletedFileRetentionDuration ({}): readers of recent versions would lose files; VACUUM refuses this too (override with allow_short_retention)",
                human_ms(window),
                human_ms(table_retention)
            ),
        ));
    }
    Ok(Some(format!(
        "retention check overridden: window {} is shorter than the table's delta.deletedFileRetentionDuration ({})",
        human_ms(window),
        human_ms(table_retention)
    )))
}

/// UniForm tables keep Iceberg metadata under `metadata/`: a reserved
/// prefix, with why.
pub(super) fn uniform_metadata(
    metadata: &spec::Metadata,
    protocol: &spec::Protocol,
) -> Option<(String, String)> {
    let uniform = metadata
        .property("delta.universalFormat.enabledFormats")
        .is_some_and(|f| f.split(',').any(|x| x.trim() == "iceberg"))
        || [
            "icebergCompatV1",
            "icebergCompatV2",
            "icebergCompatV3",
            "icebergWriterCompatV1",
            "icebergWriterCompatV3",
        ]
        .iter()
        .any(|f| protocol.has_writer_feature(f));
    uniform.then(|| {
        (
            "metadata/".into(),
            "Iceberg metadata of a UniForm table: sweep it as an Iceberg table".into(),
        )
    })
}

/// Refuses (`stale-pointer`) when the log, listed now, ends at an
/// older version (its newest file `latest_uri`) than an earlier read of
/// the run saw (its head named in `prior_pointers`, see
/// [`crate::SessionConfig::prior_pointers`]): a listing that lags.
pub(super) fn check_prior_heads(latest_uri: &str, prior_pointers: &[String]) -> Result<()> {
    let version = |uri: &str| match uri.rsplit_once("/_delta_log/") {
        Some((_, name)) => match spec::log_file(name) {
            spec::LogFile::Commit(v) | spec::LogFile::Checkpoint(v) => Some(v),
            spec::LogFile::CheckpointPart { version, .. }
            | spec::LogFile::CheckpointV2 { version, .. } => Some(version),
            _ => None,
        },
        None => None,
    };
    let Some(now) = version(latest_uri) else {
        return Ok(());
    };
    for prior in prior_pointers {
        let Some(then) = version(prior) else {
            return Err(Error::invalid(
                "prior_pointers",
                format!("`{prior}` names no Delta log version"),
            ));
        };
        if then > now {
            return Err(Error::unsafe_(
                UnsafeReason::StalePointer,
                format!(
                    "the log went backwards: it lists versions up to {now}, an earlier read of this run saw version {then} (`{prior}`); a listing that lags cannot be swept by, nothing is deleted"
                ),
            ));
        }
    }
    Ok(())
}

/// Tombstones removed after `cutoff`, or at an unknown time, keep their
/// files and deletion vectors (as VACUUM does). Returns them with why, and
/// how many had no time.
fn recent_tombstones(replay: &Replay, cutoff: i64) -> (Vec<(LogPath, Source)>, u64) {
    let mut undated = 0u64;
    let mut kept = Vec::new();
    for ((path, _), (ts, dv)) in &replay.tombstones {
        let source = match ts {
            None => {
                undated += 1;
                Source::DeltaTombstone { dated: false }
            }
            Some(t) if *t > cutoff => Source::DeltaTombstone { dated: true },
            Some(_) => continue,
        };
        kept.push((path.clone(), source.clone()));
        if let Some(f) = dv {
            kept.push((f.clone(), source));
        }
    }
    (kept, undated)
}

/// Change-data files of commits made after `cutoff` (or whose commit the
/// listing does not date) stay.
fn recent_change_data(mut replay: Replay, log: &LogListing, cutoff: i64) -> Vec<(LogPath, Source)> {
    let commit_times: BTreeMap<u64, i64> = log
        .files
        .iter()
        .filter_map(|(n, e)| match spec::log_file(n) {
            LogFile::Commit(v) => Some((v, e.last_modified_ms)),
            _ => None,
        })
        .collect();
    std::mem::take(&mut replay.cdc)
        .into_iter()
        .filter(|(_, v)| commit_times.get(v).is_none_or(|&t| t > cutoff))
        .map(|(path, v)| (path, Source::DeltaChangeData { version: v }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "s3://b/t/_delta_log/";

    fn listed(name: &str, size: usize, t: i64) -> ListedObject {
        ListedObject {
            key: format!("{LOG}{name}"),
            size: size as u64,
            last_modified_ms: t,
            etag: None,
            version_id: None,
        }
    }

    fn commit(lines: &[serde_json::Value]) -> Vec<u8> {
        let mut out = String::new();
        for l in lines {
            out.push_str(&l.to_string());
            out.push('\n');
        }
        out.into_bytes()
    }

    fn add(path: &str) -> serde_json::Value {
        serde_json::json!({"add": {"path": path, "partitionValues": {}, "size": 1,
            "modificationTime": 1, "dataChange": true}})
    }

    /// A checkpoint is asked for only once the commits after it are read,
    /// and the paths those commits add or remove are recorded first (so a
    /// checkpoint add they touch is replayed, not kept outright); a log
    /// whose newest version is the checkpoint asks for it at once.
    #[test]
    fn the_checkpoint_is_read_after_the_commits_that_follow_it() {
        let ctx = crate::Context::default();
        let start = || {
            DeltaSweep::start(Start {
                log_prefix: LOG.into(),
                keep_versions: &[],
                context: &ctx,
                now_ms: 10_000,
            })
            .unwrap()
        };
        let location = TableLocation::parse("s3://b/t").unwrap();
        let cp = "00000000000000000001.checkpoint.parquet";
        let c2 = commit(&[
            serde_json::json!({"remove": {"path": "day=1/a.parquet", "deletionTimestamp": 9_000}}),
            add("day=1/b%20c.parquet"),
        ]);
        let mut page = vec![
            listed(&spec::commit_name(0), 10, 1_000),
            listed(&spec::commit_name(1), 10, 2_000),
            listed(cp, 10, 2_000),
        ];
        // Newest at the checkpoint: read at once, no path touched after it.
        let mut d = start();
        let l = d
            .log_page(&location, page.clone(), true, 5_000)
            .unwrap()
            .unwrap();
        assert!(l.reads.iter().any(|(u, _)| u.ends_with(cp)));
        assert!(!d.has_deferred());
        assert_eq!(d.touched.as_ref().map(|t| t.len()), Some(0));
        // A commit after it: the commit first, then the checkpoint.
        page.push(listed(&spec::commit_name(2), c2.len(), 9_000));
        let mut d = start();
        let l = d.log_page(&location, page, true, 5_000).unwrap().unwrap();
        let first: Vec<&str> = l.reads.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(first, [format!("{LOG}{}", spec::commit_name(2))]);
        assert!(d.has_deferred() && d.touched.is_none());
        let Purpose::DeltaLog { order } = l.reads[0].1 else {
            panic!("a log read")
        };
        d.log_blob(&l.reads[0].0, order, &c2).unwrap();
        let then = d.release_checkpoint().unwrap();
        assert_eq!(then.len(), 1);
        assert_eq!(then[0].0, format!("{LOG}{cp}"));
        assert!(!d.has_deferred());
        let touched = d.touched.as_ref().unwrap();
        assert!(touched.contains(&LogPath::Relative("day=1/a.parquet".into())));
        assert!(touched.contains(&LogPath::Relative("day=1/b c.parquet".into())));
        assert_eq!(touched.len(), 2);
    }

    /// The Delta half runs without a session: it returns what to read and
    /// what to keep, and never touches the session's records.
    #[test]
    fn the_log_half_returns_reads_and_keeps_on_its_own() {
        let ctx = crate::Context::default();
        let mut d = DeltaSweep::start(Start {
            log_prefix: LOG.into(),
            keep_versions: &[0],
            context: &ctx,
            now_ms: 10_000,
        })
        .unwrap();
        let c0 = commit(&[
            serde_json::json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            serde_json::json!({"metaData": {"id": "t-1", "format": {"provider": "parquet", "options": {}},
                "schemaString": "{\"type\":\"struct\",\"fields\":[]}", "partitionColumns": ["day"],
                "configuration": {}, "createdTime": 1}}),
            add("day=1/a.parquet"),
        ]);
        let c1 = commit(&[
            serde_json::json!({"remove": {"path": "day=1/a.parquet", "deletionTimestamp": 9_000,
                "dataChange": true}}),
            add("day=1/b.parquet"),
        ]);
        let location = TableLocation::parse("s3://b/t").unwrap();
        let pages = [
            vec![listed(&spec::commit_name(0), c0.len(), 1_000)],
            vec![listed(&spec::commit_name(1), c1.len(), 9_000)],
        ];
        assert!(d
            .log_page(&location, pages[0].clone(), false, 0)
            .unwrap()
            .is_none());
        let l = d
            .log_page(&location, pages[1].clone(), true, 0)
            .unwrap()
            .unwrap();
        assert_eq!(l.latest_uri, format!("{LOG}{}", spec::commit_name(1)));
        let wanted: Vec<&str> = l.reads.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            wanted,
            [
                format!("{LOG}{}", spec::commit_name(0)),
                format!("{LOG}{}", spec::commit_name(1))
            ]
        );
        for ((uri, purpose), bytes) in l.reads.iter().zip([&c0, &c1]) {
            let Purpose::DeltaLog { order } = purpose else {
                panic!("a log read")
            };
            let read = d.log_blob(uri, *order, bytes).unwrap();
            assert!(read.reads.is_empty() && read.keep.is_empty());
        }
        let (replayed, mut replay, keep) = d.replay().unwrap();
        assert_eq!(replayed.latest, 1);
        assert_eq!(replayed.table_id.as_deref(), Some("t-1"));
        assert_eq!(replayed.partition_columns, ["day"]);
        // The newest version's files are left in the replay to take.
        let blob: Rc<str> = l.latest_uri.as_str().into();
        let newest: Vec<KeepPath> = replay
            .take_live()
            .map(|k| KeepPath::of_version(&blob, k, replayed.latest))
            .collect();
        let kept: Vec<(String, Source)> = keep
            .iter()
            .chain(&newest)
            .map(|k| (format!("{:?}", k.path), k.source.clone()))
            .collect();
        // Version 0 is kept whole; the latest keeps its live file.
        assert!(kept
            .iter()
            .any(|(p, s)| p.contains("a.parquet") && *s == Source::DeltaActive { version: 0 }));
        assert!(kept
            .iter()
            .any(|(p, s)| p.contains("b.parquet") && *s == Source::DeltaActive { version: 1 }));
        // The removal at 9 000 is inside a window starting at 5 000.
        let (recent, warning) = d.recent_removals(replay, 5_000, &l.latest_uri);
        assert!(warning.is_none());
        assert!(recent
            .iter()
            .any(|k| format!("{:?}", k.path).contains("a.parquet")
                && k.source == Source::DeltaTombstone { dated: true }));
        // The re-check asks for version 2, and a landed commit becomes the newest.
        let (next, _) = d.next_commit();
        assert_eq!(next, format!("{LOG}{}", spec::commit_name(2)));
        let c2 = commit(&[add("day=2/c.parquet")]);
        let landed = d.landed_commit(&next, 2, &c2).unwrap();
        assert_eq!(landed.len(), 1);
        assert_eq!(d.newest().map(|n| n.version), Some(2));
        assert_eq!(d.next_commit().0, format!("{LOG}{}", spec::commit_name(3)));
    }

    #[test]
    fn a_short_window_is_refused_or_warned() {
        let md: spec::Metadata = serde_json::from_value(serde_json::json!({
            "id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": "{}", "partitionColumns": [],
            "configuration": {"delta.deletedFileRetentionDuration": "interval 2 days"}
        }))
        .unwrap();
        let mut rules = Rules {
            now_ms: 0,
            window_ms: 86_400_000,
            allow_short_retention: false,
            log_cleanup: false,
        };
        assert!(check_retention(&md, &rules, "u").is_err());
        rules.allow_short_retention = true;
        assert!(check_retention(&md, &rules, "u").unwrap().is_some());
        rules.window_ms = 2 * 86_400_000;
        assert!(check_retention(&md, &rules, "u").unwrap().is_none());
    }

    /// The versions a sweep keeps: the operator's, live leases' (a lease
    /// ending exactly now keeps nothing, as for Iceberg), holds' and DR
    /// checkpoints'; a DR metadata file or a negative version is refused.
    #[test]
    fn the_kept_versions_come_from_the_operator_and_the_live_context() {
        let ctx = crate::Context::parse(
            r#"{"leases": [{"snapshotId": 3, "expiresAtMs": 1001},
                            {"snapshotId": 4, "expiresAtMs": 1000}],
                "holds": [{"scope": {"snapshot": 5}, "generation": 1},
                          {"scope": {"pathPrefix": "x/"}, "generation": 1}],
                "drCheckpoints": [{"snapshotId": 6}]}"#,
        )
        .unwrap();
        let start = |keep: &'static [i64], ctx: &crate::Context| {
            DeltaSweep::start(Start {
                log_prefix: LOG.into(),
                keep_versions: keep,
                context: ctx,
                now_ms: 1000,
            })
        };
        let d = start(&[1], &ctx).unwrap();
        assert_eq!(d.keep_versions, BTreeSet::from([1, 3, 5, 6]));
        assert!(start(&[-1], &ctx).is_err());
        let dr =
            crate::Context::parse(r#"{"drCheckpoints": [{"metadataFile": "s3://b/t/m.json"}]}"#)
                .unwrap();
        let e = start(&[], &dr)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("name versions"), "{e}");
        let negative =
            crate::Context::parse(r#"{"leases": [{"snapshotId": -2, "expiresAtMs": 5000}]}"#)
                .unwrap();
        assert!(start(&[], &negative).is_err());
    }
}
