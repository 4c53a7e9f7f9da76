//! What crosses between the ledger and the host: moves, probes and their
//! observations, the live state, receipts, approvals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ObjectState, ObjectVersion};

/// One state change, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Move {
    /// Key relative to the table location.
    pub key: String,
    /// State before (`None`: new to the ledger).
    pub from: Option<ObjectState>,
    /// State after.
    pub to: ObjectState,
    /// When, milliseconds since the epoch.
    #[serde(alias = "at_ms")]
    pub at_ms: i64,
    /// Why, in words.
    pub why: String,
}

/// Moves a step's answer shows at most per state it moved objects to: the
/// rest are counted (a step may move a million).
pub const MOVES_PER_STATE: usize = 100;

/// The moves of one call: up to [`MOVES_PER_STATE`] of them per state
/// reached, in the order made, and how many reached each state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moves {
    /// Some of the moves, in order.
    pub sample: Vec<Move>,
    /// How many moves reached each state.
    pub to_state: BTreeMap<ObjectState, u64>,
}

impl Moves {
    /// How many moves in all.
    pub fn total(&self) -> u64 {
        self.to_state.values().sum()
    }

    /// True when nothing moved.
    pub fn is_empty(&self) -> bool {
        self.to_state.is_empty()
    }

    /// Counts a move to `to`; `make` builds it when the sample has room.
    pub(super) fn note(&mut self, to: ObjectState, make: impl FnOnce() -> Move) {
        let n = self.to_state.entry(to).or_default();
        *n += 1;
        if *n as usize <= MOVES_PER_STATE {
            self.sample.push(make());
        }
    }

    /// Adds `other`'s moves after these.
    pub fn extend(&mut self, other: Moves) {
        for m in other.sample {
            let shown = self.sample.iter().filter(|s| s.to == m.to).count();
            if shown < MOVES_PER_STATE {
                self.sample.push(m);
            }
        }
        for (s, n) in other.to_state {
            *self.to_state.entry(s).or_default() += n;
        }
    }
}

/// One object of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerObject {
    /// Current state.
    pub state: ObjectState,
    /// The version pinned (from the newest plan that listed it as a candidate).
    pub version: ObjectVersion,
    /// When it entered its current state.
    #[serde(alias = "since_ms")]
    pub since_ms: i64,
    /// The ledger revision in which it entered its current state.
    #[serde(alias = "since_revision")]
    pub since_revision: u64,
    /// Why it is in its current state.
    pub why: String,
    /// The receipt of its delete, while it is kept with it (`DELETED`,
    /// `DELETE_UNKNOWN`, and archived once `VERIFIED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
}

/// What a HEAD is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbePurpose {
    /// Quarantine passed: does the pinned version still exist?
    RestoreCheck,
    /// After a confirmed delete: is it gone?
    VerifyGone,
    /// After an unconfirmed delete: what happened?
    Reconcile,
}

/// A HEAD the host must make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// Key relative to the table location.
    pub key: String,
    /// Why.
    pub purpose: ProbePurpose,
    /// The version the ledger pinned.
    pub expect: ObjectVersion,
}

/// What the store answered to a probe (`seen: None`: no such object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// Key relative to the table location.
    pub key: String,
    /// The current version, or `None` when absent.
    pub seen: Option<ObjectVersion>,
    /// A restore check that cannot pass whatever the store says: the
    /// object belongs to a sealed metadata bundle whose walk is incomplete
    /// (why, in words). The object stays quarantined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// The live state the host read just before approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveState {
    /// The pointer's current metadata location (Delta: newest commit),
    /// mapped like the plan's. Metadata documents are immutable, so the same
    /// location also means the same refs (the protected-ref root).
    pub metadata_location: String,
    /// The context as read again just now (JSON; `None`: no context).
    pub context: Option<String>,
    /// Keys whose quarantine bundle no longer walks completely (read again
    /// just now): never approved, whatever their state.
    #[serde(default)]
    pub blocked: BTreeMap<String, String>,
    /// Delta: the newest commit's identity as listed now.
    #[serde(default)]
    pub head: Option<ObjectVersion>,
    /// The host's clock, ms since the epoch (`None`: the step's `now_ms`).
    #[serde(default)]
    pub clock_ms: Option<i64>,
    /// Accept a plan judged ahead of the clock (what-if runs, tests).
    #[serde(default)]
    pub allow_future_now: bool,
}

