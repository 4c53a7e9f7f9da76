//! Sealed metadata bundles: the quarantine of an Iceberg snapshot before an
//! expiry removes its metadata chain, its restore verification, and the
//! metadata document that restores it.
//!
//! A bundle records, for the snapshots an expiry removes, the metadata
//! document that still lists them, their manifest lists and manifests (as
//! byte copies with SHA-256 digests, stored by the host next to the ledger)
//! and the exact version (size, ETag, version id) of every file they name:
//! enough to bootstrap the snapshots again. Verification walks metadata ->
//! manifest list -> manifests -> files from the copies and has every file
//! confirmed by the store; only a complete walk counts, so a bundle missing
//! one layer keeps its objects in quarantine.
//!
//! Every function is pure and stateless: the host calls [`chain`] again with
//! every blob fetched so far until it reports nothing more is wanted.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::error::{Error, Result};
use crate::error::{MalformedReason, ProtocolReason};
use crate::path::{apply_mappings, CanonicalUri, PathMapping, TableLocation};
use crate::spec::iceberg::{self, TableMetadata};
use crate::version::ObjectVersion;

/// Schema name of bundle documents.
pub const BUNDLE_SCHEMA: &str = "lakesweep.bundle.v2";

/// Schema name of the snake_case bundles lakesweep 0.1 sealed: still read
/// (their root covers the entries, whatever the key spelling) and carried
/// on as [`BUNDLE_SCHEMA`].
const BUNDLE_V1: &str = "lakesweep.bundle.v1";

/// Which layer of the chain an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// The metadata document that lists the snapshots.
    Metadata,
    /// A snapshot's manifest list.
    ManifestList,
    /// A manifest.
    Manifest,
    /// A data or delete file a manifest names.
    Content,
}

/// One object of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleEntry {
    /// Key relative to the table location.
    pub key: String,
    /// Its layer.
    pub layer: Layer,
    /// The version the store reported when the bundle was sealed.
    pub version: ObjectVersion,
    /// SHA-256 of the copy kept in the bundle (metadata, lists, manifests).
    pub sha256: Option<String>,
}

/// A sealed bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// Always [`BUNDLE_SCHEMA`].
    pub schema: String,
    /// Canonical table location.
    #[serde(alias = "table_location")]
    pub table_location: String,
    /// The table's UUID.
    #[serde(alias = "table_uuid")]
    pub table_uuid: Option<String>,
    /// The quarantine candidate id (names the bundle and the quarantine).
    #[serde(alias = "candidate_id")]
    pub candidate_id: String,
    /// The snapshots it can restore.
    #[serde(alias = "snapshot_ids")]
    pub snapshot_ids: Vec<i64>,
    /// Key of the metadata document (relative to the table).
    #[serde(alias = "metadata_key")]
    pub metadata_key: String,
    /// When it was sealed, ms since the epoch.
    #[serde(alias = "created_ms")]
    pub created_ms: i64,
    /// Every object, sorted by key.
    pub entries: Vec<BundleEntry>,
    /// SHA-256 over the entries (an edited bundle is refused on load).
    pub root: String,
}

/// What [`chain`] found so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chain {
    /// Keys (relative) still to be read: lists and manifests.
    pub wanted: Vec<String>,
    /// Every key of the chain found so far, with its layer.
    pub layers: BTreeMap<String, Layer>,
    /// True once nothing more is wanted.
    pub done: bool,
}

fn rel_of(loc: &TableLocation, maps: &[PathMapping], raw: &str, blob: &str) -> Result<String> {
    let c = CanonicalUri::parse(&apply_mappings(raw, maps))
        .map_err(|e| Error::malformed(MalformedReason::Path, blob, format!("path `{raw}`: {e}")))?;
    loc.relative(&c).map(str::to_owned).ok_or_else(|| {
        Error::unsupported(
            format!("a bundle of files outside the table (`{raw}`)"),
            blob,
        )
    })
}

