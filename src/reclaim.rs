//! What-if retention: which snapshots a policy would keep, and how many
//! objects and bytes expiring the others would free, recomputed on every
//! change of a policy field (the browser simulator's engine).
//!
//! Built once per table: for every snapshot, the set of objects under the
//! table location it references (its manifest list, its manifests, every
//! file their entries name, its statistics files), as a compressed bitmap of object
//! ids (`roaring`). A what-if is then the expiry rules over the parsed
//! metadata (the same rules as [`crate::plan_expiry`]) and one bitmap
//! union: the objects freed are those some snapshot references and no
//! retained snapshot does. Its cost grows with the snapshots, not the
//! files.
//!
//! This module never decides a deletion: its numbers are an estimate of
//! what an expiry followed by a sweep would free (objects outside the
//! location, metadata documents and orphans are not counted).
//!
//! ## Calling contract of a [`ReclaimBuilder`]
//!
//! ```text
//! ReclaimBuilder::start(metadata_uri, bytes)
//! while let Some(uri) = next_read()     a manifest list or a manifest
//!     handle_blob(uri, bytes) | handle_missing(uri)
//! finish(listing)                       the index; sizes from the listing
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use roaring::RoaringBitmap;
use serde::Serialize;

use crate::context::Context;
use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::expire::{decide, Expired, ExpiryRequest, Retained};
use crate::path::{CanonicalUri, TableLocation};
use crate::policy::Policy;
use crate::spec::iceberg::{for_each_manifest_entry, read_manifest_list, TableMetadata};

/// One object of a listing: its key relative to the table location, its
/// size in bytes and its last-modified time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizedKey {
    /// The key, relative to the table location.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Last modified, milliseconds since the epoch.
    pub last_modified_ms: i64,
}

/// Object ids: every key under the location named by the metadata gets
/// one, once (a table of a million files holds each key once, however many
/// snapshots read it).
#[derive(Debug, Clone, Default)]
struct Keys {
    ids: HashMap<String, u32>,
    keys: Vec<String>,
}

impl Keys {
    fn id(&mut self, rel: &str) -> Result<u32> {
        if let Some(&id) = self.ids.get(rel) {
            return Ok(id);
        }
        let id = u32::try_from(self.keys.len()).map_err(|_| {
            Error::unsupported("more than 4,294,967,295 objects in one what-if", rel)
        })?;
        self.keys.push(rel.to_owned());
        self.ids.insert(rel.to_owned(), id);
        Ok(id)
    }
}

/// Reads a table's manifest lists and manifests into a [`ReclaimIndex`].
#[derive(Debug, Clone)]
pub struct ReclaimBuilder {
    md: TableMetadata,
    location: TableLocation,
    /// Reads not yet handed out.
    queue: VecDeque<String>,
    /// Reads handed out or queued, not yet answered.
    pending: BTreeSet<String>,
    /// Every blob asked for, and whether it is a manifest list.
    asked: BTreeMap<String, bool>,
    keys: Keys,
    /// Per snapshot (metadata order): the objects it names directly (its
    /// manifest list, its manifests, its statistics files).
    direct: Vec<RoaringBitmap>,
    /// Per snapshot: the manifests it reads (canonical URIs).
    manifests: Vec<BTreeSet<String>>,
    /// Which snapshots read each manifest list.
    list_readers: BTreeMap<String, Vec<usize>>,
    /// Per manifest read: the objects its entries name.
    entries: BTreeMap<String, RoaringBitmap>,
}

impl ReclaimBuilder {
    /// Parses the metadata and queues every snapshot's manifest list (v1
    /// embedded manifests directly). Fails (malformed) on metadata that
    /// does not parse or a location that is not a URI.
    pub fn start(metadata_uri: &str, bytes: &[u8]) -> Result<ReclaimBuilder> {
        let md = TableMetadata::parse(metadata_uri, bytes)?;
        let location = TableLocation::parse(&md.location).map_err(|e| {
            Error::malformed(
                crate::error::MalformedReason::Path,
                metadata_uri,
                format!("location `{}`: {e}", md.location),
            )
        })?;
        let n = md.snapshots.len();
        let mut b = ReclaimBuilder {
            md,
            location,
            queue: VecDeque::new(),
            pending: BTreeSet::new(),
            asked: BTreeMap::new(),
            keys: Keys::default(),
            direct: vec![RoaringBitmap::new(); n],
            manifests: vec![BTreeSet::new(); n],
            list_readers: BTreeMap::new(),
            entries: BTreeMap::new(),
        };
        for i in 0..n {
            let s = b.md.snapshots[i].clone();
            if let Some(list) = &s.manifest_list {
                let uri = b.note(i, metadata_uri, list)?;
                b.list_readers.entry(uri.clone()).or_default().push(i);
                b.ask(uri, true);
            }
            for m in &s.manifests {
                let uri = b.note(i, metadata_uri, m)?;
                b.manifests[i].insert(uri.clone());
                b.ask(uri, false);
            }
        }
        let stats: Vec<(i64, String)> =
            b.md.statistics
                .iter()
                .chain(b.md.partition_statistics.iter())
                .cloned()
                .collect();
        for (id, path) in stats {
            if let Some(i) = b.md.snapshots.iter().position(|s| s.snapshot_id == id) {
                b.note(i, metadata_uri, &path)?;
            }
        }
        Ok(b)
    }

