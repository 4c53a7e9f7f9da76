//! Snapshot-artifact retention for Pinot/StarTree external tables: the
//! third table layout, beside Iceberg and Delta.
//!
//! A table synced from Iceberg with snapshot processing keeps, under each
//! deep-store root (controller, server, broker), per-snapshot artifact
//! folders `snapshots/<tableNameWithType>/<snapshotId>/` and the Pinot
//! segments built from them. A [`PinotSession`] decides which artifact
//! objects and which segments may go, with the same guarantees as the
//! table sessions: sans-IO, `now` an input, a reason for every verdict,
//! fail closed, a sealed plan.
//!
//! ## Calling contract
//!
//! ```text
//! PinotSession::start(config)          the table config is read here
//! loop {
//!     while let Some(r) = poll_request()
//!     answer each (any order):
//!         ReadState    -> handle_state(ideal state, watermark, active list)
//!         List(prefix) -> handle_page(prefix, objects, is_last), every page
//!         ReadBlob(u)  -> handle_blob(u, bytes) | handle_missing(u)
//! } until is_done()
//! finish()                             the sealed plan, or the error
//! ```
//!
//! One run, in this order: the state documents and the listing of every
//! root; the active list cut to the newest `maxActiveVersions` (the rest
//! evicted); every listed `final.parquet` of a retained snapshot and every
//! artifact of the in-progress one read for the segments they name; then
//! the state and the listings read again. If the watermark, the active
//! list, or any folder the plan keeps or deletes changed, the run is
//! judged again on the new view (at most [`MAX_RECHECKS`] times, then
//! `table-changing`); a segment that appeared in the ideal state during
//! the run is never deleted. A retained snapshot whose `final.parquet` is
//! missing or unreadable makes the plan `retry`: nothing is pruned.

pub mod artifact;
pub mod documents;
pub mod plan;
pub mod settings;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::duration::utc;
use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::verdict::ListedObject;
use crate::version::ObjectVersion;
use artifact::ArtifactKey;
use documents::{ActiveSnapshot, Watermark};
use plan::{
    ArtifactDelete, PinotPlan, PinotSummary, PinotTokens, PlanStatus, SegmentDelete, SnapshotRole,
    SnapshotVerdict, StrayObject, PINOT_PLAN_SCHEMA,
};
use settings::RetentionSettings;

pub use plan::{accept_pinot_plan, PinotApproval};

/// Times a run may find the state changed and judge again before it gives
/// up (`table-changing`).
pub const MAX_RECHECKS: u32 = 8;

/// How young (ms) an artifact object may be and still never be swept when
/// the host names no age: one hour, longer than a snapshot upload takes.
pub const DEFAULT_MIN_AGE_MS: i64 = 3_600_000;

/// What a Pinot session is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinotConfig {
    /// The deep-store roots to plan, as URIs (`s3://b/pinot/controller`,
    /// `file:///data/pinot/server`); none may lie inside another.
    pub roots: Vec<String>,
    /// The table config (Pinot's JSON).
    pub table_config: String,
    /// The run's clock, ms since the epoch.
    pub now_ms: i64,
    /// Artifact objects younger than this (ms) are never swept; `None` is
    /// [`DEFAULT_MIN_AGE_MS`].
    pub min_age_ms: Option<i64>,
    /// The column of `final.parquet` and batch files naming segments;
    /// `None` is [`artifact::DEFAULT_SEGMENT_COLUMN`].
    pub segment_column: Option<String>,
    /// The host's record of how the plan was made; sealed, never read.
    pub origin: Option<String>,
}

/// Something the host must do and answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinotRequest {
    /// Read the ideal state, the watermark and the active list (as close
    /// together as it can); answer with `handle_state`.
    ReadState,
    /// List every object under the prefix; answer with `handle_page`.
    List(String),
    /// Read the whole object; answer with `handle_blob` or `handle_missing`.
    ReadBlob(String),
}

/// The three state documents, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Docs {
    segments: BTreeSet<String>,
    watermark: Watermark,
    active: Vec<ActiveSnapshot>,
}

/// One reading of the state and the listings.
#[derive(Debug, Clone, Default)]
struct View {
    docs: Option<Docs>,
    /// Prefixes whose last page has not come.
    listing: BTreeSet<String>,
    /// Every listed object, by key.
    objects: BTreeMap<String, ObjectVersion>,
}

