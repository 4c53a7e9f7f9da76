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

use std::process::ExitCode;

use cli::{Command, LedgerCmd, PinotCmd, PolicyCmd};
use commands::{
    apply, bundle, compare, drill, expire, halt, ledger, pinot, plan, policy, rollout, status,
    sweep,
};
use error::{HostError, EXIT_REFUSED, EXIT_USAGE};

/// Runs one command: each command's module takes its own options.
async fn run(command: Command) -> Result<ExitCode, HostError> {
    match command {
        Command::Plan(p) if p.many.namespace.is_some() || p.many.tables.is_some() => {
            plan::many(&p).await
        }
        Command::Plan(p) => plan::one(&p).await,
        Command::Explain(e) => plan::explain(&e).await,
        Command::Apply(a) => apply::command(&a).await,
        Command::Sweep(s) => sweep::command(&s).await,
        Command::Reconcile(t) => sweep::reconcile_command(&t).await,
        Command::Drill(d) => drill::command(&d).await,
        Command::Status(s) => status::command(&s).await,
        Command::Ledger(LedgerCmd::Show { target, archived }) => {
            ledger::show(&target, archived).await
        }
        Command::Ledger(LedgerCmd::Verify(t)) => ledger::verify(&t).await,
        Command::Restore(r) => bundle::restore_command(&r).await,
        Command::Expire(e) => expire::command(&e).await,
        Command::Policy(PolicyCmd::Check {
            file,
            json,
            planner,
        }) => policy::check(&file, json, planner.wasm.as_deref()).await,
        Command::Pinot(PinotCmd::Plan(p)) => Ok(ExitCode::from(pinot::run_plan(&p).await?)),
        Command::Pinot(PinotCmd::Apply(a)) => Ok(ExitCode::from(pinot::run_apply(&a).await?)),
        Command::Compare(c) => compare::command(&c).await,
        Command::Halt(h) => halt::command(&h, true).await,
        Command::Resume(r) => halt::command(&r, false).await,
        Command::Move(m) => rollout::command(&m).await,
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
            return ExitCode::from(EXIT_USAGE);
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
            return ExitCode::from(EXIT_REFUSED);
        }
    };
    match rt.block_on(run(cmd)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lakesweep: {}", commands::report::esc(&e.headline()));
            ExitCode::from(e.exit_code())
        }
    }
}
