//! `lakesweep apply PLAN.json`: the only command that deletes.
//!
//! 1. The plan's digest is verified by the component (a hand-edited plan is
//!    refused).
//! 2. The table's pointer is re-read and mapped by the planner exactly as
//!    when planning; if it no longer names the metadata the plan was judged
//!    on, a commit landed: refuse, delete nothing.
//! 3. Each sealed key is inspected (HEAD) again; it is deleted only when it
//!    still has the size, modification time and ETag it was planned with.
//!    Nothing but the sealed keys is ever touched; deletes run with bounded
//!    concurrency, and every key gets a receipt line (JSON Lines).

use std::io::Write;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::component::{wasm_path, Planner};
use crate::pointer::Pointer;
use crate::store::{clock_ms as now_ms, Object, Store};

/// Arguments of `apply`.
pub struct ApplyInput {
    /// The sealed plan file.
    pub plan_path: String,
    /// Where the current metadata comes from (as when planning).
    pub pointer: Pointer,
    /// `--location-map` pairs, as when planning.
    pub location_map: Vec<(String, String)>,
    /// Deletes in flight at once.
    pub concurrency: usize,
    /// Receipt file (JSON Lines); default `PLAN.json.receipts.jsonl`.
    pub receipts: Option<String>,
    /// Check everything, delete nothing.
    pub dry_run: bool,
    /// `--wasm`.
    pub wasm: Option<String>,
    /// The current context (JSON), if given: a legal hold newer than the
    /// plan's hold generation makes apply refuse.
    pub context: Option<String>,
    /// Accept a plan judged at a time ahead of this machine's clock.
    pub allow_future_now: bool,
}

/// Clock skew tolerated between the plan's `now` and this machine's clock.
pub const MAX_SKEW_MS: i64 = 5 * 60_000;

/// How a planned key ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Deleted,
    AlreadyAbsent,
    Changed,
    Failed,
    WouldDelete,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Deleted => "deleted",
            Outcome::AlreadyAbsent => "already-absent",
            Outcome::Changed => "skipped-changed",
            Outcome::Failed => "failed",
            Outcome::WouldDelete => "would-delete",
        }
    }
}

/// Summary counts of an apply run.
pub struct Applied {
    /// Keys deleted (or that would be, in a dry run).
    pub deleted: usize,
    /// Keys already gone.
    pub absent: usize,
    /// Keys skipped because the object changed since planning.
    pub changed: usize,
    /// Keys whose delete failed.
    pub failed: usize,
    /// Where the receipts went.
    pub receipts: String,
}

