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
//! The ledger is stored by the host (by default under the table's hidden
//! `_lakesweep/` prefix, which no sweep deletes) as a small head document
//! and files beside it (see [`files`]): its cost follows the objects in
//! flight, not the table's history. An object that reaches `VERIFIED` is
//! folded, when the ledger is next saved, into a summary (counts, bytes,
//! the fingerprint of its key) and an archive file with its receipt.
//!
//! ## Calling contract
//!
//! ```text
//! Ledger::parse(head) | Ledger::create(plan, ..)
//! while let Some(name) = next_read() { handle_read(name, bytes) | handle_missing(name) }
//! begin_step(plan, now) | reconcile_step(now)          one step per run
//! while let Some(name) = next_read() { .. }            archives, when damage must be named
//! next_probes(max) -> HEAD each -> observe(answers)     until no probe is left
//! approve(plan, live, now); Deletion::for_ledger(..)  -> record_receipts(..)*; finish_recording(now)
//! while let Some(file) = next_write() { store it }     the head last; then obsolete()
//! ```
//!
//! Every function is pure: `now` is an input, and the host does every
//! read, HEAD, DELETE and write and reports what the store answered. The
//! core loads, advances and returns the ledger; it refuses a ledger of
//! another table or of a newer schema, and any file that is not the one
//! its head names.

mod damage;
mod drill;
pub mod files;
mod freshness;
mod gates;
mod halts;
mod legacy;
mod objects;
mod outlook;
mod recovery;
mod rollout;
mod state;
mod steps;
mod store;
mod wire;

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::error::ProtocolReason;
use crate::error::{Error, Result, UnsafeReason};
use crate::plan::{PlannedDelete, SealedPlan};

use damage::{damage_fingerprint, Lookup};
pub(crate) use drill::drill_missing;
pub use drill::{drill_sample, Drill};
pub use files::{ArchiveRef, ArchivedObject, FileRef, LedgerFile};
pub use freshness::{freshness, Freshness};
use objects::{Entry, Objects, Whys};
pub use store::AuditReport;
use store::{Read, Save};

pub use gates::Gates;
pub use halts::HaltSeen;
pub use outlook::Waiting;
pub use recovery::{FullDrill, RestoreRun, DEFAULT_FULL_DRILL_EVERY_MS};
pub use rollout::{Gate, ModeDecision, ModeMove, Rollout, GATE_FRESHNESS_MS, MAX_COMPARISONS};
use state::state_name;
pub use state::ObjectState;
pub use steps::{quarantine_root, QuarantineRoot};
pub use wire::{
    Approval, Damage, DeleteResult, LedgerObject, LiveState, Move, Moves, Observation, Probe,
    ProbePurpose, Receipt, MOVES_PER_STATE,
};

/// Schema name of ledger heads.
pub const LEDGER_SCHEMA: &str = "lakesweep.ledger.v4";

pub use crate::version::ObjectVersion;

/// How long (ms) an object waits in quarantine when the host names no
/// interval: one day, long enough for a reader that still holds an old
/// snapshot to fail loudly on the quarantined copy before it goes.
pub const DEFAULT_QUARANTINE_MS: i64 = 86_400_000;

/// The version a planned delete pins.
pub(crate) fn version_of(d: &PlannedDelete) -> ObjectVersion {
    ObjectVersion {
        size: d.size,
        last_modified_ms: d.last_modified_ms,
        etag: d.etag.clone(),
        version_id: d.version_id.clone(),
    }
}

/// What the ledger has verified deleted, folded: counts, bytes, and the
/// archive files holding each object with its receipt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    /// Objects verified deleted and archived.
    pub objects: u64,
    /// Their bytes (pinned sizes).
    pub bytes: u64,
    /// The archive files, oldest first.
    pub archives: Vec<ArchiveRef>,
}

/// Counters of the ledger's history the gates read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    /// Receipts of deleted objects that no granted approval listed.
    pub deleted_outside_approval: u64,
    /// Objects ever in `DELETE_UNKNOWN`.
    pub unknown_ever: u64,
}

