//! A full restore of a quarantine bundle into a scratch location: the
//! quarterly drill that proves a table can come back, without touching it.
//!
//! The bundle is verified first (every layer against its copy, every
//! content file against its pinned version, as `restore` verifies it).
//! Then every object of its chain gets a place under the scratch location
//! at the same relative key: the metadata document rewritten (its
//! location, its snapshots reduced to the bundle's, the newest of them
//! current, each manifest list renamed), the manifest lists and manifests
//! rewritten (their `manifest_path`, `file_path` and `referenced_data_file`
//! renamed), the content files copied as they are (those of another write
//! root under `_elsewhere/`). A reader of the scratch table reads nothing
//! of the table's, and dropping it (even with its files) touches nothing
//! of the table's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bundle::{verify, Bundle, Layer};
use crate::codec::avro::{rewrite, Rename};
use crate::error::{Error, MalformedReason, Result, UnsafeReason};
use crate::path::{apply_mappings, CanonicalUri, PathMapping, TableLocation};
use crate::spec::iceberg::TableMetadata;
use crate::version::ObjectVersion;

/// The key of the restored table's metadata document, relative to the
/// scratch location; `metadata/version-hint.text` names it.
pub const SCRATCH_METADATA: &str = "metadata/v1.metadata.json";

/// One object of the scratch table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScratchFile {
    /// Its key relative to the scratch location: the same as in the table,
    /// or `_elsewhere/<scheme>/<authority><path>` for a file of another
    /// write root.
    pub key: String,
    /// Its bytes; none: a copy of the object at `from`, as it is (a
    /// content file, its version verified).
    pub bytes: Option<Vec<u8>>,
    /// For a copy: the URI it is copied from.
    pub from: Option<String>,
}

/// What a scratch restore writes, and what it reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScratchRestore {
    /// Every object to write, the metadata document and its hint last.
    pub files: Vec<ScratchFile>,
    /// The restored metadata document's URI.
    pub metadata_uri: String,
    /// The restored table's current snapshot: the bundle's newest (or the
    /// one asked for).
    pub snapshot_id: i64,
    /// Its timestamp: the recovery point the restore reaches, ms since the
    /// epoch.
    pub recovery_point_ms: i64,
    /// Paths renamed into the scratch location.
    pub renamed: u64,
    /// Content files of another write root, copied under `_elsewhere/`.
    pub elsewhere: u64,
}

