//! `lakesweep`: the command a platform engineer runs next to Spark or Trino.
//!
//! It loads the import-free `lakesweep.wasm` component in wasmtime and does
//! every read and list for it. This version serves tables on the local file
//! system; the planner itself is format- and store-agnostic.
//!
//! ```text
//! lakesweep plan TABLE [--metadata URI] [--older-than 72h] [--now TIME]
//!                [--location-map FROM=TO]... [--json] [--out PLAN.json] [--wasm PATH]
//! ```
//! Exit status: 0 when a plan was produced (even an empty one), 2 when the
//! planner refused (nothing is deleted), 64 for bad usage.

mod args;
mod host;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(args::Command::Plan(p)) => match host::plan(&p) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("lakesweep: refused, nothing deleted: {e}");
                ExitCode::from(2)
            }
        },
        Ok(args::Command::Help) => {
            println!("{}", args::USAGE);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lakesweep: {e}\n\n{}", args::USAGE);
            ExitCode::from(64)
        }
    }
}
