//! The Iceberg half of a session: what only an Iceberg table needs while
//! its metadata, manifest lists and manifests are walked (the totals each
//! snapshot's summary records, what each manifest holds, stray metadata
//! documents of this table judged against the final pointer).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::*;
use crate::spec::iceberg::SummaryTotals;

/// Iceberg's state of a session.
#[derive(Debug, Default)]
pub(super) struct IcebergSweep {
    /// `last-sequence-number` of the metadata the pointer names now.
    pub(super) pointer_sequence: Option<i64>,
    /// Unreferenced metadata documents of this table found in the listing,
    /// judged against the final pointer before the plan is done.
    pub(super) stray_documents: Vec<StrayDocument>,
    /// Per snapshot walked: its manifest list (or embedded manifests) and
    /// what its summary says they hold; checked once every blob is read.
    pub(super) summary_checks: Vec<SummaryCheck>,
    /// Manifest URIs each manifest list named, by list URI.
    pub(super) list_manifests: HashMap<String, Vec<String>>,
    /// Per manifest URI: its live (ADDED or EXISTING) data and delete
    /// entries, and per snapshot id the entries that snapshot added or
    /// deleted (`[added data, deleted data, added deletes, deleted deletes]`).
    pub(super) manifest_live: HashMap<String, ManifestCounts>,
    /// Snapshots whose summary could not be checked (no totals recorded).
    pub(super) unchecked_summaries: u64,
}

/// What one manifest holds, counted while it is read.
#[derive(Debug, Clone, Default)]
pub(super) struct ManifestCounts {
    pub(super) live_data: u64,
    pub(super) live_deletes: u64,
    pub(super) changes: BTreeMap<i64, [u64; 4]>,
}

/// A snapshot whose manifests must add up to its summary's totals.
#[derive(Debug, Clone)]
pub(super) struct SummaryCheck {
    pub(super) snapshot_id: i64,
    /// Canonical manifest-list URI (`None`: v1 embedded manifests).
    pub(super) list: Option<String>,
    /// Canonical URIs of v1 embedded manifests.
    pub(super) embedded: Vec<String>,
    /// What its summary records.
    pub(super) totals: SummaryTotals,
}

/// An unreferenced `*.metadata.json` of this table (same `table-uuid`) and
/// where it stands in the table's history.
#[derive(Debug, Clone)]
pub(super) struct StrayDocument {
    /// Key relative to the table location.
    pub(super) rel: String,
    /// Its `metadata-log` entries, mapped and canonical.
    pub(super) log: BTreeSet<String>,
    /// Its `last-sequence-number`.
    pub(super) sequence: Option<i64>,
}

