//! Deleting sealed keys: in bounded batches, each one accepted by the core
//! against facts read just before it, and a damage check after the last.
//!
//! Used by `apply` and `sweep`. For each batch: re-read the live pointer
//! (Delta: the newest commit and its identity) and the context files, ask
//! the component's `accept-plan`; the first refusal stops the run (the keys
//! left get `skipped-stopped` receipts saying why), keys a live hold or
//! writer covers get `skipped-protected`. Within a batch every key is HEADed
//! and deleted only if the core's `same-version` says the answer is still
//! the planned version. After the last
//! batch the facts are read once more: if the core still accepts them,
//! nothing can reference what was deleted (metadata is immutable); if not,
//! a planner session on the live pointer says which deleted keys the table
//! references now, and each is reported as damage. This module compares no
//! pointer, generation or time itself.

use futures::StreamExt;
use serde_json::{json, Value};

use crate::component::{result_name, version_json, wt, LedgerHandle, Planner};
use crate::context::ContextFiles;
use crate::error::HostError;
use crate::plan::{self, Format, PlanInput};
use crate::pointer::Pointer;
use crate::store::{clock_ms, Object, Store};

/// Runs the test hook, if `LAKESWEEP_TEST_HOOK` names one, with `step`
/// (`N`: batch N was just accepted and is about to be deleted; `final`:
/// the last batch is done, the damage check follows). Tests and recovery
/// drills use it to land a commit, a hold or a lease exactly there; it
/// decides nothing.
fn hook(step: &str) -> Result<(), String> {
    let Some(cmd) = std::env::var_os("LAKESWEEP_TEST_HOOK") else {
        return Ok(());
    };
    let status = std::process::Command::new(&cmd)
        .arg(step)
        .status()
        .map_err(|e| format!("LAKESWEEP_TEST_HOOK {}: {e}", cmd.to_string_lossy()))?;
    if !status.success() {
        return Err(format!(
            "LAKESWEEP_TEST_HOOK {} {step} failed: {status}",
            cmd.to_string_lossy()
        ));
    }
    Ok(())
}

/// Keys per batch by default: the pointer and context are re-read, and the
/// core asked again, before every batch.
pub const DEFAULT_BATCH: usize = 256;

/// Where the live facts come from.
pub struct LiveSource {
    /// The store holding the table.
    pub store: Store,
    /// The table's URI as the store reads it.
    pub table: String,
    /// The pointer (Iceberg).
    pub pointer: Pointer,
    /// `--location-map` pairs, as when planning.
    pub location_map: Vec<(String, String)>,
    /// The table is Delta (the newest commit is the pointer).
    pub delta: bool,
    /// The context files, read again for every batch.
    pub context: ContextFiles,
    /// Accept a plan judged ahead of the clock.
    pub allow_future_now: bool,
    /// `sweep`: its ledger, against whose drills the core checks a
    /// policy's restore-drill gate for every batch (`apply` has none).
    pub ledger: Option<LedgerHandle>,
}

impl LiveSource {
    /// The core's answer for a batch: `accept-plan`, or under a ledger
    /// `ledger-accept`.
    pub fn accept(
        &self,
        planner: &mut Planner,
        plan_json: &str,
        facts: &wt::LiveFacts,
    ) -> Result<wt::Acceptance, String> {
        match self.ledger {
            None => planner.accept(plan_json, facts),
            Some(l) => planner.ledger_accept(l, plan_json, facts),
        }
    }

    /// The live facts, read now.
    pub async fn facts(
        &self,
        planner: &mut Planner,
        canonical: &str,
    ) -> Result<wt::LiveFacts, String> {
        let (metadata_location, head) = if self.delta {
            let h =
                crate::pointer::delta_head(planner, &self.store, &self.table, canonical).await?;
            (h.uri, Some(h.version))
        } else {
            let raw = self.pointer.resolve(&self.store, &self.table).await?;
            (planner.canonical_pointer(&raw, &self.location_map)?, None)
        };
        Ok(wt::LiveFacts {
            metadata_location,
            head,
            context: self.context.context_json(planner)?,
            clock_ms: clock_ms(),
            allow_future_now: self.allow_future_now,
        })
    }
}

/// One key to delete and the version it must still be.
pub struct Item {
    /// Key relative to the table location.
    pub key: String,
    /// The planned (pinned) version.
    pub pinned: wt::ObjectVersion,
}

