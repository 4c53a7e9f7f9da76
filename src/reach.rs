//! The keep set: every key under the table location that some retained
//! snapshot or table-level role references, with the reason it is kept.
//!
//! Keys are stored as 64-bit XXH3 fingerprints of their canonical relative
//! path (the part after `location + "/"`), each with the index of its
//! [`Source`]. Frozen keys sit in a bucketed array of their low 48 bits
//! ([`fingerprints`]: 6.5 bytes per key) plus a 2-byte source index (4
//! bytes past 65,536 distinct sources): about 8.5 bytes per referenced
//! file. New keys go to a hash map first (about 17 bytes per key, 34 while
//! it grows), merged into the arrays as the set grows (past 2^20 keys, see
//! [`KeepSet::insert`]) and when it is complete. Keys nothing asks about
//! until the set is complete (a manifest's plain keys) may instead be
//! deferred ([`KeepSet::defer`]: 16 bytes a key, appended without a
//! lookup) and sorted into the arrays at the next merge.
//!
//! A fingerprint collision can only make an unreferenced key look
//! referenced: it errs towards keeping, never towards deleting (the module
//! [`fingerprints`] gives the odds). The one check where "referenced" would
//! relax a rule, the stale-pointer check on unreferenced metadata
//! documents, asks [`KeepSet::references_document`], which is exact. The
//! listing's sanity guard (a listing where no referenced key appears is
//! refused) counts fingerprint hits: a listing of the wrong prefix passes
//! it only if one of its keys collides, about 1 in 20,000 for a billion
//! objects.
//!
//! Near-misses: a second set holds fingerprints of the *loose* form of the
//! referenced paths (see [`crate::path::loose`]) whose loose form differs
//! from their canonical key; a loose form equal to its canonical key is
//! already in the first set, and [`KeepSet::contains_loose`] asks both.

mod export;
mod fingerprints;
mod xxh3;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::spec::iceberg::{ContentType, ManifestStatus};
pub(crate) use export::Export;
use export::Section;
use fingerprints::{bits_for, slot, FingerprintSet};

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
    /// The role this source gives a path in the metadata graph, if any
    /// (table metadata file, manifest list, manifest, content file): a
    /// path named in two roles is a cycle in the graph, refused.
    pub fn graph_role(&self) -> Option<&'static str> {
        match self {
            Source::CurrentMetadata | Source::MetadataLog | Source::DrCheckpoint => {
                Some("table metadata file")
            }
            Source::ManifestList { .. } => Some("manifest list"),
            Source::Manifest { .. } => Some("manifest"),
            Source::ContentFile { .. } => Some("content file"),
            _ => None,
        }
    }

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

/// A 64-bit fingerprint of a canonical relative key.
pub type Fingerprint = u64;

/// Fingerprint of a canonical relative key.
pub fn fingerprint(rel: &str) -> Fingerprint {
    xxh3::xxh3_64(rel.as_bytes())
}

/// First line of a key index's bytes (see [`encode_key_index`]).
const KEY_INDEX_HEADER: &[u8] = b"lakesweep.key-index.v1\n";

/// A set of keys as their fingerprints, stored as bytes: a header line,
/// then each fingerprint as 8 little-endian bytes, ascending, no repeats.
/// Made by a ledger (the keys it deleted), read by a session.
pub fn encode_key_index(fingerprints: impl IntoIterator<Item = Fingerprint>) -> Vec<u8> {
    let mut fps: Vec<Fingerprint> = fingerprints.into_iter().collect();
    fps.sort_unstable();
    fps.dedup();
    let mut out = Vec::with_capacity(KEY_INDEX_HEADER.len() + fps.len() * 8);
    out.extend_from_slice(KEY_INDEX_HEADER);
    for fp in fps {
        out.extend_from_slice(&fp.to_le_bytes());
    }
    out
}

/// Reads [`encode_key_index`]'s bytes; anything else is refused.
pub fn decode_key_index(bytes: &[u8]) -> Result<Vec<Fingerprint>> {
    let bad = |why: &str| {
        Error::invalid(
            "deleted_index",
            format!("not a key index ({why}): pass the bytes a ledger made"),
        )
    };
    let body = bytes
        .strip_prefix(KEY_INDEX_HEADER)
        .ok_or_else(|| bad("no header"))?;
    if body.len() % 8 != 0 {
        return Err(bad("cut short"));
    }
    let fps: Vec<Fingerprint> = body
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    if fps.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("not ascending"));
    }
    Ok(fps)
}

/// Fingerprint of a loose relative key (the same function: a loose form
/// equal to a canonical key has the same fingerprint in both sets).
pub fn loose_fingerprint(loose_rel: &str) -> u64 {
    fingerprint(loose_rel)
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

/// Source indices of the frozen keys, as narrow as the number of distinct
/// sources allows.
#[derive(Debug, Clone)]
enum SourceIds {
    /// At most 65,536 distinct sources.
    Narrow(Vec<u16>),
    /// More.
    Wide(Vec<u32>),
}

impl Default for SourceIds {
    fn default() -> Self {
        SourceIds::Narrow(Vec::new())
    }
}

impl SourceIds {
    /// Empty, as narrow as `distinct` sources allow, with room for `n`.
    fn with_capacity(distinct: usize, n: usize) -> Self {
        if distinct <= 1 << 16 {
            SourceIds::Narrow(Vec::with_capacity(n))
        } else {
            SourceIds::Wide(Vec::with_capacity(n))
        }
    }

    /// Appends an index (below the `distinct` this was made for).
    fn push(&mut self, id: u32) {
        debug_assert!(matches!(self, SourceIds::Wide(_)) || id <= u32::from(u16::MAX));
        match self {
            SourceIds::Narrow(v) => v.push(id as u16),
            SourceIds::Wide(v) => v.push(id),
        }
    }

    /// Frees the room not taken.
    fn shrink_to_fit(&mut self) {
        match self {
            SourceIds::Narrow(v) => v.shrink_to_fit(),
            SourceIds::Wide(v) => v.shrink_to_fit(),
        }
    }

    fn get(&self, i: usize) -> u32 {
        match self {
            SourceIds::Narrow(v) => u32::from(v[i]),
            SourceIds::Wide(v) => v[i],
        }
    }

    fn len(&self) -> usize {
        match self {
            SourceIds::Narrow(v) => v.len(),
            SourceIds::Wide(v) => v.len(),
        }
    }

    /// Bytes per index.
    fn width(&self) -> usize {
        match self {
            SourceIds::Narrow(_) => 2,
            SourceIds::Wide(_) => 4,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            SourceIds::Narrow(v) => v.capacity() * 2,
            SourceIds::Wide(v) => v.capacity() * 4,
        }
    }
}

/// Building keys past which [`KeepSet::insert`] merges them into the
/// frozen arrays (see [`KeepSet::compact_if_due`]): 2^20, so the first
/// merge has at least [`fingerprints::LOSSLESS_BITS`] bucket bits.
const COMPACT_MIN: usize = 1 << 20;

/// Two runs of `(slot key, source id)`, each ascending by slot key without
/// repeats, merged: one entry per slot key, the smaller reason (by `rank`)
/// where both hold it.
struct Merged<'r, A: Iterator<Item = (u64, u32)>, B: Iterator<Item = (u64, u32)>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
    rank: &'r [u32],
    /// Each source's graph role ([`Source::graph_role`]).
    roles: &'r [Option<&'static str>],
    /// The first slot both runs hold with reasons of two graph roles.
    conflict: Option<(u32, u32)>,
}

