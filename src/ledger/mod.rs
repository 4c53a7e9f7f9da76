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

//!
//! Files: `state` (the states and their transitions), `wire` (what crosses
//! to and from the host: moves, probes, observations, live state,
//! receipts, approvals), `steps` (one run's steps), `drill` (restore
//! drills), `gates` (the run report's gates), `outlook` (what each state
//! waits for, and until when), `legacy` (ledgers of earlier schemas).

mod drill;
mod freshness;
mod gates;
mod legacy;
mod outlook;
mod state;
mod steps;
mod wire;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::error::ProtocolReason;
use crate::error::{Error, Result, UnsafeReason};
use crate::plan::{PlannedDelete, SealedPlan};

pub(crate) use drill::drill_missing;
pub use drill::{drill_sample, Drill};
pub use freshness::{freshness, Freshness};

pub use gates::Gates;
pub use outlook::Waiting;
use state::state_name;
pub use state::ObjectState;
pub use steps::quarantine_root;
pub use wire::{
    Approval, Damage, DeleteResult, LedgerObject, LiveState, Move, Observation, Probe,
    ProbePurpose, Receipt,
};

/// Schema name of ledger documents.
pub const LEDGER_SCHEMA: &str = "lakesweep.ledger.v3";

pub use crate::version::ObjectVersion;

/// The version a planned delete pins.
pub(crate) fn version_of(d: &PlannedDelete) -> ObjectVersion {
    ObjectVersion {
        size: d.size,
        last_modified_ms: d.last_modified_ms,
        etag: d.etag.clone(),
        version_id: d.version_id.clone(),
    }
}

/// The ledger document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    /// Always [`LEDGER_SCHEMA`].
    pub schema: String,
    /// Canonical table location.
    #[serde(alias = "table_location")]
    pub table_location: String,
    /// The table's UUID (Iceberg) or id (Delta), when known.
    #[serde(alias = "table_uuid")]
    pub table_uuid: Option<String>,
    /// Incremented by every step.
    pub revision: u64,
    /// Quarantine interval, milliseconds.
    #[serde(alias = "quarantine_ms")]
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
    #[serde(alias = "unknown_ever")]
    pub unknown_ever: Vec<String>,
    /// Every restore drill recorded, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drills: Vec<Drill>,
    /// When the last sweep or reconcile step began, ms since the epoch (the
    /// step's time): how an operator sees a sweep that stopped running.
    /// Absent from ledgers saved before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_step_ms: Option<i64>,
    /// Keys it deleted that the table references now (see [`Damage`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<Damage>,
    /// The integrity digest of the ledger this one was made from (each step
    /// chains to the one before; `None` for a new ledger).
    #[serde(default)]
    #[serde(alias = "previous_integrity")]
    pub previous_integrity: Option<String>,
    /// SHA-256 (hex) over the previous digest and this ledger's content: a
    /// ledger edited by hand (a shorter quarantine, a state moved on) no
    /// longer matches and is refused.
    #[serde(default)]
    pub integrity: String,
}

/// How long (ms) an object waits in quarantine when the host names no
/// interval: one day, long enough for a reader that still holds an old
/// snapshot to fail loudly on the quarantined copy before it goes.
pub const DEFAULT_QUARANTINE_MS: i64 = 86_400_000;

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
            last_step_ms: None,
            damage: Vec::new(),
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
        let v2 = match v.get("schema").and_then(|s| s.as_str()) {
            Some(LEDGER_SCHEMA) => false,
            Some(legacy::LEDGER_V2) => true,
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
        };
        let mut l: Ledger = serde_json::from_value(v)
            .map_err(|e| Error::invalid("ledger", format!("damaged: {e}")))?;
        let expected = if v2 {
            // Sealed over its snake_case bytes: checked over them, then
            // carried on (and saved next) as the current schema.
            l.schema = LEDGER_SCHEMA.into();
            legacy::integrity_v2(text, l.previous_integrity.as_deref())
        } else {
            Some(l.compute_integrity())
        };
        if expected.as_deref() != Some(l.integrity.as_str()) {
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

    /// Keys the ledger deleted, or may have (approved, deleted, unknown,
    /// verified): a quarantine bundle counts them as consumed, not lost.
    pub fn consumed_keys(&self) -> Vec<String> {
        use ObjectState::*;
        self.objects
            .iter()
            .filter(|(_, o)| matches!(o.state, DeleteApproved | Deleted | DeleteUnknown | Verified))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The index of every key the ledger deleted or may have (approved,
    /// deleted, unknown, verified), for the planning session of its next
    /// run ([`crate::SessionConfig::deleted_index`]): a key of it the table
    /// references and the listing lacks is damage.
    pub fn deleted_index(&self) -> Vec<u8> {
        crate::reach::encode_key_index(
            self.consumed_keys()
                .iter()
                .map(|k| crate::reach::fingerprint(k)),
        )
    }

    /// Damage not resolved yet.
    pub fn open_damage(&self) -> impl Iterator<Item = &Damage> {
        self.damage.iter().filter(|d| d.resolved_ms.is_none())
    }

    /// Records damage of `key` (deleted as `version`), unless it is open
    /// already.
    pub(crate) fn note_damage(
        &mut self,
        key: &str,
        version: ObjectVersion,
        now_ms: i64,
        why: String,
    ) {
        if self.open_damage().any(|d| d.key == key) {
            return;
        }
        self.damage.push(Damage {
            key: key.to_owned(),
            version,
            found_ms: now_ms,
            why,
            resolved_ms: None,
        });
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
                return Err(Error::protocol(
                    ProtocolReason::OutOfOrder,
                    format!(
                        "ledger: `{key}` cannot move from {} to {}",
                        state_name(f),
                        state_name(to)
                    ),
                ));
            }
        } else if to != ObjectState::Discovered {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!("ledger: `{key}` enters the ledger as {}", state_name(to)),
            ));
        }
        let version = match (version, self.objects.get(key)) {
            (Some(v), _) => v,
            (None, Some(o)) => o.version.clone(),
            (None, None) => {
                return Err(Error::protocol(
                    ProtocolReason::OutOfOrder,
                    format!("ledger: no version for `{key}`"),
                ))
            }
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
            last_step_ms: None,
            damage: vec![],
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

    /// `p` as a plan checked against `l`'s deleted keys (as a sweep makes it).
    fn checked(p: &SealedPlan, l: &Ledger) -> SealedPlan {
        let mut p = p.clone();
        p.tokens.deleted_index = Some(hex(&Sha256::digest(l.deleted_index())));
        p.digest = p.compute_digest();
        p
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
            let again = checked(&sealed(&[("data/a.parquet", size)], None), &l);
            l.begin_step(&again, T).unwrap();
            let o = &l.objects["data/a.parquet"];
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
            m.objects.get_mut("data/a.parquet").unwrap().state = *s;
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