/// Plans the restore of `bundle_text` into `scratch` (an empty location
/// that is neither the table's nor inside it, nor holds it), from the
/// bundle's `copies` and the store's `heads` now (as `restore` reads
/// them). `snapshot`: the snapshot to make current (one of the bundle's);
/// none: the newest. Fails when the bundle would not restore, names no
/// such snapshot, or the scratch location overlaps the table.
pub fn scratch_restore(
    bundle_text: &str,
    mappings: &[PathMapping],
    copies: &BTreeMap<String, Vec<u8>>,
    heads: &BTreeMap<String, Option<ObjectVersion>>,
    scratch: &str,
    snapshot: Option<i64>,
    now_ms: i64,
) -> Result<ScratchRestore> {
    let bundle = Bundle::parse(bundle_text)?;
    let v = verify(&bundle, mappings, copies, heads);
    if !v.complete {
        return Err(Error::invalid(
            "bundle",
            format!(
                "bundle {} would not restore: {}",
                bundle.candidate_id,
                v.problems.join("; ")
            ),
        ));
    }
    let table =
        TableLocation::parse(&bundle.table_location).map_err(|e| Error::invalid("table", e))?;
    let target = TableLocation::parse(scratch).map_err(|e| Error::invalid("scratch", e))?;
    let (t, s) = (table.as_uri(), target.as_uri());
    if !crate::path::overlapping_locations(&[t.clone(), s.clone()]).is_empty() {
        return Err(Error::unsafe_(
            UnsafeReason::SharedLocation,
            format!("the scratch location {s} and the table {t} overlap: a drill never writes into the table"),
        ));
    }
    // Nothing of another write root may lie under the scratch location
    // either: the drill writes there.
    for e in bundle.entries.iter().filter(|e| e.key.contains("://")) {
        if CanonicalUri::parse(&e.key)
            .ok()
            .is_some_and(|u| target.relative(&u).is_some())
        {
            return Err(Error::unsafe_(
                UnsafeReason::SharedLocation,
                format!("{} of the table lies under the scratch location {s}: a drill never writes over the table's files", e.key),
            ));
        }
    }
    // A path of the table, as the key it names (any spelling, mapped).
    let key_of = |p: &str| -> Option<String> {
        let mapped = apply_mappings(p, mappings);
        let spelled = match mapped.strip_prefix("file:") {
            Some(rest) if !rest.starts_with("//") => format!("file://{rest}"),
            _ => mapped,
        };
        let u = CanonicalUri::parse(&spelled).ok()?;
        table.relative(&u).map(str::to_owned)
    };
    // Where a path of the table (or of another of its roots) goes.
    let place = |p: &str| -> Option<String> {
        key_of(p).or_else(|| {
            let u = CanonicalUri::parse(&apply_mappings(p, mappings)).ok()?;
            Some(format!("_elsewhere/{}/{}{}", u.scheme, u.authority, u.path))
        })
    };
    let rename = |p: &str| -> Option<String> { place(p).map(|k| format!("{s}/{k}")) };
    let mut files = Vec::new();
    let mut renamed = 0u64;
    let mut elsewhere = 0u64;
    // Manifests first: a manifest list records each manifest's length.
    let mut lengths: BTreeMap<String, i64> = BTreeMap::new();
    let mut lists = Vec::new();
    for e in &bundle.entries {
        match e.layer {
            Layer::Metadata => continue,
            Layer::Content => {
                let (key, from) = if e.key.contains("://") {
                    elsewhere += 1;
                    let key = place(&e.key).ok_or_else(|| {
                        Error::invalid("bundle", format!("`{}` is not a URI", e.key))
                    })?;
                    (key, e.key.clone())
                } else {
                    (e.key.clone(), format!("{t}/{}", e.key))
                };
                files.push(ScratchFile {
                    key,
                    bytes: None,
                    from: Some(from),
                });
                continue;
            }
            Layer::ManifestList | Layer::Manifest if e.key.contains("://") => {
                return Err(Error::unsupported(
                    "a restore drill of a bundle whose manifests lie under another root",
                    &e.key,
                ));
            }
            Layer::ManifestList => {
                lists.push(e);
                continue;
            }
            Layer::Manifest => {}
        }
        let b = copy_of(copies, &e.key)?;
        // Position deletes (and deletion vectors) name the data files they
        // delete from by path, inside the delete file: a copy would delete
        // nothing in the scratch table, and deleted rows would come back.
        let uri = format!("{t}/{}", e.key);
        let mut positional = false;
        crate::spec::iceberg::for_each_manifest_entry(&uri, b, |_, c, _| {
            positional |= c == crate::spec::iceberg::ContentType::PositionDeletes;
        })?;
        if positional {
            return Err(Error::unsupported(
                "a restore drill into scratch of position delete files (they name the table's own data files)",
                &uri,
            ));
        }
        let (out, n) = rewrite(
            b,
            &Rename {
                fields: &["file_path", "referenced_data_file"],
                f: &rename,
                length: None,
            },
        )
        .map_err(|err| crate::spec::iceberg::avro_err(&e.key, *err))?;
        renamed += n;
        lengths.insert(e.key.clone(), out.len() as i64);
        files.push(ScratchFile {
            key: e.key.clone(),
            bytes: Some(out),
            from: None,
        });
    }
    let length_of = |p: &str| key_of(p).and_then(|k| lengths.get(&k).copied());
    for e in lists {
        let b = copy_of(copies, &e.key)?;
        let (out, n) = rewrite(
            b,
            &Rename {
                fields: &["manifest_path"],
                f: &rename,
                length: Some(("manifest_length", &length_of)),
            },
        )
        .map_err(|err| crate::spec::iceberg::avro_err(&e.key, *err))?;
        renamed += n;
        files.push(ScratchFile {
            key: e.key.clone(),
            bytes: Some(out),
            from: None,
        });
    }
    let md_bytes = copies.get(&bundle.metadata_key).ok_or_else(|| {
        Error::invalid(
            "bundle",
            "the copy of the bundle's metadata document is gone",
        )
    })?;
    let (md, snapshot_id, recovery_point_ms, n) =
        scratch_metadata(&bundle, md_bytes, &s, snapshot, now_ms, &rename)?;
    renamed += n;
    let metadata_uri = format!("{s}/{SCRATCH_METADATA}");
    TableMetadata::parse(&metadata_uri, &md)?;
    files.push(ScratchFile {
        key: SCRATCH_METADATA.into(),
        bytes: Some(md),
        from: None,
    });
    files.push(ScratchFile {
        key: "metadata/version-hint.text".into(),
        bytes: Some(b"1".to_vec()),
        from: None,
    });
    Ok(ScratchRestore {
        files,
        metadata_uri,
        snapshot_id,
        recovery_point_ms,
        renamed,
        elsewhere,
    })
}