/// In `run`, sorted by fingerprint and then by reason (smallest first),
/// the first fingerprint held with reasons of two different graph roles
/// (`roles`, by source id): their source ids. A group whose smallest
/// reason has no role (it hides the others from the merge with the frozen
/// arrays) is also compared with the frozen reason, `frozen(fp)`.
fn role_conflict_in_runs(
    run: &[(u64, u32)],
    roles: &[Option<&'static str>],
    frozen: impl Fn(u64) -> Option<u32>,
) -> Option<(u32, u32)> {
    let mut i = 0;
    while i < run.len() {
        let (fp, smallest) = run[i];
        let mut seen: Option<(&'static str, u32)> = None;
        while i < run.len() && run[i].0 == fp {
            let id = run[i].1;
            if let Some(role) = roles[id as usize] {
                match seen {
                    Some((r, other)) if r != role => return Some((other, id)),
                    Some(_) => {}
                    None => seen = Some((role, id)),
                }
            }
            i += 1;
        }
        if let (None, Some((role, id))) = (roles[smallest as usize], seen) {
            if let Some(f) = frozen(fp) {
                if roles[f as usize].is_some_and(|r| r != role) {
                    return Some((f, id));
                }
            }
        }
    }
    None
}

impl<A: Iterator<Item = (u64, u32)>, B: Iterator<Item = (u64, u32)>> Iterator for Merged<'_, A, B> {
    type Item = (u64, u32);

    fn next(&mut self) -> Option<(u64, u32)> {
        match (self.a.peek().copied(), self.b.peek().copied()) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                self.a.next();
                self.b.next();
                if let (Some(p), Some(q)) = (self.roles[x.1 as usize], self.roles[y.1 as usize]) {
                    if p != q && self.conflict.is_none() {
                        self.conflict = Some((x.1, y.1));
                    }
                }
                let smaller = if self.rank[y.1 as usize] < self.rank[x.1 as usize] {
                    y
                } else {
                    x
                };
                Some(smaller)
            }
            (Some(x), Some(y)) if x.0 < y.0 => self.a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => self.b.next(),
            (Some(_), None) => self.a.next(),
            (None, None) => None,
        }
    }
}

/// The set of referenced keys, with reasons.
#[derive(Debug, Clone, Default)]
pub struct KeepSet {
    sources: Vec<Source>,
    source_ids: HashMap<Source, u32>,
    /// The source interned last (consecutive references mostly share one).
    last_source: Option<u32>,
    building: HashMap<Fingerprint, u32, Fold>,
    /// Keys added by [`KeepSet::defer`]: `(fingerprint, source id)`, in
    /// the order named, repeats and all, not looked up until merged.
    pending: Vec<(Fingerprint, u32)>,
    /// The first key a merge found named in two roles of the metadata
    /// graph: the two source ids (see [`KeepSet::role_conflict`]).
    conflict: Option<(u32, u32)>,
    keys: FingerprintSet,
    key_sources: SourceIds,
    loose_building: HashSet<u64, Fold>,
    loose: FingerprintSet,
    /// Metadata documents referenced, exactly (see [`KeepSet::references_document`]).
    documents: BTreeSet<String>,
    /// [`Source::describe`] of each source, made once when it is interned.
    descriptions: Vec<String>,
}

impl KeepSet {
    /// An empty keep set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `s` in this set's table of sources, interned on first
    /// use: what [`KeepSet::defer`] takes.
    pub fn source_id(&mut self, s: Source) -> u32 {
        if let Some(id) = self.last_source {
            if self.sources[id as usize] == s {
                return id;
            }
        }
        let id = match self.source_ids.get(&s) {
            Some(&id) => id,
            None => {
                let id = self.sources.len() as u32;
                self.descriptions.push(s.describe());
                self.sources.push(s.clone());
                self.source_ids.insert(s, id);
                id
            }
        };
        self.last_source = Some(id);
        id
    }

    /// Adds a referenced key (canonical, relative to the location). Returns
    /// true when the key was not referenced before (a fingerprint collision
    /// may say false for a new key; callers use it for counting only).
    pub fn insert(&mut self, rel: &str, source: Source) -> bool {
        if matches!(
            source,
            Source::CurrentMetadata
                | Source::VersionHint
                | Source::MetadataLog
                | Source::DrCheckpoint
        ) && !self.documents.contains(rel)
        {
            self.documents.insert(rel.to_owned());
        }
        self.insert_fingerprint(fingerprint(rel), source)
    }

    /// [`KeepSet::insert`] by the key's fingerprint (not for a metadata
    /// document: its name is recorded by `insert`).
    pub fn insert_fingerprint(&mut self, fp: Fingerprint, source: Source) -> bool {
        let id = self.source_id(source);
        if let Some(existing) = self.frozen_lookup(fp) {
            // Keep the smallest reason: the frozen entry is shadowed by a
            // smaller one, or by the smallest of several.
            let current = self.building.get(&fp).copied().unwrap_or(existing);
            if self.sources[id as usize] < self.sources[current as usize] {
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
                self.compact_if_due();
                true
            }
        }
    }

