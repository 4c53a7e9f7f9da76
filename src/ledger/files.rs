//! How a ledger is stored: a small head document (the one the host
//! overwrites, under the ledger's lock) naming every other file with its
//! SHA-256, and beside it, in the ledger's folder, files written once and
//! named by their content:
//!
//! ```text
//! ledger.json                       the head: revision, quarantine, approvals,
//!                                   drills, damage, counters, the files below
//! ledger.json.d/
//!   objects-r<rev>-<n>-<sha>.jsonl.gz   the objects in flight, in key order,
//!                                   at most SEGMENT_OBJECTS a file
//!   deleted-<sha>.idx               the fingerprints of every key verified
//!                                   deleted (the plan's damage check reads them)
//!   archive-r<rev>-<n>-<sha>.jsonl.gz   the objects verified in revision <rev>,
//!                                   each with its receipt: written once, read
//!                                   only by `ledger verify` and to name damage
//! ```
//!
//! An object segment is gzip'd JSON lines: a header (its schema, how many
//! objects, the reasons they cite) and one array per object. A file whose
//! SHA-256 is not the head's is refused by name, as is one the head names
//! that is missing: the head alone cannot say what the ledger holds.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::objects::{Entry, Whys};
use super::{ObjectState, ObjectVersion, Receipt};
use crate::digest::hex;
use crate::error::{Error, Result};
use crate::ledger::DeleteResult;

/// Objects a segment (or an archive file) holds at most: the piece a host
/// reads or writes at once.
pub const SEGMENT_OBJECTS: usize = 65_536;

/// The schema of an object segment's header.
const OBJECTS_SCHEMA: &str = "lakesweep.ledger-objects.v1";
/// The schema of an archive file's header.
const ARCHIVE_SCHEMA: &str = "lakesweep.ledger-archive.v1";
/// The largest a segment or archive file may inflate to.
const MAX_INFLATED: usize = 1 << 30;
/// Deflate level: segments are rewritten every step, so speed first.
const LEVEL: u8 = 1;

/// A file the head names: what it holds and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRef {
    /// The file's name in the ledger's folder.
    pub name: String,
    /// Objects (segments, archives) or keys (the index) it holds.
    pub count: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// An archive file: the objects verified in one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveRef {
    /// The file.
    #[serde(flatten)]
    pub file: FileRef,
    /// The revision that verified them.
    pub revision: u64,
    /// The bytes they held (their pinned sizes).
    pub object_bytes: u64,
}

/// A file the host stores for the ledger, as [`crate::Ledger::next_write`]
/// gives them: every file of the folder first, the head last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerFile {
    /// The name in the ledger's folder; for the head, empty (the host's
    /// ledger location).
    pub name: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// A delete's receipt as an object carries it (its key is the object's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeptReceipt {
    result: DeleteResult,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<ObjectVersion>,
    requested_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    confirmed_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "is_false")]
    delete_marker: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delete_marker_version_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl KeptReceipt {
    fn of(r: &Receipt) -> KeptReceipt {
        KeptReceipt {
            result: r.result,
            version: r.version.clone(),
            requested_ms: r.requested_ms,
            confirmed_ms: r.confirmed_ms,
            delete_marker: r.delete_marker,
            delete_marker_version_id: r.delete_marker_version_id.clone(),
            detail: r.detail.clone(),
        }
    }

    fn receipt(self, key: &str) -> Receipt {
        Receipt {
            key: key.to_owned(),
            result: self.result,
            version: self.version,
            requested_ms: self.requested_ms,
            confirmed_ms: self.confirmed_ms,
            delete_marker: self.delete_marker,
            delete_marker_version_id: self.delete_marker_version_id,
            detail: self.detail,
        }
    }
}

/// One object's line: key, state, size, modified, ETag, version id,
/// since (ms), since (revision), reason (index into the header's), flags
/// (1: once unknown), receipt.
#[derive(Debug, Serialize, Deserialize)]
struct Line(
    String,
    ObjectState,
    u64,
    i64,
    Option<String>,
    Option<String>,
    i64,
    u64,
    u32,
    u8,
    #[serde(default)] Option<KeptReceipt>,
);

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SegmentHeader {
    schema: String,
    objects: u64,
    whys: Vec<String>,
}