/// A two-phase deletion ledger (see the module's calling contract).
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    table_location: String,
    table_uuid: Option<String>,
    revision: u64,
    quarantine_ms: i64,
    last_step_ms: Option<i64>,
    approvals: Vec<Approval>,
    outside_receipts: Vec<Receipt>,
    drills: Vec<Drill>,
    halts: Vec<HaltSeen>,
    /// Full restore drills into scratch.
    full_drills: Vec<FullDrill>,
    /// The table's rollout over a fleet, if it is in one.
    rollout: Option<Rollout>,
    /// This run's mode, once it entered its fleet (never stored).
    mode_now: Option<ModeDecision>,
    damage: Vec<Damage>,
    audit: Audit,
    verified: Verified,
    /// The files of the head last read or written.
    segments: Vec<FileRef>,
    index_file: Option<FileRef>,
    previous_integrity: Option<String>,
    /// The objects in flight.
    objects: Objects,
    whys: Whys,
    /// Fingerprints of every key verified and folded, ascending.
    verified_fps: Vec<u64>,
    reads: VecDeque<Read>,
    lookups: Vec<Lookup>,
    save: Option<Save>,
    /// The last save's head was handed out: the next `next_write` ends
    /// that save with `None` (and the one after starts a new save).
    head_given: bool,
    obsolete: Vec<String>,
    /// Where [`Ledger::next_probes`] goes on from.
    probe_cursor: usize,
    /// The archives checked by [`Ledger::check_archive`]: name, objects,
    /// bytes.
    checked: BTreeMap<String, (u64, u64)>,
    /// What the checks found wrong.
    problems: Vec<String>,
    /// Why a step failed: the ledger then refuses everything (the stored
    /// one is unchanged; run again).
    failed: Option<Error>,
}

impl Ledger {
    /// A new ledger for `plan`'s table, but only when no earlier one
    /// existed (`prior_ledger`: the host found the mark a saved ledger
    /// leaves beside it) or the operator said `start_new`: a ledger deleted
    /// by mistake must not silently start over. `quarantine_ms` (ms) is how
    /// long an object waits before its restore check; `None` is
    /// [`DEFAULT_QUARANTINE_MS`].
    pub fn create(
        plan: &SealedPlan,
        quarantine_ms: Option<i64>,
        prior_ledger: bool,
        start_new: bool,
    ) -> Result<Ledger> {
        if prior_ledger && !start_new {
            return Err(Error::invalid(
                "ledger",
                "there is no ledger, but one was saved here before (its mark remains): it was deleted or moved. Put it back, or start a new one on purpose (--new-ledger)",
            ));
        }
        Ledger::new(plan, quarantine_ms.unwrap_or(DEFAULT_QUARANTINE_MS))
    }

    /// An empty ledger for the plan's table.
    pub fn new(plan: &SealedPlan, quarantine_ms: i64) -> Result<Ledger> {
        if quarantine_ms < 0 {
            return Err(Error::invalid("quarantine_ms", "must not be negative"));
        }
        Ok(Ledger::empty(
            plan.table_location.clone(),
            plan.table_uuid.clone(),
            quarantine_ms,
        ))
    }

    fn empty(table_location: String, table_uuid: Option<String>, quarantine_ms: i64) -> Ledger {
        Ledger {
            table_location,
            table_uuid,
            revision: 0,
            quarantine_ms,
            last_step_ms: None,
            approvals: Vec::new(),
            outside_receipts: Vec::new(),
            drills: Vec::new(),
            halts: Vec::new(),
            full_drills: Vec::new(),
            rollout: None,
            mode_now: None,
            damage: Vec::new(),
            audit: Audit::default(),
            verified: Verified::default(),
            segments: Vec::new(),
            index_file: None,
            previous_integrity: None,
            objects: Objects::default(),
            whys: Whys::default(),
            verified_fps: Vec::new(),
            reads: VecDeque::new(),
            lookups: Vec::new(),
            save: None,
            head_given: false,
            obsolete: Vec::new(),
            probe_cursor: 0,
            checked: BTreeMap::new(),
            problems: Vec::new(),
            failed: None,
        }
    }