    /// The table location, canonical: the prefix every key the builder
    /// reads and every listing key must have (a host keys its files by it).
    pub fn location(&self) -> String {
        self.location.as_uri()
    }

    /// Records that snapshot `i` names `path` (an object id when it lies
    /// under the location); returns its canonical URI. Fails (malformed,
    /// path) on a path that is not a URI.
    fn note(&mut self, i: usize, blob: &str, path: &str) -> Result<String> {
        let c = CanonicalUri::parse(path).map_err(|e| {
            Error::malformed(
                crate::error::MalformedReason::Path,
                blob,
                format!("path `{path}`: {e}"),
            )
        })?;
        if let Some(rel) = self.location.relative(&c) {
            let id = self.keys.id(rel)?;
            self.direct[i].insert(id);
        }
        Ok(c.to_uri_string())
    }

    fn ask(&mut self, uri: String, is_list: bool) {
        if self.asked.insert(uri.clone(), is_list).is_none() {
            self.pending.insert(uri.clone());
            self.queue.push_back(uri);
        }
    }

    /// The next blob to read, if any. Manifest lists and manifests outside
    /// the location are asked for too: what they name counts.
    pub fn next_read(&mut self) -> Option<String> {
        self.queue.pop_front()
    }

    /// True once every read was answered.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Answers a read with the blob's bytes: a manifest list queues its
    /// manifests; a manifest gives the paths of its entries (DELETED ones
    /// too: a sweep keeps what a DELETED entry of a retained snapshot
    /// names, so it is not freed). Fails (malformed) on bytes that do not
    /// decode, (protocol) for a read never asked for.
    pub fn handle_blob(&mut self, uri: &str, bytes: &[u8]) -> Result<()> {
        if !self.pending.remove(uri) {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("{uri} was not asked for"),
            ));
        }
        if self.asked.get(uri) == Some(&true) {
            let readers = self.list_readers.get(uri).cloned().unwrap_or_default();
            for m in read_manifest_list(uri, bytes)? {
                let mut mu = String::new();
                for &i in &readers {
                    mu = self.note(i, uri, &m.path)?;
                    self.manifests[i].insert(mu.clone());
                }
                if !mu.is_empty() {
                    self.ask(mu, false);
                }
            }
        } else {
            let mut paths = Vec::new();
            for_each_manifest_entry(uri, bytes, |_status, _content, path| {
                paths.push(path.to_owned());
            })?;
            let mut ids = RoaringBitmap::new();
            for path in paths {
                let c = CanonicalUri::parse(&path).map_err(|e| {
                    Error::malformed(
                        crate::error::MalformedReason::Path,
                        uri,
                        format!("path `{path}`: {e}"),
                    )
                })?;
                if let Some(rel) = self.location.relative(&c) {
                    ids.insert(self.keys.id(rel)?);
                }
            }
            self.entries.insert(uri.to_owned(), ids);
        }
        Ok(())
    }

    /// Answers a read: the blob does not exist. The index cannot be exact
    /// without it: fails (unsafe, missing-metadata).
    pub fn handle_missing(&mut self, uri: &str) -> Result<()> {
        Err(Error::unsafe_(
            UnsafeReason::MissingMetadata,
            format!(
                "{uri} is named by the metadata but cannot be read (outside the folder, or gone)"
            ),
        ))
    }

    /// The index, with each object's size and time from `listing` (keys
    /// the listing does not hold count with size 0). Fails (protocol, out
    /// of order) before every read was answered.
    pub fn finish(self, listing: &[SizedKey]) -> Result<ReclaimIndex> {
        if !self.is_done() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the index is finished before every manifest was read",
            ));
        }
        let mut snapshots = Vec::with_capacity(self.direct.len());
        for (i, direct) in self.direct.into_iter().enumerate() {
            let mut b = direct;
            for m in &self.manifests[i] {
                if let Some(e) = self.entries.get(m) {
                    b |= e;
                }
            }
            snapshots.push(b);
        }
        let n = self.keys.keys.len();
        let mut sizes = vec![0u64; n];
        let mut times = vec![i64::MAX; n];
        let mut listed = RoaringBitmap::new();
        for o in listing {
            if let Some(&id) = self.keys.ids.get(&o.key) {
                sizes[id as usize] = o.size;
                times[id as usize] = o.last_modified_ms;
                listed.insert(id);
            }
        }
        Ok(ReclaimIndex::new(
            self.md,
            snapshots,
            self.keys.keys,
            sizes,
            times,
            listed,
        ))
    }
}

