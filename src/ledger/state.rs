//! Where an object stands, and the moves between states.

use serde::{Deserialize, Serialize};

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
    /// Every state, in lifecycle order.
    pub const ALL: [ObjectState; 9] = [
        ObjectState::Protected,
        ObjectState::Discovered,
        ObjectState::UnreferencedEligible,
        ObjectState::Quarantined,
        ObjectState::RestoreVerified,
        ObjectState::DeleteApproved,
        ObjectState::Deleted,
        ObjectState::Verified,
        ObjectState::DeleteUnknown,
    ];

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
                | (RestoreVerified, Quarantined)
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

pub(super) fn state_name(s: ObjectState) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
