//! The retention properties of a Pinot table config
//! (`task.taskTypeConfigsMap.ExternalTableSyncTask`), with StarTree's
//! documented defaults.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::duration::parse_duration;
use crate::error::{Error, MalformedReason, Result};

/// The task type whose config carries snapshot processing.
pub const SYNC_TASK: &str = "ExternalTableSyncTask";
/// Whether snapshot retention runs (default `true`).
pub const ENABLED: &str = "iceberg.snapshotProcessing.retention.enabled";
/// How many completed snapshots stay active (default 5; below 2: ignored).
pub const MAX_ACTIVE_VERSIONS: &str = "iceberg.snapshotProcessing.retention.maxActiveVersions";
/// The retention passed with segment deletion (default `7d`).
pub const DELETED_SEGMENT_RETENTION: &str =
    "iceberg.snapshotProcessing.retention.deletedSegmentRetention";
/// A removed property: the artifact root now follows the deep store.
pub const REMOVED_SNAPSHOT_DIR_URI: &str = "iceberg.snapshotProcessing.snapshotDirURI";
/// `maxActiveVersions` when unset or below 2.
pub const DEFAULT_MAX_ACTIVE_VERSIONS: u32 = 5;
/// `deletedSegmentRetention` when unset: 7 days, in milliseconds.
pub const DEFAULT_DELETED_SEGMENT_RETENTION_MS: i64 = 7 * 86_400_000;

/// The URI errors about the table config name.
const URI: &str = "table-config";

/// What a table config says about snapshot retention, after defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetentionSettings {
    /// `tableName` with its type suffix (`events_OFFLINE`): the name of the
    /// artifact folder and of every document's table.
    pub table_name_with_type: String,
    /// `OFFLINE` or `REALTIME`.
    pub table_type: String,
    /// False: plan nothing.
    pub enabled: bool,
    /// Completed snapshots kept active (at least 2).
    pub max_active_versions: u32,
    /// The retention sent with segment deletion, as Pinot writes it (`7d`).
    pub deleted_segment_retention: String,
    /// The same, in milliseconds.
    pub deleted_segment_retention_ms: i64,
    /// What the config said that was ignored or defaulted, in words.
    pub notes: Vec<String>,
}

impl RetentionSettings {
    /// Reads a Pinot table config (the JSON `GET /tables/{table}` returns
    /// for one type, or the bare config). Fails (malformed) on JSON that is
    /// not a table config or a property that does not parse, and (invalid
    /// options) on a table without an `ExternalTableSyncTask` config.
    pub fn from_table_config(json: &str) -> Result<RetentionSettings> {
        let v: Value = serde_json::from_str(json).map_err(|e| {
            Error::malformed(MalformedReason::Encoding, URI, format!("not JSON: {e}"))
        })?;
        // `GET /tables/{t}` wraps the config in its type: `{"OFFLINE": {...}}`.
        let v = match (v.get("OFFLINE"), v.get("REALTIME")) {
            (Some(o), None) if o.is_object() => o.clone(),
            (None, Some(r)) if r.is_object() => r.clone(),
            (Some(_), Some(_)) => {
                return Err(Error::malformed(
                    MalformedReason::Inconsistent,
                    URI,
                    "holds both an OFFLINE and a REALTIME config: pass one",
                ))
            }
            _ => v,
        };
        let field = |name: &str| -> Result<&str> {
            v.get(name).and_then(Value::as_str).ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("`{name}` is missing or not a string"),
                )
            })
        };
        let table_type = field("tableType")?.to_owned();
        if table_type != "OFFLINE" && table_type != "REALTIME" {
            return Err(Error::unsupported(format!("tableType `{table_type}`"), URI));
        }
        let name = field("tableName")?;
        let table_name_with_type = match name.rsplit_once('_') {
            Some((_, t)) if t == "OFFLINE" || t == "REALTIME" => {
                if t != table_type {
                    return Err(Error::malformed(
                        MalformedReason::Inconsistent,
                        URI,
                        format!("tableName `{name}` does not end in its tableType {table_type}"),
                    ));
                }
                name.to_owned()
            }
            _ => format!("{name}_{table_type}"),
        };
        if name.is_empty()
            || name.contains('/')
            || name == "."
            || name == ".."
            || name.chars().any(char::is_control)
        {
            return Err(Error::malformed(
                MalformedReason::Field,
                URI,
                format!("tableName `{name}` cannot name a folder"),
            ));
        }
        let task = v
            .pointer(&format!("/task/taskTypeConfigsMap/{SYNC_TASK}"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                Error::invalid(
                    "tableConfig",
                    format!(
                        "{table_name_with_type} has no task.taskTypeConfigsMap.{SYNC_TASK}: \
                         it is not a table synced with snapshot processing"
                    ),
                )
            })?;
        let prop = |key: &str| -> Result<Option<String>> {
            match task.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
                Some(other) => Err(Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("`{key}` is {other}, not a string (Pinot task configs are strings)"),
                )),
            }
        };
        let mut notes = Vec::new();
        let enabled = match prop(ENABLED)?.as_deref() {
            None => true,
            Some(s) if s.eq_ignore_ascii_case("true") => true,
            Some(s) if s.eq_ignore_ascii_case("false") => false,
            Some(s) => {
                return Err(Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("`{ENABLED}` is `{s}`, neither true nor false"),
                ))
            }
        };
        let max_active_versions = match prop(MAX_ACTIVE_VERSIONS)? {
            None => DEFAULT_MAX_ACTIVE_VERSIONS,
            Some(s) => {
                let n: i64 = s.parse().map_err(|_| {
                    Error::malformed(
                        MalformedReason::Field,
                        URI,
                        format!("`{MAX_ACTIVE_VERSIONS}` is `{s}`, not an integer"),
                    )
                })?;
                if n < 2 {
                    notes.push(format!(
                        "{MAX_ACTIVE_VERSIONS}={n} is below 2 and ignored: the default \
                         {DEFAULT_MAX_ACTIVE_VERSIONS} is used"
                    ));
                    DEFAULT_MAX_ACTIVE_VERSIONS
                } else {
                    u32::try_from(n).unwrap_or(u32::MAX)
                }
            }
        };
        let deleted_segment_retention_ms = match prop(DELETED_SEGMENT_RETENTION)? {
            None => DEFAULT_DELETED_SEGMENT_RETENTION_MS,
            Some(s) => parse_duration(&s).map_err(|e| {
                Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("`{DELETED_SEGMENT_RETENTION}`: {e}"),
                )
            })?,
        };
        if deleted_segment_retention_ms == 0 {
            notes.push(format!(
                "{DELETED_SEGMENT_RETENTION}=0: the controller deletes segments at once, \
                 with no recovery window"
            ));
        }
        if task.contains_key(REMOVED_SNAPSHOT_DIR_URI) {
            notes.push(format!(
                "{REMOVED_SNAPSHOT_DIR_URI} is a removed property and was ignored: \
                 artifacts are looked for under each deep-store root's snapshots/ folder"
            ));
        }
        if !enabled {
            notes.push(format!("{ENABLED}=false: nothing is planned"));
        }
        Ok(RetentionSettings {
            table_name_with_type,
            table_type,
            enabled,
            max_active_versions,
            deleted_segment_retention: pinot_period(deleted_segment_retention_ms),
            deleted_segment_retention_ms,
            notes,
        })
    }
}

