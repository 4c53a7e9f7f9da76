//! `lakesweep`: the command a platform engineer runs next to Spark or Trino.
//!
//! It loads the import-free `lakesweep.wasm` component in wasmtime and does
//! every read, list and delete for it through `object_store` (local disk, S3
//! and S3-compatible stores, GCS, Azure). `plan` and `explain` never delete;
//! `apply` deletes exactly the keys of a sealed plan after checking that the
//! table and every key are as they were when planned. `lakesweep --help` and
//! `lakesweep COMMAND --help` describe every command and option.

// First: its output macros are used by the modules below.
#[macro_use]
mod out;
// Its error macros are used by the modules below.
#[macro_use]
mod error;

mod catalogs;
mod cli;
mod clock;
mod commands;
mod component;
mod names;
mod session;
mod stores;
mod wit;

use crate::error::HostError;
use catalogs::pointer;
use commands::{apply, bundle, compare, drill, estate, expire, pinot, report, status, sweep};
use session::{deletion, ledger, origin, plan};

use std::process::ExitCode;

use cli::{Command, PlanArgs};

use error::{EXIT_REFUSED as REFUSED, EXIT_USAGE as USAGE};

/// `plan_input_for` the table the arguments name. A table of a catalog is
/// planned with the prefixes the other tables of its namespace own inside
/// it (the planner's ownership map of the namespace), and refused when the
/// map refuses it (a shared or nested location).
async fn plan_input(a: &PlanArgs, keep_all: bool) -> Result<plan::PlanInput, HostError> {
    let mut input = plan_input_for(a, stores::table_uri(&a.table)?, &a.pointer, keep_all)?;
    if let pointer::Pointer::Catalog {
        catalog,
        namespace,
        name,
    } = &a.pointer
    {
        input.foreign_roots =
            estate::foreign_roots_of(catalog, namespace, name, &a.location_map, a.wasm.as_deref())
                .await?;
    }
    Ok(input)
}

/// `plan_input` for a table and pointer of its own (a run over many tables).
fn plan_input_for(
    a: &PlanArgs,
    table: String,
    pointer: &pointer::Pointer,
    keep_all: bool,
) -> Result<plan::PlanInput, HostError> {
    let mut planner = component::Planner::load(&component::wasm_path(a.wasm.as_deref()))?;
    Ok(plan::PlanInput {
        table,
        pointer: pointer.clone(),
        format: a.format,
        now_ms: a.now_ms,
        retention_ms: a.retention_ms,
        location_map: a.location_map.clone(),
        wasm: a.wasm.clone(),
        policy: a.inputs.policy_json()?,
        context: a.inputs.context_json(&mut planner)?,
        keep_all_decisions: keep_all,
        keep_versions: a.keep_versions.clone(),
        log_cleanup: a.log_cleanup,
        allow_short_retention: a.allow_short_retention,
        memory_budget: a.memory_budget,
        manifest_cache: a.manifest_cache,
        origin: Some(origin::Origin::new(pointer, &a.location_map, &a.inputs).to_document()),
        report: false,
        what_if: None,
        foreign_roots: Vec::new(),
        prior_pointers: Vec::new(),
        deleted_index: None,
    })
}

