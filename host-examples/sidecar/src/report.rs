//! Renders a plan: the human report and the `--json` document.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::component::{verdict_name, wt};
use crate::plan::Outcome;

/// The `--json` document: `delete` (sorted relative keys), `keep` (every
/// other listed object with its reason), `summary`, `warnings`, digest, tokens.
pub fn json(o: &Outcome) -> Value {
    let keep: Vec<Value> = o
        .decisions
        .values()
        .filter(|d| d.verdict != wt::Verdict::Candidate)
        .map(|d| json!({"key": d.relative_key, "reason": verdict_name(d.verdict), "detail": d.detail}))
        .collect();
    let delete: Vec<&Value> = o.plan["delete"]
        .as_array()
        .map(|a| a.iter().map(|d| &d["key"]).collect())
        .unwrap_or_default();
    json!({
        "table": o.plan["table_location"], "format": o.plan["format"], "delete": delete, "keep": keep,
        "summary": o.plan["summary"], "warnings": o.plan["warnings"],
        "digest": o.plan["digest"], "tokens": o.plan["tokens"],
        "unrepresentable": o.unrepresentable, "store_notes": o.store_notes,
    })
}

fn tally(v: &Value) -> (u64, u64) {
    (
        v["count"].as_u64().unwrap_or(0),
        v["bytes"].as_u64().unwrap_or(0),
    )
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
        } else {
            out.push(c);
        }
    }
    out
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
    let s = &plan["summary"];
    line(format!(
        "lakesweep plan for {}",
        esc(plan["table_location"].as_str().unwrap_or("?"))
    ));
    line(format!(
        "  metadata      {}",
        esc(plan["tokens"]["metadata_location"].as_str().unwrap_or("?"))
    ));
    if plan["format"] == "delta" {
        line(format!(
            "  version       {} (newest commit in _delta_log/, re-checked after listing)",
            plan["tokens"]["refs"]["version"]
        ));
        line(format!(
            "  versions kept {} (the newest and every --keep-version or lease)   log files read: {}",
            s["snapshots"], o.reads
        ));
    } else {
        line(format!("  pointer       {pointer_source}"));
        line(format!(
            "  snapshots     {} (all kept: expiry is planned separately)   blobs read: {}",
            s["snapshots"], o.reads
        ));
    }
    let (n, b) = tally(&s["listed"]);
    line(format!("  listed        {n:>6}  {:>10}", bytes(b)));
    let prefixes: Vec<&str> = s["swept_prefixes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str())
        .collect();
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
        let (n, b) = tally(&s["verdicts"][name]);
        if n > 0 {
            line(format!("  {name:<13} {n:>6}  {:>10}", bytes(b)));
        }
    }
    if let Some(r) = s["reclaimable"].as_object() {
        for (kind, t) in r {
            let (n, b) = tally(t);
            if n > 0 {
                line(format!(
                    "    reclaimable {kind:<14} {n:>5}  {:>10}",
                    bytes(b)
                ));
            }
        }
    }
    line(String::new());
    let by = |v: wt::Verdict| -> Vec<&wt::Decision> {
        o.decisions.values().filter(|d| d.verdict == v).collect()
    };
    let cands = by(wt::Verdict::Candidate);
    if cands.is_empty() {
        line("nothing to delete".into());
    } else {
        line(format!("would delete ({}):", cands.len()));
        for d in cands {
            line(format!("  {}  ({})", esc(&d.relative_key), bytes(d.size)));
        }
    }
    let kept: Vec<&wt::Decision> = o
        .decisions
        .values()
        .filter(|d| !matches!(d.verdict, wt::Verdict::Candidate | wt::Verdict::Referenced))
        .collect();
    if !kept.is_empty() {
        line(format!("kept although unreferenced ({}):", kept.len()));
        for d in kept {
            line(format!(
                "  {}  [{}] {}",
                esc(&d.relative_key),
                verdict_name(d.verdict),
                esc(&d.detail)
            ));
        }
    }
    if let Some(w) = plan["warnings"].as_array().filter(|w| !w.is_empty()) {
        line("warnings:".into());
        for x in w {
            line(format!("  - {}", esc(x.as_str().unwrap_or(""))));
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
        plan["digest"].as_str().unwrap_or("?")
    ));
    out
}

/// One object's verdict, for `explain`.
pub fn explain(d: &wt::Decision) -> String {
    let mut m: BTreeMap<&str, String> = BTreeMap::new();
    m.insert("key", esc(&d.relative_key));
    m.insert("verdict", verdict_name(d.verdict).into());
    m.insert("why", esc(&d.detail));
    m.insert("size", bytes(d.size));
    m.insert("last-modified-ms", d.last_modified_ms.to_string());
    let deletable = if d.verdict == wt::Verdict::Candidate {
        "yes: unreferenced by every snapshot in the metadata and older than the window"
    } else {
        "no"
    };
    m.insert("deletable", deletable.into());
    m.iter()
        .map(|(k, v)| format!("{k:<17} {v}\n"))
        .collect::<String>()
}
