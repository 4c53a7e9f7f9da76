//! The Iceberg half of a session: what only an Iceberg table needs while
//! its metadata, manifest lists and manifests are walked (the totals each
//! snapshot's summary records, what each manifest holds, stray metadata
//! documents of this table judged against the final pointer).
//!
//! The half never reaches into the session: its functions and
//! [`IcebergSweep`]'s methods take what they need as arguments (a parsed
//! document, the table's location, the mappings) and return what to keep,
//! read and warn; the session's side (`session::iceberg`) applies it.

use std::collections::{BTreeMap, HashMap};

use super::manifest_digest::{ManifestDigest, ManifestPath};
use super::requests::Purpose;
use crate::error::{Error, MalformedReason, Result, UnsafeReason};
use crate::path::{apply_mappings, PathMapping, TableLocation};
use crate::reach::Source;
use crate::spec::iceberg::{
    self as ispec, ContentType, ManifestStatus, SummaryTotals, TableMetadata,
};

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
    /// Every document a pointer read of the run named, in read order.
    pub(super) pointer_docs: Vec<PointerDoc>,
    /// Snapshots of the document the pointer names now.
    pub(super) pointer_snapshots: u64,
}

/// A document a pointer read of the run named, and where it stands in the
/// table's history.
#[derive(Debug, Clone)]
pub(super) struct PointerDoc {
    /// The order of the read that named it (0: the earliest).
    pub(super) read: u32,
    /// Its canonical URI.
    pub(super) uri: String,
    /// Its `last-sequence-number` and `metadata-log` (canonical, mapped);
    /// `None` when the document is gone (a prior read's, cleaned up since).
    pub(super) lineage: Option<(Option<i64>, Vec<String>)>,
}

/// The lineage of a pointer's document: its `last-sequence-number`
/// (`sequence`) and its `metadata-log`, canonical and mapped by `maps`.
pub(super) fn lineage(
    sequence: Option<i64>,
    log: &[String],
    maps: &[PathMapping],
) -> (Option<i64>, Vec<String>) {
    (sequence, crate::verdict::canonical_log(log, maps).collect())
}

/// Why `late` (named by a later read) is an older document than `early`
/// (named by an earlier one), if it is; or why that cannot be told.
fn goes_back(early: &PointerDoc, late: &PointerDoc) -> Option<String> {
    if early.uri == late.uri {
        return None;
    }
    match (&early.lineage, &late.lineage) {
        (Some((early_seq, early_log)), Some((late_seq, _))) => {
            if early_log.contains(&late.uri) {
                return Some(format!(
                    "`{}`, named by an earlier read, descends from it (its metadata-log names it)",
                    early.uri
                ));
            }
            match (early_seq, late_seq) {
                (Some(a), Some(b)) if b < a => Some(format!(
                    "its last-sequence-number {b} is lower than {a}, of `{}` named by an earlier read",
                    early.uri
                )),
                _ => None,
            }
        }
        (None, Some((_, late_log))) if late_log.contains(&early.uri) => None,
        (None, Some(_)) => Some(format!(
            "`{}`, named by an earlier read, is gone and its metadata-log does not name it: whether the pointer went backwards cannot be told",
            early.uri
        )),
        // A document gone now fails as missing metadata where it is needed.
        (_, None) => None,
    }
}

impl IcebergSweep {
    /// Records a document a pointer read named, refusing (`stale-pointer`)
    /// when any read names an older document than an earlier read did.
    pub(super) fn note_pointer_doc(&mut self, doc: PointerDoc) -> Result<()> {
        for other in &self.pointer_docs {
            let (early, late) = if other.read < doc.read {
                (other, &doc)
            } else {
                (&doc, other)
            };
            if let Some(why) = goes_back(early, late) {
                return Err(Error::unsafe_(
                    UnsafeReason::StalePointer,
                    format!(
                        "the pointer went backwards: a later read named `{}`, {why}. A plan on it would call the newer commits' files garbage; nothing is deleted. A pointer that can answer older documents (a lagging replica or cache) cannot be swept by",
                        late.uri
                    ),
                ));
            }
        }
        self.pointer_docs.push(doc);
        Ok(())
    }
}