impl View {
    fn complete(&self) -> bool {
        self.docs.is_some() && self.listing.is_empty()
    }
}

/// A view judged: which folders are kept and swept, what must be read.
#[derive(Debug, Clone)]
struct Judgement {
    view: View,
    docs: Docs,
    /// By snapshot id: role, swept, detail.
    verdicts: BTreeMap<String, (SnapshotRole, bool, String)>,
    /// Objects by snapshot folder.
    folders: BTreeMap<String, BTreeMap<String, ObjectVersion>>,
    stray: Vec<StrayObject>,
    /// Reads not answered yet.
    reads: BTreeSet<String>,
    /// Segments named by what was read.
    keep: BTreeSet<String>,
    /// Why the plan cannot prune (missing or unreadable artifacts).
    problems: Vec<String>,
}

/// Where a session is.
#[derive(Debug, Clone)]
enum State {
    /// Reading the state and listings of a round.
    Observing(View),
    /// Reading the artifacts the judgement needs.
    Reading(Box<Judgement>),
    /// Reading the state and listings again before sealing.
    Rechecking(Box<Judgement>, View),
    /// Sealed.
    Done(Box<PinotPlan>),
    /// Failed: plans nothing.
    Failed(Error),
}

/// A planning session for one Pinot table's snapshot artifacts and
/// segments (see the module's calling contract).
#[derive(Debug, Clone)]
pub struct PinotSession {
    config: PinotConfig,
    /// The config's age, or the default (ms).
    min_age_ms: i64,
    /// The config's column, or the default.
    segment_column: String,
    settings: RetentionSettings,
    prefixes: Vec<String>,
    rechecks: u32,
    queue: VecDeque<PinotRequest>,
    state: State,
}

impl PinotSession {
    /// Starts a run. Fails on a table config it cannot read (malformed,
    /// invalid options), no roots, nested roots, a negative age or an empty
    /// column name (invalid options). A table whose retention is disabled
    /// is done at once, with a plan that deletes nothing and says why.
    pub fn start(config: PinotConfig) -> Result<PinotSession> {
        let settings = RetentionSettings::from_table_config(&config.table_config)?;
        if config.roots.is_empty() {
            return Err(Error::invalid("roots", "no deep-store root given"));
        }
        let mut prefixes = Vec::new();
        for r in &config.roots {
            crate::path::TableLocation::parse(r)
                .map_err(|e| Error::invalid("roots", format!("{r}: {e}")))?;
            prefixes.push(format!(
                "{}/snapshots/{}/",
                r.trim_end_matches('/'),
                settings.table_name_with_type
            ));
        }
        if let Some((a, b)) = crate::path::overlapping_locations(&config.roots).first() {
            return Err(Error::invalid(
                "roots",
                format!(
                    "{} and {} overlap: one listing would hold the other's objects",
                    config.roots[*a], config.roots[*b]
                ),
            ));
        }
        let min_age_ms = config.min_age_ms.unwrap_or(DEFAULT_MIN_AGE_MS);
        if min_age_ms < 0 {
            return Err(Error::invalid("minAge", "negative"));
        }
        let segment_column = config
            .segment_column
            .clone()
            .unwrap_or_else(|| artifact::DEFAULT_SEGMENT_COLUMN.to_owned());
        if segment_column.is_empty() {
            return Err(Error::invalid("segmentColumn", "empty"));
        }
        let mut s = PinotSession {
            config,
            min_age_ms,
            segment_column,
            settings,
            prefixes,
            rechecks: 0,
            queue: VecDeque::new(),
            state: State::Failed(Error::protocol(ProtocolReason::OutOfOrder, "not started")),
        };
        if s.settings.enabled {
            s.state = State::Observing(s.observe());
        } else {
            let detail = format!(
                "{}=false: snapshot retention is disabled for {}",
                settings::ENABLED,
                s.settings.table_name_with_type
            );
            s.state = State::Done(Box::new(s.empty_plan(PlanStatus::Disabled, detail)));
        }
        Ok(s)
    }

    /// Queues a reading of the state and every root; returns its view.
    fn observe(&mut self) -> View {
        self.queue.push_back(PinotRequest::ReadState);
        for p in &self.prefixes {
            self.queue.push_back(PinotRequest::List(p.clone()));
        }
        View {
            docs: None,
            listing: self.prefixes.iter().cloned().collect(),
            objects: BTreeMap::new(),
        }
    }

