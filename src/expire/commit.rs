//! The commit an expiry plans: the Iceberg REST `CommitTableRequest` body
//! and, for file-based catalogs, the next metadata document.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::error::MalformedReason;
use crate::error::{Error, Result};
use crate::spec::iceberg::TableMetadata;

/// The REST `CommitTableRequest` body: assert the table and every ref touched.
pub(super) fn request(md: &TableMetadata, remove_refs: &[String], expire: &[i64]) -> Value {
    // Every ref the retention was computed from is asserted: if any moved
    // meanwhile (a rollback to an old snapshot, say), the commit fails.
    let mut requirements = vec![json!({"type": "assert-table-uuid", "uuid": md.table_uuid})];
    for (name, r) in &md.refs {
        requirements.push(
            json!({"type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": r.snapshot_id}),
        );
    }
    let mut updates = Vec::new();
    for name in remove_refs {
        updates.push(json!({"action": "remove-snapshot-ref", "ref-name": name}));
    }
    if !expire.is_empty() {
        updates.push(json!({"action": "remove-snapshots", "snapshot-ids": expire}));
    }
    json!({"requirements": requirements, "updates": updates})
}

/// The next metadata document: snapshots, refs, snapshot-log and statistics
/// of expired snapshots removed; the old file appended to `metadata-log`
/// (trimmed to `write.metadata.previous-versions-max`, default 100).
pub(super) fn new_metadata(
    mut raw: Value,
    uri: &str,
    now: i64,
    remove_refs: &[String],
    expire: &[i64],
) -> Result<Value> {
    let gone: BTreeSet<i64> = expire.iter().copied().collect();
    let obj = raw.as_object_mut().ok_or_else(|| {
        Error::malformed(
            MalformedReason::Encoding,
            uri,
            "metadata is not a JSON object",
        )
    })?;
    let id_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_i64);
    if let Some(Value::Array(snaps)) = obj.get_mut("snapshots") {
        snaps.retain(|s| !id_of(s, "snapshot-id").is_some_and(|id| gone.contains(&id)));
    }
    if let Some(Value::Object(refs)) = obj.get_mut("refs") {
        for r in remove_refs {
            refs.remove(r);
        }
    }
    // Java's updateSnapshotLog: an entry of a removed snapshot clears the
    // history before it (time travel by timestamp must not land on a
    // snapshot that was never current at that time).
    if let Some(Value::Array(log)) = obj.get_mut("snapshot-log") {
        let mut kept = Vec::new();
        for e in log.drain(..) {
            if id_of(&e, "snapshot-id").is_some_and(|id| gone.contains(&id)) {
                kept.clear();
            } else {
                kept.push(e);
            }
        }
        *log = kept;
    }
    for key in ["statistics", "partition-statistics"] {
        if let Some(Value::Array(st)) = obj.get_mut(key) {
            st.retain(|e| !id_of(e, "snapshot-id").is_some_and(|id| gone.contains(&id)));
        }
    }
    let last_updated = obj
        .get("last-updated-ms")
        .and_then(Value::as_i64)
        .unwrap_or(now);
    let max_prev = obj
        .get("properties")
        .and_then(|p| p.get("write.metadata.previous-versions-max"))
        .and_then(Value::as_str)
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(100)
        .max(1);
    let log = obj
        .entry("metadata-log")
        .or_insert_with(|| Value::Array(vec![]));
    if let Value::Array(log) = log {
        log.push(json!({"timestamp-ms": last_updated, "metadata-file": uri}));
        if log.len() > max_prev {
            let cut = log.len() - max_prev;
            log.drain(..cut);
        }
    }
    obj.insert("last-updated-ms".into(), json!(now.max(last_updated)));
    Ok(raw)
}