/// What one manifest holds, counted while it is read.
#[derive(Debug, Clone, Default)]
pub(super) struct ManifestCounts {
    pub(super) live_data: u64,
    pub(super) live_deletes: u64,
    /// Entries of delete files with status DELETED (a removed delete file
    /// or a replaced deletion vector, carried in the manifest).
    pub(super) deleted_deletes: u64,
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

pub(crate) use crate::verdict::StrayDocument;

/// What one manifest holds: its entry counts, and the files to keep with
/// their status and content (DELETED entries only when they are kept).
pub(super) struct ManifestRead {
    pub(super) counts: ManifestCounts,
    pub(super) files: Vec<(ManifestStatus, ContentType, ManifestPath)>,
}

/// Reads a manifest: its size must be what its list says; every entry is
/// counted (live data and deletes, and what each snapshot added or
/// deleted; entries without a snapshot id inherit `added_by`), and its
/// files are named (`keep_deleted`: DELETED entries too).
pub(super) fn read_manifest(
    uri: &str,
    bytes: &[u8],
    expected_len: Option<u64>,
    added_by: Option<i64>,
    keep_deleted: bool,
) -> Result<ManifestRead> {
    let mut t = ManifestTally::new(
        uri,
        bytes.len() as u64,
        expected_len,
        added_by,
        keep_deleted,
    )?;
    ispec::for_each_manifest_entry_with_snapshot(uri, bytes, |status, content, snap, path| {
        t.entry(status, content, snap, || {
            ManifestPath::Text(path.to_owned())
        })
    })?;
    Ok(t.read)
}

/// Reads a manifest from its digest (made where the manifest was read, see
/// [`crate::digest_manifest`]): the same checks and counts as
/// [`read_manifest`] on the manifest's own bytes, entry for entry.
pub(super) fn read_manifest_digest(
    uri: &str,
    digest: ManifestDigest,
    expected_len: Option<u64>,
    added_by: Option<i64>,
    keep_deleted: bool,
) -> Result<ManifestRead> {
    let mut t = ManifestTally::new(uri, digest.source_len, expected_len, added_by, keep_deleted)?;
    // Each path moves into the read: a digest's paths are not copied again.
    for e in digest.entries {
        t.entry(e.status, e.content, e.snapshot_id, || e.path);
    }
    Ok(t.read)
}

/// Counts a manifest's entries as they are read; one path for a manifest's
/// bytes and for its digest, so both plan alike.
struct ManifestTally {
    read: ManifestRead,
    added_by: Option<i64>,
    keep_deleted: bool,
}

impl ManifestTally {
    /// Fails (malformed: partial-write) when the manifest's `len` is not
    /// what its manifest list says.
    fn new(
        uri: &str,
        len: u64,
        expected_len: Option<u64>,
        added_by: Option<i64>,
        keep_deleted: bool,
    ) -> Result<ManifestTally> {
        if let Some(want) = expected_len {
            if want != len {
                return Err(Error::malformed(
                    MalformedReason::PartialWrite,
                    uri,
                    format!(
                        "manifest is {len} bytes but its manifest list says {want} (truncated or replaced)"
                    ),
                ));
            }
        }
        Ok(ManifestTally {
            read: ManifestRead {
                counts: ManifestCounts::default(),
                files: Vec::new(),
            },
            added_by,
            keep_deleted,
        })
    }

