//! The run report's gates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{state_name, Ledger, ObjectState};

/// The run report's gates: each must read 0 (or 100 %) for a clean run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// Keys the ledger deleted that the table references now, not
    /// resolved (see [`super::Damage`]).
    #[serde(default)]
    pub damaged: u64,
    /// Objects per state.
    pub states: BTreeMap<String, u64>,
}

impl Ledger {
    /// The gates of the whole ledger's history: its counters, its approvals
    /// and the objects in flight.
    pub fn gates(&self) -> Gates {
        // Counted per state first (a step at a million objects in flight
        // counts them once per call), named once at the end.
        let mut counts = [0u64; ObjectState::ALL.len()];
        let mut approved_not_deleted = 0u64;
        let mut unknown_now = 0u64;
        for (_, e) in self.objects.iter() {
            if let Some(i) = ObjectState::ALL.iter().position(|s| *s == e.state) {
                counts[i] += 1;
            }
            if matches!(
                e.state,
                ObjectState::DeleteApproved | ObjectState::DeleteUnknown
            ) {
                approved_not_deleted += 1;
            }
            if e.unknown_once && e.state == ObjectState::DeleteUnknown {
                unknown_now += 1;
            }
        }
        let mut states = BTreeMap::new();
        for (s, n) in ObjectState::ALL.iter().zip(counts) {
            if n > 0 {
                states.insert(state_name(*s), n);
            }
        }
        if self.verified.objects > 0 {
            *states.entry(state_name(ObjectState::Verified)).or_insert(0) += self.verified.objects;
        }
        Gates {
            deleted_outside_approval: self.audit.deleted_outside_approval,
            approved_not_deleted,
            approvals_after_newer_hold: self
                .approvals
                .iter()
                .filter(|a| a.granted && a.live_hold_generation > a.hold_generation)
                .count() as u64,
            unknown_total: self.audit.unknown_ever,
            unknown_reconciled: self.audit.unknown_ever.saturating_sub(unknown_now),
            damaged: self.open_damage().count() as u64,
            states,
        }
    }
}
