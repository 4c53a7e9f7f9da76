//! Deleting sealed keys: in bounded batches, each one accepted by the core
//! against facts read just before it, and a damage check after the last.
//!
//! Used by `apply` and `sweep`. For each batch: re-read the live pointer
//! (Delta: the newest commit and its identity) and the context files, ask
//! the component's `accept-plan`; the first refusal stops the run (the keys
//! left get `skipped-stopped` receipts saying why), keys a live hold or
//! writer covers get `skipped-protected`. Within a batch every key is HEADed
//! and deleted only if it is still the planned version. After the last
//! batch the facts are read once more: if the core still accepts them,
//! nothing can reference what was deleted (metadata is immutable); if not,
//! a planner session on the live pointer says which deleted keys the table
//! references now, and each is reported as damage. This module compares no
//! pointer, generation or time itself.

use futures::StreamExt;
use serde_json::{json, Value};

use crate::component::Planner;
use crate::context::ContextFiles;
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
    /// `sweep`: its ledger (JSON), against whose drills the core checks a
    /// policy's restore-drill gate for every batch (`apply` has none).
    pub ledger: Option<String>,
}

impl LiveSource {
    /// The core's answer for a batch: `accept-plan`, or under a ledger
    /// `ledger-accept`.
    pub fn accept(
        &self,
        planner: &mut Planner,
        plan_json: &str,
        facts: &Value,
    ) -> Result<Value, String> {
        match &self.ledger {
            None => planner.accept(plan_json, &facts.to_string()),
            Some(l) => planner.ledger_accept(l, plan_json, &facts.to_string()),
        }
    }

    /// The live facts (JSON, the core's `LiveFacts`), read now.
    pub async fn facts(&self, planner: &mut Planner, canonical: &str) -> Result<Value, String> {
        let (location, head) = if self.delta {
            let (uri, head) =
                crate::pointer::delta_head(planner, &self.store, &self.table, canonical).await?;
            (uri, Some(head))
        } else {
            let raw = self.pointer.resolve(&self.store, &self.table).await?;
            (planner.canonical_pointer(&raw, &self.location_map)?, None)
        };
        Ok(json!({
            "metadata_location": location,
            "head": head,
            "context": self.context.context_json()?,
            "clock_ms": clock_ms(),
            "allow_future_now": self.allow_future_now,
        }))
    }
}

/// One key to delete and the version it must still be.
pub struct Item {
    /// Key relative to the table location.
    pub key: String,
    /// The planned (pinned) version: `{size, last_modified_ms, etag, version_id}`.
    pub pinned: Value,
}

