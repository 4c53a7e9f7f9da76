//! The keep set: every key under the table location that some retained
//! snapshot or table-level role references, with the reason it is kept.
//!
//! Keys are stored as 128-bit XXH3 fingerprints of their canonical relative
//! path (the part after `location + "/"`), each with the index of its
//! [`Source`]. A fingerprint collision can only make an unreferenced key look
//! referenced, so it errs towards keeping, never towards deleting. A second
//! set holds 64-bit fingerprints of the *loose* form of every referenced path
//! (see [`crate::path::loose`]) to catch near-misses.
//!
//! Memory: while building, a hash map (about 40–60 bytes per key); once the
//! keep set is complete it is frozen into sorted arrays of 28 bytes per key
//! (16 fingerprint + 4 source + 8 loose fingerprint).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::spec::iceberg::{ContentType, ManifestStatus};

/// Why a key is referenced. Ordered: when several sources reference the same
/// key, the smallest is reported, so reasons do not depend on read order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(
    tag = "role",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Source {
    /// The current metadata file.
    CurrentMetadata,
    /// `metadata/version-hint.text`, the pointer of file-system catalogs.
    VersionHint,
    /// An earlier metadata file listed in `metadata-log`.
    MetadataLog,
    /// A disaster-recovery checkpoint metadata file named by the run's context.
    DrCheckpoint,
    /// A table statistics (Puffin) file.
    Statistics {
        /// Snapshot the statistics describe.
        snapshot_id: i64,
    },
    /// A partition statistics file.
    PartitionStatistics {
        /// Snapshot the statistics describe.
        snapshot_id: i64,
    },
    /// A snapshot's manifest list.
    ManifestList {
        /// The snapshot.
        snapshot_id: i64,
    },
    /// A manifest named by a manifest list (or a v1 snapshot's embedded list).
    Manifest {
        /// The manifest list (URI) or `snapshot <id>` for v1 embedded lists.
        listed_in: String,
    },
    /// A content file named by a manifest entry.
    ContentFile {
        /// The manifest (URI).
        manifest: String,
        /// What the file holds.
        content: ContentType,
        /// Its entry's status (a DELETED entry is kept by option).
        status: ManifestStatus,
    },
    /// A live file of a Delta table version (the latest, or one kept on purpose).
    DeltaActive {
        /// The table version.
        version: u64,
    },
    /// The deletion-vector file of a live Delta file.
    DeltaDeletionVector {
        /// The table version.
        version: u64,
    },
    /// A Delta file removed less than the retention ago (`dated`), or at a
    /// time the log does not say (a missing `deletionTimestamp` is not time zero).
    DeltaTombstone {
        /// False when the remove action had no `deletionTimestamp`.
        dated: bool,
    },
    /// A change-data file written by a commit inside the retention window.
    DeltaChangeData {
        /// The commit version.
        version: u64,
    },
}

impl Source {
    /// One-line human description.
    pub fn describe(&self) -> String {
        match self {
            Source::CurrentMetadata => "current table metadata".into(),
            Source::VersionHint => "version-hint.text (file-system catalog pointer)".into(),
            Source::MetadataLog => "earlier metadata file in metadata-log".into(),
            Source::DrCheckpoint => {
                "disaster-recovery checkpoint metadata (from the context)".into()
            }
            Source::Statistics { snapshot_id } => {
                format!("statistics file of snapshot {snapshot_id}")
            }
            Source::PartitionStatistics { snapshot_id } => {
                format!("partition statistics file of snapshot {snapshot_id}")
            }
            Source::ManifestList { snapshot_id } => {
                format!("manifest list of snapshot {snapshot_id}")
            }
            Source::Manifest { listed_in } => format!("manifest listed in {listed_in}"),
            Source::ContentFile {
                manifest,
                content,
                status,
            } => {
                let what = match content {
                    ContentType::Data => "data file",
                    ContentType::PositionDeletes => "position delete file / deletion vector",
                    ContentType::EqualityDeletes => "equality delete file",
                };
                let st = match status {
                    ManifestStatus::Existing => "EXISTING",
                    ManifestStatus::Added => "ADDED",
                    ManifestStatus::Deleted => "DELETED entry, kept for changelog readers",
                };
                format!("{what} ({st}) in manifest {manifest}")
            }
            Source::DeltaActive { version } => format!("live file of Delta version {version}"),
            Source::DeltaDeletionVector { version } => {
                format!("deletion vector of a live file of Delta version {version}")
            }
            Source::DeltaTombstone { dated: true } => {
                "removed less than the retention ago (tombstone kept, as VACUUM does)".into()
            }
            Source::DeltaTombstone { dated: false } => {
                "removed at an unknown time (remove without deletionTimestamp): kept".into()
            }
            Source::DeltaChangeData { version } => {
                format!("change-data file of commit {version}, inside the retention window")
            }
        }
    }
}