    /// Counts one entry and keeps its path (copied from a manifest's
    /// bytes, moved from a digest) when it is live or deleted entries are
    /// kept.
    fn entry(
        &mut self,
        status: ManifestStatus,
        content: ContentType,
        snap: Option<i64>,
        path: impl FnOnce() -> ManifestPath,
    ) {
        let counts = &mut self.read.counts;
        let data = content == ContentType::Data;
        if status.is_live() {
            if data {
                counts.live_data += 1;
            } else {
                counts.live_deletes += 1;
            }
        } else if !data {
            counts.deleted_deletes += 1;
        }
        if let Some(by) = snap.or(self.added_by) {
            let slot = match (status, data) {
                (ManifestStatus::Added, true) => Some(0),
                (ManifestStatus::Deleted, true) => Some(1),
                (ManifestStatus::Added, false) => Some(2),
                (ManifestStatus::Deleted, false) => Some(3),
                _ => None,
            };
            if let Some(i) = slot {
                counts.changes.entry(by).or_default()[i] += 1;
            }
        }
        if status.is_live() || self.keep_deleted {
            self.read.files.push((status, content, path()));
        }
    }
}

/// Checks that metadata `md` (read from `uri`) is the swept table: its
/// location (after `maps`) is `location`, and its `table-uuid` the one
/// seen so far. Returns the uuid to adopt when none was known.
pub(super) fn identify(
    uri: &str,
    md: &TableMetadata,
    location: &TableLocation,
    maps: &[PathMapping],
    known_uuid: Option<&str>,
) -> Result<Option<String>> {
    let mapped_loc = apply_mappings(&md.location, maps);
    let loc = TableLocation::parse(&mapped_loc)
        .map_err(|e| Error::malformed(MalformedReason::Field, uri, format!("location: {e}")))?;
    if loc != *location {
        return Err(Error::unsafe_(
            UnsafeReason::LocationMismatch,
            format!(
                "metadata `{uri}` says the table lives at `{}`, the sweep was started for `{}`; if the table was moved or restored there, map its old location: location_map {}={}",
                loc.as_uri(),
                location.as_uri(),
                md.location.trim_end_matches('/'),
                location.as_uri()
            ),
        ));
    }
    match (known_uuid, &md.table_uuid) {
        (Some(a), Some(b)) if a != b => Err(Error::unsafe_(
            UnsafeReason::ForeignTable,
            format!(
                "the pointer now names table {b}, the sweep started on table {a} (table replaced?)"
            ),
        )),
        (None, Some(b)) => Ok(Some(b.clone())),
        _ => Ok(None),
    }
}

/// The table's other write roots (`write.data.path`, `write.metadata.path`,
/// `write.folder-storage.path`, `write.object-storage.path`) outside its
/// `location`: listed and swept with the same rules. A root that is a
/// bucket root, or that contains the table location (other tables live
/// there), is not listed, and a warning says so.
pub(super) fn write_roots(
    md: &TableMetadata,
    location: &TableLocation,
    maps: &[PathMapping],
) -> (Vec<TableLocation>, Vec<String>) {
    let mut roots: Vec<TableLocation> = Vec::new();
    let mut warnings = Vec::new();
    for key in crate::spec::iceberg::WRITE_ROOT_PROPERTIES {
        let Some(v) = md.properties.get(key) else {
            continue;
        };
        let mapped = apply_mappings(v, maps);
        let Ok(root) = TableLocation::parse(&mapped) else {
            warnings.push(format!(
                "table property {key} = `{v}` is not a location that can be swept (a bucket root?): objects there are kept and not listed"
            ));
            continue;
        };
        if root == *location || location.relative(root.canonical()).is_some() {
            continue; // inside the table: listed with it
        }
        if root.relative(location.canonical()).is_some() {
            warnings.push(format!(
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
    (roots, warnings)
}

impl IcebergSweep {
    /// A manifest list was read: the canonical URIs of the manifests it names.
    pub(super) fn record_list(&mut self, uri: &str, manifests: Vec<String>) {
        self.list_manifests.insert(uri.to_owned(), manifests);
    }

    /// A manifest was read: what it holds.
    pub(super) fn record_manifest(&mut self, uri: &str, counts: ManifestCounts) {
        self.manifest_live.insert(uri.to_owned(), counts);
    }

    /// Every snapshot walked since the last check: its manifests' live
    /// entries must add up to what its summary records (a manifest list cut
    /// at an Avro block boundary parses as a shorter, valid list; only the
    /// summary can tell). A snapshot without totals is counted.
    /// `metadata_location` names the blob of v1 embedded lists.
    /// Returns the plan's warnings about summaries read leniently.
    pub(super) fn check_summaries(&mut self, metadata_location: &str) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        for c in std::mem::take(&mut self.summary_checks) {
            let t = c.totals;
            if t.data_files.is_none()
                && t.delete_files.is_none()
                && t.manifests.is_none()
                && t.changes.iter().all(Option::is_none)
            {
                self.unchecked_summaries += 1;
                continue;
            }
            let (what, manifests): (String, &[String]) = match &c.list {
                Some(l) => (
                    format!("manifest list `{l}`"),
                    self.list_manifests.get(l).map_or(&[], Vec::as_slice),
                ),
                None => ("embedded manifest list".into(), &c.embedded),
            };
            let mut data = 0u64;
            let mut deletes = 0u64;
            let mut removed_deletes = 0u64;
            let mut changes = [0u64; 4];
            for n in manifests.iter().filter_map(|m| self.manifest_live.get(m)) {
                data = data.saturating_add(n.live_data);
                deletes = deletes.saturating_add(n.live_deletes);
                removed_deletes = removed_deletes.saturating_add(n.deleted_deletes);
                if let Some(own) = n.changes.get(&c.snapshot_id) {
                    for (sum, x) in changes.iter_mut().zip(own) {
                        *sum = sum.saturating_add(*x);
                    }
                }
            }
            let blob = c.list.as_deref().unwrap_or(metadata_location);
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
            // A writer whose `total-delete-files` never decreases (DuckDB
            // 1.5 counts every delete file it ever added, a replaced
            // deletion vector included, and reports none removed): its
            // total is the live delete files plus the DELETED ones its
            // manifests still carry, exactly, and it says it removed none.
            // Anything else that falls short is a list cut short.
            let mut cumulative = false;
            if let Some(n) = t.delete_files {
                if n != deletes {
                    cumulative = n == deletes.saturating_add(removed_deletes)
                        && t.changes[3].unwrap_or(0) == 0;
                    if !cumulative {
                        return Err(mismatch("live delete files", deletes, n));
                    }
                    warnings.push(format!(
                        "snapshot {}: its summary counts {n} delete files, its manifests hold {deletes} live and {removed_deletes} removed (a writer that never subtracts removed delete files): checked as live plus removed",
                        c.snapshot_id
                    ));
                }
            }
            let names = [
                "data files it added",
                "data files it deleted",
                "delete files it added",
                "delete files it removed",
            ];
            for (i, ((says, found), name)) in t.changes.iter().zip(changes).zip(names).enumerate() {
                if cumulative && i == 3 {
                    continue; // it reports no removals (above)
                }
                if let Some(n) = *says {
                    if n != found {
                        return Err(mismatch(name, found, n));
                    }
                }
            }
        }
        Ok(warnings)
    }

    /// Records a stray document of this table (see [`stray_document`]).
    pub(super) fn note_stray_document(&mut self, doc: StrayDocument) {
        self.stray_documents.push(doc);
    }

    /// A same-table document that descends from the final `pointer` (its
    /// `metadata-log` names the pointer, or its `last-sequence-number` is
    /// higher) means the pointer lags behind the table: everything only the
    /// newer commits reference would look like garbage. Refused, unless the
    /// pointer is an `authoritative` catalog's, where such a document is a
    /// failed commit's leftover (kept while young, like any object; the
    /// returned warnings say so). Documents the final keep set references
    /// (`referenced`) are not strays.
    pub(super) fn judge_stray_documents(
        &self,
        pointer: &str,
        referenced: impl Fn(&str) -> bool,
        authoritative: bool,
    ) -> Result<Vec<String>> {
        let mut warnings = Vec::new();
        for doc in &self.stray_documents {
            if referenced(&doc.rel) {
                continue; // referenced by the final metadata after a re-check
            }
            let names_pointer = doc.log.contains(pointer);
            let newer =
                matches!((doc.sequence, self.pointer_sequence), (Some(a), Some(b)) if a > b);
            if !(names_pointer || newer) {
                continue;
            }
            let how = if names_pointer {
                "its metadata-log names the pointer's document".to_owned()
            } else {
                format!(
                    "its last-sequence-number {} is higher than the pointer's {}",
                    doc.sequence.unwrap_or_default(),
                    self.pointer_sequence.unwrap_or_default()
                )
            };
            if authoritative {
                warnings.push(format!(
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
        Ok(warnings)
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

    /// The Iceberg half runs without a session: a snapshot's summary is
    /// checked from what its list and manifests recorded, and a stray
    /// document is judged against a pointer, returning what to warn.
    #[test]
    fn summaries_and_stray_documents_are_judged_by_the_half_alone() {
        let mut i = IcebergSweep::default();
        let list = "s3://b/t/metadata/snap-1.avro";
        i.summary_checks.push(SummaryCheck {
            snapshot_id: 1,
            list: Some(list.into()),
            embedded: Vec::new(),
            totals: SummaryTotals {
                data_files: Some(2),
                ..SummaryTotals::default()
            },
        });
        i.record_list(list, vec!["m1".into()]);
        i.record_manifest(
            "m1",
            ManifestCounts {
                live_data: 1,
                ..ManifestCounts::default()
            },
        );
        let checks = i.summary_checks.clone();
        let e = i.check_summaries("s3://b/t/metadata/v1.metadata.json");
        assert!(e.unwrap_err().to_string().contains("summary says 2"));
        i.summary_checks = checks;
        i.record_manifest(
            "m1",
            ManifestCounts {
                live_data: 2,
                ..ManifestCounts::default()
            },
        );
        assert!(i.check_summaries("unused").is_ok());
        assert!(i.summary_checks.is_empty());

        let pointer = "s3://b/t/metadata/v1.metadata.json";
        i.pointer_sequence = Some(1);
        i.stray_documents.push(StrayDocument {
            rel: "metadata/v2.metadata.json".into(),
            log: std::collections::BTreeSet::from([pointer.to_owned()]),
            sequence: Some(2),
        });
        let e = i.judge_stray_documents(pointer, |_| false, false);
        assert!(e.unwrap_err().to_string().contains("pointer lags"));
        let w = i.judge_stray_documents(pointer, |_| false, true).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(i
            .judge_stray_documents(pointer, |rel| rel == "metadata/v2.metadata.json", false)
            .unwrap()
            .is_empty());
    }

    /// A writer whose delete-file total never decreases (it counts a
    /// replaced deletion vector still): accepted, with a warning, only when
    /// the total is exactly the live plus the DELETED delete files its
    /// manifests carry and it reports no removal; one short is refused.
    #[test]
    fn a_delete_file_total_that_never_decreases_is_checked_as_live_plus_removed() {
        let check = |total: u64, removed_said: Option<u64>| {
            let mut i = IcebergSweep::default();
            let list = "s3://b/t/metadata/snap-4.avro";
            let mut totals = SummaryTotals {
                delete_files: Some(total),
                ..SummaryTotals::default()
            };
            totals.changes[3] = removed_said;
            i.summary_checks.push(SummaryCheck {
                snapshot_id: 4,
                list: Some(list.into()),
                embedded: Vec::new(),
                totals,
            });
            i.record_list(list, vec!["m1".into(), "m2".into()]);
            let mut changes = BTreeMap::new();
            changes.insert(4, [0, 0, 1, 1]);
            i.record_manifest(
                "m1",
                ManifestCounts {
                    live_deletes: 1,
                    deleted_deletes: 1,
                    changes,
                    ..ManifestCounts::default()
                },
            );
            i.record_manifest(
                "m2",
                ManifestCounts {
                    live_deletes: 1,
                    ..ManifestCounts::default()
                },
            );
            i.check_summaries("unused")
        };
        let w = check(3, Some(0)).unwrap();
        assert!(w[0].contains("never subtracts"), "{w:?}");
        assert!(check(3, None).is_ok());
        assert_eq!(check(2, Some(1)).unwrap(), Vec::<String>::new());
        for (total, removed) in [(4, Some(0)), (3, Some(1)), (1, Some(0))] {
            let e = check(total, removed).unwrap_err().to_string();
            assert!(e.contains("cut short"), "{total} {removed:?}: {e}");
        }
    }

    #[test]
    fn write_roots_outside_the_table_are_swept_and_others_said() {
        let md = serde_json::json!({
            "format-version": 2, "table-uuid": "0f0e0d0c-0000-4000-8000-00000000e1e2",
            "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
            "last-column-id": 0, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": [],
            "properties": {"write.data.path": "s3://other/data", "write.metadata.path": "s3://b"},
            "snapshots": [], "metadata-log": []
        });
        let md = TableMetadata::parse("s3://b/t/m.json", md.to_string().as_bytes()).unwrap();
        let loc = TableLocation::parse("s3://b/t").unwrap();
        let (roots, warnings) = write_roots(&md, &loc, &[]);
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0].as_uri(), "s3://other/data");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(identify("m", &md, &loc, &[], Some("another")).is_err());
        let moved = TableLocation::parse("s3://b/u").unwrap();
        assert!(identify("m", &md, &moved, &[], None).is_err());
        assert_eq!(
            identify("m", &md, &loc, &[], None).unwrap().as_deref(),
            Some("0f0e0d0c-0000-4000-8000-00000000e1e2")
        );
    }
}