/// What a batched deletion did.
#[derive(Default)]
pub struct Deleted {
    /// Every receipt, in the order written.
    pub receipts: Vec<Value>,
    /// Why the run stopped before its last key, if it did.
    pub stopped: Option<Vec<String>>,
    /// Damage receipts: deleted keys the live table references (or a live
    /// hold covers) after the run.
    pub damage: Vec<Value>,
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
    sink: &mut dyn FnMut(&Value) -> Result<(), String>,
) -> Result<Deleted, String> {
    let plan: Value = serde_json::from_str(plan_json).map_err(|e| e.to_string())?;
    let canonical = plan["table_location"]
        .as_str()
        .ok_or("plan without table_location")?
        .to_owned();
    let mut out = Deleted::default();
    let mut deleted_keys: Vec<(String, Value)> = Vec::new();
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
            Ok(acc) if acc["granted"] != true => Some(
                acc["differences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|d| d.as_str().map(str::to_owned))
                    .collect(),
            ),
            Ok(_) => None,
        };
        if let Some(why) = refusal {
            let detail = format!("not deleted: the run stopped ({})", why.join("; "));
            for it in batch.into_iter().chain(rest.by_ref()) {
                let r = receipt(
                    &source.table,
                    &it,
                    "skipped-stopped",
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
            match acc["denied"][&it.key].as_str() {
                Some(why) => {
                    let r = receipt(
                        &source.table,
                        &it,
                        "skipped-protected",
                        None,
                        Some(format!("not deleted: {why}")),
                    );
                    sink(&r)?;
                    out.receipts.push(r);
                }
                None => todo.push(it),
            }
        }
        let mut results = futures::stream::iter(todo)
            .map(|it| {
                let store = source.store.clone();
                let table = source.table.clone();
                let dry = opts.dry_run;
                async move {
                    let r = delete_one(&store, &table, &it, dry).await;
                    (it, r)
                }
            })
            .buffer_unordered(opts.concurrency.max(1));
        while let Some((it, r)) = results.next().await {
            if r["result"] == "deleted" {
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
    plan: &Value,
    source: &LiveSource,
    canonical: &str,
    deleted: &[(String, Value)],
    opts: &Batching,
    out: &mut Deleted,
) {
    let check = async {
        let facts = source.facts(planner, canonical).await?;
        let acc = source.accept(planner, plan_json, &facts)?;
        let mut found: Vec<(String, String)> = deleted
            .iter()
            .filter_map(|(k, _)| {
                acc["denied"][k]
                    .as_str()
                    .map(|why| (k.clone(), format!("now covered by {why}")))
            })
            .collect();
        if acc["granted"] != true {
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
                now_ms: plan["tokens"]["now_ms"].as_i64().unwrap_or_else(clock_ms),
                retention_ms: plan["tokens"]["file_retention_ms"].as_i64(),
                location_map: source.location_map.clone(),
                wasm: opts.wasm.clone(),
                policy: None,
                context: facts["context"].as_str().map(str::to_owned),
                keep_all_decisions: false,
                keep_versions: Vec::new(),
                log_cleanup: false,
                allow_short_retention: true,
                memory_budget: None,
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
                let pinned = deleted
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, p)| p.clone())
                    .unwrap_or(Value::Null);
                let uri = crate::store::object_uri(&source.table, &key);
                out.damage.push(json!({
                    "key": key, "uri": uri, "result": "damaged",
                    "detail": format!("deleted by this run, and the live table needs it: {why}"),
                    "planned": pinned,
                    "restore": restore_hint(&uri, &pinned),
                    "requested_ms": clock_ms(), "confirmed_ms": Value::Null,
                    "delete_marker": false, "version": pinned,
                }));
            }
        }
    }
}

/// How to get a deleted object back.
fn restore_hint(uri: &str, pinned: &Value) -> String {
    match (uri.strip_prefix("s3://"), pinned["version_id"].as_str()) {
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
    result: &str,
    seen: Option<&Object>,
    detail: Option<String>,
) -> Value {
    json!({
        "key": it.key, "uri": crate::store::object_uri(table, &it.key), "result": result,
        "planned": it.pinned, "version": seen.map(Object::version_json),
        "requested_ms": clock_ms(), "confirmed_ms": clock_ms(),
        "delete_marker": false, "detail": detail,
    })
}

/// HEAD, compare with the pinned version, delete; the receipt.
async fn delete_one(store: &Store, table: &str, it: &Item, dry: bool) -> Value {
    let uri = crate::store::object_uri(table, &it.key);
    // A key under another write root may live in another bucket.
    let store = match store.holding(&uri) {
        Ok(s) => s,
        Err(e) => {
            return json!({"key": it.key, "uri": uri, "result": "failed", "planned": it.pinned,
                          "version": Value::Null, "requested_ms": clock_ms(),
                          "confirmed_ms": clock_ms(), "delete_marker": false, "detail": e})
        }
    };
    let store = &store;
    let requested = clock_ms();
    let done = |result: &str, seen: Option<&Object>, marker: bool, detail: Option<String>| {
        json!({"key": it.key, "uri": uri, "result": result, "planned": it.pinned,
               "version": seen.map(Object::version_json),
               "requested_ms": requested,
               "confirmed_ms": (result != "unknown").then(clock_ms),
               "delete_marker": marker, "detail": detail})
    };
    let seen = match store.head(&uri).await {
        Err(e) => return done("failed", None, false, Some(e)),
        Ok(None) => return done("already-absent", None, false, None),
        Ok(Some(o)) => o,
    };
    if !seen.is_version(&it.pinned) {
        return done("skipped-changed", Some(&seen), false, None);
    }
    if dry {
        return done("would-delete", Some(&seen), false, None);
    }
    match store.delete_if(&uri, seen.etag.as_deref()).await {
        // The store's conditional delete found another version: kept.
        Ok(d) if d.changed => done(
            "skipped-changed",
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
                "deleted",
                Some(&seen),
                d.delete_marker.is_some() && seen.version_id.is_some(),
                None,
            );
            r["delete_marker_version_id"] = json!(d.delete_marker);
            r
        }
        Ok(_) => done("already-absent", Some(&seen), false, None),
        Err(e) => done("failed", Some(&seen), false, Some(e)),
    }
}