    /// Runs a change of the ledger: a failure leaves it refusing every
    /// change and save after it (with that error), so nothing half done is
    /// ever stored.
    pub(crate) fn guarded<T>(&mut self, f: impl FnOnce(&mut Ledger) -> Result<T>) -> Result<T> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        // Any change after a save's head starts the next save afresh.
        self.head_given = false;
        let r = f(self);
        if let Err(e) = &r {
            self.failed = Some(e.clone());
        }
        r
    }

    /// The table's canonical location.
    pub fn table_location(&self) -> &str {
        &self.table_location
    }

    /// The table's UUID (Iceberg) or id (Delta), when known.
    pub fn table_uuid(&self) -> Option<&str> {
        self.table_uuid.as_deref()
    }

    /// Incremented by every step.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The quarantine interval, ms.
    pub fn quarantine_ms(&self) -> i64 {
        self.quarantine_ms
    }

    /// When the last sweep or reconcile step began, ms since the epoch
    /// (none: never, or a ledger saved before steps were dated).
    pub fn last_step_ms(&self) -> Option<i64> {
        self.last_step_ms
    }

    /// Every approval asked for, granted or not, oldest first.
    pub fn approvals(&self) -> &[Approval] {
        &self.approvals
    }

    /// Every restore drill recorded, oldest first.
    pub fn drills(&self) -> &[Drill] {
        &self.drills
    }

    /// Every damage record, open or resolved.
    pub fn damage(&self) -> &[Damage] {
        &self.damage
    }

    /// What it verified deleted and folded.
    pub fn verified(&self) -> &Verified {
        &self.verified
    }

    /// Receipts of keys no granted approval of their run listed (kept for
    /// the audit; the gates count the deleted ones).
    pub fn outside_receipts(&self) -> &[Receipt] {
        &self.outside_receipts
    }

    /// How many objects are in flight (every state but a folded
    /// `VERIFIED`).
    pub fn in_flight(&self) -> u64 {
        self.objects.len() as u64
    }

    /// The object at `key` in flight, or `None`.
    pub fn object(&self, key: &str) -> Option<LedgerObject> {
        self.objects.get(key).map(|e| self.view(e))
    }

    /// The state of `key`: in flight, or `VERIFIED` when a verified delete
    /// of it was folded (and it is not in flight again).
    pub fn state_of(&self, key: &str) -> Option<ObjectState> {
        self.objects.get(key).map(|e| e.state).or_else(|| {
            self.verified_fps
                .binary_search(&crate::reach::fingerprint(key))
                .ok()
                .map(|_| ObjectState::Verified)
        })
    }

    /// Objects in flight, in key order: `count` of them from the `start`th.
    pub fn objects(&self, start: u64, count: u32) -> Vec<(String, LedgerObject)> {
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        (start..start.saturating_add(count as usize))
            .map_while(|i| self.objects.at(i))
            .map(|(k, e)| (k.to_owned(), self.view(e)))
            .collect()
    }

    fn view(&self, e: &Entry) -> LedgerObject {
        LedgerObject {
            state: e.state,
            version: e.version.clone(),
            since_ms: e.since_ms,
            since_revision: e.since_revision,
            why: self.whys.text(e.why).to_owned(),
            receipt: e.receipt.as_deref().cloned(),
        }
    }

    /// Whether each of `keys` is consumed: deleted by this ledger or maybe
    /// (approved, deleted, unknown, verified). A quarantine bundle counts
    /// them as consumed, not lost.
    pub fn consumed(&self, keys: &[String]) -> Vec<bool> {
        keys.iter()
            .map(|k| match self.objects.get(k) {
                Some(e) => consumed_state(e.state),
                None => self
                    .verified_fps
                    .binary_search(&crate::reach::fingerprint(k))
                    .is_ok(),
            })
            .collect()
    }

    /// The in-flight keys the ledger deleted or may have (approved,
    /// deleted, unknown, verified and not yet folded), sorted.
    pub fn consumed_keys(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|(_, e)| consumed_state(e.state))
            .map(|(k, _)| k.to_owned())
            .collect()
    }

    /// The index of every key the ledger deleted or may have (in flight,
    /// and folded), for the planning session of its next run
    /// ([`crate::SessionConfig::deleted_index`]): a key of it the table
    /// references and the listing lacks is damage.
    pub fn deleted_index(&self) -> Vec<u8> {
        let in_flight = self
            .objects
            .iter()
            .filter(|(_, e)| consumed_state(e.state))
            .map(|(k, _)| crate::reach::fingerprint(k));
        crate::reach::encode_key_index(self.verified_fps.iter().copied().chain(in_flight))
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

    /// Moves the `i`th object in flight to `to` (its pinned version
    /// replaced by `version` when given), for reason `why`.
    fn move_at(
        &mut self,
        i: usize,
        to: ObjectState,
        version: Option<ObjectVersion>,
        now: i64,
        why: u32,
        moves: &mut Moves,
    ) -> Result<()> {
        let revision = self.revision;
        let Some((key, e)) = self.objects.at_mut(i) else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "ledger: a move of no object",
            ));
        };
        let from = e.state;
        if !from.can_move_to(to) {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!(
                    "ledger: `{key}` cannot move from {} to {}",
                    state_name(from),
                    state_name(to)
                ),
            ));
        }
        if to == ObjectState::DeleteUnknown && !e.unknown_once {
            e.unknown_once = true;
            self.audit.unknown_ever += 1;
        }
        if let Some(v) = version {
            e.version = v;
        }
        e.state = to;
        e.since_ms = now;
        e.since_revision = revision;
        e.why = why;
        if !matches!(
            to,
            ObjectState::Deleted | ObjectState::DeleteUnknown | ObjectState::Verified
        ) {
            e.receipt = None;
        }
        let key = key.to_owned();
        let whys = &self.whys;
        moves.note(to, || Move {
            key,
            from: Some(from),
            to,
            at_ms: now,
            why: whys.text(why).to_owned(),
        });
        Ok(())
    }

    /// [`Ledger::move_at`] by key.
    fn set(
        &mut self,
        key: &str,
        to: ObjectState,
        version: Option<ObjectVersion>,
        now: i64,
        why: &str,
        moves: &mut Moves,
    ) -> Result<()> {
        let Some(i) = self.objects.position(key).ok() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!("ledger: `{key}` is not in the ledger"),
            ));
        };
        let why = self.whys.intern(why);
        self.move_at(i, to, version, now, why, moves)
    }

    /// Sets `key`'s state directly (tests of single transitions).
    #[cfg(test)]
    fn force_state(&mut self, key: &str, state: ObjectState) {
        if let Some(e) = self.objects.get_mut(key) {
            e.state = state;
        }
    }
}

