//! `lakesweep ledger show` and `lakesweep ledger verify`: a table's
//! deletion ledger, printed for people or as JSON.

use std::process::ExitCode;

use crate::cli::LedgerTarget;
use crate::commands::report;
use crate::error::HostError;
use crate::session::ledger;

/// `ledger show TABLE`: every object in flight with its state, and the
/// gates (with `archived`, every object verified deleted too).
pub async fn show(t: &LedgerTarget, archived: bool) -> Result<ExitCode, HostError> {
    let table = crate::stores::table_uri(&t.table)?;
    let uri = t
        .ledger
        .ledger
        .clone()
        .unwrap_or_else(|| ledger::default_ledger(&table));
    let shown = ledger::show(&uri, archived, t.planner.wasm.as_deref()).await?;
    if t.json {
        let objects: serde_json::Map<String, serde_json::Value> = shown
            .objects
            .iter()
            .map(|o| {
                (
                    o.key.clone(),
                    serde_json::json!({"state": crate::names::state_name(o.state),
                        "version": crate::names::version_json(&o.version),
                        "sinceMs": o.since_ms, "why": o.why,
                        "receipt": o.receipt.as_ref().map(crate::session::deletion::stored_receipt_json)}),
                )
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({"tableLocation": shown.table_location,
                "revision": shown.revision, "quarantineMs": shown.quarantine_ms,
                "verified": {"objects": shown.verified.objects,
                    "bytes": shown.verified.bytes, "archives": shown.verified.archives},
                "objects": objects, "gates": crate::commands::sweep::gates_json(&shown.gates)})
        );
    } else {
        outln!(
            "ledger of {} (revision {}, quarantine {}; {} verified deleted, {})",
            shown.table_location,
            shown.revision,
            report::duration(shown.quarantine_ms),
            shown.verified.objects,
            report::bytes(shown.verified.bytes)
        );
        for o in &shown.objects {
            outln!(
                "  {:<22} {}  since {}  {}",
                crate::names::state_name(o.state),
                report::esc(&o.key),
                report::time(o.since_ms),
                report::esc(&o.why)
            );
        }
        out!("{}", crate::commands::sweep::gates_text(&shown.gates));
    }
    Ok(ExitCode::SUCCESS)
}

/// `ledger verify TABLE`: the head, every file and every archive checked;
/// exit 1 when the counts do not add up.
pub async fn verify(t: &LedgerTarget) -> Result<ExitCode, HostError> {
    let table = crate::stores::table_uri(&t.table)?;
    let uri = t
        .ledger
        .ledger
        .clone()
        .unwrap_or_else(|| ledger::default_ledger(&table));
    let v = ledger::verify(&uri, t.planner.wasm.as_deref()).await?;
    let a = &v.audit;
    if t.json {
        outln!(
            "{}",
            serde_json::json!({"ledger": v.ledger_uri, "inFlight": a.in_flight,
                "verified": {"objects": a.verified.objects, "bytes": a.verified.bytes,
                    "archives": a.verified.archives},
                "archivesChecked": a.archives_checked, "problems": a.problems})
        );
    } else {
        for p in &a.problems {
            outln!("PROBLEM: {}", report::esc(p));
        }
        outln!(
            "{}: {} objects in flight; {} verified deleted ({}) in {} archives, {} checked: {}",
            v.ledger_uri,
            a.in_flight,
            a.verified.objects,
            report::bytes(a.verified.bytes),
            a.verified.archives,
            a.archives_checked,
            if a.problems.is_empty() {
                "the ledger verifies"
            } else {
                "the ledger does NOT verify"
            }
        );
    }
    Ok(if a.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