/// Walks the chain of `snapshot_ids` in `metadata` using `blobs` (relative
/// key -> bytes) read so far. Content files of DELETED entries are included
/// (changelog readers of a restored snapshot read them).
pub fn chain(
    table_location: &str,
    mappings: &[PathMapping],
    metadata_uri: &str,
    metadata: &[u8],
    snapshot_ids: &[i64],
    blobs: &BTreeMap<String, Vec<u8>>,
) -> Result<Chain> {
    let loc =
        TableLocation::parse(table_location).map_err(|e| Error::invalid("table_location", e))?;
    let md = TableMetadata::parse(metadata_uri, metadata)?;
    let mut out = Chain::default();
    let mut lists = Vec::new();
    let mut v1_manifests = Vec::new();
    for id in snapshot_ids {
        let Some(s) = md.snapshots.iter().find(|s| s.snapshot_id == *id) else {
            return Err(Error::invalid(
                "snapshot_ids",
                format!("snapshot {id} is not in `{metadata_uri}`"),
            ));
        };
        if let Some(l) = &s.manifest_list {
            lists.push(rel_of(&loc, mappings, l, metadata_uri)?);
        }
        for m in &s.manifests {
            v1_manifests.push(rel_of(&loc, mappings, m, metadata_uri)?);
        }
    }
    // Statistics of the snapshots come back with them.
    for (id, p) in md.statistics.iter().chain(&md.partition_statistics) {
        if snapshot_ids.contains(id) {
            out.layers
                .insert(rel_of(&loc, mappings, p, metadata_uri)?, Layer::Content);
        }
    }
    let mut manifests = v1_manifests;
    for l in lists {
        out.layers.insert(l.clone(), Layer::ManifestList);
        match blobs.get(&l) {
            None => out.wanted.push(l),
            Some(b) => {
                for m in iceberg::read_manifest_list(&l, b)? {
                    manifests.push(rel_of(&loc, mappings, &m.path, &l)?);
                }
            }
        }
    }
    for m in manifests {
        out.layers.insert(m.clone(), Layer::Manifest);
        match blobs.get(&m) {
            None => out.wanted.push(m),
            Some(b) => {
                let mut paths = Vec::new();
                iceberg::for_each_manifest_entry(&m, b, |_, _, p| paths.push(p.to_owned()))?;
                for p in paths {
                    let k = rel_of(&loc, mappings, &p, &m)?;
                    out.layers.entry(k).or_insert(Layer::Content);
                }
            }
        }
    }
    out.wanted.sort();
    out.wanted.dedup();
    out.done = out.wanted.is_empty();
    Ok(out)
}

fn root_of(entries: &[BundleEntry]) -> String {
    let mut h = Sha256::new();
    for e in entries {
        h.update(
            format!(
                "{}\t{:?}\t{}\t{}\t{}\t{}\t{}\n",
                e.key,
                e.layer,
                e.version.size,
                e.version.last_modified_ms,
                e.version.etag.as_deref().unwrap_or(""),
                e.version.version_id.as_deref().unwrap_or(""),
                e.sha256.as_deref().unwrap_or("")
            )
            .as_bytes(),
        );
    }
    hex(&h.finalize())
}

/// What [`seal`] needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealRequest {
    /// Table location.
    pub table_location: String,
    /// Path mappings (as when planning).
    #[serde(default)]
    pub mappings: Vec<PathMapping>,
    /// URI of the metadata document that lists the snapshots.
    pub metadata_uri: String,
    /// The snapshots to bundle.
    pub snapshot_ids: Vec<i64>,
    /// Candidate id (names the quarantine).
    pub candidate_id: String,
    /// Sealing time, ms since the epoch.
    pub now_ms: i64,
    /// HEAD answers for every key of the chain and the metadata key.
    pub heads: BTreeMap<String, Option<ObjectVersion>>,
}

