//! Shares of one plan's deletion: several deletion sessions apply one
//! plan at once (a cluster's executors, one each), each taking a share the
//! core cuts, and the core combines their outcomes, proving that the
//! shares cover the plan's deletes exactly once.
//!
//! A host chooses only how many shares there are; which keys a share holds
//! is the core's: share `index` of `of` is the `index`th of `of`
//! contiguous runs of the plan's deletes in plan order (sorted by key),
//! their sizes differing by at most one. Each share's session reads the
//! live facts and accepts them before each of its batches, HEADs before it
//! deletes, and checks its own deletes for damage, exactly as a whole
//! run does. A share may run again (a task retried after its executor
//! died): the keys it finds already absent may be an earlier attempt's
//! deletes, so its damage check covers them too; and a later attempt
//! (the host says which attempt it is) that never comes to some of its
//! keys cannot clear them: its outcome says their damage is unchecked.
//!
//! [`combine`] takes every share's outcome and refuses (nothing can be
//! said of the run) when one is missing, comes twice, belongs to another
//! plan or cut, or mixes dry and real runs; otherwise it gives the run's
//! outcome: the counts summed, the worst exit status, every share's
//! reasons named with its share.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::DeletionOutcome;
use crate::error::{Error, ProtocolReason, Result};

/// Share `index` (from 0) of `of` of a plan's deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionShare {
    /// Which share, from 0; below `of`.
    pub index: u32,
    /// How many shares the plan is cut into; at least 1.
    pub of: u32,
    /// Which attempt at this share this run is, from 0 (the host's
    /// answer: a task run again after its executor died is attempt 1).
    /// A later attempt that never comes to some of its keys (refused,
    /// stopped) cannot say an earlier one left them alone: its damage is
    /// unchecked (exit 3).
    #[serde(default)]
    pub attempt: u32,
}

impl DeletionShare {
    /// The plan's delete indices this share holds, of a plan of `deletes`
    /// deletes. Fails (invalid) for `of` of 0 or an `index` not below it.
    pub fn range(&self, deletes: u32) -> Result<Range<u32>> {
        if self.of == 0 {
            return Err(Error::invalid(
                "share",
                "a plan is cut into at least 1 share",
            ));
        }
        if self.index >= self.of {
            return Err(Error::invalid(
                "share",
                format!(
                    "share {} of {}: shares are numbered from 0 to {}",
                    self.index,
                    self.of,
                    self.of - 1
                ),
            ));
        }
        let at = |i: u32| (u64::from(deletes) * u64::from(i) / u64::from(self.of)) as u32;
        Ok(at(self.index)..at(self.index + 1))
    }
}

/// What a share's outcome says of the share it ran: set by the session,
/// read by [`combine`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShareStamp {
    /// The plan's digest.
    pub plan_digest: String,
    /// How many deletes the plan has.
    pub deletes: u32,
    /// The share run.
    pub share: DeletionShare,
    /// The first delete index of the share.
    pub first: u32,
    /// How many deletes the share holds.
    pub keys: u32,
    /// Whether it was a dry run.
    pub dry_run: bool,
    /// Whether the run was over (its damage check made) when the outcome
    /// was read: an outcome read before is no answer.
    #[serde(default)]
    pub finished: bool,
}

/// Receipt results that end a key (a `damaged` receipt comes besides one).
const ENDING: [&str; 8] = [
    "deleted",
    "already-absent",
    "skipped-changed",
    "skipped-stopped",
    "skipped-protected",
    "failed",
    "unknown",
    "would-delete",
];

