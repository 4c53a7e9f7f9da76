//! `lakesweep compare PLAN.json OTHER.txt`: diffs a plan's delete list with
//! another tool's candidate list (one key or URI per line: the output of
//! Iceberg's `remove_orphan_files`, `VACUUM ... DRY RUN`, a script). This is
//! how a team runs lakesweep in report-only mode beside its old job. The
//! planner reads the list (`their-keys`: any spelling made the table's key);
//! `sweep --fleet --compare-with` records the same comparison, explained, in
//! the ledger.

use std::process::ExitCode;

use crate::cli::CompareCmd;
use crate::component::wt;
use crate::error::HostError;
use std::collections::BTreeSet;

use serde_json::{json, Value};

/// Three-way split of two candidate lists.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Keys only lakesweep would delete.
    pub only_ours: BTreeSet<String>,
    /// Keys only the other tool would delete.
    pub only_theirs: BTreeSet<String>,
    /// Keys both would delete.
    pub both: BTreeSet<String>,
    /// Lines of the other list that name something outside the table.
    pub outside: BTreeSet<String>,
}

/// The three-way split of the plan's delete keys (`ours`) and the other
/// tool's list as the planner read it (`their-keys`: every spelling made
/// the table's key, or an absolute URI under another root). An absolute
/// key the plan does not delete names something outside the table.
pub fn diff(ours: BTreeSet<String>, their: wt::TheirList) -> Diff {
    let mut d = Diff::default();
    let mut theirs = BTreeSet::new();
    for k in their.keys {
        if k.contains("://") && !ours.contains(&k) {
            d.outside.insert(k);
        } else {
            theirs.insert(k);
        }
    }
    d.outside.extend(their.outside);
    for k in &ours {
        if theirs.contains(k) {
            d.both.insert(k.clone());
        } else {
            d.only_ours.insert(k.clone());
        }
    }
    d.only_theirs = theirs.difference(&ours).cloned().collect();
    d
}

impl Diff {
    /// As one JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "onlyOurs": self.only_ours, "onlyTheirs": self.only_theirs,
            "both": self.both, "outsideTable": self.outside,
        })
    }

    /// As a report.
    pub fn human(&self) -> String {
        let mut out = format!(
            "both: {}   only lakesweep: {}   only the other tool: {}   outside the table: {}\n",
            self.both.len(),
            self.only_ours.len(),
            self.only_theirs.len(),
            self.outside.len()
        );
        for (title, set) in [
            ("only lakesweep would delete", &self.only_ours),
            (
                "only the other tool would delete (lakesweep keeps them: see `lakesweep explain`)",
                &self.only_theirs,
            ),
            ("outside the table (never deletable)", &self.outside),
        ] {
            if !set.is_empty() {
                out.push_str(&format!("{title}:\n"));
                for k in set {
                    out.push_str(&format!("  {}\n", crate::commands::report::esc(k)));
                }
            }
        }
        out
    }
}

/// `compare PLAN OTHER`: the plan's delete list against another tool's
/// candidate list.
pub async fn command(a: &CompareCmd) -> Result<ExitCode, HostError> {
    let plan = &a.plan;
    let other = &a.other;
    let text = std::fs::read_to_string(plan).map_err(|e| refused!("read {plan}: {e}"))?;
    let mut planner =
        crate::component::Planner::load(&crate::component::wasm_path(a.planner.wasm.as_deref()))?;
    let sealed = planner
        .verify_plan(&text)
        .map_err(|e| refused!("{plan}: {e}"))?;
    let theirs = std::fs::read_to_string(other).map_err(|e| refused!("read {other}: {e}"))?;
    let ours = sealed.delete.into_iter().map(|d| d.key).collect();
    let their = planner.their_keys(&sealed.table_location, &[], &theirs)?;
    let d = diff(ours, their);
    if a.json {
        outln!("{}", d.to_json());
    } else {
        out!("{}", d.human());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> BTreeSet<String> {
        k.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn three_way_split_with_other_roots_and_lines_outside() {
        let ours = keys(&["data/a.parquet", "data/b.parquet", "s3://b/ext/o.parquet"]);
        let their = wt::TheirList {
            keys: vec![
                "data/a.parquet".into(),
                "data/c.parquet".into(),
                "s3://b/ext/o.parquet".into(),
                "s3://b/other/x".into(),
            ],
            outside: vec!["://bad".into()],
        };
        let d = diff(ours, their);
        assert_eq!(d.both, keys(&["data/a.parquet", "s3://b/ext/o.parquet"]));
        assert_eq!(d.only_ours, keys(&["data/b.parquet"]));
        assert_eq!(d.only_theirs, keys(&["data/c.parquet"]));
        assert_eq!(d.outside, keys(&["s3://b/other/x", "://bad"]));
    }
}