/// A receipt as this host writes it: the core's receipt, with the URI,
/// the planned version and, for dry runs and damage, its own result name.
#[derive(Clone)]
pub struct Line {
    /// The receipt the ledger records.
    pub receipt: wt::Receipt,
    /// The object's URI.
    pub uri: String,
    /// The version the plan pinned.
    pub planned: wt::ObjectVersion,
    /// `would-delete` (dry run) or `damaged` instead of the receipt's result.
    pub label: Option<&'static str>,
    /// How to get a damaged object back.
    pub restore: Option<String>,
}

impl Line {
    /// The result's name as the receipts file spells it.
    pub fn result(&self) -> &'static str {
        self.label.unwrap_or(result_name(self.receipt.result))
    }

    /// The receipts file's line (JSON).
    pub fn to_json(&self) -> Value {
        let r = &self.receipt;
        let mut v = json!({
            "key": r.key, "uri": self.uri, "result": self.result(),
            "planned": version_json(&self.planned),
            "version": r.version.as_ref().map(version_json),
            "requestedMs": r.requested_ms, "confirmedMs": r.confirmed_ms,
            "deleteMarker": r.delete_marker, "detail": r.detail,
        });
        if r.delete_marker_version_id.is_some() {
            v["deleteMarkerVersionId"] = json!(r.delete_marker_version_id);
        }
        if let Some(h) = &self.restore {
            v["restore"] = json!(h);
        }
        v
    }
}

/// What a batched deletion did.
#[derive(Default)]
pub struct Deleted {
    /// Every receipt, in the order written.
    pub receipts: Vec<Line>,
    /// Why the run stopped before its last key, if it did.
    pub stopped: Option<Vec<String>>,
    /// Damage receipts: deleted keys the live table references (or a live
    /// hold covers) after the run.
    pub damage: Vec<Line>,
    /// Set when the damage check itself could not be made (then the run
    /// must be treated as possibly damaged).
    pub damage_unchecked: Option<String>,
}

/// Options of a batched deletion.
pub struct Batching {
    /// Keys per batch.
    pub batch: usize,
    /// Deletes in flight at once.
    pub concurrency: usize,
    /// Check everything, delete nothing.
    pub dry_run: bool,
    /// `--wasm`, for the damage check's session.
    pub wasm: Option<String>,
}

/// Deletes `items` of `plan_json` in batches; `sink` gets every receipt as
/// it is made (written out at once, so a crash loses at most one line).
pub async fn run(
    planner: &mut Planner,
    plan_json: &str,
    source: &LiveSource,
    items: Vec<Item>,
    opts: &Batching,
    sink: &mut dyn FnMut(&Line) -> Result<(), HostError>,
) -> Result<Deleted, HostError> {
    let plan = planner.verify_plan(plan_json)?;
    let canonical = plan.table_location.clone();
    let mut out = Deleted::default();
    let mut deleted_keys: Vec<(String, wt::ObjectVersion)> = Vec::new();
    let mut rest = items.into_iter().peekable();
    let mut number = 0usize;
    while rest.peek().is_some() {
        number += 1;
        let batch: Vec<Item> = rest.by_ref().take(opts.batch.max(1)).collect();
        // Facts that cannot be read (the catalog unreachable, a context file
        // gone) stop the run like a refusal: deletes may have happened
        // already, so this is never an error that says "nothing deleted".
        let answer = match source.facts(planner, &canonical).await {
            Ok(facts) => source.accept(planner, plan_json, &facts),
            Err(e) => Err(e),
        };
        let refusal: Option<Vec<String>> = match &answer {
            Err(e) => Some(vec![format!("the live state could not be read: {e}")]),
            Ok(acc) if !acc.granted => Some(acc.differences.clone()),
            Ok(_) => None,
        };
        if let Some(why) = refusal {
            let detail = format!("not deleted: the run stopped ({})", why.join("; "));
            for it in batch.into_iter().chain(rest.by_ref()) {
                let r = receipt(
                    &source.table,
                    &it,
                    wt::DeleteResult::SkippedStopped,
                    None,
                    Some(detail.clone()),
                );
                sink(&r)?;
                out.receipts.push(r);
            }
            out.stopped = Some(why);
            break;
        }
        let acc = answer?;
        hook(&number.to_string())?;
        let mut todo = Vec::new();
        for it in batch {
            match acc.denied.iter().find(|d| d.key == it.key) {
                Some(d) => {
                    let why = &d.why;
                    let r = receipt(
                        &source.table,
                        &it,
                        wt::DeleteResult::SkippedProtected,
                        None,
                        Some(format!("not deleted: {why}")),
                    );
                    sink(&r)?;
                    out.receipts.push(r);
                }
                None => todo.push(it),
            }
        }
        // The deletes run concurrently on this task; each asks the planner,
        // between its HEAD and its DELETE, whether the object is still the
        // pinned version (a synchronous call: no borrow spans an await).
        let judge = std::cell::RefCell::new(&mut *planner);
        let mut results = futures::stream::iter(todo)
            .map(|it| {
                let store = source.store.clone();
                let table = source.table.clone();
                let dry = opts.dry_run;
                let judge = &judge;
                async move {
                    let same = |pinned: &wt::ObjectVersion, seen: &wt::ObjectVersion| {
                        judge.borrow_mut().same_version(pinned, seen)
                    };
                    let r = delete_one(&store, &table, &it, dry, &same).await;
                    (it, r)
                }
            })
            .buffer_unordered(opts.concurrency.max(1));
        // Each receipt is written as its delete ends: a crash loses at most
        // the lines in flight.
        while let Some((it, r)) = results.next().await {
            if r.label.is_none() && r.receipt.result == wt::DeleteResult::Deleted {
                deleted_keys.push((it.key.clone(), it.pinned.clone()));
            }
            sink(&r)?;
            out.receipts.push(r);
        }
    }
    if !deleted_keys.is_empty() {
        hook("final")?;
        damage_check(
            planner,
            plan_json,
            &plan,
            source,
            &canonical,
            &deleted_keys,
            opts,
            &mut out,
        )
        .await;
        for r in &out.damage {
            sink(r)?;
        }
    }
    Ok(out)
}