/// The outcome of a run of one plan cut into shares, from every share's
/// outcome (any order). `plan_digest` and `plan_deletes`: the plan's digest
/// and its number of deletes. Fails (protocol, bad input) unless the
/// outcomes are every share of one cut of that plan, each exactly once,
/// each finished, each with one ending receipt per key it holds (none when
/// refused), all dry or all real.
///
/// Its exit status is worked out from the combined counts, as a whole
/// run's is: 3 when a share found damage or could not check; 2 when every
/// share that held keys was refused before anything was tried; 1 when any
/// key was not deleted (failed, changed, held, stopped, unknown, or its
/// share refused while others ran); 0 otherwise. A share's reasons are
/// named with it (a refusal under `stopped` unless every share was
/// refused). The combined outcome carries no stamp.
pub fn combine(
    plan_digest: &str,
    plan_deletes: u32,
    outcomes: &[DeletionOutcome],
) -> Result<DeletionOutcome> {
    let bad = |detail: String| Error::protocol(ProtocolReason::BadInput, detail);
    let mut of = None;
    let mut dry = None;
    let mut by_index: BTreeMap<u32, &DeletionOutcome> = BTreeMap::new();
    for o in outcomes {
        let Some(s) = o.share.as_ref() else {
            return Err(bad(
                "an outcome of a whole run, not of a share, was given".into()
            ));
        };
        let name = format!("share {} of {}", s.share.index, s.share.of);
        if s.plan_digest != plan_digest {
            return Err(bad(format!(
                "{name} ran plan {}, not plan {plan_digest}",
                s.plan_digest
            )));
        }
        let cut = DeletionShare {
            attempt: 0,
            ..s.share
        }
        .range(plan_deletes)?;
        if *of.get_or_insert(s.share.of) != s.share.of
            || s.deletes != plan_deletes
            || s.first != cut.start
            || s.keys != cut.end - cut.start
        {
            return Err(bad(format!(
                "{name} is not a share of the same cut of the plan"
            )));
        }
        if *dry.get_or_insert(s.dry_run) != s.dry_run {
            return Err(bad("dry and real shares of one run were given".into()));
        }
        if !s.finished {
            return Err(bad(format!("{name} was read before its run was over")));
        }
        let ended: u64 = ENDING
            .iter()
            .map(|r| o.results.get(*r).copied().unwrap_or(0))
            .sum();
        let want = if o.refused.is_some() {
            0
        } else {
            u64::from(s.keys)
        };
        if ended != want {
            return Err(bad(format!(
                "{name} holds {} keys but its outcome counts {ended} receipts",
                s.keys
            )));
        }
        if by_index.insert(s.share.index, o).is_some() {
            return Err(bad(format!("{name} was answered twice")));
        }
    }
    let Some(of) = of else {
        return Err(bad("no share's outcome was given".into()));
    };
    let missing: Vec<String> = (0..of)
        .filter(|i| !by_index.contains_key(i))
        .take(8)
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "the shares do not cover the plan: share {} of {of} missing{}",
            missing.join(", "),
            if of as usize - by_index.len() > missing.len() {
                " (and more)"
            } else {
                ""
            }
        )));
    }
    let mut out = DeletionOutcome::default();
    let (mut held, mut refused) = (0u32, 0u32);
    let mut refusals: Vec<String> = Vec::new();
    for (i, o) in &by_index {
        let named = |why: &String| format!("share {i} of {of}: {why}");
        for (result, n) in &o.results {
            let sum = out.results.entry(result.clone()).or_default();
            *sum = sum.saturating_add(*n);
        }
        out.deleted_bytes = out.deleted_bytes.saturating_add(o.deleted_bytes);
        if let Some(why) = &o.stopped {
            out.stopped
                .get_or_insert_with(Vec::new)
                .extend(why.iter().map(named));
        }
        if let Some(why) = &o.damage_unchecked {
            let why = named(why);
            out.damage_unchecked = Some(match out.damage_unchecked.take() {
                Some(before) => format!("{before}; {why}"),
                None => why,
            });
        }
        if o.share.as_ref().is_some_and(|s| s.keys > 0) {
            held += 1;
        }
        if let Some(why) = &o.refused {
            refused += 1;
            refusals.extend(why.iter().map(named));
        }
    }
    let all_refused = refused > 0 && refused == held;
    out.exit = super::exit_status(
        &out.results,
        out.damage_unchecked.is_some(),
        all_refused,
        refused > 0 || out.stopped.is_some(),
    );
    if out.exit == 2 {
        out.refused = Some(refusals);
    } else if !refusals.is_empty() {
        out.stopped.get_or_insert_with(Vec::new).extend(refusals);
    }
    Ok(out)
}