    /// Adds the key of fingerprint `fp` (of a canonical relative key, as
    /// [`fingerprint`] makes it) with the source of id `id` (from
    /// [`KeepSet::source_id`]), without looking it up: the entry waits,
    /// repeats and all, for the next merge (when due, as for
    /// [`KeepSet::insert`], or [`KeepSet::settle`]), which keeps the
    /// smallest reason per key as `insert` does and checks its graph
    /// role against every other reason the merge sees for the key
    /// ([`KeepSet::role_conflict`]).
    ///
    /// Until then the key is invisible: [`KeepSet::lookup`] and the other
    /// questions do not see it, so a caller defers only keys nothing asks
    /// about before it settles the set. Not for metadata documents (their
    /// names are recorded exactly by `insert`) nor for a key with other
    /// spellings or a loose form of its own (`insert_loose`).
    pub fn defer(&mut self, fp: Fingerprint, id: u32) {
        debug_assert!(!matches!(
            self.sources.get(id as usize),
            None | Some(
                Source::CurrentMetadata
                    | Source::VersionHint
                    | Source::MetadataLog
                    | Source::DrCheckpoint
            )
        ));
        if self.pending.len() == self.pending.capacity() {
            self.grow_pending();
        }
        self.pending.push((fp, id));
        if self.pending.len() >= COMPACT_MIN {
            self.compact_if_due();
        }
    }

    /// Makes room for more deferred keys: doubling, but never past the
    /// count at which they are merged ([`KeepSet::compact_if_due`]), so a
    /// large set holds no unused room beside them (up to 16 bytes a key).
    fn grow_pending(&mut self) {
        let due = COMPACT_MIN.max(self.keys.len() / 4);
        let len = self.pending.len();
        let target = if len < due {
            (len * 2).max(1024).min(due)
        } else {
            len * 2
        };
        self.pending.reserve_exact(target - len);
    }

    /// Merges every deferred and building key into the frozen arrays
    /// (see [`KeepSet::defer`]): from then on every question sees them.
    /// Fails past 2^32 keys. A key the merge found named in two roles is
    /// reported by [`KeepSet::role_conflict`], not here.
    pub fn settle(&mut self) -> Result<()> {
        self.merge_building(false)
    }

    /// The reasons of a key a merge found named in two roles of the
    /// metadata graph (say, a manifest and a content file), if any: the
    /// metadata is inconsistent and nothing may be deleted. Which such
    /// key is reported first may depend on when merges fell; that one is
    /// does not.
    pub fn role_conflict(&self) -> Option<(&Source, &Source)> {
        let (a, b) = self.conflict?;
        Some((self.sources.get(a as usize)?, self.sources.get(b as usize)?))
    }

    /// Merges the building map into the frozen arrays once it holds
    /// [`COMPACT_MIN`] keys and a quarter of the frozen ones, so a keep
    /// set of millions of keys never holds them all in a hash map (17 to
    /// 34 bytes a key) beside their frozen copy: at most about a fifth of
    /// them sit in the map, the rest in the arrays (8.5 bytes a key);
    /// deferred keys (16 bytes each, repeats included) count alike. (Letting
    /// them wait for half the frozen ones saved a seventh of the merging
    /// time and cost the ten-million-key driver's peak 16 MiB: not taken.)
    /// Only while
    /// re-bucketing loses nothing (the frozen set is empty or has at least
    /// [`fingerprints::LOSSLESS_BITS`] bucket bits), so the arrays come out
    /// exactly as one freeze at the end would make them.
    fn compact_if_due(&mut self) {
        let n = self.building.len() + self.pending.len();
        if n >= COMPACT_MIN
            && n >= self.keys.len() / 4
            && (self.keys.len() == 0 || self.keys.bits() >= fingerprints::LOSSLESS_BITS)
        {
            // It fails only past 2^32 keys, before it changes anything:
            // the freeze that ends the build reports it.
            let _ = self.merge_building(false);
        }
    }

    /// Adds the loose form of a referenced path whose loose form differs
    /// from its canonical key (an equal one is in the set already).
    pub fn insert_loose(&mut self, loose_rel: &str) {
        let fp = loose_fingerprint(loose_rel);
        if self.loose.find(fp).is_none() {
            self.loose_building.insert(fp);
        }
    }

    /// Heap bytes of the keys added by [`KeepSet::defer`] that wait for a
    /// merge (16 a key, repeats included; not in [`KeepSet::slots_held`]).
    pub fn deferred_bytes(&self) -> usize {
        self.pending.capacity() * std::mem::size_of::<(Fingerprint, u32)>()
    }

    /// True while keys added by [`KeepSet::defer`] wait for a merge.
    pub fn has_deferred(&self) -> bool {
        !self.pending.is_empty()
    }

    /// [`KeepSet::lookup`] by the key's fingerprint.
    pub fn lookup_fingerprint(&self, fp: Fingerprint) -> Option<&Source> {
        self.sources.get(self.source_of_fingerprint(fp)? as usize)
    }

    fn frozen_lookup(&self, fp: Fingerprint) -> Option<u32> {
        self.keys.find(fp).map(|i| self.key_sources.get(i))
    }

    /// The reason a canonical relative key is referenced, if it is (or, by
    /// a fingerprint collision, appears to be: see the module notes).
    pub fn lookup(&self, rel: &str) -> Option<&Source> {
        self.sources.get(self.source_of(rel)? as usize)
    }

    /// The source id of a canonical relative key, if it is referenced.
    fn source_of(&self, rel: &str) -> Option<u32> {
        self.source_of_fingerprint(fingerprint(rel))
    }

    /// [`KeepSet::source_of`] by the key's fingerprint.
    fn source_of_fingerprint(&self, fp: Fingerprint) -> Option<u32> {
        self.building
            .get(&fp)
            .copied()
            .or_else(|| self.frozen_lookup(fp))
    }

