//! The live context of a run: reader leases, legal holds, writers in
//! progress and disaster-recovery checkpoints. Each part carries a
//! generation or watermark that the plans record. Times are milliseconds
//! since the Unix epoch.

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::error::{Error, Result};

/// A reader's claim on a snapshot until a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lease {
    /// The snapshot being read.
    pub snapshot_id: i64,
    /// Why (a training run, a report, a replication job).
    #[serde(default)]
    pub purpose: String,
    /// Who holds it.
    #[serde(default)]
    pub owner: String,
    /// When the lease ends, milliseconds since the Unix epoch.
    pub expires_at_ms: i64,
    /// The reader registry's generation when the lease was granted.
    #[serde(default)]
    pub reader_generation: u64,
}

/// What a legal hold covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum HoldScope {
    /// The whole table: nothing expires, nothing is deleted.
    Table,
    /// A branch or tag (exact name) and every snapshot it reaches.
    Ref(String),
    /// One snapshot.
    Snapshot(i64),
    /// Every object whose key (relative to the table) starts with this prefix.
    PathPrefix(String),
}

/// A legal hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hold {
    /// What it covers.
    pub scope: HoldScope,
    /// The hold registry's generation.
    pub generation: u64,
    /// Why (a case number).
    #[serde(default)]
    pub reason: String,
}

/// A writer that has uploaded files but not committed yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Writer {
    /// Key prefix (relative to the table) of its uploads; never swept.
    pub staging_prefix: String,
    /// When it started, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
}

/// A disaster-recovery checkpoint to keep restorable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum DrCheckpoint {
    /// A snapshot of this table.
    SnapshotId(i64),
    /// A metadata file of this table (absolute URI): it is kept by the sweep,
    /// and every snapshot it names that still exists is retained. The host
    /// supplies its bytes to expiry ([`crate::ExpiryRequest::dr_metadata`]).
    MetadataFile(String),
}

/// The schema name a context document may carry.
pub const CONTEXT_SCHEMA: &str = "lakesweep.context.v1";

/// Everything true right now that the metadata does not say.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Context {
    /// The document's schema name, [`CONTEXT_SCHEMA`] when given (optional:
    /// contexts written before it existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Reader leases.
    #[serde(default)]
    pub leases: Vec<Lease>,
    /// Legal holds.
    #[serde(default)]
    pub holds: Vec<Hold>,
    /// Writers in progress.
    #[serde(default)]
    pub writers: Vec<Writer>,
    /// DR checkpoints.
    #[serde(default)]
    pub dr_checkpoints: Vec<DrCheckpoint>,
}

/// A key prefix relative to the table: not empty, no scheme, no leading
/// `/`, no `.` or `..` segments (such a prefix would silently match nothing).
fn relative_prefix(p: &str) -> bool {
    !p.is_empty()
        && !p.contains("://")
        && !p.starts_with("file:")
        && !p.starts_with('/')
        && !p.split('/').any(|s| s == "." || s == "..")
}

/// Whether `rel` lies under `prefix` up to letter case, percent-encoding
/// and repeated slashes (the spellings a hand-written hold gets wrong).
pub fn loosely_under(rel: &str, prefix: &str) -> bool {
    let p = crate::path::loose(prefix);
    let r = crate::path::loose(rel);
    !p.is_empty()
        && (r == p
            || r.starts_with(&format!("{p}/"))
            || (!prefix.ends_with('/') && r.starts_with(&p)))
}

impl Context {
    /// Counts the listed key `rel` against every path-prefix legal hold:
    /// `hits[prefix]` is (keys under it exactly, keys under it only up to
    /// spelling, see [`loosely_under`]). A plan warns of a hold that
    /// matched nothing exactly.
    pub(crate) fn count_hold_hits(
        &self,
        rel: &str,
        hits: &mut std::collections::BTreeMap<String, (u64, u64)>,
    ) {
        for h in &self.holds {
            if let HoldScope::PathPrefix(p) = &h.scope {
                let n = hits.entry(p.clone()).or_default();
                if rel.starts_with(p.as_str()) {
                    n.0 += 1;
                } else if loosely_under(rel, p) {
                    n.1 += 1;
                }
            }
        }
    }

