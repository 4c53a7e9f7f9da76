//! Two-phase deletion: the ledger that walks every unreferenced object
//! through quarantine, restore verification, one approval and a receipted
//! delete, one step per run.
//!
//! ```text
//!             (candidate in a plan)
//!                    │
//!   PROTECTED ◄──── DISCOVERED ──► UNREFERENCED_ELIGIBLE ──► QUARANTINED
//!      ▲  │  (no longer a candidate, or changed, at any step before DELETED)      │ interval passed,
//!      │  └──► DISCOVERED (a candidate again)                                     │ HEAD = recorded version
//!      │                                                                          ▼
//!      └──────────────────────────────────────────────────────────────── RESTORE_VERIFIED
//!                                                                                 │ approval: table generation
//!                                                                                 │ (and refs), context digest,
//!                                                                                 ▼ holds, leases unchanged
//!   VERIFIED ◄── DELETED ◄── (receipt: deleted / already absent) ◄──── DELETE_APPROVED
//!      ▲            │ still there                                                 │ no receipt, failed,
//!      │            ▼                                                             │ unknown
//!      └──── DELETE_UNKNOWN ◄─────────────────────────────────────────────────────┘
//!                   │ HEAD: still the same version ──► RESTORE_VERIFIED (retry after a new approval)
//! ```
//!
//! The ledger is a versioned JSON document the host stores (by default under
//! the table's hidden `_lakesweep/` prefix, which no sweep deletes). The core
//! loads, advances and returns it; it refuses a ledger of another table or of
//! a newer schema. Every function is pure: `now` is an input, and the host
//! does every HEAD and DELETE and reports what the store answered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::error::{Error, Result, UnsafeReason};
use crate::plan::{PlannedDelete, SealedPlan};

/// Schema name of ledger documents.
pub const LEDGER_SCHEMA: &str = "lakesweep.ledger.v2";

/// Where an object stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ObjectState {
    /// Not deletable now (referenced, leased, held, young, or changed); it
    /// starts over from `DISCOVERED` if it becomes a candidate again.
    Protected,
    /// Seen as a delete candidate once.
    Discovered,
    /// A candidate in two consecutive plans.
    UnreferencedEligible,
    /// Its exact version (size, time, ETag, version id) is pinned; the
    /// quarantine interval runs from here.
    Quarantined,
    /// After the interval, the store confirmed the pinned version still
    /// exists: it can be restored, and nothing rewrote it.
    RestoreVerified,
    /// Approved, in one step, against an unchanged table; the delete follows.
    DeleteApproved,
    /// The store confirmed the delete.
    Deleted,
    /// A later HEAD confirmed the object is gone.
    Verified,
    /// A delete whose outcome was not confirmed (lost receipt, failure,
    /// timeout); reconciled by HEAD until `VERIFIED` or retried.
    DeleteUnknown,
}

impl ObjectState {
    /// The state named as ledger documents spell it (`DELETE_UNKNOWN`).
    pub fn from_name(name: &str) -> Option<ObjectState> {
        serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
    }

    /// Whether `self -> next` is one of the ledger's transitions.
    pub fn can_move_to(self, next: ObjectState) -> bool {
        use ObjectState::*;
        matches!(
            (self, next),
            (Protected, Discovered)
                | (Discovered, UnreferencedEligible)
                | (UnreferencedEligible, Quarantined)
                | (Quarantined, RestoreVerified)
                | (RestoreVerified, DeleteApproved)
                | (DeleteApproved, Deleted)
                | (DeleteApproved, DeleteUnknown)
                | (Deleted, Verified)
                | (Deleted, DeleteUnknown)
                | (Deleted, Protected)
                | (Verified, Discovered)
                | (DeleteUnknown, Verified)
                | (DeleteUnknown, RestoreVerified)
                | (
                    Discovered
                        | UnreferencedEligible
                        | Quarantined
                        | RestoreVerified
                        | DeleteApproved
                        | DeleteUnknown,
                    Protected
                )
        )
    }
}

pub use crate::version::ObjectVersion;

/// The version a planned delete pins.
fn version_of(d: &PlannedDelete) -> ObjectVersion {
    ObjectVersion {
        size: d.size,
        last_modified_ms: d.last_modified_ms,
        etag: d.etag.clone(),
        version_id: d.version_id.clone(),
    }
}

/// One state change, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// Key relative to the table location.
    pub key: String,
    /// State before (`None`: new to the ledger).
    pub from: Option<ObjectState>,
    /// State after.
    pub to: ObjectState,
    /// When, milliseconds since the epoch.
    pub at_ms: i64,
    /// Why, in words.
    pub why: String,
}

/// One object of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerObject {
    /// Current state.
    pub state: ObjectState,
    /// The version pinned (from the newest plan that listed it as a candidate).
    pub version: ObjectVersion,
    /// When it entered its current state.
    pub since_ms: i64,
    /// The ledger revision in which it entered its current state.
    pub since_revision: u64,
    /// Why it is in its current state.
    pub why: String,
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
}

/// One delete's receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Key relative to the table location.
    pub key: String,
    /// What happened.
    pub result: DeleteResult,
    /// The version the delete was aimed at (as seen by HEAD just before).
    pub version: Option<ObjectVersion>,
    /// When the request was sent, ms since the epoch.
    pub requested_ms: i64,
    /// When the store answered, ms since the epoch (`None`: no answer).
    pub confirmed_ms: Option<i64>,
    /// Versioned buckets: a delete without a version id leaves a delete
    /// marker and keeps `version.version_id`; removing the marker undoes it.
    #[serde(default)]
    pub delete_marker: bool,
    /// Versioned buckets: the version id of the delete marker the delete
    /// created, as the store answered it (with `version.version_id`, the
    /// deleted version, a receipt can be checked against the bucket's
    /// version listing).
    // Left out when absent: a ledger sealed before the field existed must
    // re-serialise to the same bytes, or its integrity digest would fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_marker_version_id: Option<String>,
    /// The store's words, if any.
    #[serde(default)]
    pub detail: Option<String>,
}

/// The tokens one approval compared, and what it approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Ledger revision of the approval.
    pub revision: u64,
    /// When, ms since the epoch.
    pub at_ms: i64,
    /// Whether it was granted.
    pub granted: bool,
    /// Why not, when refused (each difference found).
    pub differences: Vec<String>,
    /// The sealed plan's digest.
    pub plan_digest: String,
    /// The sealed plan's metadata location and the live one (equal when granted).
    pub metadata_location: String,
    /// Hold generation of the plan; the live one was not newer when granted.
    pub hold_generation: u64,
    /// Lease watermark of the plan; the live one was equal when granted.
    pub lease_watermark: u64,
    /// The hold generation read live just before approving.
    pub live_hold_generation: u64,
    /// The lease watermark read live just before approving.
    pub live_lease_watermark: u64,
    /// SHA-256 over the approved keys and their pinned versions: the exact
    /// sealed object list this approval covers (recorded for the audit).
    pub quarantine_root: String,
    /// The approved keys, exactly.
    pub keys: Vec<String>,
}