/// Per snapshot, the objects it references, as bitmaps of object ids; and
/// every object's size.
#[derive(Debug, Clone)]
pub struct ReclaimIndex {
    md: TableMetadata,
    /// Per snapshot (metadata order): the ids of the objects it references.
    snapshots: Vec<RoaringBitmap>,
    /// Every object some snapshot references, and their bytes.
    all: RoaringBitmap,
    all_bytes: u64,
    /// Object ids to keys (relative to the location).
    keys: Vec<String>,
    /// Object ids to sizes in bytes.
    sizes: Vec<u64>,
    /// Object ids to last-modified times (ms; unlisted: never old).
    times: Vec<i64>,
    /// Objects the listing holds.
    listed: RoaringBitmap,
}

/// What a retention choice keeps and frees.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// Snapshots that stay, with every reason (by id).
    pub retain: Vec<Retained>,
    /// Snapshots that expire, with why (by id).
    pub expired: Vec<Expired>,
    /// Refs the expiry removes.
    pub remove_refs: Vec<String>,
    /// What the operator should know (the policy's and the rules').
    pub warnings: Vec<String>,
    /// Objects referenced only by expiring snapshots.
    pub freed_objects: u64,
    /// Their bytes (as listed).
    pub freed_bytes: u64,
    /// Of those, objects older than the window at `now`: what the sweep
    /// after the expiry deletes at once (the rest, later).
    pub freed_now_objects: u64,
    /// Their bytes.
    pub freed_now_bytes: u64,
    /// Objects some snapshot references.
    pub referenced_objects: u64,
    /// Their bytes.
    pub referenced_bytes: u64,
}

/// What an expiry frees: objects and bytes, and those old enough for the
/// sweep's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Freed {
    /// Objects only expiring snapshots reference.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, the objects old enough to go at once.
    pub now_objects: u64,
    /// Their bytes.
    pub now_bytes: u64,
}

/// One point of a retention curve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurvePoint {
    /// The value the field was set to (`retainLast`: snapshots;
    /// `maxSnapshotAge`: milliseconds).
    pub value: i64,
    /// Snapshots retained.
    pub retained: u64,
    /// Bytes an expiry would free.
    pub freed_bytes: u64,
}

/// The policy field a curve varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurveField {
    /// `snapshotRetention.retainLast`, in snapshots.
    RetainLast,
    /// `snapshotRetention.maxSnapshotAge`, in milliseconds.
    MaxSnapshotAge,
}