/// An archived object: a verified delete, with its receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedObject {
    /// Key relative to the table location.
    pub key: String,
    /// The version deleted.
    pub version: ObjectVersion,
    /// Its delete's receipt (none: an earlier ledger kept none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// When it was verified gone, ms since the epoch.
    pub verified_ms: i64,
    /// Why it is verified, in words.
    pub why: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ArchiveHeader {
    schema: String,
    revision: u64,
    objects: u64,
    object_bytes: u64,
}

fn sha(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn damaged(name: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid(
        "ledger",
        format!("ledger file {name} is damaged ({why}): restore the ledger's folder from a backup, or start a new ledger (--new-ledger)"),
    )
}

/// Checks `bytes` are the file `f` names: its length and SHA-256.
pub(super) fn check(f: &FileRef, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != f.bytes || sha(bytes) != f.sha256 {
        return Err(Error::invalid(
            "ledger",
            format!(
                "ledger file {} was edited or truncated: its length or SHA-256 is not the one the head records (a ledger is only ever written by lakesweep; restore the saved folder, or start a new ledger with --new-ledger)",
                f.name
            ),
        ));
    }
    Ok(())
}

/// Whether `name` is spelled as a file a save writes (an object segment,
/// an archive, the deleted-key index): nothing else in the ledger's
/// folder is ever a stray of a save.
pub fn is_ledger_file_name(name: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = name
        .strip_prefix("deleted-")
        .and_then(|r| r.strip_suffix(".idx"))
    {
        return hex(rest, 16);
    }
    let Some(rest) = name
        .strip_prefix("objects-r")
        .or_else(|| name.strip_prefix("archive-r"))
        .and_then(|r| r.strip_suffix(".jsonl.gz"))
    else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    matches!(parts.as_slice(), [rev, n, sha] if rev.len() >= 6
        && digits(rev, rev.len()) && n.len() >= 4 && digits(n, n.len()) && hex(sha, 16))
}

/// Names a file by its kind, the revision, its place and its content.
fn named(kind: &str, revision: u64, n: usize, bytes: &[u8]) -> String {
    format!(
        "{kind}-r{revision:06}-{n:04}-{}.jsonl.gz",
        &sha(bytes)[..16]
    )
}

fn finish(name: String, count: u64, bytes: Vec<u8>) -> (FileRef, Vec<u8>) {
    let f = FileRef {
        name,
        count,
        bytes: bytes.len() as u64,
        sha256: sha(&bytes),
    };
    (f, bytes)
}

/// An object segment of `items` (in key order), the `n`th of `revision`.
pub(super) fn encode_segment<'a>(
    items: impl Iterator<Item = (&'a str, &'a Entry)>,
    whys: &Whys,
    revision: u64,
    n: usize,
) -> Result<(FileRef, Vec<u8>)> {
    let mut local: Vec<String> = Vec::new();
    let mut map: std::collections::HashMap<u32, u32> = Default::default();
    let mut body = Vec::new();
    let mut count = 0u64;
    for (key, e) in items {
        let why = *map.entry(e.why).or_insert_with(|| {
            local.push(whys.text(e.why).to_owned());
            (local.len() - 1) as u32
        });
        let line = Line(
            key.to_owned(),
            e.state,
            e.version.size,
            e.version.last_modified_ms,
            e.version.etag.clone(),
            e.version.version_id.clone(),
            e.since_ms,
            e.since_revision,
            why,
            u8::from(e.unknown_once),
            e.receipt.as_deref().map(KeptReceipt::of),
        );
        serde_json::to_writer(&mut body, &line)
            .map_err(|e| Error::invalid("ledger", e.to_string()))?;
        body.push(b'\n');
        count += 1;
    }
    let header = SegmentHeader {
        schema: OBJECTS_SCHEMA.into(),
        objects: count,
        whys: local,
    };
    let mut text =
        serde_json::to_vec(&header).map_err(|e| Error::invalid("ledger", e.to_string()))?;
    text.push(b'\n');
    text.extend(body);
    let bytes = crate::codec::gzip::gzip(&text, LEVEL)
        .map_err(|e| Error::invalid("ledger", e.to_string()))?;
    Ok(finish(named("objects", revision, n, &bytes), count, bytes))
}