    /// Parses a context document; unknown fields are refused.
    pub fn parse(json: &str) -> Result<Context> {
        let c: Context = serde_json::from_str(json)
            .map_err(|e| Error::invalid("context", format!("not a valid context: {e}")))?;
        if let Some(s) = c.schema.as_deref().filter(|s| *s != CONTEXT_SCHEMA) {
            return Err(Error::invalid(
                "context.schema",
                format!("`{s}` is not {CONTEXT_SCHEMA}: a context of another version or kind"),
            ));
        }
        for w in &c.writers {
            if !relative_prefix(&w.staging_prefix) {
                return Err(Error::invalid(
                    "context.writers.stagingPrefix",
                    format!(
                        "`{}` must be a non-empty key prefix relative to the table",
                        w.staging_prefix
                    ),
                ));
            }
        }
        for d in &c.dr_checkpoints {
            if let DrCheckpoint::MetadataFile(f) = d {
                if !f.contains("://") {
                    return Err(Error::invalid(
                        "context.drCheckpoints.metadataFile",
                        format!(
                            "`{f}` must be an absolute URI (like the table's metadata-log entries)"
                        ),
                    ));
                }
            }
        }
        for h in &c.holds {
            if let HoldScope::PathPrefix(p) = &h.scope {
                if !relative_prefix(p) {
                    return Err(Error::invalid(
                        "context.holds.scope.pathPrefix",
                        format!("`{p}` must be a key prefix relative to the table (like `data/case-7/`)"),
                    ));
                }
            }
        }
        Ok(c)
    }

    /// Merges a context document with arrays of leases, holds and writers
    /// (each a JSON array of one kind, as separate files hold them) into
    /// one validated context document. `None` when no part is given.
    /// Fails (invalid-options) naming the part that does not parse.
    pub fn merge(
        context: Option<&str>,
        leases: Option<&str>,
        holds: Option<&str>,
        writers: Option<&str>,
    ) -> Result<Option<String>> {
        use serde_json::{Map, Value};
        if context.is_none() && leases.is_none() && holds.is_none() && writers.is_none() {
            return Ok(None);
        }
        let mut doc = match context.map(serde_json::from_str::<Value>) {
            None => Map::new(),
            Some(Ok(Value::Object(m))) => m,
            Some(Ok(_)) => {
                return Err(Error::invalid(
                    "context",
                    "a context document is a JSON object",
                ))
            }
            Some(Err(e)) => return Err(Error::invalid("context", format!("not JSON: {e}"))),
        };
        for (key, part) in [("leases", leases), ("holds", holds), ("writers", writers)] {
            let Some(text) = part else { continue };
            let items = match serde_json::from_str::<Value>(text) {
                Ok(Value::Array(a)) => a,
                Ok(_) => return Err(Error::invalid(key, "takes a JSON array")),
                Err(e) => return Err(Error::invalid(key, format!("not JSON: {e}"))),
            };
            match doc
                .entry(key.to_owned())
                .or_insert_with(|| Value::Array(vec![]))
            {
                Value::Array(a) => a.extend(items),
                _ => return Err(Error::invalid(&format!("context.{key}"), "is not an array")),
            }
        }
        let text = Value::Object(doc).to_string();
        Context::parse(&text)?;
        Ok(Some(text))
    }

    /// The metadata files the DR checkpoints name (absolute URIs), in order.
    pub fn dr_metadata_files(&self) -> Vec<String> {
        self.dr_checkpoints
            .iter()
            .filter_map(|d| match d {
                DrCheckpoint::MetadataFile(f) => Some(f.clone()),
                DrCheckpoint::SnapshotId(_) => None,
            })
            .collect()
    }

    /// SHA-256 (hex) over the canonical JSON of the whole context: any
    /// lease, hold, writer or checkpoint added, removed or changed changes
    /// it (generations alone miss a new lease with an old generation).
    pub fn digest(&self) -> String {
        let canonical = serde_json::to_vec(self).unwrap_or_default();
        crate::digest::hex(&sha2::Sha256::digest(canonical))
    }

    /// The newest hold generation (0 without holds).
    pub fn hold_generation(&self) -> u64 {
        self.holds.iter().map(|h| h.generation).max().unwrap_or(0)
    }

    /// The newest reader generation among leases (0 without leases).
    pub fn lease_watermark(&self) -> u64 {
        self.leases
            .iter()
            .map(|l| l.reader_generation)
            .max()
            .unwrap_or(0)
    }

    /// Warnings for writers running longer than `max_writer_ms` at `now_ms`
    /// (their prefixes stay protected; someone should look at them).
    pub fn stale_writers(&self, now_ms: i64, max_writer_ms: Option<i64>) -> Vec<String> {
        let Some(max) = max_writer_ms else {
            return Vec::new();
        };
        self.writers
            .iter()
            .filter(|w| now_ms.saturating_sub(w.started_at_ms) > max)
            .map(|w| {
                format!(
                    "writer staging `{}` has run {}, longer than maxWriterDuration {}: its prefix stays protected",
                    w.staging_prefix,
                    crate::duration::human_ms(now_ms.saturating_sub(w.started_at_ms)),
                    crate::duration::human_ms(max)
                )
            })
            .collect()
    }