    /// Why the key of fingerprint `fp` is referenced, if it is (the key
    /// itself unknown: a ledger that holds it asked by its fingerprint).
    pub fn reason_of_fingerprint(&self, fp: Fingerprint) -> Option<&str> {
        self.source_of_fingerprint(fp)
            .and_then(|id| self.descriptions.get(id as usize))
            .map(String::as_str)
    }

    /// Why a canonical relative key is referenced ([`Source::describe`] of
    /// [`KeepSet::lookup`]'s answer), without formatting it again.
    pub fn reason(&self, rel: &str) -> Option<&str> {
        self.reason_with_id(rel).map(|(_, why)| why)
    }

    /// [`KeepSet::reason`] with the id of its source: equal ids give equal
    /// reasons, so a caller naming many keys' reasons can look each up once.
    pub fn reason_with_id(&self, rel: &str) -> Option<(u32, &str)> {
        self.reason_or_fingerprint(rel).ok()
    }

    /// [`KeepSet::reason_with_id`], or, for a key it does not reference,
    /// the key's fingerprint (`Err`), for [`KeepSet::in_loose_forms_only`]:
    /// a listing's garbage is hashed once, not twice.
    pub fn reason_or_fingerprint(
        &self,
        rel: &str,
    ) -> std::result::Result<(u32, &str), Fingerprint> {
        let fp = fingerprint(rel);
        self.source_of_fingerprint(fp)
            .and_then(|id| {
                self.descriptions
                    .get(id as usize)
                    .map(|why| (id, why.as_str()))
            })
            .ok_or(fp)
    }

    /// True when `rel` is a metadata document this keep set references
    /// (current, `metadata-log`, version hint, disaster-recovery
    /// checkpoint), compared exactly: it decides whether an unreferenced
    /// newer document refuses the plan, where a collision must not answer.
    pub fn references_document(&self, rel: &str) -> bool {
        self.documents.contains(rel)
    }

    /// True when some referenced path equals `loose_rel` in loose form
    /// (or a collision says so: a near-miss is kept, never deleted).
    pub fn contains_loose(&self, loose_rel: &str) -> bool {
        let fp = loose_fingerprint(loose_rel);
        self.loose_building.contains(&fp)
            || self.loose.find(fp).is_some()
            || self.building.contains_key(&fp)
            || self.keys.find(fp).is_some()
    }

    /// [`KeepSet::contains_loose`] for a plain key (see
    /// [`crate::path::is_plain_key`]) that [`KeepSet::lookup`] found
    /// unreferenced, asked by the fingerprint that lookup computed (see
    /// [`KeepSet::reason_or_fingerprint`]; the loose fingerprint is the
    /// same function of the same text). A plain key is its own loose form,
    /// so of the canonical keys only itself could match, and it was just
    /// asked; only the loose forms of keys spelled otherwise are left.
    pub fn in_loose_forms_only(&self, plain_fp: Fingerprint) -> bool {
        self.loose_building.contains(&plain_fp) || self.loose.find(plain_fp).is_some()
    }

    /// Number of distinct referenced keys (distinct fingerprint slots),
    /// of those merged or building (deferred keys count once settled).
    pub fn len(&self) -> usize {
        let shadowed = self
            .building
            .keys()
            .filter(|k| self.keys.find(**k).is_some())
            .count();
        self.keys.len() + self.building.len() - shadowed
    }

    /// Fingerprint slots held, frozen and building: [`KeepSet::len`] plus
    /// the building entries that shadow a frozen one. An upper bound of the
    /// distinct keys, in constant time (for a memory estimate per read;
    /// `len` walks the building map).
    pub fn slots_held(&self) -> usize {
        self.keys.len() + self.building.len()
    }

