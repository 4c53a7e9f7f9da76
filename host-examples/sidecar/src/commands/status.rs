//! `lakesweep status TABLE...`: is each table's sweep still running? From
//! each table's ledger: when its last step ran, its objects per state (and
//! their pinned bytes), what waits and until when, its gates. With
//! `--max-age`, a table whose last step is older (or that has no ledger,
//! or no recorded step) is stale and the exit code says so; `--prometheus`
//! writes the same as Prometheus text-format metrics for node-exporter's
//! textfile collector, so "no sweep for N days" can page someone.

use std::process::ExitCode;

use crate::cli::StatusCmd;
use crate::error::HostError;
use std::collections::BTreeMap;

use crate::commands::report::{bytes, duration, esc, time};
use crate::component::{wasm_path, wt, Planner};
use crate::names::state_name;
use crate::session::ledger::default_ledger;
use crate::stores::Store;

/// One table's status.
pub struct TableStatus {
    /// The table location.
    pub table: String,
    /// What its ledger says; `Err`: no ledger, or one that was refused (why).
    pub ledger: Result<LedgerStatus, HostError>,
    /// Whether someone must look (the planner's judgement: never swept,
    /// too old, clocks apart, damage open), and why.
    pub stale: bool,
    /// Why it is stale, in words.
    pub why: Vec<String>,
}

/// What a readable ledger says.
pub struct LedgerStatus {
    /// When the last sweep or reconcile step ran.
    pub last_step_ms: Option<i64>,
    /// Its revision.
    pub revision: u64,
    /// Objects and pinned bytes per state.
    pub states: BTreeMap<&'static str, (u64, u64)>,
    /// What waits, and from when.
    pub outlook: Vec<wt::Waiting>,
    /// Its gates.
    pub gates: wt::Gates,
    /// The halts it lengthened its quarantine for.
    pub halts: Vec<wt::HaltSeen>,
    /// The table's own stop switch as read now: set (why), or not.
    pub halted: Option<String>,
    /// The table's rollout over a fleet (the planner's document), if any.
    pub rollout: Option<serde_json::Value>,
    /// The last full restore drill, if any.
    pub full_drill: Option<wt::FullDrill>,
    /// Why the full-restore-drill gate is not met (the planner's words).
    pub full_drill_missing: Option<String>,
}

/// The status of one table: its ledger read and judged by the planner.
async fn table_status(
    planner: &mut Planner,
    table: &str,
    uri: &str,
    now_ms: i64,
    max_age_ms: Option<i64>,
) -> TableStatus {
    let judged = async {
        let store = Store::for_uri(uri)?;
        let l = crate::session::ledger::open(planner, &store, uri)
            .await
            .map_err(|e| refused!("the ledger at {uri} is refused: {e}"))?;
        let Some(l) = l else {
            let f = planner.sweep_freshness(None, table, now_ms, max_age_ms)?;
            return Ok::<_, HostError>((Err(refused!("no ledger at {uri}: never swept")), f));
        };
        // A ledger of another table is refused here: it says nothing of this one.
        let mut f = planner
            .sweep_freshness(Some(l), table, now_ms, max_age_ms)
            .map_err(|e| refused!("the ledger at {uri} is refused: {e}"))?;
        // The full restore drill is a gate once one was ever run: a missed
        // target or an overdue drill is stale.
        let full_drill_missing = planner.ledger_full_drill_missing(l, now_ms, false)?;
        if let Some(why) = &full_drill_missing {
            f.stale = true;
            f.why.push(why.clone());
        }
        let mut states: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
        let mut read = 0u64;
        loop {
            let piece = planner.ledger_objects(l, read, 8192)?;
            if piece.is_empty() {
                break;
            }
            read += piece.len() as u64;
            for o in piece {
                let e = states.entry(state_name(o.state)).or_default();
                e.0 += 1;
                e.1 += o.version.size;
            }
        }
        let verified = planner.ledger_verified(l)?;
        if verified.objects > 0 {
            let e = states
                .entry(state_name(wt::ObjectState::Verified))
                .or_default();
            e.0 += verified.objects;
            e.1 += verified.bytes;
        }
        let status = LedgerStatus {
            last_step_ms: planner.ledger_last_step_ms(l)?,
            revision: planner.ledger_revision(l)?,
            states,
            outlook: planner.ledger_outlook(l, now_ms)?,
            gates: planner.ledger_gates(l)?,
            halts: planner.ledger_halts(l)?,
            full_drill: planner.ledger_full_drills(l)?.pop(),
            full_drill_missing,
            rollout: planner
                .ledger_rollout_document(l, now_ms)?
                .and_then(|d| serde_json::from_str(&d).ok()),
            halted: {
                let loc = planner.ledger_table_location(l)?;
                let sw = planner.stop_switches(&[loc], &[])?;
                let readings = crate::session::switch::read_switches(&sw).await;
                planner
                    .check_stop_switches(&sw, &readings)
                    .err()
                    .map(|e| e.to_string())
            },
        };
        Ok((Ok(status), f))
    };
    match judged.await {
        Ok((ledger, f)) => TableStatus {
            table: table.to_owned(),
            ledger,
            stale: f.stale,
            why: f.why,
        },
        // A ledger that cannot be read or is refused: someone must look.
        Err(e) => TableStatus {
            table: table.to_owned(),
            why: vec![e.to_string()],
            ledger: Err(e),
            stale: true,
        },
    }
}

