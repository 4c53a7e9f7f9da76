//! A shadow run's comparison: a sealed plan against the candidate list the
//! existing maintenance job produced for the same run (Iceberg's
//! `remove_orphan_files`, Delta's `VACUUM ... DRY RUN`, a script), key by
//! key, with every difference explained by a named rule or counted as
//! unexplained. The gate of a rollout (see [`crate::Ledger::gate`]) lets a
//! table delete only once the differences of its shadow runs are all
//! explained.
//!
//! Their lines are read here, not by a host: URIs in any spelling
//! (`s3a://`, `file:/x`, `/x`) become the plan's keys by the same rules
//! the planner uses; a line naming something outside the table is a
//! difference of its own.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fleet::ExistingJob;
use crate::path::{apply_mappings, CanonicalUri, PathMapping, TableLocation};
use crate::plan::SealedPlan;
use crate::verdict::{Decision, Verdict};

/// Differences a comparison keeps by key (the unexplained first); the
/// counts cover them all.
pub const MAX_KEPT_DIFFERENCES: usize = 1000;

/// The existing job's candidates, as keys of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TheirList {
    /// Keys relative to the table location (absolute for a line under
    /// another root), sorted, each once.
    pub keys: Vec<String>,
    /// Lines naming something outside the table, as written.
    pub outside: Vec<String>,
}

/// Reads the existing job's list: one key or URI per line; blank lines and
/// `#` comments are skipped, and so are a CSV export's quotes around a
/// line and its header (a first line that names no key: no `/`, no `.`,
/// as Spark's `orphan_file_location`). URIs and absolute paths are mapped
/// by `location_map` and made relative to the table; bare lines are
/// relative keys already. Keys are compared exactly after that (no
/// decoding).
pub fn their_keys(
    table_location: &str,
    location_map: &[PathMapping],
    text: &str,
) -> Result<TheirList> {
    let table = TableLocation::parse(table_location).map_err(|e| Error::invalid("table", e))?;
    let mut keys = BTreeSet::new();
    let mut outside = BTreeSet::new();
    let mut first = true;
    for line in text.lines() {
        let mut l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if let Some(q) = l.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
            l = q;
        }
        if std::mem::take(&mut first) && !l.contains('/') && !l.contains('.') {
            continue;
        }
        let absolute = l.starts_with('/') || l.contains("://") || l.starts_with("file:");
        if !absolute {
            keys.insert(l.trim_start_matches("./").to_owned());
            continue;
        }
        let mapped = apply_mappings(l, location_map);
        let spelled = match mapped.strip_prefix("file:") {
            Some(rest) if !rest.starts_with("//") => format!("file://{rest}"),
            _ => mapped,
        };
        match CanonicalUri::parse(&spelled) {
            Ok(u) => match table.relative(&u) {
                Some(k) => {
                    keys.insert(k.to_owned());
                }
                None => {
                    // A plan's key under another write root is absolute.
                    keys.insert(u.to_uri_string());
                }
            },
            Err(_) => {
                outside.insert(l.to_owned());
            }
        }
    }
    Ok(TheirList {
        keys: keys.into_iter().collect(),
        outside: outside.into_iter().collect(),
    })
}

/// Which side of a difference an object is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// Only lakesweep would delete it.
    Ours,
    /// Only the existing job would delete it.
    Theirs,
}

/// One object the two lists disagree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The key (or, for a line outside the table, the line).
    pub key: String,
    /// Who would delete it.
    pub side: Side,
    /// Our verdict (`candidate`, `young`, `referenced`, …; `unlisted` when
    /// our listing did not hold it).
    pub verdict: String,
    /// The rule that explains it; none: unexplained.
    pub rule: Option<String>,
    /// Why, in words.
    pub why: String,
}

/// A recorded comparison of one shadow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// When the run was made (the plan's time), ms since the epoch.
    pub at_ms: i64,
    /// The plan compared.
    pub plan_digest: String,
    /// The existing job, in words.
    pub tool: String,
    /// Keys we would delete.
    pub ours: u64,
    /// Keys they would delete (lines outside the table included).
    pub theirs: u64,
    /// Keys both would delete.
    pub both: u64,
    /// Differences explained, per rule.
    pub explained: BTreeMap<String, u64>,
    /// Differences no rule explains.
    pub unexplained: u64,
    /// This machine's clock when it was recorded, ms since the epoch.
    #[serde(default)]
    pub recorded_ms: i64,
    /// The differences, the unexplained first, at most
    /// [`MAX_KEPT_DIFFERENCES`] (a ledger keeps them for its latest
    /// comparison only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<Difference>,
}