    /// Each source's rank in the order of [`Source`] (smallest first).
    fn source_ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.sources.len() as u32).collect();
        order.sort_by(|a, b| self.sources[*a as usize].cmp(&self.sources[*b as usize]));
        let mut rank = vec![0u32; order.len()];
        for (r, id) in order.into_iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }

    /// Merges the building map into the frozen arrays, per slot the
    /// smallest reason; frees the map. The bucket bits: those of a freeze
    /// of everything at once when the frozen set is empty or at least
    /// [`fingerprints::LOSSLESS_BITS`] wide (its slot keys are whole
    /// fingerprints then), its own otherwise (later freezes add the few
    /// keys a re-check finds). The map's entries are moved out and sorted
    /// and the map freed before the new arrays are written, in one pass
    /// from the old arrays and the sorted entries: beside the old arrays
    /// and the new, only the map's share of the keys is held. The deferred
    /// keys ([`KeepSet::defer`]) are merged with the map's, their graph
    /// roles compared on the way. Unless `last` (a freeze), keys too few
    /// for an empty frozen set to take them without loss go back to the
    /// map instead. Fails, before it changes anything, past 2^32 keys.
    fn merge_building(&mut self, last: bool) -> Result<()> {
        if self.building.is_empty() && self.pending.is_empty() {
            return Ok(());
        }
        if self.keys.len() + self.building.len() + self.pending.len() > u32::MAX as usize {
            return Err(Error::invalid(
                "keep-set",
                "more than 2^32 referenced keys: beyond what one keep set indexes",
            ));
        }
        let rank = self.source_ranks();
        let old_bits = self.keys.bits();
        let lossless = self.keys.len() == 0 || old_bits >= fingerprints::LOSSLESS_BITS;
        // The map is freed before the arrays are written.
        let mut new: Vec<(u64, u32)> = std::mem::take(&mut self.pending);
        new.extend(std::mem::take(&mut self.building));
        let roles: Vec<Option<&'static str>> =
            self.sources.iter().map(Source::graph_role).collect();
        // Per fingerprint, the smallest reason first; deferred repeats go,
        // their graph roles compared first. Sorted as plain pairs (the
        // rank in place of the id, put back after): no lookup per
        // comparison.
        let mut by_rank = vec![0u32; rank.len()];
        for (id, r) in rank.iter().enumerate() {
            by_rank[*r as usize] = id as u32;
        }
        for e in &mut new {
            e.1 = rank[e.1 as usize];
        }
        new.sort_unstable();
        for e in &mut new {
            e.1 = by_rank[e.1 as usize];
        }
        if let Some(c) = role_conflict_in_runs(&new, &roles, |fp| self.frozen_lookup(fp)) {
            self.conflict.get_or_insert(c);
        }
        new.dedup_by_key(|e| e.0);
        // Keys not frozen yet (an upper bound where slots drop bits).
        let fresh = if self.keys.len() == 0 {
            new.len()
        } else {
            new.iter().filter(|e| self.keys.find(e.0).is_none()).count()
        };
        let bits = if !lossless {
            old_bits
        } else if self.keys.len() == 0 {
            bits_for(new.len())
        } else {
            // Slot keys are whole fingerprints on both sides.
            bits_for(self.keys.len() + fresh).max(old_bits)
        };
        if !last && self.keys.len() == 0 && bits < fingerprints::LOSSLESS_BITS {
            // Too few keys for arrays a later merge could re-bucket without
            // loss: they wait in the map, distinct now and visible to every
            // question, so the arrays still come out as one freeze would
            // make them.
            self.building = new.into_iter().collect();
            return Ok(());
        }
        if bits < fingerprints::LOSSLESS_BITS {
            // Slot keys drop bits: sorted again by slot, and keys that
            // share a slot (a collision) share it with the smallest reason.
            for e in &mut new {
                e.0 = slot(e.0, bits);
            }
            new.sort_unstable_by_key(|&(s, id)| (s, rank[id as usize]));
            new.dedup_by_key(|e| e.0);
        }
        let old = self
            .keys
            .slots()
            .zip(0..)
            .map(|(s, i)| (s, self.key_sources.get(i)));
        let mut merged = Merged {
            a: old.peekable(),
            b: new.iter().copied().peekable(),
            rank: &rank,
            roles: &roles,
            conflict: None,
        };
        let expected = self.keys.len() + fresh;
        let mut ids = SourceIds::with_capacity(self.sources.len(), expected);
        let keys = FingerprintSet::from_sorted_slots(
            bits,
            expected,
            merged.by_ref().map(|(s, id)| {
                ids.push(id);
                s
            }),
        );
        let conflict = merged.conflict;
        drop(merged);
        if let Some(c) = conflict {
            self.conflict.get_or_insert(c);
        }
        match keys {
            Ok(keys) => {
                ids.shrink_to_fit();
                self.keys = keys;
                self.key_sources = ids;
                Ok(())
            }
            Err(e) => {
                // Not reached (the count was checked above); were it, the
                // keys go back to the map rather than away: slot keys are
                // the fingerprints themselves wherever a merge can fail
                // unreported (see `compact_if_due`).
                self.building = new.into_iter().collect();
                Err(e)
            }
        }
    }

    /// Moves everything into the frozen arrays and frees the maps. The
    /// bucket count is chosen at the first freeze, and chosen again at a
    /// later one only where re-bucketing loses nothing (see
    /// [`KeepSet::merge_building`]).
    pub fn freeze(&mut self) -> Result<()> {
        self.merge_building(true)?;
        if !self.loose_building.is_empty() {
            let bits = if self.loose.len() == 0 {
                bits_for(self.loose_building.len())
            } else {
                self.loose.bits()
            };
            let mut all: Vec<u64> = self.loose.slots().collect();
            all.extend(
                std::mem::take(&mut self.loose_building)
                    .into_iter()
                    .map(|fp| slot(fp, bits)),
            );
            all.sort_unstable();
            all.dedup();
            self.loose = FingerprintSet::from_sorted_slots(bits, all.len(), all.into_iter())?;
        }
        Ok(())
    }

    /// Heap bytes held by the key index (fingerprints, sources, loose set,
    /// the maps while building; excludes the small tables of distinct
    /// sources and metadata documents).
    pub fn index_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.key_sources.heap_bytes()
            + self.loose.heap_bytes()
            + self.building.capacity() * (16 + 1)
            + self.pending.capacity() * std::mem::size_of::<(Fingerprint, u32)>()
            + self.loose_building.capacity() * (8 + 1)
    }

    /// Serialises the keep set: the frozen arrays, the source table, and a
    /// SHA-256 over everything so a damaged copy is refused (a set still
    /// building is frozen in a copy first).
    pub(crate) fn encode(&self, header: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let frozen;
        let me = if self.is_frozen() {
            self
        } else {
            let mut c = self.clone();
            c.freeze()?;
            frozen = c;
            &frozen
        };
        let Some(e) = me.export(header) else {
            return Err(Error::invalid(
                "keep-set",
                "a frozen copy still holds keys to merge",
            ));
        };
        out.extend(me.export_range(&e, 0, e.len()));
        Ok(())
    }

    /// True when every key sits in the frozen arrays (none building).
    fn is_frozen(&self) -> bool {
        self.building.is_empty() && self.pending.is_empty() && self.loose_building.is_empty()
    }

    /// The serialised form's prefix: magic, then the header and the source
    /// table, each after its length.
    fn export_prefix(&self, header: &[u8]) -> Vec<u8> {
        let sources = serde_json::to_vec(&self.sources).unwrap_or_default();
        let mut out = Vec::with_capacity(MAGIC.len() + 16 + header.len() + sources.len());
        out.extend_from_slice(MAGIC);
        for part in [header, &sources[..]] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part);
        }
        out
    }

    /// The sections of the serialised form from `prefix` to the digest.
    fn export_sections<'a>(&'a self, prefix: &'a [u8], small: &'a ExportWords) -> Vec<Section<'a>> {
        let mut v = vec![Section::Bytes(prefix), Section::Bytes(&small.keys)];
        v.extend(export::set_arrays(&self.keys));
        v.push(Section::Bytes(&small.width));
        v.push(match &self.key_sources {
            SourceIds::Narrow(ids) => Section::U16s(ids),
            SourceIds::Wide(ids) => Section::U32s(ids),
        });
        v.push(Section::Bytes(&small.loose));
        v.extend(export::set_arrays(&self.loose));
        v
    }

    /// The short words between the arrays of the serialised form.
    fn export_words(&self) -> ExportWords {
        ExportWords {
            keys: export::set_words(&self.keys),
            width: (self.key_sources.width() as u64).to_le_bytes(),
            loose: export::set_words(&self.loose),
        }
    }

    /// The serialised form of this frozen keep set, described: its prefix,
    /// its length and its digest (one pass over the arrays, nothing written
    /// out); none while keys are still building (freeze first).
    pub(crate) fn export(&self, header: &[u8]) -> Option<Export> {
        if !self.is_frozen() {
            return None;
        }
        let prefix = self.export_prefix(header);
        let words = self.export_words();
        let mut sha = Sha256::new();
        let mut len = 0usize;
        export::for_each_piece(&self.export_sections(&prefix, &words), |p| {
            sha.update(p);
            len += p.len();
        });
        Some(Export {
            digest: sha.finalize().into(),
            len: len + 32,
            prefix,
        })
    }

    /// Bytes `offset..offset + length` of the serialised form `e` describes
    /// (fewer at its end), made from the arrays. `e` must be this keep
    /// set's [`KeepSet::export`], made since it last changed.
    pub(crate) fn export_range(&self, e: &Export, offset: usize, length: usize) -> Vec<u8> {
        let words = self.export_words();
        let mut sections = self.export_sections(&e.prefix, &words);
        sections.push(Section::Bytes(&e.digest));
        export::range(&sections, offset, length)
    }

    /// Feeds every byte of the serialised form `e` describes to `f`, a
    /// bounded piece at a time (for a digest of the whole).
    pub(crate) fn export_pieces(&self, e: &Export, f: impl FnMut(&[u8])) {
        let words = self.export_words();
        let mut sections = self.export_sections(&e.prefix, &words);
        sections.push(Section::Bytes(&e.digest));
        export::for_each_piece(&sections, f);
    }

    /// Reads what [`KeepSet::encode`] wrote; returns the header bytes too.
    pub(crate) fn decode(bytes: &[u8]) -> Result<(KeepSet, Vec<u8>)> {
        let bad = |d: &str| Error::invalid("keep-set", format!("not a lakesweep keep set: {d}"));
        if bytes.starts_with(b"LSKEEP\x00\x01") {
            return Err(bad(
                "exported by an earlier lakesweep (keep set format 1): export it again",
            ));
        }
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
        let keys = FingerprintSet::decode(|n| r.take(n), bad)?;
        let width = r.u64()?;
        let n = keys.len();
        // Either width reads back (a keep set frozen while it had few
        // sources may have gained more since); every index is checked below.
        let key_sources = match width {
            2 => SourceIds::Narrow(
                r.take(n * 2)?
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            4 => SourceIds::Wide(
                r.take(n * 4)?
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            _ => return Err(bad("source index width")),
        };
        if (0..key_sources.len()).any(|i| key_sources.get(i) as usize >= sources.len()) {
            return Err(bad("source index out of range"));
        }
        let loose = FingerprintSet::decode(|n| r.take(n), bad)?;
        if r.pos != body.len() {
            return Err(bad("trailing bytes"));
        }
        let source_ids = sources
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, s)| (s, i as u32))
            .collect();
        let descriptions = sources.iter().map(Source::describe).collect();
        Ok((
            KeepSet {
                sources,
                source_ids,
                descriptions,
                keys,
                key_sources,
                loose,
                ..KeepSet::default()
            },
            header,
        ))
    }
}

