//! The three live documents a run is judged on: the ideal state (the
//! controller's `GET /tables/{table}/idealstate`), the ingestion watermark
//! and the active snapshot list. Each names its table; one for another
//! table is refused.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, MalformedReason, Result, UnsafeReason};

/// A snapshot id as the artifact folders spell it: an Iceberg snapshot id
/// in canonical decimal (no sign but `-`, no leading zero).
pub fn canonical_snapshot_id(s: &str) -> Option<String> {
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then(|| s.to_owned())
}

fn snapshot_id(v: &Value, uri: &str) -> Result<String> {
    let id = match v {
        Value::Number(n) => n.as_i64().map(|n| n.to_string()),
        Value::String(s) => canonical_snapshot_id(s),
        _ => None,
    };
    id.ok_or_else(|| {
        Error::malformed(
            MalformedReason::Field,
            uri,
            format!("snapshot id {v} is not a snapshot id in canonical decimal"),
        )
    })
}

fn object<'a>(v: &'a Value, uri: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::malformed(MalformedReason::Field, uri, "not a JSON object"))
}

fn parse(json: &str, uri: &str) -> Result<Value> {
    serde_json::from_str(json)
        .map_err(|e| Error::malformed(MalformedReason::Encoding, uri, format!("not JSON: {e}")))
}

fn check_table(v: &Map<String, Value>, table: &str, uri: &str) -> Result<()> {
    match v.get("tableNameWithType").and_then(Value::as_str) {
        Some(t) if t == table => Ok(()),
        Some(t) => Err(Error::unsafe_(
            UnsafeReason::ForeignTable,
            format!("{uri} is for table {t}, not {table}"),
        )),
        None => Err(Error::malformed(
            MalformedReason::Field,
            uri,
            "`tableNameWithType` is missing or not a string",
        )),
    }
}

/// The segments of a table's ideal state.
///
/// Accepted shapes: the controller's answer, `{"OFFLINE": {segment:
/// {instance: state}}}` (the other type absent or null), and the raw
/// ZooKeeper record, `{"id": "events_OFFLINE", "mapFields": {...}}`.
pub fn ideal_state_segments(json: &str, table: &str, table_type: &str) -> Result<BTreeSet<String>> {
    const URI: &str = "ideal-state";
    let v = parse(json, URI)?;
    let root = object(&v, URI)?;
    let map = if let Some(fields) = root.get("mapFields") {
        match root.get("id").and_then(Value::as_str) {
            Some(id) if id == table => {}
            Some(id) => {
                return Err(Error::unsafe_(
                    UnsafeReason::ForeignTable,
                    format!("the ideal state is {id}'s, not {table}'s"),
                ))
            }
            None => {
                return Err(Error::malformed(
                    MalformedReason::Field,
                    URI,
                    "a ZooKeeper record without its `id`",
                ))
            }
        }
        fields
    } else {
        root.get(table_type)
            .filter(|m| !m.is_null())
            .ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("no {table_type} ideal state in the answer"),
                )
            })?
    };
    let mut out = BTreeSet::new();
    for (segment, instances) in object(map, URI)? {
        if !instances.is_object() || segment.is_empty() {
            return Err(Error::malformed(
                MalformedReason::Field,
                URI,
                format!("segment `{segment}` has no instance-state map"),
            ));
        }
        out.insert(segment.clone());
    }
    Ok(out)
}

/// Where ingestion stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckpointState {
    /// A snapshot is being ingested: its folder and batches are protected.
    InProgress,
    /// The watermark's snapshot completed.
    Completed,
    /// The watermark's snapshot failed.
    Failed,
}

/// The ingestion watermark: the snapshot last started, and its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watermark {
    /// None: no snapshot ingested yet.
    pub snapshot_id: Option<String>,
    /// Its state (none when there is no snapshot).
    pub state: Option<CheckpointState>,
}

impl Watermark {
    /// Reads `{"tableNameWithType", "snapshotId", "state"}`; refuses one
    /// for another table and a state it does not know.
    pub fn parse(json: &str, table: &str) -> Result<Watermark> {
        const URI: &str = "watermark";
        let v = parse(json, URI)?;
        let m = object(&v, URI)?;
        check_table(m, table, URI)?;
        let snapshot_id = match m.get("snapshotId") {
            None | Some(Value::Null) => None,
            Some(id) => Some(snapshot_id(id, URI)?),
        };
        let state = match m.get("state") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(match s.as_str() {
                "IN_PROGRESS" => CheckpointState::InProgress,
                "COMPLETED" => CheckpointState::Completed,
                "FAILED" => CheckpointState::Failed,
                other => {
                    return Err(Error::unsupported(
                        format!("checkpoint state `{other}`"),
                        URI,
                    ))
                }
            }),
            Some(other) => {
                return Err(Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("`state` is {other}"),
                ))
            }
        };
        if snapshot_id.is_some() != state.is_some() {
            return Err(Error::malformed(
                MalformedReason::Inconsistent,
                URI,
                "a snapshot without a state, or a state without a snapshot",
            ));
        }
        Ok(Watermark { snapshot_id, state })
    }

    /// The snapshot being ingested now, if any.
    pub fn in_progress(&self) -> Option<&str> {
        match self.state {
            Some(CheckpointState::InProgress) => self.snapshot_id.as_deref(),
            _ => None,
        }
    }
}

