//! `lakesweep apply PLAN.json`: the only command that deletes a plan.
//!
//! 1. The plan's digest is verified by the component (a hand-edited plan is
//!    refused).
//! 2. The component's acceptance path compares the live facts (pointer or
//!    newest Delta commit, context files, clock) with the plan's tokens; any
//!    difference refuses the run before anything is deleted.
//! 3. Keys are deleted in batches (see [`crate::deletion`]): the facts are
//!    read again and accepted by the core before every batch, each key is
//!    HEADed and deleted only while it is the planned version, and after the
//!    last batch a damage check names any deleted key the live table needs.
//!    Every key gets a receipt line (JSON Lines), written as it happens.

use std::io::Write;

use crate::component::{wasm_path, wt, Planner};
use crate::context::ContextFiles;
use crate::deletion::{self, Batching, Item, LiveSource};
use crate::error::HostError;
use crate::origin::Origin;
use crate::pointer::Pointer;
use crate::store::Store;

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
    pub batch: usize,
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
    pub damage: Vec<crate::deletion::Line>,
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
}

/// Runs `apply`. `Err` means refused: nothing was deleted.
pub async fn run(input: &ApplyInput) -> Result<Applied, HostError> {
    let text = std::fs::read_to_string(&input.plan_path)
        .map_err(|e| format!("read {}: {e}", input.plan_path))?;
    let mut planner = Planner::load(&wasm_path(input.wasm.as_deref()))?;
    let plan = planner.verify_plan(&text)?;
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
        location_map,
        delta,
        context,
        allow_future_now: input.allow_future_now,
        ledger: None,
    };
    // Once before anything: a refusal here deletes nothing and writes no receipt.
    let facts = source.facts(&mut planner, &table).await?;
    let acc = planner.accept(&text, &facts)?;
    if !acc.granted {
        return Err(HostError::Refused(format!(
            "the plan cannot be applied now: {} (make a new plan)",
            acc.differences.join("; ")
        )));
    }
    let items: Vec<Item> = plan
        .delete
        .into_iter()
        .map(|d| Item {
            key: d.key,
            pinned: d.version,
        })
        .collect();
    // A dry run deletes nothing, so it writes no receipts unless asked to
    // (`--receipts FILE`): the real receipts file holds real deletes only.
    let receipts_path = match (&input.receipts, input.dry_run) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(format!("{}.receipts.jsonl", input.plan_path)),
    };
    // Appended line by line, so a crash loses at most the line in flight and
    // a second run never wipes the first run's receipts.
    let mut receipts = match &receipts_path {
        Some(path) => Some(std::io::LineWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("open receipts {path}: {e}"))?,
        )),
        None => None,
    };
    let stopped = |e: std::io::Error| {
        HostError::Stopped(format!(
            "cannot write receipts to {}: {e}; reconcile by listing",
            receipts_path.as_deref().unwrap_or("?")
        ))
    };
    let mut sink = |r: &crate::deletion::Line| match receipts.as_mut() {
        Some(w) => writeln!(w, "{}", r.to_json()).map_err(stopped),
        None => Ok(()),
    };
    let opts = Batching {
        batch: input.batch,
        concurrency: input.concurrency,
        dry_run: input.dry_run,
        wasm: input.wasm.clone(),
    };
    let out = deletion::run(&mut planner, &text, &source, items, &opts, &mut sink).await?;
    if let Some(w) = receipts.as_mut() {
        w.flush().map_err(stopped)?;
    }
    let mut done = Applied {
        stopped: out.stopped,
        damage: out.damage,
        damage_unchecked: out.damage_unchecked,
        receipts: receipts_path.clone(),
        warnings: plan.warnings.clone(),
        ..Applied::default()
    };
    done.would_delete = out
        .receipts
        .iter()
        .filter(|r| r.result() == "would-delete")
        .map(|r| r.receipt.key.clone())
        .collect();
    for r in &out.receipts {
        done.keys
            .push((r.receipt.key.clone(), r.result(), r.planned.size));
        match r.result() {
            "deleted" | "would-delete" => {
                done.deleted += 1;
                done.deleted_bytes += r.planned.size;
            }
            "already-absent" => done.absent += 1,
            "skipped-changed" => done.changed += 1,
            "skipped-protected" => done.protected += 1,
            "skipped-stopped" => done.not_attempted += 1,
            _ => done.failed += 1,
        }
    }
    Ok(done)
}