const MAGIC: &[u8] = b"LSKEEP\x00\x02";

/// The short words between the arrays of a serialised keep set.
struct ExportWords {
    keys: [u8; 16],
    width: [u8; 8],
    loose: [u8; 16],
}

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
        k2.freeze().unwrap();
        k2.insert("x", b);
        assert_eq!(k1.lookup("x"), Some(&a));
        assert_eq!(k2.lookup("x"), Some(&a));
        assert_eq!(k1.len(), 1);
        assert_eq!(k2.len(), 1);
    }

    #[test]
    fn fingerprint_is_xxh3_64_of_the_key() {
        for k in ["data/a.parquet", "x"] {
            assert_eq!(fingerprint(k), xxhash_rust::xxh3::xxh3_64(k.as_bytes()));
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
        k.freeze().unwrap();
        assert!(!k.insert("x", small.clone()));
        assert_eq!(k.lookup("x"), Some(&small));
        // The shadowing entry is held twice until the next freeze.
        assert_eq!((k.len(), k.slots_held()), (1, 2));
        k.freeze().unwrap();
        assert_eq!(k.slots_held(), 1);
        assert_eq!(k.lookup("x"), Some(&small));
        assert_eq!(k.len(), 1);
    }

    #[test]
    fn reinserting_a_frozen_key_with_its_own_reason_allocates_nothing() {
        let mut k = KeepSet::new();
        k.insert("x", Source::MetadataLog);
        k.freeze().unwrap();
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
        k.freeze().unwrap();
        assert!(k.building.is_empty());
        assert_eq!(k.keys.len(), 100);
        assert!(k.index_bytes() <= 100 * 9 + 64);
        assert!(k.lookup("data/f42.parquet").is_some());
    }

    #[test]
    fn a_loose_form_equal_to_a_canonical_key_is_found_without_the_loose_set() {
        let mut k = KeepSet::new();
        // `data/a.parquet` is its own loose form: the session adds no loose
        // fingerprint for it, and a listed `data/A.parquet` (loose form
        // `data/a.parquet`) is still a near-miss, before and after freezing.
        k.insert("data/a.parquet", Source::MetadataLog);
        assert!(k.contains_loose("data/a.parquet"));
        k.freeze().unwrap();
        assert!(k.contains_loose("data/a.parquet"));
        assert!(k.loose.len() == 0 && !k.contains_loose("data/b.parquet"));
    }

    #[test]
    fn metadata_documents_are_known_exactly() {
        let mut k = KeepSet::new();
        k.insert("metadata/v1.metadata.json", Source::MetadataLog);
        k.insert("data/x.parquet", Source::DeltaActive { version: 1 });
        k.freeze().unwrap();
        assert!(k.references_document("metadata/v1.metadata.json"));
        assert!(!k.references_document("data/x.parquet"));
        assert!(!k.references_document("metadata/v2.metadata.json"));
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
        k.freeze().unwrap();
        assert_eq!(k.len(), 1000);
        assert!(k.lookup("data/f7.parquet").is_some());
        assert!(k.lookup("data/f7.parquet ").is_none());
        assert!(k.contains_loose("data/f999.parquet"));
        let mut bytes = Vec::new();
        k.encode(b"hdr", &mut bytes).unwrap();
        let (k2, h) = KeepSet::decode(&bytes).unwrap();
        assert_eq!(h, b"hdr");
        assert_eq!(k2.len(), 1000);
        assert_eq!(k2.lookup("data/f5.parquet"), k.lookup("data/f5.parquet"));
        assert!(k.index_bytes() <= 1000 * 16 + 64, "{}", k.index_bytes());
        for i in [0, 9, 20, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(KeepSet::decode(&bad).is_err());
        }
        assert!(KeepSet::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    /// A keep set of more than [`COMPACT_MIN`] keys is merged into its
    /// arrays while it is built (twice here, the bucket bits growing from
    /// 17 to 18), and comes out exactly as one freeze of everything
    /// would make it: the same slots, per slot the smallest reason, the
    /// same bytes exported.
    #[test]
    fn a_keep_set_merged_while_built_equals_one_frozen_at_the_end() {
        let n = 2 * COMPACT_MIN + COMPACT_MIN / 3;
        let content = |m: usize| Source::ContentFile {
            manifest: format!("m{m}"),
            content: ContentType::Data,
            status: ManifestStatus::Added,
        };
        let fp = |i: usize| xxhash_rust::xxh3::xxh3_64(&(i as u64).to_le_bytes());
        // The same references, in the same order, into a set that merges as
        // it goes and into one that only freezes at the end (its map filled
        // directly), and into an oracle.
        let mut k = KeepSet::new();
        let mut once = KeepSet::new();
        // The same references deferred (see `KeepSet::defer`).
        let mut deferred = KeepSet::new();
        let mut deferred_merges = 0;
        let mut want: HashMap<u64, Source> = HashMap::new();
        let mut merges = 0;
        let mut add = |k: &mut KeepSet, once: &mut KeepSet, f: u64, s: Source| {
            let before = k.keys.len();
            k.insert_fingerprint(f, s.clone());
            merges += usize::from(k.keys.len() != before);
            let before = deferred.keys.len();
            let id = deferred.source_id(s.clone());
            deferred.defer(f, id);
            deferred_merges += usize::from(deferred.keys.len() != before);
            let id = once.source_id(s.clone());
            let cur = once.building.entry(f).or_insert(id);
            if once.sources[id as usize] < once.sources[*cur as usize] {
                *cur = id;
            }
            let e = want.entry(f).or_insert_with(|| s.clone());
            if s < *e {
                *e = s;
            }
        };
        for i in 0..n {
            add(&mut k, &mut once, fp(i), content(i % 7));
            // Keys seen before a merge, named again after it with a
            // smaller reason, and with a larger one.
            if i % 500_000 == 499_999 {
                for j in (0..i).step_by(100_000) {
                    add(
                        &mut k,
                        &mut once,
                        fp(j),
                        Source::ManifestList {
                            snapshot_id: j as i64,
                        },
                    );
                    add(&mut k, &mut once, fp(j + 1), content(9));
                }
            }
        }
        assert_eq!(merges, 2, "merged while built");
        assert!(k.building.len() < n / 4);
        assert_eq!(once.keys.len(), 0);
        k.freeze().unwrap();
        once.freeze().unwrap();
        assert!(deferred_merges >= 1, "deferred keys merged while built");
        deferred.freeze().unwrap();
        // Keys named as content files and again as manifest lists: the
        // merges see it (the map's callers check each key as it comes).
        assert!(deferred.role_conflict().is_some());
        assert_eq!(deferred.keys, once.keys);
        assert!((0..once.key_sources.len())
            .all(|i| deferred.sources[deferred.key_sources.get(i) as usize]
                == once.sources[once.key_sources.get(i) as usize]));
        assert_eq!(k.len(), want.len());
        assert_eq!(k.keys.bits(), bits_for(want.len()));
        assert_eq!(k.keys, once.keys);
        assert_eq!(k.key_sources.len(), once.key_sources.len());
        assert!((0..k.key_sources.len()).all(|i| k.key_sources.get(i) == once.key_sources.get(i)));
        let mut fps: Vec<u64> = want.keys().copied().collect();
        fps.sort_unstable();
        assert!(k.keys.slots().eq(fps.iter().copied()));
        for (i, f) in fps.iter().enumerate() {
            assert_eq!(
                k.sources[k.key_sources.get(i) as usize],
                want[f],
                "slot {i}"
            );
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        k.encode(b"h", &mut a).unwrap();
        once.encode(b"h", &mut b).unwrap();
        assert!(a == b, "the same bytes exported");
        // No room kept past what the keys take.
        assert_eq!(k.index_bytes(), once.index_bytes());
    }

    proptest::proptest! {
        /// Merging the building map into frozen arrays (whatever their
        /// bucket bits) answers every lookup as the references made say:
        /// per key the smallest reason, nothing lost, nothing added.
        #[test]
        fn merges_keep_every_key_with_its_smallest_reason(
            refs in proptest::collection::vec((0u16..300, 0i64..6), 0..200),
            freezes in proptest::collection::vec(0usize..200, 0..4),
        ) {
            let mut k = KeepSet::new();
            let mut want: HashMap<String, Source> = HashMap::new();
            for (i, (key, snap)) in refs.iter().enumerate() {
                if freezes.contains(&i) {
                    k.freeze().unwrap();
                }
                let rel = format!("data/{key}");
                let s = Source::ManifestList { snapshot_id: *snap };
                k.insert(&rel, s.clone());
                let e = want.entry(rel).or_insert_with(|| s.clone());
                if s < *e {
                    *e = s;
                }
            }
            k.freeze().unwrap();
            proptest::prop_assert_eq!(k.len(), want.len());
            for (rel, s) in &want {
                proptest::prop_assert_eq!(k.lookup(rel), Some(s));
            }
            for key in 300..320 {
                let rel = format!("data/{key}");
                proptest::prop_assert!(k.lookup(&rel).is_none());
            }
        }
    }

    proptest::proptest! {
        /// Deferring keys (any of them, merged at any point) makes the set
        /// that inserting them one by one makes: the same reasons, the same
        /// exported bytes; and a key named in two graph roles, deferred or
        /// not, is reported exactly when it is there.
        #[test]
        fn deferred_keys_make_the_set_inserted_keys_make(
            refs in proptest::collection::vec((0u16..300, 0u8..4, proptest::bool::ANY), 0..200),
            settles in proptest::collection::vec(0usize..200, 0..4),
        ) {
            let source = |kind: u8, key: u16| match kind {
                0 => Source::ManifestList { snapshot_id: i64::from(key % 3) },
                1 => Source::Manifest { listed_in: format!("l{}", key % 2) },
                _ => Source::ContentFile {
                    manifest: format!("m{kind}"),
                    content: ContentType::Data,
                    status: ManifestStatus::Added,
                },
            };
            let (mut deferred, mut inserted) = (KeepSet::new(), KeepSet::new());
            // Per key, the graph roles it is named in; whether a key
            // inserted one by one met another role the set could see (as
            // the session checks each such reference, and refuses).
            let mut roles: HashMap<u16, BTreeSet<&'static str>> = HashMap::new();
            let mut refused = false;
            for (i, (key, kind, defer)) in refs.iter().enumerate() {
                if settles.contains(&i) {
                    deferred.settle().unwrap();
                }
                let rel = format!("data/{key}");
                let s = source(*kind, *key);
                let role = s.graph_role().unwrap();
                roles.entry(*key).or_default().insert(role);
                inserted.insert(&rel, s.clone());
                if *defer {
                    let id = deferred.source_id(s);
                    deferred.defer(fingerprint(&rel), id);
                } else {
                    refused |= deferred
                        .lookup(&rel)
                        .and_then(Source::graph_role)
                        .is_some_and(|r| r != role);
                    deferred.insert(&rel, s);
                }
            }
            deferred.freeze().unwrap();
            inserted.freeze().unwrap();
            for key in 0..300u16 {
                let rel = format!("data/{key}");
                proptest::prop_assert_eq!(deferred.lookup(&rel), inserted.lookup(&rel), "{}", rel);
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            deferred.encode(b"h", &mut a).unwrap();
            inserted.encode(b"h", &mut b).unwrap();
            proptest::prop_assert!(a == b, "the same bytes exported");
            // A key named in two roles is reported by a merge, unless the
            // session refused it as it came; none is reported where there
            // is none.
            let two_roles = roles.values().any(|r| r.len() > 1);
            if !refused {
                proptest::prop_assert_eq!(deferred.role_conflict().is_some(), two_roles);
            }
            if !two_roles {
                proptest::prop_assert!(deferred.role_conflict().is_none());
            }
        }
    }

    #[test]
    fn a_deferred_content_file_that_is_a_manifest_is_a_conflict() {
        let manifest = Source::Manifest {
            listed_in: "snap-1.avro".into(),
        };
        let content = Source::ContentFile {
            manifest: "m0.avro".into(),
            content: ContentType::Data,
            status: ManifestStatus::Added,
        };
        // Frozen first, deferred after; deferred both; deferred first;
        // frozen, then deferred behind a smaller reason without a role.
        for order in 0..4 {
            let mut k = KeepSet::new();
            let fp = fingerprint("metadata/m0.avro");
            match order {
                0 => {
                    k.insert("metadata/m0.avro", manifest.clone());
                    k.freeze().unwrap();
                    let id = k.source_id(content.clone());
                    k.defer(fp, id);
                }
                1 => {
                    let a = k.source_id(manifest.clone());
                    let b = k.source_id(content.clone());
                    k.defer(fp, b);
                    k.defer(fp, a);
                }
                3 => {
                    k.insert("metadata/m0.avro", manifest.clone());
                    k.freeze().unwrap();
                    let id = k.source_id(content.clone());
                    k.defer(fp, id);
                    k.insert("metadata/m0.avro", Source::Statistics { snapshot_id: 1 });
                }
                _ => {
                    let id = k.source_id(content.clone());
                    k.defer(fp, id);
                    k.insert("metadata/m0.avro", manifest.clone());
                }
            }
            assert!(k.has_deferred());
            assert!(k.role_conflict().is_none(), "not seen before the merge");
            k.settle().unwrap();
            assert!(!k.has_deferred());
            let (a, b) = k.role_conflict().expect("a conflict");
            let mut got = [a.graph_role().unwrap(), b.graph_role().unwrap()];
            got.sort();
            assert_eq!(got, ["content file", "manifest"], "order {order}");
            // The smallest reason is kept.
            let smallest = if order == 3 {
                Source::Statistics { snapshot_id: 1 }
            } else {
                manifest.clone()
            };
            assert_eq!(k.lookup("metadata/m0.avro"), Some(&smallest));
        }
    }

    proptest::proptest! {
        /// For a plain key the set finds unreferenced, the loose-form check
        /// without the canonical keys answers as the whole check does: no
        /// near-miss is lost by skipping the second lookup, before or after
        /// the set is frozen.
        #[test]
        fn the_loose_check_of_an_unreferenced_plain_key_is_the_whole_check(
            referenced in proptest::collection::vec("[aB%2F/.]{1,6}", 0..24),
            frozen_after in 0usize..24,
            probes in proptest::collection::vec("[ab%2f/.]{1,6}", 0..24),
        ) {
            let mut k = KeepSet::new();
            for (i, r) in referenced.iter().enumerate() {
                if i == frozen_after {
                    k.freeze().unwrap();
                }
                k.insert(r, Source::ManifestList { snapshot_id: i as i64 });
                let l = crate::path::loose(r);
                if l != *r {
                    k.insert_loose(&l);
                }
            }
            let loose_forms = referenced.iter().map(|r| crate::path::loose(r));
            for p in probes.iter().cloned().chain(loose_forms) {
                if crate::path::is_plain_key(&p) && k.lookup(&p).is_none() {
                    proptest::prop_assert_eq!(
                        k.in_loose_forms_only(fingerprint(&p)),
                        k.contains_loose(&p),
                        "{}", p
                    );
                }
            }
        }
    }
}
