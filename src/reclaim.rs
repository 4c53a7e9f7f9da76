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

/// One object of a listing: its key relative to the table location and
/// its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizedKey {
    /// The key, relative to the table location.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
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
    /// Every blob read or asked for.
    asked: BTreeSet<String>,
    /// Per snapshot (metadata order): the keys it references so far.
    per_snapshot: Vec<BTreeSet<String>>,
    /// Which snapshots read each manifest list / manifest.
    readers: BTreeMap<String, Vec<usize>>,
    /// Every path a manifest's entries name, once read.
    manifest_keys: BTreeMap<String, Vec<String>>,
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
        let mut b = ReclaimBuilder {
            per_snapshot: vec![BTreeSet::new(); md.snapshots.len()],
            md,
            location,
            queue: VecDeque::new(),
            pending: BTreeSet::new(),
            asked: BTreeSet::new(),
            readers: BTreeMap::new(),
            manifest_keys: BTreeMap::new(),
        };
        for i in 0..b.md.snapshots.len() {
            let s = b.md.snapshots[i].clone();
            if let Some(list) = &s.manifest_list {
                if let Some(uri) = b.note(i, list) {
                    b.ask(uri, i);
                }
            }
            for m in &s.manifests {
                if let Some(uri) = b.note(i, m) {
                    b.ask(uri, i);
                }
            }
        }
        for (id, path) in
            b.md.statistics
                .clone()
                .iter()
                .chain(b.md.partition_statistics.clone().iter())
        {
            if let Some(i) = b.md.snapshots.iter().position(|s| s.snapshot_id == *id) {
                b.note(i, path);
            }
        }
        Ok(b)
    }

    /// Records that snapshot `i` references `path`; returns the canonical
    /// URI to read when the path lies under the location.
    fn note(&mut self, i: usize, path: &str) -> Option<String> {
        let c = CanonicalUri::parse(path).ok()?;
        let rel = self.location.relative(&c)?.to_owned();
        self.per_snapshot[i].insert(rel);
        Some(c.to_uri_string())
    }

    fn ask(&mut self, uri: String, reader: usize) {
        self.readers.entry(uri.clone()).or_default().push(reader);
        if self.asked.insert(uri.clone()) {
            self.pending.insert(uri.clone());
            self.queue.push_back(uri);
        }
    }

    /// The next blob to read, if any.
    pub fn next_read(&mut self) -> Option<String> {
        self.queue.pop_front()
    }

    /// True once every read was answered.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty()
    }

    /// Answers a read with the blob's bytes: a manifest list queues its
    /// manifests; a manifest gives the paths of its entries. Fails (malformed) on
    /// bytes that do not decode, (protocol) for a read never asked for.
    pub fn handle_blob(&mut self, uri: &str, bytes: &[u8]) -> Result<()> {
        if !self.pending.remove(uri) {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("{uri} was not asked for"),
            ));
        }
        let readers = self.readers.get(uri).cloned().unwrap_or_default();
        let is_list = readers.iter().any(|&i| {
            self.md.snapshots[i]
                .manifest_list
                .as_deref()
                .is_some_and(|l| CanonicalUri::parse(l).is_ok_and(|c| c.to_uri_string() == uri))
        });
        if is_list {
            for m in read_manifest_list(uri, bytes)? {
                for &i in &readers {
                    if let Some(mu) = self.note(i, &m.path) {
                        self.ask(mu, i);
                    }
                }
            }
        } else {
            // Every entry, DELETED ones too: a sweep keeps what a DELETED
            // entry of a retained snapshot names (a reader at that
            // snapshot's parent may still need it), so it is not freed.
            let mut keys = Vec::new();
            for_each_manifest_entry(uri, bytes, |_status, _content, path| {
                keys.push(path.to_owned());
            })?;
            self.manifest_keys.insert(uri.to_owned(), keys);
        }
        Ok(())
    }

    /// Answers a read: the blob does not exist. The index cannot be exact
    /// without it: fails (unsafe, missing-metadata).
    pub fn handle_missing(&mut self, uri: &str) -> Result<()> {
        Err(Error::unsafe_(
            UnsafeReason::MissingMetadata,
            format!("{uri} is named by the metadata but does not exist"),
        ))
    }

    /// The index, with object sizes from `listing` (keys the listing does
    /// not hold count with size 0). Fails (protocol, out of order) before
    /// every read was answered.
    pub fn finish(mut self, listing: &[SizedKey]) -> Result<ReclaimIndex> {
        if !self.is_done() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the index is finished before every manifest was read",
            ));
        }
        // Each manifest's entries go to every snapshot that reads it.
        let mut entries: Vec<(usize, String)> = Vec::new();
        for (uri, keys) in &self.manifest_keys {
            for &i in self.readers.get(uri).into_iter().flatten() {
                for k in keys {
                    entries.push((i, k.clone()));
                }
            }
        }
        for (i, k) in entries {
            self.note(i, &k);
        }
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut keys: Vec<String> = Vec::new();
        let mut id_of = |k: &str| -> u32 {
            if let Some(&id) = ids.get(k) {
                return id;
            }
            let id = keys.len() as u32;
            keys.push(k.to_owned());
            ids.insert(k.to_owned(), id);
            id
        };
        let mut refs = Vec::with_capacity(self.per_snapshot.len());
        for set in &self.per_snapshot {
            refs.push(set.iter().map(|k| id_of(k)).collect::<RoaringBitmap>());
        }
        let mut sizes = vec![0u64; keys.len()];
        let mut listed = RoaringBitmap::new();
        for o in listing {
            if let Some(&id) = ids.get(&o.key) {
                sizes[id as usize] = o.size;
                listed.insert(id);
            }
        }
        Ok(ReclaimIndex {
            md: self.md,
            snapshots: refs,
            keys,
            sizes,
            listed,
        })
    }
}

