//! A ledger's files on the store: its head (`ledger.json`) and, beside it,
//! its folder (`ledger.json.d/`), read and written one file at a time as
//! the component asks (`next-read`, `next-write`). Which files, in which
//! order, whether one is whole, what is obsolete: the component's. This
//! module reads, writes and deletes.

use crate::component::{wasm_path, wt, LedgerHandle, Planner};
use crate::error::HostError;
use crate::stores::Store;

/// The folder beside a ledger's head, holding its other files.
pub fn folder(ledger_uri: &str) -> String {
    format!("{ledger_uri}.d")
}

/// The mark a saved ledger leaves beside it (`ledger.json.mark`): a missing
/// ledger with its mark present was deleted or moved, not never made.
pub fn mark(ledger_uri: &str) -> String {
    format!("{ledger_uri}.mark")
}

/// Reads the head at `uri` (`None`: there is none) and opens it in
/// `planner`, then every file it asks for.
pub async fn open(
    planner: &mut Planner,
    store: &Store,
    uri: &str,
) -> Result<Option<LedgerHandle>, HostError> {
    let Some(head) = read_head(store, uri).await? else {
        return Ok(None);
    };
    let l = planner.ledger_load(&head)?;
    serve_reads(planner, l, store, uri).await?;
    Ok(Some(l))
}

async fn read_head(store: &Store, uri: &str) -> Result<Option<String>, HostError> {
    store
        .read(uri)
        .await?
        .map(|b| String::from_utf8(b).map_err(|_| refused!("{uri} is not UTF-8")))
        .transpose()
}

/// Answers every read the ledger asks for from its folder, one file at a
/// time.
pub async fn serve_reads(
    planner: &mut Planner,
    l: LedgerHandle,
    store: &Store,
    uri: &str,
) -> Result<(), HostError> {
    let dir = folder(uri);
    while let Some(name) = planner.ledger_next_read(l)? {
        let bytes = store.read(&format!("{dir}/{name}")).await?;
        planner
            .ledger_handle_read(l, &name, bytes.as_deref())
            .map_err(|e| refused!("{uri}: {e}"))?;
    }
    Ok(())
}

/// Stores the ledger: each file the component gives, in its order (a file
/// written before the next; the head last, and only once every file before
/// it is written), then the mark, then the files the new head no longer
/// names are deleted.
pub async fn save(
    planner: &mut Planner,
    l: LedgerHandle,
    store: &Store,
    uri: &str,
) -> Result<(), HostError> {
    let dir = folder(uri);
    let stopped =
        |e: HostError| HostError::Stopped(format!("cannot save the ledger to {uri}: {e}"));
    while let Some(f) = planner.ledger_next_write(l).map_err(stopped)? {
        let target = if f.name.is_empty() {
            uri.to_owned()
        } else {
            format!("{dir}/{}", f.name)
        };
        // Written aside and renamed over (a local disk), or one PUT: a
        // reader sees a whole file or the one before.
        store
            .overwrite(&target, f.bytes)
            .await
            .map_err(|e| stopped(refused!("{target}: {e}")))?;
    }
    match store
        .create(
            &mark(uri),
            b"a lakesweep ledger was saved beside this mark\n".to_vec(),
        )
        .await
    {
        Ok(()) | Err(crate::stores::CreateError::Exists) => {}
        Err(crate::stores::CreateError::Other(e)) => {
            return Err(HostError::Stopped(format!(
                "cannot mark the ledger {uri}: {e}"
            )))
        }
    }
    for name in planner.ledger_obsolete(l).map_err(stopped)? {
        let target = format!("{dir}/{name}");
        if let Err(e) = store.delete(&target).await {
            // Left behind, it is only a stray: the next save removes it.
            eprintln!(
                "lakesweep: could not remove {target}, which the ledger no longer needs: {e}"
            );
        }
    }
    Ok(())
}

/// Deletes the files of the ledger's folder it does not name (left by a
/// save that died before its head): after a save, under the lock.
pub async fn remove_strays(
    planner: &mut Planner,
    l: LedgerHandle,
    store: &Store,
    uri: &str,
) -> Result<(), HostError> {
    let dir = folder(uri);
    let mut names = Vec::new();
    let mut listing = store.list(&format!("{dir}/"));
    use futures::StreamExt;
    // The listing spells URIs its own way (`s3://` for an `s3a://` folder):
    // a name is what follows the folder's own name.
    let inside = format!("/{}/", dir.rsplit('/').next().unwrap_or_default());
    while let Some(o) = listing.next().await {
        let o = o?;
        let name = o.uri.rfind(&inside).map(|i| &o.uri[i + inside.len()..]);
        // The folder's own files only, never anything in a folder below.
        if let Some(name) = name.filter(|n| !n.is_empty() && !n.contains('/')) {
            names.push(name.to_owned());
        }
    }
    for name in planner.ledger_strays(l, &names)? {
        let target = format!("{dir}/{name}");
        if let Err(e) = store.delete(&target).await {
            eprintln!("lakesweep: could not remove {target}, a stray of an interrupted save: {e}");
        }
    }
    Ok(())
}

