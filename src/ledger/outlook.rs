//! What a ledger waits for: per state, how many objects and from when
//! their next step is possible, so a run that moved nothing can say why
//! and when the next one will.

use serde::{Deserialize, Serialize};

use super::{Ledger, ObjectState};

/// Objects of one state and when their next step becomes possible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    /// The state.
    pub state: ObjectState,
    /// How many objects are in it.
    pub count: u64,
    /// The earliest time one of them can take its next step, ms since the
    /// epoch: the end of its quarantine. For states whose next step needs
    /// only another run (and a plan that still lists the object as a
    /// candidate, or an approval), the time given (`now`).
    pub earliest_ms: i64,
    /// What the next step is, and what it needs.
    pub next: String,
}

impl Ledger {
    /// Per state that has a next step (not `PROTECTED`, not `VERIFIED`), in
    /// lifecycle order: the objects waiting and when the first of them can
    /// move, judged at `now_ms`.
    pub fn outlook(&self, now_ms: i64) -> Vec<Waiting> {
        use ObjectState::*;
        let next = |s: ObjectState| -> Option<&'static str> {
            Some(match s {
                Discovered => "still a candidate in the next run's plan: eligible",
                UnreferencedEligible => "still a candidate in the next run's plan: its version is pinned and quarantine begins",
                Quarantined => "quarantine over and the pinned version still there: restore verified",
                RestoreVerified => "approved against the live table in the next run, then deleted",
                DeleteApproved => "an interrupted delete: settled by HEAD in the next run",
                Deleted => "a HEAD in the next run confirms it gone (then it is archived)",
                DeleteUnknown => "settled by HEAD in the next run (reconcile)",
                Protected | Verified => return None,
            })
        };
        // One pass: per state, how many and the earliest.
        let mut seen: std::collections::BTreeMap<ObjectState, (u64, i64)> = Default::default();
        for (_, o) in self.objects.iter() {
            let at = match o.state {
                Quarantined => o.since_ms.saturating_add(self.quarantine_ms).max(now_ms),
                _ => now_ms,
            };
            let s = seen.entry(o.state).or_insert((0, i64::MAX));
            s.0 += 1;
            s.1 = s.1.min(at);
        }
        let mut out = Vec::new();
        for state in ObjectState::ALL {
            let Some(what) = next(state) else { continue };
            if let Some((count, earliest)) = seen.get(&state) {
                out.push(Waiting {
                    state,
                    count: *count,
                    earliest_ms: *earliest,
                    next: what.into(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::ObjectVersion;

    #[test]
    fn quarantine_waits_for_its_end_and_other_steps_for_the_next_run() {
        let plan = crate::plan::plan_for_tests(&[], None);
        let mut l = Ledger::new(&plan, 1000).unwrap();
        let object = |state, since_ms| crate::ledger::objects::Entry {
            state,
            version: ObjectVersion {
                size: 1,
                last_modified_ms: 0,
                etag: None,
                version_id: None,
            },
            since_ms,
            since_revision: 1,
            why: 0,
            unknown_once: false,
            probe: None,
            approved_in: 0,
            receipt: None,
        };
        use ObjectState::*;
        for (key, state, since) in [
            ("a", Quarantined, 500),
            ("b", Quarantined, 200),
            ("c", Discovered, 0),
            ("d", Verified, 0),
            ("e", Protected, 0),
            ("f", RestoreVerified, 100),
        ] {
            l.objects.merge(vec![(key.into(), object(state, since))]);
        }
        let w = l.outlook(600);
        let got: Vec<(ObjectState, u64, i64)> = w
            .iter()
            .map(|w| (w.state, w.count, w.earliest_ms))
            .collect();
        assert_eq!(
            got,
            [
                (Discovered, 1, 600),
                (Quarantined, 2, 1200),
                (RestoreVerified, 1, 600)
            ]
        );
        // Once a quarantine is over, its step is possible now.
        assert_eq!(l.outlook(5000)[1].earliest_ms, 5000);
        assert!(Ledger::new(&plan, 1000).unwrap().outlook(0).is_empty());
    }
}
