//! The sealed Pinot plan (`lakesweep.pinot-plan.v1`) and its acceptance
//! against a fresh run just before deleting.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::documents::{ActiveSnapshot, Watermark};
use super::settings::RetentionSettings;
use crate::digest::hex;
use crate::error::{Error, ProtocolReason, Result};
use crate::version::ObjectVersion;

/// Schema name of a Pinot plan document.
pub const PINOT_PLAN_SCHEMA: &str = "lakesweep.pinot-plan.v1";

/// Whether a plan may delete anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanStatus {
    /// Judged on a complete, unchanged view: its deletions may be applied.
    Complete,
    /// Something needed could not be read (a retained snapshot's
    /// `final.parquet` missing or corrupt, ...): nothing is pruned; run
    /// again later.
    Retry,
    /// Retention is disabled for the table: nothing is planned.
    Disabled,
}

/// What the run decided for one snapshot (folder or active-list entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotRole {
    /// One of the newest `maxActiveVersions` active snapshots: its
    /// artifacts and segments are kept.
    Retained,
    /// The watermark's snapshot (being ingested, or completed and not yet
    /// in the active list): its artifacts and batches' segments are kept.
    InProgress,
    /// Active, but older than the newest `maxActiveVersions`.
    Evicted,
    /// A folder of no active and no in-progress snapshot.
    Orphan,
}

/// One snapshot's verdict, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotVerdict {
    /// Its id (canonical decimal).
    pub snapshot_id: String,
    /// What it is for this run.
    pub role: SnapshotRole,
    /// When it completed (active snapshots only), ms since the epoch.
    pub completed_at_ms: Option<i64>,
    /// Whether its folders are deleted by this plan.
    pub swept: bool,
    /// Objects in its folders, over every root.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Why, in words.
    pub detail: String,
}

/// A segment the plan deletes through the controller.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentDelete {
    /// The segment's name in the ideal state.
    pub segment: String,
    /// Why, in words.
    pub why: String,
}

/// An artifact object the plan deletes from a deep store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactDelete {
    /// Its whole URI.
    pub key: String,
    /// The snapshot folder it is in.
    pub snapshot_id: String,
    /// The exact version listed; apply deletes only this version.
    pub version: ObjectVersion,
}

/// An object under the artifact prefix that is not in a snapshot folder:
/// never deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrayObject {
    /// Its whole URI.
    pub key: String,
    /// Why it is kept.
    pub why: String,
}

/// The live state a plan was judged on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinotTokens {
    /// The run's clock, ms since the epoch (an input).
    pub now_ms: i64,
    /// Objects younger than this are never swept, ms.
    pub min_age_ms: i64,
    /// The watermark as read.
    pub watermark: Watermark,
    /// The active list as read, oldest first.
    pub active: Vec<ActiveSnapshot>,
    /// SHA-256 (hex) of the ideal state's sorted segment names, one per line.
    pub ideal_state_digest: String,
}

/// Counts of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinotSummary {
    /// Segments in the ideal state.
    pub ideal_state_segments: u64,
    /// Segments named by retained snapshots and in-progress batches.
    pub kept_segments: u64,
    /// Of those, segments the ideal state does not hold.
    pub kept_not_in_ideal_state: u64,
    /// Artifact objects listed, over every root.
    pub objects_listed: u64,
    /// Their bytes.
    pub bytes_listed: u64,
    /// Artifact objects deleted by the plan.
    pub objects_deleted: u64,
    /// Their bytes.
    pub bytes_deleted: u64,
    /// Times the run re-read a changed state before sealing.
    pub rechecks: u32,
}

/// A sealed Pinot plan. The digest covers every other field; an edited
/// plan is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinotPlan {
    /// Always [`PINOT_PLAN_SCHEMA`].
    pub schema: String,
    /// The table (`events_OFFLINE`).
    pub table_name_with_type: String,
    /// The deep-store roots planned, as given.
    pub roots: Vec<String>,
    /// The column segments are read from.
    pub segment_column: String,
    /// The table config's retention settings, after defaults.
    pub settings: RetentionSettings,
    /// Whether the plan may delete anything.
    pub status: PlanStatus,
    /// Why the status is what it is, in words.
    pub status_detail: String,
    /// The state judged on.
    pub tokens: PinotTokens,
    /// The host's record of how the plan was made; sealed, never read.
    pub origin: Option<String>,
    /// Segments to delete through the controller, with
    /// `settings.deletedSegmentRetention`; sorted.
    pub delete_segments: Vec<SegmentDelete>,
    /// Artifact objects to delete; sorted by key.
    pub delete_objects: Vec<ArtifactDelete>,
    /// Every snapshot seen, with its verdict; sorted by id.
    pub snapshots: Vec<SnapshotVerdict>,
    /// Objects kept because they are outside any snapshot folder.
    pub stray: Vec<StrayObject>,
    /// What the operator should know (a segment kept for its name, ...).
    pub warnings: Vec<String>,
    /// Counts.
    pub summary: PinotSummary,
    /// SHA-256 (hex) over the document with this field empty.
    pub digest: String,
}

