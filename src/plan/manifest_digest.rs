//! A manifest's digest: what a session needs of one Iceberg manifest (each
//! entry's status, content, snapshot id and file path), made where the
//! manifest was read, so that a host with many workers can decode
//! manifests in parallel and hand one session the small digests instead of
//! the manifests' bytes (column statistics make manifests many times larger
//! than their paths).
//!
//! The digest carries no decision: the session that asked for the manifest
//! checks its length against the manifest list, counts its entries against
//! the snapshot summaries and keeps its files exactly as it does for the
//! bytes ([`super::iceberg::read_manifest_digest`]), so a plan made from
//! digests is byte for byte the plan made from the manifests.
//!
//! Wire form: UTF-8 text, one item per line (text, because some hosts'
//! bindings copy a string in one piece but a byte list value by value):
//!
//! ```text
//! lakesweep-manifest-digest 2
//! uri "s3://b/t/metadata/m0.avro"          the URI read (a JSON string)
//! length 7021                              the manifest's bytes
//! entries 2
//! 1 0 7 "s3://b/t/data/a.parquet"          status, content (the spec's
//! 2 1 - "s3://b/t/data/d.puffin"           numbers), snapshot id or -, path
//! xxh3-128 <hex of the XXH3-128 of every byte before this line>
//! ```
//!
//! A digest damaged on its way (a changed byte would change a kept path)
//! fails its checksum and is refused.

use crate::digest::{json_string, open_digest, push_json_string, seal};
use crate::duration::push_int;
use crate::error::{Error, ProtocolReason, Result};
use crate::spec::iceberg::{for_each_manifest_entry_with_snapshot, ContentType, ManifestStatus};

const HEADER: &str = "lakesweep-manifest-digest 2\n";

/// One manifest entry as the session counts and keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DigestEntry {
    pub(crate) status: ManifestStatus,
    pub(crate) content: ContentType,
    /// The entry's own snapshot id (none: inherited from the manifest list).
    pub(crate) snapshot_id: Option<i64>,
    /// The file path exactly as written.
    pub(crate) path: String,
}

/// A decoded digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestDigest {
    /// The URI the manifest was read from, as the session asked for it.
    pub(crate) uri: String,
    /// The manifest's length in bytes (checked against its manifest list).
    pub(crate) source_len: u64,
    pub(crate) entries: Vec<DigestEntry>,
}

/// Digests the manifest `bytes` read from `uri` (the URI exactly as the
/// session's read request named it). Fails (malformed) for bytes that are
/// not a readable manifest, exactly as the session would on the bytes.
pub fn digest_manifest(uri: &str, bytes: &[u8]) -> Result<String> {
    let mut lines = String::with_capacity(64 + bytes.len() / 4);
    let mut n = 0u64;
    // Written piece by piece: a line per entry, millions per table.
    for_each_manifest_entry_with_snapshot(uri, bytes, |status, content, snap, path| {
        n += 1;
        lines.push(char::from(b'0' + status_number(status)));
        lines.push(' ');
        lines.push(char::from(b'0' + content_number(content)));
        lines.push(' ');
        match snap {
            Some(id) => push_int(&mut lines, id),
            None => lines.push('-'),
        }
        lines.push(' ');
        push_json_string(&mut lines, path);
        lines.push('\n');
    })?;
    let mut out = format!(
        "{HEADER}uri {}\nlength {}\nentries {n}\n",
        json_string(uri),
        bytes.len()
    );
    out.push_str(&lines);
    seal(&mut out);
    Ok(out)
}