/// The ledger document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Always [`LEDGER_SCHEMA`].
    pub schema: String,
    /// Canonical table location.
    pub table_location: String,
    /// The table's UUID (Iceberg) or id (Delta), when known.
    pub table_uuid: Option<String>,
    /// Incremented by every step.
    pub revision: u64,
    /// Quarantine interval, milliseconds.
    pub quarantine_ms: i64,
    /// Objects by key relative to the table location.
    pub objects: BTreeMap<String, LedgerObject>,
    /// Every approval asked for, granted or not.
    pub approvals: Vec<Approval>,
    /// Every delete receipt.
    pub receipts: Vec<Receipt>,
    /// Every state change, oldest first.
    pub history: Vec<Move>,
    /// Keys that ever entered `DELETE_UNKNOWN`.
    #[serde(default)]
    pub unknown_ever: Vec<String>,
    /// Every restore drill recorded, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drills: Vec<Drill>,
    /// The integrity digest of the ledger this one was made from (each step
    /// chains to the one before; `None` for a new ledger).
    #[serde(default)]
    pub previous_integrity: Option<String>,
    /// SHA-256 (hex) over the previous digest and this ledger's content: a
    /// ledger edited by hand (a shorter quarantine, a state moved on) no
    /// longer matches and is refused.
    #[serde(default)]
    pub integrity: String,
}

/// One restore drill: a seeded sample of the table's quarantine bundles,
/// each verified (every layer and pinned version against the bundle)
/// without committing anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drill {
    /// When, ms since the epoch.
    pub at_ms: i64,
    /// The seed the sample was drawn with ([`drill_sample`]): the same seed
    /// over the same bundles draws the same sample.
    pub seed: u64,
    /// Bundles the table had.
    pub bundles_total: u64,
    /// The bundles verified (ids).
    pub sampled: Vec<String>,
    /// Bundles that would not restore, with what differs.
    pub failed: BTreeMap<String, String>,
    /// Whether every sampled bundle would restore.
    pub passed: bool,
}