impl PinotPlan {
    /// The digest the plan should carry, recomputed.
    pub fn compute_digest(&self) -> String {
        let mut copy = self.clone();
        copy.digest = String::new();
        hex(&Sha256::digest(
            serde_json::to_vec(&copy).unwrap_or_default(),
        ))
    }

    /// This plan with its digest set.
    pub fn sealed(mut self) -> PinotPlan {
        self.digest = self.compute_digest();
        self
    }

    /// The canonical document (compact JSON, fields in declaration order).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a plan and checks its schema and digest (protocol, bad input).
    pub fn from_json(text: &str) -> Result<PinotPlan> {
        let plan: PinotPlan = serde_json::from_str(text).map_err(|e| {
            Error::protocol(ProtocolReason::BadInput, format!("not a Pinot plan: {e}"))
        })?;
        if plan.schema != PINOT_PLAN_SCHEMA {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                format!("schema {}, not {PINOT_PLAN_SCHEMA}", plan.schema),
            ));
        }
        if plan.compute_digest() != plan.digest {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                "the plan's digest does not match its content: it was edited",
            ));
        }
        Ok(plan)
    }
}

/// What may be deleted now: the part of a sealed plan a fresh run, made
/// just before deleting, agrees with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinotApproval {
    /// True when the fresh run agrees with every deletion of the plan.
    pub granted: bool,
    /// The retention to pass with segment deletion (Pinot's spelling).
    pub segment_retention: String,
    /// Segments to delete now.
    pub segments: Vec<String>,
    /// Objects to delete now, each only while it is this version.
    pub objects: Vec<ArtifactDelete>,
    /// Every deletion withheld, and why; empty when granted.
    pub withheld: Vec<String>,
}

/// Accepts `plan` against `fresh`, a plan made just now from the live
/// documents and listings with the same table, roots and column. Only
/// deletions both plans make are approved (an object only when the fresh
/// listing shows the version the plan pinned). A fresh run that is not
/// complete, or whose retention settings differ, approves nothing. Fails
/// (protocol, bad input) on an edited plan or plans of different tables.
pub fn accept_pinot_plan(plan: &str, fresh: &str) -> Result<PinotApproval> {
    let plan = PinotPlan::from_json(plan)?;
    let fresh = PinotPlan::from_json(fresh)?;
    if (
        &plan.table_name_with_type,
        &plan.roots,
        &plan.segment_column,
    ) != (
        &fresh.table_name_with_type,
        &fresh.roots,
        &fresh.segment_column,
    ) {
        return Err(Error::protocol(
            ProtocolReason::BadInput,
            format!(
                "the fresh run is of {} over {:?} (column {}), the plan of {} over {:?} (column {})",
                fresh.table_name_with_type,
                fresh.roots,
                fresh.segment_column,
                plan.table_name_with_type,
                plan.roots,
                plan.segment_column
            ),
        ));
    }
    let mut out = PinotApproval {
        granted: false,
        segment_retention: plan.settings.deleted_segment_retention.clone(),
        segments: Vec::new(),
        objects: Vec::new(),
        withheld: Vec::new(),
    };
    let everything = |why: String, out: &mut PinotApproval| {
        out.withheld.push(format!(
            "all {} segment and {} object deletions: {why}",
            plan.delete_segments.len(),
            plan.delete_objects.len()
        ));
    };
    if plan.status != PlanStatus::Complete {
        everything(format!("the plan's status is {:?}", plan.status), &mut out);
        return Ok(out);
    }
    if fresh.status != PlanStatus::Complete {
        everything(
            format!(
                "the fresh run says {:?}: {}",
                fresh.status, fresh.status_detail
            ),
            &mut out,
        );
        return Ok(out);
    }
    if plan.settings != fresh.settings {
        everything(
            "the table config's retention settings changed".into(),
            &mut out,
        );
        return Ok(out);
    }
    let live: BTreeSet<&str> = fresh
        .delete_segments
        .iter()
        .map(|s| s.segment.as_str())
        .collect();
    for s in &plan.delete_segments {
        if live.contains(s.segment.as_str()) {
            out.segments.push(s.segment.clone());
        } else {
            out.withheld.push(format!(
                "segment {}: the live state no longer makes it garbage",
                s.segment
            ));
        }
    }
    let live: BTreeMap<&str, &ObjectVersion> = fresh
        .delete_objects
        .iter()
        .map(|o| (o.key.as_str(), &o.version))
        .collect();
    for o in &plan.delete_objects {
        match live.get(o.key.as_str()) {
            Some(v) if o.version.matches(v) => out.objects.push(o.clone()),
            Some(_) => out
                .withheld
                .push(format!("{}: changed since the plan was made", o.key)),
            None => out.withheld.push(format!(
                "{}: the live state no longer makes it garbage (or it is gone)",
                o.key
            )),
        }
    }
    out.granted = out.withheld.is_empty();
    Ok(out)
}