/// Every change of a ledger goes through [`Ledger::guarded`]: a failure
/// leaves it refusing everything after.
impl Ledger {
    /// Starts a run: folds a fresh plan into the ledger (at most one step per
    /// object) and marks the HEADs the host must make
    /// ([`Ledger::next_probes`]). Damage the plan found that only an archive
    /// can name is looked up there ([`Ledger::next_read`]). Fails for
    /// another table's plan, or one not checked against
    /// [`Ledger::deleted_index`].
    pub fn begin_step(&mut self, plan: &SealedPlan, now_ms: i64) -> Result<Moves> {
        self.guarded(|l| l.begin_step_unguarded(plan, now_ms))
    }

    /// Starts a recovery run (`reconcile`): every delete whose outcome is not
    /// confirmed is settled by HEAD. An approval left without receipts (the
    /// run died mid-delete) becomes `DELETE_UNKNOWN` first. Marks the HEADs
    /// the host must make; nothing is approved or deleted.
    pub fn reconcile_step(&mut self, now_ms: i64) -> Result<Moves> {
        self.guarded(|l| l.reconcile_step_unguarded(now_ms))
    }

    /// Applies the store's answers to this run's probes. Fails (protocol)
    /// for an answer about a key no state asked a HEAD of.
    pub fn observe(&mut self, observations: &[Observation], now_ms: i64) -> Result<Moves> {
        self.guarded(|l| l.observe_unguarded(observations, now_ms))
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
    ) -> Result<(Approval, Moves)> {
        self.guarded(|l| l.approve_unguarded(plan, live, now_ms))
    }

    /// Records receipts of this run's deletes as they come (any number of
    /// calls, then [`Ledger::finish_recording`]). A receipt of a key this
    /// run did not approve is kept for the audit (the gates count a delete
    /// among them), never folded into a state; a `damaged` one records the
    /// damage. Fails (unsafe: table-changing) for receipts when this run
    /// has no granted approval.
    pub fn record_receipts(&mut self, receipts: &[Receipt], now_ms: i64) -> Result<Moves> {
        self.guarded(|l| l.record_receipts_unguarded(receipts, now_ms))
    }

    /// Ends this run's recording: an approved key without a receipt is
    /// `DELETE_UNKNOWN`, never "deleted".
    pub fn finish_recording(&mut self, now_ms: i64) -> Result<Moves> {
        self.guarded(|l| l.finish_recording_unguarded(now_ms))
    }

