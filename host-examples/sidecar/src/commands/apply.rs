//! `lakesweep apply PLAN.json`: the only command that deletes a plan.
//!
//! 1. The plan's digest is verified by the component (a hand-edited plan is
//!    refused).
//! 2. The component's acceptance path compares the live facts (pointer or
//!    newest Delta commit, context files, clock) with the plan's tokens; any
//!    difference refuses the run before anything is deleted.
//! 3. Keys are deleted in batches (see [`crate::session::deletion`]): the facts are
//!    read again and accepted by the core before every batch, each key is
//!    HEADed and deleted only while it is the planned version, and after the
//!    last batch a damage check names any deleted key the live table needs.
//!    Every key gets a receipt line (JSON Lines), written as it happens.

use std::io::Write;

use crate::catalogs::pointer::Pointer;
use crate::component::{wasm_path, wt, Planner};
use crate::error::HostError;
use crate::session::context::ContextFiles;
use crate::session::deletion::{self, LiveSource};
use crate::session::origin::Origin;
use crate::stores::Store;

/// Arguments of `apply`.
pub struct ApplyInput {
    /// The sealed plan file.
    pub plan_path: String,
    /// Where the current metadata comes from, if given (`None`: from the
    /// plan's origin, else `version-hint.text`).
    pub pointer: Option<Pointer>,
    /// `--location-map` pairs, as when planning.
    pub location_map: Vec<(String, String)>,
    /// Deletes in flight at once.
    pub concurrency: usize,
    /// Keys per batch (the live facts are re-read before each).
    pub batch: Option<u32>,
    /// Receipt file (JSON Lines); default `PLAN.json.receipts.jsonl`.
    pub receipts: Option<String>,
    /// Check everything, delete nothing.
    pub dry_run: bool,
    /// `--wasm`.
    pub wasm: Option<String>,
    /// The context files (`--context`, `--holds`, `--leases`, `--writers`),
    /// read again before every batch.
    pub context: ContextFiles,
    /// Accept a plan judged at a time ahead of this machine's clock.
    pub allow_future_now: bool,
}