/// Seals a bundle: the chain must be complete (`blobs` holds every list and
/// manifest) and every object must exist, or nothing is sealed.
pub fn seal(
    req: &SealRequest,
    metadata: &[u8],
    blobs: &BTreeMap<String, Vec<u8>>,
) -> Result<Bundle> {
    let loc = TableLocation::parse(&req.table_location)
        .map_err(|e| Error::invalid("table_location", e))?;
    let c = chain(
        &req.table_location,
        &req.mappings,
        &req.metadata_uri,
        metadata,
        &req.snapshot_ids,
        blobs,
    )?;
    if !c.done {
        return Err(Error::protocol(
            ProtocolReason::OutOfOrder,
            format!(
                "bundle chain incomplete: {} blobs still wanted",
                c.wanted.len()
            ),
        ));
    }
    let md = TableMetadata::parse(&req.metadata_uri, metadata)?;
    let metadata_key = rel_of(&loc, &req.mappings, &req.metadata_uri, &req.metadata_uri)?;
    let mut layers = c.layers;
    layers.insert(metadata_key.clone(), Layer::Metadata);
    let mut entries = Vec::new();
    for (key, layer) in layers {
        let Some(Some(version)) = req.heads.get(&key).cloned() else {
            return Err(Error::unsafe_(
                crate::UnsafeReason::MissingMetadata,
                format!("`{key}` ({layer:?}) does not exist: the snapshot cannot be bundled, so it must not be expired"),
            ));
        };
        let sha256 = match layer {
            Layer::Metadata => Some(hex(&Sha256::digest(metadata))),
            Layer::ManifestList | Layer::Manifest => {
                blobs.get(&key).map(|b| hex(&Sha256::digest(b)))
            }
            Layer::Content => None,
        };
        entries.push(BundleEntry {
            key,
            layer,
            version,
            sha256,
        });
    }
    let root = root_of(&entries);
    Ok(Bundle {
        schema: BUNDLE_SCHEMA.into(),
        table_location: loc.as_uri(),
        table_uuid: md.table_uuid.clone(),
        candidate_id: req.candidate_id.clone(),
        snapshot_ids: req.snapshot_ids.clone(),
        metadata_key,
        created_ms: req.now_ms,
        entries,
        root,
    })
}

impl Bundle {
    /// The stored document (canonical JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a bundle; a damaged one (root mismatch) or an unknown schema is refused.
    pub fn parse(text: &str) -> Result<Bundle> {
        let mut b: Bundle = serde_json::from_str(text)
            .map_err(|e| Error::invalid("bundle", format!("not a bundle: {e}")))?;
        if b.schema == BUNDLE_V1 {
            b.schema = BUNDLE_SCHEMA.into();
        }
        if b.schema != BUNDLE_SCHEMA {
            return Err(Error::invalid(
                "bundle",
                format!("unknown bundle schema `{}`", b.schema),
            ));
        }
        if root_of(&b.entries) != b.root {
            return Err(Error::invalid(
                "bundle",
                "the root does not match the entries (edited or damaged)",
            ));
        }
        Ok(b)
    }

    /// Keys whose byte copies the bundle keeps.
    pub fn copies(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.sha256.is_some())
            .map(|e| e.key.clone())
            .collect()
    }
}

/// The outcome of a restore verification.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// True only when the walk was complete and every object confirmed.
    pub complete: bool,
    /// What is wrong, one line each.
    pub problems: Vec<String>,
    /// Every content key the walk reached.
    pub content: Vec<String>,
    /// Metadata layers (manifest lists, manifests) the store no longer
    /// holds: a restore writes the bundle's verified copy back at that key.
    #[serde(default)]
    pub put_back: Vec<String>,
}

