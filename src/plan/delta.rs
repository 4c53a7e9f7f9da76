//! Delta Lake sessions: list `_delta_log/`, read the newest usable
//! checkpoint and every commit after it, replay them into the keep set,
//! check the retention, plan log cleanup, then the common listing; after
//! the listing, commits that landed meanwhile are replayed and demote
//! candidates.
//!
//! ```text
//! start ──► list _delta_log/ ──► read checkpoint (+ sidecars) and commits
//!   ──► replay (keep set frozen) ──► list location/ ──► pages
//!   ──► read the next commit: present → replay its adds, demote, next;
//!       missing → done
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::{Phase, Purpose, Request, Session};
use crate::context::{DrCheckpoint, HoldScope};
use crate::delta_log::{
    Checkpoint, Kept, LogEntry, LogListing, MustStay, ReadPlan, Replay, Source as ReplaySource,
};
use crate::duration::human_ms;
use crate::error::{Error, Result};
use crate::error::{MalformedReason, ProtocolReason};
use crate::path::CanonicalUri;
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
    /// Parsed files by (order, version, name).
    blobs: BTreeMap<(u8, u64, String), Vec<Action>>,
    /// Versions whose files are all kept, besides the latest.
    keep_versions: BTreeSet<u64>,
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

impl Session {
    /// Delta only: the identity (version, URI, size, last-modified time and
    /// entity tag as listed) of the newest commit the session planned on,
    /// after the re-check (a commit found then has no listed time or tag).
    /// For a log holding only a checkpoint, its first file. `None` before the
    /// log was listed, and for Iceberg sessions.
    pub fn delta_newest_commit(&self) -> Option<&CommitIdentity> {
        self.delta().and_then(|d| d.newest.as_ref())
    }