/// After the last batch: which deleted keys does the live table reference,
/// or a live hold cover? Any failure to tell is recorded, never ignored.
#[allow(clippy::too_many_arguments)]
async fn damage_check(
    planner: &mut Planner,
    plan_json: &str,
    plan: &wt::SealedPlan,
    source: &LiveSource,
    canonical: &str,
    deleted: &[(String, wt::ObjectVersion)],
    opts: &Batching,
    out: &mut Deleted,
) {
    let check = async {
        let facts = source.facts(planner, canonical).await?;
        let acc = source.accept(planner, plan_json, &facts)?;
        let mut found: Vec<(String, String)> = deleted
            .iter()
            .filter_map(|(k, _)| {
                acc.denied
                    .iter()
                    .find(|d| d.key == *k)
                    .map(|d| (k.clone(), format!("now covered by {}", d.why)))
            })
            .collect();
        if !acc.granted {
            // The table (or the context) changed since the plan: ask the
            // planner what the live table references.
            let input = PlanInput {
                table: source.table.clone(),
                pointer: source.pointer.clone(),
                format: if source.delta {
                    Format::Delta
                } else {
                    Format::Iceberg
                },
                now_ms: plan.tokens.now_ms,
                retention_ms: Some(plan.tokens.file_retention_ms),
                location_map: source.location_map.clone(),
                wasm: opts.wasm.clone(),
                policy: None,
                context: facts.context.clone(),
                keep_all_decisions: false,
                keep_versions: Vec::new(),
                log_cleanup: false,
                allow_short_retention: true,
                memory_budget: None,
                manifest_cache: false,
                origin: None,
                report: false,
                what_if: None,
                // The plan's pointer was read earlier in this run: a live
                // pointer naming an older document is refused.
                foreign_roots: Vec::new(),
                prior_pointers: vec![plan.tokens.metadata_location.clone()],
                deleted_index: None,
            };
            let keys = deleted.iter().map(|(k, _)| k.clone()).collect();
            found.extend(plan::referenced_now(&input, keys).await?);
        }
        Ok::<_, String>(found)
    };
    match check.await {
        Err(e) => out.damage_unchecked = Some(e),
        Ok(found) => {
            for (key, why) in found {
                let Some(pinned) = deleted
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, p)| p.clone())
                else {
                    continue;
                };
                let uri = crate::store::object_uri(&source.table, &key);
                out.damage.push(Line {
                    receipt: wt::Receipt {
                        key,
                        result: wt::DeleteResult::Deleted,
                        version: Some(pinned.clone()),
                        requested_ms: clock_ms(),
                        confirmed_ms: None,
                        delete_marker: false,
                        delete_marker_version_id: None,
                        detail: Some(format!(
                            "deleted by this run, and the live table needs it: {why}"
                        )),
                    },
                    restore: Some(restore_hint(&uri, &pinned)),
                    uri,
                    planned: pinned,
                    label: Some("damaged"),
                });
            }
        }
    }
}

