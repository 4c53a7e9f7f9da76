//! A table's rollout, as its ledger records it: the cohort it is in, every
//! move between `shadow` and `enforce` (who, why, when), and every shadow
//! run's comparison with the existing job. The gate that lets a table move
//! to `enforce` is judged here from those records; the fleet document only
//! says what the operators want (see [`crate::fleet`]).
//!
//! ```text
//! enter_fleet(fleet, now)                 every run of a table in a fleet, first
//! record_comparison(plan, list, ..)       a shadow run with the existing job's list
//! gate(now) / move_mode(to, by, why, now) `lakesweep move`
//! approve(..)                             grants nothing unless the mode is enforce
//! ```

use serde::{Deserialize, Serialize};

use super::*;
use crate::comparison::{day_of, Comparison};
use crate::fleet::{ExistingJob, Fleet, Mode};

/// Comparisons a ledger keeps (counts only; the latest keeps its
/// differences too): a year of daily runs.
pub const MAX_COMPARISONS: usize = 400;

/// How far before this machine's clock a shadow run's plan may be judged,
/// ms.
pub const BACKDATE_LIMIT_MS: i64 = 86_400_000;

/// How old the latest comparison may be for the gate, ms: a gate judged
/// on last month's runs says nothing about today's table.
pub const GATE_FRESHNESS_MS: i64 = 2 * 86_400_000;

/// One recorded move between modes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeMove {
    /// When, ms since the epoch.
    pub at_ms: i64,
    /// The mode before (none: the table joined the fleet).
    pub from: Option<Mode>,
    /// The mode after.
    pub to: Mode,
    /// Who moved it.
    pub by: String,
    /// Why.
    pub why: String,
}

/// What a ledger records of its table's rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// The cohort the table is in.
    pub cohort: String,
    /// Days of shadow runs the gate asks for (the fleet's, as last seen).
    pub shadow_days: u32,
    /// Every move, oldest first; the last one's `to` is the mode.
    pub moves: Vec<ModeMove>,
    /// The shadow runs' comparisons, oldest first (at most
    /// [`MAX_COMPARISONS`]).
    pub comparisons: Vec<Comparison>,
}

impl Rollout {
    /// The recorded mode.
    pub fn mode(&self) -> Mode {
        self.moves.last().map_or(Mode::Shadow, |m| m.to)
    }

    /// When the current stretch of shadow runs began: the last move to
    /// `shadow`.
    pub fn shadow_since_ms(&self) -> Option<i64> {
        self.moves
            .iter()
            .rev()
            .find(|m| m.to == Mode::Shadow)
            .map(|m| m.at_ms)
    }
}

/// The mode a run of the table goes by, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeDecision {
    /// The table's cohort.
    pub cohort: String,
    /// The mode this run goes by: `enforce` only when the fleet document
    /// and the ledger's recorded moves both say so.
    pub mode: Mode,
    /// The mode the fleet document wants for the cohort.
    pub wanted: Mode,
    /// Why the mode is not the one wanted, if it is not.
    pub why: Vec<String>,
    /// The fleet's stop switch.
    pub stop_switch: Option<String>,
    /// How much a halt lengthens quarantine, ms (none: the ledger's
    /// quarantine).
    pub halt_extension_ms: Option<i64>,
    /// The existing job the cohort is compared with.
    pub existing_job: ExistingJob,
}

/// Whether a table may move to `enforce`, and what it lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gate {
    /// True when every condition holds.
    pub passed: bool,
    /// Days of shadow runs asked for.
    pub shadow_days: u32,
    /// When the current shadow stretch began.
    pub shadow_since_ms: Option<i64>,
    /// Comparisons recorded in it.
    pub runs: u64,
    /// Whole days from its first comparison to its last.
    pub days_covered: u64,
    /// UTC days with a comparison.
    pub days_with_runs: u64,
    /// Unexplained differences of the latest comparison.
    pub open_differences: u64,
    /// What is missing, in words (empty when passed).
    pub why: Vec<String>,
}

impl Ledger {
    /// The rollout recorded, if the table is in a fleet.
    pub fn rollout(&self) -> Option<&Rollout> {
        self.rollout.as_ref()
    }

    /// The mode decided for this run, once [`Ledger::enter_fleet`] was called.
    pub fn mode_now(&self) -> Option<&ModeDecision> {
        self.mode_now.as_ref()
    }

