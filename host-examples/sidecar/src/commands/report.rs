//! Renders a plan for people (the `--json` document is the plan itself,
//! with its report: `report-plan`).

use std::collections::BTreeMap;

use crate::component::wt;
use crate::names::verdict_name;
use crate::session::plan::Outcome;

/// Verdicts whose objects the sealed plan deletes (an unreferenced object
/// old enough, and `_delta_log/` entries past log retention).
fn deletable(v: wt::Verdict) -> bool {
    matches!(v, wt::Verdict::Candidate | wt::Verdict::ExpiredLog)
}

fn tally(t: Option<&wt::Tally>) -> (u64, u64) {
    t.map_or((0, 0), |t| (t.count, t.bytes))
}

/// A key (or a line naming keys) for human output: control characters and
/// backslashes escaped as Rust's `escape_debug` does (`\n`, `\t`, `\u{1b}`),
/// so a key can neither break a line nor fake another one. JSON output
/// carries keys unchanged.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || c.is_control() {
            out.extend(c.escape_debug());
        } else if is_format(c) {
            // Invisible, or reorders what follows (U+202E): a key could
            // read as a live file's name.
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `c` is a Unicode format character (general category Cf):
/// invisible (U+200B), or a bidirectional control (U+202E) that reorders
/// the text around it.
fn is_format(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
        | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

/// A time in milliseconds since the epoch as RFC 3339 (UTC).
pub fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| format!("{ms} ms since the epoch"))
}

/// A duration in milliseconds, for people (`1day 2h`).
pub fn duration(ms: i64) -> String {
    u64::try_from(ms)
        .map(|m| humantime::format_duration(std::time::Duration::from_millis(m)).to_string())
        .unwrap_or_else(|_| format!("{ms} ms"))
}

