//! Deleting a sealed plan: this host's I/O loop around the core's deletion
//! session (`deletion` resource). The session decides the batches, the
//! acceptance of each against the live facts, whether each object is still
//! the planned version, the damage check and the outcome; this module reads
//! the facts it asks for, HEADs and DELETEs what it names (each DELETE
//! conditioned on the entity tag the session gives, once, never following
//! a redirect), runs the planner session of the damage check, and writes
//! every receipt as it comes.
//!
//! Used by `apply` and `sweep`. It compares no pointer, generation, version
//! or time itself.

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::catalogs::pointer::Pointer;
use crate::clock::clock_ms;
use crate::component::{wt, DeletionHandle, LedgerHandle, Planner};
use crate::error::HostError;
use crate::names::version_json;
use crate::session::context::ContextFiles;
use crate::stores::Store;

/// Runs the test hook, if `LAKESWEEP_TEST_HOOK` names one, with `step`
/// (`N`: batch N was just accepted and is about to be deleted; `final`:
/// the last batch is done, the damage check follows): the points the
/// deletion session names. Tests and recovery drills use it to land a
/// commit, a hold or a lease exactly there; it decides nothing.
fn hook(step: &str) -> Result<(), HostError> {
    let Some(cmd) = std::env::var_os("LAKESWEEP_TEST_HOOK") else {
        return Ok(());
    };
    let status = std::process::Command::new(&cmd)
        .arg(step)
        .status()
        .map_err(|e| refused!("LAKESWEEP_TEST_HOOK {}: {e}", cmd.to_string_lossy()))?;
    if !status.success() {
        return Err(refused!(
            "LAKESWEEP_TEST_HOOK {} {step} failed: {status}",
            cmd.to_string_lossy()
        ));
    }
    Ok(())
}

/// Where the live facts come from.
pub struct LiveSource {
    /// The store holding the table.
    pub store: Store,
    /// The table's URI as the store reads it.
    pub table: String,
    /// The pointer (Iceberg).
    pub pointer: Pointer,
    /// The context files, read again for every batch.
    pub context: ContextFiles,
}

impl LiveSource {
    /// The live facts, read now: the stop `switches` named (first, so a
    /// halt set before the facts are read is seen), the pointer as the
    /// source answers it, or (Delta) the listing of `log_prefix`; the
    /// context; the clock.
    pub async fn facts(
        &self,
        planner: &mut Planner,
        log_prefix: Option<&str>,
        switches: &[String],
    ) -> Result<wt::Facts, HostError> {
        let switches = crate::session::switch::read_switches(switches).await;
        let (pointer, log) = match log_prefix {
            Some(prefix) => (
                None,
                crate::catalogs::pointer::log_listing(&self.store, prefix).await?,
            ),
            None => (
                Some(
                    self.pointer
                        .resolve(planner, &self.store, &self.table)
                        .await?,
                ),
                Vec::new(),
            ),
        };
        Ok(wt::Facts {
            pointer,
            log,
            context: self.context.context_json(planner)?,
            clock_ms: clock_ms(),
            switches,
        })
    }
}

/// What a batched deletion did, for the reports (every receipt went to
/// the sink as it came: a run of a million keys holds none of them).
pub struct Deleted {
    /// The `damaged` receipts: deleted keys the live table needs.
    pub damaged: Vec<wt::DeletionReceipt>,
    /// What the session concluded.
    pub outcome: wt::DeletionOutcome,
}

/// Where the session's receipts are drained to.
#[derive(Clone, Copy)]
pub enum Drain {
    /// To this host only (`apply`).
    Plain,
    /// Through the ledger that started the deletion, which records each
    /// (`sweep`), at the run's time.
    Ledger(LedgerHandle, i64),
}

/// Keys one `damage-keys` call asks for.
const DAMAGE_KEYS_PIECE: u32 = 4096;

