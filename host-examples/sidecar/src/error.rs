//! The host's error: what the operator must know first is whether anything
//! may have been deleted, and the exit status says it.

use std::fmt;

/// Why a command did not finish.
#[derive(Debug)]
pub enum HostError {
    /// Refused before any delete: nothing was deleted (the planner's
    /// answer, a store, catalog or file that could not be read, bad input).
    /// Exit status 2.
    Refused(String),
    /// Stopped after deletes may have begun (the ledger, its mark or the
    /// receipts could not be written): reconcile by listing. Exit status 1.
    Stopped(String),
    /// A commit was sent and its outcome is not known (a lost answer, a
    /// 5xx): what it wrote is kept; check the table before retrying. Exit
    /// status 1.
    Unknown(String),
}

impl HostError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            HostError::Refused(_) => 2,
            HostError::Stopped(_) | HostError::Unknown(_) => 1,
        }
    }
}

/// Every error a helper returns as text is a refusal, unless the path that
/// stops after deletes says otherwise.
impl From<String> for HostError {
    fn from(e: String) -> Self {
        HostError::Refused(e)
    }
}

impl From<&str> for HostError {
    fn from(e: &str) -> Self {
        HostError::Refused(e.to_owned())
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Refused(e) => write!(f, "refused, nothing deleted: {e}"),
            HostError::Stopped(e) => write!(f, "STOPPED after deletes began: {e}"),
            HostError::Unknown(e) => {
                write!(f, "OUTCOME UNKNOWN, check the table before retrying: {e}")
            }
        }
    }
}
