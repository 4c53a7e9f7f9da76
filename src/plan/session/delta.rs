//! The session's side of a Delta sweep: it applies what the Delta half
//! (`plan::delta`) returns for each page of the log's listing and each log
//! file (paths to keep, files to read, log cleanup's decision, the
//! replayed table) to the keep set, the requests and the plan's records.
//! The half never calls back up here.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Machine, Session, MAX_RECHECKS};
use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::plan::checkpoint_digest::CheckpointDigest;
use crate::plan::delta::{
    check_prior_heads, check_retention, uniform_metadata, Cleanup, DeltaSweep, KeepPath, Rules,
    Start,
};
use crate::plan::refs::is_plain;
use crate::plan::requests::Purpose;
use crate::spec::delta::{CommitIdentity, LogPath};
use crate::verdict::ListedObject;

impl Session {
    /// Delta only: the identity (version, URI, size, last-modified time and
    /// entity tag as listed) of the newest commit the session planned on,
    /// after the re-check (a commit found then has no listed time or tag).
    /// For a log holding only a checkpoint, its first file. `None` before the
    /// log was listed, and for Iceberg sessions.
    pub fn delta_newest_commit(&self) -> Option<&CommitIdentity> {
        self.delta().and_then(DeltaSweep::newest)
    }

    /// Starts the Delta half: the versions kept, then the log's listing.
    pub(super) fn start_delta(&mut self, log_prefix: String) -> Result<()> {
        let sweep = DeltaSweep::start(Start {
            log_prefix: log_prefix.clone(),
            keep_versions: &self.config.keep_versions,
            context: &self.classifier.protections,
            now_ms: self.config.now_ms,
        })?;
        self.machine = Machine::Delta(Box::new(sweep));
        self.metadata_location = log_prefix.clone();
        self.requests.list(log_prefix);
        Ok(())
    }

    /// Delta's state; a protocol error in an Iceberg session.
    pub(super) fn sweep(&mut self) -> Result<&mut DeltaSweep> {
        self.delta_mut().ok_or_else(|| {
            Error::protocol(
                ProtocolReason::OutOfOrder,
                "Delta state used on a non-Delta session",
            )
        })
    }

    /// Asks for every read of `reads`.
    pub(super) fn request_reads(&mut self, reads: Vec<(String, Purpose)>) {
        for (uri, purpose) in reads {
            self.requests.read(uri, purpose);
        }
    }

    /// Keeps what the log names (relative to the table, or absolute).
    pub(super) fn keep_paths(&mut self, keep: impl IntoIterator<Item = KeepPath>) -> Result<()> {
        for k in keep {
            match &k.path {
                LogPath::Absolute(p) => self.reference(&k.blob, p, k.source)?,
                // Relative to the table: its key, when plainly spelled.
                LogPath::Relative(p)
                    if is_plain(&self.classifier, &self.config.location_map, p) =>
                {
                    self.references
                        .keep_plain(&mut self.classifier, &k.blob, p, p, k.source)?;
                }
                LogPath::Relative(p) => {
                    let full = format!("{}{p}", self.classifier.location.prefix());
                    self.reference_mapped(&k.blob, p, &full, k.source)?;
                }
            }
        }
        Ok(())
    }

    /// Applies what log cleanup decided: the expired log entries, a
    /// warning, or the reads of its boundary checkpoint.
    pub(super) fn apply_cleanup(&mut self, cleanup: Cleanup) {
        match cleanup {
            Cleanup::Nothing => {}
            Cleanup::Expired(expired) => self.classifier.expired_log = expired,
            Cleanup::Skipped(why) => {
                self.warnings.insert(why);
            }
            Cleanup::Read(reads) => self.request_reads(reads),
        }
    }

    /// One page of the `_delta_log/` listing.
    pub(super) fn delta_log_page(
        &mut self,
        objects: Vec<ListedObject>,
        is_last: bool,
    ) -> Result<()> {
        let location = self.classifier.location.clone();
        let window_start = self
            .config
            .now_ms
            .saturating_sub(self.classifier.file_retention_ms);
        let Some(listed) = self
            .sweep()?
            .log_page(&location, objects, is_last, window_start)?
        else {
            return Ok(());
        };
        check_prior_heads(&listed.latest_uri, &self.config.prior_pointers)?;
        self.metadata_location = listed.latest_uri;
        self.state.log_listed()?;
        self.request_reads(listed.reads);
        Ok(())
    }

    /// A log file was read.
    pub(super) fn delta_log_blob(
        &mut self,
        uri: &str,
        order: (u8, u64),
        bytes: &[u8],
    ) -> Result<()> {
        let read = self.sweep()?.log_blob(uri, order, bytes)?;
        self.keep_paths(read.keep)?;
        self.request_reads(read.reads);
        Ok(())
    }