/// A ledger as `ledger show` prints it.
pub struct Shown {
    /// Its table.
    pub table_location: String,
    /// Its revision.
    pub revision: u64,
    /// Its quarantine interval, ms.
    pub quarantine_ms: i64,
    /// Every object in flight, sorted by key; with `archived`, then every
    /// archived (verified) object not in flight again.
    pub objects: Vec<wt::LedgerObject>,
    /// What it verified and folded away.
    pub verified: wt::VerifiedSummary,
    /// Its gates.
    pub gates: wt::Gates,
}

/// Objects one `ledger.objects` call asks for.
const OBJECTS_PIECE: u32 = 8192;

/// Reads a ledger and its gates (for `ledger show`); with `archived`, its
/// archives too (each checked against the head).
pub async fn show(
    ledger_uri: &str,
    archived: bool,
    wasm: Option<&str>,
) -> Result<Shown, HostError> {
    let store = Store::for_uri(ledger_uri)?;
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let l = open(&mut planner, &store, ledger_uri)
        .await?
        .ok_or_else(|| refused!("no ledger at {ledger_uri}"))?;
    let mut objects = Vec::new();
    loop {
        let piece = planner.ledger_objects(l, objects.len() as u64, OBJECTS_PIECE)?;
        if piece.is_empty() {
            break;
        }
        objects.extend(piece);
    }
    if archived {
        let in_flight: std::collections::BTreeSet<String> =
            objects.iter().map(|o| o.key.clone()).collect();
        for name in planner.ledger_archives(l)? {
            let uri = format!("{}/{name}", folder(ledger_uri));
            let bytes = store
                .read(&uri)
                .await?
                .ok_or_else(|| refused!("the ledger's archive {uri} is missing"))?;
            for a in planner.ledger_check_archive(l, &name, &bytes)? {
                if !in_flight.contains(&a.key) {
                    objects.push(a);
                }
            }
        }
    }
    Ok(Shown {
        table_location: planner.ledger_table_location(l)?,
        revision: planner.ledger_revision(l)?,
        quarantine_ms: planner.ledger_quarantine_ms(l)?,
        verified: planner.ledger_verified(l)?,
        gates: planner.ledger_gates(l)?,
        objects,
    })
}

/// What `ledger verify` found.
pub struct Verified {
    /// The component's audit: counts, and what does not add up.
    pub audit: wt::LedgerAudit,
    /// The head's location.
    pub ledger_uri: String,
}

/// `ledger verify`: reads the head and every file it names (each checked
/// against its SHA-256 as it is read), then every archive; the component
/// says what does not add up.
pub async fn verify(ledger_uri: &str, wasm: Option<&str>) -> Result<Verified, HostError> {
    let store = Store::for_uri(ledger_uri)?;
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let l = open(&mut planner, &store, ledger_uri)
        .await?
        .ok_or_else(|| refused!("no ledger at {ledger_uri}"))?;
    for name in planner.ledger_archives(l)? {
        let uri = format!("{}/{name}", folder(ledger_uri));
        match store.read(&uri).await? {
            Some(bytes) => {
                // A damaged archive is one of the audit's problems; the
                // others are still checked.
                if let Err(e) = planner.ledger_check_archive(l, &name, &bytes) {
                    eprintln!("lakesweep: {uri}: {e}");
                }
            }
            // Left unchecked: the audit names it.
            None => eprintln!("lakesweep: the ledger's archive {uri} is missing"),
        }
    }
    Ok(Verified {
        audit: planner.ledger_audit(l)?,
        ledger_uri: ledger_uri.to_owned(),
    })
}

/// The default ledger location: under the table's hidden `_lakesweep/`
/// prefix, which no sweep deletes (hidden paths are always kept).
pub fn default_ledger(table: &str) -> String {
    format!("{table}/_lakesweep/ledger.json")
}

/// A lock beside the ledger (create-if-absent): one sweep, reconcile or
/// restore at a time, so no run overwrites another's ledger.
pub struct Lock {
    store: Store,
    uri: String,
}

impl Lock {
    /// Takes the lock or says who holds it.
    pub async fn take(ledger_uri: &str) -> Result<Lock, HostError> {
        let store = Store::for_uri(ledger_uri)?;
        let uri = format!("{ledger_uri}.lock");
        let body =
            serde_json::json!({"pid": std::process::id(), "sinceMs": crate::clock::clock_ms()})
                .to_string();
        match store.create(&uri, body.into_bytes()).await {
            Ok(()) => {}
            Err(crate::stores::CreateError::Exists) => {
                let held = store
                    .read(&uri)
                    .await
                    .ok()
                    .flatten()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                return Err(refused!(
                    "another sweep, reconcile or restore holds {uri} ({held}): wait for it, or remove the lock if that run is dead"
                ));
            }
            Err(crate::stores::CreateError::Other(e)) => {
                return Err(refused!("cannot take the ledger's lock {uri}: {e}"));
            }
        }
        Ok(Lock { store, uri })
    }

    /// Releases the lock.
    pub async fn release(self) {
        if let Err(e) = self.store.delete(&self.uri).await {
            eprintln!("lakesweep: could not remove the lock {}: {e}", self.uri);
        }
    }
}
