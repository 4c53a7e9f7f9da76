//! Snapshot artifacts: where they live and which segments they name.
//!
//! The contract (docs/pinot.md): under each deep-store root,
//! `snapshots/<tableNameWithType>/<snapshotId>/` holds `final.parquet`
//! (written when the snapshot completes), `batches/*.parquet` (written while
//! it is in progress) and auxiliary files. `final.parquet` and every batch
//! file have a string column (by default `segmentName`) with one row per
//! segment the snapshot (or batch) is served from. Segments are read from
//! that column only, never guessed from file names.

use std::collections::BTreeSet;

use crate::codec::parquet::{ParquetError, ParquetFile, Value};

/// The default name of the segment column.
pub const DEFAULT_SEGMENT_COLUMN: &str = "segmentName";
/// The completed snapshot's artifact, relative to its folder.
pub const FINAL: &str = "final.parquet";
/// The in-progress work folder, relative to a snapshot folder.
pub const BATCHES: &str = "batches/";

/// What one artifact key is, relative to `snapshots/<table>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactKey {
    /// An object inside a snapshot folder whose name is a canonical id.
    InSnapshot {
        /// The folder's snapshot id.
        snapshot_id: String,
        /// The rest of the key, inside the folder.
        rest: String,
    },
    /// Anything else (a file beside the folders, a folder named otherwise):
    /// never swept.
    Stray(String),
}

impl ArtifactKey {
    /// Classifies `rel`, a key relative to `snapshots/<table>/`.
    pub fn parse(rel: &str) -> ArtifactKey {
        match rel.split_once('/') {
            Some((_, rest)) if rest.split('/').any(str::is_empty) => ArtifactKey::Stray(
                "an empty path segment: kept, stores spell it differently".into(),
            ),
            Some((id, rest)) => match super::documents::canonical_snapshot_id(id) {
                Some(snapshot_id) => ArtifactKey::InSnapshot {
                    snapshot_id,
                    rest: rest.to_owned(),
                },
                None => ArtifactKey::Stray(format!(
                    "folder `{id}` is not a snapshot id in canonical decimal"
                )),
            },
            _ => ArtifactKey::Stray("not inside a snapshot folder".to_owned()),
        }
    }
}

/// The segments named by one artifact's `column`. Fails with why, in words,
/// when the bytes are not a Parquet file this reader reads, the column is
/// missing or not a string, or a row is null or empty: a retained
/// snapshot's artifact that cannot be read protects nothing and must stop
/// the run.
pub fn segments(bytes: &[u8], column: &str) -> std::result::Result<BTreeSet<String>, String> {
    let why = |e: ParquetError| match e {
        ParquetError::Corrupt(m) => format!("not a readable Parquet file: {m}"),
        ParquetError::Unsupported(m) => format!("uses a Parquet feature not read here: {m}"),
    };
    let file = ParquetFile::open(bytes).map_err(why)?;
    if !file.has_column(&[column]) {
        return Err(format!("has no top-level column `{column}`"));
    }
    let col = file.column(&[column]).map_err(why)?;
    let mut out = BTreeSet::new();
    for row in 0..file.rows() {
        match col.flat(row) {
            Some(v @ Value::Bytes(_)) => match v.as_str() {
                Some(s) if !s.is_empty() => {
                    out.insert(s);
                }
                _ => return Err(format!("row {row} of `{column}` is empty or not UTF-8")),
            },
            Some(_) => return Err(format!("`{column}` is not a string column")),
            None => return Err(format!("row {row} of `{column}` is null")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(
            ArtifactKey::parse("12/final.parquet"),
            ArtifactKey::InSnapshot {
                snapshot_id: "12".into(),
                rest: "final.parquet".into()
            }
        );
        assert!(matches!(
            ArtifactKey::parse("012/final.parquet"),
            ArtifactKey::Stray(_)
        ));
        assert!(matches!(ArtifactKey::parse("12"), ArtifactKey::Stray(_)));
        assert!(matches!(ArtifactKey::parse("12/"), ArtifactKey::Stray(_)));
        assert!(matches!(ArtifactKey::parse("12//x"), ArtifactKey::Stray(_)));
        assert!(matches!(ArtifactKey::parse("12/a/"), ArtifactKey::Stray(_)));
    }

    #[test]
    fn garbage_is_refused_with_why() {
        assert!(segments(b"", DEFAULT_SEGMENT_COLUMN).is_err());
        assert!(segments(b"PAR1 not really PAR1", DEFAULT_SEGMENT_COLUMN).is_err());
    }
}