/// Per snapshot, the objects it references, as bitmaps of object ids; and
/// every object's size.
#[derive(Debug, Clone)]
pub struct ReclaimIndex {
    md: TableMetadata,
    /// Per snapshot (metadata order): the ids of the objects it references.
    snapshots: Vec<RoaringBitmap>,
    /// Object ids to keys (relative to the location).
    keys: Vec<String>,
    /// Object ids to sizes in bytes.
    sizes: Vec<u64>,
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
    /// Objects some snapshot references.
    pub referenced_objects: u64,
    /// Their bytes.
    pub referenced_bytes: u64,
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
        ReclaimIndex {
            md,
            snapshots: refs,
            keys: Vec::new(),
            sizes,
            listed: (0..total).collect(),
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

    /// Objects and bytes referenced only by snapshots not in `retained`
    /// (indexes in metadata order).
    pub fn freed(&self, retained: &[usize]) -> (u64, u64) {
        let kept = roaring::MultiOps::union(retained.iter().filter_map(|&i| self.snapshots.get(i)));
        let all = roaring::MultiOps::union(self.snapshots.iter());
        let freed = all - kept;
        let bytes = freed.iter().map(|id| self.sizes[id as usize]).sum();
        (freed.len(), bytes)
    }

    fn totals(&self) -> (u64, u64) {
        let all = roaring::MultiOps::union(self.snapshots.iter());
        let bytes = all.iter().map(|id| self.sizes[id as usize]).sum();
        (all.len(), bytes)
    }

    /// The expiry under `policy` and `context` at `now_ms` (the rules of
    /// [`crate::plan_expiry`]), and what it frees. Fails as
    /// [`crate::plan_expiry`] does (a policy for another table, an invalid
    /// policy, gc disabled).
    pub fn what_if(&self, policy: Option<Policy>, context: Context, now_ms: i64) -> Result<WhatIf> {
        let req = ExpiryRequest {
            metadata_location: String::new(),
            now_ms,
            policy,
            context,
            expire_ids: Vec::new(),
            dr_metadata: Vec::new(),
        };
        if !self.md.gc_enabled() {
            return Err(Error::unsafe_(
                UnsafeReason::GcDisabled,
                "table property gc.enabled=false forbids snapshot expiry",
            ));
        }
        let d = decide(&req, &self.md)?;
        let kept: Vec<i64> = d.retain.iter().map(|r| r.snapshot_id).collect();
        let (freed_objects, freed_bytes) = self.freed(&self.positions(&kept));
        let (referenced_objects, referenced_bytes) = self.totals();
        Ok(WhatIf {
            retain: d.retain,
            expired: d.expired,
            remove_refs: d.remove_refs,
            warnings: d.warnings,
            freed_objects,
            freed_bytes,
            referenced_objects,
            referenced_bytes,
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
        let all = roaring::MultiOps::union(self.snapshots.iter());
        let mut out: Vec<(String, u64)> = (all - kept)
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
        roaring::MultiOps::union(self.snapshots.iter()).difference_len(&self.listed)
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
        "referencedObjects": w.referenced_objects,
        "referencedBytes": w.referenced_bytes,
    })
    .to_string()
}
