//! `lakesweep policy check FILE`: a retention policy document validated by
//! the planner, its errors and warnings by field, and its digest.

use std::process::ExitCode;

use crate::component::{wasm_path, Planner};
use crate::error::{HostError, EXIT_REFUSED};

/// Checks the policy in `file` with the planner `wasm`; exit 2 when it has
/// errors.
pub async fn check(file: &str, json: bool, wasm: Option<&str>) -> Result<ExitCode, HostError> {
    let text = std::fs::read_to_string(file).map_err(|e| refused!("read {file}: {e}"))?;
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let r = planner.check_policy(&text)?;
    if json {
        let findings = |f: &[crate::wit::wt::Finding]| -> Vec<serde_json::Value> {
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
        ExitCode::from(EXIT_REFUSED)
    } else {
        ExitCode::SUCCESS
    })
}