/// Walks the bundle from its copies (metadata -> lists -> manifests ->
/// files) and checks every object against `heads` (the store's HEAD answers
/// now, for every entry): a content file must still be the pinned version;
/// a manifest list or manifest must be the pinned version or gone (then its
/// verified copy is put back). One the store holds in another version was
/// rewritten: restoring would read another snapshot's data, so the bundle
/// is incomplete and says which key. `copies` are the bytes the host read
/// from the bundle.
pub fn verify(
    bundle: &Bundle,
    mappings: &[PathMapping],
    copies: &BTreeMap<String, Vec<u8>>,
    heads: &BTreeMap<String, Option<ObjectVersion>>,
) -> Verification {
    let mut v = Verification::default();
    let entries: BTreeMap<&str, &BundleEntry> =
        bundle.entries.iter().map(|e| (e.key.as_str(), e)).collect();
    let good_copy = |k: &str| -> std::result::Result<&Vec<u8>, String> {
        let e = entries
            .get(k)
            .ok_or_else(|| format!("missing layer: `{k}` is not in the bundle"))?;
        let b = copies
            .get(k)
            .ok_or_else(|| format!("missing layer: the copy of `{k}` is gone"))?;
        if e.sha256.as_deref() != Some(hex(&Sha256::digest(b)).as_str()) {
            return Err(format!("the copy of `{k}` does not match its digest"));
        }
        Ok(b)
    };
    let md = match good_copy(&bundle.metadata_key) {
        Ok(b) => b.clone(),
        Err(p) => {
            v.problems.push(p);
            return v;
        }
    };
    let md_uri = format!("{}/{}", bundle.table_location, bundle.metadata_key);
    // Walk with only verified copies: anything missing stays wanted.
    let mut have = BTreeMap::new();
    for _ in 0..3 {
        let c = match chain(
            &bundle.table_location,
            mappings,
            &md_uri,
            &md,
            &bundle.snapshot_ids,
            &have,
        ) {
            Ok(c) => c,
            Err(e) => {
                v.problems.push(format!("walk failed: {e}"));
                return v;
            }
        };
        if c.done {
            for (k, layer) in &c.layers {
                if *layer != Layer::Content {
                    continue;
                }
                v.content.push(k.clone());
                match (entries.get(k.as_str()), heads.get(k)) {
                    (None, _) => v.problems.push(format!(
                        "`{k}` is named by a manifest but not recorded in the bundle"
                    )),
                    (Some(e), Some(Some(seen))) if e.version.matches(seen) => {}
                    (Some(_), Some(Some(_))) => v.problems.push(format!(
                        "`{k}` changed since it was bundled: not the version to restore"
                    )),
                    (Some(_), _) => v.problems.push(format!(
                        "`{k}` is gone from the store: the snapshot cannot be restored"
                    )),
                }
            }
            for e in &bundle.entries {
                if e.sha256.is_none() || e.key == bundle.metadata_key {
                    continue;
                }
                match heads.get(&e.key) {
                    Some(None) => v.put_back.push(e.key.clone()),
                    Some(Some(seen)) if e.version.matches(seen) => {}
                    Some(Some(_)) => v.problems.push(format!(
                        "`{}` was rewritten since it was bundled (the store holds another object at that key): restoring would read other data; put the bundle's copy back by hand or restore from a versioned bucket",
                        e.key
                    )),
                    None => v.problems.push(format!(
                        "`{}` was not checked against the store",
                        e.key
                    )),
                }
            }
            v.complete = v.problems.is_empty();
            return v;
        }
        let mut progressed = false;
        for k in c.wanted {
            match good_copy(&k) {
                Ok(b) => {
                    progressed |= have.insert(k, b.clone()).is_none();
                }
                Err(p) => v.problems.push(p),
            }
        }
        if !v.problems.is_empty() || !progressed {
            return v;
        }
    }
    v.problems
        .push("the chain did not finish in three layers".into());
    v
}

