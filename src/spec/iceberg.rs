//! Apache Iceberg: table metadata JSON (format versions 1, 2, 3), manifest
//! lists and manifests, read only as far as a sweeper needs.
//!
//! Paths are returned exactly as written (never percent-decoded); mapping and
//! canonicalisation happen in [`crate::path`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::codec::avro::{AvroError, Container, Projection, Value};
use crate::codec::gzip;
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// Largest metadata JSON accepted after decompression, in bytes.
pub const MAX_METADATA_BYTES: usize = 256 << 20;

/// The kind of a snapshot reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefKind {
    /// A branch: its snapshot and ancestors are readable.
    Branch,
    /// A tag: only its own snapshot.
    Tag,
}

/// A named reference (`refs` entry, or the implicit `main`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRef {
    /// Snapshot the ref points at.
    pub snapshot_id: i64,
    /// Branch or tag.
    pub kind: RefKind,
    /// `min-snapshots-to-keep` (branches), if set.
    pub min_snapshots_to_keep: Option<i64>,
    /// `max-snapshot-age-ms` (branches), if set; milliseconds.
    pub max_snapshot_age_ms: Option<i64>,
    /// `max-ref-age-ms`, if set; milliseconds.
    pub max_ref_age_ms: Option<i64>,
}

/// One snapshot, as far as reachability needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// `snapshot-id`.
    pub snapshot_id: i64,
    /// `parent-snapshot-id`, if any.
    pub parent_snapshot_id: Option<i64>,
    /// `timestamp-ms`: commit time, milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
    /// `manifest-list` path, as written.
    pub manifest_list: Option<String>,
    /// v1 only: the embedded `manifests` list, as written.
    pub manifests: Vec<String>,
    /// What the snapshot's summary says its manifests hold.
    pub totals: SummaryTotals,
}

/// The counts a snapshot summary records (`None`: absent or not a number).
/// A manifest list has no recorded length, so these are what tells a list
/// cut at an Avro block boundary from a shorter one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummaryTotals {
    /// `total-data-files`: live data files (ADDED or EXISTING, content 0).
    pub data_files: Option<u64>,
    /// `total-delete-files`: live delete files (content 1 or 2).
    pub delete_files: Option<u64>,
    /// `manifests-created` + `manifests-kept`: entries of the manifest list.
    pub manifests: Option<u64>,
    /// This snapshot's own changes: `added-data-files`,
    /// `deleted-data-files`, `added-delete-files`, `removed-delete-files`
    /// (entries ADDED or DELETED by this snapshot in its manifests).
    pub changes: [Option<u64>; 4],
}

impl SummaryTotals {
    fn from_summary(summary: &BTreeMap<String, serde_json::Value>) -> SummaryTotals {
        let num = |k: &str| -> Option<u64> {
            match summary.get(k)? {
                serde_json::Value::String(s) => s.trim().parse().ok(),
                serde_json::Value::Number(n) => n.as_u64(),
                _ => None,
            }
        };
        SummaryTotals {
            data_files: num("total-data-files"),
            delete_files: num("total-delete-files"),
            manifests: num("manifests-created")
                .zip(num("manifests-kept"))
                .and_then(|(a, b)| a.checked_add(b)),
            changes: [
                num("added-data-files"),
                num("deleted-data-files"),
                num("added-delete-files"),
                num("removed-delete-files"),
            ],
        }
    }
}

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

fn avro_err(uri: &str, e: AvroError) -> Error {
    match e {
        AvroError::Corrupt(d) => Error::malformed(MalformedReason::Encoding, uri, d),
        AvroError::Unsupported(f) => Error::unsupported(f, uri),
    }
}

/// `b` as text, or a malformed-encoding error naming `field`. Every
/// manifest entry's path passes here: simdutf8 checks it in vector-wide
/// chunks (SSE/AVX natively, simd128 in the component) and accepts exactly
/// what `std::str::from_utf8` accepts (tested on every length class).
fn utf8<'a>(uri: &str, field: &str, b: &'a [u8]) -> Result<&'a str> {
    simdutf8::basic::from_utf8(b).map_err(|_| {
        Error::malformed(
            MalformedReason::Encoding,
            uri,
            format!("{field} is not UTF-8"),
        )
    })
}

/// What a manifest's entries hold (`content` of a manifest-list entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ManifestContent {
    /// 0: data files.
    Data,
    /// 1: delete files.
    Deletes,
}