    /// Starts a run of a table in the fleet `fleet` (its document): finds
    /// the table's cohort, records the table's joining (always in
    /// `shadow`) or a cohort the document moved back to `shadow`, and
    /// decides the run's mode: `enforce` only when the document wants it
    /// and the ledger records a gated move to it. Fails for a document
    /// that does not parse or names no cohort with this table.
    pub fn enter_fleet(&mut self, fleet: &str, now_ms: i64) -> Result<ModeDecision> {
        self.guarded(|l| l.enter_fleet_unguarded(fleet, now_ms))
    }

    fn enter_fleet_unguarded(&mut self, fleet: &str, now_ms: i64) -> Result<ModeDecision> {
        let f = Fleet::parse(fleet)?;
        let Some(c) = f.cohort_of(&self.table_location) else {
            return Err(Error::invalid(
                "fleet",
                format!(
                    "the fleet names no cohort with table {}",
                    self.table_location
                ),
            ));
        };
        let r = self.rollout.get_or_insert_with(|| Rollout {
            cohort: c.name.clone(),
            shadow_days: f.shadow_days(),
            moves: vec![ModeMove {
                at_ms: now_ms,
                from: None,
                to: Mode::Shadow,
                by: "lakesweep".into(),
                why: format!(
                    "joined cohort `{}` of the fleet: every table starts in shadow",
                    c.name
                ),
            }],
            comparisons: Vec::new(),
        });
        r.shadow_days = f.shadow_days();
        if r.cohort != c.name {
            let why = format!("moved from cohort `{}` to `{}`", r.cohort, c.name);
            r.cohort = c.name.clone();
            let to = r.mode();
            r.moves.push(ModeMove {
                at_ms: now_ms,
                from: Some(to),
                to,
                by: "fleet document".into(),
                why,
            });
        }
        let recorded = r.mode();
        let mut why = Vec::new();
        let mode = match (c.mode, recorded) {
            (Mode::Shadow, Mode::Enforce) => {
                r.moves.push(ModeMove {
                    at_ms: now_ms,
                    from: Some(Mode::Enforce),
                    to: Mode::Shadow,
                    by: "fleet document".into(),
                    why: format!("the fleet document puts cohort `{}` in shadow", c.name),
                });
                Mode::Shadow
            }
            (Mode::Enforce, Mode::Shadow) => {
                why.push(format!(
                    "the fleet document says enforce for cohort `{}`, but this table's ledger records no gated move to enforce: it stays in shadow (`lakesweep move`)",
                    c.name
                ));
                Mode::Shadow
            }
            (_, m) => m,
        };
        let d = ModeDecision {
            cohort: c.name.clone(),
            mode,
            wanted: c.mode,
            why,
            stop_switch: f.stop_switch.clone(),
            halt_extension_ms: f.halt_extension.map(|d| d.0),
            existing_job: c.existing_job.clone(),
        };
        self.mode_now = Some(d.clone());
        Ok(d)
    }

    /// Records a shadow run's comparison of `plan` with the existing job's
    /// list `their_list` (see [`crate::comparison::their_keys`]);
    /// `decisions`: our verdicts for their keys; `clock_ms`: this
    /// machine's clock. The run must have entered its fleet. Runs go
    /// forward in time: a plan dated at or before the last comparison, or
    /// more than a day before the clock, is refused (days of shadow runs
    /// cannot be made up in an afternoon). The latest comparison keeps its
    /// differences; earlier ones their counts.
    pub fn record_comparison(
        &mut self,
        plan: &SealedPlan,
        their_list: &crate::comparison::TheirList,
        decisions: &[crate::verdict::Decision],
        clock_ms: i64,
    ) -> Result<Comparison> {
        let now = plan.tokens.now_ms;
        if let Some(last) = self.rollout.as_ref().and_then(|r| r.comparisons.last()) {
            if now <= last.at_ms {
                return Err(Error::invalid(
                    "comparison",
                    format!(
                        "shadow runs go forward in time: this plan is judged at {now} ms, the last comparison at {} ms",
                        last.at_ms
                    ),
                ));
            }
        }
        if now < clock_ms.saturating_sub(BACKDATE_LIMIT_MS) {
            return Err(Error::invalid(
                "comparison",
                format!(
                    "a shadow run is compared when it runs: this plan is judged {} before this machine's clock",
                    crate::duration::human_ms(clock_ms - now)
                ),
            ));
        }
        self.guarded(|l| {
            l.ensure_table(plan)?;
            let Some(d) = &l.mode_now else {
                return Err(Error::protocol(
                    ProtocolReason::OutOfOrder,
                    "a comparison is recorded in a run that entered its fleet (enter_fleet first)",
                ));
            };
            let mut c = crate::comparison::compare(plan, their_list, decisions, &d.existing_job);
            c.recorded_ms = clock_ms;
            let r = l.rollout.as_mut().ok_or_else(|| {
                Error::protocol(ProtocolReason::OutOfOrder, "no rollout recorded")
            })?;
            for old in &mut r.comparisons {
                old.differences.clear();
            }
            r.comparisons.push(c.clone());
            if r.comparisons.len() > MAX_COMPARISONS {
                let drop = r.comparisons.len() - MAX_COMPARISONS;
                r.comparisons.drain(..drop);
            }
            l.revision += 1;
            Ok(c)
        })
    }

