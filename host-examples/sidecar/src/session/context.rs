//! Reads the retention policy and the live context from files: `--policy`,
//! and `--context` (a whole context document) merged with `--leases`,
//! `--holds` and `--writers` (JSON arrays of one kind each). The planner
//! merges and validates them; this module only reads the files.

use crate::component::{wt, Planner};
use crate::error::HostError;

/// Files naming the policy and the context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextFiles {
    /// `--policy FILE`.
    pub policy: Option<String>,
    /// `--context FILE`.
    pub context: Option<String>,
    /// `--leases FILE`.
    pub leases: Option<String>,
    /// `--holds FILE`.
    pub holds: Option<String>,
    /// `--writers FILE`.
    pub writers: Option<String>,
}

fn read(path: &str) -> Result<String, HostError> {
    std::fs::read_to_string(path).map_err(|e| refused!("read {path}: {e}"))
}

impl ContextFiles {
    /// The policy document's text, if any.
    pub fn policy_json(&self) -> Result<Option<String>, HostError> {
        self.policy.as_deref().map(read).transpose()
    }

    /// The context document the files make, merged and validated by the
    /// planner; `None` when no file was given.
    pub fn context_json(&self, planner: &mut Planner) -> Result<Option<String>, HostError> {
        let parts = wt::ContextParts {
            context: self.context.as_deref().map(read).transpose()?,
            leases: self.leases.as_deref().map(read).transpose()?,
            holds: self.holds.as_deref().map(read).transpose()?,
            writers: self.writers.as_deref().map(read).transpose()?,
        };
        planner.merge_context(&parts)
    }
}
