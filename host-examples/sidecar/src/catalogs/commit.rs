//! Committing a new metadata document through a table's pointer: the
//! next version's file is created (create-if-absent), then the catalog's
//! compare-and-set moves the pointer (or, for a Hadoop table, the created
//! `vN+1` is the commit and `version-hint.text` follows). `expire --commit`
//! and `restore --commit` commit through here.

use crate::error::HostError;
use std::hash::{BuildHasher, Hasher};

use crate::catalogs::pointer::Pointer;
use crate::catalogs::CommitError;
use crate::stores::Store;

/// Commits `doc` as the table's next metadata document: create-if-absent of
/// the next version, then the catalog's compare-and-set (or, for Hadoop
/// tables, the created `vN+1` is the commit and the hint follows). A REST
/// catalog writes its own documents: it takes the planner's request instead.
pub async fn commit(
    pointer: &Pointer,
    table: &str,
    store: &Store,
    original: &str,
    mapped: &str,
    doc: Vec<u8>,
) -> Result<String, CommitError> {
    let refused = CommitError::Refused;
    let catalog = match pointer {
        Pointer::Explicit(_) | Pointer::Command(_) => {
            return Err(refused(
                "a commit needs a pointer it can swap: --catalog, or the table's version-hint.text"
                    .into(),
            ))
        }
        Pointer::Catalog { catalog, .. } if catalog.commits_requests() => {
            return Err(refused(format!(
                "{} writes its own metadata documents and takes requests only; this commit is a whole document",
                catalog.describe()
            )))
        }
        Pointer::Catalog {
            catalog,
            namespace,
            name,
        } => Some((catalog, namespace, name)),
        Pointer::VersionHint => None,
    };
    let (orig_dir, orig_name) = split_dir(original).map_err(|e| refused(e.to_string()))?;
    let (mapped_dir, _) = split_dir(mapped).map_err(|e| refused(e.to_string()))?;
    let (version, hadoop) = version_of(orig_name).ok_or_else(|| {
        refused(format!("cannot tell the version of `{orig_name}`: not NNNNN-*.metadata.json nor vN.metadata.json"))
    })?;
    if catalog.is_none() && !hadoop {
        return Err(refused(format!(
            "a commit through version-hint.text needs vN.metadata.json names (there, creating the next file is the atomic commit); `{orig_name}` is not one: commit through --catalog"
        )));
    }
    let name = if hadoop {
        format!("v{}.metadata.json", version + 1)
    } else {
        format!("{:05}-{}.metadata.json", version + 1, uuid())
    };
    let new_original = format!("{orig_dir}/{name}");
    let new_physical = format!("{mapped_dir}/{name}");
    if let Err(e) = store.create(&new_physical, doc.clone()).await {
        let taken = format!(
            "{e}: another commit may have taken version {} (nothing changed)",
            version + 1
        );
        if catalog.is_some() {
            // No pointer names the file: the commit did not happen.
            return Err(refused(taken));
        }
        // Through version-hint.text, creating the file is the commit: a
        // create whose answer was lost (or retried into "exists") may have
        // landed. What the store holds now says which.
        match store.read(&new_physical).await {
            Ok(Some(b)) if b == doc => {}
            Ok(Some(_)) => return Err(refused(taken)),
            _ => {
                return Err(CommitError::Unknown(format!(
                    "creating {new_physical} failed ({e}) and whether it exists cannot be told"
                )))
            }
        }
    }
    match catalog {
        Some((catalog, namespace, table_name)) => {
            match catalog
                .swap(namespace, table_name, original, &new_original)
                .await
            {
                Ok(()) => {}
                Err(CommitError::Refused(e)) => {
                    // Nobody can have read the new file: no pointer names it.
                    let _ = store.delete(&new_physical).await;
                    return Err(refused(e));
                }
                // The catalog may name the new file now: it stays.
                Err(e) => return Err(e),
            }
        }
        None => {
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

/// A URI's folder and file name.
pub fn split_dir(uri: &str) -> Result<(&str, &str), HostError> {
    uri.rsplit_once('/')
        .ok_or_else(|| catalog_err!("`{uri}` has no folder"))
}