    /// Whether the table may move to `enforce` at `now_ms`: in the current
    /// stretch of shadow runs, comparisons on at least the fleet's number
    /// of days (14 by default), spanning as many whole days, the latest no
    /// older than two days and without an unexplained difference.
    pub fn gate(&self, now_ms: i64) -> Gate {
        let Some(r) = &self.rollout else {
            return Gate {
                passed: false,
                shadow_days: crate::fleet::DEFAULT_SHADOW_DAYS,
                shadow_since_ms: None,
                runs: 0,
                days_covered: 0,
                days_with_runs: 0,
                open_differences: 0,
                why: vec!["the table is in no fleet: there is no shadow run to judge".into()],
            };
        };
        let since = r.shadow_since_ms();
        let runs: Vec<&Comparison> = r
            .comparisons
            .iter()
            .filter(|c| since.is_none_or(|s| c.at_ms >= s))
            .collect();
        let mut why = Vec::new();
        let days: std::collections::BTreeSet<i64> = runs.iter().map(|c| day_of(c.at_ms)).collect();
        let covered = match (runs.first(), runs.last()) {
            (Some(a), Some(b)) => (b.at_ms.saturating_sub(a.at_ms) / 86_400_000).max(0) as u64,
            _ => 0,
        };
        let n = u64::from(r.shadow_days);
        if r.mode() == Mode::Enforce {
            why.push("the table is in enforce already".into());
        }
        if (days.len() as u64) < n || covered < n {
            why.push(format!(
                "{} days of shadow runs asked for: comparisons on {} days, spanning {} whole days",
                n,
                days.len(),
                covered
            ));
        }
        let open = runs.last().map_or(0, |c| c.unexplained);
        match runs.last() {
            None => why.push("no comparison recorded since the table entered shadow".into()),
            Some(c) if c.at_ms > now_ms => why.push(format!(
                "the latest comparison is dated after now ({} ms)",
                c.at_ms
            )),
            Some(c) if now_ms - c.at_ms > GATE_FRESHNESS_MS => why.push(format!(
                "the latest comparison is {} old: run a shadow sweep first",
                crate::duration::human_ms(now_ms - c.at_ms)
            )),
            Some(c) if c.unexplained > 0 => why.push(format!(
                "{} differences of the latest comparison ({}) are unexplained",
                c.unexplained, c.plan_digest
            )),
            Some(_) => {}
        }
        Gate {
            passed: why.is_empty(),
            shadow_days: r.shadow_days,
            shadow_since_ms: since,
            runs: runs.len() as u64,
            days_covered: covered,
            days_with_runs: days.len() as u64,
            open_differences: open,
            why,
        }
    }

