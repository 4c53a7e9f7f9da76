//! Quarantine bundles on the store: sealed by `expire --commit` before the
//! expiry, verified by `sweep` before any object of an expired snapshot may
//! pass its restore check, and used by `restore` to bring a snapshot back.
//! Layout: `TABLE/_lakesweep/bundles/<id>/bundle.json` and `.../copies/<key>`
//! (a hidden prefix, which no sweep deletes). The component walks, seals,
//! verifies and writes the restored metadata; this module reads and writes.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::component::{describe, mappings, trap, Planner};
use crate::pointer::Pointer;
use crate::store::{Object, Store};

/// Where bundles live.
pub fn root(table: &str) -> String {
    format!("{table}/_lakesweep/bundles")
}

/// Removes bundle `id` (every object under its folder): the expiry it was
/// sealed for was not committed. `id` is the bundle's name, or the URI of
/// its `bundle.json` (what [`seal`] returns).
pub async fn discard(store: &Store, table: &str, id: &str) -> Result<(), String> {
    use futures::StreamExt;
    let id = id.strip_suffix("/bundle.json").unwrap_or(id);
    let name = id.rsplit('/').next().unwrap_or(id);
    if name.is_empty() || name.contains("..") {
        return Err(format!("`{id}` is not a bundle name"));
    }
    let dir = format!("{}/{name}", root(table));
    let mut objects = store.list(&format!("{dir}/"));
    let mut uris = Vec::new();
    while let Some(o) = objects.next().await {
        uris.push(o?.uri);
    }
    for u in uris {
        store.delete(&u).await?;
    }
    if let Some(local) = dir.strip_prefix("file://") {
        let _ = std::fs::remove_dir_all(local);
    }
    Ok(())
}

