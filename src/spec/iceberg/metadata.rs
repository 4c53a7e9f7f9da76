//! Table metadata JSON (format versions 1, 2, 3): the document a
//! catalog's pointer names, read as far as a sweeper and snapshot expiry
//! need, and probed for its owner and its place in the table's history.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::snapshot::{RefKind, Snapshot, SnapshotRef, SummaryTotals};
use crate::codec::gzip;
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// Largest metadata JSON accepted after decompression, in bytes.
pub const MAX_METADATA_BYTES: usize = 256 << 20;

/// The table properties that name where a table writes besides its
/// `location`: each value is a root the table owns.
pub const WRITE_ROOT_PROPERTIES: [&str; 4] = [
    "write.data.path",
    "write.metadata.path",
    "write.folder-storage.path",
    "write.object-storage.path",
];

/// Table metadata, reduced to what a sweeper and snapshot expiry need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMetadata {
    /// `format-version`: 1, 2 or 3.
    pub format_version: u8,
    /// `table-uuid` (optional in v1).
    pub table_uuid: Option<String>,
    /// `location`, as written.
    pub location: String,
    /// `current-snapshot-id`; `-1` and absence both mean none.
    pub current_snapshot_id: Option<i64>,
    /// `last-sequence-number` (v2+; absent in v1).
    pub last_sequence_number: Option<i64>,
    /// All snapshots, in file order.
    pub snapshots: Vec<Snapshot>,
    /// Named refs; an implicit `main` is added for the current snapshot when
    /// the metadata has no `refs`.
    pub refs: BTreeMap<String, SnapshotRef>,
    /// `metadata-log[].metadata-file`, as written.
    pub metadata_log: Vec<String>,
    /// `statistics[]`: (snapshot id, statistics path).
    pub statistics: Vec<(i64, String)>,
    /// `partition-statistics[]`: (snapshot id, statistics path).
    pub partition_statistics: Vec<(i64, String)>,
    /// Table properties.
    pub properties: BTreeMap<String, String>,
    /// Names of every partition field of every spec (directory names
    /// `name=value` under these names are not hidden paths).
    pub partition_field_names: BTreeSet<String>,
}

