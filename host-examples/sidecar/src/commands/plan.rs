//! `lakesweep plan` and `lakesweep explain`: one table's plan (printed,
//! or written for `apply`), every table of a catalog namespace or a list,
//! and one object's verdict. From the command line's options to the
//! session's input ([`plan_input`]), which `sweep` shares.

use std::process::ExitCode;

use crate::catalogs::pointer::Pointer;
use crate::catalogs::Catalog;
use crate::cli::{ExplainCmd, PlanCmd, PlanOpts};
use crate::commands::{estate, report};
use crate::component::{wasm_path, Planner};
use crate::error::{HostError, EXIT_REFUSED};
use crate::session::origin::Origin;
use crate::session::plan::{self, PlanInput};
use crate::stores;

/// The session's input for the table the options name. A table of a
/// catalog is planned with the prefixes the other tables of its namespace
/// own inside it (the planner's ownership map of the namespace), and
/// refused when the map refuses it (a shared or nested location).
pub async fn plan_input(a: &PlanOpts, keep_all: bool) -> Result<PlanInput, HostError> {
    let pointer = a.pointer.pointer()?;
    let mut input = plan_input_for(a, stores::table_uri(a.table()?)?, &pointer, keep_all)?;
    if let Pointer::Catalog {
        catalog,
        namespace,
        name,
    } = &pointer
    {
        input.foreign_roots = estate::foreign_roots_of(
            catalog,
            namespace,
            name,
            &a.map.location_map,
            a.planner.wasm.as_deref(),
        )
        .await?;
    }
    Ok(input)
}

/// [`plan_input`] for a table and pointer of its own (a run over many
/// tables). The evaluation time is read here, once.
fn plan_input_for(
    a: &PlanOpts,
    table: String,
    pointer: &Pointer,
    keep_all: bool,
) -> Result<PlanInput, HostError> {
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let inputs = a.context.files(Some(&a.policy));
    Ok(PlanInput {
        table,
        pointer: pointer.clone(),
        format: a.format(),
        now_ms: a.when.now_ms(),
        retention_ms: a.older_than,
        location_map: a.map.location_map.clone(),
        wasm: a.planner.wasm.clone(),
        policy: inputs.policy_json()?,
        context: inputs.context_json(&mut planner)?,
        keep_all_decisions: keep_all,
        keep_versions: a.keep_versions.clone(),
        log_cleanup: a.log_cleanup,
        allow_short_retention: a.allow_short_retention,
        memory_budget: a.memory_budget,
        manifest_cache: a.manifest_cache,
        origin: Some(Origin::new(pointer, &a.map.location_map, &inputs).to_document()),
        report: false,
        what_if: None,
        foreign_roots: Vec::new(),
        prior_pointers: Vec::new(),
        deleted_index: None,
        compare_keys: None,
    })
}

/// `plan TABLE`: one table's plan. One document: the file `--out` writes
/// is what `--json` prints (the sealed plan and, outside the seal, what it
/// keeps and why).
pub async fn one(p: &PlanCmd) -> Result<ExitCode, HostError> {
    let a = &p.plan;
    let mut input = plan_input(a, false).await?;
    input.report = a.json || p.out.is_some();
    let o = plan::run(&input).await?;
    let document = &o.document;
    if let Some(out) = &p.out {
        std::fs::write(out, document).map_err(|e| refused!("write {out}: {e}"))?;
    }
    if a.json {
        outln!("{document}");
    } else {
        out!("{}", report::human(&o, &input.pointer.describe()));
        if let Some(out) = &p.out {
            outln!("plan written to {out}; to carry it out: lakesweep apply {out} (it reads the sources the plan was made from)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `plan --namespace NS` or `plan --tables FILE`: every table, each
/// planned knowing which prefixes the others own; exit 2 when one was
/// refused.
pub async fn many(p: &PlanCmd) -> Result<ExitCode, HostError> {
    let a = &p.plan;
    let out_dir = p.many.out_dir.as_deref();
    if let Some(d) = out_dir {
        std::fs::create_dir_all(d).map_err(|e| refused!("create {d}: {e}"))?;
        // `apply DIR` applies every plan there: a plan left by an earlier
        // run (of a table refused or gone since) must not be.
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
    let catalog = a
        .pointer
        .catalog
        .as_deref()
        .map(Catalog::parse)
        .transpose()?;
    let jobs = usize::from(p.many.jobs);
    // The policy and context are read once, for every table.
    let inputs = a.context.files(Some(&a.policy));
    let base = plan_input_for(a, String::new(), &Pointer::VersionHint, false)?;
    // Which tables may be planned, and which prefixes of each are another
    // table's: the planner's ownership map of the catalog.
    let located = estate::survey(
        catalog.as_ref(),
        p.many.namespace.as_deref(),
        p.many.tables.as_deref(),
        &a.map.location_map,
        a.planner.wasm.as_deref(),
        jobs,
    )
    .await?;
    let blocked = estate::blocked(&located);
    let run = estate::plan_all(located, blocked, jobs, |member, table| {
        let mut input = base.clone();
        input.origin =
            Some(Origin::new(&member.pointer, &a.map.location_map, &inputs).to_document());
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
        ExitCode::from(EXIT_REFUSED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `explain TABLE KEY`: one object's verdict with its evidence; exit 1
/// when the key is not listed under the table.
pub async fn explain(e: &ExplainCmd) -> Result<ExitCode, HostError> {
    let input = plan_input(&e.plan, true).await?;
    let key = e
        .key
        .as_deref()
        .ok_or("explain takes TABLE KEY: which object?")?;
    let rel = key
        .strip_prefix(&format!("{}/", input.table))
        .unwrap_or(key)
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