/// One entry of a manifest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    /// `manifest_path`, as written.
    pub path: String,
    /// `content`: what the manifest's entries hold (v1 has no such field:
    /// data).
    pub content: ManifestContent,
    /// `added_snapshot_id`, when present.
    pub added_snapshot_id: Option<i64>,
    /// `manifest_length`: the manifest's size in bytes, when present. A
    /// manifest read back with another length is truncated or replaced.
    pub length: Option<u64>,
}

/// Decodes a manifest list. An encrypted manifest (`key_metadata` set) is refused.
pub fn read_manifest_list(uri: &str, bytes: &[u8]) -> Result<Vec<ManifestFile>> {
    let c = Container::open(bytes).map_err(|e| avro_err(uri, *e))?;
    let p = Projection::compile(
        &c.schema,
        &[
            &["manifest_path"],
            &["content"],
            &["added_snapshot_id"],
            &["key_metadata"],
            &["manifest_length"],
        ],
    )
    .map_err(|e| avro_err(uri, *e))?;
    let mut out = Vec::new();
    let mut failure = None;
    c.for_each_record(&p, |v| {
        let path = match v[0] {
            Value::Str(s) => s,
            _ => {
                return Err(Box::new(AvroError::Corrupt(
                    "manifest list entry without manifest_path".into(),
                )))
            }
        };
        let content = match v[1] {
            Value::Int(0) => ManifestContent::Data,
            Value::Int(1) => ManifestContent::Deletes,
            Value::Int(c) => {
                return Err(Box::new(AvroError::Corrupt(format!(
                    "manifest content {c} is neither data (0) nor deletes (1)"
                ))))
            }
            _ => ManifestContent::Data,
        };
        if let Value::Str(k) = v[3] {
            if !k.is_empty() {
                return Err(Box::new(AvroError::Unsupported(
                    "encrypted manifest (key_metadata)".into(),
                )));
            }
        }
        match std::str::from_utf8(path) {
            Ok(p) => out.push(ManifestFile {
                path: p.to_owned(),
                content,
                added_snapshot_id: match v[2] {
                    Value::Int(i) => Some(i),
                    _ => None,
                },
                length: match v[4] {
                    Value::Int(i) if i >= 0 => Some(i as u64),
                    _ => None,
                },
            }),
            Err(_) => {
                failure = Some(Error::malformed(
                    MalformedReason::Encoding,
                    uri,
                    "manifest_path is not UTF-8",
                ))
            }
        }
        Ok(())
    })
    .map_err(|e| avro_err(uri, *e))?;
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A manifest entry's `status` (the spec's 0, 1, 2; ordered as the spec
/// numbers them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestStatus {
    /// 0: the file was already in the table.
    Existing,
    /// 1: the file was added by this manifest's snapshot.
    Added,
    /// 2: the file was removed by this manifest's snapshot (a tombstone).
    Deleted,
}

impl ManifestStatus {
    /// The status the spec numbers `n`, if any.
    pub fn from_spec(n: i64) -> Option<ManifestStatus> {
        match n {
            0 => Some(ManifestStatus::Existing),
            1 => Some(ManifestStatus::Added),
            2 => Some(ManifestStatus::Deleted),
            _ => None,
        }
    }

    /// Whether the entry's file is live in its snapshot (ADDED or EXISTING).
    pub fn is_live(self) -> bool {
        self != ManifestStatus::Deleted
    }
}

/// What a manifest entry's file holds (`data_file.content`; ordered as the
/// spec numbers them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContentType {
    /// 0: data.
    Data,
    /// 1: position deletes (including v3 deletion vectors in Puffin files).
    PositionDeletes,
    /// 2: equality deletes.
    EqualityDeletes,
}

impl ContentType {
    /// The content type the spec numbers `n`, if any.
    pub fn from_spec(n: i64) -> Option<ContentType> {
        match n {
            0 => Some(ContentType::Data),
            1 => Some(ContentType::PositionDeletes),
            2 => Some(ContentType::EqualityDeletes),
            _ => None,
        }
    }
}

/// Calls `f(status, content, file_path)` for every entry of a manifest.
/// Column statistics are skipped undecoded.
pub fn for_each_manifest_entry(
    uri: &str,
    bytes: &[u8],
    mut f: impl FnMut(ManifestStatus, ContentType, &str),
) -> Result<()> {
    for_each_manifest_entry_with_snapshot(uri, bytes, |status, content, _, path| {
        f(status, content, path)
    })
}