/// Bytes in binary units (`12.3 MiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The human report: summary, what would go, what is kept although
/// unreferenced and why, warnings.
pub fn human(o: &Outcome, pointer_source: &str) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let plan = &o.plan;
    let s = &plan.summary;
    line(format!("lakesweep plan for {}", esc(&plan.table_location)));
    line(format!(
        "  metadata      {}",
        esc(&plan.tokens.metadata_location)
    ));
    let cached = match o.cached_reads {
        0 => String::new(),
        n => format!(" ({n} from the digest cache)"),
    };
    if plan.format == wt::TableFormat::Delta {
        let version = plan.tokens.refs.iter().find(|r| r.name == "version");
        line(format!(
            "  version       {} (newest commit in _delta_log/, re-checked after listing)",
            version.map_or("null".into(), |r| r.snapshot_id.to_string())
        ));
        line(format!(
            "  versions kept {} (the newest and every --keep-version or lease)   log files read: {}{cached}",
            s.snapshots, o.reads
        ));
    } else {
        line(format!("  pointer       {pointer_source}"));
        line(format!(
            "  snapshots     {} of this metadata (all kept: expiry is planned separately)   blobs read: {}{cached}",
            s.snapshots, o.reads,
        ));
        if s.snapshots_elsewhere > 0 {
            line(format!(
                "                {} more kept: of an earlier document the pointer named, or a DR checkpoint",
                s.snapshots_elsewhere
            ));
        }
    }
    let (n, b) = tally(Some(&s.listed));
    line(format!("  listed        {n:>6}  {:>10}", bytes(b)));
    if s.listed_by_name > 0 {
        line(format!(
            "  by name       {:>6}  referenced files judged by name, their sizes not read (not in the bytes)",
            s.listed_by_name
        ));
    }
    let prefixes = &s.swept_prefixes;
    if prefixes.len() > 1 {
        line(format!(
            "  swept         {} (the table and its write.*.path roots outside it)",
            esc(&prefixes.join(", "))
        ));
    }
    for name in [
        "referenced",
        "young",
        "hidden",
        "near-miss",
        "unverified",
        "unaddressable",
        "folder-marker",
        "demoted",
        "candidate",
    ] {
        let (n, b) = tally(s.verdicts.iter().find(|v| v.name == name).map(|v| &v.tally));
        if n > 0 {
            line(format!("  {name:<13} {n:>6}  {:>10}", bytes(b)));
        }
    }
    for r in &s.reclaimable {
        let (n, b) = tally(Some(&r.tally));
        if n > 0 {
            let kind = &r.name;
            line(format!(
                "    reclaimable {kind:<14} {n:>5}  {:>10}",
                bytes(b)
            ));
        }
    }
    line(String::new());
    // What goes is the sealed plan's delete list, exactly: the report is
    // the plan seen another way.
    if plan.delete.is_empty() {
        line("nothing to delete".into());
    } else {
        line(format!("would delete ({}):", plan.delete.len()));
        for d in &plan.delete {
            let why = o
                .decisions
                .get(&d.key)
                .filter(|x| x.verdict == wt::Verdict::ExpiredLog)
                .map_or("", |_| "  [expired-log]");
            line(format!(
                "  {}  ({}){why}",
                esc(&d.key),
                bytes(d.version.size)
            ));
        }
    }
    let kept: Vec<&wt::Decision> = o
        .decisions
        .values()
        .filter(|d| !deletable(d.verdict) && d.verdict != wt::Verdict::Referenced)
        .collect();
    if !kept.is_empty() {
        line(format!("kept although unreferenced ({}):", kept.len()));
        // The table's log and lakesweep's own files are hidden by design:
        // one line each, not one per file.
        let folded = ["_delta_log/", "_lakesweep/"];
        for prefix in folded {
            let n = kept
                .iter()
                .filter(|d| d.verdict == wt::Verdict::Hidden && d.relative_key.starts_with(prefix))
                .count();
            if n > 0 {
                line(format!(
                    "  {prefix}  [hidden] {n} objects: {}",
                    if prefix == "_delta_log/" {
                        "the table's transaction log (--log-cleanup plans what log retention allows)"
                    } else {
                        "lakesweep's ledger and quarantine bundles"
                    }
                ));
            }
        }
        for d in kept.iter().filter(|d| {
            !(d.verdict == wt::Verdict::Hidden
                && folded.iter().any(|p| d.relative_key.starts_with(p)))
        }) {
            line(format!(
                "  {}  [{}] {}",
                esc(&d.relative_key),
                verdict_name(d.verdict),
                esc(&d.detail)
            ));
        }
    }
    if !plan.warnings.is_empty() {
        line("warnings:".into());
        for x in &plan.warnings {
            line(format!("  - {}", esc(x)));
        }
    }
    for n in &o.store_notes {
        line(format!("store: {}", esc(n)));
    }
    if !o.unrepresentable.is_empty() {
        line(format!(
            "kept, names this host cannot represent ({}; not UTF-8: never given to the planner, never deleted):",
            o.unrepresentable.len()
        ));
        for k in &o.unrepresentable {
            line(format!("  {}", esc(k)));
        }
    }
    line(format!(
        "plan digest {} (dry run: nothing was deleted; `lakesweep apply` deletes)",
        plan.digest
    ));
    out
}

/// One object's verdict, for `explain`.
pub fn explain(d: &wt::Decision) -> String {
    let mut m: BTreeMap<&str, String> = BTreeMap::new();
    m.insert("key", esc(&d.relative_key));
    m.insert("verdict", verdict_name(d.verdict).into());
    m.insert("why", esc(&d.detail));
    m.insert("size", bytes(d.version.size));
    m.insert("last-modified", time(d.version.last_modified_ms));
    m.insert("last-modified-ms", d.version.last_modified_ms.to_string());
    let deletable = match d.verdict {
        wt::Verdict::Candidate => {
            "yes: unreferenced by every snapshot in the metadata and older than the window"
        }
        wt::Verdict::ExpiredLog => "yes: a _delta_log entry past log retention (--log-cleanup)",
        _ => "no",
    };
    m.insert("deletable", deletable.into());
    m.iter()
        .map(|(k, v)| format!("{k:<17} {v}\n"))
        .collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_characters_are_escaped_like_control_characters() {
        assert_eq!(esc("data/a\u{202E}teuqrap.b"), "data/a\\u{202e}teuqrap.b");
        assert_eq!(esc("a\u{200B}b\u{FEFF}"), "a\\u{200b}b\\u{feff}");
        assert_eq!(esc("tab\there\\"), "tab\\there\\\\");
        assert_eq!(esc("é 表 ü"), "é 表 ü");
    }
}