    /// Whether the read of `uri` asked for in replay `order` is of a
    /// checkpoint file a digest may answer.
    pub(super) fn delta_is_checkpoint_read(&self, uri: &str, order: (u8, u64)) -> bool {
        self.delta()
            .is_some_and(|d| d.is_checkpoint_read(uri, order))
    }

    /// A checkpoint file's digest was handed in for its bytes.
    pub(super) fn delta_log_digest(
        &mut self,
        uri: &str,
        order: (u8, u64),
        digest: CheckpointDigest,
    ) -> Result<()> {
        let read = self.sweep()?.log_digest(uri, order, digest)?;
        self.keep_paths(read.keep)?;
        self.request_reads(read.reads);
        Ok(())
    }

    /// The commits after the checkpoint are read: asks for the
    /// checkpoint's files. Returns false when none were waiting.
    pub(super) fn delta_release_checkpoint(&mut self) -> Result<bool> {
        if !self.delta().is_some_and(DeltaSweep::has_deferred) {
            return Ok(false);
        }
        let reads = self.sweep()?.release_checkpoint()?;
        self.request_reads(reads);
        Ok(true)
    }

    /// A validation read for log cleanup found nothing.
    pub(super) fn delta_validation_missing(&mut self, uri: &str) -> Result<()> {
        self.sweep()?.validation_missing(uri);
        Ok(())
    }

    /// Log cleanup after its boundary checkpoint was read.
    pub(super) fn delta_finish_validation(&mut self) -> Result<()> {
        let cleanup = self.sweep()?.finish_validation();
        self.apply_cleanup(cleanup);
        Ok(())
    }

    /// Replays every file read, in version order, into the keep set; then
    /// the retention check, the tombstones and change data inside the
    /// window, a UniForm table's Iceberg metadata, and log cleanup.
    pub(super) fn delta_replay(&mut self) -> Result<()> {
        let latest_uri = self.metadata_location.clone();
        let (replayed, mut replay, keep) = self.sweep()?.replay()?;
        self.keep_paths(keep)?;
        let blob: Rc<str> = latest_uri.as_str().into();
        self.keep_paths(
            replay
                .take_live()
                .map(|k| KeepPath::of_version(&blob, k, replayed.latest)),
        )?;
        self.readable.clone_from(&replayed.readable);
        self.refs = BTreeMap::from([("version".to_owned(), replayed.latest as i64)]);
        self.classifier.table_uuid = replayed.table_id.clone();
        self.classifier
            .partition_names
            .extend(replayed.partition_columns.iter().cloned());
        let rules = Rules {
            now_ms: self.config.now_ms,
            window_ms: self.classifier.file_retention_ms,
            allow_short_retention: self.config.allow_short_retention,
            log_cleanup: self.config.log_cleanup,
        };
        if let Some(w) = check_retention(&replayed.metadata, &rules, &latest_uri)? {
            self.warnings.insert(w);
        }
        let cutoff = rules.now_ms.saturating_sub(rules.window_ms);
        let (keep, warning) = self.sweep()?.recent_removals(replay, cutoff, &latest_uri);
        self.warnings.extend(warning);
        self.keep_paths(keep)?;
        self.classifier
            .reserved
            .extend(uniform_metadata(&replayed.metadata, &replayed.protocol));
        if rules.log_cleanup {
            let cleanup = self
                .sweep()?
                .start_log_cleanup(&replayed, rules.now_ms, &latest_uri)?;
            self.apply_cleanup(cleanup);
        }
        Ok(())
    }

    /// Asks for the commit after the newest one replayed.
    pub(super) fn request_next_commit(&mut self) {
        if let Some((uri, purpose)) = self.delta().map(DeltaSweep::next_commit) {
            self.requests.read(uri, purpose);
        }
    }

    /// The re-check: a commit that landed during the sweep keeps its files.
    pub(super) fn delta_next_commit(
        &mut self,
        uri: &str,
        version: u64,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        let Some(bytes) = bytes else {
            return self.state.done();
        };
        self.rechecks += 1;
        if self.rechecks > MAX_RECHECKS {
            return Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                format!("{} commits landed during one sweep", self.rechecks),
            ));
        }
        let keep = self.sweep()?.landed_commit(uri, version, bytes)?;
        self.keep_paths(keep)?;
        self.demote();
        self.metadata_location = uri.to_owned();
        self.refs = BTreeMap::from([("version".to_owned(), version as i64)]);
        self.request_next_commit();
        Ok(())
    }
}