    /// Takes the file [`Ledger::next_read`] named. Fails (invalid options)
    /// for another file than the one asked for, or one that is not the one
    /// the head recorded (edited, truncated, out of order).
    pub fn handle_read(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.guarded(|l| l.handle_read_unguarded(name, bytes))
    }

    /// Answers [`Ledger::next_read`]: the file is not there. An object file
    /// or the index missing refuses the ledger; an archive missing leaves
    /// the damage it was read for named by its fingerprint only.
    pub fn handle_missing(&mut self, name: &str) -> Result<()> {
        self.guarded(|l| l.handle_missing_unguarded(name))
    }

    /// The next file to store, the head last (its `name` empty): call until
    /// none. Verified objects are folded into archives on the first call.
    /// Write each file of the folder before the next (a file already there
    /// under the same name holds the same bytes); write the head only when
    /// every one before it was written. Then [`Ledger::obsolete`] names
    /// the files the new head no longer needs.
    pub fn next_write(&mut self) -> Result<Option<LedgerFile>> {
        if std::mem::take(&mut self.head_given) {
            return match &self.failed {
                Some(e) => Err(e.clone()),
                None => Ok(None),
            };
        }
        self.guarded(|l| l.next_write_unguarded())
    }
}

/// Whether an object in `state` was deleted, or may have been.
fn consumed_state(state: ObjectState) -> bool {
    use ObjectState::*;
    matches!(state, DeleteApproved | Deleted | DeleteUnknown | Verified)
}

