//! Snapshots and the refs that name them: what a snapshot reaches (its
//! manifest list, or a v1 snapshot's embedded manifests) and the totals
//! its summary records.

use std::collections::BTreeMap;

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
    /// The totals a snapshot's `summary` records (numbers or numeric
    /// strings; anything else is `None`).
    pub(super) fn from_summary(summary: &BTreeMap<String, serde_json::Value>) -> SummaryTotals {
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
