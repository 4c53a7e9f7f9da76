//! `lakesweep compare PLAN.json OTHER.txt`: diffs a plan's delete list with
//! another tool's candidate list (one key or URI per line: the output of
//! Iceberg's `remove_orphan_files`, `VACUUM ... DRY RUN`, a script). This is
//! how a team runs lakesweep in report-only mode beside its old job.

use std::process::ExitCode;

use crate::cli::CompareCmd;
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

/// One spelling for a location or URI: `s3a`/`s3n` are `s3`, `file:/x` and
/// `/x` are `file:///x`, no trailing slash.
fn canonical(uri: &str) -> String {
    let u = uri.trim().trim_end_matches('/');
    for alias in ["s3a://", "s3n://"] {
        if let Some(rest) = u.strip_prefix(alias) {
            return format!("s3://{rest}");
        }
    }
    if let Some(rest) = u.strip_prefix("file://") {
        return format!("file:///{}", rest.trim_start_matches('/'));
    }
    if let Some(rest) = u.strip_prefix("file:") {
        return format!("file:///{}", rest.trim_start_matches('/'));
    }
    if u.starts_with('/') {
        return format!("file:///{}", u.trim_start_matches('/'));
    }
    u.to_owned()
}

/// Compares the plan's delete keys (`ours`, relative, or absolute for the
/// table's other write roots) under `table_location` with `other` (the
/// other tool's lines).
/// Lines that are URIs or absolute paths are made relative to the table;
/// bare lines are taken as relative keys. Blank lines and `#` comments are
/// skipped. Keys are compared exactly (no decoding).
pub fn diff(table_location: &str, ours: BTreeSet<String>, other: &str) -> Diff {
    let table = canonical(table_location);
    let mut d = Diff::default();
    let mut theirs = BTreeSet::new();
    let mut first = true;
    for line in other.lines() {
        let mut l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        // A CSV export's quoting (`"s3://b/t/x"`).
        if let Some(q) = l.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
            l = q;
        }
        // A CSV export's header line (Spark's `orphan_file_location`): a
        // first line that names no key (no `/`, no `.`).
        if std::mem::take(&mut first) && !l.contains('/') && !l.contains('.') {
            continue;
        }
        if l.contains("://") || l.starts_with('/') || l.starts_with("file:") {
            let c = canonical(l);
            match c.strip_prefix(&format!("{table}/")) {
                Some(rel) => {
                    theirs.insert(rel.to_owned());
                }
                // A key under one of the table's other write roots: the
                // plan names those by their absolute URI.
                None if ours.contains(&c) => {
                    theirs.insert(c);
                }
                None => {
                    d.outside.insert(l.to_owned());
                }
            }
        } else {
            theirs.insert(l.to_owned());
        }
    }
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
    let d = diff(&sealed.table_location, ours, &theirs);
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
    fn three_way_split_with_scheme_aliases() {
        let ours = keys(&["data/a.parquet", "data/b.parquet"]);
        let other = "# orphan files\ns3a://b/t/data/a.parquet\ndata/c.parquet\n\ns3://b/other/x\n";
        let d = diff("s3://b/t", ours, other);
        assert_eq!(d.both, BTreeSet::from(["data/a.parquet".to_owned()]));
        assert_eq!(d.only_ours, BTreeSet::from(["data/b.parquet".to_owned()]));
        assert_eq!(d.only_theirs, BTreeSet::from(["data/c.parquet".to_owned()]));
        assert_eq!(d.outside, BTreeSet::from(["s3://b/other/x".to_owned()]));
    }

    #[test]
    fn a_csv_export_with_a_header_and_quotes_compares_like_a_list() {
        let ours = keys(&["data/a.parquet", "data/b.parquet"]);
        let csv = "orphan_file_location\n\"s3://b/t/data/a.parquet\"\ns3://b/t/data/c.parquet\n";
        let d = diff("s3://b/t", ours.clone(), csv);
        assert_eq!(d.both, keys(&["data/a.parquet"]));
        assert_eq!(d.only_theirs, keys(&["data/c.parquet"]));
        assert!(d.outside.is_empty(), "{:?}", d.outside);
        // Only a first line can be a header; a key is never one.
        let d = diff("s3://b/t", ours, "data/a.parquet\nheaderish\n");
        assert_eq!(d.only_theirs, keys(&["headerish"]));
    }

    #[test]
    fn encoded_keys_are_not_decoded() {
        // A key under another write root is compared by its absolute URI.
        let e = diff(
            "s3://b/t",
            keys(&["s3://b/ext/data/o.parquet"]),
            "s3a://b/ext/data/o.parquet\n",
        );
        assert_eq!(e.both.len(), 1, "{:?}", e.outside);
        let d = diff("file:///w/t", keys(&["data/a%20b"]), "/w/t/data/a b\n");
        assert_eq!(d.only_theirs.len(), 1);
        assert_eq!(d.only_ours.len(), 1);
    }
}
