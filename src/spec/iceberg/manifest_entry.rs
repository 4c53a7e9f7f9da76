//! Manifest entries: each entry's status, the content of its file and
//! the file's path, read from a manifest (an Avro file) with the column
//! statistics skipped undecoded.

use serde::{Deserialize, Serialize};

use super::{avro_err, utf8};
use crate::codec::avro::{AvroError, Container, Projection, Value};
use crate::error::Result;

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
    use crate::error::{Error, MalformedReason};

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
}