/// A 128-bit fingerprint of a canonical relative key.
pub type Fingerprint = [u64; 2];

/// Fingerprint of a canonical relative key.
pub fn fingerprint(rel: &str) -> Fingerprint {
    let h = xxhash_rust::xxh3::xxh3_128(rel.as_bytes());
    [(h >> 64) as u64, h as u64]
}

/// Fingerprint of a loose relative key.
pub fn loose_fingerprint(loose_rel: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(loose_rel.as_bytes())
}

/// Hasher for keys that are already uniformly distributed fingerprints.
#[derive(Default, Clone, Copy)]
pub struct FoldHasher(u64);

impl Hasher for FoldHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(5) ^ n;
    }
}

type Fold = BuildHasherDefault<FoldHasher>;

/// The set of referenced keys, with reasons.
#[derive(Debug, Clone, Default)]
pub struct KeepSet {
    sources: Vec<Source>,
    source_ids: HashMap<Source, u32>,
    building: HashMap<Fingerprint, u32, Fold>,
    frozen_keys: Vec<Fingerprint>,
    frozen_sources: Vec<u32>,
    loose_building: HashSet<u64, Fold>,
    loose_frozen: Vec<u64>,
}

impl KeepSet {
    /// An empty keep set.
    pub fn new() -> Self {
        Self::default()
    }

    fn source_id(&mut self, s: Source) -> u32 {
        if let Some(&id) = self.source_ids.get(&s) {
            return id;
        }
        let id = self.sources.len() as u32;
        self.sources.push(s.clone());
        self.source_ids.insert(s, id);
        id
    }

    /// Adds a referenced key (canonical, relative to the location). Returns
    /// true when the key was not referenced before.
    pub fn insert(&mut self, rel: &str, source: Source) -> bool {
        let fp = fingerprint(rel);
        let id = self.source_id(source);
        if let Some(existing) = self.frozen_lookup(&fp) {
            if self.sources[id as usize] < self.sources[existing as usize] {
                // Keep the smallest reason; the frozen entry is shadowed.
                self.building.insert(fp, id);
            }
            return false;
        }
        match self.building.get_mut(&fp) {
            Some(cur) => {
                if self.sources[id as usize] < self.sources[*cur as usize] {
                    *cur = id;
                }
                false
            }
            None => {
                self.building.insert(fp, id);
                true
            }
        }
    }

    /// Adds the loose fingerprint of a referenced path.
    pub fn insert_loose(&mut self, loose_rel: &str) {
        let fp = loose_fingerprint(loose_rel);
        if self.loose_frozen.binary_search(&fp).is_err() {
            self.loose_building.insert(fp);
        }
    }

    fn frozen_lookup(&self, fp: &Fingerprint) -> Option<u32> {
        self.frozen_keys
            .binary_search(fp)
            .ok()
            .map(|i| self.frozen_sources[i])
    }

    /// The reason a canonical relative key is referenced, if it is.
    pub fn lookup(&self, rel: &str) -> Option<&Source> {
        let fp = fingerprint(rel);
        let id = self
            .building
            .get(&fp)
            .copied()
            .or_else(|| self.frozen_lookup(&fp))?;
        self.sources.get(id as usize)
    }

    /// True when some referenced path equals `loose_rel` in loose form.
    pub fn contains_loose(&self, loose_rel: &str) -> bool {
        let fp = loose_fingerprint(loose_rel);
        self.loose_building.contains(&fp) || self.loose_frozen.binary_search(&fp).is_ok()
    }

    /// Number of distinct referenced keys.
    pub fn len(&self) -> usize {
        let shadowed = self
            .building
            .keys()
            .filter(|k| self.frozen_keys.binary_search(k).is_ok())
            .count();
        self.frozen_keys.len() + self.building.len() - shadowed
    }