/// Runs `apply`. `Err` means refused: nothing was deleted.
pub async fn run(input: &ApplyInput) -> Result<Applied, String> {
    let text = std::fs::read_to_string(&input.plan_path)
        .map_err(|e| format!("read {}: {e}", input.plan_path))?;
    let mut planner = Planner::load(&wasm_path(input.wasm.as_deref()))?;
    planner.verify_plan(&text)?;
    let plan: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let table = plan["table_location"]
        .as_str()
        .ok_or("plan without table_location")?
        .to_owned();
    let delta = plan["format"].as_str() == Some("delta");
    if let (Pointer::Explicit(_), false) = (&input.pointer, delta) {
        return Err(
            "apply needs a live pointer to see commits made since the plan: pass --catalog, or let it read version-hint.text (a fixed --metadata proves nothing)"
                .into(),
        );
    }
    let judged_at = plan["tokens"]["now_ms"].as_i64().unwrap_or(i64::MAX);
    if judged_at > now_ms() + MAX_SKEW_MS && !input.allow_future_now {
        return Err(format!(
            "the plan was judged at {judged_at} ms, ahead of this machine's clock: files of running writers would look old (--allow-future-now overrides)"
        ));
    }
    let sealed_holds = plan["tokens"]["hold_generation"].as_u64().unwrap_or(0);
    if sealed_holds > 0 && input.context.is_none() {
        return Err(format!(
            "the plan was made under legal holds (generation {sealed_holds}): pass the current --holds or --context"
        ));
    }
    let store = Store::for_uri(&table)?;
    let sealed = plan["tokens"]["metadata_location"]
        .as_str()
        .ok_or("plan without tokens.metadata_location")?;
    let current = if delta {
        crate::pointer::delta_head(&store, &table, &table).await?
    } else {
        let current = input.pointer.resolve(&store, &table).await?;
        planner.mapped_pointer(&table, &current, &input.location_map)?
    };
    if current != sealed {
        return Err(format!(
            "the table changed since the plan was made (pointer now names {current}, the plan was judged on {sealed}): make a new plan"
        ));
    }
    if let Some(ctx) = &input.context {
        let ctx: Value = serde_json::from_str(ctx).map_err(|e| format!("context: {e}"))?;
        let mut now = 0;
        for h in ctx["holds"].as_array().into_iter().flatten() {
            now = now.max(
                h["generation"]
                    .as_u64()
                    .ok_or_else(|| format!("context: a hold without a numeric generation: {h}"))?,
            );
        }
        let sealed_gen = plan["tokens"]["hold_generation"].as_u64().unwrap_or(0);
        if now > sealed_gen {
            return Err(format!(
                "a legal hold of generation {now} is newer than the plan's ({sealed_gen}): make a new plan"
            ));
        }
    }
    let deletes: Vec<Value> = plan["delete"].as_array().cloned().unwrap_or_default();
    let receipts_path = input
        .receipts
        .clone()
        .unwrap_or_else(|| format!("{}.receipts.jsonl", input.plan_path));
    // Appended line by line, so a crash loses at most the line in flight and
    // a second run never wipes the first run's receipts.
    let mut receipts = std::io::LineWriter::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&receipts_path)
            .map_err(|e| format!("open receipts {receipts_path}: {e}"))?,
    );
    let dry = input.dry_run;
    let mut results = futures::stream::iter(deletes)
        .map(|d| {
            let store = store.clone();
            let uri = format!("{table}/{}", d["key"].as_str().unwrap_or(""));
            async move {
                let started = now_ms();
                let (outcome, seen, error) = match store.head(&uri).await {
                    Err(e) => (Outcome::Failed, None, Some(e)),
                    Ok(None) => (Outcome::AlreadyAbsent, None, None),
                    Ok(Some(o)) => {
                        if !o.is_version(&d) {
                            (Outcome::Changed, Some(o), None)
                        } else if dry {
                            (Outcome::WouldDelete, Some(o), None)
                        } else {
                            match store.delete(&uri).await {
                                Ok(true) => (Outcome::Deleted, Some(o), None),
                                Ok(false) => (Outcome::AlreadyAbsent, Some(o), None),
                                Err(e) => (Outcome::Failed, Some(o), Some(e)),
                            }
                        }
                    }
                };
                let receipt = json!({
                    "key": d["key"], "uri": uri, "result": outcome.name(),
                    "planned": {"size": d["size"], "last_modified_ms": d["last_modified_ms"],
                                "etag": d["etag"], "version_id": d["version_id"]},
                    "seen": seen.as_ref().map(Object::version_json),
                    "started_ms": started, "finished_ms": now_ms(), "error": error,
                });
                (outcome, receipt)
            }
        })
        .buffer_unordered(input.concurrency.max(1));
    let mut done = Applied {
        deleted: 0,
        absent: 0,
        changed: 0,
        failed: 0,
        receipts: receipts_path.clone(),
    };
    while let Some((outcome, receipt)) = results.next().await {
        match outcome {
            Outcome::Deleted | Outcome::WouldDelete => done.deleted += 1,
            Outcome::AlreadyAbsent => done.absent += 1,
            Outcome::Changed => done.changed += 1,
            Outcome::Failed => done.failed += 1,
        }
        writeln!(receipts, "{receipt}").map_err(|e| {
            format!(
                "STOPPED after deletes began: cannot write receipts to {receipts_path}: {e}; {} deleted so far, reconcile by listing",
                done.deleted
            )
        })?;
    }
    receipts
        .flush()
        .map_err(|e| format!("write {receipts_path}: {e}"))?;
    Ok(done)
}