/// The objects of segment `f` read as `bytes` (checked against the head),
/// their reasons interned into `whys`.
pub(super) fn decode_segment(
    f: &FileRef,
    bytes: &[u8],
    whys: &mut Whys,
) -> Result<Vec<(String, Entry)>> {
    check(f, bytes)?;
    let text = crate::codec::gzip::gunzip(bytes, MAX_INFLATED).map_err(|e| damaged(&f.name, e))?;
    let mut lines = text.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let header: SegmentHeader = lines
        .next()
        .ok_or_else(|| damaged(&f.name, "empty"))
        .and_then(|h| serde_json::from_slice(h).map_err(|e| damaged(&f.name, e)))?;
    if header.schema != OBJECTS_SCHEMA {
        return Err(damaged(
            &f.name,
            format!("schema `{}`, not {OBJECTS_SCHEMA}", header.schema),
        ));
    }
    let ids: Vec<u32> = header.whys.iter().map(|w| whys.intern(w)).collect();
    let mut out = Vec::with_capacity(header.objects.min(SEGMENT_OBJECTS as u64) as usize);
    for l in lines {
        let Line(key, state, size, modified, etag, version_id, since_ms, since_rev, why, flags, r) =
            serde_json::from_slice(l).map_err(|e| damaged(&f.name, e))?;
        let why = *ids.get(why as usize).ok_or_else(|| {
            damaged(
                &f.name,
                format!("`{key}` cites reason {why}, not in its header"),
            )
        })?;
        let receipt = r.map(|r| Box::new(r.receipt(&key)));
        out.push((
            key,
            Entry {
                state,
                version: ObjectVersion {
                    size,
                    last_modified_ms: modified,
                    etag,
                    version_id,
                },
                since_ms,
                since_revision: since_rev,
                why,
                unknown_once: flags & 1 != 0,
                probe: None,
                approved_in: if state == ObjectState::DeleteApproved {
                    since_rev
                } else {
                    0
                },
                receipt,
            },
        ));
    }
    if out.len() as u64 != header.objects || header.objects != f.count {
        return Err(damaged(
            &f.name,
            format!(
                "{} objects, its header says {} and the head {}",
                out.len(),
                header.objects,
                f.count
            ),
        ));
    }
    Ok(out)
}

/// An archive file of `objects` verified in `revision`, the `n`th.
pub(super) fn encode_archive(
    objects: &[ArchivedObject],
    revision: u64,
    n: usize,
) -> Result<(ArchiveRef, Vec<u8>)> {
    let object_bytes = objects.iter().map(|o| o.version.size).sum();
    let header = ArchiveHeader {
        schema: ARCHIVE_SCHEMA.into(),
        revision,
        objects: objects.len() as u64,
        object_bytes,
    };
    let mut text =
        serde_json::to_vec(&header).map_err(|e| Error::invalid("ledger", e.to_string()))?;
    text.push(b'\n');
    for o in objects {
        serde_json::to_writer(&mut text, o).map_err(|e| Error::invalid("ledger", e.to_string()))?;
        text.push(b'\n');
    }
    let bytes = crate::codec::gzip::gzip(&text, LEVEL)
        .map_err(|e| Error::invalid("ledger", e.to_string()))?;
    let (file, bytes) = finish(
        named("archive", revision, n, &bytes),
        objects.len() as u64,
        bytes,
    );
    Ok((
        ArchiveRef {
            file,
            revision,
            object_bytes,
        },
        bytes,
    ))
}

/// The objects of archive `a` read as `bytes` (checked against the head).
pub fn decode_archive(a: &ArchiveRef, bytes: &[u8]) -> Result<Vec<ArchivedObject>> {
    let f = &a.file;
    check(f, bytes)?;
    let text = crate::codec::gzip::gunzip(bytes, MAX_INFLATED).map_err(|e| damaged(&f.name, e))?;
    let mut lines = text.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let header: ArchiveHeader = lines
        .next()
        .ok_or_else(|| damaged(&f.name, "empty"))
        .and_then(|h| serde_json::from_slice(h).map_err(|e| damaged(&f.name, e)))?;
    if header.schema != ARCHIVE_SCHEMA {
        return Err(damaged(
            &f.name,
            format!("schema `{}`, not {ARCHIVE_SCHEMA}", header.schema),
        ));
    }
    let out: Vec<ArchivedObject> = lines
        .map(|l| serde_json::from_slice(l).map_err(|e| damaged(&f.name, e)))
        .collect::<Result<_>>()?;
    let bytes_held: u64 = out.iter().map(|o| o.version.size).sum();
    if out.len() as u64 != header.objects
        || header.objects != f.count
        || header.revision != a.revision
        || header.object_bytes != a.object_bytes
        || bytes_held != a.object_bytes
    {
        return Err(damaged(
            &f.name,
            "its objects, revision or bytes are not the ones its header and the head record",
        ));
    }
    Ok(out)
}