    /// Moves everything into sorted arrays (28 bytes per key) and frees the maps.
    pub fn freeze(&mut self) {
        if self.building.is_empty() && self.loose_building.is_empty() {
            return;
        }
        let mut all: BTreeMap<Fingerprint, u32> = self
            .frozen_keys
            .iter()
            .copied()
            .zip(self.frozen_sources.iter().copied())
            .collect();
        all.extend(self.building.drain());
        self.frozen_keys = all.keys().copied().collect();
        self.frozen_sources = all.values().copied().collect();
        let mut loose: BTreeSet<u64> = self.loose_frozen.iter().copied().collect();
        loose.extend(self.loose_building.drain());
        self.loose_frozen = loose.into_iter().collect();
        self.building = HashMap::default();
        self.loose_building = HashSet::default();
    }

    /// Heap bytes held by the key index (fingerprints, sources, loose set;
    /// excludes the small table of distinct sources).
    pub fn index_bytes(&self) -> usize {
        self.frozen_keys.capacity() * 16
            + self.frozen_sources.capacity() * 4
            + self.loose_frozen.capacity() * 8
            + self.building.capacity() * (16 + 4 + 4 + 1)
            + self.loose_building.capacity() * (8 + 1)
    }

    /// Serialises the (frozen) keep set: sorted arrays, the source table,
    /// and a SHA-256 over everything so a damaged copy is refused.
    pub(crate) fn encode(&self, header: &[u8], out: &mut Vec<u8>) {
        let mut me = self.clone();
        me.freeze();
        let sources = serde_json::to_vec(&me.sources).unwrap_or_default();
        out.extend_from_slice(MAGIC);
        for part in [header, &sources[..]] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part);
        }
        out.extend_from_slice(&(me.frozen_keys.len() as u64).to_le_bytes());
        for k in &me.frozen_keys {
            out.extend_from_slice(&k[0].to_le_bytes());
            out.extend_from_slice(&k[1].to_le_bytes());
        }
        for s in &me.frozen_sources {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&(me.loose_frozen.len() as u64).to_le_bytes());
        for l in &me.loose_frozen {
            out.extend_from_slice(&l.to_le_bytes());
        }
        let digest = Sha256::digest(&out[..]);
        out.extend_from_slice(&digest);
    }

    /// Reads what [`KeepSet::encode`] wrote; returns the header bytes too.
    pub(crate) fn decode(bytes: &[u8]) -> Result<(KeepSet, Vec<u8>)> {
        let bad = |d: &str| Error::invalid("keep-set", format!("not a lakesweep keep set: {d}"));
        if bytes.len() < MAGIC.len() + 32 || !bytes.starts_with(MAGIC) {
            return Err(bad("bad magic"));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != digest {
            return Err(bad("checksum mismatch (damaged or edited)"));
        }
        let mut r = ByteReader {
            body,
            pos: MAGIC.len(),
        };
        let hl = r.u64()? as usize;
        let header = r.take(hl)?.to_vec();
        let sl = r.u64()? as usize;
        let sources: Vec<Source> =
            serde_json::from_slice(r.take(sl)?).map_err(|_| bad("source table"))?;
        let n = r.u64()? as usize;
        let keys = r.take(n.checked_mul(16).ok_or_else(|| bad("count"))?)?;
        let frozen_keys: Vec<Fingerprint> = keys
            .chunks_exact(16)
            .map(|c| {
                let mut a = [0u8; 8];
                let mut b = [0u8; 8];
                a.copy_from_slice(&c[..8]);
                b.copy_from_slice(&c[8..]);
                [u64::from_le_bytes(a), u64::from_le_bytes(b)]
            })
            .collect();
        let srcs = r.take(n.checked_mul(4).ok_or_else(|| bad("count"))?)?;
        let frozen_sources: Vec<u32> = srcs
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if frozen_sources.iter().any(|&s| s as usize >= sources.len()) {
            return Err(bad("source index out of range"));
        }
        if frozen_keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("keys not sorted"));
        }
        let ln = r.u64()? as usize;
        let loose = r.take(ln.checked_mul(8).ok_or_else(|| bad("count"))?)?;
        let loose_frozen: Vec<u64> = loose
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                u64::from_le_bytes(a)
            })
            .collect();
        if loose_frozen.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("loose keys not sorted"));
        }
        if r.pos != body.len() {
            return Err(bad("trailing bytes"));
        }
        let source_ids = sources
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, s)| (s, i as u32))
            .collect();
        Ok((
            KeepSet {
                sources,
                source_ids,
                building: HashMap::default(),
                frozen_keys,
                frozen_sources,
                loose_building: HashSet::default(),
                loose_frozen,
            },
            header,
        ))
    }
}

