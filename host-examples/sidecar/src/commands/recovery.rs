//! `lakesweep drill TABLE --restore-into SCRATCH`: the quarterly full
//! restore drill. One bundle (the newest that verifies, or the one named)
//! is restored into an empty scratch location, never the table's: the
//! planner verifies it and says what to write (the metadata, manifest
//! lists and manifests rewritten into the scratch location, the content
//! files copied); this module writes it, times it, and has the ledger
//! record the recovery point reached and the time taken against the
//! policy's RTO and RPO. `status` shows the gate.

use std::process::ExitCode;

use futures::StreamExt;
use serde_json::json;

use crate::cli::DrillCmd;
use crate::clock::clock_ms;
use crate::commands::report::{bytes, duration, esc, time};
use crate::component::{wasm_path, wt, LedgerHandle, Planner};
use crate::error::HostError;
use crate::session::ledger::{default_ledger, Lock};
use crate::stores::Store;

/// Runs a full restore drill into `scratch` (see the module).
pub async fn command(a: &DrillCmd, scratch: &str) -> Result<ExitCode, HostError> {
    let table = crate::stores::table_uri(&a.table)?;
    let scratch = crate::stores::table_uri(scratch)?;
    let ledger_uri = a
        .ledger
        .ledger
        .clone()
        .unwrap_or_else(|| default_ledger(&table));
    let policy = match &a.policy {
        Some(f) => Some(crate::stores::read_document(f).await?),
        None => None,
    };
    let lock = Lock::take(&ledger_uri).await?;
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let r = async {
        let lstore = Store::for_uri(&ledger_uri)?;
        let ledger = crate::session::ledger::open(&mut planner, &lstore, &ledger_uri)
            .await?
            .ok_or_else(|| refused!("no ledger at {ledger_uri}: a drill is recorded in the table's ledger (a first `sweep` creates it)"))?;
        let d = restore(&mut planner, ledger, a, &table, &scratch, policy.as_deref()).await?;
        crate::session::ledger::save(&mut planner, ledger, &lstore, &ledger_uri).await?;
        Ok::<_, HostError>(d)
    }
    .await;
    lock.release().await;
    let (d, metadata_uri) = r?;
    let rto = d.run.finished_ms - d.run.started_ms;
    let rpo = d.run.started_ms - d.run.recovery_point_ms;
    if a.json {
        outln!(
            "{}",
            json!({"bundle": d.run.bundle_id, "scratch": d.run.scratch, "metadata": metadata_uri,
                   "snapshotId": d.run.snapshot_id, "recoveryPointMs": d.run.recovery_point_ms,
                   "objects": d.run.objects, "bytes": d.run.bytes,
                   "startedMs": d.run.started_ms, "finishedMs": d.run.finished_ms,
                   "rtoMs": rto, "rpoMs": rpo, "rtoTargetMs": d.rto_target_ms,
                   "rpoTargetMs": d.rpo_target_ms, "passed": d.passed, "why": d.why,
                   "ledger": ledger_uri})
        );
    } else {
        let target =
            |t: Option<i64>| t.map_or("no target".into(), |t| format!("target {}", duration(t)));
        outln!(
            "full restore drill: bundle {} restored into {} ({} objects, {})",
            esc(&d.run.bundle_id),
            esc(&d.run.scratch),
            d.run.objects,
            bytes(d.run.bytes)
        );
        outln!("  metadata        {}", esc(&metadata_uri));
        outln!(
            "  recovery point  snapshot {} of {} ({} back: RPO, {})",
            d.run.snapshot_id,
            time(d.run.recovery_point_ms),
            duration(rpo),
            target(d.rpo_target_ms)
        );
        outln!(
            "  took            {} (RTO, {})",
            duration(rto),
            target(d.rto_target_ms)
        );
        outln!(
            "  {}",
            if d.passed {
                "PASSED".to_owned()
            } else {
                format!("FAILED: {}", d.why.join("; "))
            }
        );
        outln!("recorded in {ledger_uri}");
    }
    Ok(if d.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The restore itself, timed from the bundle's choice to the last object
/// written; the drill recorded in `ledger`.
async fn restore(
    planner: &mut Planner,
    ledger: LedgerHandle,
    a: &DrillCmd,
    table: &str,
    scratch: &str,
    policy: Option<&str>,
) -> Result<(wt::FullDrill, String), HostError> {
    let started = clock_ms();
    let store = Store::for_uri(table)?;
    let map = &a.map.location_map;
    let id = match &a.bundle {
        Some(id) => id.clone(),
        None => crate::commands::bundle::newest_verified(planner, table, map).await?,
    };
    let dir = format!("{}/{id}", crate::commands::bundle::root(table));
    let c = crate::commands::bundle::check(planner, &store, table, map, &dir, Some(ledger)).await?;
    let sstore = Store::for_uri(scratch)?;
    if let Some(o) = sstore.list(scratch).next().await {
        let o = o?;
        return Err(refused!(
            "the scratch location {scratch} holds objects ({} among them): a drill restores into an empty location",
            o.uri
        ));
    }
    let plan = planner.restore_into_scratch(
        &c.text, map, &c.copies, &c.heads, scratch, a.snapshot, started,
    )?;
    let (mut objects, mut total) = (0u64, 0u64);
    for f in plan.files {
        let data = match (f.bytes, f.from) {
            (Some(b), _) => b,
            (None, Some(from)) => Store::for_uri(&from)?
                .read(&from)
                .await?
                .ok_or_else(|| {
                    refused!("{from} is gone: the bundle's content file cannot be copied (deleted since the bundle was verified?)")
                })?,
            (None, None) => return Err(refused!("the planner named no source for {}", f.key)),
        };
        total += data.len() as u64;
        objects += 1;
        sstore
            .overwrite(&format!("{scratch}/{}", f.key), data)
            .await?;
    }
    if plan.elsewhere > 0 {
        eprintln!(
            "lakesweep: {} content files of other write roots copied under {scratch}/_elsewhere/",
            plan.elsewhere
        );
    }
    let run = wt::RestoreRun {
        bundle_id: id,
        scratch: scratch.to_owned(),
        snapshot_id: plan.snapshot_id,
        recovery_point_ms: plan.recovery_point_ms,
        objects,
        bytes: total,
        started_ms: started,
        finished_ms: clock_ms(),
    };
    let d = planner.ledger_record_full_drill(ledger, &run, policy)?;
    Ok((d, plan.metadata_uri))
}