/// Draws `n` of `ids` (all of them when there are fewer) with a seeded
/// shuffle (SplitMix64): the same ids and seed give the same sample,
/// whatever order the ids come in. Returned sorted.
pub fn drill_sample(ids: &[String], n: u32, seed: u64) -> Vec<String> {
    let mut v: Vec<String> = ids.to_vec();
    v.sort();
    v.dedup();
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let take = (n as usize).min(v.len());
    for i in 0..take {
        let j = i + (next() % (v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(take);
    v.sort();
    v
}

/// The run report's gates: each must read 0 (or 100 %) for a clean run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gates {
    /// Receipts of deleted objects that no granted approval listed.
    pub deleted_outside_approval: u64,
    /// Approved keys with neither a `deleted`/`already-absent` receipt nor a
    /// pending reconciliation resolved (sealed list vs what was deleted).
    pub approved_not_deleted: u64,
    /// Granted approvals whose live hold generation was newer than the plan's.
    pub approvals_after_newer_hold: u64,
    /// Objects ever in `DELETE_UNKNOWN`.
    pub unknown_total: u64,
    /// Of those, now settled (`VERIFIED`, retried, or protected).
    pub unknown_reconciled: u64,
    /// Objects per state.
    pub states: BTreeMap<String, u64>,
}

fn state_name(s: ObjectState) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl Ledger {
    /// A new ledger for `plan`'s table, but only when no earlier one
    /// existed (`prior_ledger`: the host found the mark a saved ledger
    /// leaves beside it) or the operator said `start_new`: a ledger deleted
    /// by mistake must not silently start over.
    pub fn create(
        plan: &SealedPlan,
        quarantine_ms: i64,
        prior_ledger: bool,
        start_new: bool,
    ) -> Result<Ledger> {
        if prior_ledger && !start_new {
            return Err(Error::invalid(
                "ledger",
                "there is no ledger, but one was saved here before (its mark remains): it was deleted or moved. Put it back, or start a new one on purpose (--new-ledger)",
            ));
        }
        Ledger::new(plan, quarantine_ms)
    }

    /// An empty ledger for the plan's table.
    pub fn new(plan: &SealedPlan, quarantine_ms: i64) -> Result<Ledger> {
        if quarantine_ms < 0 {
            return Err(Error::invalid("quarantine_ms", "must not be negative"));
        }
        Ok(Ledger {
            schema: LEDGER_SCHEMA.into(),
            table_location: plan.table_location.clone(),
            table_uuid: plan.table_uuid.clone(),
            revision: 0,
            quarantine_ms,
            objects: BTreeMap::new(),
            approvals: Vec::new(),
            receipts: Vec::new(),
            history: Vec::new(),
            unknown_ever: Vec::new(),
            drills: Vec::new(),
            previous_integrity: None,
            integrity: String::new(),
        })
    }

    /// The integrity digest of this content: SHA-256 over the previous
    /// digest and the canonical JSON of everything but `integrity`.
    pub fn compute_integrity(&self) -> String {
        let mut body = self.clone();
        body.integrity = String::new();
        let text = serde_json::to_vec(&body).unwrap_or_default();
        let mut h = sha2::Sha256::new();
        h.update(self.previous_integrity.as_deref().unwrap_or("").as_bytes());
        h.update(b"\n");
        h.update(&text);
        crate::digest::hex(&h.finalize())
    }

    /// Parses a stored ledger; an unknown or newer schema is refused.
    pub fn parse(text: &str) -> Result<Ledger> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid("ledger", format!("not JSON: {e}")))?;
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(LEDGER_SCHEMA) => {}
            Some("lakesweep.ledger.v1") => {
                return Err(Error::invalid(
                    "ledger",
                    "a ledger written before ledgers were sealed (lakesweep.ledger.v1) cannot be told from an edited one: move it aside and start a new ledger (--new-ledger); its objects start over, nothing is deleted without a new quarantine",
                ))
            }
            Some(s) if s.starts_with("lakesweep.ledger.") => {
                return Err(Error::invalid(
                    "ledger",
                    format!("ledger schema `{s}` is newer than this planner's `{LEDGER_SCHEMA}`: upgrade lakesweep, do not overwrite it"),
                ))
            }
            other => {
                return Err(Error::invalid(
                    "ledger",
                    format!("not a lakesweep ledger (schema {other:?})"),
                ))
            }
        }
        let mut l: Ledger = serde_json::from_value(v)
            .map_err(|e| Error::invalid("ledger", format!("damaged: {e}")))?;
        if l.integrity != l.compute_integrity() {
            return Err(Error::invalid(
                "ledger",
                "edited or damaged: its integrity digest does not match its content (a ledger is only ever written by lakesweep; restore the saved one, or start a new ledger with --new-ledger)",
            ));
        }
        // The next save chains to this one.
        l.previous_integrity = Some(std::mem::take(&mut l.integrity));
        Ok(l)
    }

    /// This ledger with its integrity digest computed (what is stored).
    pub fn sealed(&self) -> Ledger {
        let mut sealed = self.clone();
        sealed.integrity = sealed.compute_integrity();
        sealed
    }

    /// Canonical JSON text, sealed with its integrity digest.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.sealed()).unwrap_or_default()
    }

    /// Refuses a plan of another table.
    pub fn ensure_table(&self, plan: &SealedPlan) -> Result<()> {
        if plan.table_location != self.table_location
            || (self.table_uuid.is_some()
                && plan.table_uuid.is_some()
                && plan.table_uuid != self.table_uuid)
        {
            return Err(Error::invalid(
                "ledger",
                format!(
                    "the ledger is for {} ({}), the plan for {} ({}): a ledger of another table",
                    self.table_location,
                    self.table_uuid.as_deref().unwrap_or("no id"),
                    plan.table_location,
                    plan.table_uuid.as_deref().unwrap_or("no id")
                ),
            ));
        }
        Ok(())
    }

    fn set(
        &mut self,
        key: &str,
        to: ObjectState,
        version: Option<ObjectVersion>,
        now: i64,
        why: String,
        moves: &mut Vec<Move>,
    ) -> Result<()> {
        let from = self.objects.get(key).map(|o| o.state);
        if let Some(f) = from {
            if !f.can_move_to(to) {
                return Err(Error::protocol(format!(
                    "ledger: `{key}` cannot move from {} to {}",
                    state_name(f),
                    state_name(to)
                )));
            }
        } else if to != ObjectState::Discovered {
            return Err(Error::protocol(format!(
                "ledger: `{key}` enters the ledger as {}",
                state_name(to)
            )));
        }
        let version = match (version, self.objects.get(key)) {
            (Some(v), _) => v,
            (None, Some(o)) => o.version.clone(),
            (None, None) => return Err(Error::protocol(format!("ledger: no version for `{key}`"))),
        };
        if to == ObjectState::DeleteUnknown && !self.unknown_ever.iter().any(|k| k == key) {
            self.unknown_ever.push(key.to_owned());
        }
        self.objects.insert(
            key.to_owned(),
            LedgerObject {
                state: to,
                version,
                since_ms: now,
                since_revision: self.revision,
                why: why.clone(),
            },
        );
        let m = Move {
            key: key.to_owned(),
            from,
            to,
            at_ms: now,
            why,
        };
        self.history.push(m.clone());
        moves.push(m);
        Ok(())
    }

    /// Starts a run: folds a fresh plan into the ledger (at most one step per
    /// object) and returns the HEADs the host must make.
    pub fn begin_step(
        &mut self,
        plan: &SealedPlan,
        now_ms: i64,
    ) -> Result<(Vec<Move>, Vec<Probe>)> {
        use ObjectState::*;
        self.ensure_table(plan)?;
        self.revision += 1;
        let candidates: BTreeMap<&str, &PlannedDelete> =
            plan.delete.iter().map(|d| (d.key.as_str(), d)).collect();
        let mut moves = Vec::new();
        let mut probes = Vec::new();
        let keys: Vec<String> = self.objects.keys().cloned().collect();
        for key in keys {
            let o = self.objects[&key].clone();
            let cand = candidates.get(key.as_str()).copied();
            let probe = |purpose| Probe {
                key: key.clone(),
                purpose,
                expect: o.version.clone(),
            };
            match (o.state, cand) {
                (Verified, Some(d)) => {
                    // Listed again after a verified delete: a new object at
                    // the key, or the deleted version put back (a delete
                    // marker removed). Either way it starts over, through
                    // a whole new quarantine, never on the old one.
                    let why = if o.version.matches(&version_of(d)) {
                        "the deleted version is back (restored after its delete was verified): a candidate again, starting over"
                    } else {
                        "a new object under a key deleted earlier: a candidate again, starting over"
                    };
                    self.set(&key, Discovered, Some(version_of(d)), now_ms, why.into(), &mut moves)?
                }
                (Verified, None) => {}
                (Deleted, _) => probes.push(probe(ProbePurpose::VerifyGone)),
                (DeleteUnknown, _) => probes.push(probe(ProbePurpose::Reconcile)),
                (DeleteApproved, _) => {
                    // An approval without receipts: the run died mid-delete.
                    self.set(&key, DeleteUnknown, None, now_ms, "approved, but no receipt was recorded (interrupted run): outcome unknown".into(), &mut moves)?;
                    probes.push(probe(ProbePurpose::Reconcile));
                }
                (Protected, None) => {}
                (Protected, Some(d)) => self.set(&key, Discovered, Some(version_of(d)), now_ms, "a delete candidate again: starting over".into(), &mut moves)?,
                (_, None) => self.set(&key, Protected, None, now_ms, format!("no longer a delete candidate in plan {} (referenced by a commit, leased, held, young or changed): kept", short(&plan.digest)), &mut moves)?,
                (_, Some(d)) if !o.version.matches(&version_of(d)) => self.set(&key, Protected, Some(version_of(d)), now_ms, "the object changed since it was pinned: kept, starts over".into(), &mut moves)?,
                (Discovered, Some(_)) => self.set(&key, UnreferencedEligible, None, now_ms, "a delete candidate in two consecutive plans".into(), &mut moves)?,
                (UnreferencedEligible, Some(_)) => self.set(&key, Quarantined, None, now_ms, format!("version pinned; quarantine of {} ms begins", self.quarantine_ms), &mut moves)?,
                (Quarantined, Some(_)) => {
                    if now_ms.saturating_sub(o.since_ms) >= self.quarantine_ms {
                        probes.push(probe(ProbePurpose::RestoreCheck));
                    }
                }
                (RestoreVerified, Some(_)) => {}
            }
        }
        for d in &plan.delete {
            if !self.objects.contains_key(&d.key) {
                self.set(
                    &d.key,
                    Discovered,
                    Some(version_of(d)),
                    now_ms,
                    format!("a delete candidate in plan {}", short(&plan.digest)),
                    &mut moves,
                )?;
            }
        }
        Ok((moves, probes))
    }

    /// Starts a recovery run (`reconcile`): every delete whose outcome is not
    /// confirmed is settled by HEAD. An approval left without receipts (the
    /// run died mid-delete) becomes `DELETE_UNKNOWN` first. Returns the moves
    /// and the HEADs the host must make; nothing is approved or deleted.
    pub fn reconcile_step(&mut self, now_ms: i64) -> Result<(Vec<Move>, Vec<Probe>)> {
        use ObjectState::*;
        self.revision += 1;
        let mut moves = Vec::new();
        let mut probes = Vec::new();
        let keys: Vec<String> = self.objects.keys().cloned().collect();
        for key in keys {
            let o = self.objects[&key].clone();
            let probe = |purpose| Probe {
                key: key.clone(),
                purpose,
                expect: o.version.clone(),
            };
            match o.state {
                DeleteApproved => {
                    self.set(&key, DeleteUnknown, None, now_ms, "approved, but no receipt was recorded (interrupted run): outcome unknown, reconciled now".into(), &mut moves)?;
                    probes.push(probe(ProbePurpose::Reconcile));
                }
                DeleteUnknown => probes.push(probe(ProbePurpose::Reconcile)),
                Deleted => probes.push(probe(ProbePurpose::VerifyGone)),
                _ => {}
            }
        }
        Ok((moves, probes))
    }

    /// Applies the store's answers to this run's probes.
    pub fn observe(&mut self, observations: &[Observation], now_ms: i64) -> Result<Vec<Move>> {
        use ObjectState::*;
        let mut moves = Vec::new();
        for ob in observations {
            let Some(o) = self.objects.get(&ob.key).cloned() else {
                return Err(Error::protocol(format!(
                    "observation of `{}`, which the ledger does not hold",
                    ob.key
                )));
            };
            let same = ob.seen.as_ref().is_some_and(|s| o.version.matches(s));
            match (o.state, &ob.seen) {
                (Quarantined, _) if ob.blocked.is_some() => {
                    // No transition: it waits in quarantine, and says why.
                    if let Some(obj) = self.objects.get_mut(&ob.key) {
                        obj.why = format!(
                            "held in quarantine: {}",
                            ob.blocked.as_deref().unwrap_or("")
                        );
                    }
                }
                (Quarantined, _) if same => self.set(&ob.key, RestoreVerified, None, now_ms, "quarantine passed; the pinned version still exists and can be restored".into(), &mut moves)?,
                (Quarantined, None) => self.set(&ob.key, Protected, None, now_ms, "vanished during quarantine (not by us): kept in the ledger, investigate".into(), &mut moves)?,
                (Quarantined, Some(_)) => self.set(&ob.key, Protected, ob.seen.clone(), now_ms, "rewritten during quarantine: kept".into(), &mut moves)?,
                (Deleted, None) => self.set(&ob.key, Verified, None, now_ms, "confirmed gone".into(), &mut moves)?,
                (Deleted, Some(_)) if same => self.set(&ob.key, Protected, None, now_ms, "deleted and confirmed, but the pinned version is back (a delete marker removed: restored on purpose?): kept, starts over".into(), &mut moves)?,
                (Deleted, Some(_)) => self.set(&ob.key, Verified, None, now_ms, "our version is gone; a newer object now has this key (not ours)".into(), &mut moves)?,
                (DeleteUnknown, None) => self.set(&ob.key, Verified, None, now_ms, "reconciled: gone".into(), &mut moves)?,
                (DeleteUnknown, Some(_)) if same => self.set(&ob.key, RestoreVerified, None, now_ms, "reconciled: not deleted, the pinned version is intact; retried after a new approval".into(), &mut moves)?,
                (DeleteUnknown, Some(_)) => self.set(&ob.key, Protected, ob.seen.clone(), now_ms, "reconciled: another version now has this key; kept".into(), &mut moves)?,
                (s, _) => {
                    return Err(Error::protocol(format!(
                        "observation of `{}` in state {}, which asked for none",
                        ob.key,
                        state_name(s)
                    )))
                }
            }
        }
        Ok(moves)
    }

    /// The one irreversible acceptance point: compares the live state with
    /// the sealed plan and, when nothing differs, approves exactly the
    /// objects verified before this run that the plan still lists. Any
    /// difference approves nothing (the plan must be recomputed).
    pub fn approve(
        &mut self,
        plan: &SealedPlan,
        live: &LiveState,
        now_ms: i64,
    ) -> Result<(Approval, Vec<Move>)> {
        self.ensure_table(plan)?;
        let t = &plan.tokens;
        // The one acceptance path, shared with `apply` and every host.
        let acc = crate::acceptance::accept_in_ledger(
            plan,
            &crate::acceptance::LiveFacts {
                metadata_location: live.metadata_location.clone(),
                head: live.head.clone(),
                context: live.context.clone(),
                clock_ms: live.clock_ms.unwrap_or(now_ms),
                allow_future_now: live.allow_future_now,
            },
        )?;
        let (live_holds, live_leases) = (acc.live_hold_generation, acc.live_lease_watermark);
        let mut differences = acc.differences.clone();
        if let Some(rule) = &t.restore_drill {
            // Age by the host's clock, not the plan's `now` (which may be
            // set in the past to make an old drill look recent).
            if let Some(why) = self.drill_missing(rule, live.clock_ms.unwrap_or(now_ms)) {
                differences.push(why);
            }
        }
        let candidates: BTreeMap<&str, &PlannedDelete> =
            plan.delete.iter().map(|d| (d.key.as_str(), d)).collect();
        let keys: Vec<String> = self
            .objects
            .iter()
            .filter(|(k, o)| {
                o.state == ObjectState::RestoreVerified
                    && o.since_revision < self.revision
                    && !live.blocked.contains_key(k.as_str())
                    && !acc.denied.contains_key(k.as_str())
                    && candidates
                        .get(k.as_str())
                        .is_some_and(|d| o.version.matches(&version_of(d)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        let root = quarantine_root(keys.iter().map(|k| (k.as_str(), &self.objects[k].version)));
        let granted = differences.is_empty() && !keys.is_empty();
        let approval = Approval {
            revision: self.revision,
            at_ms: now_ms,
            granted,
            differences,
            plan_digest: plan.digest.clone(),
            metadata_location: t.metadata_location.clone(),
            hold_generation: t.hold_generation,
            lease_watermark: t.lease_watermark,
            live_hold_generation: live_holds,
            live_lease_watermark: live_leases,
            quarantine_root: root,
            keys: if granted { keys.clone() } else { Vec::new() },
        };
        self.approvals.push(approval.clone());
        let mut moves = Vec::new();
        if granted {
            for k in &keys {
                self.set(
                    k,
                    ObjectState::DeleteApproved,
                    None,
                    now_ms,
                    format!(
                        "approved against {} (holds {}, leases {})",
                        short(&t.metadata_location),
                        t.hold_generation,
                        t.lease_watermark
                    ),
                    &mut moves,
                )?;
            }
        }
        Ok((approval, moves))
    }

    /// Records a restore drill: `results` maps each sampled bundle id to
    /// `None` (it would restore) or what differs. A step of its own.
    pub fn record_drill(
        &mut self,
        table_location: &str,
        seed: u64,
        bundles_total: u64,
        results: BTreeMap<String, Option<String>>,
        now_ms: i64,
    ) -> Result<Drill> {
        let same = |a: &str| crate::path::TableLocation::parse(a).ok();
        if same(table_location).is_none() || same(table_location) != same(&self.table_location) {
            return Err(Error::invalid(
                "ledger",
                format!(
                    "a drill of {table_location} cannot be recorded in the ledger of {}",
                    self.table_location
                ),
            ));
        }
        self.revision += 1;
        let failed: BTreeMap<String, String> = results
            .iter()
            .filter_map(|(id, why)| why.clone().map(|w| (id.clone(), w)))
            .collect();
        let drill = Drill {
            at_ms: now_ms,
            seed,
            bundles_total,
            sampled: results.into_keys().collect(),
            passed: failed.is_empty(),
            failed,
        };
        self.drills.push(drill.clone());
        Ok(drill)
    }

    /// Why the policy's drill gate is not met at `now_ms`, if it is not: it
    /// needs a passed drill, no older than `max_age` and not dated after
    /// `now_ms`, that verified at least `min_bundles` bundles (or every
    /// bundle the table had, when it had fewer).
    pub fn drill_missing(&self, rule: &crate::policy::DrillGate, now_ms: i64) -> Option<String> {
        let ok = self.drills.iter().any(|d| {
            // Every bundle the table had counts too (none: there was
            // nothing a restore could need).
            let enough = d.sampled.len() as u64 >= u64::from(rule.min_bundles)
                || d.sampled.len() as u64 == d.bundles_total;
            d.passed
                && enough
                && now_ms
                    .checked_sub(d.at_ms)
                    .is_some_and(|age| (0..=rule.max_age_ms).contains(&age))
        });
        (!ok).then(|| {
            format!(
                "the policy asks for a restore drill of at least {} bundles passed within {}: none in the ledger (run `lakesweep drill`)",
                rule.min_bundles,
                crate::duration::human_ms(rule.max_age_ms)
            )
        })
    }

    /// The acceptance of one delete batch of this ledger's run: the core's
    /// acceptance path, with the policy's restore-drill gate checked
    /// against this ledger's drills (by the host's clock).
    pub fn accept_batch(
        &self,
        plan: &SealedPlan,
        live: &crate::acceptance::LiveFacts,
    ) -> Result<crate::acceptance::Acceptance> {
        self.ensure_table(plan)?;
        let mut a = crate::acceptance::accept_in_ledger(plan, live)?;
        if let Some(rule) = &plan.tokens.restore_drill {
            if let Some(why) = self.drill_missing(rule, live.clock_ms) {
                a.differences.push(why);
                a.granted = false;
            }
        }
        Ok(a)
    }

    /// Records the receipts of the last granted approval. An approved key
    /// without a receipt is `DELETE_UNKNOWN`, never "deleted".
    pub fn record(&mut self, receipts: Vec<Receipt>, now_ms: i64) -> Result<Vec<Move>> {
        use ObjectState::*;
        let Some(approval) = self
            .approvals
            .iter()
            .rev()
            .find(|a| a.granted && a.revision == self.revision)
            .cloned()
        else {
            if receipts.is_empty() {
                return Ok(Vec::new());
            }
            return Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                "receipts without a granted approval in this run: something deleted objects the ledger did not approve",
            ));
        };
        let mut by_key: BTreeMap<String, Receipt> = BTreeMap::new();
        for r in receipts {
            if !approval.keys.contains(&r.key) {
                // Recorded for the audit (the gate `deleted_outside_approval`
                // counts it and the run fails), never folded into a state.
                self.receipts.push(r);
                continue;
            }
            by_key.insert(r.key.clone(), r);
        }
        let mut moves = Vec::new();
        for k in &approval.keys {
            match by_key.remove(k) {
                None => self.set(
                    k,
                    DeleteUnknown,
                    None,
                    now_ms,
                    "approved but no receipt: outcome unknown until reconciled".into(),
                    &mut moves,
                )?,
                Some(r) => {
                    let why = match r.result {
                        DeleteResult::Deleted if r.delete_marker => format!(
                            "deleted: delete marker {} hides version {}; the bucket keeps that version (undo: remove the marker)",
                            r.delete_marker_version_id.as_deref().unwrap_or("(id not given)"),
                            r.version.as_ref().and_then(|v| v.version_id.as_deref()).unwrap_or("(id not given)"),
                        ),
                        DeleteResult::Deleted => "deleted; the store confirmed".to_owned(),
                        DeleteResult::AlreadyAbsent => "already absent when deleted".to_owned(),
                        DeleteResult::SkippedChanged => "changed since approval: not deleted, kept".to_owned(),
                        DeleteResult::SkippedStopped => format!("not deleted: the run stopped ({}); kept, starts over", r.detail.as_deref().unwrap_or("the table changed")),
                        DeleteResult::SkippedProtected => format!("not deleted: {}", r.detail.as_deref().unwrap_or("held")),
                        DeleteResult::Failed => format!("delete failed ({}): outcome to reconcile", r.detail.as_deref().unwrap_or("no detail")),
                        DeleteResult::Unknown => "no answer from the store: outcome unknown".to_owned(),
                    };
                    let to = match r.result {
                        DeleteResult::Deleted | DeleteResult::AlreadyAbsent => Deleted,
                        DeleteResult::SkippedChanged
                        | DeleteResult::SkippedStopped
                        | DeleteResult::SkippedProtected => Protected,
                        DeleteResult::Failed | DeleteResult::Unknown => DeleteUnknown,
                    };
                    self.set(k, to, None, now_ms, why, &mut moves)?;
                    self.receipts.push(r);
                }
            }
        }
        Ok(moves)
    }

    /// The gates of the whole ledger's history.
    pub fn gates(&self) -> Gates {
        let approved: std::collections::BTreeSet<&str> = self
            .approvals
            .iter()
            .filter(|a| a.granted)
            .flat_map(|a| a.keys.iter().map(String::as_str))
            .collect();
        let deleted_outside_approval = self
            .receipts
            .iter()
            .filter(|r| r.result == DeleteResult::Deleted && !approved.contains(r.key.as_str()))
            .count() as u64;
        let approved_not_deleted = self
            .objects
            .values()
            .filter(|o| {
                matches!(
                    o.state,
                    ObjectState::DeleteApproved | ObjectState::DeleteUnknown
                )
            })
            .count() as u64;
        let unknown_reconciled = self
            .unknown_ever
            .iter()
            .filter(|k| {
                self.objects
                    .get(*k)
                    .is_some_and(|o| o.state != ObjectState::DeleteUnknown)
            })
            .count() as u64;
        let mut states = BTreeMap::new();
        for o in self.objects.values() {
            *states.entry(state_name(o.state)).or_insert(0) += 1;
        }
        Gates {
            deleted_outside_approval,
            approved_not_deleted,
            approvals_after_newer_hold: self
                .approvals
                .iter()
                .filter(|a| a.granted && a.live_hold_generation > a.hold_generation)
                .count() as u64,
            unknown_total: self.unknown_ever.len() as u64,
            unknown_reconciled,
            states,
        }
    }
}

fn short(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).chars().take(64).collect()
}