    /// Why a relative key is protected by a hold or a writer, if it is.
    /// A table hold protects everything.
    pub fn protects(&self, rel: &str) -> Option<String> {
        for h in &self.holds {
            match &h.scope {
                HoldScope::Table => {
                    return Some(format!(
                        "legal hold on the table (generation {}): {}",
                        h.generation, h.reason
                    ))
                }
                HoldScope::PathPrefix(p) if rel.starts_with(p.as_str()) => {
                    return Some(format!(
                        "legal hold on `{p}` (generation {}): {}",
                        h.generation, h.reason
                    ))
                }
                HoldScope::PathPrefix(p) if loosely_under(rel, p) => {
                    return Some(format!(
                        "near-miss of the legal hold on `{p}` (generation {}; equal up to letter case, percent-encoding or doubled slashes): kept, the hold may have been meant for it. {}",
                        h.generation, h.reason
                    ))
                }
                _ => {}
            }
        }
        for d in &self.dr_checkpoints {
            if let DrCheckpoint::MetadataFile(f) = d {
                if f == rel || f.ends_with(&format!("/{rel}")) {
                    return Some(format!("disaster-recovery checkpoint `{f}`"));
                }
            }
        }
        self.writers
            .iter()
            .find(|w| rel.starts_with(w.staging_prefix.as_str()))
            .map(|w| {
                format!(
                    "staging prefix `{}` of a writer in progress",
                    w.staging_prefix
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_may_name_its_schema_but_not_another() {
        let named = r#"{"schema": "lakesweep.context.v1", "leases": []}"#;
        assert_eq!(
            Context::parse(named).unwrap().schema.as_deref(),
            Some(CONTEXT_SCHEMA)
        );
        assert!(Context::parse(r#"{"leases": []}"#)
            .unwrap()
            .schema
            .is_none());
        let other = Context::parse(r#"{"schema": "lakesweep.context.v2"}"#);
        assert!(
            matches!(other, Err(Error::InvalidOptions { ref field, .. }) if field == "context.schema"),
            "{other:?}"
        );
    }

    #[test]
    fn parses_every_kind_and_refuses_unknown_fields() {
        let c = Context::parse(
            r#"{"leases":[{"snapshotId":1,"owner":"ml","expiresAtMs":5,"readerGeneration":3}],
                "holds":[{"scope":{"pathPrefix":"data/case-7/"},"generation":20,"reason":"case 7"},
                         {"scope":{"ref":"audit"},"generation":21}],
                "writers":[{"stagingPrefix":"data/_tmp/job-1/","startedAtMs":0}],
                "drCheckpoints":[{"snapshotId":1}]}"#,
        )
        .unwrap();
        assert_eq!(c.hold_generation(), 21);
        assert_eq!(c.lease_watermark(), 3);
        assert!(c.protects("data/case-7/x.parquet").is_some());
        assert!(c.protects("data/_tmp/job-1/x.parquet").is_some());
        assert!(c.protects("data/other.parquet").is_none());
        assert!(Context::parse(r#"{"leases":[{"snapshotId":1,"expiresAt":5}]}"#).is_err());
        assert!(
            Context::parse(r#"{"writers":[{"stagingPrefix":"s3://b/x","startedAtMs":0}]}"#)
                .is_err()
        );
        let table = Context::parse(r#"{"holds":[{"scope":"table","generation":1}]}"#).unwrap();
        assert!(table.protects("anything").is_some());
        // An exact prefix is a hold, not a near-miss of one.
        assert!(c
            .protects("data/case-7/x.parquet")
            .unwrap()
            .starts_with("legal hold on"));
        // A DR checkpoint's metadata file, and only it.
        let dr = Context::parse(
            r#"{"drCheckpoints":[{"metadataFile":"s3://b/t/metadata/00003-x.metadata.json"}]}"#,
        )
        .unwrap();
        assert!(dr.protects("metadata/00003-x.metadata.json").is_some());
        assert!(dr.protects("metadata/00004-x.metadata.json").is_none());
        assert!(dr.protects("x.metadata.json").is_none());
        // A writer is stale only past the longest writer duration.
        let w =
            Context::parse(r#"{"writers":[{"stagingPrefix":"tmp/","startedAtMs":1000}]}"#).unwrap();
        assert!(w.stale_writers(1000 + 60_000, Some(60_000)).is_empty());
        assert_eq!(w.stale_writers(1000 + 60_001, Some(60_000)).len(), 1);
    }
}