/// Summary counts of an apply run.
#[derive(Default)]
pub struct Applied {
    /// Keys deleted (or that would be, in a dry run).
    pub deleted: usize,
    /// Keys already gone.
    pub absent: usize,
    /// Keys skipped because the object changed since planning.
    pub changed: usize,
    /// Keys whose delete failed.
    pub failed: usize,
    /// Keys a live hold or writer covered: not deleted.
    pub protected: usize,
    /// Keys not attempted because the run stopped.
    pub not_attempted: usize,
    /// Why the run stopped before its last key, if it did.
    pub stopped: Option<Vec<String>>,
    /// Damage: deleted keys the live table needs.
    pub damage: Vec<wt::DeletionReceipt>,
    /// The damage check could not be made (why).
    pub damage_unchecked: Option<String>,
    /// Where the receipts went (`None`: a dry run without `--receipts`
    /// writes none).
    pub receipts: Option<String>,
    /// A dry run: the keys that would be deleted, in order.
    pub would_delete: Vec<String>,
    /// Bytes deleted (or that would be), by the planned sizes.
    pub deleted_bytes: u64,
    /// Every key with its result and planned size, in order.
    pub keys: Vec<(String, &'static str, u64)>,
    /// The plan's warnings (sealed into it), shown again where it is applied.
    pub warnings: Vec<String>,
    /// The exit status the planner's outcome gives.
    pub exit: u8,
}

/// Runs `apply`. `Err` means refused: nothing was deleted.
pub async fn run(input: &ApplyInput) -> Result<Applied, HostError> {
    let text = std::fs::read_to_string(&input.plan_path)
        .map_err(|e| refused!("read {}: {e}", input.plan_path))?;
    let mut planner = Planner::load(&wasm_path(input.wasm.as_deref()))?;
    let plan = planner.plan_checked(&text)?;
    let table = plan.table_location.clone();
    let delta = plan.format == wt::TableFormat::Delta;
    if let (Some(Pointer::Explicit(_)), false) = (&input.pointer, delta) {
        return Err(
            "apply needs a live pointer to see commits made since the plan: pass --catalog, or let it read version-hint.text (a fixed --metadata proves nothing)"
                .into(),
        );
    }
    // The sources the plan was made from (sealed in it): options given
    // here must name the same ones.
    let (pointer, location_map, context) = match plan.origin.as_deref() {
        Some(doc) => {
            let origin = Origin::parse(doc)?.for_apply(
                input.pointer.as_ref(),
                &input.location_map,
                &input.context,
            )?;
            (origin.pointer, origin.location_map, origin.context)
        }
        None => (
            input.pointer.clone().unwrap_or(Pointer::VersionHint),
            input.location_map.clone(),
            input.context.clone(),
        ),
    };
    if let (Pointer::Explicit(_), false) = (&pointer, delta) {
        return Err(
            "apply needs a live pointer to see commits made since the plan: pass --catalog, or let it read version-hint.text (a fixed --metadata proves nothing)"
                .into(),
        );
    }
    let source = LiveSource {
        store: Store::for_uri(&table)?,
        table: table.clone(),
        pointer,
        context,
    };
    // A dry run deletes nothing, so it writes no receipts unless asked to
    // (`--receipts FILE`): the real receipts file holds real deletes only.
    let receipts_path = match (&input.receipts, input.dry_run) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(format!("{}.receipts.jsonl", input.plan_path)),
    };
    // Opened at the first receipt (a refused run writes none), appended
    // line by line: a crash loses at most the lines in flight, and a second
    // run never wipes the first run's receipts.
    let mut receipts: Option<std::io::LineWriter<std::fs::File>> = None;
    let stopped = |e: std::io::Error| {
        HostError::Stopped(format!(
            "cannot write receipts to {}: {e}; reconcile by listing",
            receipts_path.as_deref().unwrap_or("?")
        ))
    };
    // Each key's result for the report, as the receipts come.
    let mut results: Vec<wt::DeletionReceipt> = Vec::new();
    let mut sink = |r: &wt::DeletionReceipt| -> Result<(), HostError> {
        if r.receipt.result != wt::DeleteResult::Damaged {
            results.push(r.clone());
        }
        let Some(path) = &receipts_path else {
            return Ok(());
        };
        if receipts.is_none() {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(stopped)?;
            receipts = Some(std::io::LineWriter::new(f));
        }
        match receipts.as_mut() {
            Some(w) => writeln!(w, "{}", deletion::receipt_json(r)).map_err(stopped),
            None => Ok(()),
        }
    };
    let d = planner.deletion_start(&wt::DeletionConfig {
        plan: text,
        location_map: crate::component::mappings(&location_map),
        batch_size: input.batch,
        dry_run: input.dry_run,
        allow_future_now: input.allow_future_now,
        store_gives_etags: true,
        keys: None,
    })?;
    let out = deletion::run(
        &mut planner,
        d,
        &source,
        input.concurrency,
        input.wasm.as_deref(),
        deletion::Drain::Plain,
        &mut sink,
    )
    .await?;
    if let Some(w) = receipts.as_mut() {
        w.flush().map_err(stopped)?;
    }
    let outcome = out.outcome.clone();
    if let Some(why) = &outcome.refused {
        return Err(HostError::Refused(format!(
            "the plan cannot be applied now: {} (make a new plan)",
            why.join("; ")
        )));
    }
    let mut done = Applied {
        stopped: outcome.stopped.clone(),
        damage: out.damaged.clone(),
        damage_unchecked: outcome.damage_unchecked.clone(),
        receipts: receipts_path.clone(),
        warnings: plan.warnings.clone(),
        exit: outcome.exit,
        ..Applied::default()
    };
    done.would_delete = results
        .iter()
        .filter(|r| r.receipt.result == wt::DeleteResult::WouldDelete)
        .map(|r| r.receipt.key.clone())
        .collect();
    done.deleted_bytes = outcome.deleted_bytes;
    for r in &results {
        let name = crate::names::result_name(r.receipt.result);
        done.keys
            .push((r.receipt.key.clone(), name, r.planned.size));
        match r.receipt.result {
            wt::DeleteResult::Deleted | wt::DeleteResult::WouldDelete => done.deleted += 1,
            wt::DeleteResult::AlreadyAbsent => done.absent += 1,
            wt::DeleteResult::SkippedChanged => done.changed += 1,
            wt::DeleteResult::SkippedProtected => done.protected += 1,
            wt::DeleteResult::SkippedStopped => done.not_attempted += 1,
            _ => done.failed += 1,
        }
    }
    Ok(done)
}