/// The deleted-key index file of `fingerprints` (ascending, no repeats).
pub(super) fn encode_index(fingerprints: &[u64]) -> (FileRef, Vec<u8>) {
    let bytes = crate::reach::encode_key_index(fingerprints.iter().copied());
    let name = format!("deleted-{}.idx", &sha(&bytes)[..16]);
    finish(name, fingerprints.len() as u64, bytes)
}

/// The fingerprints of index file `f` read as `bytes`.
pub(super) fn decode_index(f: &FileRef, bytes: &[u8]) -> Result<Vec<u64>> {
    check(f, bytes)?;
    let fps = crate::reach::decode_key_index(bytes).map_err(|e| damaged(&f.name, e))?;
    if fps.len() as u64 != f.count {
        return Err(damaged(
            &f.name,
            format!("{} keys, the head says {}", fps.len(), f.count),
        ));
    }
    Ok(fps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(why: u32) -> Entry {
        Entry {
            state: ObjectState::Deleted,
            version: ObjectVersion {
                size: 7,
                last_modified_ms: 1,
                etag: Some("\"e\"".into()),
                version_id: None,
            },
            since_ms: 5,
            since_revision: 3,
            why,
            unknown_once: true,
            probe: None,
            approved_in: 0,
            receipt: Some(Box::new(Receipt {
                key: "data/a\tb\n.parquet".into(),
                result: DeleteResult::Deleted,
                version: None,
                requested_ms: 4,
                confirmed_ms: Some(5),
                delete_marker: false,
                delete_marker_version_id: None,
                detail: None,
            })),
        }
    }

    #[test]
    fn a_segment_reads_back_and_any_change_is_refused_by_name() {
        let mut whys = Whys::default();
        let w = whys.intern("because");
        let items = [("data/a\tb\n.parquet".to_owned(), entry(w))];
        let (f, bytes) =
            encode_segment(items.iter().map(|(k, e)| (k.as_str(), e)), &whys, 3, 0).unwrap();
        assert!(f.name.starts_with("objects-r000003-0000-"), "{}", f.name);
        let mut other = Whys::default();
        other.intern("something else");
        let back = decode_segment(&f, &bytes, &mut other).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, items[0].0);
        assert_eq!(other.text(back[0].1.why), "because");
        let mut e = entry(back[0].1.why);
        e.why = back[0].1.why;
        assert_eq!(back[0].1, e);
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            let err = decode_segment(&f, &bytes[..cut], &mut other).unwrap_err();
            assert!(err.to_string().contains(&f.name), "{err}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        let err = decode_segment(&f, &flipped, &mut other).unwrap_err();
        assert!(err.to_string().contains("edited or truncated"), "{err}");
    }

    #[test]
    fn an_archive_and_an_index_read_back() {
        let o = ArchivedObject {
            key: "data/x".into(),
            version: ObjectVersion {
                size: 9,
                last_modified_ms: 1,
                etag: None,
                version_id: Some("v1".into()),
            },
            receipt: None,
            verified_ms: 2,
            why: "gone".into(),
        };
        let (a, bytes) = encode_archive(std::slice::from_ref(&o), 4, 1).unwrap();
        assert_eq!((a.revision, a.object_bytes, a.file.count), (4, 9, 1));
        assert_eq!(decode_archive(&a, &bytes).unwrap(), vec![o]);
        let (f, bytes) = encode_index(&[1, 5, 9]);
        assert_eq!(decode_index(&f, &bytes).unwrap(), vec![1, 5, 9]);
        assert!(decode_index(&f, &bytes[..bytes.len() - 8]).is_err());
    }
}
