//! The table formats a session plans.

use serde::{Deserialize, Serialize};

/// The table format of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TableFormat {
    /// Apache Iceberg, format versions 1–3.
    Iceberg,
    /// Delta Lake (reader versions 1–3, writer versions 1–7, known features).
    Delta,
}
