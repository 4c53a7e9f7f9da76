//! `lakesweep expire`: plans snapshot expiry in the component from the
//! current metadata, the policy and the context, prints it, and with
//! `--commit` carries it out: the new metadata document is written under a
//! new name (create-if-absent), then the pointer is swapped with a
//! compare-and-set (SQL catalog) or `version-hint.text` is rewritten after
//! checking it still names the metadata the plan was made from. A commit
//! that lands meanwhile makes the swap fail cleanly; the new file is removed.

use std::hash::{BuildHasher, Hasher};

use crate::args::ExpireArgs;
use crate::component::{wasm_path, wt, Planner};
use crate::pointer::Pointer;
use crate::store::{table_uri, Store};

/// A finished `expire` run.
pub struct Expiry {
    /// The expiry plan.
    pub plan: wt::ExpiryPlan,
    /// The new metadata location, when committed.
    pub committed: Option<String>,
    /// The quarantine bundle sealed before the commit (its URI).
    pub bundle: Option<String>,
}

/// `00042-<uuid>.metadata.json` -> 42; `v7.metadata.json` -> 7.
fn version_of(name: &str) -> Option<(u64, bool)> {
    if let Some(v) = name
        .strip_prefix('v')
        .and_then(|r| r.strip_suffix(".metadata.json"))
    {
        return v.parse().ok().map(|n| (n, true));
    }
    let (n, _) = name.split_once('-')?;
    n.parse().ok().map(|n| (n, false))
}

/// A random version-4 style UUID (std's per-process random hasher seed).
fn uuid() -> String {
    let mut parts = [0u64; 2];
    for (i, p) in parts.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_usize(i);
        h.write_u32(std::process::id());
        *p = h.finish();
    }
    let (a, b) = (parts[0], parts[1]);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52 & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

fn split_dir(uri: &str) -> Result<(&str, &str), String> {
    uri.rsplit_once('/')
        .ok_or_else(|| format!("`{uri}` has no folder"))
}