const MAGIC: &[u8] = b"LSKEEP\x00\x01";

struct ByteReader<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.body.len());
        let Some(end) = end else {
            return Err(Error::invalid(
                "keep-set",
                "not a lakesweep keep set: truncated",
            ));
        };
        let s = &self.body[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u64(&mut self) -> Result<u64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_reason_wins_in_any_order() {
        let a = Source::ManifestList { snapshot_id: 1 };
        let b = Source::ContentFile {
            manifest: "m".into(),
            content: ContentType::Data,
            status: ManifestStatus::Added,
        };
        let mut k1 = KeepSet::new();
        k1.insert("x", b.clone());
        k1.insert("x", a.clone());
        let mut k2 = KeepSet::new();
        k2.insert("x", a.clone());
        k2.freeze();
        k2.insert("x", b);
        assert_eq!(k1.lookup("x"), Some(&a));
        assert_eq!(k2.lookup("x"), Some(&a));
        assert_eq!(k1.len(), 1);
        assert_eq!(k2.len(), 1);
    }

    #[test]
    fn fingerprint_carries_all_128_bits_high_word_first() {
        for k in ["data/a.parquet", "x"] {
            let h = xxhash_rust::xxh3::xxh3_128(k.as_bytes());
            assert_eq!(fingerprint(k), [(h >> 64) as u64, h as u64]);
            assert_ne!(fingerprint(k)[0], 0);
        }
    }

    #[test]
    fn a_smaller_reason_after_freeze_replaces_the_frozen_one() {
        let small = Source::ManifestList { snapshot_id: 1 };
        let big = Source::ContentFile {
            manifest: "m".into(),
            content: ContentType::Data,
            status: ManifestStatus::Added,
        };
        let mut k = KeepSet::new();
        k.insert("x", big);
        k.freeze();
        assert!(!k.insert("x", small.clone()));
        assert_eq!(k.lookup("x"), Some(&small));
        k.freeze();
        assert_eq!(k.lookup("x"), Some(&small));
        assert_eq!(k.len(), 1);
    }

    #[test]
    fn reinserting_a_frozen_key_with_its_own_reason_allocates_nothing() {
        let mut k = KeepSet::new();
        k.insert("x", Source::MetadataLog);
        k.freeze();
        let before = k.index_bytes();
        assert!(!k.insert("x", Source::MetadataLog));
        assert!(k.building.is_empty());
        assert_eq!(k.index_bytes(), before);
    }

    #[test]
    fn freeze_without_loose_keys_still_moves_keys_to_the_arrays() {
        let mut k = KeepSet::new();
        for i in 0..100 {
            k.insert(&format!("data/f{i}.parquet"), Source::MetadataLog);
        }
        k.freeze();
        assert!(k.building.is_empty());
        assert_eq!(k.frozen_keys.len(), 100);
        assert!(k.index_bytes() <= 100 * 20);
        assert!(k.lookup("data/f42.parquet").is_some());
    }

    #[test]
    fn freeze_and_round_trip() {
        let mut k = KeepSet::new();
        for i in 0..1000 {
            k.insert(
                &format!("data/f{i}.parquet"),
                Source::ContentFile {
                    manifest: "m".into(),
                    content: ContentType::Data,
                    status: ManifestStatus::Added,
                },
            );
            k.insert_loose(&format!("data/f{i}.parquet"));
        }
        k.freeze();
        assert_eq!(k.len(), 1000);
        assert!(k.lookup("data/f7.parquet").is_some());
        assert!(k.lookup("data/f7.parquet ").is_none());
        assert!(k.contains_loose("data/f999.parquet"));
        let mut bytes = Vec::new();
        k.encode(b"hdr", &mut bytes);
        let (k2, h) = KeepSet::decode(&bytes).unwrap();
        assert_eq!(h, b"hdr");
        assert_eq!(k2.len(), 1000);
        assert_eq!(k2.lookup("data/f5.parquet"), k.lookup("data/f5.parquet"));
        assert!(k.index_bytes() <= 1000 * 28 + 64);
        for i in [0, 9, 20, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(KeepSet::decode(&bad).is_err());
        }
        assert!(KeepSet::decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
