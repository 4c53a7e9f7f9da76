//! Quarantine bundles on the store: sealed by `expire --commit` before the
//! expiry, verified by `sweep` before any object of an expired snapshot may
//! pass its restore check, and used by `restore` to bring a snapshot back.
//! Layout: `TABLE/_lakesweep/bundles/<id>/bundle.json` and `.../copies/<key>`
//! (a hidden prefix, which no sweep deletes). The component walks, seals,
//! verifies and writes the restored metadata; this module reads and writes.

use std::process::ExitCode;

use crate::cli::RestoreCmd;
use crate::error::HostError;
use std::collections::BTreeMap;

use futures::StreamExt;

use crate::catalogs::pointer::Pointer;
use crate::component::{wt, LedgerHandle, Planner};
use crate::stores::{Object, Store};

/// Where bundles live.
pub fn root(table: &str) -> String {
    format!("{table}/_lakesweep/bundles")
}

/// Removes bundle `id` (every object under its folder): the expiry it was
/// sealed for was not committed. `id` is the bundle's name, or the URI of
/// its `bundle.json` (what [`seal`] returns).
pub async fn discard(store: &Store, table: &str, id: &str) -> Result<(), HostError> {
    use futures::StreamExt;
    let id = id.strip_suffix("/bundle.json").unwrap_or(id);
    let name = id.rsplit('/').next().unwrap_or(id);
    if name.is_empty() || name.contains("..") {
        return Err(refused!("`{id}` is not a bundle name"));
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
) -> Result<String, HostError> {
    let mut blobs: Vec<wt::Blob> = Vec::new();
    let chain = loop {
        let c = planner.bundle_chain(table, location_map, original, bytes, ids, &blobs)?;
        if c.done {
            break c;
        }
        for k in c.wanted {
            let b = store
                .read(&format!("{table}/{k}"))
                .await?
                .ok_or_else(|| refused!("`{k}` of the snapshot chain does not exist"))?;
            blobs.push(wt::Blob { key: k, bytes: b });
        }
    };
    let metadata_key = mapped
        .strip_prefix(&format!("{table}/"))
        .ok_or_else(|| refused!("the metadata {mapped} is outside the table"))?
        .to_owned();
    let mut keys: Vec<String> = chain.layers.into_iter().map(|l| l.key).collect();
    keys.push(metadata_key.clone());
    let heads: Vec<(String, Result<Option<Object>, HostError>)> = futures::stream::iter(keys)
        .map(|k| {
            let store = store.clone();
            let uri = format!("{table}/{k}");
            async move { (k, store.head(&uri).await) }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut answers = Vec::new();
    for (key, h) in heads {
        answers.push(wt::HeadAnswer {
            key,
            version: h?.as_ref().map(Object::version),
        });
    }
    let req = wt::SealRequest {
        table_location: table.to_owned(),
        location_map: crate::component::mappings(location_map),
        metadata_uri: original.to_owned(),
        snapshot_ids: ids.to_vec(),
        candidate_id: id.to_owned(),
        now_ms,
        heads: answers,
    };
    let sealed = planner.bundle_seal(&req, bytes, &blobs)?;
    let dir = format!("{}/{id}", root(table));
    let copies = blobs.into_iter().map(|b| (b.key, b.bytes));
    for (k, b) in copies.chain([(metadata_key, bytes.to_vec())]) {
        store.overwrite(&format!("{dir}/copies/{k}"), b).await?;
    }
    let uri = format!("{dir}/bundle.json");
    store.overwrite(&uri, sealed.document.into_bytes()).await?;
    Ok(uri)
}

/// One bundle's restore verification.
pub struct Checked {
    /// The bundle, as the planner read it.
    pub bundle: wt::Bundle,
    /// The planner's verdict.
    pub verification: wt::Verification,
    /// The copies read.
    pub copies: Vec<wt::Blob>,
    /// The store's answers for every entry (as the planner was given them).
    pub heads: Vec<wt::HeadAnswer>,
    /// The bundle document, as stored.
    pub text: String,
}

/// Reads bundle `dir` (its `bundle.json` and copies), HEADs its content
/// files and has the component walk it.
pub async fn check(
    planner: &mut Planner,
    store: &Store,
    table: &str,
    location_map: &[(String, String)],
    dir: &str,
    ledger: Option<LedgerHandle>,
) -> Result<Checked, HostError> {
    let text = store
        .read(&format!("{dir}/bundle.json"))
        .await?
        .ok_or_else(|| refused!("no bundle at {dir}"))?;
    let text = String::from_utf8(text).map_err(|_| refused!("{dir}/bundle.json is not UTF-8"))?;
    let bundle = planner
        .bundle_load(&text)
        .map_err(|e| refused!("{dir}: {e}"))?;
    let mut copies = Vec::new();
    let mut heads = Vec::new();
    // Which content files the ledger deleted (or may have): the ledger's
    // answer, by key.
    let content: Vec<String> = bundle
        .entries
        .iter()
        .filter(|e| e.layer == wt::BundleLayer::Content)
        .map(|e| e.key.clone())
        .collect();
    let consumed: std::collections::BTreeSet<String> = match ledger {
        Some(l) if !content.is_empty() => content
            .iter()
            .zip(planner.ledger_consumed(l, &content)?)
            .filter(|(_, c)| *c)
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Default::default(),
    };
    for e in &bundle.entries {
        if e.sha256.is_some() {
            if let Some(b) = store.read(&format!("{dir}/copies/{}", e.key)).await? {
                copies.push(wt::Blob {
                    key: e.key.clone(),
                    bytes: b,
                });
            }
        }
        // A content file the ledger itself deleted after an approval is
        // consumed, not lost: it must not hold the bundle's other files
        // forever. Every other entry is checked against the store.
        if e.layer == wt::BundleLayer::Content && consumed.contains(&e.key) {
            heads.push(wt::HeadAnswer {
                key: e.key.clone(),
                version: Some(e.version.clone()),
            });
            continue;
        }
        let h = store
            .head(&crate::stores::object_uri(table, &e.key))
            .await?;
        heads.push(wt::HeadAnswer {
            key: e.key.clone(),
            version: h.as_ref().map(Object::version),
        });
    }
    let verification = planner.bundle_verify(&text, location_map, &copies, &heads)?;
    Ok(Checked {
        bundle,
        verification,
        copies,
        heads,
        text,
    })
}

/// The table's bundle folders (`TABLE/_lakesweep/bundles/ID`), each with
/// whether it holds a `bundle.json`.
pub async fn dirs(store: &Store, table: &str) -> Result<BTreeMap<String, bool>, HostError> {
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
    ledger: Option<LedgerHandle>,
) -> Result<BTreeMap<String, String>, HostError> {
    let dirs = dirs(store, table).await?;
    let mut out = BTreeMap::new();
    for (d, has_doc) in dirs {
        if !has_doc {
            return Err(refused!(
                "quarantine bundle {d} has copies but no bundle.json: which objects it protects is unknown; nothing is approved until it is repaired or removed"
            ));
        }
        let c = check(planner, store, table, location_map, &d, ledger)
            .await
            .map_err(|e| {
                format!("quarantine bundle {d} cannot be read ({e}): nothing is approved until it is repaired or removed")
            })?;
        if c.verification.complete {
            continue;
        }
        let why = format!(
            "bundle {} is incomplete: {}",
            c.bundle.candidate_id,
            c.verification.problems.join("; ")
        );
        for e in &c.bundle.entries {
            out.insert(e.key.clone(), why.clone());
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
) -> Result<String, HostError> {
    let store = Store::for_uri(table)?;
    let dir = format!("{}/{id}", root(table));
    match pointer {
        Pointer::Catalog { catalog, .. } if commit && catalog.commits_requests() => {
            return Err(refused!(
                "nothing restored: {} takes commit requests, not whole metadata documents; restore through the catalog's own tools from bundle {id}",
                catalog.describe()
            ))
        }
        Pointer::Explicit(_) | Pointer::Command(_) if commit => {
            return Err(
                "nothing restored: --commit needs a pointer it can swap (--catalog, or the table's version-hint.text)"
                    .into(),
            )
        }
        _ => {}
    }
    if commit {
        planner
            .check_clock(now_ms, allow_future_now)
            .map_err(|e| refused!("nothing restored: {e}"))?;
    }
    let c = check(planner, &store, table, location_map, &dir, None).await?;
    if !c.verification.complete {
        return Err(refused!(
            "bundle {id} cannot restore its snapshots: {}",
            serde_json::json!(c.verification.problems)
        ));
    }
    let metadata_key = &c.bundle.metadata_key;
    // The core said which layers are gone (and refused any rewritten one).
    let missing: std::collections::BTreeSet<&str> =
        c.verification.put_back.iter().map(String::as_str).collect();
    let mut put_back = Vec::new();
    let mut bundle_md = None;
    for b in &c.copies {
        if b.key == *metadata_key {
            bundle_md = Some(b.bytes.clone());
        } else if missing.contains(b.key.as_str()) {
            put_back.push((crate::stores::object_uri(table, &b.key), b.bytes.clone()));
        }
    }
    let bundle_md = bundle_md.ok_or("the bundle's metadata copy is missing")?;
    let original = pointer.resolve(planner, &store, table).await?;
    let mapped = planner.canonical_pointer(&original, location_map)?;
    let current = store
        .read(&mapped)
        .await?
        .ok_or_else(|| refused!("the current metadata {mapped} does not exist"))?;
    let doc =
        planner.bundle_restore(&original, &current, &c.bundle.document, &bundle_md, now_ms)?;
    let ids = serde_json::json!(c.bundle.snapshot_ids).to_string();
    if !commit {
        return Ok(format!(
            "bundle {id} is complete; restoring snapshots {ids} would put back {} metadata files and commit a new metadata document (pass --commit)",
            put_back.len()
        ));
    }
    // No sweep may run while the snapshot comes back (it could be deleting
    // the very files the restored metadata names).
    let lock =
        crate::session::ledger::Lock::take(&crate::session::ledger::default_ledger(table)).await?;
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
) -> Result<String, HostError> {
    for (uri, b) in put_back {
        store
            .create(uri, b.clone())
            .await
            .map_err(|e| refused!("put back {uri}: {e}"))?;
    }
    crate::catalogs::commit::commit(pointer, table, store, original, mapped, doc)
        .await
        .map_err(|e| HostError::Catalog(e.to_string()))
}

/// `restore TABLE --bundle ID`: brings the quarantined snapshots back
/// (with `--commit`), or says what it would do.
pub async fn restore_command(a: &RestoreCmd) -> Result<ExitCode, HostError> {
    let table = crate::stores::table_uri(&a.table)?;
    let mut planner = Planner::load(&crate::component::wasm_path(a.planner.wasm.as_deref()))?;
    let id = match &a.bundle {
        Some(id) => id.clone(),
        None => newest_verified(&mut planner, &table, &a.map.location_map).await?,
    };
    let msg = restore(
        &mut planner,
        &table,
        &a.pointer.pointer()?,
        &a.map.location_map,
        &id,
        a.when.now_ms(),
        a.future.allow_future_now,
        a.commit,
    )
    .await?;
    outln!("{msg}");
    Ok(ExitCode::SUCCESS)
}

/// The newest of the table's bundles that verifies, in the planner's
/// order (newest sealed first); each one passed over is named on standard
/// error. A bundle that does not load refuses: it cannot be ordered, and
/// it may be the newest.
pub async fn newest_verified(
    planner: &mut Planner,
    table: &str,
    location_map: &[(String, String)],
) -> Result<String, HostError> {
    let store = Store::for_uri(table)?;
    let mut texts = Vec::new();
    for (dir, has) in dirs(&store, table).await? {
        if !has {
            eprintln!(
                "lakesweep: {dir} holds no bundle.json (a seal that never finished): passed over"
            );
            continue;
        }
        let bytes = store
            .read(&format!("{dir}/bundle.json"))
            .await?
            .ok_or_else(|| refused!("{dir}/bundle.json vanished"))?;
        texts.push(
            String::from_utf8(bytes).map_err(|_| refused!("{dir}/bundle.json is not UTF-8"))?,
        );
    }
    let order = crate::component::done(
        planner
            .api
            .lakesweep_planner_planner()
            .call_bundles_newest_first(&mut planner.store, &texts),
    )
    .map_err(|e| refused!("nothing restored: {e} (name one with --bundle)"))?;
    for id in order {
        let dir = format!("{}/{id}", root(table));
        let c = check(planner, &store, table, location_map, &dir, None).await?;
        if c.verification.complete {
            return Ok(id);
        }
        eprintln!(
            "lakesweep: bundle {id} would not restore ({}): passed over",
            serde_json::json!(c.verification.problems)
        );
    }
    Err(refused!("nothing restored: no bundle of {table} verifies"))
}