    /// Records a move of the table to `to`, by `by`, because `why`: to
    /// `enforce` only through a passed [`Ledger::gate`]; back to `shadow`
    /// at any time. The run must have entered its fleet. `now_ms` ahead of
    /// this machine's clock `clock_ms` is refused unless `allow_future_now`
    /// (what-if runs, tests). Fails (and records nothing) when the gate is
    /// not passed, the table is in `to` already, or who or why is missing.
    pub fn move_mode(
        &mut self,
        to: Mode,
        by: &str,
        why: &str,
        now_ms: i64,
        clock_ms: i64,
        allow_future_now: bool,
    ) -> Result<ModeMove> {
        // A refused move changes nothing, and leaves the ledger usable.
        crate::acceptance::check_clock(now_ms, clock_ms, allow_future_now)?;
        self.check_move(to, by, why, now_ms)?;
        self.guarded(|l| {
            let from = l.rollout.as_ref().map_or(Mode::Shadow, Rollout::mode);
            let m = ModeMove {
                at_ms: now_ms,
                from: Some(from),
                to,
                by: by.trim().into(),
                why: why.trim().into(),
            };
            if let Some(r) = l.rollout.as_mut() {
                r.moves.push(m.clone());
            }
            l.revision += 1;
            Ok(m)
        })
    }