/// A receipt as a ledger keeps it, in JSON (`ledger show`).
pub fn stored_receipt_json(c: &wt::Receipt) -> Value {
    let mut v = json!({
        "key": c.key, "result": crate::names::result_name(c.result),
        "version": c.version.as_ref().map(version_json),
        "requestedMs": c.requested_ms, "confirmedMs": c.confirmed_ms,
        "deleteMarker": c.delete_marker, "detail": c.detail,
    });
    if c.delete_marker_version_id.is_some() {
        v["deleteMarkerVersionId"] = json!(c.delete_marker_version_id);
    }
    v
}

/// A receipt as the receipts file spells it (JSON Lines).
pub fn receipt_json(r: &wt::DeletionReceipt) -> Value {
    let mut v = stored_receipt_json(&r.receipt);
    v["uri"] = json!(r.uri);
    v["planned"] = version_json(&r.planned);
    if let Some(h) = &r.restore {
        v["restore"] = json!(h);
    }
    v
}

/// What one HEAD or DELETE task came back with.
enum Done {
    Head(String, wt::HeadOutcome),
    Delete(String, wt::StoreAnswer, i64, Option<i64>),
}

/// HEADs a run of targets (each in the bucket holding it: a key under
/// another write root may live in another bucket).
async fn heads(store: Store, run: Vec<wt::Target>) -> Vec<Done> {
    let seen = store
        .head_run(run.iter().map(|t| t.uri.clone()).collect())
        .await;
    run.into_iter()
        .zip(seen)
        .map(|(t, seen)| {
            Done::Head(
                t.key,
                match seen {
                    Ok(Some(o)) => wt::HeadOutcome::Found(o.version()),
                    Ok(None) => wt::HeadOutcome::Absent,
                    Err(e) => wt::HeadOutcome::Failed(e.to_string()),
                },
            )
        })
        .collect()
}

/// DELETEs a run of targets, each once, under the conditions the session
/// set (entity tag, generation) that the store can enforce:
/// what the store said. An error is an unknown outcome (the request may
/// have been carried out); a key no store holds was never requested.
async fn deletes_of(store: Store, run: Vec<wt::Target>) -> Vec<Done> {
    let done = store
        .delete_run(
            run.iter()
                .map(|t| {
                    let when = crate::stores::Condition {
                        if_match: t.if_match.clone(),
                        if_version: t.if_version.clone(),
                    };
                    (t.uri.clone(), when)
                })
                .collect(),
        )
        .await;
    run.into_iter()
        .zip(done)
        .map(|(t, (answer, requested, answered))| {
            let answer = match answer {
                Err(e) => wt::StoreAnswer::Failed(e.to_string()),
                Ok(Ok(d)) if d.changed => wt::StoreAnswer::Changed,
                Ok(Ok(d)) if d.existed => wt::StoreAnswer::Deleted(d.delete_marker),
                Ok(Ok(_)) => wt::StoreAnswer::Absent,
                Ok(Err(e)) => wt::StoreAnswer::Unknown(e.to_string()),
            };
            let answered = match answer {
                wt::StoreAnswer::Unknown(_) => None,
                _ => Some(answered),
            };
            Done::Delete(t.key, answer, requested, answered)
        })
        .collect()
}

/// Up to `n` targets from the front of `queue`.
fn take_run(queue: &mut std::collections::VecDeque<wt::Target>, n: usize) -> Vec<wt::Target> {
    let n = n.min(queue.len());
    queue.drain(..n).collect()
}