/// The status of every table at `now_ms` (`ledger`: the one table's
/// ledger, when not the default); `max_age_ms` judges staleness.
pub async fn run(
    tables: &[String],
    ledger: Option<&str>,
    now_ms: i64,
    max_age_ms: Option<i64>,
    wasm: Option<&str>,
) -> Result<Vec<TableStatus>, HostError> {
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let mut out = Vec::new();
    for table in tables {
        let uri = ledger
            .map(str::to_owned)
            .unwrap_or_else(|| default_ledger(table));
        out.push(table_status(&mut planner, table, &uri, now_ms, max_age_ms).await);
    }
    Ok(out)
}

/// Every gate by name (each must read 0).
fn gate_values(g: &wt::Gates) -> [(&'static str, u64); 5] {
    [
        ("deleted_outside_approval", g.deleted_outside_approval),
        ("approved_not_deleted", g.approved_not_deleted),
        ("approvals_after_newer_hold", g.approvals_after_newer_hold),
        ("damaged", g.damaged),
        (
            "unknown_unreconciled",
            g.unknown_total.saturating_sub(g.unknown_reconciled),
        ),
    ]
}

/// The report for people.
pub fn human(all: &[TableStatus], now_ms: i64) -> String {
    let mut out = String::new();
    for s in all {
        out.push_str(&format!("{}\n", esc(&s.table)));
        match &s.ledger {
            Err(why) => out.push_str(&format!("  {}\n", esc(&why.to_string()))),
            Ok(l) => {
                match l.last_step_ms {
                    Some(t) if t > now_ms => out.push_str(&format!(
                        "  last step     {} ({} ahead of this clock), ledger revision {}\n",
                        time(t),
                        duration(t - now_ms),
                        l.revision
                    )),
                    Some(t) => out.push_str(&format!(
                        "  last step     {} ({} ago), ledger revision {}\n",
                        time(t),
                        duration(now_ms.saturating_sub(t)),
                        l.revision
                    )),
                    None => out.push_str(&format!(
                        "  last step     not recorded (a ledger saved before steps were dated), revision {}\n",
                        l.revision
                    )),
                }
                match &l.halted {
                    Some(why) => out.push_str(&format!("  HALTED        {}\n", esc(why))),
                    None => out.push_str("  stop switch   not set\n"),
                }
                if let Some(d) = &l.full_drill {
                    out.push_str(&format!(
                        "  full drill    {}: bundle {} into {}, took {}, recovery point {} back: {}\n",
                        time(d.run.started_ms),
                        esc(&d.run.bundle_id),
                        esc(&d.run.scratch),
                        duration(d.run.finished_ms - d.run.started_ms),
                        duration(d.run.started_ms - d.run.recovery_point_ms),
                        if d.passed { "passed" } else { "FAILED" }
                    ));
                }
                if let Some(r) = &l.rollout {
                    out.push_str(&rollout_text(r, now_ms));
                }
                for h in &l.halts {
                    out.push_str(&format!(
                        "  halt          {} by {} ({}): quarantine of {} objects {} longer\n",
                        time(h.at_ms),
                        esc(&h.by),
                        esc(&h.reason),
                        h.objects,
                        duration(h.extension_ms)
                    ));
                }
                for (state, (n, b)) in &l.states {
                    out.push_str(&format!("  {state:<22} {n:>6}  {:>10}\n", bytes(*b)));
                }
                if !l.outlook.is_empty() {
                    out.push_str("  next steps:\n");
                    out.push_str(&crate::commands::sweep::outlook_text(
                        &l.outlook, now_ms, "    ",
                    ));
                }
                let open: Vec<_> = gate_values(&l.gates)
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .collect();
                if open.is_empty() {
                    out.push_str("  gates         all 0\n");
                } else {
                    for (g, n) in open {
                        out.push_str(&format!("  GATE {g} = {n}\n"));
                    }
                }
            }
        }
        for why in &s.why {
            out.push_str(&format!("  STALE: {}\n", esc(&why.to_string())));
        }
    }
    out
}

/// A table's rollout in words: its cohort and mode, how long it has run in
/// shadow, the latest comparison's agreement, the open differences, and
/// the gate.
fn rollout_text(r: &serde_json::Value, now_ms: i64) -> String {
    let mut out = String::new();
    let mode = r["mode"].as_str().unwrap_or("?");
    out.push_str(&format!(
        "  rollout       cohort {}, {mode}",
        esc(r["cohort"].as_str().unwrap_or(""))
    ));
    if let (Some(since), "shadow") = (r["shadowSinceMs"].as_i64(), mode) {
        out.push_str(&format!(
            " for {} ({} comparisons on {} days)",
            duration(now_ms.saturating_sub(since)),
            r["gate"]["runs"],
            r["gate"]["daysWithRuns"]
        ));
    }
    out.push('\n');
    if let Some(c) = r["comparisons"].as_array().and_then(|c| c.last()) {
        out.push_str(&format!(
            "  latest        {}: agreement {:.1}% (we {}, they {}, both {}), {} unexplained\n",
            time(c["atMs"].as_i64().unwrap_or(0)),
            r["agreement"].as_f64().unwrap_or(0.0) * 100.0,
            c["ours"],
            c["theirs"],
            c["both"],
            c["unexplained"]
        ));
        for d in c["differences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["rule"].is_null())
            .take(20)
        {
            out.push_str(&format!(
                "  OPEN          {} ({}): {}\n",
                esc(d["key"].as_str().unwrap_or("")),
                d["side"].as_str().unwrap_or(""),
                esc(d["why"].as_str().unwrap_or(""))
            ));
        }
    }
    let g = &r["gate"];
    if g["passed"] == true {
        out.push_str("  gate          open: the cohort may move to enforce\n");
    } else if mode == "shadow" {
        for w in g["why"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  GATE closed   {}\n",
                esc(w.as_str().unwrap_or(""))
            ));
        }
    }
    out
}