    /// Why a move to `to` is refused now, if it is.
    fn check_move(&self, to: Mode, by: &str, why: &str, now_ms: i64) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if by.trim().is_empty() || why.trim().is_empty() {
            return Err(Error::invalid(
                "move",
                "a move says who and why (--by, --why)",
            ));
        }
        if self.mode_now.is_none() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "a move is recorded in a run that entered its fleet (enter_fleet first)",
            ));
        }
        let from = self.rollout.as_ref().map_or(Mode::Shadow, Rollout::mode);
        if from == to {
            return Err(Error::invalid(
                "move",
                format!("the table is in {} already", to.as_str()),
            ));
        }
        if to == Mode::Enforce {
            let g = self.gate(now_ms);
            if !g.passed {
                return Err(Error::invalid(
                    "move",
                    format!("the gate is closed: {}", g.why.join("; ")),
                ));
            }
        }
        Ok(())
    }

    /// The rollout as a document for people and dashboards (JSON): the
    /// cohort, the recorded mode, every move, every comparison (the latest
    /// with its differences) and the gate at `now_ms`; none outside a fleet.
    pub fn rollout_document(&self, now_ms: i64) -> Option<String> {
        let r = self.rollout.as_ref()?;
        let latest = r.comparisons.last();
        let agreement = latest.map(|c| {
            let union = c.ours + c.theirs - c.both;
            if union == 0 {
                1.0
            } else {
                c.both as f64 / union as f64
            }
        });
        let doc = serde_json::json!({
            "cohort": r.cohort,
            "mode": r.mode(),
            "shadowSinceMs": r.shadow_since_ms(),
            "shadowDays": r.shadow_days,
            "moves": r.moves,
            "comparisons": r.comparisons,
            "agreement": agreement,
            "gate": self.gate(now_ms),
        });
        Some(doc.to_string())
    }

    /// Why this run's approval grants nothing because of the rollout: the
    /// table is in a fleet the run did not enter, or in shadow.
    pub(crate) fn rollout_refusal(&self) -> Option<String> {
        match (&self.rollout, &self.mode_now) {
            (Some(r), None) => Some(format!(
                "this table is rolled out in cohort `{}` of a fleet: give the fleet document (--fleet); without it nothing is deleted",
                r.cohort
            )),
            (_, Some(d)) if d.mode == Mode::Shadow => Some(format!(
                "shadow mode (cohort `{}`): the run plans and compares, and deletes nothing",
                d.cohort
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::TheirList;

    const DAY: i64 = 86_400_000;

    fn fleet(mode: &str) -> String {
        format!(
            r#"{{"schema":"lakesweepFleet.v1","cohorts":[{{"name":"canary","mode":"{mode}",
               "tables":["s3://b/t"],"existingJob":{{"tool":"vacuum"}}}}]}}"#
        )
    }

    fn plan_at(now: i64) -> SealedPlan {
        let mut p = crate::plan::plan_for_tests(&[("data/a.parquet", 1)], None);
        p.tokens.now_ms = now;
        p
    }

    fn theirs(keys: &[&str]) -> TheirList {
        TheirList {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            outside: vec![],
        }
    }

    #[test]
    fn fourteen_days_of_explained_shadow_runs_open_the_gate_and_the_move_is_recorded() {
        let p0 = plan_at(0);
        assert!(
            p0.table_location.starts_with("s3://b/t"),
            "{}",
            p0.table_location
        );
        let mut l = Ledger::new(&p0, DAY).unwrap();
        let t0 = 100 * DAY;
        let d = l.enter_fleet(&fleet("shadow"), t0).unwrap();
        assert_eq!(d.mode, Mode::Shadow);
        assert!(l.rollout_refusal().unwrap().contains("shadow mode"));
        assert!(!l.gate(t0).passed);
        assert!(l
            .move_mode(Mode::Enforce, "me", "try", t0, t0, false)
            .is_err());
        // Daily runs; on day 7 they list a file we never listed.
        for day in 0..=14 {
            let now = t0 + day * DAY + 3_600_000;
            l.enter_fleet(&fleet("shadow"), now).unwrap();
            let list = if day == 7 {
                theirs(&["data/a.parquet", "data/ghost.parquet"])
            } else {
                theirs(&["data/a.parquet"])
            };
            let c = l.record_comparison(&plan_at(now), &list, &[], now).unwrap();
            assert_eq!(c.unexplained, u64::from(day == 7));
            if day == 7 {
                let g = l.gate(now);
                assert_eq!(g.open_differences, 1);
                assert!(g.why.iter().any(|w| w.contains("unexplained")), "{g:?}");
            }
        }
        let now = t0 + 14 * DAY + 4_000_000;
        let g = l.gate(now);
        assert!(g.passed, "{g:?}");
        assert_eq!((g.runs, g.days_with_runs, g.days_covered), (15, 15, 14));
        // Only the latest comparison keeps its differences.
        let r = l.rollout().unwrap();
        assert!(r.comparisons[7].differences.is_empty() && r.comparisons[7].unexplained == 1);
        // A hand-edited document saying enforce moves nothing.
        let d = l.enter_fleet(&fleet("enforce"), now).unwrap();
        assert_eq!(d.mode, Mode::Shadow);
        assert!(d.why[0].contains("no gated move"));
        // Not ahead of the clock without saying so.
        let earlier = now - 3_600_000;
        assert!(l
            .move_mode(
                Mode::Enforce,
                "alice",
                "two clean weeks",
                now,
                earlier,
                false
            )
            .is_err());
        let m = l
            .move_mode(Mode::Enforce, "alice", "two clean weeks", now, now, false)
            .unwrap();
        assert_eq!(m.from, Some(Mode::Shadow));
        assert_eq!(
            l.enter_fleet(&fleet("enforce"), now).unwrap().mode,
            Mode::Enforce
        );
        assert!(l.rollout_refusal().is_none());
        // The document back in shadow moves the table back, recorded.
        assert_eq!(
            l.enter_fleet(&fleet("shadow"), now + 1).unwrap().mode,
            Mode::Shadow
        );
        assert_eq!(
            l.rollout().unwrap().moves.last().unwrap().by,
            "fleet document"
        );
        // The gate starts over with the new shadow stretch.
        assert!(!l.gate(now + 2).passed);
    }

    #[test]
    fn a_table_in_a_fleet_deletes_nothing_without_its_fleet_and_a_stale_gate_stays_closed() {
        let mut l = Ledger::new(&plan_at(0), DAY).unwrap();
        l.enter_fleet(&fleet("shadow"), 0).unwrap();
        for day in 0..=14 {
            l.record_comparison(
                &plan_at(day * DAY),
                &theirs(&["data/a.parquet"]),
                &[],
                day * DAY,
            )
            .unwrap();
        }
        // Runs go forward in time, and are not backdated.
        let list = theirs(&["data/a.parquet"]);
        assert!(l
            .record_comparison(&plan_at(14 * DAY), &list, &[], 14 * DAY)
            .is_err());
        assert!(l
            .record_comparison(&plan_at(15 * DAY), &list, &[], 17 * DAY)
            .is_err());
        assert!(l.gate(14 * DAY).passed);
        let g = l.gate(20 * DAY);
        assert!(!g.passed && g.why[0].contains("old"), "{g:?}");
        // Saved and read again: the rollout stays, the run's mode does not.
        let (head, files) = l.save_whole().unwrap();
        let again = Ledger::open_whole(&head, &files).unwrap();
        assert_eq!(again.rollout(), l.rollout());
        assert!(again.mode_now().is_none());
        assert!(again
            .rollout_refusal()
            .unwrap()
            .contains("give the fleet document"));
        // Another fleet without this table is refused.
        let mut again = again;
        let other = fleet("shadow").replace("s3://b/t", "s3://b/other");
        assert!(again.enter_fleet(&other, 0).is_err());
    }
}