    pub(super) fn start_delta(&mut self, log_prefix: String) -> Result<()> {
        let mut keep = BTreeSet::new();
        for v in &self.config.keep_versions {
            keep.insert(u64::try_from(*v).map_err(|_| {
                Error::invalid("keep_versions", format!("{v} is not a table version"))
            })?);
        }
        let ctx = &self.classifier.protections;
        for l in ctx
            .leases
            .iter()
            .filter(|l| l.expires_at_ms > self.config.now_ms)
        {
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
        self.machine = super::Machine::Delta(Box::new(DeltaSweep {
            log_prefix: log_prefix.clone(),
            keep_versions: keep,
            ..DeltaSweep::default()
        }));
        self.metadata_location = log_prefix.clone();
        self.phase = Phase::LogListing;
        self.outbox.push_back(Request::List { prefix: log_prefix });
        Ok(())
    }

    fn sweep(&mut self) -> Result<&mut DeltaSweep> {
        self.delta_mut().ok_or_else(|| {
            Error::protocol(
                ProtocolReason::OutOfOrder,
                "Delta state used on a non-Delta session",
            )
        })
    }

    /// One page of the `_delta_log/` listing.
    pub(super) fn delta_log_page(
        &mut self,
        objects: Vec<ListedObject>,
        is_last: bool,
    ) -> Result<()> {
        let location = self.classifier.location.clone();
        let d = self.sweep()?;
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
                        format!("listed key `{}` is not under `{}`", obj.key, d.log_prefix),
                    )
                })?
                .to_owned();
            let entry = LogEntry {
                size: obj.size,
                last_modified_ms: obj.last_modified_ms,
                etag: obj.etag.clone(),
            };
            if d.log.files.insert(name, entry).is_some() {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!("key `{}` listed twice", obj.key),
                ));
            }
        }
        if !is_last {
            return Ok(());
        }
        let window_start = self
            .config
            .now_ms
            .saturating_sub(self.classifier.file_retention_ms);
        let d = self.sweep()?;
        let plan = d
            .log
            .read_plan(&d.log_prefix, &d.keep_versions, window_start)?;
        let prefix = d.log_prefix.clone();
        let mut reads: Vec<(String, (u8, u64))> = Vec::new();
        if let Some(c) = &plan.checkpoint {
            for f in &c.files {
                reads.push((format!("{prefix}{f}"), (CHECKPOINT, c.version)));
            }
        }
        for v in &plan.recent_before {
            reads.push((
                format!("{prefix}{}", spec::commit_name(*v)),
                (RECENT_BEFORE, *v),
            ));
        }
        for v in &plan.commits {
            reads.push((format!("{prefix}{}", spec::commit_name(*v)), (COMMIT, *v)));
        }
        d.latest = plan.latest;
        let latest_uri = format!("{prefix}{}", plan.latest_file);
        d.newest = d.log.files.get(&plan.latest_file).map(|e| CommitIdentity {
            version: plan.latest,
            uri: latest_uri.clone(),
            size: e.size,
            last_modified_ms: Some(e.last_modified_ms),
            etag: e.etag.clone(),
        });
        d.plan = Some(plan);
        self.metadata_location = latest_uri;
        self.phase = Phase::Reading { recheck: false };
        for (uri, order) in reads {
            self.request_read(uri, Purpose::DeltaLog { order });
        }
        Ok(())
    }

    /// A log file was read: parse it now (errors surface at once), replay later.
    pub(super) fn delta_log_blob(
        &mut self,
        uri: &str,
        order: (u8, u64),
        bytes: &[u8],
    ) -> Result<()> {
        let parsed = self.delta_log_parse(uri, bytes);
        let actions = match (parsed, order.0) {
            (Ok(a), _) => a,
            // A checkpoint read only for log cleanup: damage there skips
            // the cleanup, it does not stop the sweep.
            (Err(e), VALIDATE) => {
                self.sweep()?.validation_failed = Some(e.to_string());
                return Ok(());
            }
            (Err(e), _) => return Err(e),
        };
        let mut sidecars = Vec::new();
        if order.0 == CHECKPOINT || order.0 == VALIDATE {
            for a in &actions {
                if let Action::Sidecar { path } = a {
                    sidecars.push(LogPath::parse(uri, path)?);
                }
            }
        }
        let d = self.sweep()?;
        let prefix = d.log_prefix.clone();
        d.blobs.insert((order.0, order.1, uri.to_owned()), actions);
        for p in sidecars {
            let full = match p {
                LogPath::Absolute(p) => p,
                LogPath::Relative(p) => format!("{prefix}_sidecars/{p}"),
            };
            let canon = CanonicalUri::parse(&full)
                .map_err(|e| {
                    Error::malformed(MalformedReason::Path, uri, format!("sidecar `{full}`: {e}"))
                })?
                .to_uri_string();
            self.request_read(canon, Purpose::DeltaLog { order });
        }
        Ok(())
    }

    /// Parses a log file, after checking it is the size the listing said
    /// (a file rewritten or cut since the listing is not the one planned on).
    fn delta_log_parse(&mut self, uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
        let d = self.sweep()?;
        if let Some(name) = uri.strip_prefix(&d.log_prefix) {
            if let Some(e) = d.log.files.get(name) {
                if e.size != bytes.len() as u64 {
                    return Err(Error::malformed(
                        MalformedReason::PartialWrite,
                        uri,
                        format!(
                            "read {} bytes, the listing said {}: truncated or rewritten",
                            bytes.len(),
                            e.size
                        ),
                    ));
                }
            }
        }
        let commit = uri
            .strip_prefix(&d.log_prefix)
            .is_some_and(|name| matches!(spec::log_file(name), LogFile::Commit(_)));
        if commit {
            spec::parse_commit(uri, bytes)
        } else if uri.ends_with(".parquet") {
            spec::parse_parquet_actions(uri, bytes)
        } else {
            spec::parse_json_actions(uri, bytes)
        }
    }

    /// A validation read for log cleanup found nothing.
    pub(super) fn delta_validation_missing(&mut self, uri: &str) -> Result<()> {
        self.sweep()?.validation_failed = Some(format!("`{uri}` does not exist"));
        Ok(())
    }

    /// Starts the table listing once the keep set is complete.
    pub(super) fn delta_start_listing(&mut self) -> Result<()> {
        self.check_protections()?;
        self.classifier.keep.freeze();
        self.phase = Phase::Listing {
            last_page_seen: false,
        };
        self.outbox.push_back(Request::List {
            prefix: self.classifier.location.prefix(),
        });
        Ok(())
    }

    /// Log cleanup after its boundary checkpoint was read: plan it, or say why not.
    pub(super) fn delta_finish_validation(&mut self) -> Result<()> {
        let d = self.sweep()?;
        let Some((cp, cutoff)) = d.validating.take() else {
            return Ok(());
        };
        let log_uri = d.log_prefix.clone();
        let failed = d.validation_failed.take();
        let blobs = std::mem::take(&mut d.blobs);
        let check = match failed {
            Some(f) => Err(f),
            None => crate::delta_log::validate_checkpoint(
                &log_uri,
                &cp,
                blobs
                    .iter()
                    .filter(|((o, _, _), _)| *o == VALIDATE)
                    .map(|((_, _, u), a)| (u.as_str(), a.as_slice())),
            )
            .map_err(|e| e.to_string()),
        };
        match check {
            Ok(()) => self.delta_plan_cleanup(&cp, cutoff)?,
            Err(why) => {
                self.warnings.insert(format!(
                    "log cleanup skipped: checkpoint {} it would stop at is not readable ({why})",
                    cp.version
                ));
            }
        }
        Ok(())
    }

    /// Plans log cleanup below checkpoint `boundary` (read and validated),
    /// then proves every version that must stay readable can still be
    /// rebuilt from what remains; if not, nothing of the log goes.
    fn delta_plan_cleanup(&mut self, boundary: &Checkpoint, cutoff: i64) -> Result<()> {
        let d = self.sweep()?;
        let Some(must) = d.cleanup_must.clone() else {
            return Ok(());
        };
        let expired = d.log.expired_below(cutoff, boundary.version);
        let mut trusted = BTreeSet::from([boundary.version]);
        if let Some(c) = d.plan.as_ref().and_then(|p| p.checkpoint.as_ref()) {
            trusted.insert(c.version);
        }
        match d.log.prove_rebuildable(&expired, &must, &trusted) {
            Ok(()) => self.classifier.expired_log = expired,
            Err(why) => {
                self.warnings.insert(format!(
                    "log cleanup refused: {why}; nothing under _delta_log/ is deleted"
                ));
            }
        }
        Ok(())
    }

    /// Keeps a decoded log path (relative to the table, or absolute).
    fn keep_log_path(&mut self, blob: &str, path: &LogPath, source: Source) -> Result<()> {
        match path {
            LogPath::Absolute(p) => {
                self.reference(blob, p, source)?;
            }
            LogPath::Relative(p) => {
                let full = format!("{}{p}", self.classifier.location.prefix());
                self.reference_mapped(blob, p, &full, source)?;
            }
        }
        Ok(())
    }

    fn keep_state(&mut self, blob: &str, files: Vec<Kept>, version: u64) -> Result<()> {
        for k in files {
            match k {
                Kept::Active(p) => self.keep_log_path(blob, &p, Source::DeltaActive { version })?,
                Kept::DeletionVector(p) => {
                    self.keep_log_path(blob, &p, Source::DeltaDeletionVector { version })?
                }
            }
        }
        Ok(())
    }

    /// Replays every file read, in version order, into the keep set; then
    /// the retention check, the tombstones and change data inside the
    /// window, a UniForm table's Iceberg metadata, and log cleanup.
    pub(super) fn delta_replay(&mut self) -> Result<()> {
        let (plan, replay) = self.replay_log()?;
        let log_uri = self.sweep()?.log_prefix.clone();
        let (Some(protocol), Some(metadata)) = (replay.protocol.clone(), replay.metadata.clone())
        else {
            return Err(Error::malformed(
                MalformedReason::Field,
                &log_uri,
                "the replayed log has no protocol or no metaData action",
            ));
        };
        let latest_uri = self.metadata_location.clone();
        self.keep_state(&latest_uri, replay.live_files(), plan.latest)?;
        self.readable = (plan.checkpoint.as_ref().map(|c| c.version).unwrap_or(0)..=plan.latest)
            .map(|v| v as i64)
            .collect();
        self.refs = BTreeMap::from([("version".to_owned(), plan.latest as i64)]);
        self.classifier.table_uuid = Some(metadata.id.clone()).filter(|s| !s.is_empty());
        self.classifier
            .partition_names
            .extend(metadata.partition_columns.iter().cloned());
        let window = self.check_retention(&metadata, &latest_uri)?;
        let cutoff = self.config.now_ms.saturating_sub(window);
        self.keep_recent_removals(replay, cutoff, &latest_uri)?;
        self.reserve_uniform_metadata(&metadata, &protocol);
        if self.config.log_cleanup {
            self.start_log_cleanup(&metadata, &protocol, &plan, &latest_uri)?;
        }
        self.sweep()?.latest = plan.latest;
        Ok(())
    }

    /// Replays the checkpoint and the commits after it in version order,
    /// keeping the files of every kept version on the way.
    fn replay_log(&mut self) -> Result<(ReadPlan, Replay)> {
        let d = self.sweep()?;
        d.replayed = true;
        let blobs = std::mem::take(&mut d.blobs);
        let keep_versions = d.keep_versions.clone();
        let Some(plan) = d.plan.clone() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "Delta replay before the log was listed",
            ));
        };
        let log_uri = d.log_prefix.clone();
        if let Some(c) = &plan.checkpoint {
            crate::delta_log::validate_checkpoint(
                &log_uri,
                c,
                blobs
                    .iter()
                    .filter(|((o, _, _), _)| *o == CHECKPOINT)
                    .map(|((_, _, u), a)| (u.as_str(), a.as_slice())),
            )?;
        }
        let mut replay = Replay::default();
        let mut done_checkpoint = false;
        for ((order, version, uri), actions) in blobs {
            if order != CHECKPOINT && !done_checkpoint {
                done_checkpoint = true;
                if let Some(c) = &plan.checkpoint {
                    if keep_versions.contains(&c.version) {
                        self.keep_state(&uri, replay.live_files(), c.version)?;
                    }
                }
            }
            let how = match order {
                CHECKPOINT => ReplaySource::Checkpoint,
                RECENT_BEFORE => ReplaySource::Before,
                _ => ReplaySource::Commit,
            };
            replay.apply(&uri, version, actions, how)?;
            if order == COMMIT && keep_versions.contains(&version) && version != plan.latest {
                self.keep_state(&uri, replay.live_files(), version)?;
            }
        }
        if let Some(c) = plan.checkpoint.as_ref().filter(|_| !done_checkpoint) {
            if keep_versions.contains(&c.version) {
                self.keep_state(&log_uri, replay.live_files(), c.version)?;
            }
        }
        Ok((plan, replay))
    }

    /// Delta's `retentionDurationCheck`: a window shorter than the table's
    /// `delta.deletedFileRetentionDuration` is refused unless overridden
    /// (then the plan warns). Returns the window, ms.
    fn check_retention(&mut self, metadata: &spec::Metadata, latest_uri: &str) -> Result<i64> {
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
        let window = self.classifier.file_retention_ms;
        if window < table_retention {
            if !self.config.allow_short_retention {
                return Err(Error::invalid(
                    "file_retention_ms",
                    format!(
                        "{} is shorter than the table's delta.deletedFileRetentionDuration ({}): readers of recent versions would lose files; VACUUM refuses this too (override with allow_short_retention)",
                        human_ms(window),
                        human_ms(table_retention)
                    ),
                ));
            }
            self.warnings.insert(format!(
                "retention check overridden: window {} is shorter than the table's delta.deletedFileRetentionDuration ({})",
                human_ms(window),
                human_ms(table_retention)
            ));
        }
        Ok(window)
    }

    /// Keeps what [`recent_tombstones`] and [`recent_change_data`] name.
    fn keep_recent_removals(
        &mut self,
        replay: Replay,
        cutoff: i64,
        latest_uri: &str,
    ) -> Result<()> {
        let (kept, undated) = recent_tombstones(&replay, cutoff);
        if undated > 0 {
            self.warnings.insert(format!(
                "{undated} removed files have no deletionTimestamp: kept (a missing time is not time zero)"
            ));
        }
        let change_data = recent_change_data(replay, &self.sweep()?.log, cutoff);
        for (path, source) in kept.into_iter().chain(change_data) {
            self.keep_log_path(latest_uri, &path, source)?;
        }
        Ok(())
    }

    /// UniForm tables keep Iceberg metadata under `metadata/`: reserved.
    fn reserve_uniform_metadata(&mut self, metadata: &spec::Metadata, protocol: &spec::Protocol) {
        let uniform = metadata
            .property("delta.universalFormat.enabledFormats")
            .is_some_and(|f| f.split(',').any(|x| x.trim() == "iceberg"))
            || protocol.has_writer_feature("icebergCompatV1")
            || protocol.has_writer_feature("icebergCompatV2");
        if uniform {
            self.classifier.reserved.push((
                "metadata/".into(),
                "Iceberg metadata of a UniForm table: sweep it as an Iceberg table".into(),
            ));
        }
    }

    /// Log cleanup: finds the checkpoint below which log retention allows
    /// removing entries, and plans them now (the checkpoint just replayed)
    /// or once that checkpoint was read and validated.
    fn start_log_cleanup(
        &mut self,
        metadata: &spec::Metadata,
        protocol: &spec::Protocol,
        plan: &ReadPlan,
        latest_uri: &str,
    ) -> Result<()> {
        if protocol.has_writer_feature("checkpointProtection") {
            self.warnings.insert(
                "log cleanup skipped: the table has checkpointProtection, which restricts who may remove checkpoints".into(),
            );
            return Ok(());
        }
        let log_retention = match metadata.property("delta.logRetentionDuration") {
            None => spec::DEFAULT_LOG_RETENTION_MS,
            Some(t) => spec::parse_interval(t).ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Field,
                    latest_uri,
                    format!("delta.logRetentionDuration `{t}` is not an interval"),
                )
            })?,
        };
        let log_cutoff = self.config.now_ms.saturating_sub(log_retention);
        // Ages are judged on commit times made monotonic by version;
        // every version from the one current at the cutoff to the
        // newest, and every kept version, must stay readable.
        let d = self.sweep()?;
        let must = d.log.must_stay(log_cutoff, plan.latest, &d.keep_versions);
        let boundary = must
            .as_ref()
            .and_then(|m| d.log.cleanup_boundary(log_cutoff, m));
        d.cleanup_must = must;
        match boundary {
            None => {}
            // The checkpoint just replayed was validated already.
            Some(b) if plan.checkpoint.as_ref() == Some(&b) => {
                self.delta_plan_cleanup(&b, log_cutoff)?;
            }
            // Any other is read and validated before anything below it goes.
            Some(b) => {
                let prefix = self.sweep()?.log_prefix.clone();
                for f in &b.files {
                    self.request_read(
                        format!("{prefix}{f}"),
                        Purpose::DeltaLog {
                            order: (VALIDATE, b.version),
                        },
                    );
                }
                self.sweep()?.validating = Some((b, log_cutoff));
            }
        }
        Ok(())
    }

    /// Asks for the commit after the newest one replayed.
    pub(super) fn request_next_commit(&mut self) {
        let Some(d) = self.delta() else {
            return;
        };
        let next = d.latest + 1;
        let uri = format!("{}{}", d.log_prefix, spec::commit_name(next));
        self.request_read(uri, Purpose::DeltaNextCommit { version: next });
    }

    /// The re-check: a commit that landed during the sweep keeps its files.
    pub(super) fn delta_next_commit(
        &mut self,
        uri: &str,
        version: u64,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        let Some(bytes) = bytes else {
            self.phase = Phase::Done;
            return Ok(());
        };
        self.rechecks += 1;
        if self.rechecks > super::MAX_RECHECKS {
            return Err(Error::unsafe_(
                crate::UnsafeReason::TableChanging,
                format!("{} commits landed during one sweep", self.rechecks),
            ));
        }
        let mut replay = Replay::default();
        replay.apply(
            uri,
            version,
            spec::parse_commit(uri, bytes)?,
            ReplaySource::Commit,
        )?;
        self.keep_state(uri, replay.live_files(), version)?;
        for (path, v) in std::mem::take(&mut replay.cdc) {
            self.keep_log_path(uri, &path, Source::DeltaChangeData { version: v })?;
        }
        let removed: Vec<(LogPath, Option<LogPath>)> = replay
            .tombstones
            .iter()
            .map(|((p, _), (_, dv))| (p.clone(), dv.clone()))
            .collect();
        for (p, dv) in removed {
            self.keep_log_path(uri, &p, Source::DeltaTombstone { dated: true })?;
            if let Some(f) = dv {
                self.keep_log_path(uri, &f, Source::DeltaTombstone { dated: true })?;
            }
        }
        self.demote();
        self.metadata_location = uri.to_owned();
        self.refs = BTreeMap::from([("version".to_owned(), version as i64)]);
        if let Some(d) = self.delta_mut() {
            d.latest = version;
            d.newest = Some(CommitIdentity {
                version,
                uri: uri.to_owned(),
                size: bytes.len() as u64,
                last_modified_ms: None,
                etag: None,
            });
        }
        self.request_next_commit();
        Ok(())
    }
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