/// A label value escaped as the text format asks (`\`, `"`, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text-format metrics (version 0.0.4) of every table.
pub fn prometheus(all: &[TableStatus]) -> String {
    let mut m: BTreeMap<&str, (&str, Vec<String>)> = BTreeMap::new();
    let mut add = |name: &'static str, help: &'static str, labels: String, value: String| {
        m.entry(name)
            .or_insert((help, Vec::new()))
            .1
            .push(format!("{name}{{{labels}}} {value}"));
    };
    for s in all {
        let t = format!("table=\"{}\"", label(&s.table));
        add(
            "lakesweep_ledger_readable",
            "1 when the table has a ledger lakesweep reads, else 0 (never swept, or refused).",
            t.clone(),
            u8::from(s.ledger.is_ok()).to_string(),
        );
        add(
            "lakesweep_stale",
            "1 when the table needs someone: never swept, no step within --max-age, clocks apart, or deleted keys the table references (damage).",
            t.clone(),
            u8::from(s.stale).to_string(),
        );

        let Ok(l) = &s.ledger else { continue };
        if let Some(ms) = l.last_step_ms {
            add(
                "lakesweep_last_step_timestamp_seconds",
                "When the table's last sweep or reconcile step ran (Unix time).",
                t.clone(),
                format!("{}", ms as f64 / 1000.0),
            );
        }
        add(
            "lakesweep_ledger_revision",
            "The ledger's revision (one per step).",
            t.clone(),
            l.revision.to_string(),
        );
        for (state, (n, b)) in &l.states {
            let sl = format!("{t},state=\"{state}\"");
            add(
                "lakesweep_ledger_objects",
                "Objects of the ledger per state.",
                sl.clone(),
                n.to_string(),
            );
            add(
                "lakesweep_ledger_bytes",
                "Pinned bytes of the ledger's objects per state.",
                sl,
                b.to_string(),
            );
        }
        for (gate, n) in gate_values(&l.gates) {
            add(
                "lakesweep_gate",
                "The ledger's gates: each must read 0.",
                format!("{t},gate=\"{gate}\""),
                n.to_string(),
            );
        }
    }
    let mut out = String::new();
    for (name, (help, lines)) in m {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// Writes `text` to `path` as node-exporter's textfile collector reads it:
/// whole or not at all (a temporary file renamed over it); `-`: stdout.
pub fn write_metrics(path: &str, text: &str) -> Result<(), HostError> {
    if path == "-" {
        out!("{text}");
        return Ok(());
    }
    let tmp = format!("{path}.tmp.{}", std::process::id());
    std::fs::write(&tmp, text).map_err(|e| refused!("write {tmp}: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| refused!("rename {tmp} to {path}: {e}"))
}

/// `status TABLE... [--catalog C --namespace NS]`: each table's sweep,
/// printed (or as JSON, or Prometheus metrics); exit 1 when one is stale.
pub async fn command(a: &StatusCmd) -> Result<ExitCode, HostError> {
    let mut tables = a
        .tables
        .iter()
        .map(|t| crate::stores::table_uri(t))
        .collect::<Result<Vec<_>, _>>()?;
    // A namespace table whose location cannot be found is a row of
    // its own (stale, with why): it never hides the others.
    let mut unlocated = Vec::new();
    if let (Some(c), Some(ns)) = (&a.catalog, &a.namespace) {
        let catalog = crate::catalogs::Catalog::parse(c)?;
        let located = crate::commands::estate::survey(
            Some(&catalog),
            Some(ns),
            None,
            &[],
            a.planner.wasm.as_deref(),
            4,
        )
        .await?;
        for (m, t) in located {
            match t {
                Ok(t) if !tables.contains(&t) => tables.push(t),
                Ok(_) => {}
                Err(e) => unlocated.push((m.label, e)),
            }
        }
    }
    let now = a.now.now_ms();
    let mut all = run(
        &tables,
        a.ledger.as_deref(),
        now,
        a.max_age,
        a.planner.wasm.as_deref(),
    )
    .await?;
    all.extend(unlocated.into_iter().map(|(label, e)| TableStatus {
        table: label,
        why: vec![format!("not located: {e}")],
        ledger: Err(refused!("not located: {e}")),
        stale: true,
    }));
    if let Some(path) = &a.prometheus {
        write_metrics(path, &prometheus(&all))?;
    }
    if a.json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|s| match &s.ledger {
                Ok(l) => serde_json::json!({
                    "table": s.table, "stale": s.stale, "why": s.why, "lastStepMs": l.last_step_ms,
                    "revision": l.revision,
                    "states": l.states.iter().map(|(k, (n, b))| (k.to_string(), serde_json::json!({"count": n, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
                    "outlook": crate::commands::sweep::outlook_json(&l.outlook),
                    "gates": crate::commands::sweep::gates_json(&l.gates),
                    "halted": l.halted,
                    "rollout": l.rollout,
                    "fullDrill": l.full_drill.as_ref().map(|d| serde_json::json!({
                        "startedMs": d.run.started_ms, "finishedMs": d.run.finished_ms,
                        "bundle": d.run.bundle_id, "scratch": d.run.scratch,
                        "snapshotId": d.run.snapshot_id, "recoveryPointMs": d.run.recovery_point_ms,
                        "rtoTargetMs": d.rto_target_ms, "rpoTargetMs": d.rpo_target_ms,
                        "everyMs": d.every_ms, "passed": d.passed, "why": d.why})),
                    "fullDrillGate": l.full_drill_missing,
                    "halts": l.halts.iter().map(|h| serde_json::json!({"switch": h.switch, "generation": h.generation, "reason": h.reason, "by": h.by, "atMs": h.at_ms, "seenMs": h.seen_ms, "extensionMs": h.extension_ms, "objects": h.objects})).collect::<Vec<_>>()}),
                Err(why) => serde_json::json!({"table": s.table, "stale": s.stale, "why": s.why, "error": why.to_string()}),
            })
            .collect();
        outln!("{}", serde_json::Value::Array(v));
    } else if a.prometheus.as_deref() != Some("-") {
        out!("{}", human(&all, now));
    }
    Ok(if all.iter().any(|s| s.stale) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_each_metric_is_typed_once() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let all = vec![
            TableStatus {
                table: "file:///t\"1".into(),
                ledger: Err("no ledger".into()),
                stale: true,
                why: vec![],
            },
            TableStatus {
                table: "file:///t2".into(),
                ledger: Err("no ledger".into()),
                stale: true,
                why: vec![],
            },
        ];
        let text = prometheus(&all);

        assert_eq!(text.matches("# TYPE lakesweep_stale gauge").count(), 1);
        assert!(
            text.contains("lakesweep_stale{table=\"file:///t\\\"1\"} 1"),
            "{text}"
        );
        assert!(text.contains("lakesweep_ledger_readable{table=\"file:///t2\"} 0"));
    }
}