    /// The next request for the host, if any.
    pub fn poll_request(&mut self) -> Option<PinotRequest> {
        self.queue.pop_front()
    }

    /// True once `finish` can be called.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done(_) | State::Failed(_))
    }

    /// The sealed plan, or the error that ended the run. Fails (protocol,
    /// out of order) before the run is done.
    pub fn finish(&self) -> Result<PinotPlan> {
        match &self.state {
            State::Done(p) => Ok((**p).clone()),
            State::Failed(e) => Err(e.clone()),
            _ => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "finish before the run is done",
            )),
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        self.queue.clear();
        self.state = State::Failed(e.clone());
        e
    }

    fn guard(&mut self, r: Result<()>) -> Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn view_mut(&mut self) -> Result<&mut View> {
        match &mut self.state {
            State::Observing(v) | State::Rechecking(_, v) => Ok(v),
            State::Failed(e) => Err(e.clone()),
            _ => Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                "no state reading or listing was asked for now",
            )),
        }
    }

    /// Answers `ReadState` with the three documents as read: the ideal
    /// state (the controller's JSON), the watermark and the active list.
    /// Fails on a document that does not parse (malformed), one for another
    /// table (unsafe, foreign-table), or an answer not asked for.
    pub fn handle_state(
        &mut self,
        ideal_state: String,
        watermark: String,
        active_list: String,
    ) -> Result<()> {
        let r = self.state_inner(&ideal_state, &watermark, &active_list);
        self.guard(r)?;
        self.advance();
        Ok(())
    }

    fn state_inner(&mut self, ideal: &str, watermark: &str, active: &str) -> Result<()> {
        let s = &self.settings;
        let docs = Docs {
            segments: documents::ideal_state_segments(
                ideal,
                &s.table_name_with_type,
                &s.table_type,
            )?,
            watermark: Watermark::parse(watermark, &s.table_name_with_type)?,
            active: documents::active_snapshots(active, &s.table_name_with_type)?,
        };
        if let Some(s) = docs
            .active
            .iter()
            .find(|s| s.completed_at_ms > self.config.now_ms)
        {
            return Err(Error::malformed(
                crate::error::MalformedReason::Inconsistent,
                "active-list",
                format!(
                    "snapshot {} completed at {}, after the run's clock ({}): a time in the \
                     wrong unit, or a clock ahead",
                    s.snapshot_id,
                    utc(s.completed_at_ms),
                    utc(self.config.now_ms)
                ),
            ));
        }
        let v = self.view_mut()?;
        if v.docs.is_some() {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                "the state was answered twice",
            ));
        }
        v.docs = Some(docs);
        Ok(())
    }

    /// Answers one page of `List(prefix)`; `is_last` on its last page.
    /// Fails (protocol, bad key) for a key not strictly under the prefix or
    /// listed twice, and for a prefix not being listed.
    pub fn handle_page(
        &mut self,
        prefix: String,
        objects: Vec<ListedObject>,
        is_last: bool,
    ) -> Result<()> {
        let r = self.page_inner(&prefix, objects, is_last);
        self.guard(r)?;
        self.advance();
        Ok(())
    }

    fn page_inner(
        &mut self,
        prefix: &str,
        objects: Vec<ListedObject>,
        is_last: bool,
    ) -> Result<()> {
        let v = self.view_mut()?;
        if !v.listing.contains(prefix) {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("a page for {prefix}, which is not being listed"),
            ));
        }
        for o in objects {
            if o.key.len() <= prefix.len() || !o.key.starts_with(prefix) {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!("{} is not under {prefix}", o.key),
                ));
            }
            let version = ObjectVersion {
                size: o.size,
                last_modified_ms: o.last_modified_ms,
                etag: o.etag,
                version_id: o.version_id,
            };
            if v.objects.insert(o.key.clone(), version).is_some() {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!("{} listed twice", o.key),
                ));
            }
        }
        if is_last {
            v.listing.remove(prefix);
        }
        Ok(())
    }

    fn reading_mut(&mut self, uri: &str) -> Result<&mut Judgement> {
        match &mut self.state {
            State::Reading(j) if j.reads.contains(uri) => {
                j.reads.remove(uri);
                Ok(j)
            }
            State::Failed(e) => Err(e.clone()),
            _ => Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("{uri} was not asked for"),
            )),
        }
    }

    /// Answers `ReadBlob(uri)` with the object's bytes. An artifact that
    /// is not a readable Parquet file with the segment column is not an
    /// error: it makes the plan `retry`.
    pub fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<()> {
        let column = self.segment_column.clone();
        let j = match self.reading_mut(&uri) {
            Ok(j) => j,
            Err(e) => return Err(self.fail(e)),
        };
        match artifact::segments(&bytes, &column) {
            Ok(s) => j.keep.extend(s),
            Err(why) => j.problems.push(format!("{uri} {why}")),
        }
        self.advance();
        Ok(())
    }

    /// Answers `ReadBlob(uri)`: the object does not exist (it makes the
    /// plan `retry`).
    pub fn handle_missing(&mut self, uri: String) -> Result<()> {
        let j = match self.reading_mut(&uri) {
            Ok(j) => j,
            Err(e) => return Err(self.fail(e)),
        };
        j.problems
            .push(format!("{uri} was listed but is gone when read"));
        self.advance();
        Ok(())
    }

    /// Moves on while the current step has every answer.
    fn advance(&mut self) {
        loop {
            let state = std::mem::replace(
                &mut self.state,
                State::Failed(Error::protocol(ProtocolReason::OutOfOrder, "in transition")),
            );
            self.state = match state {
                State::Observing(v) if v.complete() => self.judge(v),
                State::Reading(j) if j.reads.is_empty() => {
                    if j.problems.is_empty() {
                        let v = self.observe();
                        State::Rechecking(j, v)
                    } else {
                        let detail =
                            format!("prune nothing, run again later: {}", j.problems.join("; "));
                        State::Done(Box::new(self.seal(&j, None, PlanStatus::Retry, detail)))
                    }
                }
                State::Rechecking(j, v) if v.complete() => {
                    if self.same_view(&j, &v) {
                        self.seal_checked(&j, &v)
                    } else if self.rechecks >= MAX_RECHECKS {
                        self.queue.clear();
                        State::Failed(Error::unsafe_(
                            UnsafeReason::TableChanging,
                            format!(
                                "the watermark, the active list or the snapshot folders changed \
                                 on each of {} re-reads",
                                self.rechecks + 1
                            ),
                        ))
                    } else {
                        self.rechecks += 1;
                        self.judge(v)
                    }
                }
                other => {
                    self.state = other;
                    return;
                }
            };
        }
    }

    /// The snapshot folder `key` is in, if any (under any root).
    fn folder(&self, key: &str) -> Option<(String, String)> {
        let p = self.prefixes.iter().find(|p| key.starts_with(p.as_str()))?;
        let rel = &key[p.len()..];
        if crate::path::unaddressable(key, rel).is_some() {
            return None;
        }
        match ArtifactKey::parse(rel) {
            ArtifactKey::InSnapshot { snapshot_id, rest } => Some((snapshot_id, rest)),
            ArtifactKey::Stray(_) => None,
        }
    }

    /// Whether a re-read shows what was judged: the same watermark and
    /// active list, and every object of every root at the same version
    /// (a batch, a folder, an odd key that landed: judged again).
    fn same_view(&self, j: &Judgement, v: &View) -> bool {
        let Some(d) = &v.docs else { return false };
        d.watermark == j.docs.watermark && d.active == j.docs.active && v.objects == j.view.objects
    }

    /// Judges a complete view: roles, swept folders, reads needed.
    fn judge(&mut self, view: View) -> State {
        let docs = view
            .docs
            .clone()
            .expect("a complete view has its documents");
        let keep_n = (self.settings.max_active_versions as usize).min(docs.active.len());
        let split = docs.active.len() - keep_n;
        let (evicted, retained) = docs.active.split_at(split);
        let oldest_retained = retained.first().map(|s| s.completed_at_ms);
        // The watermark's snapshot is protected unless it failed.
        let protected = match docs.watermark.state {
            Some(documents::CheckpointState::Failed) | None => None,
            _ => docs.watermark.snapshot_id.clone(),
        };
        let mut folders: BTreeMap<String, BTreeMap<String, ObjectVersion>> = BTreeMap::new();
        let mut rests: BTreeMap<String, String> = BTreeMap::new();
        let mut stray = Vec::new();
        let mut odd_newest: BTreeMap<String, i64> = BTreeMap::new();
        for (key, version) in &view.objects {
            match self.folder(key) {
                Some((id, rest)) => {
                    folders
                        .entry(id)
                        .or_default()
                        .insert(key.clone(), version.clone());
                    rests.insert(key.clone(), rest);
                }
                None => {
                    let p = self.prefixes.iter().find(|p| key.starts_with(p.as_str()));
                    let rel = &key[p.map_or(0, |p| p.len())..];
                    let why = match ArtifactKey::parse(rel) {
                        ArtifactKey::Stray(why) => why,
                        ArtifactKey::InSnapshot { .. } => {
                            crate::path::unaddressable(key, rel).unwrap_or_default()
                        }
                    };
                    // An odd key inside a snapshot folder still dates it.
                    if let Some(id) = rel
                        .split_once('/')
                        .and_then(|(id, _)| documents::canonical_snapshot_id(id))
                    {
                        let t = odd_newest.entry(id).or_insert(i64::MIN);
                        *t = (*t).max(version.last_modified_ms);
                    }
                    stray.push(StrayObject {
                        key: key.clone(),
                        why,
                    });
                }
            }
        }
        let mut reads = BTreeSet::new();
        let mut problems = Vec::new();
        let mut verdicts = BTreeMap::new();
        let rest_of = |key: &str| -> &str { rests.get(key).map_or("", String::as_str) };
        for s in retained {
            let finals: Vec<&String> = folders
                .get(&s.snapshot_id)
                .map(|f| f.keys().filter(|k| rest_of(k) == artifact::FINAL).collect())
                .unwrap_or_default();
            if finals.is_empty() {
                problems.push(format!(
                    "retained snapshot {} has no {} under any root",
                    s.snapshot_id,
                    artifact::FINAL
                ));
            }
            verdicts.insert(
                s.snapshot_id.clone(),
                (
                    SnapshotRole::Retained,
                    false,
                    format!(
                        "one of the newest {} active snapshots (maxActiveVersions {})",
                        retained.len(),
                        self.settings.max_active_versions
                    ),
                ),
            );
        }
        if let Some(p) = &protected {
            if !verdicts.contains_key(p) {
                let completed = docs.watermark.state == Some(documents::CheckpointState::Completed);
                let has_final = folders
                    .get(p)
                    .is_some_and(|f| f.keys().any(|k| rest_of(k) == artifact::FINAL));
                if completed && !has_final {
                    problems.push(format!(
                        "the watermark says snapshot {p} COMPLETED, the active list does not \
                         hold it yet, and it has no {} under any root",
                        artifact::FINAL
                    ));
                }
                // Its batches name the segments it is building: none under
                // the roots given may mean they live in a root not given
                // (the controller's), and its segments would look unnamed.
                let names_segments = folders
                    .get(p)
                    .is_some_and(|f| f.keys().any(|k| k.ends_with(".parquet")));
                if !completed && !names_segments {
                    problems.push(format!(
                        "the in-progress snapshot {p} has no batch or {} under any of the roots \
                         read ({}): its batches may live in a root not given, and the segments \
                         they name would look unnamed",
                        artifact::FINAL,
                        self.config.roots.join(", ")
                    ));
                }

                let state = docs.watermark.state.map_or("", |s| match s {
                    documents::CheckpointState::InProgress => "IN_PROGRESS",
                    documents::CheckpointState::Completed => "COMPLETED, not yet active",
                    documents::CheckpointState::Failed => "FAILED",
                });
                verdicts.insert(
                    p.clone(),
                    (
                        SnapshotRole::InProgress,
                        false,
                        format!("the watermark's snapshot ({state}): its folder and the segments its artifacts name are kept"),
                    ),
                );
            }
        }
        let now_limit = self.config.now_ms.saturating_sub(self.min_age_ms);
        let evicted_ids: BTreeSet<&str> = evicted.iter().map(|s| s.snapshot_id.as_str()).collect();
        for (id, objects) in &folders {
            if verdicts.contains_key(id) {
                continue;
            }
            let role = if evicted_ids.contains(id.as_str()) {
                SnapshotRole::Evicted
            } else {
                SnapshotRole::Orphan
            };
            let newest = objects
                .values()
                .map(|v| v.last_modified_ms)
                .chain(odd_newest.get(id).copied())
                .max()
                .unwrap_or(i64::MIN);
            let (swept, why) = match oldest_retained {
                None => (
                    false,
                    "no snapshot is retained, so no folder is known to be older than the \
                     oldest retained one"
                        .to_owned(),
                ),
                // Stores may list times to the second: a margin of one.
                Some(t) if newest.saturating_add(1000) > t => (
                    false,
                    format!(
                        "an object was written at {}, not before the oldest retained \
                         snapshot completed ({})",
                        utc(newest),
                        utc(t)
                    ),
                ),
                Some(_) if newest >= now_limit => (
                    false,
                    format!(
                        "an object was written at {}, within the minimum age",
                        utc(newest)
                    ),
                ),
                Some(t) => (
                    true,
                    format!(
                        "{}; every object is older than the oldest retained snapshot ({}) \
                         and the minimum age",
                        match role {
                            SnapshotRole::Evicted =>
                                "evicted: active but not among the newest maxActiveVersions",
                            _ => "not active and not in progress",
                        },
                        utc(t)
                    ),
                ),
            };
            verdicts.insert(id.clone(), (role, swept, why));
        }
        for s in evicted {
            verdicts.entry(s.snapshot_id.clone()).or_insert((
                SnapshotRole::Evicted,
                false,
                "evicted: active but not among the newest maxActiveVersions; no folder listed"
                    .into(),
            ));
        }
        // The keep set is every segment any artifact that stays names:
        // retained and in-progress ones, and whatever else is not swept (a
        // folder the active list does not hold yet, a kept orphan, a folder
        // named otherwise). Only segments nothing that stays names go.
        // A retained snapshot is what its final.parquet says (its batches
        // were work in progress), unless the watermark says it is still in
        // progress.
        let in_progress = docs.watermark.in_progress();
        for key in view.objects.keys() {
            if !key.ends_with(".parquet") {
                continue;
            }
            let (swept, retained_batch) = match self.folder(key) {
                Some((id, rest)) => match verdicts.get(&id) {
                    Some((SnapshotRole::Retained, _, _)) => (
                        false,
                        rest != artifact::FINAL && in_progress != Some(id.as_str()),
                    ),
                    Some((_, swept, _)) => (*swept, false),
                    None => (false, false),
                },
                None => (false, false),
            };
            if !swept && !retained_batch {
                reads.insert(key.clone());
            }
        }
        for r in &reads {
            self.queue.push_back(PinotRequest::ReadBlob(r.clone()));
        }
        let j = Judgement {
            view,
            docs,
            verdicts,
            folders,
            stray,
            reads,
            keep: BTreeSet::new(),
            problems,
        };
        State::Reading(Box::new(j))
    }

    /// Seals after a recheck that found the view unchanged.
    fn seal_checked(&mut self, j: &Judgement, recheck: &View) -> State {
        let live = &recheck.docs.as_ref().expect("complete").segments;
        let retained = j
            .verdicts
            .values()
            .filter(|(r, _, _)| *r == SnapshotRole::Retained)
            .count();
        if retained == 0 {
            let detail =
                "no active snapshot is retained: no segment is judged, no folder swept".to_owned();
            return State::Done(Box::new(self.seal(
                j,
                Some(live),
                PlanStatus::Complete,
                detail,
            )));
        }
        if !j.docs.segments.is_empty() && j.keep.is_disjoint(&j.docs.segments) {
            let detail = format!(
                "prune nothing, run again later: none of the {} segments the retained snapshots \
                 name is in the ideal state (a wrong segment column `{}`, or another table's \
                 artifacts)",
                j.keep.len(),
                self.segment_column
            );
            return State::Done(Box::new(self.seal(j, None, PlanStatus::Retry, detail)));
        }
        State::Done(Box::new(self.seal(
            j,
            Some(live),
            PlanStatus::Complete,
            "judged on a state that did not change while the run read it".to_owned(),
        )))
    }

    /// The plan of a judgement. `live` (the re-read ideal state) is given
    /// only when deletions are allowed.
    fn seal(
        &self,
        j: &Judgement,
        live: Option<&BTreeSet<String>>,
        status: PlanStatus,
        status_detail: String,
    ) -> PinotPlan {
        let mut plan = self.empty_plan(status, status_detail);
        plan.tokens.watermark = j.docs.watermark.clone();
        plan.tokens.active = j.docs.active.clone();
        plan.tokens.ideal_state_digest = segments_digest(&j.docs.segments);
        let retained = j
            .verdicts
            .values()
            .any(|(r, _, _)| *r == SnapshotRole::Retained);
        if let Some(live) = live.filter(|_| retained) {
            // Names are compared exactly; one that equals a kept segment's
            // up to case, percent-encoding, spaces or slashes is a near-miss
            // (a writer's spelling, not another segment): kept, and said.
            let loose = |n: &str| crate::path::loose(n.trim());
            let near: BTreeMap<String, &String> = j.keep.iter().map(|k| (loose(k), k)).collect();
            for s in j.docs.segments.difference(&j.keep) {
                if s == "." || s == ".." || s.chars().any(char::is_control) {
                    plan.warnings.push(format!(
                        "segment {s:?} is kept: a name a URL path or a client may resolve \
                         to another resource"
                    ));
                    continue;
                }
                if let Some(k) = near.get(&loose(s)) {
                    plan.warnings.push(format!(
                        "segment {s:?} is kept: a kept artifact names {k:?}, the same name \
                         up to case, encoding or spaces (a near-miss is never deleted)"
                    ));
                    continue;
                }
                if live.contains(s) {
                    plan.delete_segments.push(SegmentDelete {
                        segment: s.clone(),
                        why: "in the ideal state, named by no retained snapshot's final.parquet \
                              and no in-progress artifact"
                            .to_owned(),
                    });
                }
            }
        }
        let completed: BTreeMap<&str, i64> = j
            .docs
            .active
            .iter()
            .map(|s| (s.snapshot_id.as_str(), s.completed_at_ms))
            .collect();
        for (id, (role, swept, detail)) in &j.verdicts {
            let objects = j.folders.get(id);
            let swept = *swept && live.is_some();
            if swept {
                for (key, version) in objects.into_iter().flatten() {
                    plan.delete_objects.push(ArtifactDelete {
                        key: key.clone(),
                        snapshot_id: id.clone(),
                        version: version.clone(),
                    });
                    plan.summary.objects_deleted += 1;
                    plan.summary.bytes_deleted =
                        plan.summary.bytes_deleted.saturating_add(version.size);
                }
            }
            plan.snapshots.push(SnapshotVerdict {
                snapshot_id: id.clone(),
                role: *role,
                completed_at_ms: completed.get(id.as_str()).copied(),
                swept,
                objects: objects.map_or(0, |o| o.len() as u64),
                bytes: objects.map_or(0, |o| {
                    o.values().fold(0u64, |a, v| a.saturating_add(v.size))
                }),
                detail: detail.clone(),
            });
        }
        plan.delete_objects.sort_by(|a, b| a.key.cmp(&b.key));
        plan.stray = j.stray.clone();
        plan.summary.ideal_state_segments = j.docs.segments.len() as u64;
        plan.summary.kept_segments = j.keep.len() as u64;
        plan.summary.kept_not_in_ideal_state = j.keep.difference(&j.docs.segments).count() as u64;
        plan.summary.objects_listed = j.view.objects.len() as u64;
        plan.summary.bytes_listed = j
            .view
            .objects
            .values()
            .fold(0u64, |a, v| a.saturating_add(v.size));
        plan.sealed()
    }

    fn empty_plan(&self, status: PlanStatus, status_detail: String) -> PinotPlan {
        PinotPlan {
            schema: PINOT_PLAN_SCHEMA.to_owned(),
            table_name_with_type: self.settings.table_name_with_type.clone(),
            roots: self.config.roots.clone(),
            segment_column: self.segment_column.clone(),
            settings: self.settings.clone(),
            status,
            status_detail,
            tokens: PinotTokens {
                now_ms: self.config.now_ms,
                min_age_ms: self.min_age_ms,
                watermark: Watermark {
                    snapshot_id: None,
                    state: None,
                },
                active: Vec::new(),
                ideal_state_digest: String::new(),
            },
            origin: self.config.origin.clone(),
            delete_segments: Vec::new(),
            delete_objects: Vec::new(),
            snapshots: Vec::new(),
            stray: Vec::new(),
            warnings: Vec::new(),
            summary: PinotSummary {
                rechecks: self.rechecks,
                ..PinotSummary::default()
            },
            digest: String::new(),
        }
        .sealed()
    }
}

fn segments_digest(s: &BTreeSet<String>) -> String {
    let mut h = Sha256::new();
    for seg in s {
        h.update(seg.as_bytes());
        h.update(b"\n");
    }
    hex(&h.finalize())
}
