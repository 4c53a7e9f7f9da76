//! The table's `metaData` action and the table properties a sweeper reads
//! from it: retention durations and their defaults.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Default `delta.deletedFileRetentionDuration`: 7 days, in milliseconds.
pub const DEFAULT_DELETED_FILE_RETENTION_MS: i64 = 7 * 86_400_000;
/// Default `delta.logRetentionDuration`: 30 days, in milliseconds.
pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 86_400_000;

/// The table's metaData action (the parts a collector needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The table id (a UUID).
    #[serde(default)]
    pub id: String,
    /// Partition column names.
    #[serde(default)]
    pub partition_columns: Vec<String>,
    /// Table properties.
    #[serde(default)]
    pub configuration: BTreeMap<String, Option<String>>,
}

impl Metadata {
    /// A table property, if set.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.configuration.get(key).and_then(|v| v.as_deref())
    }
}

/// Parses a Delta interval property (`interval 7 days`, `168 hours`,
/// `interval 1 week 2 days`) into milliseconds. Months and years have no
/// fixed length and are refused, as Delta refuses them.
pub fn parse_interval(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("interval").unwrap_or(&t);
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.is_empty() || words.len() % 2 != 0 {
        return None;
    }
    let mut total: i64 = 0;
    for pair in words.chunks(2) {
        let n: i64 = pair[0].parse().ok()?;
        let unit = pair[1].trim_end_matches('s');
        let ms: f64 = match unit {
            "nanosecond" => 1e-6,
            "microsecond" => 1e-3,
            "millisecond" => 1.0,
            "second" => 1e3,
            "minute" => 6e4,
            "hour" => 3.6e6,
            "day" => 8.64e7,
            "week" => 6.048e8,
            _ => return None,
        };
        total = total.checked_add((n as f64 * ms) as i64)?;
    }
    (total >= 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("interval 7 days"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("interval 1 week"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("168 hours"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("interval 1 day 2 hours"), Some(93_600_000));
        assert_eq!(parse_interval("interval 1 month"), None);
        assert_eq!(parse_interval("seven days"), None);
        assert_eq!(parse_interval(""), None);
    }
}