/// The bundle's verified copy of `key`.
fn copy_of<'c>(copies: &'c BTreeMap<String, Vec<u8>>, key: &str) -> Result<&'c Vec<u8>> {
    copies
        .get(key)
        .ok_or_else(|| Error::invalid("bundle", format!("the copy of `{key}` is gone")))
}

/// The restored metadata document: the bundle's copy with its location,
/// its snapshots reduced to the bundle's (the chosen one current, `main`
/// on it), their manifest lists renamed, no statistics files and no
/// metadata log (they name the table's files).
fn scratch_metadata(
    bundle: &Bundle,
    bytes: &[u8],
    scratch: &str,
    snapshot: Option<i64>,
    now_ms: i64,
    rename: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<u8>, i64, i64, u64)> {
    let bad =
        |why: String| Error::malformed(MalformedReason::Inconsistent, &bundle.metadata_key, why);
    let mut md: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::malformed(
            MalformedReason::Encoding,
            &bundle.metadata_key,
            e.to_string(),
        )
    })?;
    let mut snaps: Vec<serde_json::Value> = md["snapshots"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| {
            s["snapshot-id"]
                .as_i64()
                .is_some_and(|id| bundle.snapshot_ids.contains(&id))
        })
        .collect();
    if snaps.is_empty() {
        return Err(bad(
            "none of the bundle's snapshots is in its metadata".into()
        ));
    }
    let chosen = match snapshot {
        Some(id) => snaps
            .iter()
            .find(|s| s["snapshot-id"].as_i64() == Some(id))
            .cloned()
            .ok_or_else(|| {
                Error::invalid(
                    "snapshot",
                    format!("snapshot {id} is not in bundle {}", bundle.candidate_id),
                )
            })?,
        None => snaps
            .iter()
            .max_by_key(|s| {
                (
                    s["timestamp-ms"].as_i64().unwrap_or(0),
                    s["snapshot-id"].as_i64(),
                )
            })
            .cloned()
            .ok_or_else(|| bad("no snapshot".into()))?,
    };
    let id = chosen["snapshot-id"].as_i64().unwrap_or_default();
    let at = chosen["timestamp-ms"].as_i64().unwrap_or_default();
    let mut n = 0u64;
    for s in &mut snaps {
        if let Some(l) = s["manifest-list"].as_str().and_then(rename) {
            s["manifest-list"] = l.into();
            n += 1;
        }
    }
    md["location"] = scratch.into();
    md["snapshots"] = serde_json::Value::Array(snaps);
    md["current-snapshot-id"] = id.into();
    md["refs"] = serde_json::json!({"main": {"snapshot-id": id, "type": "branch"}});
    md["snapshot-log"] = serde_json::json!([{"snapshot-id": id, "timestamp-ms": at}]);
    md["metadata-log"] = serde_json::json!([]);
    if let Some(o) = md.as_object_mut() {
        o.remove("statistics");
        o.remove("partition-statistics");
    }
    // A writer to the scratch table must write under the scratch location,
    // never into the table's own roots.
    if let Some(p) = md["properties"].as_object_mut() {
        for k in crate::spec::iceberg::WRITE_ROOT_PROPERTIES {
            p.remove(k);
        }
    }
    md["last-updated-ms"] = md["last-updated-ms"]
        .as_i64()
        .unwrap_or(0)
        .max(now_ms)
        .into();
    let out = serde_json::to_vec_pretty(&md).map_err(|e| {
        Error::malformed(
            MalformedReason::Encoding,
            &bundle.metadata_key,
            e.to_string(),
        )
    })?;
    Ok((out, id, at, n))
}