/// [`combine`] of outcomes as JSON (`Deletion::outcome_json` each), the
/// result as JSON. Fails (protocol, bad input) for an outcome that does
/// not parse, naming which.
pub fn combine_json(plan_digest: &str, plan_deletes: u32, outcomes: &[String]) -> Result<String> {
    let parsed = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| {
            serde_json::from_str::<DeletionOutcome>(o).map_err(|e| {
                Error::protocol(
                    ProtocolReason::BadInput,
                    format!("outcome {i} given does not parse as a share's outcome: {e}"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let whole = combine(plan_digest, plan_deletes, &parsed)?;
    Ok(serde_json::to_string(&whole).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stamped(plan: &str, deletes: u32, index: u32, of: u32) -> DeletionOutcome {
        let share = DeletionShare {
            index,
            of,
            attempt: 0,
        };
        let r = share.range(deletes).unwrap();
        let mut o = DeletionOutcome::default();
        o.results
            .insert("deleted".into(), u64::from(r.end - r.start));
        o.share = Some(ShareStamp {
            plan_digest: plan.into(),
            deletes,
            share,
            first: r.start,
            keys: r.end - r.start,
            dry_run: false,
            finished: true,
        });
        o
    }

    proptest! {
        /// Any cut of any plan: the shares tile its deletes, in order, each
        /// exactly once, their sizes within one of each other.
        #[test]
        fn the_shares_of_a_cut_cover_the_plan_exactly_once(deletes in 0u32..5000, of in 1u32..300) {
            let mut next = 0;
            let (mut small, mut large) = (u32::MAX, 0);
            for index in 0..of {
                let r = DeletionShare { index, of, attempt: 0 }.range(deletes).unwrap();
                prop_assert_eq!(r.start, next);
                next = r.end;
                small = small.min(r.end - r.start);
                large = large.max(r.end - r.start);
            }
            prop_assert_eq!(next, deletes);
            prop_assert!(large - small <= 1);
        }

        /// Every share once combines, in any order, to the sum; any one
        /// left out or given twice refuses.
        #[test]
        fn a_missing_or_repeated_share_refuses(deletes in 0u32..2000, of in 1u32..40, pick in any::<u32>(), seed in any::<u64>()) {
            let mut all: Vec<_> = (0..of).map(|i| stamped("p", deletes, i, of)).collect();
            let n = all.len();
            all.rotate_left((seed % n as u64) as usize);
            let whole = combine("p", deletes, &all).unwrap();
            prop_assert_eq!(whole.exit, 0);
            prop_assert_eq!(whole.results.get("deleted").copied().unwrap_or(0), u64::from(deletes));
            let k = pick as usize % n;
            let mut missing = all.clone();
            missing.remove(k);
            prop_assert!(combine("p", deletes, &missing).is_err());
            let mut twice = all.clone();
            twice.push(all[k].clone());
            prop_assert!(combine("p", deletes, &twice).is_err());
        }
    }

    #[test]
    fn shares_of_another_plan_or_cut_refuse() {
        let good: Vec<_> = (0..3).map(|i| stamped("p", 10, i, 3)).collect();
        assert!(combine("p", 10, &good).is_ok());
        assert!(combine("q", 10, &good).is_err(), "another plan");
        assert!(combine("p", 11, &good).is_err(), "another plan's size");
        let mut mixed = good.clone();
        mixed[1] = stamped("p", 10, 1, 4);
        assert!(combine("p", 10, &mixed).is_err(), "another cut");
        let mut lied = good.clone();
        lied[2].share.as_mut().unwrap().first = 0;
        assert!(combine("p", 10, &lied).is_err(), "not its range");
        let mut dry = good.clone();
        dry[0].share.as_mut().unwrap().dry_run = true;
        assert!(combine("p", 10, &dry).is_err(), "dry and real");
        let mut whole = good.clone();
        whole[0].share = None;
        assert!(combine("p", 10, &whole).is_err(), "a whole run's outcome");
        let mut early = good.clone();
        early[1].share.as_mut().unwrap().finished = false;
        assert!(combine("p", 10, &early).is_err(), "read before it was over");
        let mut short = good.clone();
        *short[1].results.get_mut("deleted").unwrap() -= 1;
        assert!(combine("p", 10, &short).is_err(), "a key without a receipt");
        // A forged whole-plan share of nothing.
        let forged = vec![stamped("p", 0, 0, 1)];
        assert!(combine("p", 10, &forged).is_err(), "another plan's size");
        assert!(combine("p", 10, &[]).is_err());
        let text: Vec<String> = good
            .iter()
            .map(|o| serde_json::to_string(o).unwrap())
            .collect();
        assert!(combine_json("p", 10, &text)
            .unwrap()
            .contains(r#""exit":0"#));
        let e = combine_json("p", 10, &["{".to_owned()]).unwrap_err();
        assert!(
            e.to_string().contains("outcome 0 given does not parse"),
            "{e}"
        );
        for (index, of) in [(3, 3), (0, 0)] {
            let share = DeletionShare {
                index,
                of,
                attempt: 0,
            };
            assert!(share.range(10).is_err());
        }
    }

    #[test]
    fn the_worst_share_names_the_exit_status() {
        let mut all: Vec<_> = (0..3).map(|i| stamped("p", 10, i, 3)).collect();
        all[1].exit = 1;
        all[1].stopped = Some(vec!["halted".into()]);
        let o = combine("p", 10, &all).unwrap();
        assert_eq!(o.exit, 1);
        assert_eq!(o.stopped, Some(vec!["share 1 of 3: halted".to_owned()]));
        // The exit is the counts', not the shares' word for it.
        all[2].exit = 0;
        all[2].damage_unchecked = Some("store down".into());
        let o = combine("p", 10, &all).unwrap();
        assert_eq!(o.exit, 3);
        assert_eq!(
            o.damage_unchecked.as_deref(),
            Some("share 2 of 3: store down")
        );

        // Every share holding keys refused: refused; one refused while the
        // others ran: not every key was deleted.
        let refuse = |o: &mut DeletionOutcome| {
            o.exit = 2;
            o.results.clear();
            o.refused = Some(vec!["the table moved".into()]);
        };
        let mut all: Vec<_> = (0..4).map(|i| stamped("p", 3, i, 4)).collect();
        for o in all
            .iter_mut()
            .filter(|o| o.share.as_ref().unwrap().keys > 0)
        {
            refuse(o);
        }
        let o = combine("p", 3, &all).unwrap();
        assert_eq!(o.exit, 2);
        assert_eq!(o.refused.as_ref().map(Vec::len), Some(3));
        let mut all: Vec<_> = (0..4).map(|i| stamped("p", 8, i, 4)).collect();
        refuse(&mut all[0]);
        let o = combine("p", 8, &all).unwrap();
        assert_eq!(o.exit, 1);
        assert!(o.refused.is_none());
        assert_eq!(
            o.stopped,
            Some(vec!["share 0 of 4: the table moved".to_owned()])
        );
        // Refused beside damage: the refusal is still said.
        all[1].damage_unchecked = Some("store down".into());
        let o = combine("p", 8, &all).unwrap();
        assert_eq!(o.exit, 3);
        assert!(o
            .stopped
            .unwrap()
            .iter()
            .any(|w| w.contains("the table moved")));
    }
}
