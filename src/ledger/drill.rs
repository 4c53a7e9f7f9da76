//! Restore drills: a seeded sample of quarantine bundles, verified without
//! committing anything, recorded in the ledger for a policy's gate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;

/// One restore drill: a seeded sample of the table's quarantine bundles,
/// each verified (every layer and pinned version against the bundle)
/// without committing anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drill {
    /// When, ms since the epoch.
    #[serde(alias = "at_ms")]
    pub at_ms: i64,
    /// The seed the sample was drawn with ([`drill_sample`]): the same seed
    /// over the same bundles draws the same sample.
    pub seed: u64,
    /// Bundles the table had.
    #[serde(alias = "bundles_total")]
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

impl Ledger {
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
        drill_missing(&self.drills, rule, now_ms)
    }
}

/// Why `drills` do not meet the policy's restore-drill gate `rule` at the
/// host's clock `now_ms` (none: a recent enough passed drill of enough
/// bundles is there).
pub(crate) fn drill_missing(
    drills: &[Drill],
    rule: &crate::policy::DrillGate,
    now_ms: i64,
) -> Option<String> {
    let ok = drills.iter().any(|d| {
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
