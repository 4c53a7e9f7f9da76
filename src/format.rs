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

impl TableFormat {
    /// The file-retention window a session uses when none is given and no
    /// policy sets one, in milliseconds: Iceberg's own orphan removal's 3
    /// days; Delta's `delta.deletedFileRetentionDuration` default, 7 days.
    pub fn default_file_retention_ms(self) -> i64 {
        const DAY_MS: i64 = 86_400_000;
        match self {
            TableFormat::Iceberg => 3 * DAY_MS,
            TableFormat::Delta => 7 * DAY_MS,
        }
    }
}