impl Comparison {
    /// Differences in all, explained or not.
    pub fn different(&self) -> u64 {
        self.explained.values().sum::<u64>() + self.unexplained
    }
}

const DAY_MS: i64 = 86_400_000;

/// The rule for a key only they would delete, from our verdict for it.
fn their_only(d: Option<&Decision>, tool: &str) -> (String, Option<&'static str>, String) {
    let Some(d) = d else {
        return (
            "unlisted".into(),
            None,
            format!("{tool} would delete it; our listing of the table did not hold it"),
        );
    };
    let rule = match d.verdict {
        Verdict::Referenced | Verdict::Demoted => {
            let detail = d.detail.to_ascii_lowercase();
            if detail.contains("deletion vector") {
                Some("their-gap-deletion-vector")
            } else if detail.contains("statistics") {
                Some("their-gap-statistics")
            } else {
                Some("referenced")
            }
        }
        Verdict::Young => Some("our-window"),
        Verdict::Protected => Some("hold"),
        Verdict::Hidden => Some("hidden"),
        Verdict::NearMiss => Some("near-miss"),
        Verdict::Unverified | Verdict::OwnerCheck => Some("unverified"),
        Verdict::Foreign => Some("foreign"),
        Verdict::FolderMarker => Some("folder-marker"),
        Verdict::Unaddressable => Some("unaddressable"),
        Verdict::Candidate | Verdict::ExpiredLog => None,
    };
    let why = match rule {
        Some(_) => format!("{tool} would delete it; we keep it: {}", d.detail),
        None => format!(
            "{tool} would delete it; our listing judged it a candidate the plan does not delete"
        ),
    };
    (d.verdict.as_str().to_owned(), rule, why)
}

/// Compares `plan`'s delete list with `their` list. `decisions`: our
/// verdicts for their keys (any not among them was not in our listing);
/// `job`: the existing job's limits, which explain what only we delete.
pub fn compare(
    plan: &SealedPlan,
    their: &TheirList,
    decisions: &[Decision],
    job: &ExistingJob,
) -> Comparison {
    let ours: BTreeMap<&str, &crate::plan::PlannedDelete> =
        plan.delete.iter().map(|d| (d.key.as_str(), d)).collect();
    let theirs: BTreeSet<&str> = their.keys.iter().map(String::as_str).collect();
    let verdicts: BTreeMap<&str, &Decision> = decisions
        .iter()
        .map(|d| (d.relative_key.as_str(), d))
        .collect();
    let now = plan.tokens.now_ms;
    let tool = job.tool.as_str();
    let mut diffs = Vec::new();
    for (k, d) in &ours {
        if theirs.contains(k) {
            continue;
        }
        let (rule, why) = if k.starts_with("_delta_log/") && !job.removes_log_files {
            (
                Some("their-scope-log"),
                format!("a transaction log file: {tool} never removes log files"),
            )
        } else if job
            .older_than
            .is_some_and(|w| d.last_modified_ms > now.saturating_sub(w.0))
        {
            (
                Some("their-window"),
                format!(
                    "younger than {tool}'s own limit of {}",
                    crate::duration::human_ms(job.older_than.map_or(0, |w| w.0))
                ),
            )
        } else {
            (
                None,
                format!("we would delete it, {tool} keeps it, and no rule says why"),
            )
        };
        diffs.push(Difference {
            key: (*k).to_owned(),
            side: Side::Ours,
            verdict: "candidate".into(),
            rule: rule.map(str::to_owned),
            why,
        });
    }
    for k in &theirs {
        if ours.contains_key(k) {
            continue;
        }
        let (verdict, rule, why) = their_only(verdicts.get(k).copied(), tool);
        diffs.push(Difference {
            key: (*k).to_owned(),
            side: Side::Theirs,
            verdict,
            rule: rule.map(str::to_owned),
            why,
        });
    }
    for l in &their.outside {
        diffs.push(Difference {
            key: l.clone(),
            side: Side::Theirs,
            verdict: "outside".into(),
            rule: None,
            why: format!("{tool} names it, and it is not under the table"),
        });
    }
    let mut explained: BTreeMap<String, u64> = BTreeMap::new();
    let mut unexplained = 0;
    for d in &diffs {
        match &d.rule {
            Some(r) => *explained.entry(r.clone()).or_default() += 1,
            None => unexplained += 1,
        }
    }
    diffs.sort_by(|a, b| {
        a.rule
            .is_some()
            .cmp(&b.rule.is_some())
            .then_with(|| a.key.cmp(&b.key))
    });
    diffs.truncate(MAX_KEPT_DIFFERENCES);
    let both = ours.keys().filter(|k| theirs.contains(*k)).count() as u64;
    Comparison {
        at_ms: now,
        plan_digest: plan.digest.clone(),
        tool: tool.to_owned(),
        ours: ours.len() as u64,
        theirs: (theirs.len() + their.outside.len()) as u64,
        both,
        explained,
        unexplained,
        recorded_ms: 0,
        differences: diffs,
    }
}