/// A metadata document that restores the bundle's snapshots into `current`:
/// their snapshot entries come back, each tagged `restored/<id>` so no
/// expiry removes it again before someone decides, with a new
/// `last-updated-ms` and the old document in `metadata-log`.
pub fn restore_metadata(
    current_uri: &str,
    current: &[u8],
    bundle: &Bundle,
    bundle_metadata: &[u8],
    now_ms: i64,
) -> Result<Vec<u8>> {
    let cur_md = TableMetadata::parse(current_uri, current)?;
    if cur_md.table_uuid != bundle.table_uuid {
        return Err(Error::invalid("bundle", "the bundle is of another table"));
    }
    let mut cur: serde_json::Value = serde_json::from_slice(current)
        .map_err(|e| Error::malformed(MalformedReason::Encoding, current_uri, e.to_string()))?;
    let old: serde_json::Value = serde_json::from_slice(bundle_metadata).map_err(|e| {
        Error::malformed(
            MalformedReason::Encoding,
            &bundle.metadata_key,
            e.to_string(),
        )
    })?;
    let have: BTreeSet<i64> = cur_md.snapshots.iter().map(|s| s.snapshot_id).collect();
    // The snapshots' schemas must still exist in the current document
    // (expiry never removes schemas, but another engine might have).
    let schema_ids: BTreeSet<i64> = cur["schemas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["schema-id"].as_i64())
        .collect();
    let mut snaps = cur["snapshots"].as_array().cloned().unwrap_or_default();
    for id in &bundle.snapshot_ids {
        if have.contains(id) {
            continue;
        }
        let s = old["snapshots"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["snapshot-id"].as_i64() == Some(*id)))
            .ok_or_else(|| {
                Error::malformed(
                    MalformedReason::Inconsistent,
                    &bundle.metadata_key,
                    format!("snapshot {id} is not in the bundled metadata"),
                )
            })?;
        if let Some(sid) = s["schema-id"].as_i64() {
            if !schema_ids.is_empty() && !schema_ids.contains(&sid) {
                return Err(Error::unsupported(
                    format!("restoring snapshot {id}: its schema {sid} is gone from the current metadata"),
                    current_uri,
                ));
            }
        }
        snaps.push(s.clone());
        cur["refs"][format!("restored/{id}")] =
            serde_json::json!({"snapshot-id": id, "type": "tag"});
    }
    cur["snapshots"] = serde_json::Value::Array(snaps);
    let prev_updated = cur["last-updated-ms"].clone();
    // Never backwards (readers reject a metadata log going back in time).
    cur["last-updated-ms"] = prev_updated.as_i64().unwrap_or(0).max(now_ms).into();
    let mut log = cur["metadata-log"].as_array().cloned().unwrap_or_default();
    log.push(serde_json::json!({"metadata-file": current_uri, "timestamp-ms": prev_updated}));
    cur["metadata-log"] = serde_json::Value::Array(log);
    let out = serde_json::to_vec_pretty(&cur)
        .map_err(|e| Error::protocol(ProtocolReason::BadInput, e.to_string()))?;
    // What we write must read back as valid metadata.
    TableMetadata::parse(current_uri, &out)?;
    Ok(out)
}

/// The candidate ids of `bundles` (stored documents), newest sealed first
/// (ties: the greater id first): the order in which `restore --newest`
/// tries them, restoring the first that verifies. Fails for a document
/// that does not load (an edited or damaged bundle names no time to
/// order by).
pub fn newest_first(bundles: &[String]) -> Result<Vec<String>> {
    let mut loaded = bundles
        .iter()
        .map(|b| Bundle::parse(b))
        .collect::<Result<Vec<Bundle>>>()?;
    loaded.sort_by(|a, b| {
        b.created_ms
            .cmp(&a.created_ms)
            .then_with(|| b.candidate_id.cmp(&a.candidate_id))
    });
    Ok(loaded.into_iter().map(|b| b.candidate_id).collect())
}