impl ReclaimIndex {
    /// A synthetic table for measuring: `snapshots` fast appends on
    /// `main`, one hour apart up to `now_ms`, of `files / snapshots` files
    /// each (every snapshot references every file appended before it); one
    /// earlier file in `rewrite_every` is dropped by a later rewrite; sizes
    /// from 1 KiB to 1 MiB drawn from `seed`. Its table uuid is
    /// `00000000-0000-0000-0000-000000000000`.
    pub fn synthetic(
        snapshots: u32,
        files: u32,
        rewrite_every: u32,
        seed: u64,
        now_ms: i64,
    ) -> ReclaimIndex {
        use crate::spec::iceberg::{RefKind, Snapshot, SnapshotRef};
        let snapshots = snapshots.max(1);
        let per = (files / snapshots).max(1);
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let total = per * snapshots;
        let sizes: Vec<u64> = (0..total).map(|_| 1024 + next() % (1 << 20)).collect();
        let mut refs = Vec::with_capacity(snapshots as usize);
        let mut live = RoaringBitmap::new();
        let mut md_snapshots = Vec::with_capacity(snapshots as usize);
        for s in 0..snapshots {
            live.insert_range(s * per..(s + 1) * per);
            if rewrite_every > 0 && s > 0 {
                let victim = (next() % u64::from(s * per)) as u32;
                if victim % rewrite_every == 0 {
                    live.remove(victim);
                }
            }
            refs.push(live.clone());
            md_snapshots.push(Snapshot {
                snapshot_id: i64::from(s) + 1,
                parent_snapshot_id: (s > 0).then_some(i64::from(s)),
                timestamp_ms: now_ms - i64::from(snapshots - s) * 3_600_000,
                manifest_list: None,
                manifests: Vec::new(),
                totals: Default::default(),
            });
        }
        let head = i64::from(snapshots);
        let md = TableMetadata {
            format_version: 2,
            table_uuid: Some("00000000-0000-0000-0000-000000000000".into()),
            location: "file:///synthetic".into(),
            current_snapshot_id: Some(head),
            last_sequence_number: Some(head),
            snapshots: md_snapshots,
            refs: [(
                "main".to_owned(),
                SnapshotRef {
                    snapshot_id: head,
                    kind: RefKind::Branch,
                    min_snapshots_to_keep: None,
                    max_snapshot_age_ms: None,
                    max_ref_age_ms: None,
                },
            )]
            .into(),
            metadata_log: Vec::new(),
            statistics: Vec::new(),
            partition_statistics: Vec::new(),
            properties: BTreeMap::new(),
            partition_field_names: BTreeSet::new(),
        };
        let times = vec![now_ms - 30 * 86_400_000; sizes.len()];
        ReclaimIndex::new(md, refs, Vec::new(), sizes, times, (0..total).collect())
    }

    fn new(
        md: TableMetadata,
        snapshots: Vec<RoaringBitmap>,
        keys: Vec<String>,
        sizes: Vec<u64>,
        times: Vec<i64>,
        listed: RoaringBitmap,
    ) -> ReclaimIndex {
        let all = roaring::MultiOps::union(snapshots.iter());
        let all_bytes = all
            .iter()
            .fold(0u64, |a, id| a.saturating_add(sizes[id as usize]));
        ReclaimIndex {
            md,
            snapshots,
            all,
            all_bytes,
            keys,
            sizes,
            times,
            listed,
        }
    }

    /// The metadata-order positions of the snapshots `ids` names.
    fn positions(&self, ids: &[i64]) -> Vec<usize> {
        let ids: BTreeSet<i64> = ids.iter().copied().collect();
        self.md
            .snapshots
            .iter()
            .enumerate()
            .filter(|(_, s)| ids.contains(&s.snapshot_id))
            .map(|(i, _)| i)
            .collect()
    }

    /// Snapshots indexed.
    pub fn snapshot_count(&self) -> usize {
        self.snapshots.len()
    }

    /// Objects indexed.
    pub fn object_count(&self) -> usize {
        self.sizes.len()
    }

    /// What expiring every snapshot but `retained` (positions in metadata
    /// order) frees: the objects only the others reference, and of those
    /// the ones last modified at or before `old_at_ms` (old enough for the
    /// sweep's window).
    pub fn freed(&self, retained: &[usize], old_at_ms: i64) -> Freed {
        let kept = roaring::MultiOps::union(retained.iter().filter_map(|&i| self.snapshots.get(i)));
        let freed = &self.all - kept;
        let mut f = Freed::default();
        for id in &freed {
            let size = self.sizes[id as usize];
            f.objects += 1;
            f.bytes = f.bytes.saturating_add(size);
            if self.times[id as usize] <= old_at_ms {
                f.now_objects += 1;
                f.now_bytes = f.now_bytes.saturating_add(size);
            }
        }
        f
    }

    /// The expiry under `policy` and `context` at `now_ms` (the rules of
    /// [`crate::plan_expiry`]), and what it frees. Fails as
    /// [`crate::plan_expiry`] does (a policy for another table, an invalid
    /// policy, gc disabled).
    ///
    /// The objects freed at once are those older than the window a plan
    /// would use: the policy's `orphanSafetyInterval`, else 3 days
    /// (Iceberg's own).
    pub fn what_if(&self, policy: Option<Policy>, context: Context, now_ms: i64) -> Result<WhatIf> {
        let window = policy.as_ref().map_or(3 * 86_400_000, |p| {
            p.file_retention.orphan_safety_interval.0
        });
        let req = ExpiryRequest {
            metadata_location: String::new(),
            now_ms,
            policy,
            context,
            expire_ids: Vec::new(),
            dr_metadata: Vec::new(),
        };
        // `decide` refuses a table with gc disabled, as plan_expiry does.
        let d = decide(&req, &self.md)?;
        let kept: Vec<i64> = d.retain.iter().map(|r| r.snapshot_id).collect();
        let f = self.freed(&self.positions(&kept), now_ms.saturating_sub(window));
        Ok(WhatIf {
            retain: d.retain,
            expired: d.expired,
            remove_refs: d.remove_refs,
            warnings: d.warnings,
            freed_objects: f.objects,
            freed_bytes: f.bytes,
            freed_now_objects: f.now_objects,
            freed_now_bytes: f.now_bytes,
            referenced_objects: self.all.len(),
            referenced_bytes: self.all_bytes,
        })
    }