/// Like [`for_each_manifest_entry`], with each entry's `snapshot_id` (the
/// snapshot that added or deleted it; `None` when null: inherited from the
/// manifest's `added_snapshot_id`).
pub fn for_each_manifest_entry_with_snapshot(
    uri: &str,
    bytes: &[u8],
    mut f: impl FnMut(ManifestStatus, ContentType, Option<i64>, &str),
) -> Result<()> {
    let c = Container::open(bytes).map_err(|e| avro_err(uri, *e))?;
    let p = Projection::compile(
        &c.schema,
        &[
            &["status"],
            &["data_file", "content"],
            &["data_file", "file_path"],
            &["snapshot_id"],
        ],
    )
    .map_err(|e| avro_err(uri, *e))?;
    let mut failure = None;
    c.for_each_record(&p, |v| {
        let status = match v[0] {
            Value::Int(s) => ManifestStatus::from_spec(s)
                .ok_or_else(|| AvroError::Corrupt(format!("manifest entry status {s}")))?,
            _ => {
                return Err(Box::new(AvroError::Corrupt(
                    "manifest entry without status".into(),
                )))
            }
        };
        let content = match v[1] {
            Value::Int(c) => ContentType::from_spec(c)
                .ok_or_else(|| AvroError::Corrupt(format!("data_file content {c}")))?,
            _ => ContentType::Data,
        };
        let Value::Str(path) = v[2] else {
            return Err(Box::new(AvroError::Corrupt(
                "manifest entry without data_file.file_path".into(),
            )));
        };
        let snapshot = match v[3] {
            Value::Int(i) => Some(i),
            _ => None,
        };
        match utf8(uri, "data_file.file_path", path) {
            Ok(p) => f(status, content, snapshot, p),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
        Ok(())
    })
    .map_err(|e| avro_err(uri, *e))?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
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

    /// A manifest of one entry whose `data_file.file_path` is `path`.
    fn manifest_of_path(path: &[u8]) -> Vec<u8> {
        use crate::codec::avro::tests::{container, s, zz};
        let schema = r#"{"type":"record","name":"manifest_entry","fields":[
            {"name":"status","type":"int"},
            {"name":"data_file","type":{"type":"record","name":"r2","fields":[
                {"name":"content","type":"int"},
                {"name":"file_path","type":"string"}]}}]}"#;
        let mut r = Vec::new();
        zz(1, &mut r);
        zz(0, &mut r);
        s(path, &mut r);
        container(schema, "deflate", 1, &r)
    }

    proptest::proptest! {
        #[test]
        fn paths_are_text_exactly_when_std_says_so(
            text in "[a-z/é€𝄞]{0,150}",
            cut in proptest::collection::vec((0usize..600, proptest::num::u8::ANY), 0..3),
        ) {
            // Valid text, then maybe a few bytes written over it.
            let mut b = text.into_bytes();
            for (at, byte) in cut {
                if !b.is_empty() {
                    let at = at % b.len();
                    b[at] = byte;
                }
            }
            proptest::prop_assert_eq!(
                utf8("m", "p", &b).ok(),
                std::str::from_utf8(&b).ok()
            );
        }
    }

    #[test]
    fn a_data_file_path_is_read_only_as_valid_utf8_at_every_length() {
        // Short and long (the validator reads long strings in wide
        // chunks): the bad byte at the start, in the middle and last.
        for len in [1usize, 15, 16, 63, 64, 65, 200] {
            let good = format!("s3://b/t/data/{}é.parquet", "x".repeat(len));
            let mut read = Vec::new();
            for_each_manifest_entry("m.avro", &manifest_of_path(good.as_bytes()), |_, _, p| {
                read.push(p.to_owned())
            })
            .unwrap();
            assert_eq!(read, vec![good.clone()]);
            let at = good.len() / 2;
            for bad in [
                &b"\xff"[..],
                b"\xc0\xaf",     // an overlong `/`
                b"\xed\xa0\x80", // a surrogate
                b"\xe2\x82",     // a character cut short
            ] {
                for place in [0, at, good.len()] {
                    let mut path = good.as_bytes().to_vec();
                    path.splice(place..place, bad.iter().copied());
                    let e =
                        for_each_manifest_entry("m.avro", &manifest_of_path(&path), |_, _, p| {
                            panic!("read {p:?} from a path that is not UTF-8")
                        })
                        .unwrap_err();
                    assert!(
                        matches!(
                            e,
                            Error::Malformed {
                                reason: MalformedReason::Encoding,
                                ..
                            }
                        ),
                        "{len} {bad:?} at {place}: {e:?}"
                    );
                }
            }
        }
    }

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