/// How to get a deleted object back.
pub fn restore_hint(uri: &str, pinned: &wt::ObjectVersion) -> String {
    match (uri.strip_prefix("s3://"), pinned.version_id.as_deref()) {
        (Some(rest), Some(v)) => {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            format!(
                "versioned bucket: aws s3api copy-object --bucket {bucket} --key '{key}' --copy-source '{bucket}/{key}?versionId={v}'"
            )
        }
        _ => "no version to restore from on this store: restore the object from a backup or the writer's output".into(),
    }
}

fn receipt(
    table: &str,
    it: &Item,
    result: wt::DeleteResult,
    seen: Option<&Object>,
    detail: Option<String>,
) -> Line {
    Line {
        receipt: wt::Receipt {
            key: it.key.clone(),
            result,
            version: seen.map(Object::version),
            requested_ms: clock_ms(),
            confirmed_ms: Some(clock_ms()),
            delete_marker: false,
            delete_marker_version_id: None,
            detail,
        },
        uri: crate::store::object_uri(table, &it.key),
        planned: it.pinned.clone(),
        label: None,
        restore: None,
    }
}

/// HEAD, ask the planner whether it is still the pinned version (`same`),
/// delete; the receipt.
async fn delete_one(
    store: &Store,
    table: &str,
    it: &Item,
    dry: bool,
    same: &dyn Fn(&wt::ObjectVersion, &wt::ObjectVersion) -> Result<bool, String>,
) -> Line {
    use wt::DeleteResult as R;
    let uri = crate::store::object_uri(table, &it.key);
    // A key under another write root may live in another bucket.
    let store = match store.holding(&uri) {
        Ok(s) => s,
        Err(e) => return receipt(table, it, R::Failed, None, Some(e)),
    };
    let store = &store;
    let requested = clock_ms();
    let done = |result: R, seen: Option<&Object>, marker: bool, detail: Option<String>| Line {
        receipt: wt::Receipt {
            key: it.key.clone(),
            result,
            version: seen.map(Object::version),
            requested_ms: requested,
            confirmed_ms: (result != R::Unknown).then(clock_ms),
            delete_marker: marker,
            delete_marker_version_id: None,
            detail,
        },
        uri: uri.clone(),
        planned: it.pinned.clone(),
        label: None,
        restore: None,
    };
    let seen = match store.head(&uri).await {
        Err(e) => return done(R::Failed, None, false, Some(e)),
        Ok(None) => return done(R::AlreadyAbsent, None, false, None),
        Ok(Some(o)) => o,
    };
    match same(&it.pinned, &seen.version()) {
        Ok(true) => {}
        Ok(false) => return done(R::SkippedChanged, Some(&seen), false, None),
        Err(e) => return done(R::Failed, Some(&seen), false, Some(e)),
    }
    if dry {
        let mut l = done(R::Deleted, Some(&seen), false, None);
        l.label = Some("would-delete");
        return l;
    }
    match store.delete_if(&uri, seen.etag.as_deref()).await {
        // The store's conditional delete found another version: kept.
        Ok(d) if d.changed => done(
            R::SkippedChanged,
            Some(&seen),
            false,
            Some("the store's If-Match found another version at delete time".into()),
        ),
        // A versioned bucket keeps the deleted version under the marker
        // only when that version had an id: a suspended bucket's "null"
        // version is gone for good, whatever the answer says of a marker.
        // The receipt names both (checkable against ListObjectVersions).
        Ok(d) if d.existed => {
            let mut r = done(
                R::Deleted,
                Some(&seen),
                d.delete_marker.is_some() && seen.version_id.is_some(),
                None,
            );
            r.receipt.delete_marker_version_id = d.delete_marker;
            r
        }
        Ok(_) => done(R::AlreadyAbsent, Some(&seen), false, None),
        Err(e) => done(R::Failed, Some(&seen), false, Some(e)),
    }
}