/// How a delete ended, as the host saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteResult {
    /// The store confirmed the delete.
    Deleted,
    /// The object was already gone.
    AlreadyAbsent,
    /// HEAD before the delete showed another version: not deleted.
    SkippedChanged,
    /// Not attempted: the run stopped first (the table or the context
    /// changed between batches).
    SkippedStopped,
    /// Not attempted: a live hold or writer covers the key now.
    SkippedProtected,
    /// The store refused or errored.
    Failed,
    /// The request was sent; no answer (timeout, crash).
    Unknown,
    /// Deleted by this run (or an earlier one), and the live table
    /// references it: damage, recorded with how to restore it.
    Damaged,
    /// A dry run: the object is the planned version and would be deleted.
    /// Never recorded by a ledger.
    WouldDelete,
}

impl DeleteResult {
    /// The result's name as receipts spell it (`skipped-changed`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteResult::Deleted => "deleted",
            DeleteResult::AlreadyAbsent => "already-absent",
            DeleteResult::SkippedChanged => "skipped-changed",
            DeleteResult::SkippedStopped => "skipped-stopped",
            DeleteResult::SkippedProtected => "skipped-protected",
            DeleteResult::Failed => "failed",
            DeleteResult::Unknown => "unknown",
            DeleteResult::Damaged => "damaged",
            DeleteResult::WouldDelete => "would-delete",
        }
    }
}

/// A key the ledger deleted that the table references now: found by the
/// damage check after a run's deletes, or by a later plan that found it
/// referenced and missing from the listing. Open until a plan finds it
/// listed again or no longer referenced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Damage {
    /// Key relative to the table location (or, when no archive of the
    /// ledger names it any more, its fingerprint in words).
    pub key: String,
    /// The key's fingerprint, 16 hex digits: how a plan names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The version the ledger deleted (restore that one).
    pub version: ObjectVersion,
    /// When it was found, ms since the epoch.
    pub found_ms: i64,
    /// What references it, and how it was found, in words.
    pub why: String,
    /// When a plan found it listed again or no longer referenced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_ms: Option<i64>,
}

/// One delete's receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// Key relative to the table location.
    pub key: String,
    /// What happened.
    pub result: DeleteResult,
    /// The version the delete was aimed at (as seen by HEAD just before).
    pub version: Option<ObjectVersion>,
    /// When the request was sent, ms since the epoch.
    #[serde(alias = "requested_ms")]
    pub requested_ms: i64,
    /// When the store answered, ms since the epoch (`None`: no answer).
    #[serde(alias = "confirmed_ms")]
    pub confirmed_ms: Option<i64>,
    /// Versioned buckets: a delete without a version id leaves a delete
    /// marker and keeps `version.version_id`; removing the marker undoes it.
    #[serde(default)]
    #[serde(alias = "delete_marker")]
    pub delete_marker: bool,
    /// Versioned buckets: the version id of the delete marker the delete
    /// created, as the store answered it (with `version.version_id`, the
    /// deleted version, a receipt can be checked against the bucket's
    /// version listing).
    // Left out when absent: a ledger sealed before the field existed must
    // re-serialise to the same bytes, or its integrity digest would fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "delete_marker_version_id")]
    pub delete_marker_version_id: Option<String>,
    /// The store's words, if any.
    #[serde(default)]
    pub detail: Option<String>,
}

/// The tokens one approval compared, and what it approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// Ledger revision of the approval.
    pub revision: u64,
    /// When, ms since the epoch.
    #[serde(alias = "at_ms")]
    pub at_ms: i64,
    /// Whether it was granted.
    pub granted: bool,
    /// Why not, when refused (each difference found).
    pub differences: Vec<String>,
    /// The sealed plan's digest.
    #[serde(alias = "plan_digest")]
    pub plan_digest: String,
    /// The sealed plan's metadata location and the live one (equal when granted).
    #[serde(alias = "metadata_location")]
    pub metadata_location: String,
    /// Hold generation of the plan; the live one was not newer when granted.
    #[serde(alias = "hold_generation")]
    pub hold_generation: u64,
    /// Lease watermark of the plan; the live one was equal when granted.
    #[serde(alias = "lease_watermark")]
    pub lease_watermark: u64,
    /// The hold generation read live just before approving.
    #[serde(alias = "live_hold_generation")]
    pub live_hold_generation: u64,
    /// The lease watermark read live just before approving.
    #[serde(alias = "live_lease_watermark")]
    pub live_lease_watermark: u64,
    /// SHA-256 over the approved keys and their pinned versions: the exact
    /// sealed object list this approval covers (recorded for the audit).
    #[serde(alias = "quarantine_root")]
    pub quarantine_root: String,
    /// How many keys it approved (the objects themselves say which: they
    /// are `DELETE_APPROVED` in its revision).
    pub approved: u64,
}
