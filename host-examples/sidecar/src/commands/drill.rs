//! `lakesweep drill`: proves that quarantine bundles would restore, before
//! anyone relies on them. A seeded sample of the table's bundles (the core
//! draws it) is verified exactly as `restore` verifies one (every layer and
//! every pinned version against the bundle), nothing is committed, and the
//! core records the result in the ledger, where a policy's `restoreDrill`
//! gate looks for it before approving deletions.

use std::process::ExitCode;

use crate::cli::DrillCmd;
use crate::error::HostError;
use serde_json::{json, Value};

use crate::clock::clock_ms;
use crate::component::{wasm_path, wt, Planner};
use crate::session::ledger::{default_ledger, Lock};
use crate::stores::Store;

/// What a drill found.
pub struct Drilled {
    /// The drill record.
    pub drill: wt::Drill,
    /// The ledger's gates after it.
    pub gates: wt::Gates,
    /// Where the ledger was saved.
    pub ledger_uri: String,
}

/// A drill as `drill --json` writes it.
pub fn drill_json(d: &wt::Drill) -> Value {
    json!({"atMs": d.at_ms, "seed": d.seed, "bundlesTotal": d.bundles_total,
           "sampled": d.sampled,
           "failed": d.failed.iter().map(|f| (f.bundle_id.clone(), json!(f.why)))
                        .collect::<serde_json::Map<_, _>>(),
           "passed": d.passed})
}
/// Runs a drill of `sample` bundles of `table` (all when it has fewer),
/// drawn with `seed` (default: from the clock; reported either way).
pub async fn run(
    table: &str,
    ledger: Option<&str>,
    location_map: &[(String, String)],
    sample: u32,
    seed: Option<u64>,
    wasm: Option<&str>,
) -> Result<Drilled, crate::error::HostError> {
    let ledger_uri = ledger
        .map(str::to_owned)
        .unwrap_or_else(|| default_ledger(table));
    let lock = Lock::take(&ledger_uri).await?;
    let r = locked(table, &ledger_uri, location_map, sample, seed, wasm).await;
    lock.release().await;
    r
}

async fn locked(
    table: &str,
    ledger_uri: &str,
    location_map: &[(String, String)],
    sample: u32,
    seed: Option<u64>,
    wasm: Option<&str>,
) -> Result<Drilled, crate::error::HostError> {
    let store = Store::for_uri(table)?;
    let lstore = store.holding(ledger_uri)?;
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let ledger = crate::session::ledger::open(&mut planner, &lstore, ledger_uri)
        .await?
        .ok_or_else(|| {
            format!("no ledger at {ledger_uri}: a drill is recorded in the table's ledger (a first `sweep` creates it)")
        })?;
    let dirs = crate::commands::bundle::dirs(&store, table).await?;
    let ids: Vec<String> = dirs
        .keys()
        .filter_map(|d| d.rsplit('/').next().map(str::to_owned))
        .collect();
    let seed = seed.unwrap_or(clock_ms() as u64);
    let sampled = planner.drill_sample(&ids, sample, seed)?;
    let root = crate::commands::bundle::root(table);
    let mut results = Vec::new();
    for id in &sampled {
        let dir = format!("{root}/{id}");
        let why = if dirs.get(&dir) != Some(&true) {
            Some("copies but no bundle.json".to_owned())
        } else {
            match crate::commands::bundle::check(
                &mut planner,
                &store,
                table,
                location_map,
                &dir,
                Some(ledger),
            )
            .await
            {
                Err(e) => Some(format!("cannot be read: {e}")),
                Ok(c) if c.verification.complete => None,
                Ok(c) if c.verification.problems.is_empty() => Some("incomplete".into()),
                Ok(c) => Some(c.verification.problems.join("; ")),
            }
        };
        results.push(wt::DrillResult {
            bundle_id: id.clone(),
            failure: why,
        });
    }
    let drill =
        planner.ledger_record_drill(ledger, table, seed, ids.len() as u64, &results, clock_ms())?;
    crate::session::ledger::save(&mut planner, ledger, &lstore, ledger_uri).await?;
    Ok(Drilled {
        drill,
        gates: planner.ledger_gates(ledger)?,
        ledger_uri: ledger_uri.to_owned(),
    })
}

/// The human report of a drill.
pub fn human(d: &Drilled) -> String {
    let v = &d.drill;
    let mut out = format!(
        "restore drill: {} of {} bundles verified (seed {}): {}\n",
        v.sampled.len(),
        v.bundles_total,
        v.seed,
        if v.passed {
            "every one would restore"
        } else {
            "FAILED"
        }
    );
    for id in &v.sampled {
        match v.failed.iter().find(|f| f.bundle_id == *id) {
            Some(f) => out.push_str(&format!(
                "  {}  would NOT restore: {}\n",
                crate::commands::report::esc(id),
                crate::commands::report::esc(&f.why)
            )),
            None => out.push_str(&format!("  {}  ok\n", crate::commands::report::esc(id))),
        }
    }
    out.push_str(&format!("recorded in {}\n", d.ledger_uri));
    out
}

/// `drill TABLE`: a restore drill over a seeded sample of the bundles,
/// printed; a bundle that would not restore is a finding (exit 1).
pub async fn command(a: &DrillCmd) -> Result<ExitCode, HostError> {
    if let Some(scratch) = &a.restore_into {
        return crate::commands::recovery::command(a, scratch).await;
    }
    let table = crate::stores::table_uri(&a.table)?;
    let d = run(
        &table,
        a.ledger.ledger.as_deref(),
        &a.map.location_map,
        a.sample,
        a.seed,
        a.planner.wasm.as_deref(),
    )
    .await?;
    if a.json {
        let v = serde_json::json!({"drill": drill_json(&d.drill),
                                   "gates": crate::commands::sweep::gates_json(&d.gates),
                                   "ledger": d.ledger_uri});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        out!("{}", human(&d));
    }
    // A bundle that would not restore is a finding: exit 1.
    Ok(if d.drill.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