fn short(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).chars().take(64).collect()
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
        let mut l = Ledger::empty("s3://b/t".into(), None, 0);
        l.revision = 1;
        l.drills.push(drill);
        l
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

    pub(super) const T: i64 = 1_000_000;

    /// A plan over `s3://b/t` deleting `keys` (key, size), made under `context`.
    pub(super) fn sealed(keys: &[(&str, u64)], context: Option<&str>) -> SealedPlan {
        crate::plan::plan_for_tests(keys, context)
    }

    /// `p` as a plan checked against `l`'s deleted keys (as a sweep makes it).
    pub(super) fn checked(p: &SealedPlan, l: &Ledger) -> SealedPlan {
        let mut p = p.clone();
        p.tokens.deleted_index = Some(hex(&Sha256::digest(l.deleted_index())));
        p.digest = p.compute_digest();
        p
    }

    pub(super) fn live(context: Option<&str>) -> LiveState {
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
    pub(super) fn verified(p: &SealedPlan) -> Ledger {
        let mut l = Ledger::new(p, 0).unwrap();
        for _ in 0..3 {
            l.begin_step(p, T).unwrap();
        }
        l.begin_step(p, T).unwrap();
        let obs: Vec<Observation> = l
            .probes()
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
            assert_eq!(l.state_of(&d.key), Some(ObjectState::RestoreVerified));
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
        let all = ObjectState::ALL;
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
        assert!(l
            .set(
                "data/a.parquet",
                DeleteApproved,
                None,
                T,
                "skip",
                &mut Moves::default()
            )
            .is_err());
        assert_eq!(l.state_of("data/a.parquet"), Some(Discovered));
    }

    /// Deleted and verified, then listed again (the same version put back,
    /// or a new object at the key): it starts over from DISCOVERED.
    #[test]
    fn a_key_listed_again_after_a_verified_delete_starts_over() {
        for size in [10, 11] {
            let p = sealed(&[("data/a.parquet", 10)], None);
            let mut l = verified(&p);
            l.force_state("data/a.parquet", ObjectState::Verified);
            let again = checked(&sealed(&[("data/a.parquet", size)], None), &l);
            l.begin_step(&again, T).unwrap();
            let o = l.object("data/a.parquet").unwrap();
            assert_eq!(o.state, ObjectState::Discovered, "size {size}");
            assert!(o.why.contains("starting over"), "{}", o.why);
            assert_eq!(o.version.size, size);
        }
    }

    /// Approved, deleted, unknown and verified keys are consumed (a bundle
    /// must not wait for them); every other state is not.
    #[test]
    fn consumed_keys_are_those_a_delete_was_approved_for() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 10)], None);
        let mut l = verified(&p);
        assert!(
            l.consumed_keys().is_empty(),
            "restore-verified is not consumed"
        );
        let (a, _) = l.approve(&p, &live(None), T).unwrap();
        assert!(a.granted);
        assert_eq!(l.consumed_keys(), vec!["data/a.parquet", "data/b.parquet"]);
        for (state, consumed) in ObjectState::ALL.iter().map(|s| {
            let mut m = l.clone();
            m.force_state("data/a.parquet", *s);
            (*s, m.consumed_keys().contains(&"data/a.parquet".to_owned()))
        }) {
            use ObjectState::*;
            let want = matches!(state, DeleteApproved | Deleted | DeleteUnknown | Verified);
            assert_eq!(consumed, want, "{state:?}");
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
        l.force_state("data/b.parquet", ObjectState::Deleted);
        let rev = l.revision;
        let moves = l.reconcile_step(T).unwrap();
        let probes = l.probes();
        assert_eq!(l.revision, rev + 1);
        assert_eq!(
            l.state_of("data/a.parquet"),
            Some(ObjectState::DeleteUnknown)
        );
        assert_eq!(moves.total(), 1, "{moves:?}");
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
        let moves = l.reconcile_step(T).unwrap();
        let probes = l.probes();
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
            l.force_state("data/a.parquet", s);
            l
        };
        // Quarantined, its bundle incomplete: waits, and says why.
        let mut l = state(ObjectState::Quarantined);
        l.observe(&[ob(Some(&pinned), Some("bundle q-1 is incomplete"))], T)
            .unwrap();
        let o = l.object("data/a.parquet").unwrap();
        assert_eq!(o.state, ObjectState::Quarantined);
        assert!(o.why.contains("bundle q-1 is incomplete"), "{}", o.why);
        // Deleted, and another object now has the key: ours is gone.
        let mut l = state(ObjectState::Deleted);
        l.observe(&[ob(Some(&other), None)], T).unwrap();
        assert_eq!(l.state_of("data/a.parquet").unwrap(), ObjectState::Verified);
        // Deleted, and the pinned version is back: protected.
        let mut l = state(ObjectState::Deleted);
        l.observe(&[ob(Some(&pinned), None)], T).unwrap();
        assert_eq!(
            l.state_of("data/a.parquet").unwrap(),
            ObjectState::Protected
        );
        // Unknown outcome, another object at the key: protected.
        let mut l = state(ObjectState::DeleteUnknown);
        l.observe(&[ob(Some(&other), None)], T).unwrap();
        assert_eq!(
            l.state_of("data/a.parquet").unwrap(),
            ObjectState::Protected
        );
        // Unknown outcome, the pinned version intact: retried later.
        let mut l = state(ObjectState::DeleteUnknown);
        l.observe(&[ob(Some(&pinned), None)], T).unwrap();
        assert_eq!(
            l.state_of("data/a.parquet").unwrap(),
            ObjectState::RestoreVerified
        );
    }

    pub(super) fn receipt(key: &str, marker: bool) -> Receipt {
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
            l.object("data/a.parquet")
                .unwrap()
                .why
                .contains("delete marker m-1"),
            "{}",
            l.object("data/a.parquet").unwrap().why
        );
        assert!(
            l.object("data/b.parquet")
                .unwrap()
                .why
                .contains("the store confirmed"),
            "{}",
            l.object("data/b.parquet").unwrap().why
        );
        let g = l.gates();
        assert_eq!(g.states["DELETED"], 2, "{g:?}");
        assert_eq!(g.approvals_after_newer_hold, 0);
        // The next run's approval is refused: its receipts are not taken.
        let p = checked(&p, &l);
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

    #[test]
    fn an_object_changed_after_its_pin_is_protected_and_starts_over() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        for _ in 0..3 {
            l.begin_step(&p, T).unwrap();
        }
        assert_eq!(
            l.state_of("data/a.parquet").unwrap(),
            ObjectState::Quarantined
        );
        let rewritten = sealed(&[("data/a.parquet", 11)], None);
        l.begin_step(&rewritten, T).unwrap();
        let o = l.object("data/a.parquet").unwrap();
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
        assert_eq!(l.approved_keys(), ["data/b.parquet"]);
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
        assert_eq!(l.approved_keys(), ["data/a.parquet"]);
        assert_eq!(
            l.state_of("data/held/b.parquet").unwrap(),
            ObjectState::RestoreVerified
        );
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