/// The UTC day of `ms` (days since the epoch).
pub(crate) fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(older: Option<i64>) -> ExistingJob {
        ExistingJob {
            tool: "vacuum".into(),
            older_than: older.map(crate::duration::DurationMs),
            removes_log_files: false,
        }
    }

    fn decision(key: &str, verdict: Verdict, detail: &str) -> Decision {
        Decision {
            key: format!("s3://b/t/{key}"),
            relative_key: key.into(),
            verdict,
            detail: detail.into(),
            size: 1,
            last_modified_ms: 0,
            etag: None,
            version_id: None,
        }
    }

    #[test]
    fn their_lines_in_any_spelling_become_the_tables_keys() {
        let l = their_keys(
            "s3://b/t",
            &[],
            "# vacuum\n\ns3a://b/t/a.parquet\ns3://b/t/b.parquet\nc.parquet\ns3://other/x.parquet\n://no-scheme\n",
        )
        .unwrap();
        assert_eq!(
            l.keys,
            vec![
                "a.parquet",
                "b.parquet",
                "c.parquet",
                "s3://other/x.parquet"
            ]
        );
        let f = their_keys("file:///w/t", &[], "/w/t/a\nfile:/w/t/b\nfile:///w/t/c\n").unwrap();
        assert_eq!(f.keys, vec!["a", "b", "c"]);
        // A CSV export: its header and quotes; only a first line is a header.
        let csv = "orphan_file_location\n\"s3://b/t/data/a.parquet\"\nheaderish\n";
        let c = their_keys("s3://b/t", &[], csv).unwrap();
        assert_eq!(c.keys, vec!["data/a.parquet", "headerish"]);
        // Names are never decoded: `a%20b` and `a b` are two keys.
        let e = their_keys("file:///w/t", &[], "/w/t/data/a b\n").unwrap();
        assert_eq!(e.keys, vec!["data/a b"]);
    }

    #[test]
    fn every_difference_has_a_rule_or_counts_as_unexplained() {
        let plan = crate::plan::plan_for_tests(
            &[
                ("a.parquet", 1),
                ("new.parquet", 1),
                ("_delta_log/00.json", 1),
                ("odd.parquet", 1),
            ],
            None,
        );
        let mut plan = plan;
        let now = plan.tokens.now_ms;
        for d in &mut plan.delete {
            d.last_modified_ms = if d.key == "new.parquet" {
                now - 1000
            } else {
                now - 30 * DAY_MS
            };
        }
        let their = TheirList {
            keys: vec![
                "a.parquet".into(),
                "dv.bin".into(),
                "held.parquet".into(),
                "ghost.parquet".into(),
            ],
            outside: vec!["s3://elsewhere/x".into()],
        };
        let decisions = vec![
            decision(
                "dv.bin",
                Verdict::Referenced,
                "deletion vector of a live file of Delta version 3",
            ),
            decision("held.parquet", Verdict::Protected, "legal hold"),
        ];
        let c = compare(&plan, &their, &decisions, &job(Some(7 * DAY_MS)));
        assert_eq!((c.ours, c.theirs, c.both), (4, 5, 1));
        assert_eq!(c.explained["their-window"], 1);
        assert_eq!(c.explained["their-scope-log"], 1);
        assert_eq!(c.explained["their-gap-deletion-vector"], 1);
        assert_eq!(c.explained["hold"], 1);
        // odd.parquet (ours, old, no rule), ghost.parquet (unlisted), the outside line.
        assert_eq!(c.unexplained, 3, "{:#?}", c.differences);
        assert!(c.differences[..3].iter().all(|d| d.rule.is_none()));
        assert_eq!(c.different(), 7);
    }
}
