//! Manifest lists: the Avro file a snapshot names, one entry per
//! manifest the snapshot reads.

use super::avro_err;
use crate::codec::avro::{AvroError, Container, Projection, Value};
use crate::error::MalformedReason;
use crate::error::{Error, Result};

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