    /// The what-if at each of `values` of `field`, the rest of `policy`
    /// unchanged.
    pub fn curve(
        &self,
        policy: &Policy,
        context: &Context,
        now_ms: i64,
        field: CurveField,
        values: &[i64],
    ) -> Result<Vec<CurvePoint>> {
        let mut out = Vec::with_capacity(values.len());
        for &v in values {
            let mut p = policy.clone();
            match field {
                CurveField::RetainLast => {
                    p.snapshot_retention.retain_last =
                        Some(u32::try_from(v.max(1)).unwrap_or(u32::MAX))
                }
                CurveField::MaxSnapshotAge => {
                    p.snapshot_retention.max_snapshot_age =
                        Some(crate::duration::DurationMs(v.max(0)))
                }
            }
            let w = self.what_if(Some(p), context.clone(), now_ms)?;
            out.push(CurvePoint {
                value: v,
                retained: w.retain.len() as u64,
                freed_bytes: w.freed_bytes,
            });
        }
        Ok(out)
    }

    /// The keys of objects only expiring snapshots reference, for a
    /// what-if's retained snapshot ids (sorted; at most `limit`).
    pub fn freed_keys(&self, retained_ids: &[i64], limit: usize) -> Vec<(String, u64)> {
        let idx = self.positions(retained_ids);
        let kept = roaring::MultiOps::union(idx.iter().filter_map(|&i| self.snapshots.get(i)));
        let mut out: Vec<(String, u64)> = (&self.all - kept)
            .iter()
            .filter_map(|id| {
                self.keys
                    .get(id as usize)
                    .map(|k| (k.clone(), self.sizes[id as usize]))
            })
            .collect();
        out.sort();
        out.truncate(limit);
        out
    }

    /// The table's snapshots (metadata order) and refs, as JSON with ids
    /// as strings (a JavaScript number cannot hold a 64-bit id).
    pub fn table_json(&self) -> String {
        let md = &self.md;
        serde_json::json!({
            "tableUuid": md.table_uuid,
            "location": md.location,
            "currentSnapshotId": md.current_snapshot_id.map(|i| i.to_string()),
            "snapshots": md.snapshots.iter().map(|s| serde_json::json!({
                "snapshotId": s.snapshot_id.to_string(),
                "parentId": s.parent_snapshot_id.map(|i| i.to_string()),
                "timestampMs": s.timestamp_ms,
            })).collect::<Vec<_>>(),
            "refs": md.refs.iter().map(|(name, r)| serde_json::json!({
                "name": name,
                "snapshotId": r.snapshot_id.to_string(),
                "kind": match r.kind {
                    crate::spec::iceberg::RefKind::Branch => "branch",
                    crate::spec::iceberg::RefKind::Tag => "tag",
                },
            })).collect::<Vec<_>>(),
        })
        .to_string()
    }

    /// Referenced objects the listing does not hold.
    pub fn unlisted(&self) -> u64 {
        self.all.difference_len(&self.listed)
    }
}

/// A what-if as JSON with snapshot ids as strings (see
/// [`ReclaimIndex::table_json`]).
pub fn what_if_json(w: &WhatIf) -> String {
    serde_json::json!({
        "retain": w.retain.iter().map(|r| serde_json::json!({
            "snapshotId": r.snapshot_id.to_string(), "reasons": r.reasons,
        })).collect::<Vec<_>>(),
        "expired": w.expired.iter().map(|e| serde_json::json!({
            "snapshotId": e.snapshot_id.to_string(), "why": e.why,
        })).collect::<Vec<_>>(),
        "removeRefs": w.remove_refs,
        "warnings": w.warnings,
        "freedObjects": w.freed_objects,
        "freedBytes": w.freed_bytes,
        "freedNowObjects": w.freed_now_objects,
        "freedNowBytes": w.freed_now_bytes,
        "referencedObjects": w.referenced_objects,
        "referencedBytes": w.referenced_bytes,
    })
    .to_string()
}