/// A retention as Pinot's `retention` query parameter takes it: the largest
/// whole unit of `d`, `h`, `m`, `s` (sub-second parts round up to a second,
/// so the recovery window is never shorter than configured).
pub fn pinot_period(ms: i64) -> String {
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000)] {
        if ms % size == 0 {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{}s", ms.saturating_add(999) / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(props: &str) -> String {
        format!(
            r#"{{"tableName":"events","tableType":"OFFLINE","task":{{"taskTypeConfigsMap":
            {{"ExternalTableSyncTask":{{{props}}}}}}}}}"#
        )
    }

    #[test]
    fn defaults_and_ignored_values() {
        let s = RetentionSettings::from_table_config(&config("")).unwrap();
        assert_eq!(s.table_name_with_type, "events_OFFLINE");
        assert!(s.enabled);
        assert_eq!(s.max_active_versions, 5);
        assert_eq!(s.deleted_segment_retention, "7d");
        for n in ["0", "1", "-3"] {
            let s = RetentionSettings::from_table_config(&config(&format!(
                r#""{MAX_ACTIVE_VERSIONS}":"{n}""#
            )))
            .unwrap();
            assert_eq!(s.max_active_versions, 5, "{n}");
            assert!(s.notes[0].contains("ignored"), "{:?}", s.notes);
        }
        let s = RetentionSettings::from_table_config(&config(&format!(
            r#""{MAX_ACTIVE_VERSIONS}":"2","{DELETED_SEGMENT_RETENTION}":"36h","{REMOVED_SNAPSHOT_DIR_URI}":"s3://x/y""#
        )))
        .unwrap();
        assert_eq!(s.max_active_versions, 2);
        assert_eq!(s.deleted_segment_retention, "36h");
        assert!(s.notes.iter().any(|n| n.contains("removed property")));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            config(&format!(r#""{MAX_ACTIVE_VERSIONS}":"five""#)),
            config(&format!(r#""{ENABLED}":"yes""#)),
            config(&format!(r#""{DELETED_SEGMENT_RETENTION}":"7 days""#)),
            config(&format!(r#""{MAX_ACTIVE_VERSIONS}":5"#)),
            r#"{"tableName":"events","tableType":"OFFLINE"}"#.to_owned(),
            r#"{"tableName":"events_REALTIME","tableType":"OFFLINE","task":{}}"#.to_owned(),
            "not json".to_owned(),
        ] {
            assert!(RetentionSettings::from_table_config(&bad).is_err(), "{bad}");
        }
        let wrapped = format!(r#"{{"OFFLINE":{}}}"#, config(""));
        assert!(RetentionSettings::from_table_config(&wrapped).is_ok());
    }

    #[test]
    fn periods_never_shorten_the_window() {
        assert_eq!(pinot_period(0), "0d");
        assert_eq!(pinot_period(90 * 60_000), "90m");
        assert_eq!(pinot_period(1_500), "2s");
    }
}
