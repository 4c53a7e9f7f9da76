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
//! Wire form (all integers little-endian): `LSMD` `1` (format version);
//! the manifest's URI (u32 length, UTF-8); the manifest's length in bytes
//! (u64); the entry count (u64); per entry: status (u8, the spec's number),
//! content (u8, the spec's number), a snapshot-id flag (u8 0/1) and the id
//! (i64) when set, the path (u32 length, UTF-8); then the SHA-256 of all
//! the bytes before it. A digest damaged on its way (a flipped byte would
//! change a kept path) fails its checksum and is refused.

use sha2::{Digest, Sha256};

use crate::error::{Error, ProtocolReason, Result};
use crate::spec::iceberg::{for_each_manifest_entry_with_snapshot, ContentType, ManifestStatus};

const MAGIC: &[u8; 5] = b"LSMD\x01";

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
pub fn digest_manifest(uri: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + bytes.len() / 8);
    out.extend_from_slice(MAGIC);
    put_str(&mut out, uri);
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    let count_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut n = 0u64;
    for_each_manifest_entry_with_snapshot(uri, bytes, |status, content, snap, path| {
        n += 1;
        out.push(status_number(status));
        out.push(content_number(content));
        match snap {
            Some(id) => {
                out.push(1);
                out.extend_from_slice(&id.to_le_bytes());
            }
            None => out.push(0),
        }
        put_str(&mut out, path);
    })?;
    out[count_at..count_at + 8].copy_from_slice(&n.to_le_bytes());
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    Ok(out)
}

impl ManifestDigest {
    /// Reads a digest. Fails (protocol: bad-input) for bytes that are not a
    /// whole digest of this version: a digest is made by the planner, so
    /// anything else is the host's mistake.
    pub(crate) fn decode(bytes: &[u8]) -> Result<ManifestDigest> {
        if bytes.len() < MAGIC.len() + 32 || !bytes.starts_with(MAGIC) {
            return Err(bad("it does not start with `LSMD` version 1"));
        }
        let (bytes, sum) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(bytes).as_slice() != sum {
            return Err(bad(
                "its checksum does not match (damaged or cut on its way)",
            ));
        }
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(bad("it does not start with `LSMD` version 1"));
        }
        let uri = r.string()?;
        let source_len = r.u64()?;
        let count = r.u64()?;
        // Every entry takes at least 7 bytes: a count beyond that is a lie.
        if count > (bytes.len() as u64) / 7 {
            return Err(bad("its entry count is larger than its bytes can hold"));
        }
        let mut entries = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let status = match r.u8()? {
                0 => ManifestStatus::Existing,
                1 => ManifestStatus::Added,
                2 => ManifestStatus::Deleted,
                s => return Err(bad(&format!("entry status {s}"))),
            };
            let content = match r.u8()? {
                0 => ContentType::Data,
                1 => ContentType::PositionDeletes,
                2 => ContentType::EqualityDeletes,
                c => return Err(bad(&format!("entry content {c}"))),
            };
            let snapshot_id = match r.u8()? {
                0 => None,
                1 => Some(r.u64()? as i64),
                f => return Err(bad(&format!("snapshot-id flag {f}"))),
            };
            let path = r.string()?;
            entries.push(DigestEntry {
                status,
                content,
                snapshot_id,
                path,
            });
        }
        if r.at != bytes.len() {
            return Err(bad("bytes follow its last entry"));
        }
        Ok(ManifestDigest {
            uri,
            source_len,
            entries,
        })
    }
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

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn bad(why: &str) -> Error {
    Error::protocol(
        ProtocolReason::BadInput,
        format!("not a manifest digest: {why}"),
    )
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| bad("it ends early (truncated)"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn string(&mut self) -> Result<String> {
        let b = self.take(4)?;
        let n = u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
        let s = self.take(n)?;
        String::from_utf8(s.to_vec()).map_err(|_| bad("a string that is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        put_str(&mut out, "s3://b/t/metadata/m.avro");
        out.extend_from_slice(&1234u64.to_le_bytes());
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&[1, 0, 1]);
        out.extend_from_slice(&7i64.to_le_bytes());
        put_str(&mut out, "s3://b/t/data/a.parquet");
        out.extend_from_slice(&[2, 1, 0]);
        put_str(&mut out, "s3://b/t/data/d.puffin");
        sealed(out)
    }

    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let sum = Sha256::digest(&body);
        body.extend_from_slice(&sum);
        body
    }

    #[test]
    fn a_digest_reads_back_entry_for_entry() {
        let d = ManifestDigest::decode(&sample()).unwrap();
        assert_eq!(d.uri, "s3://b/t/metadata/m.avro");
        assert_eq!(d.source_len, 1234);
        assert_eq!(
            d.entries,
            vec![
                DigestEntry {
                    status: ManifestStatus::Added,
                    content: ContentType::Data,
                    snapshot_id: Some(7),
                    path: "s3://b/t/data/a.parquet".into()
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
    fn every_cut_and_every_flipped_byte_is_refused() {
        let full = sample();
        for n in 0..full.len() {
            let e = ManifestDigest::decode(&full[..n]).unwrap_err();
            assert!(matches!(e, Error::Protocol { .. }), "cut at {n}: {e}");
        }
        for i in 0..full.len() {
            let mut flipped = full.clone();
            flipped[i] ^= 0x20;
            assert!(
                ManifestDigest::decode(&flipped).is_err(),
                "byte {i} flipped"
            );
        }
        let mut longer = full[..full.len() - 32].to_vec();
        longer.push(0);
        assert!(ManifestDigest::decode(&sealed(longer))
            .unwrap_err()
            .to_string()
            .contains("follow its last entry"));
        // Well sealed but not well formed: each is named.
        let body = full[..full.len() - 32].to_vec();
        let at = MAGIC.len() + 4 + "s3://b/t/metadata/m.avro".len() + 16;
        let mut status = body.clone();
        status[at] = 9;
        assert!(ManifestDigest::decode(&sealed(status))
            .unwrap_err()
            .to_string()
            .contains("status 9"));
        let mut count = body;
        count[at - 8..at].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(ManifestDigest::decode(&sealed(count))
            .unwrap_err()
            .to_string()
            .contains("entry count"));
    }

    #[test]
    fn bytes_that_are_not_a_manifest_are_malformed_as_in_a_session() {
        let e = digest_manifest("s3://b/t/metadata/m.avro", b"Obj\x01 not really").unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
    }
}