impl ManifestDigest {
    /// Reads a digest. Fails (protocol: bad-input) for text that is not a
    /// whole digest of this version: a digest is made by the planner, so
    /// anything else is the host's mistake.
    pub(crate) fn decode(text: &str) -> Result<ManifestDigest> {
        let crate::digest::Opened {
            uri,
            source_len,
            count,
            lines,
        } = open_digest(text, HEADER, "entries").map_err(|e| bad(&e))?;
        let mut entries = Vec::new();
        for line in lines {
            let mut parts = line.splitn(4, ' ');
            let mut next = || parts.next().ok_or_else(|| bad(&format!("entry `{line}`")));
            let status = match next()? {
                "0" => ManifestStatus::Existing,
                "1" => ManifestStatus::Added,
                "2" => ManifestStatus::Deleted,
                s => return Err(bad(&format!("entry status {s}"))),
            };
            let content = match next()? {
                "0" => ContentType::Data,
                "1" => ContentType::PositionDeletes,
                "2" => ContentType::EqualityDeletes,
                c => return Err(bad(&format!("entry content {c}"))),
            };
            let snapshot_id = match next()? {
                "-" => None,
                id => Some(
                    id.parse::<i64>()
                        .map_err(|_| bad(&format!("snapshot id {id}")))?,
                ),
            };
            let path = parse_json_string(next()?)?;
            entries.push(DigestEntry {
                status,
                content,
                snapshot_id,
                path,
            });
        }
        if entries.len() as u64 != count {
            return Err(bad(&format!(
                "it says {count} entries and holds {}",
                entries.len()
            )));
        }
        Ok(ManifestDigest {
            uri,
            source_len,
            entries,
        })
    }
}

fn parse_json_string(s: &str) -> Result<String> {
    crate::digest::parse_json_string(s).ok_or_else(|| bad(&format!("`{s}` is not a JSON string")))
}

fn status_number(s: ManifestStatus) -> u8 {
    match s {
        ManifestStatus::Existing => 0,
        ManifestStatus::Added => 1,
        ManifestStatus::Deleted => 2,
    }
}

fn content_number(c: ContentType) -> u8 {
    match c {
        ContentType::Data => 0,
        ContentType::PositionDeletes => 1,
        ContentType::EqualityDeletes => 2,
    }
}

fn bad(why: &str) -> Error {
    Error::protocol(
        ProtocolReason::BadInput,
        format!("not a manifest digest: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(body: &str) -> String {
        let mut text = body.to_owned();
        seal(&mut text);
        text
    }

    const BODY: &str = "lakesweep-manifest-digest 2\nuri \"s3://b/t/metadata/m.avro\"\nlength 1234\nentries 2\n1 0 7 \"s3://b/t/data/a b\\n.parquet\"\n2 1 - \"s3://b/t/data/d.puffin\"\n";

    #[test]
    fn a_digest_reads_back_entry_for_entry() {
        let d = ManifestDigest::decode(&sealed(BODY)).unwrap();
        assert_eq!(d.uri, "s3://b/t/metadata/m.avro");
        assert_eq!(d.source_len, 1234);
        assert_eq!(
            d.entries,
            vec![
                DigestEntry {
                    status: ManifestStatus::Added,
                    content: ContentType::Data,
                    snapshot_id: Some(7),
                    path: "s3://b/t/data/a b\n.parquet".into()
                },
                DigestEntry {
                    status: ManifestStatus::Deleted,
                    content: ContentType::PositionDeletes,
                    snapshot_id: None,
                    path: "s3://b/t/data/d.puffin".into()
                },
            ]
        );
    }

    #[test]
    fn every_cut_and_every_changed_byte_is_refused() {
        let full = sealed(BODY);
        for n in 0..full.len() {
            let e = ManifestDigest::decode(&full[..n]).unwrap_err();
            assert!(matches!(e, Error::Protocol { .. }), "cut at {n}: {e}");
        }
        for i in 0..full.len() {
            let mut changed = full.clone().into_bytes();
            changed[i] = if changed[i] == b'x' { b'y' } else { b'x' };
            let changed = String::from_utf8(changed).unwrap();
            assert!(
                ManifestDigest::decode(&changed).is_err(),
                "byte {i} changed"
            );
        }
        // Well sealed but not well formed: each is named.
        for (body, why) in [
            (BODY.replace("2 1 -", "9 1 -"), "status 9"),
            (
                BODY.replace("entries 2", "entries 3"),
                "says 3 entries and holds 2",
            ),
            (BODY.replace("1 0 7", "1 0 x"), "snapshot id x"),
            (
                BODY.replace("\"s3://b/t/data/d.puffin\"", "s3://b/t/data/d.puffin"),
                "not a JSON string",
            ),
            (BODY.replace("length 1234", "size 1234"), "no `length` line"),
        ] {
            let e = ManifestDigest::decode(&sealed(&body)).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn bytes_that_are_not_a_manifest_are_malformed_as_in_a_session() {
        let e = digest_manifest("s3://b/t/metadata/m.avro", b"Obj\x01 not really").unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
    }
}
