//! The run report's gates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{state_name, DeleteResult, Ledger, ObjectState};

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
            damaged: self.open_damage().count() as u64,

            states,
        }
    }
}