/// One completed, active snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveSnapshot {
    /// Its id, canonical decimal (its artifact folder's name).
    pub snapshot_id: String,
    /// When it completed, milliseconds since the epoch.
    pub completed_at_ms: i64,
}

/// Reads the active snapshot list, `{"tableNameWithType", "snapshots":
/// [{"snapshotId", "completedAtMs"}]}`, oldest first. A snapshot twice,
/// or completion times that go backwards (the order eviction relies on),
/// is refused.
pub fn active_snapshots(json: &str, table: &str) -> Result<Vec<ActiveSnapshot>> {
    const URI: &str = "active-list";
    let v = parse(json, URI)?;
    let m = object(&v, URI)?;
    check_table(m, table, URI)?;
    let list = m
        .get("snapshots")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::malformed(
                MalformedReason::Field,
                URI,
                "`snapshots` is missing or not a list",
            )
        })?;
    let mut out: Vec<ActiveSnapshot> = Vec::with_capacity(list.len());
    let mut seen = BTreeSet::new();
    for s in list {
        let s = object(s, URI)?;
        let id = snapshot_id(s.get("snapshotId").unwrap_or(&Value::Null), URI)?;
        let completed_at_ms = s
            .get("completedAtMs")
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Field,
                    URI,
                    format!("snapshot {id}: `completedAtMs` is missing or not an integer"),
                )
            })?;
        if !seen.insert(id.clone()) {
            return Err(Error::malformed(
                MalformedReason::Inconsistent,
                URI,
                format!("snapshot {id} is listed twice"),
            ));
        }
        if let Some(prev) = out.last() {
            if completed_at_ms < prev.completed_at_ms {
                return Err(Error::malformed(
                    MalformedReason::Inconsistent,
                    URI,
                    format!(
                        "snapshot {id} completed at {completed_at_ms}, before snapshot {} \
                         listed ahead of it ({}): the list must be oldest first",
                        prev.snapshot_id, prev.completed_at_ms
                    ),
                ));
            }
        }
        out.push(ActiveSnapshot {
            snapshot_id: id,
            completed_at_ms,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_canonical_only() {
        assert_eq!(canonical_snapshot_id("42").as_deref(), Some("42"));
        assert_eq!(canonical_snapshot_id("-7").as_deref(), Some("-7"));
        for bad in ["042", "+42", " 42", "4 2", "", "1e3", "9223372036854775808"] {
            assert_eq!(canonical_snapshot_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn ideal_state_shapes() {
        let api = r#"{"OFFLINE":{"s1":{"Server_a":"ONLINE"},"s2":{}},"REALTIME":null}"#;
        let s = ideal_state_segments(api, "t_OFFLINE", "OFFLINE").unwrap();
        assert_eq!(s.len(), 2);
        let zk = r#"{"id":"t_OFFLINE","simpleFields":{},"mapFields":{"s1":{"a":"ONLINE"}}}"#;
        assert_eq!(
            ideal_state_segments(zk, "t_OFFLINE", "OFFLINE")
                .unwrap()
                .len(),
            1
        );
        let other = r#"{"id":"u_OFFLINE","mapFields":{}}"#;
        assert!(matches!(
            ideal_state_segments(other, "t_OFFLINE", "OFFLINE"),
            Err(Error::Unsafe {
                reason: UnsafeReason::ForeignTable,
                ..
            })
        ));
        assert!(ideal_state_segments(r#"{"REALTIME":{}}"#, "t_OFFLINE", "OFFLINE").is_err());
        assert!(
            ideal_state_segments(r#"{"OFFLINE":{"s":"ONLINE"}}"#, "t_OFFLINE", "OFFLINE").is_err()
        );
    }

    #[test]
    fn watermark_and_active_list() {
        let w = Watermark::parse(
            r#"{"tableNameWithType":"t_OFFLINE","snapshotId":"9","state":"IN_PROGRESS"}"#,
            "t_OFFLINE",
        )
        .unwrap();
        assert_eq!(w.in_progress(), Some("9"));
        for bad in [
            r#"{"tableNameWithType":"t_OFFLINE","snapshotId":"9","state":"PAUSED"}"#,
            r#"{"tableNameWithType":"t_OFFLINE","snapshotId":"09","state":"FAILED"}"#,
            r#"{"tableNameWithType":"t_OFFLINE","snapshotId":"9"}"#,
            r#"{"tableNameWithType":"u_OFFLINE","snapshotId":null}"#,
        ] {
            assert!(Watermark::parse(bad, "t_OFFLINE").is_err(), "{bad}");
        }
        let ok = r#"{"tableNameWithType":"t_OFFLINE","snapshots":[{"snapshotId":1,"completedAtMs":5},{"snapshotId":"2","completedAtMs":5}]}"#;
        assert_eq!(active_snapshots(ok, "t_OFFLINE").unwrap().len(), 2);
        for bad in [
            r#"{"tableNameWithType":"t_OFFLINE","snapshots":[{"snapshotId":1,"completedAtMs":5},{"snapshotId":2,"completedAtMs":4}]}"#,
            r#"{"tableNameWithType":"t_OFFLINE","snapshots":[{"snapshotId":1,"completedAtMs":5},{"snapshotId":1,"completedAtMs":6}]}"#,
            r#"{"tableNameWithType":"t_OFFLINE","snapshots":[{"snapshotId":1}]}"#,
            r#"{"tableNameWithType":"t_OFFLINE"}"#,
        ] {
            assert!(active_snapshots(bad, "t_OFFLINE").is_err(), "{bad}");
        }
    }
}