/// Runs `expire`.
pub async fn run(a: &ExpireArgs) -> Result<Expiry, String> {
    let table = table_uri(&a.table)?;
    let store = Store::for_uri(&table)?;
    let original = a.pointer.resolve(&store, &table).await?;
    let mut planner = Planner::load(&wasm_path(a.wasm.as_deref()))?;
    let mapped = planner.canonical_pointer(&original, &a.location_map)?;
    let bytes = store
        .read(&mapped)
        .await?
        .ok_or_else(|| format!("the current metadata {mapped} does not exist"))?;
    let policy = a.inputs.policy_json()?;
    let context = a.inputs.context_json(&mut planner)?;
    // Every DR checkpoint metadata file the context names, read for the planner.
    let mut dr_metadata = Vec::new();
    if let Some(ctx) = &context {
        for f in planner.dr_metadata_files(ctx)? {
            let physical = planner.canonical_pointer(&f, &a.location_map)?;
            if let Some(b) = store.read(&physical).await? {
                dr_metadata.push(wt::Blob { key: f, bytes: b });
            }
        }
    }
    let plan = planner.plan_expiry(
        &original,
        &bytes,
        policy.as_deref(),
        context.as_deref(),
        a.now_ms,
        &a.expire_ids,
        &dr_metadata,
    )?;
    let mut committed = None;
    let mut bundle = None;
    if let (true, Some(new_metadata)) = (a.commit, &plan.new_metadata) {
        planner
            .check_clock(a.now_ms, a.allow_future_now)
            .map_err(|e| format!("expiry not committed: {e}"))?;
        let ids: Vec<i64> = plan.expire.clone();
        if let Pointer::Explicit(_) = a.pointer {
            return Err(
                "--commit needs a pointer to swap: --catalog, or the table's version-hint.text"
                    .into(),
            );
        }
        // Quarantine before the irreversible step: the expired snapshots'
        // whole chain is sealed into a bundle first; no bundle, no expiry.
        if !ids.is_empty() {
            let id = format!("q-{}-{}", ids[0], a.now_ms);
            bundle = Some(
                crate::bundle::seal(
                    &mut planner,
                    &store,
                    &table,
                    &a.location_map,
                    &original,
                    &mapped,
                    &bytes,
                    &ids,
                    &id,
                    a.now_ms,
                )
                .await
                .map_err(|e| format!("expiry not committed: the quarantine bundle failed: {e}"))?,
            );
        }
        let doc = new_metadata.clone();
        match commit(&a.pointer, &table, &store, &original, &mapped, doc).await {
            Ok(m) => committed = Some(m),
            Err(e) => {
                // The expiry did not happen: its bundle must not linger (every
                // sweep walks every bundle).
                if let Some(id) = &bundle {
                    if let Err(d) = crate::bundle::discard(&store, &table, id).await {
                        return Err(format!(
                            "{e}; its quarantine bundle {id} could not be removed: {d}"
                        ));
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(Expiry {
        plan,
        committed,
        bundle,
    })
}

/// Commits `doc` as the table's next metadata document: create-if-absent of
/// the next version, then the catalog's compare-and-set (or, for Hadoop
/// tables, the created `vN+1` is the commit and the hint follows).
#[allow(clippy::too_many_arguments)]
pub async fn commit(
    pointer: &Pointer,
    table: &str,
    store: &Store,
    original: &str,
    mapped: &str,
    doc: Vec<u8>,
) -> Result<String, String> {
    if let Pointer::Explicit(_) = pointer {
        return Err(
            "--commit needs a pointer to swap: --catalog, or the table's version-hint.text".into(),
        );
    }
    let (orig_dir, orig_name) = split_dir(original)?;
    let (mapped_dir, _) = split_dir(mapped)?;
    let (version, hadoop) = version_of(orig_name).ok_or_else(|| {
        format!("cannot tell the version of `{orig_name}`: not NNNNN-*.metadata.json nor vN.metadata.json")
    })?;
    if *pointer == Pointer::VersionHint && !hadoop {
        return Err(format!(
            "--commit through version-hint.text needs vN.metadata.json names (there, creating the next file is the atomic commit); `{orig_name}` is not one: commit through --catalog"
        ));
    }
    let name = if hadoop {
        format!("v{}.metadata.json", version + 1)
    } else {
        format!("{:05}-{}.metadata.json", version + 1, uuid())
    };
    let new_original = format!("{orig_dir}/{name}");
    let new_physical = format!("{mapped_dir}/{name}");
    store.create(&new_physical, doc).await.map_err(|e| {
        format!(
            "{e}: another commit may have taken version {} (nothing changed)",
            version + 1
        )
    })?;
    match pointer {
        Pointer::Catalog {
            path,
            namespace,
            name: table_name,
        } => {
            if let Err(e) = catalog_swap(path, namespace, table_name, original, &new_original) {
                // Nobody can have read the new file: no pointer names it.
                let _ = store.delete(&new_physical).await;
                return Err(format!("expiry not committed: {e}"));
            }
        }
        _ => {
            // Creating v(N+1) was the commit (readers walk forward past the
            // hint); the hint itself is best effort, as in Iceberg's Hadoop catalog.
            let hint = format!("{table}/metadata/version-hint.text");
            if let Err(e) = store
                .overwrite(&hint, (version + 1).to_string().into_bytes())
                .await
            {
                eprintln!("lakesweep: committed, but {hint} was not updated ({e}); readers walk forward to the new version");
            }
        }
    }
    Ok(new_original)
}

/// Compare-and-set of the SQL catalog's pointer.
fn catalog_swap(
    path: &str,
    namespace: &str,
    name: &str,
    old: &str,
    new: &str,
) -> Result<(), String> {
    let conn = rusqlite::Connection::open(path).map_err(|e| format!("open catalog {path}: {e}"))?;
    let n = conn
        .execute(
            "UPDATE iceberg_tables SET metadata_location = ?1, previous_metadata_location = ?2 \
             WHERE table_namespace = ?3 AND table_name = ?4 AND metadata_location = ?2",
            [new, old, namespace, name],
        )
        .map_err(|e| format!("update catalog {path}: {e}"))?;
    match n {
        1 => Ok(()),
        0 => Err(format!(
            "the catalog no longer points {namespace}.{name} at {old}: a commit landed meanwhile"
        )),
        n => Err(format!(
            "the catalog updated {n} rows for {namespace}.{name}"
        )),
    }
}

/// The human report of an expiry plan.
pub fn human(e: &Expiry) -> String {
    use crate::report::esc;
    let p = &e.plan;
    let mut out = format!(
        "lakesweep expire (metadata {})\n",
        esc(&p.metadata_location)
    );
    if let Some(d) = &p.policy_digest {
        out.push_str(&format!("  policy digest {d}\n"));
    }
    out.push_str(&format!(
        "  expire {} snapshots, retain {}, remove {} refs\n",
        p.expire.len(),
        p.retain.len(),
        p.remove_refs.len()
    ));
    for x in &p.expired {
        out.push_str(&format!("  - expire {}: {}\n", x.snapshot_id, esc(&x.why)));
    }
    for x in &p.retain {
        out.push_str(&format!(
            "  + keep {}: {}\n",
            x.snapshot_id,
            esc(&x.reasons.join("; "))
        ));
    }
    for r in &p.remove_refs {
        out.push_str(&format!(
            "  - remove ref {}\n",
            esc(&serde_json::json!(r).to_string())
        ));
    }
    for w in &p.warnings {
        out.push_str(&format!("  warning: {}\n", esc(w)));
    }
    match &e.committed {
        Some(m) => {
            if let Some(b) = &e.bundle {
                out.push_str(&format!(
                    "quarantine bundle sealed first: {b} (lakesweep restore --bundle restores it)\n"
                ));
            }
            out.push_str(&format!("committed: the table now points at {m}\n"))
        }
        None if p.new_metadata.is_none() => out.push_str("nothing to expire\n"),
        None => out.push_str("dry run: pass --commit to carry it out\n"),
    }
    out
}
