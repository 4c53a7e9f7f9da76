//! The host's error: what the operator must know first is whether anything
//! may have been deleted, and the exit status says it. Each variant names
//! who gave the reason: the planner (its typed error, kept whole), the
//! component runtime, a store, a catalog, or the command's own input; the
//! exit status is chosen here, from the variant, and nowhere else.

use std::fmt;

use crate::wit::wt;

/// Why a command did not finish.
#[derive(Debug, Clone)]
pub enum HostError {
    /// The planner refused (its typed reason: malformed input, an
    /// unsupported feature, unsafe to proceed, ...): nothing was deleted.
    Planner(wt::Error),
    /// The planner component could not be loaded, or stopped (a trap):
    /// nothing was deleted.
    Component(String),
    /// A store could not be read, listed or written before any delete.
    Store(String),
    /// A catalog could not be read, or refused a request.
    Catalog(String),
    /// The command's input cannot be used (a file, an option, a plan): the
    /// command refused before any delete.
    Refused(String),
    /// Stopped after deletes may have begun (the ledger, its mark or the
    /// receipts could not be written): reconcile by listing.
    Stopped(String),
    /// A commit was sent and its outcome is not known (a lost answer, a
    /// 5xx): what it wrote is kept; check the table before retrying.
    Unknown(String),
}

/// Exit status: refused, nothing deleted.
pub const EXIT_REFUSED: u8 = 2;
/// Exit status: finished or stopped with keys that need a look.
pub const EXIT_ATTENTION: u8 = 1;
/// Exit status: bad usage.
pub const EXIT_USAGE: u8 = 64;

impl HostError {
    /// The process exit status for this error: 2 when nothing was deleted,
    /// 1 when deletes may have begun or a commit's outcome is unknown.
    pub fn exit_code(&self) -> u8 {
        match self {
            HostError::Planner(_)
            | HostError::Component(_)
            | HostError::Store(_)
            | HostError::Catalog(_)
            | HostError::Refused(_) => EXIT_REFUSED,
            HostError::Stopped(_) | HostError::Unknown(_) => EXIT_ATTENTION,
        }
    }

    /// The planner's typed error, when the planner gave this one.
    pub fn planner(&self) -> Option<&wt::Error> {
        match self {
            HostError::Planner(e) => Some(e),
            _ => None,
        }
    }

    /// The one line the command ends with: whether anything may have been
    /// deleted, then the reason.
    pub fn headline(&self) -> String {
        match self {
            HostError::Stopped(_) => format!("STOPPED after deletes began: {self}"),
            HostError::Unknown(_) => {
                format!("OUTCOME UNKNOWN, check the table before retrying: {self}")
            }
            _ => format!("refused, nothing deleted: {self}"),
        }
    }
}

/// A reason in words from the command's own checks is a refusal.
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

/// The reason alone (the variant's words are the headline's, see
/// [`HostError::headline`]), so a reason can be quoted inside another.
impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Planner(e) => f.write_str(&crate::names::describe(e)),
            HostError::Component(e)
            | HostError::Store(e)
            | HostError::Catalog(e)
            | HostError::Refused(e)
            | HostError::Stopped(e)
            | HostError::Unknown(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for HostError {}

/// Two errors are equal when the same party gave the same reason.
impl PartialEq for HostError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

#[cfg(test)]
impl HostError {
    /// Whether the reason's words hold `s` (tests).
    pub fn contains(&self, s: &str) -> bool {
        self.to_string().contains(s)
    }

    /// Whether the reason's words start with `s` (tests).
    pub fn starts_with(&self, s: &str) -> bool {
        self.to_string().starts_with(s)
    }
}

/// A refusal from the command's own checks, formatted like `format!`.
macro_rules! refused {
    ($($t:tt)*) => { $crate::error::HostError::Refused(format!($($t)*)) };
}

/// A store's failure, formatted like `format!`.
macro_rules! store_err {
    ($($t:tt)*) => { $crate::error::HostError::Store(format!($($t)*)) };
}

/// A catalog's failure, formatted like `format!`.
macro_rules! catalog_err {
    ($($t:tt)*) => { $crate::error::HostError::Catalog(format!($($t)*)) };
}