impl Session {
    pub(super) fn process_metadata(&mut self, uri: &str, bytes: &[u8]) -> Result<()> {
        let md = TableMetadata::parse(uri, bytes)?;
        let mapped_loc = apply_mappings(&md.location, &self.config.location_map);
        let loc = TableLocation::parse(&mapped_loc)
            .map_err(|e| Error::malformed(MalformedReason::Field, uri, format!("location: {e}")))?;
        if loc != self.classifier.location {
            return Err(Error::unsafe_(
                UnsafeReason::LocationMismatch,
                format!(
                    "metadata `{uri}` says the table lives at `{}`, the sweep was started for `{}`; if the table was moved or restored there, map its old location: location_map {}={}",
                    loc.as_uri(),
                    self.classifier.location.as_uri(),
                    md.location.trim_end_matches('/'),
                    self.classifier.location.as_uri()
                ),
            ));
        }
        match (&self.classifier.table_uuid, &md.table_uuid) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::unsafe_(
                    UnsafeReason::ForeignTable,
                    format!("the pointer now names table {b}, the sweep started on table {a} (table replaced?)"),
                ))
            }
            (None, Some(b)) => self.classifier.table_uuid = Some(b.clone()),
            _ => {}
        }
        if let Some(p) = &self.policy {
            p.ensure_binds(&md)?;
        }
        self.ice()?.pointer_sequence = md.last_sequence_number;
        self.set_roots(&md);
        if !md.gc_enabled() {
            return Err(Error::unsafe_(
                UnsafeReason::GcDisabled,
                "table property gc.enabled=false forbids deleting files",
            ));
        }
        self.reference_mapped(uri, uri, uri, Source::CurrentMetadata)?;
        for f in &md.metadata_log {
            self.reference(uri, f, Source::MetadataLog)?;
        }
        self.classifier
            .partition_names
            .extend(md.partition_field_names.iter().cloned());
        self.refs = md
            .refs
            .iter()
            .map(|(k, r)| (k.clone(), r.snapshot_id))
            .collect();
        let dr_files: Vec<String> = self
            .classifier
            .protections
            .dr_checkpoints
            .iter()
            .filter_map(|d| match d {
                crate::context::DrCheckpoint::MetadataFile(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        for f in dr_files {
            let canon = self.reference_blob(uri, &f, Source::DrCheckpoint)?;
            self.request_read(canon, Purpose::DrMetadata);
        }
        self.walk_snapshots(uri, &md)
    }

    /// Records what `md` (read from `uri`) references and requests every
    /// manifest list (or v1 manifest) of its snapshots, as [`walk`] says.
    pub(super) fn walk_snapshots(&mut self, uri: &str, md: &TableMetadata) -> Result<()> {
        let w = walk(md);
        for (raw, source) in w.references {
            self.reference(uri, &raw, source)?;
        }
        self.readable.extend(w.snapshots);
        let mut checks = w.checks;
        for r in w.reads {
            let canon = self.reference_blob(uri, &r.raw, r.source)?;
            let check = &mut checks[r.check];
            match r.purpose {
                Purpose::ManifestList { .. } => check.list = Some(canon.clone()),
                _ => check.embedded.push(canon.clone()),
            }
            self.request_read(canon, r.purpose);
        }
        self.ice()?.summary_checks.extend(checks);
        Ok(())
    }

    /// Every snapshot walked since the last check: its manifests' live
    /// entries must add up to what its summary records (a manifest list cut
    /// at an Avro block boundary parses as a shorter, valid list; only the
    /// summary can tell). A snapshot without totals is counted and said.
    pub(super) fn check_summaries(&mut self) -> Result<()> {
        // A Delta session has no snapshot summaries to check.
        let Machine::Iceberg(i) = &mut self.machine else {
            return Ok(());
        };
        let checks = std::mem::take(&mut i.summary_checks);
        for c in checks {
            let t = c.totals;
            if t.data_files.is_none()
                && t.delete_files.is_none()
                && t.manifests.is_none()
                && t.changes.iter().all(Option::is_none)
            {
                self.ice()?.unchecked_summaries += 1;
                continue;
            }
            let (what, manifests): (String, Vec<String>) = match &c.list {
                Some(l) => (
                    format!("manifest list `{l}`"),
                    self.ice()?
                        .list_manifests
                        .get(l)
                        .cloned()
                        .unwrap_or_default(),
                ),
                None => ("embedded manifest list".into(), c.embedded.clone()),
            };
            let mut data = 0u64;
            let mut deletes = 0u64;
            let mut changes = [0u64; 4];
            for m in &manifests {
                if let Some(n) = self.iceberg().and_then(|i| i.manifest_live.get(m)) {
                    data = data.saturating_add(n.live_data);
                    deletes = deletes.saturating_add(n.live_deletes);
                    if let Some(own) = n.changes.get(&c.snapshot_id) {
                        for (sum, x) in changes.iter_mut().zip(own) {
                            *sum = sum.saturating_add(*x);
                        }
                    }
                }
            }
            let blob = c.list.as_deref().unwrap_or(self.metadata_location.as_str());
            let mismatch = |field: &str, found: u64, says: u64| {
                Error::malformed(MalformedReason::Inconsistent,
                    blob,
                    format!(
                        "snapshot {}: the {what} and its manifests hold {found} {field}, the snapshot summary says {says} (a list or manifest cut short, or rewritten): the keep set would be incomplete",
                        c.snapshot_id
                    ),
                )
            };
            if let Some(n) = t.manifests {
                if c.list.is_some() && n != manifests.len() as u64 {
                    return Err(mismatch("manifests", manifests.len() as u64, n));
                }
            }
            if let Some(n) = t.data_files {
                if n != data {
                    return Err(mismatch("live data files", data, n));
                }
            }
            if let Some(n) = t.delete_files {
                if n != deletes {
                    return Err(mismatch("live delete files", deletes, n));
                }
            }
            let names = [
                "data files it added",
                "data files it deleted",
                "delete files it added",
                "delete files it removed",
            ];
            for ((says, found), name) in t.changes.iter().zip(changes).zip(names) {
                if let Some(n) = *says {
                    if n != found {
                        return Err(mismatch(name, found, n));
                    }
                }
            }
        }
        Ok(())
    }

    /// The table's other write roots (`write.data.path`, `write.metadata.path`,
    /// `write.folder-storage.path`, `write.object-storage.path`) outside its
    /// location: listed and swept with the same rules. Set once, from the
    /// first metadata read; a root that is a bucket root, or that contains
    /// the table location (other tables live there), is not listed, and the
    /// plan says so.
    pub(super) fn set_roots(&mut self, md: &TableMetadata) {
        if !self.classifier.roots.is_empty() || self.listing_requested() {
            return;
        }
        let mut roots: Vec<TableLocation> = Vec::new();
        for key in [
            "write.data.path",
            "write.metadata.path",
            "write.folder-storage.path",
            "write.object-storage.path",
        ] {
            let Some(v) = md.properties.get(key) else {
                continue;
            };
            let mapped = apply_mappings(v, &self.config.location_map);
            let Ok(root) = TableLocation::parse(&mapped) else {
                self.warnings.insert(format!(
                    "table property {key} = `{v}` is not a location that can be swept (a bucket root?): objects there are kept and not listed"
                ));
                continue;
            };
            let loc = &self.classifier.location;
            if root == *loc || loc.relative(root.canonical()).is_some() {
                continue; // inside the table: listed with it
            }
            if root.relative(loc.canonical()).is_some() {
                self.warnings.insert(format!(
                    "table property {key} = `{v}` contains the table location (other tables may live there): objects there are kept and not listed"
                ));
                continue;
            }
            if roots
                .iter()
                .any(|r| *r == root || r.relative(root.canonical()).is_some())
            {
                continue;
            }
            roots.retain(|r| root.relative(r.canonical()).is_none());
            roots.push(root);
        }
        self.classifier.roots = roots;
    }

    /// Records an unreferenced metadata document of this table (the owner
    /// check passed) with its place in the table's history.
    pub(super) fn note_stray_document(&mut self, uri: &str, rel: &str, bytes: &[u8]) {
        // A document that does not parse was kept as `unverified` already.
        let Ok(l) = TableMetadata::probe_lineage(uri, bytes) else {
            return;
        };
        // The owner check passed: the same `table-uuid`, or (v1 documents
        // without one, on both sides) the same location.
        if l.table_uuid != self.classifier.table_uuid {
            return;
        }
        let log = l
            .metadata_log
            .iter()
            .filter_map(|f| {
                CanonicalUri::parse(&apply_mappings(f, &self.config.location_map))
                    .ok()
                    .map(|c| c.to_uri_string())
            })
            .collect();
        // Only an Iceberg session judges stray documents against its pointer.
        if let Machine::Iceberg(i) = &mut self.machine {
            i.stray_documents.push(StrayDocument {
                rel: rel.to_owned(),
                log,
                sequence: l.last_sequence_number,
            });
        }
    }

    /// A same-table document that descends from the final pointer (its
    /// `metadata-log` names the pointer, or its `last-sequence-number` is
    /// higher) means the pointer lags behind the table: everything only the
    /// newer commits reference would look like garbage. Refused, unless the
    /// pointer is an authoritative catalog's, where such a document is a
    /// failed commit's leftover (kept while young, like any object).
    pub(super) fn check_stray_documents(&mut self) -> Result<()> {
        let pointer = self.metadata_location.clone();
        let (docs, pointer_sequence) = match self.iceberg() {
            Some(i) => (i.stray_documents.clone(), i.pointer_sequence),
            None => (Vec::new(), None),
        };
        for doc in &docs {
            if self.classifier.keep.lookup(&doc.rel).is_some() {
                continue; // referenced by the final metadata after a re-check
            }
            let names_pointer = doc.log.contains(&pointer);
            let newer = matches!((doc.sequence, pointer_sequence), (Some(a), Some(b)) if a > b);
            if !(names_pointer || newer) {
                continue;
            }
            let how = if names_pointer {
                "its metadata-log names the pointer's document".to_owned()
            } else {
                format!(
                    "its last-sequence-number {} is higher than the pointer's {}",
                    doc.sequence.unwrap_or_default(),
                    pointer_sequence.unwrap_or_default()
                )
            };
            if self.config.pointer_authoritative {
                self.warnings.insert(format!(
                    "`{}` descends from the catalog's current metadata ({how}): a failed commit's leftover; planned like any unreferenced object",
                    doc.rel
                ));
                continue;
            }
            return Err(Error::unsafe_(
                UnsafeReason::StalePointer,
                format!(
                    "`{}` is a newer metadata document of this table than the pointer `{pointer}` ({how}): the pointer lags (version-hint.text not yet rewritten?); planning from it would call newer commits' files garbage. Point at the newest metadata or use the catalog",
                    doc.rel
                ),
            ));
        }
        Ok(())
    }
}

/// What the walk of one metadata document asks of the session: references
/// to record, blobs to read, and the snapshot totals to check once those
/// are read. Computed from the document alone.
pub(super) struct Walk {
    /// Paths as written (statistics files), with why they are kept.
    pub(super) references: Vec<(String, Source)>,
    /// Manifest lists and v1 manifests: kept, and read.
    pub(super) reads: Vec<WalkRead>,
    /// Every snapshot of the document.
    pub(super) snapshots: Vec<i64>,
    /// One per snapshot; the session fills in each read's canonical URI.
    pub(super) checks: Vec<SummaryCheck>,
}

/// A blob the walk needs the contents of.
pub(super) struct WalkRead {
    /// The path as written in the document.
    pub(super) raw: String,
    /// Why it is kept.
    pub(super) source: Source,
    /// What it is read for.
    pub(super) purpose: Purpose,
    /// Index of its snapshot's check in [`Walk::checks`].
    pub(super) check: usize,
}

/// The Iceberg walk of a metadata document: statistics files, and each
/// snapshot's manifest list (or v1 embedded manifests), in document order.
pub(super) fn walk(md: &TableMetadata) -> Walk {
    let mut w = Walk {
        references: Vec::new(),
        reads: Vec::new(),
        snapshots: Vec::new(),
        checks: Vec::new(),
    };
    for (id, p) in &md.statistics {
        w.references
            .push((p.clone(), Source::Statistics { snapshot_id: *id }));
    }
    for (id, p) in &md.partition_statistics {
        w.references
            .push((p.clone(), Source::PartitionStatistics { snapshot_id: *id }));
    }
    for snap in &md.snapshots {
        w.snapshots.push(snap.snapshot_id);
        let check = w.checks.len();
        w.checks.push(SummaryCheck {
            snapshot_id: snap.snapshot_id,
            list: None,
            embedded: Vec::new(),
            totals: snap.totals,
        });
        if let Some(list) = &snap.manifest_list {
            w.reads.push(WalkRead {
                raw: list.clone(),
                source: Source::ManifestList {
                    snapshot_id: snap.snapshot_id,
                },
                purpose: Purpose::ManifestList {
                    snapshot_id: snap.snapshot_id,
                },
                check,
            });
        }
        for m in &snap.manifests {
            w.reads.push(WalkRead {
                raw: m.clone(),
                source: Source::Manifest {
                    listed_in: format!("snapshot {} (v1 embedded list)", snap.snapshot_id),
                },
                purpose: Purpose::Manifest {
                    expected_len: None,
                    added_by: None,
                },
                check,
            });
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk reads only the document: every snapshot's list (or v1
    /// manifests) becomes a read tied to that snapshot's check, statistics
    /// become references.
    #[test]
    fn the_walk_of_a_document_names_its_lists_manifests_and_statistics() {
        let md = serde_json::json!({
            "format-version": 2, "table-uuid": "0f0e0d0c-0000-4000-8000-00000000e1e1",
            "location": "s3://b/t", "last-sequence-number": 2, "last-updated-ms": 1,
            "last-column-id": 1, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": [],
            "properties": {}, "current-snapshot-id": 2,
            "snapshots": [
                {"snapshot-id": 1, "timestamp-ms": 1, "manifest-list": "s3://b/t/metadata/snap-1.avro",
                 "summary": {"operation": "append"}},
                {"snapshot-id": 2, "parent-snapshot-id": 1, "timestamp-ms": 2,
                 "manifest-list": "s3://b/t/metadata/snap-2.avro", "summary": {"operation": "append"}}
            ],
            "statistics": [{"snapshot-id": 2, "statistics-path": "s3://b/t/metadata/2.stats",
                            "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}],
            "snapshot-log": [], "metadata-log": []
        });
        let md = TableMetadata::parse(
            "s3://b/t/metadata/v2.metadata.json",
            md.to_string().as_bytes(),
        )
        .expect("the document parses");
        let w = walk(&md);
        assert_eq!(w.snapshots, vec![1, 2]);
        assert_eq!(w.checks.len(), 2);
        let reads: Vec<(&str, i64)> = w
            .reads
            .iter()
            .map(|r| (r.raw.as_str(), w.checks[r.check].snapshot_id))
            .collect();
        assert_eq!(
            reads,
            vec![
                ("s3://b/t/metadata/snap-1.avro", 1),
                ("s3://b/t/metadata/snap-2.avro", 2)
            ]
        );
        assert_eq!(
            w.references,
            vec![(
                "s3://b/t/metadata/2.stats".to_owned(),
                Source::Statistics { snapshot_id: 2 }
            )]
        );
    }
}