/// Drives the deletion session `d` to its end: reads the facts it asks
/// for from `source`, HEADs and DELETEs what it names (`concurrency` in
/// flight), runs its damage check with `wasm`'s planner; `sink` gets every
/// receipt as it is written (a crash loses at most the ones in flight),
/// drained as `drain` says.
pub async fn run(
    planner: &mut Planner,
    d: DeletionHandle,
    source: &LiveSource,
    concurrency: usize,
    wasm: Option<&str>,
    drain: Drain,
    sink: &mut dyn FnMut(&wt::DeletionReceipt) -> Result<(), HostError>,
) -> Result<Deleted, HostError> {
    let mut damaged = Vec::new();
    let mut take = |planner: &mut Planner| -> Result<bool, HostError> {
        let piece = match drain {
            Drain::Plain => planner.deletion_receipts(d)?,
            Drain::Ledger(l, now) => planner.ledger_record_drained(l, d, now).map_err(|e| {
                HostError::Stopped(format!("the receipts could not be recorded: {e}"))
            })?,
        };
        for r in &piece {
            sink(r)?;
            if r.receipt.result == wt::DeleteResult::Damaged {
                damaged.push(r.clone());
            }
        }
        Ok(!piece.is_empty())
    };
    let concurrency = concurrency.max(1);
    let mut waiting: std::collections::VecDeque<wt::Target> = Default::default();
    let mut deletes: std::collections::VecDeque<wt::Target> = Default::default();
    let mut flight = FuturesUnordered::new();
    loop {
        while let Some(r) = planner.deletion_poll(d)? {
            match r {
                wt::DeletionRequest::ReadFacts(f) => {
                    if matches!(f.purpose, wt::FactsPurpose::Final) {
                        hook("final")?;
                    }
                    let facts = source
                        .facts(planner, f.log_prefix.as_deref(), &f.switches)
                        .await;
                    planner.deletion_facts(d, facts)?;
                }
                wt::DeletionRequest::Head(b) => {
                    hook(&b.batch.to_string())?;
                    waiting.extend(b.objects);
                }
                wt::DeletionRequest::Delete(b) => deletes.extend(b.objects),
                wt::DeletionRequest::CheckDamage(c) => {
                    let mut keys = Vec::new();
                    while (keys.len() as u64) < c.keys {
                        let piece = planner.deletion_damage_keys(
                            d,
                            keys.len() as u64,
                            DAMAGE_KEYS_PIECE,
                        )?;
                        if piece.is_empty() {
                            break;
                        }
                        keys.extend(piece);
                    }
                    let found =
                        crate::session::plan::referenced_with(c.config, &source.table, wasm, keys)
                            .await;
                    planner.deletion_referenced(d, found)?;
                }
            }
        }
        // DELETEs first (each just shown to be the planned version), then
        // HEADs, `concurrency` tasks in flight, each a run of requests (one
        // on a bucket, a run of files on a local disk).
        // A batch spread over the tasks, in runs as long as the store
        // likes them (a local disk: a few threads, each a run of files).
        let spread = |queue: &std::collections::VecDeque<wt::Target>| {
            let run = source.store.run_length();
            queue
                .len()
                .div_ceil(concurrency)
                .clamp(run.div_ceil(4), run)
        };
        while flight.len() < concurrency {
            if !deletes.is_empty() {
                let n = spread(&deletes);
                let r = take_run(&mut deletes, n);
                flight.push(futures::future::Either::Left(deletes_of(
                    source.store.clone(),
                    r,
                )));
            } else if !waiting.is_empty() {
                let n = spread(&waiting);
                let r = take_run(&mut waiting, n);
                flight.push(futures::future::Either::Right(heads(
                    source.store.clone(),
                    r,
                )));
            } else {
                break;
            }
        }
        take(planner)?;
        match flight.next().await {
            Some(done) => {
                for x in done {
                    match x {
                        Done::Head(key, a) => planner.deletion_head(d, &key, &a)?,
                        Done::Delete(key, a, requested, answered) => {
                            planner.deletion_delete(d, &key, &a, requested, answered)?
                        }
                    }
                }
            }
            None => {
                if planner.deletion_done(d)? {
                    break;
                }
                // Receipts still to drain (a stop hands them out in pieces).
                if take(planner)? {
                    continue;
                }
                if waiting.is_empty() && deletes.is_empty() {
                    return Err(HostError::Stopped(
                        "the deletion session waits for an answer this host never got asked for (a bug)"
                            .into(),
                    ));
                }
            }
        }
    }
    while take(planner)? {}
    Ok(Deleted {
        damaged,
        outcome: planner.deletion_outcome(d)?,
    })
}
