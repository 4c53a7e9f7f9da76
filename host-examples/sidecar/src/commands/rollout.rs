//! `lakesweep move`: a fleet's cohort from one mode to the other. Every
//! table of the cohort is moved, or none: each table's ledger is locked and
//! entered in the fleet, and to `enforce` every table's gate (days of
//! shadow runs, every difference of the latest comparison explained) must
//! be open; then each ledger records the move with who and why, and the
//! fleet document is written with the cohort's new mode. The planner
//! judges the gates and writes the document; this module reads, locks and
//! stores.

use std::process::ExitCode;

use serde_json::json;

use crate::cli::MoveCmd;
use crate::component::{wasm_path, wt, LedgerHandle, Planner};
use crate::error::HostError;
use crate::session::ledger::{default_ledger, Lock};
use crate::stores::Store;

/// One table of the cohort, its ledger open and locked.
struct Opened {
    table: String,
    ledger_uri: String,
    store: Store,
    ledger: LedgerHandle,
    mode: wt::Mode,
}

/// Runs `move`.
pub async fn command(a: &MoveCmd) -> Result<ExitCode, HostError> {
    let mut locks = Vec::new();
    let r = locked(a, &mut locks).await;
    for l in locks {
        l.release().await;
    }
    let moved = r?;
    if a.json {
        outln!(
            "{}",
            json!({"cohort": a.cohort, "to": a.to, "tables": moved})
        );
    } else {
        for t in &moved {
            outln!("{t}: moved to {}", a.to);
        }
        outln!(
            "cohort {} is in {} (fleet document {} written)",
            a.cohort,
            a.to,
            a.fleet
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn locked(a: &MoveCmd, locks: &mut Vec<Lock>) -> Result<Vec<String>, HostError> {
    let now = a.now.now_ms();
    let to = match a.to.as_str() {
        "enforce" => wt::Mode::Enforce,
        _ => wt::Mode::Shadow,
    };
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let fleet = crate::stores::read_document(&a.fleet).await?;
    let tables = planner.fleet_tables(&fleet, &a.cohort)?;
    let mut opened = Vec::new();
    for t in &tables {
        let table = crate::stores::table_uri(t)?;
        let ledger_uri = default_ledger(&table);
        locks.push(Lock::take(&ledger_uri).await?);
        let store = Store::for_uri(&ledger_uri)?;
        let ledger = crate::session::ledger::open(&mut planner, &store, &ledger_uri)
            .await?
            .ok_or_else(|| {
                refused!("{table}: no ledger at {ledger_uri}: its shadow runs are recorded there (run `sweep --fleet` first)")
            })?;
        let d = planner.ledger_enter_fleet(ledger, &fleet, now)?;
        opened.push(Opened {
            table,
            ledger_uri,
            store,
            ledger,
            mode: d.mode,
        });
    }
    if to == wt::Mode::Enforce {
        let mut closed = Vec::new();
        for o in &opened {
            let g = planner.ledger_rollout_gate(o.ledger, now)?;
            if !g.passed && o.mode != to {
                closed.push(format!("{}: {}", o.table, g.why.join("; ")));
            }
        }
        if !closed.is_empty() {
            return Err(refused!(
                "cohort {} stays in shadow, nothing moved: the gate is closed for {} of {} tables: {}",
                a.cohort,
                closed.len(),
                opened.len(),
                closed.join(" | ")
            ));
        }
    }
    let mut moved = Vec::new();
    for o in &opened {
        if o.mode != to {
            planner.ledger_move_mode(
                o.ledger,
                to,
                &a.by,
                &a.why,
                now,
                a.future.allow_future_now,
            )?;
            moved.push(o.table.clone());
        }
        // Saved either way: entering the fleet may have recorded a move.
        crate::session::ledger::save(&mut planner, o.ledger, &o.store, &o.ledger_uri).await?;
    }
    let doc = planner.fleet_with_mode(&fleet, &a.cohort, to)?;
    crate::stores::write_document(&a.fleet, doc).await?;
    Ok(moved)
}