/// Where a metadata document stands in its table's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// `table-uuid`.
    pub table_uuid: Option<String>,
    /// `last-sequence-number` (v2+; absent in v1).
    pub last_sequence_number: Option<i64>,
    /// `metadata-log[].metadata-file`, as written: the documents it descends from.
    pub metadata_log: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawMetadata {
    format_version: i64,
    table_uuid: Option<String>,
    #[serde(default)]
    last_sequence_number: Option<i64>,
    location: String,
    #[serde(default)]
    current_snapshot_id: Option<i64>,
    #[serde(default)]
    snapshots: Vec<RawSnapshot>,
    #[serde(default)]
    refs: Option<BTreeMap<String, RawRef>>,
    #[serde(default)]
    metadata_log: Vec<RawLogEntry>,
    #[serde(default)]
    statistics: Vec<RawStats>,
    #[serde(default)]
    partition_statistics: Vec<RawStats>,
    #[serde(default)]
    properties: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    partition_specs: Vec<RawSpec>,
    #[serde(default)]
    partition_spec: Vec<RawField>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawSnapshot {
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    #[serde(default)]
    timestamp_ms: i64,
    manifest_list: Option<String>,
    manifests: Option<Vec<String>>,
    key_id: Option<serde_json::Value>,
    #[serde(default)]
    summary: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawRef {
    snapshot_id: i64,
    #[serde(rename = "type")]
    kind: String,
    min_snapshots_to_keep: Option<i64>,
    max_snapshot_age_ms: Option<i64>,
    max_ref_age_ms: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawLogEntry {
    metadata_file: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawStats {
    snapshot_id: i64,
    statistics_path: String,
}

#[derive(Deserialize)]
struct RawSpec {
    #[serde(default)]
    fields: Vec<RawField>,
}

#[derive(Deserialize)]
struct RawField {
    name: String,
}

/// Decompresses a gzip metadata file when it is one; other bytes pass through.
pub(crate) fn maybe_gunzip<'a>(uri: &str, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>> {
    if gzip::is_gzip(bytes) {
        gzip::gunzip(bytes, MAX_METADATA_BYTES)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| Error::malformed(MalformedReason::Encoding, uri, e))
    } else {
        Ok(std::borrow::Cow::Borrowed(bytes))
    }
}

impl TableMetadata {
    /// False when the table property `gc.enabled` is `false`: nothing of
    /// the table may then be deleted or expired.
    pub fn gc_enabled(&self) -> bool {
        !self
            .properties
            .get("gc.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("false"))
    }

    /// Parses a metadata JSON document (plain or gzip).
    pub fn parse(uri: &str, bytes: &[u8]) -> Result<TableMetadata> {
        let bytes = maybe_gunzip(uri, bytes)?;
        let raw: RawMetadata = serde_json::from_slice(&bytes).map_err(|e| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("not Iceberg table metadata: {e}"),
            )
        })?;
        if !(1..=3).contains(&raw.format_version) {
            return Err(Error::unsupported(
                format!("iceberg format-version {}", raw.format_version),
                uri,
            ));
        }
        if raw.format_version >= 2 && raw.table_uuid.is_none() {
            return Err(Error::malformed(
                MalformedReason::Field,
                uri,
                "format v2+ metadata without table-uuid",
            ));
        }
        let current = raw.current_snapshot_id.filter(|&id| id != -1);
        let mut snapshots = Vec::with_capacity(raw.snapshots.len());
        let mut ids = BTreeSet::new();
        for s in raw.snapshots {
            if s.key_id.is_some() {
                return Err(Error::unsupported(
                    format!(
                        "encrypted manifest list (key-id) of snapshot {}",
                        s.snapshot_id
                    ),
                    uri,
                ));
            }
            if !ids.insert(s.snapshot_id) {
                return Err(Error::malformed(
                    MalformedReason::Inconsistent,
                    uri,
                    format!("snapshot {} appears twice", s.snapshot_id),
                ));
            }
            let manifests = s.manifests.unwrap_or_default();
            if s.manifest_list.is_none() && (raw.format_version >= 2 || manifests.is_empty()) {
                // A v1 snapshot may embed an empty manifest list only if it
                // really has no manifests; v2+ must name a manifest list.
                if raw.format_version >= 2 {
                    return Err(Error::malformed(
                        MalformedReason::Field,
                        uri,
                        format!("snapshot {} has no manifest-list", s.snapshot_id),
                    ));
                }
            }
            snapshots.push(Snapshot {
                snapshot_id: s.snapshot_id,
                parent_snapshot_id: s.parent_snapshot_id,
                timestamp_ms: s.timestamp_ms,
                manifest_list: s.manifest_list,
                manifests,
                totals: s
                    .summary
                    .as_ref()
                    .map(SummaryTotals::from_summary)
                    .unwrap_or_default(),
            });
        }
        let mut refs = BTreeMap::new();
        match raw.refs {
            Some(r) => {
                for (name, r) in r {
                    let kind = match r.kind.as_str() {
                        "branch" => RefKind::Branch,
                        "tag" => RefKind::Tag,
                        other => {
                            return Err(Error::malformed(
                                MalformedReason::Field,
                                uri,
                                format!("ref `{name}` has unknown type `{other}`"),
                            ))
                        }
                    };
                    if !ids.contains(&r.snapshot_id) {
                        return Err(Error::malformed(
                            MalformedReason::Inconsistent,
                            uri,
                            format!(
                                "ref `{name}` points at snapshot {} which is not in the metadata",
                                r.snapshot_id
                            ),
                        ));
                    }
                    refs.insert(
                        name,
                        SnapshotRef {
                            snapshot_id: r.snapshot_id,
                            kind,
                            min_snapshots_to_keep: r.min_snapshots_to_keep,
                            max_snapshot_age_ms: r.max_snapshot_age_ms,
                            max_ref_age_ms: r.max_ref_age_ms,
                        },
                    );
                }
            }
            None => {
                if let Some(id) = current {
                    refs.insert(
                        "main".to_owned(),
                        SnapshotRef {
                            snapshot_id: id,
                            kind: RefKind::Branch,
                            min_snapshots_to_keep: None,
                            max_snapshot_age_ms: None,
                            max_ref_age_ms: None,
                        },
                    );
                }
            }
        }
        if let Some(id) = current {
            if !ids.contains(&id) {
                return Err(Error::malformed(
                    MalformedReason::Inconsistent,
                    uri,
                    format!("current-snapshot-id {id} is not in the metadata"),
                ));
            }
        }
        let mut partition_field_names: BTreeSet<String> = raw
            .partition_specs
            .into_iter()
            .flat_map(|s| s.fields.into_iter().map(|f| f.name))
            .collect();
        partition_field_names.extend(raw.partition_spec.into_iter().map(|f| f.name));
        let properties = raw
            .properties
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect();
        Ok(TableMetadata {
            format_version: raw.format_version as u8,
            table_uuid: raw.table_uuid,
            location: raw.location,
            current_snapshot_id: current,
            last_sequence_number: raw.last_sequence_number,
            snapshots,
            refs,
            metadata_log: raw
                .metadata_log
                .into_iter()
                .map(|e| e.metadata_file)
                .collect(),
            statistics: raw
                .statistics
                .into_iter()
                .map(|s| (s.snapshot_id, s.statistics_path))
                .collect(),
            partition_statistics: raw
                .partition_statistics
                .into_iter()
                .map(|s| (s.snapshot_id, s.statistics_path))
                .collect(),
            properties,
            partition_field_names,
        })
    }

    /// Reads what places a metadata document in its table's history:
    /// `table-uuid`, `last-sequence-number` and the `metadata-log` files (as
    /// written). Used to tell a lagging pointer from a failed commit.
    pub fn probe_lineage(uri: &str, bytes: &[u8]) -> Result<Lineage> {
        #[derive(Deserialize)]
        #[serde(rename_all = "kebab-case")]
        struct Probe {
            table_uuid: Option<String>,
            last_sequence_number: Option<i64>,
            #[serde(default)]
            metadata_log: Vec<RawLogEntry>,
        }
        let bytes = maybe_gunzip(uri, bytes)?;
        let p: Probe = serde_json::from_slice(&bytes).map_err(|e| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("not Iceberg table metadata: {e}"),
            )
        })?;
        Ok(Lineage {
            table_uuid: p.table_uuid,
            last_sequence_number: p.last_sequence_number,
            metadata_log: p
                .metadata_log
                .into_iter()
                .map(|e| e.metadata_file)
                .collect(),
        })
    }

    /// Reads only `table-uuid` and `location` of a metadata document, to tell
    /// whose file it is. `None` fields were absent.
    pub fn probe_owner(uri: &str, bytes: &[u8]) -> Result<(Option<String>, Option<String>)> {
        #[derive(Deserialize)]
        #[serde(rename_all = "kebab-case")]
        struct Probe {
            table_uuid: Option<String>,
            location: Option<String>,
        }
        let bytes = maybe_gunzip(uri, bytes)?;
        let p: Probe = serde_json::from_slice(&bytes).map_err(|e| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("not Iceberg table metadata: {e}"),
            )
        })?;
        Ok((p.table_uuid, p.location))
    }

    /// The snapshot with this id.
    pub fn snapshot(&self, id: i64) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.snapshot_id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: &str = r#"{"format-version":2,"table-uuid":"u-1","location":"s3://b/t",
      "current-snapshot-id":2,
      "snapshots":[{"snapshot-id":1,"timestamp-ms":10,"manifest-list":"s3://b/t/metadata/snap-1.avro"},
                   {"snapshot-id":2,"parent-snapshot-id":1,"timestamp-ms":20,"manifest-list":"s3://b/t/metadata/snap-2.avro"}],
      "refs":{"main":{"snapshot-id":2,"type":"branch"},"audit":{"snapshot-id":1,"type":"tag","max-ref-age-ms":5}},
      "metadata-log":[{"timestamp-ms":1,"metadata-file":"s3://b/t/metadata/00000-a.metadata.json"}],
      "statistics":[{"snapshot-id":2,"statistics-path":"s3://b/t/metadata/stats.puffin","file-size-in-bytes":1,"file-footer-size-in-bytes":1,"blob-metadata":[]}],
      "partition-specs":[{"spec-id":0,"fields":[{"name":"_cat","transform":"identity","source-id":1,"field-id":1000}]}],
      "properties":{"gc.enabled":"true","n":5}}"#;

    #[test]
    fn parses_v2() {
        let m = TableMetadata::parse("u", V2.as_bytes()).unwrap();
        assert_eq!(m.format_version, 2);
        assert_eq!(m.refs["audit"].kind, RefKind::Tag);
        assert_eq!(m.refs["audit"].max_ref_age_ms, Some(5));
        assert_eq!(
            m.statistics,
            vec![(2, "s3://b/t/metadata/stats.puffin".into())]
        );
        assert!(m.partition_field_names.contains("_cat"));
        assert_eq!(m.properties["n"], "5");
    }

    #[test]
    fn implicit_main_and_no_current() {
        let j = V2.replace(r#""refs":{"main":{"snapshot-id":2,"type":"branch"},"audit":{"snapshot-id":1,"type":"tag","max-ref-age-ms":5}},"#, "");
        let m = TableMetadata::parse("u", j.as_bytes()).unwrap();
        assert_eq!(m.refs["main"].snapshot_id, 2);
        let j = j.replace(r#""current-snapshot-id":2"#, r#""current-snapshot-id":-1"#);
        let m = TableMetadata::parse("u", j.as_bytes()).unwrap();
        assert!(m.refs.is_empty());
        assert_eq!(m.current_snapshot_id, None);
    }

    #[test]
    fn refuses_what_it_cannot_vouch_for() {
        let v9 = V2.replace(r#""format-version":2"#, r#""format-version":9"#);
        assert!(matches!(
            TableMetadata::parse("u", v9.as_bytes()),
            Err(Error::Unsupported { .. })
        ));
        let enc = V2.replace(
            r#""timestamp-ms":10,"#,
            r#""timestamp-ms":10,"key-id":"k1","#,
        );
        assert!(matches!(
            TableMetadata::parse("u", enc.as_bytes()),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            TableMetadata::parse("u", b"{\"format-version\":2"),
            Err(Error::Malformed { .. })
        ));
        let dangling = V2.replace(r#""audit":{"snapshot-id":1"#, r#""audit":{"snapshot-id":7"#);
        assert!(matches!(
            TableMetadata::parse("u", dangling.as_bytes()),
            Err(Error::Malformed { .. })
        ));
        let no_uuid = V2.replace(r#""table-uuid":"u-1","#, "");
        assert!(matches!(
            TableMetadata::parse("u", no_uuid.as_bytes()),
            Err(Error::Malformed { .. })
        ));
    }
}