/// Seals the chain of `ids` (as listed in the metadata `bytes`, read from
/// `mapped`, named `original` by the catalog) into bundle `id`; returns its URI.
#[allow(clippy::too_many_arguments)]
pub async fn seal(
    planner: &mut Planner,
    store: &Store,
    table: &str,
    location_map: &[(String, String)],
    original: &str,
    mapped: &str,
    bytes: &[u8],
    ids: &[i64],
    id: &str,
    now_ms: i64,
) -> Result<String, String> {
    let maps = mappings(location_map);
    let mut blobs: Vec<(String, Vec<u8>)> = Vec::new();
    let chain = loop {
        let c: Value = serde_json::from_str(
            &planner
                .api
                .lakesweep_planner_planner()
                .call_bundle_chain(
                    &mut planner.store,
                    table,
                    &maps,
                    original,
                    bytes,
                    ids,
                    &blobs,
                )
                .map_err(trap)?
                .map_err(|e| describe(&e))?,
        )
        .map_err(|e| e.to_string())?;
        if c["done"] == true {
            break c;
        }
        for k in c["wanted"].as_array().into_iter().flatten() {
            let k = k.as_str().ok_or("bad chain")?;
            let b = store
                .read(&format!("{table}/{k}"))
                .await?
                .ok_or_else(|| format!("`{k}` of the snapshot chain does not exist"))?;
            blobs.push((k.to_owned(), b));
        }
    };
    let metadata_key = mapped
        .strip_prefix(&format!("{table}/"))
        .ok_or_else(|| format!("the metadata {mapped} is outside the table"))?
        .to_owned();
    let mut keys: Vec<String> = chain["layers"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.push(metadata_key.clone());
    let heads: Vec<(String, Result<Option<Object>, String>)> = futures::stream::iter(keys)
        .map(|k| {
            let store = store.clone();
            let uri = format!("{table}/{k}");
            async move { (k, store.head(&uri).await) }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut head_map = serde_json::Map::new();
    for (k, h) in heads {
        head_map.insert(
            k,
            h?.as_ref().map(Object::version_json).unwrap_or(Value::Null),
        );
    }
    let req = json!({
        "table_location": table, "mappings": location_map.iter()
            .map(|(f, t)| json!({"from": f, "to": t})).collect::<Vec<_>>(),
        "metadata_uri": original, "snapshot_ids": ids, "candidate_id": id,
        "now_ms": now_ms, "heads": head_map,
    });
    let sealed = planner
        .api
        .lakesweep_planner_planner()
        .call_bundle_seal(&mut planner.store, &req.to_string(), bytes, &blobs)
        .map_err(trap)?
        .map_err(|e| describe(&e))?;
    let dir = format!("{}/{id}", root(table));
    for (k, b) in blobs.into_iter().chain([(metadata_key, bytes.to_vec())]) {
        store.overwrite(&format!("{dir}/copies/{k}"), b).await?;
    }
    let uri = format!("{dir}/bundle.json");
    store.overwrite(&uri, sealed.into_bytes()).await?;
    Ok(uri)
}

/// One bundle's restore verification.
pub struct Checked {
    /// The bundle document.
    pub bundle: Value,
    /// The component's verdict `{complete, problems, content}`.
    pub verification: Value,
    /// The copies read (key -> bytes).
    pub copies: Vec<(String, Vec<u8>)>,
}

/// Reads bundle `dir` (its `bundle.json` and copies), HEADs its content
/// files and has the component walk it.
pub async fn check(
    planner: &mut Planner,
    store: &Store,
    table: &str,
    location_map: &[(String, String)],
    dir: &str,
    consumed: &std::collections::BTreeSet<String>,
) -> Result<Checked, String> {
    let text = store
        .read(&format!("{dir}/bundle.json"))
        .await?
        .ok_or_else(|| format!("no bundle at {dir}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("{dir}/bundle.json is not UTF-8"))?;
    let bundle: Value = serde_json::from_str(&text).map_err(|e| format!("{dir}: {e}"))?;
    let mut copies = Vec::new();
    let mut heads = serde_json::Map::new();
    for e in bundle["entries"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().ok_or("bundle entry without key")?;
        if e["sha256"].is_string() {
            if let Some(b) = store.read(&format!("{dir}/copies/{key}")).await? {
                copies.push((key.to_owned(), b));
            }
        }
        // A content file the ledger itself deleted after an approval is
        // consumed, not lost: it must not hold the bundle's other files
        // forever. Every other entry is checked against the store.
        if e["layer"] == "content" && consumed.contains(key) {
            heads.insert(key.to_owned(), e["version"].clone());
            continue;
        }
        let h = store.head(&crate::store::object_uri(table, key)).await?;
        heads.insert(
            key.to_owned(),
            h.as_ref().map(Object::version_json).unwrap_or(Value::Null),
        );
    }
    let v = planner
        .api
        .lakesweep_planner_planner()
        .call_bundle_verify(
            &mut planner.store,
            &text,
            &mappings(location_map),
            &copies,
            &Value::Object(heads).to_string(),
        )
        .map_err(trap)?
        .map_err(|e| describe(&e))?;
    Ok(Checked {
        bundle,
        verification: serde_json::from_str(&v).map_err(|e| e.to_string())?,
        copies,
    })
}

/// The table's bundle folders (`TABLE/_lakesweep/bundles/ID`), each with
/// whether it holds a `bundle.json`.
pub async fn dirs(store: &Store, table: &str) -> Result<BTreeMap<String, bool>, String> {
    let root = root(table);
    let mut dirs = BTreeMap::<String, bool>::new();
    let mut listing = store.list(&root);
    while let Some(o) = listing.next().await {
        let o = o?;
        // The listing may spell the scheme differently (s3a vs s3): match
        // on what follows the bundles folder.
        let Some((_, rest)) = o.uri.split_once("/_lakesweep/bundles/") else {
            continue;
        };
        let Some((id, tail)) = rest.split_once('/') else {
            continue;
        };
        let has = dirs.entry(format!("{root}/{id}")).or_insert(false);
        *has |= tail == "bundle.json";
    }
    Ok(dirs)
}

/// Every bundle of the table; returns, for each key of an incomplete
/// bundle, why its restore check cannot pass. A bundle that cannot be read
/// at all (damaged `bundle.json`, or copies without one) stops the run: it
/// cannot say which objects it protects.
pub async fn blocked_keys(
    planner: &mut Planner,
    store: &Store,
    table: &str,
    location_map: &[(String, String)],
    consumed: &std::collections::BTreeSet<String>,
) -> Result<BTreeMap<String, String>, String> {
    let dirs = dirs(store, table).await?;
    let mut out = BTreeMap::new();
    for (d, has_doc) in dirs {
        if !has_doc {
            return Err(format!(
                "quarantine bundle {d} has copies but no bundle.json: which objects it protects is unknown; nothing is approved until it is repaired or removed"
            ));
        }
        let c = check(planner, store, table, location_map, &d, consumed)
            .await
            .map_err(|e| {
                format!("quarantine bundle {d} cannot be read ({e}): nothing is approved until it is repaired or removed")
            })?;
        if c.verification["complete"] == true {
            continue;
        }
        let why = format!(
            "bundle {} is incomplete: {}",
            c.bundle["candidate_id"].as_str().unwrap_or("?"),
            c.verification["problems"]
                .as_array()
                .map(|p| p
                    .iter()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join("; "))
                .unwrap_or_default()
        );
        for e in c.bundle["entries"].as_array().into_iter().flatten() {
            if let Some(k) = e["key"].as_str() {
                out.insert(k.to_owned(), why.clone());
            }
        }
    }
    Ok(out)
}

/// `lakesweep restore`: verifies bundle `id`, puts back any manifest list
/// or manifest the sweep removed (from the copies), and commits a metadata
/// document that lists the bundle's snapshots again under `restored/<id>`
/// tags (without `commit`: only says what it would do).
#[allow(clippy::too_many_arguments)]
pub async fn restore(
    planner: &mut Planner,
    table: &str,
    pointer: &Pointer,
    location_map: &[(String, String)],
    id: &str,
    now_ms: i64,
    allow_future_now: bool,
    commit: bool,
) -> Result<String, String> {
    let store = Store::for_uri(table)?;
    let dir = format!("{}/{id}", root(table));
    if commit {
        planner
            .check_clock(now_ms, allow_future_now)
            .map_err(|e| format!("nothing restored: {e}"))?;
    }
    let c = check(
        planner,
        &store,
        table,
        location_map,
        &dir,
        &Default::default(),
    )
    .await?;
    if c.verification["complete"] != true {
        return Err(format!(
            "bundle {id} cannot restore its snapshots: {}",
            c.verification["problems"]
        ));
    }
    let metadata_key = c.bundle["metadata_key"]
        .as_str()
        .ok_or("bundle without metadata_key")?;
    // The core said which layers are gone (and refused any rewritten one).
    let missing: std::collections::BTreeSet<&str> = c.verification["put_back"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut put_back = Vec::new();
    let mut bundle_md = None;
    for (k, b) in &c.copies {
        if k == metadata_key {
            bundle_md = Some(b.clone());
        } else if missing.contains(k.as_str()) {
            put_back.push((crate::store::object_uri(table, k), b.clone()));
        }
    }
    let bundle_md = bundle_md.ok_or("the bundle's metadata copy is missing")?;
    let original = pointer.resolve(&store, table).await?;
    let mapped = planner.canonical_pointer(&original, location_map)?;
    let current = store
        .read(&mapped)
        .await?
        .ok_or_else(|| format!("the current metadata {mapped} does not exist"))?;
    let doc = planner
        .api
        .lakesweep_planner_planner()
        .call_bundle_restore(
            &mut planner.store,
            &original,
            &current,
            &c.bundle.to_string(),
            &bundle_md,
            now_ms,
        )
        .map_err(trap)?
        .map_err(|e| describe(&e))?;
    let ids = c.bundle["snapshot_ids"].to_string();
    if !commit {
        return Ok(format!(
            "bundle {id} is complete; restoring snapshots {ids} would put back {} metadata files and commit a new metadata document (pass --commit)",
            put_back.len()
        ));
    }
    // No sweep may run while the snapshot comes back (it could be deleting
    // the very files the restored metadata names).
    let lock = crate::sweep::Lock::take(&crate::sweep::default_ledger(table)).await?;
    let r = put_back_and_commit(&store, &put_back, pointer, table, &original, &mapped, doc).await;
    lock.release().await;
    let new = r?;
    Ok(format!(
        "restored snapshots {ids} from bundle {id} (put back {} metadata files); the table now points at {new}",
        put_back.len()
    ))
}

#[allow(clippy::too_many_arguments)]
async fn put_back_and_commit(
    store: &Store,
    put_back: &[(String, Vec<u8>)],
    pointer: &Pointer,
    table: &str,
    original: &str,
    mapped: &str,
    doc: Vec<u8>,
) -> Result<String, String> {
    for (uri, b) in put_back {
        store
            .create(uri, b.clone())
            .await
            .map_err(|e| format!("put back {uri}: {e}"))?;
    }
    crate::expire::commit(pointer, table, store, original, mapped, doc).await
}
