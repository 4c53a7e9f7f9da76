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
use std::process::ExitCode;

use crate::cli::ApplyCmd;
use crate::commands::report;
use crate::error::HostError;
use crate::session::deletion::{self, LiveSource};
use crate::session::origin::Origin;
use crate::stores::Store;

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

/// Runs `apply` of the plan file `plan_path` with the options `a`. `Err`
/// means refused: nothing was deleted.
pub async fn run(a: &ApplyCmd, plan_path: &str) -> Result<Applied, HostError> {
    // The options given (the pointer `None`: from the plan's origin, else
    // `version-hint.text`); the context files are read again before every
    // batch.
    let given = a.pointer.given()?;
    let given_context = a.context.files(None);
    let text = std::fs::read_to_string(plan_path).map_err(|e| refused!("read {plan_path}: {e}"))?;
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let plan = planner.plan_checked(&text)?;
    let table = plan.table_location.clone();
    let delta = plan.format == wt::TableFormat::Delta;
    if let (Some(Pointer::Explicit(_)), false) = (&given, delta) {
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
                given.as_ref(),
                &a.map.location_map,
                &given_context,
            )?;
            (origin.pointer, origin.location_map, origin.context)
        }
        None => (
            given.clone().unwrap_or(Pointer::VersionHint),
            a.map.location_map.clone(),
            given_context.clone(),
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
    let receipts_path = match (&a.receipts, a.dry_run) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => Some(format!("{}.receipts.jsonl", plan_path)),
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
        batch_size: a.deletes.batch,
        dry_run: a.dry_run,
        allow_future_now: a.allow_future_now,
        store_gives_etags: true,
        keys: None,
        share: None,
        stop_switches: a.deletes.stop.stop_switches.clone(),
    })?;
    let out = deletion::run(
        &mut planner,
        d,
        &source,
        a.deletes.concurrency,
        a.planner.wasm.as_deref(),
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

/// `apply PLAN...`: each plan in turn (one refused does not stop the
/// others); the worst outcome is the exit status: damage, then deletes
/// that stopped or were skipped, then refusals.
pub async fn command(a: &ApplyCmd) -> Result<ExitCode, HostError> {
    let plans = apply_set(&a.plans)?;
    if plans.len() > 1 && a.pointer.given()?.is_some() {
        return Err(
            "pointer options name one table: apply many plans with the pointers they record".into(),
        );
    }
    if let [one] = plans.as_slice() {
        return apply_one(a, one).await;
    }
    // Each plan in turn; one refused does not stop the others. The
    // worst outcome is the exit status: damage, then deletes that
    // stopped or were skipped, then refusals.
    let mut codes = Vec::new();
    for p in &plans {
        if !a.json {
            outln!("== {}", report::esc(p));
        }
        let code = match apply_one(a, p).await {
            Ok(c) => c,
            Err(e) => {
                if a.json {
                    outln!(
                        "{}",
                        serde_json::json!({"plan": p, "refused": e.headline()})
                    );
                } else {
                    outln!("lakesweep: {}", report::esc(&e.headline()));
                }
                ExitCode::from(e.exit_code())
            }
        };
        codes.push(code);
    }
    let worst = [3u8, 1, 2]
        .into_iter()
        .find(|w| codes.contains(&ExitCode::from(*w)));
    Ok(worst.map_or(ExitCode::SUCCESS, ExitCode::from))
}

/// Applies one plan file and prints what it did.
async fn apply_one(a: &ApplyCmd, plan: &str) -> Result<ExitCode, HostError> {
    let done = run(a, plan).await?;
    let verb = if a.dry_run { "would delete" } else { "deleted" };
    if a.json {
        let keys: Vec<serde_json::Value> = done
            .keys
            .iter()
            .map(|(k, r, b)| serde_json::json!({"key": k, "result": r, "bytes": b}))
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "plan": plan,
                "dryRun": a.dry_run,
                "deleted": {"count": done.deleted, "bytes": done.deleted_bytes},
                "alreadyAbsent": done.absent, "skippedChanged": done.changed,
                "skippedProtected": done.protected, "notAttempted": done.not_attempted,
                "failed": done.failed, "receipts": done.receipts, "stopped": done.stopped,
                "damage": done.damage.iter().map(crate::session::deletion::receipt_json).collect::<Vec<_>>(),
                "damageUnchecked": done.damage_unchecked, "keys": keys,
                "warnings": done.warnings,
            })
        );
    } else {
        for w in &done.warnings {
            outln!("the plan warned: {}", report::esc(w));
        }
        if a.verbose {
            for (k, r, b) in &done.keys {
                outln!("{r:<18} {}  ({})", report::esc(k), report::bytes(*b));
            }
        } else {
            for k in &done.would_delete {
                outln!("would delete {}", report::esc(k));
            }
        }
        outln!(
                "{verb} {} ({}), already absent {}, skipped (changed since planned) {}, skipped (held or staged now) {}, not attempted {}, failed {}; {}",
                done.deleted, report::bytes(done.deleted_bytes), done.absent, done.changed, done.protected, done.not_attempted, done.failed,
                match &done.receipts {
                    Some(r) => format!("receipts in {r}"),
                    None => "dry run: no receipts written (--receipts FILE writes them)".into(),
                }
            );
    }
    if let (Some(why), false) = (&done.stopped, a.json) {
        outln!("STOPPED before the last batch: {}", why.join("; "));
    }
    if let (Some(e), false) = (&done.damage_unchecked, a.json) {
        outln!("DAMAGE CHECK FAILED: {e}: check the deleted keys in the receipts against the live table");
    }
    for d in done.damage.iter().filter(|_| !a.json) {
        outln!(
            "DAMAGE: {} {} ({})",
            report::esc(&d.receipt.key),
            d.receipt.detail.as_deref().unwrap_or(""),
            d.restore.as_deref().unwrap_or("")
        );
    }
    // The planner's outcome names the exit status.
    Ok(ExitCode::from(done.exit))
}

/// Plan files to apply: each argument, or each `*.plan.json` of a folder
/// (sorted).
fn apply_set(args: &[String]) -> Result<Vec<String>, HostError> {
    let mut out = Vec::new();
    for a in args {
        let path = std::path::Path::new(a);
        if !path.is_dir() {
            out.push(a.clone());
            continue;
        }
        let mut found: Vec<String> = std::fs::read_dir(path)
            .map_err(|e| refused!("read {a}: {e}"))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.to_str().is_some_and(|n| n.ends_with(".plan.json")))
            .filter_map(|p| p.to_str().map(str::to_owned))
            .collect();
        if found.is_empty() {
            return Err(refused!("{a} holds no *.plan.json"));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}