/// SHA-256 (hex) over `key\tsize\tmtime\tetag\tversion` lines, sorted by key.
pub fn quarantine_root<'a>(items: impl Iterator<Item = (&'a str, &'a ObjectVersion)>) -> String {
    let mut lines: Vec<String> = items
        .map(|(k, v)| {
            format!(
                "{k}\t{}\t{}\t{}\t{}\n",
                v.size,
                v.last_modified_ms,
                v.etag.as_deref().unwrap_or(""),
                v.version_id.as_deref().unwrap_or("")
            )
        })
        .collect();
    lines.sort();
    hex(&Sha256::digest(lines.concat().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DrillGate;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("q-{i}")).collect()
    }

    #[test]
    fn a_drill_sample_depends_on_the_seed_only() {
        let a = drill_sample(&ids(40), 5, 9);
        let mut rev = ids(40);
        rev.reverse();
        assert_eq!(
            drill_sample(&rev, 5, 9),
            a,
            "order of the ids does not matter"
        );
        assert_eq!(a.len(), 5);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        assert!((0..20).any(|s| drill_sample(&ids(40), 5, s) != a));
        assert_eq!(drill_sample(&ids(3), 5, 1), ids(3), "all when fewer");
        assert!(drill_sample(&[], 5, 1).is_empty());
    }

    fn ledger_with(drill: Drill) -> Ledger {
        Ledger {
            schema: LEDGER_SCHEMA.into(),
            table_location: "s3://b/t".into(),
            table_uuid: None,
            revision: 1,
            quarantine_ms: 0,
            objects: BTreeMap::new(),
            approvals: vec![],
            receipts: vec![],
            history: vec![],
            unknown_ever: vec![],
            drills: vec![drill],
            previous_integrity: None,
            integrity: String::new(),
        }
    }

    fn drill(at_ms: i64, sampled: usize, total: u64, passed: bool) -> Drill {
        Drill {
            at_ms,
            seed: 1,
            bundles_total: total,
            sampled: ids(sampled),
            failed: if passed {
                BTreeMap::new()
            } else {
                [("q-0".to_owned(), "rewritten".to_owned())].into()
            },
            passed,
        }
    }

    const T: i64 = 1_000_000;

    /// A plan over `s3://b/t` deleting `keys` (key, size), made under `context`.
    fn sealed(keys: &[(&str, u64)], context: Option<&str>) -> SealedPlan {
        crate::plan::plan_for_tests(keys, context)
    }

    fn live(context: Option<&str>) -> LiveState {
        LiveState {
            metadata_location: "s3://b/t/metadata/v3.metadata.json".into(),
            context: context.map(str::to_owned),
            blocked: BTreeMap::new(),
            head: None,
            clock_ms: Some(T),
            allow_future_now: false,
        }
    }

    /// Walks every key of `p` to RESTORE_VERIFIED (quarantine 0): four
    /// runs, the last one's restore checks answered with the pinned version.
    fn verified(p: &SealedPlan) -> Ledger {
        let mut l = Ledger::new(p, 0).unwrap();
        for _ in 0..3 {
            l.begin_step(p, T).unwrap();
        }
        let (_, probes) = l.begin_step(p, T).unwrap();
        let obs: Vec<Observation> = probes
            .iter()
            .map(|pr| Observation {
                key: pr.key.clone(),
                seen: Some(pr.expect.clone()),
                blocked: None,
            })
            .collect();
        assert_eq!(obs.len(), p.delete.len());
        l.observe(&obs, T).unwrap();
        for d in &p.delete {
            assert_eq!(l.objects[&d.key].state, ObjectState::RestoreVerified);
        }
        // The next run: verified before it, so approvable in it.
        l.begin_step(p, T).unwrap();
        l
    }

    /// Nothing skips a step toward deletion: only the listed transitions
    /// exist, and a move outside them is refused.
    #[test]
    fn no_transition_skips_quarantine_or_verification() {
        use ObjectState::*;
        let all = [
            Protected,
            Discovered,
            UnreferencedEligible,
            Quarantined,
            RestoreVerified,
            DeleteApproved,
            Deleted,
            Verified,
            DeleteUnknown,
        ];
        // Only RESTORE_VERIFIED may be approved; nothing reaches DELETED or
        // VERIFIED but from a delete.
        for s in all {
            assert_eq!(s.can_move_to(DeleteApproved), s == RestoreVerified, "{s:?}");
            assert_eq!(s.can_move_to(Deleted), s == DeleteApproved, "{s:?}");
            assert_eq!(
                s.can_move_to(Verified),
                matches!(s, Deleted | DeleteUnknown),
                "{s:?}"
            );
        }
        assert!(!Discovered.can_move_to(Quarantined));
        assert!(!Quarantined.can_move_to(Quarantined));
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.begin_step(&p, T).unwrap();
        let mut moves = Vec::new();
        assert!(l
            .set(
                "data/a.parquet",
                DeleteApproved,
                None,
                T,
                "skip".into(),
                &mut moves
            )
            .is_err());
        assert_eq!(l.objects["data/a.parquet"].state, Discovered);
    }

    /// Deleted and verified, then listed again (the same version put back,
    /// or a new object at the key): it starts over from DISCOVERED.
    #[test]
    fn a_key_listed_again_after_a_verified_delete_starts_over() {
        for size in [10, 11] {
            let p = sealed(&[("data/a.parquet", 10)], None);
            let mut l = verified(&p);
            l.objects.get_mut("data/a.parquet").unwrap().state = ObjectState::Verified;
            let again = sealed(&[("data/a.parquet", size)], None);
            l.begin_step(&again, T).unwrap();
            let o = &l.objects["data/a.parquet"];
            assert_eq!(o.state, ObjectState::Discovered, "size {size}");
            assert!(o.why.contains("starting over"), "{}", o.why);
            assert_eq!(o.version.size, size);
        }
    }

    /// `reconcile` is a step of its own: approvals a dead run left without
    /// receipts become DELETE_UNKNOWN and, like unconfirmed deletes, get a
    /// HEAD probe; nothing else moves.
    #[test]
    fn reconcile_turns_receiptless_approvals_into_unknowns_and_probes_them() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 10)], None);
        let mut l = verified(&p);
        let (a, _) = l.approve(&p, &live(None), T).unwrap();
        assert!(a.granted);
        l.objects.get_mut("data/b.parquet").unwrap().state = ObjectState::Deleted;
        let rev = l.revision;
        let (moves, probes) = l.reconcile_step(T).unwrap();
        assert_eq!(l.revision, rev + 1);
        assert_eq!(
            l.objects["data/a.parquet"].state,
            ObjectState::DeleteUnknown
        );
        assert_eq!(moves.len(), 1, "{moves:?}");
        let mut got: Vec<(String, ProbePurpose)> =
            probes.iter().map(|p| (p.key.clone(), p.purpose)).collect();
        got.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(
            got,
            [
                ("data/a.parquet".to_owned(), ProbePurpose::Reconcile),
                ("data/b.parquet".to_owned(), ProbePurpose::VerifyGone)
            ]
        );
        // Still unknown next time (no answer came): probed again, no move.
        let (moves, probes) = l.reconcile_step(T).unwrap();
        assert!(moves.is_empty());
        assert!(probes
            .iter()
            .any(|p| p.key == "data/a.parquet" && p.purpose == ProbePurpose::Reconcile));
    }

    /// HEAD answers settle each state by the pinned version: a quarantine
    /// blocked by its bundle waits (never verified); a deleted key now
    /// holding another object is verified gone (not ours); an unknown
    /// outcome with another object at the key is protected, never retried.
    #[test]
    fn observations_settle_by_the_pinned_version() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let pinned = version_of(&p.delete[0]);
        let mut other = pinned.clone();
        other.size = 11;
        let ob = |seen: Option<&ObjectVersion>, blocked: Option<&str>| Observation {
            key: "data/a.parquet".into(),
            seen: seen.cloned(),
            blocked: blocked.map(str::to_owned),
        };
        let state = |s: ObjectState| {
            let mut l = Ledger::new(&p, 0).unwrap();
            l.begin_step(&p, T).unwrap();
            l.objects.get_mut("data/a.parquet").unwrap().state = s;
            l
        };
        // Quarantined, its bundle incomplete: waits, and says why.
        let mut l = state(ObjectState::Quarantined);
        l.observe(&[ob(Some(&pinned), Some("bundle q-1 is incomplete"))], T)
            .unwrap();
        let o = &l.objects["data/a.parquet"];
        assert_eq!(o.state, ObjectState::Quarantined);
        assert!(o.why.contains("bundle q-1 is incomplete"), "{}", o.why);
        // Deleted, and another object now has the key: ours is gone.
        let mut l = state(ObjectState::Deleted);
        l.observe(&[ob(Some(&other), None)], T).unwrap();
        assert_eq!(l.objects["data/a.parquet"].state, ObjectState::Verified);
        // Deleted, and the pinned version is back: protected.
        let mut l = state(ObjectState::Deleted);
        l.observe(&[ob(Some(&pinned), None)], T).unwrap();
        assert_eq!(l.objects["data/a.parquet"].state, ObjectState::Protected);
        // Unknown outcome, another object at the key: protected.
        let mut l = state(ObjectState::DeleteUnknown);
        l.observe(&[ob(Some(&other), None)], T).unwrap();
        assert_eq!(l.objects["data/a.parquet"].state, ObjectState::Protected);
        // Unknown outcome, the pinned version intact: retried later.
        let mut l = state(ObjectState::DeleteUnknown);
        l.observe(&[ob(Some(&pinned), None)], T).unwrap();
        assert_eq!(
            l.objects["data/a.parquet"].state,
            ObjectState::RestoreVerified
        );
    }

    fn receipt(key: &str, marker: bool) -> Receipt {
        Receipt {
            key: key.into(),
            result: DeleteResult::Deleted,
            version: None,
            requested_ms: T,
            confirmed_ms: Some(T),
            delete_marker: marker,
            delete_marker_version_id: marker.then(|| "m-1".to_owned()),
            detail: None,
        }
    }

    /// Receipts need this run's granted approval (an older one, or a
    /// refused one of this run, is not it); a receipt's words say whether a
    /// delete marker keeps the version; the gates count states and
    /// approvals granted under a newer hold.
    #[test]
    fn receipts_need_this_runs_grant_and_the_gates_count() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 10)], None);
        let mut l = verified(&p);
        let (a, _) = l.approve(&p, &live(None), T).unwrap();
        assert!(a.granted);
        l.record(
            vec![
                receipt("data/a.parquet", true),
                receipt("data/b.parquet", false),
            ],
            T,
        )
        .unwrap();
        assert!(
            l.objects["data/a.parquet"]
                .why
                .contains("delete marker m-1"),
            "{}",
            l.objects["data/a.parquet"].why
        );
        assert!(
            l.objects["data/b.parquet"]
                .why
                .contains("the store confirmed"),
            "{}",
            l.objects["data/b.parquet"].why
        );
        let g = l.gates();
        assert_eq!(g.states["DELETED"], 2, "{g:?}");
        assert_eq!(g.approvals_after_newer_hold, 0);
        // The next run's approval is refused: its receipts are not taken.
        l.begin_step(&p, T).unwrap();
        let mut moved = live(None);
        moved.metadata_location = "s3://b/t/metadata/v4.metadata.json".into();
        let (a, _) = l.approve(&p, &moved, T).unwrap();
        assert!(!a.granted);
        assert!(l.record(vec![receipt("data/a.parquet", false)], T).is_err());
        // A granted approval whose live hold generation was newer: counted.
        let mut bad = l.approvals[0].clone();
        bad.live_hold_generation = bad.hold_generation + 1;
        l.approvals.push(bad.clone());
        l.approvals.push(bad.clone());
        let mut older = bad;
        older.live_hold_generation = 0;
        older.hold_generation = 1;
        l.approvals.push(older);
        assert_eq!(l.gates().approvals_after_newer_hold, 2);
    }

    /// A newer ledger schema asks for an upgrade; anything else is not a
    /// ledger at all; both are refused, with the reason that applies.
    #[test]
    fn other_schemas_are_refused_with_their_own_reason() {
        let e = Ledger::parse(r#"{"schema":"lakesweep.ledger.v9"}"#).unwrap_err();
        assert!(e.to_string().contains("newer"), "{e}");
        let e = Ledger::parse(r#"{"schema":"lakesweep.plan.v1"}"#).unwrap_err();
        assert!(e.to_string().contains("not a lakesweep ledger"), "{e}");
        let e = Ledger::parse(r#"{"objects":{}}"#).unwrap_err();
        assert!(e.to_string().contains("not a lakesweep ledger"), "{e}");
    }

    #[test]
    fn an_object_changed_after_its_pin_is_protected_and_starts_over() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        for _ in 0..3 {
            l.begin_step(&p, T).unwrap();
        }
        assert_eq!(l.objects["data/a.parquet"].state, ObjectState::Quarantined);
        let rewritten = sealed(&[("data/a.parquet", 11)], None);
        l.begin_step(&rewritten, T).unwrap();
        let o = &l.objects["data/a.parquet"];
        assert_eq!(o.state, ObjectState::Protected);
        assert!(o.why.contains("changed since it was pinned"), "{}", o.why);
        assert_eq!(o.version.size, 11, "the new version is the one pinned now");
    }

    /// Approval re-checks each key against the plan it approves: a plan
    /// naming another version of a verified key (a host that began with one
    /// plan and approves with another) approves nothing for that key.
    #[test]
    fn approval_needs_the_verified_version_in_the_plan_it_approves() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 10)], None);
        let mut l = verified(&p);
        let other = sealed(&[("data/a.parquet", 11), ("data/b.parquet", 10)], None);
        let (a, _) = l.approve(&other, &live(None), T).unwrap();
        assert!(a.granted, "{a:?}");
        assert_eq!(a.keys, ["data/b.parquet"]);
    }

    /// A live hold covering a key denies it even when the plan lists it
    /// (a hand-built or stale plan): the other keys are approved.
    #[test]
    fn approval_skips_keys_a_live_hold_covers() {
        let held = r#"{"holds":[{"scope":{"pathPrefix":"data/held/"},"generation":1}]}"#;
        let p = sealed(
            &[("data/a.parquet", 10), ("data/held/b.parquet", 10)],
            Some(held),
        );
        let mut l = verified(&p);
        let (a, _) = l.approve(&p, &live(Some(held)), T).unwrap();
        assert!(a.granted, "{a:?}");
        assert_eq!(a.keys, ["data/a.parquet"]);
        assert_eq!(
            l.objects["data/held/b.parquet"].state,
            ObjectState::RestoreVerified
        );
    }

    /// A ledger sealed before receipts named delete markers must still
    /// open: an absent marker id is not written, so the digest holds.
    #[test]
    fn receipts_without_a_marker_id_keep_their_old_form() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.receipts.push(Receipt {
            key: "data/a.parquet".into(),
            result: DeleteResult::Deleted,
            version: None,
            requested_ms: T,
            confirmed_ms: Some(T),
            delete_marker: false,
            delete_marker_version_id: None,
            detail: None,
        });
        let text = l.to_json();
        assert!(!text.contains("delete_marker_version_id"), "{text}");
        assert!(!text.contains("drills"), "{text}");
        assert_eq!(Ledger::parse(&text).unwrap().receipts, l.receipts);
    }

    #[test]
    fn a_drill_is_recorded_for_its_own_table_only() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        let results: BTreeMap<String, Option<String>> = [("q-1".to_owned(), None)].into();
        assert!(l
            .record_drill("s3://b/other", 1, 1, results.clone(), T)
            .is_err());
        assert!(l.drills.is_empty());
        let d = l.record_drill("s3a://b/t/", 1, 1, results, T).unwrap();
        assert!(d.passed);
        assert_eq!(l.drills.len(), 1);
    }

    /// The drill's age is judged by the host's clock: a plan judged in the
    /// past cannot make an old drill look recent.
    #[test]
    fn the_drill_gate_ages_drills_by_the_clock_not_the_plan() {
        const DAY: i64 = 86_400_000;
        let mut p = sealed(&[("data/a.parquet", 10)], None);
        p.tokens.restore_drill = Some(crate::policy::DrillGate {
            min_bundles: 1,
            max_age_ms: 7 * DAY,
        });
        p.digest = p.compute_digest();
        let mut l = verified(&p);
        let results: BTreeMap<String, Option<String>> = [("q-1".to_owned(), None)].into();
        l.record_drill("s3://b/t", 1, 1, results, T).unwrap();
        let mut later = live(None);
        later.clock_ms = Some(T + 30 * DAY);
        later.allow_future_now = true;
        let (a, _) = l.approve(&p, &later, T).unwrap();
        assert!(!a.granted);
        assert!(
            a.differences.iter().any(|d| d.contains("restore drill")),
            "{a:?}"
        );
        let (a, _) = l.approve(&p, &live(None), T).unwrap();
        assert!(a.granted, "{a:?}");
        // `apply`'s acceptance has no ledger: such a plan is refused there.
        let facts = crate::acceptance::LiveFacts {
            metadata_location: p.tokens.metadata_location.clone(),
            head: None,
            context: None,
            clock_ms: T,
            allow_future_now: false,
        };
        let acc = crate::acceptance::accept(&p, &facts).unwrap();
        assert!(!acc.granted);
        assert!(
            acc.differences.iter().any(|d| d.contains("`sweep`")),
            "{acc:?}"
        );
        // A sweep's batches are accepted against its ledger's drills.
        assert!(l.accept_batch(&p, &facts).unwrap().granted);
        let late = crate::acceptance::LiveFacts {
            clock_ms: T + 30 * DAY,
            allow_future_now: true,
            ..facts
        };
        let acc = l.accept_batch(&p, &late).unwrap();
        assert!(!acc.granted && acc.differences.iter().any(|d| d.contains("restore drill")));
    }

    #[test]
    fn etags_match_with_or_without_quotes() {
        let v = |e: &str| ObjectVersion {
            size: 1,
            last_modified_ms: 0,
            etag: Some(e.into()),
            version_id: None,
        };
        assert!(v("\"0x8D\"").matches(&v("0x8D")));
        assert!(v("0x8D").matches(&v("\"0x8D\"")));
        assert!(!v("\"0x8D\"").matches(&v("\"0x8E\"")));
        assert!(!v("W/\"a\"").matches(&v("\"a\"")));
    }

    #[test]
    fn the_drill_gate_needs_a_recent_passed_drill_of_enough_bundles() {
        const DAY: i64 = 86_400_000;
        let gate = DrillGate {
            min_bundles: 3,
            max_age_ms: 7 * DAY,
        };
        let now = 100 * DAY;
        let met = |d: Drill| ledger_with(d).drill_missing(&gate, now).is_none();
        assert!(met(drill(now - DAY, 3, 10, true)));
        assert!(met(drill(now - 7 * DAY, 3, 10, true)), "exactly max age");
        assert!(!met(drill(now - 7 * DAY - 1, 3, 10, true)), "too old");
        assert!(!met(drill(now + 1, 3, 10, true)), "dated after now");
        assert!(!met(drill(now - DAY, 2, 10, true)), "too few bundles");
        assert!(
            met(drill(now - DAY, 2, 2, true)),
            "every bundle the table had"
        );
        assert!(met(drill(now - DAY, 0, 0, true)), "nothing to restore");
        assert!(
            !met(drill(now - DAY, 0, 5, true)),
            "a drill of none of five"
        );
        assert!(!met(drill(now - DAY, 3, 10, false)), "failed");
    }
}