/// Prints a sweep or reconcile run; exit 1 while outcomes stay unknown.
fn print_swept(s: &sweep::Swept, json: bool) -> Result<ExitCode, error::HostError> {
    if json {
        let v = serde_json::json!({
            "moves": s.moves.sample.iter().map(sweep::move_json).collect::<Vec<_>>(),
            "moved": s.moves.counts,
            "approval": s.approval.as_ref().map(sweep::approval_json),
            "gates": sweep::gates_json(&s.gates), "ledger": s.ledger_uri,
            "stopped": s.stopped,
            "damage": s.damage.iter().map(deletion::receipt_json).collect::<Vec<_>>(),
            "openDamage": s.open_damage.iter().map(|d| serde_json::json!({
                "key": d.key, "version": crate::names::version_json(&d.version),
                "foundMs": d.found_ms, "why": d.why, "restore": d.restore})).collect::<Vec<_>>(),
            "warnings": s.warnings,
            "damageUnchecked": s.damage_unchecked,
            "notes": s.notes, "outlook": sweep::outlook_json(&s.outlook)});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        out!("{}", sweep::human(s));
    }
    let g = &s.gates;
    let pending = g.unknown_total > g.unknown_reconciled || g.approved_not_deleted > 0;
    let broken = g.deleted_outside_approval > 0 || g.approvals_after_newer_hold > 0;
    Ok(
        if !s.damage.is_empty() || s.damage_unchecked.is_some() || g.damaged > 0 {
            ExitCode::from(3)
        } else if pending || broken || s.stopped.is_some() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// Applies one plan file and prints what it did.
async fn apply_one(a: &cli::ApplyArgs, plan: &str) -> Result<ExitCode, error::HostError> {
    let done = apply::run(&apply::ApplyInput {
        plan_path: plan.to_owned(),
        pointer: a.pointer.clone(),
        location_map: a.location_map.clone(),
        concurrency: a.concurrency,
        batch: a.batch,
        receipts: a.receipts.clone(),
        dry_run: a.dry_run,
        wasm: a.wasm.clone(),
        context: a.inputs.clone(),
        allow_future_now: a.allow_future_now,
    })
    .await?;
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
                "damage": done.damage.iter().map(deletion::receipt_json).collect::<Vec<_>>(),
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

async fn run(cmd: Command) -> Result<ExitCode, error::HostError> {
    match cmd {
        Command::Plan(a) => {
            // One document: the file `--out` writes is what `--json` prints
            // (the sealed plan and, outside the seal, what it keeps and why).
            let mut input = plan_input(&a, false).await?;
            input.report = a.json || a.out.is_some();
            let o = plan::run(&input).await?;
            let document = &o.document;
            if let Some(out) = &a.out {
                std::fs::write(out, document).map_err(|e| refused!("write {out}: {e}"))?;
            }
            if a.json {
                outln!("{document}");
            } else {
                out!("{}", report::human(&o, &a.pointer.describe()));
                if let Some(out) = &a.out {
                    outln!("plan written to {out}; to carry it out: lakesweep apply {out} (it reads the sources the plan was made from)");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::PlanMany(m) => {
            if let Some(d) = &m.out_dir {
                std::fs::create_dir_all(d).map_err(|e| refused!("create {d}: {e}"))?;
                // `apply DIR` applies every plan there: a plan left by an
                // earlier run (of a table refused or gone since) must not be.
                let old = std::fs::read_dir(d)
                    .map_err(|e| refused!("read {d}: {e}"))?
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".plan.json"))
                    .count();
                if old > 0 {
                    return Err(refused!(
                        "{d} already holds {old} plans (*.plan.json): give an empty or new --out-dir, so `lakesweep apply {d}` applies this run's plans only"
                    ));
                }
            }
            // The policy and context are read once, for every table.
            let base = plan_input_for(&m.plan, String::new(), &m.plan.pointer, false)?;
            let a = &m.plan;
            let out_dir = m.out_dir.as_deref();
            // Which tables may be planned, and which prefixes of each are
            // another table's: the planner's ownership map of the catalog.
            let located = estate::survey(
                m.catalog.as_ref(),
                m.namespace.as_deref(),
                m.list.as_deref(),
                &a.location_map,
                a.wasm.as_deref(),
                m.jobs,
            )
            .await?;
            let blocked = estate::blocked(&located);
            let run = estate::plan_all(located, blocked, m.jobs, |member, table| {
                let mut input = base.clone();
                input.origin = Some(
                    origin::Origin::new(&member.pointer, &a.location_map, &a.inputs).to_document(),
                );
                input.table = table;
                input.pointer = member.pointer;
                input.foreign_roots = member.foreign_roots;
                input.report = true;
                let label = member.label;
                async move {
                    let o = match plan::run(&input).await {
                        Ok(o) => o,
                        Err(e) => return (None, Err(e)),
                    };
                    let Some(d) = out_dir else {
                        return (None, Ok(o.plan));
                    };
                    let file = std::path::Path::new(d).join(estate::file_name(&label));
                    let file = file.display().to_string();
                    match std::fs::write(&file, &o.document) {
                        Ok(()) => (Some(file), Ok(o.plan)),
                        Err(e) => (None, Err(refused!("write {file}: {e}"))),
                    }
                }
            })
            .await;
            if a.json {
                outln!("{}", estate::to_json(&run));
            } else {
                out!("{}", estate::human(&run));
                if let Some(d) = out_dir {
                    outln!("plans written to {d}; to carry them out: lakesweep apply {d}");
                }
            }
            Ok(if run.iter().any(|p| p.outcome.is_err()) {
                ExitCode::from(REFUSED)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Explain(a, key) => {
            let input = plan_input(&a, true).await?;
            let rel = key
                .strip_prefix(&format!("{}/", input.table))
                .unwrap_or(&key)
                .to_owned();
            let o = plan::run(&input).await?;
            match o.decisions.get(&rel) {
                Some(d) => {
                    out!("{}", report::explain(d));
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    outln!(
                        "{}: not listed under {} (not an object of this table, or already gone)",
                        report::esc(&rel),
                        input.table
                    );
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Apply(a) => {
            let plans = apply_set(&a.plans)?;
            if plans.len() > 1 && a.pointer.is_some() {
                return Err("pointer options name one table: apply many plans with the pointers they record".into());
            }
            if let [one] = plans.as_slice() {
                return apply_one(&a, one).await;
            }
            // Each plan in turn; one refused does not stop the others. The
            // worst outcome is the exit status: damage, then deletes that
            // stopped or were skipped, then refusals.
            let mut codes = Vec::new();
            for p in &plans {
                if !a.json {
                    outln!("== {}", report::esc(p));
                }
                let code = match apply_one(&a, p).await {
                    Ok(c) => c,
                    Err(e) => {
                        if a.json {
                            outln!(
                                "{}",
                                serde_json::json!({"plan": p, "refused": e.to_string()})
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
        Command::Sweep(a) => {
            let s = sweep::run(&sweep::SweepInput {
                plan: plan_input(&a.plan, false).await?,

                ledger: a.ledger.clone(),
                quarantine_ms: a.quarantine_ms,
                concurrency: a.concurrency,
                batch: a.batch,
                allow_future_now: a.allow_future_now,
                new_ledger: a.new_ledger,
                inputs: a.plan.inputs.clone(),
            })
            .await?;
            print_swept(&s, a.plan.json)
        }
        Command::Drill {
            table,
            ledger,
            location_map,
            sample,
            seed,
            json,
            wasm,
        } => {
            let table = stores::table_uri(&table)?;
            let d = drill::run(
                &table,
                ledger.as_deref(),
                &location_map,
                sample,
                seed,
                wasm.as_deref(),
            )
            .await?;
            if json {
                let v = serde_json::json!({"drill": drill::drill_json(&d.drill),
                                           "gates": sweep::gates_json(&d.gates),
                                           "ledger": d.ledger_uri});
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
                );
            } else {
                out!("{}", drill::human(&d));
            }
            // A bundle that would not restore is a finding: exit 1.
            Ok(if d.drill.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Reconcile {
            table,
            ledger,
            json,
            wasm,
        } => {
            let table = stores::table_uri(&table)?;
            let s = sweep::reconcile(&table, ledger.as_deref(), wasm.as_deref()).await?;
            print_swept(&s, json)
        }
        Command::Status {
            tables,
            namespace,
            ledger,
            now_ms,
            max_age_ms,
            prometheus,
            json,
            wasm,
        } => {
            let mut tables = tables
                .iter()
                .map(|t| stores::table_uri(t))
                .collect::<Result<Vec<_>, _>>()?;
            // A namespace table whose location cannot be found is a row of
            // its own (stale, with why): it never hides the others.
            let mut unlocated = Vec::new();
            if let Some((catalog, ns)) = &namespace {
                let located =
                    estate::survey(Some(catalog), Some(ns), None, &[], wasm.as_deref(), 4).await?;
                for (m, t) in located {
                    match t {
                        Ok(t) if !tables.contains(&t) => tables.push(t),
                        Ok(_) => {}
                        Err(e) => unlocated.push((m.label, e)),
                    }
                }
            }
            let now = now_ms.unwrap_or_else(crate::clock::clock_ms);
            let mut all =
                status::run(&tables, ledger.as_deref(), now, max_age_ms, wasm.as_deref()).await?;
            all.extend(unlocated.into_iter().map(|(label, e)| status::TableStatus {
                table: label,
                why: vec![format!("not located: {e}")],
                ledger: Err(refused!("not located: {e}")),
                stale: true,
            }));
            if let Some(path) = &prometheus {
                status::write_metrics(path, &status::prometheus(&all))?;
            }
            if json {
                let v: Vec<serde_json::Value> = all
                    .iter()
                    .map(|s| match &s.ledger {
                        Ok(l) => serde_json::json!({
                            "table": s.table, "stale": s.stale, "why": s.why, "lastStepMs": l.last_step_ms,
                            "revision": l.revision,
                            "states": l.states.iter().map(|(k, (n, b))| (k.to_string(), serde_json::json!({"count": n, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
                            "outlook": sweep::outlook_json(&l.outlook),
                            "gates": sweep::gates_json(&l.gates)}),
                        Err(why) => serde_json::json!({"table": s.table, "stale": s.stale, "why": s.why, "error": why.to_string()}),
                    })
                    .collect();
                outln!("{}", serde_json::Value::Array(v));
            } else if prometheus.as_deref() != Some("-") {
                out!("{}", status::human(&all, now));
            }
            Ok(if all.iter().any(|s| s.stale) {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::LedgerShow {
            table,
            ledger,
            json,
            wasm,
            archived,
        } => {
            let table = stores::table_uri(&table)?;
            let uri = ledger.unwrap_or_else(|| ledger::default_ledger(&table));
            let shown = crate::session::ledger::show(&uri, archived, wasm.as_deref()).await?;
            if json {
                let objects: serde_json::Map<String, serde_json::Value> = shown
                    .objects
                    .iter()
                    .map(|o| {
                        (
                            o.key.clone(),
                            serde_json::json!({"state": crate::names::state_name(o.state),
                                "version": crate::names::version_json(&o.version),
                                "sinceMs": o.since_ms, "why": o.why,
                                "receipt": o.receipt.as_ref().map(deletion::stored_receipt_json)}),
                        )
                    })
                    .collect();
                outln!(
                    "{}",
                    serde_json::json!({"tableLocation": shown.table_location,
                        "revision": shown.revision, "quarantineMs": shown.quarantine_ms,
                        "verified": {"objects": shown.verified.objects,
                            "bytes": shown.verified.bytes, "archives": shown.verified.archives},
                        "objects": objects, "gates": sweep::gates_json(&shown.gates)})
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
                out!("{}", sweep::gates_text(&shown.gates));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::LedgerVerify {
            table,
            ledger,
            json,
            wasm,
        } => {
            let table = stores::table_uri(&table)?;
            let uri = ledger.unwrap_or_else(|| ledger::default_ledger(&table));
            let v = crate::session::ledger::verify(&uri, wasm.as_deref()).await?;
            let a = &v.audit;
            if json {
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
                    if a.problems.is_empty() { "the ledger verifies" } else { "the ledger does NOT verify" }
                );
            }
            Ok(if a.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Restore(a) => {
            let table = stores::table_uri(&a.table)?;
            let mut planner = component::Planner::load(&component::wasm_path(a.wasm.as_deref()))?;
            let msg = bundle::restore(
                &mut planner,
                &table,
                &a.pointer,
                &a.location_map,
                &a.bundle,
                a.now_ms,
                a.allow_future_now,
                a.commit,
            )
            .await?;
            outln!("{msg}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Expire(a) => {
            let e = expire::run(&a).await?;
            if a.json {
                // The expiry document as the planner wrote it, with what was done.
                let mut v: serde_json::Value =
                    serde_json::from_str(&e.plan.document).map_err(|e| e.to_string())?;
                v["committed"] = e.committed.clone().into();
                v["bundle"] = e.bundle.clone().into();
                v["frees"] = match &e.frees {
                    None => serde_json::Value::Null,
                    Some(Ok(f)) => serde_json::json!({
                        "bytes": f.values().map(|(_, b)| b).sum::<u64>(),
                        "byKind": f.iter().map(|(k, (c, b))| (k.clone(), serde_json::json!({"count": c, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
                    }),
                    Some(Err(why)) => serde_json::json!({"unknown": why.to_string()}),
                };
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
                );
            } else {
                out!("{}", expire::human(&e));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::PolicyCheck { file, json, wasm } => {
            let text = std::fs::read_to_string(&file).map_err(|e| refused!("read {file}: {e}"))?;
            let mut planner = component::Planner::load(&component::wasm_path(wasm.as_deref()))?;
            let r = planner.check_policy(&text)?;
            if json {
                let findings = |f: &[component::wt::Finding]| -> Vec<serde_json::Value> {
                    f.iter()
                        .map(|f| serde_json::json!({"field": f.field, "message": f.message}))
                        .collect()
                };
                outln!(
                    "{}",
                    serde_json::json!({"errors": findings(&r.errors),
                                       "warnings": findings(&r.warnings),
                                       "digest": r.digest})
                );
            } else {
                for (kind, fs) in [("error", &r.errors), ("warning", &r.warnings)] {
                    for f in fs {
                        outln!("{kind}: {}: {}", f.field, f.message);
                    }
                }
                outln!("digest {}", r.digest);
            }
            Ok(if !r.errors.is_empty() {
                ExitCode::from(REFUSED)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::PinotPlan(a) => Ok(ExitCode::from(pinot::run_plan(&a).await?)),
        Command::PinotApply(a) => Ok(ExitCode::from(pinot::run_apply(&a).await?)),
        Command::Compare {
            plan,
            other,
            json,
            wasm,
        } => {
            let text = std::fs::read_to_string(&plan).map_err(|e| refused!("read {plan}: {e}"))?;
            let mut planner = component::Planner::load(&component::wasm_path(wasm.as_deref()))?;
            let sealed = planner
                .verify_plan(&text)
                .map_err(|e| refused!("{plan}: {e}"))?;
            let theirs =
                std::fs::read_to_string(&other).map_err(|e| refused!("read {other}: {e}"))?;
            let ours = sealed.delete.into_iter().map(|d| d.key).collect();
            let d = compare::diff(&sealed.table_location, ours, &theirs);
            if json {
                outln!("{}", d.to_json());
            } else {
                out!("{}", d.human());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cmd = match cli::parse(&argv) {
        Ok(c) => c,
        Err(cli::Usage::Shown(text)) => {
            out!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(cli::Usage::Bad(text)) => {
            eprint!("{text}");
            return ExitCode::from(USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lakesweep: start runtime: {e}");
            return ExitCode::from(REFUSED);
        }
    };
    match rt.block_on(run(cmd)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lakesweep: {}", report::esc(&e.headline()));
            ExitCode::from(e.exit_code())
        }
    }
}
