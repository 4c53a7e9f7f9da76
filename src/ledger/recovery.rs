//! Full restore drills: a bundle restored into a scratch location, timed,
//! with the recovery point it reached, judged against the policy's
//! recovery targets (RTO: how long a restore may take; RPO: how far back
//! its recovery point may lie) and recorded; the gate `status` shows says
//! whether the last one passed and is recent enough.

use serde::{Deserialize, Serialize};

use super::*;

/// How often a full restore drill is due when the policy says nothing: a
/// quarter.
pub const DEFAULT_FULL_DRILL_EVERY_MS: i64 = 92 * 86_400_000;

/// A full restore drill, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FullDrill {
    /// When it started, ms since the epoch (the host's clock).
    pub started_ms: i64,
    /// When the restored table was complete.
    pub finished_ms: i64,
    /// The bundle restored.
    pub bundle_id: String,
    /// The scratch location restored into.
    pub scratch: String,
    /// The restored table's current snapshot.
    pub snapshot_id: i64,
    /// Its timestamp: the recovery point reached.
    pub recovery_point_ms: i64,
    /// Objects written into the scratch location.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The policy's RTO when it ran, ms (none: no target).
    pub rto_target_ms: Option<i64>,
    /// The policy's RPO when it ran, ms.
    pub rpo_target_ms: Option<i64>,
    /// How often a full drill is due, ms.
    pub every_ms: i64,
    /// Whether the restore met both targets.
    pub passed: bool,
    /// What missed a target, in words.
    pub why: Vec<String>,
}

impl FullDrill {
    /// How long the restore took, ms.
    pub fn rto_ms(&self) -> i64 {
        self.finished_ms.saturating_sub(self.started_ms)
    }

    /// How far back its recovery point lies from its start, ms.
    pub fn rpo_ms(&self) -> i64 {
        self.started_ms.saturating_sub(self.recovery_point_ms)
    }
}

/// What a host measured of a full restore into scratch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreRun {
    /// The bundle restored.
    pub bundle_id: String,
    /// The scratch location.
    pub scratch: String,
    /// The restored table's current snapshot and its timestamp (the
    /// planner's [`crate::scratch::ScratchRestore`]).
    pub snapshot_id: i64,
    /// The recovery point reached.
    pub recovery_point_ms: i64,
    /// Objects and bytes written.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// When it started and finished, by the host's clock.
    pub started_ms: i64,
    /// When the restored table was complete.
    pub finished_ms: i64,
}

impl Ledger {
    /// Full restore drills recorded, oldest first.
    pub fn full_drills(&self) -> &[FullDrill] {
        &self.full_drills
    }

    /// Records a full restore drill of `run`, judged against the policy's
    /// targets `rule` (none: no targets, due every quarter). Fails for a
    /// run that finished before it started.
    pub fn record_full_drill(
        &mut self,
        run: &RestoreRun,
        rule: Option<&crate::policy::RestoreDrill>,
    ) -> Result<FullDrill> {
        if run.finished_ms < run.started_ms {
            return Err(Error::invalid(
                "drill",
                "the restore finished before it started (the clock went back)",
            ));
        }
        let rto_target_ms = rule.and_then(|r| r.rto).map(|d| d.0);
        let rpo_target_ms = rule.and_then(|r| r.rpo).map(|d| d.0);
        let mut d = FullDrill {
            started_ms: run.started_ms,
            finished_ms: run.finished_ms,
            bundle_id: run.bundle_id.clone(),
            scratch: run.scratch.clone(),
            snapshot_id: run.snapshot_id,
            recovery_point_ms: run.recovery_point_ms,
            objects: run.objects,
            bytes: run.bytes,
            rto_target_ms,
            rpo_target_ms,
            every_ms: rule
                .and_then(|r| r.full_every)
                .map_or(DEFAULT_FULL_DRILL_EVERY_MS, |d| d.0),
            passed: true,
            why: Vec::new(),
        };
        if let Some(t) = rto_target_ms {
            if d.rto_ms() > t {
                d.why.push(format!(
                    "the restore took {}, the RTO is {}",
                    crate::duration::human_ms(d.rto_ms()),
                    crate::duration::human_ms(t)
                ));
            }
        }
        if let Some(t) = rpo_target_ms {
            if d.rpo_ms() > t {
                d.why.push(format!(
                    "its recovery point lies {} back, the RPO is {}",
                    crate::duration::human_ms(d.rpo_ms()),
                    crate::duration::human_ms(t)
                ));
            }
        }
        d.passed = d.why.is_empty();
        self.guarded(|l| {
            l.revision += 1;
            l.full_drills.push(d.clone());
            Ok(d)
        })
    }

    /// Why the full-restore-drill gate is not met at `now_ms`, if it is
    /// not (none also when no full drill was ever recorded and none is
    /// asked for: `required`).
    pub fn full_drill_missing(&self, now_ms: i64, required: bool) -> Option<String> {
        let Some(last) = self.full_drills.last() else {
            return required.then(|| {
                "no full restore drill recorded (`lakesweep drill --restore-into`)".into()
            });
        };
        if !last.passed {
            return Some(format!(
                "the last full restore drill missed its targets: {}",
                last.why.join("; ")
            ));
        }
        let age = now_ms.saturating_sub(last.started_ms);
        (age > last.every_ms).then(|| {
            format!(
                "the last full restore drill ran {} ago; one is due every {}",
                crate::duration::human_ms(age),
                crate::duration::human_ms(last.every_ms)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    fn run(started: i64, took: i64, point: i64) -> RestoreRun {
        RestoreRun {
            bundle_id: "b1".into(),
            scratch: "s3://scratch/t".into(),
            snapshot_id: 7,
            recovery_point_ms: point,
            objects: 3,
            bytes: 30,
            started_ms: started,
            finished_ms: started + took,
        }
    }

    #[test]
    fn a_full_drill_is_judged_against_rto_and_rpo_and_falls_due_each_quarter() {
        let plan = crate::plan::plan_for_tests(&[("data/a.parquet", 1)], None);
        let mut l = Ledger::new(&plan, DAY).unwrap();
        let rule: crate::policy::RestoreDrill =
            serde_json::from_str(r#"{"minBundles":1,"rto":"1h","rpo":"10d","fullEvery":"30d"}"#)
                .unwrap();
        assert!(l.full_drill_missing(0, true).is_some());
        assert!(l.full_drill_missing(0, false).is_none());
        let d = l
            .record_full_drill(&run(100 * DAY, 60_000, 95 * DAY), Some(&rule))
            .unwrap();
        assert!(d.passed, "{d:?}");
        assert!(l.full_drill_missing(101 * DAY, true).is_none());
        assert!(l
            .full_drill_missing(131 * DAY, true)
            .unwrap()
            .contains("due every"));
        // Too slow and too far back: both named.
        let d = l
            .record_full_drill(&run(140 * DAY, 2 * 3_600_000, 120 * DAY), Some(&rule))
            .unwrap();
        assert!(!d.passed && d.why.len() == 2, "{d:?}");
        assert!(l
            .full_drill_missing(140 * DAY, false)
            .unwrap()
            .contains("missed"));
        assert!(l.record_full_drill(&run(10, -1, 0), None).is_err());
    }
}
