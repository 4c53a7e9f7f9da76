//! `lakesweep drill`: proves that quarantine bundles would restore, before
//! anyone relies on them. A seeded sample of the table's bundles (the core
//! draws it) is verified exactly as `restore` verifies one (every layer and
//! every pinned version against the bundle), nothing is committed, and the
//! core records the result in the ledger, where a policy's `restoreDrill`
//! gate looks for it before approving deletions.

use serde_json::{json, Value};

use crate::component::{describe, trap, wasm_path, Planner};
use crate::store::{clock_ms, Store};
use crate::sweep::{consumed_keys, default_ledger, parse, save, Lock};

/// What a drill found.
pub struct Drilled {
    /// The drill record (`{at_ms, seed, bundles_total, sampled, failed, passed}`).
    pub drill: Value,
    /// The ledger's gates after it.
    pub gates: Value,
    /// Where the ledger was saved.
    pub ledger_uri: String,
}

/// Runs a drill of `sample` bundles of `table` (all when it has fewer),
/// drawn with `seed` (default: from the clock; reported either way).
pub async fn run(
    table: &str,
    ledger: Option<&str>,
    location_map: &[(String, String)],
    sample: u32,
    seed: Option<u64>,
    wasm: Option<&str>,
) -> Result<Drilled, String> {
    let ledger_uri = ledger
        .map(str::to_owned)
        .unwrap_or_else(|| default_ledger(table));
    let lock = Lock::take(&ledger_uri).await?;
    let r = locked(table, &ledger_uri, location_map, sample, seed, wasm).await;
    lock.release().await;
    r
}

async fn locked(
    table: &str,
    ledger_uri: &str,
    location_map: &[(String, String)],
    sample: u32,
    seed: Option<u64>,
    wasm: Option<&str>,
) -> Result<Drilled, String> {
    let store = Store::for_uri(table)?;
    let lstore = store.holding(ledger_uri)?;
    let text = lstore.read(ledger_uri).await?.ok_or_else(|| {
        format!("no ledger at {ledger_uri}: a drill is recorded in the table's ledger (a first `sweep` creates it)")
    })?;
    let text = String::from_utf8(text).map_err(|_| format!("{ledger_uri} is not UTF-8"))?;
    let consumed = consumed_keys(&parse(&text)?);
    let dirs = crate::bundle::dirs(&store, table).await?;
    let ids: Vec<String> = dirs
        .keys()
        .filter_map(|d| d.rsplit('/').next().map(str::to_owned))
        .collect();
    let seed = seed.unwrap_or(clock_ms() as u64);
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let sampled = planner
        .api
        .lakesweep_planner_planner()
        .call_drill_sample(&mut planner.store, &ids, sample, seed)
        .map_err(trap)?;
    let root = crate::bundle::root(table);
    let mut results = serde_json::Map::new();
    for id in &sampled {
        let dir = format!("{root}/{id}");
        let why = if dirs.get(&dir) != Some(&true) {
            Some("copies but no bundle.json".to_owned())
        } else {
            match crate::bundle::check(&mut planner, &store, table, location_map, &dir, &consumed)
                .await
            {
                Err(e) => Some(format!("cannot be read: {e}")),
                Ok(c) if c.verification["complete"] == true => None,
                Ok(c) => Some(
                    c.verification["problems"]
                        .as_array()
                        .map(|p| {
                            p.iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join("; ")
                        })
                        .unwrap_or_else(|| "incomplete".into()),
                ),
            }
        };
        results.insert(id.clone(), json!(why));
    }
    let out = parse(
        &planner
            .api
            .lakesweep_planner_planner()
            .call_ledger_drill(
                &mut planner.store,
                &text,
                table,
                seed,
                ids.len() as u64,
                &Value::Object(results).to_string(),
                clock_ms(),
            )
            .map_err(trap)?
            .map_err(|e| describe(&e))?,
    )?;
    save(&lstore, ledger_uri, &out["ledger"]).await?;
    Ok(Drilled {
        drill: out["drill"].clone(),
        gates: out["gates"].clone(),
        ledger_uri: ledger_uri.to_owned(),
    })
}

/// The human report of a drill.
pub fn human(d: &Drilled) -> String {
    let v = &d.drill;
    let sampled = v["sampled"].as_array().map(Vec::len).unwrap_or(0);
    let mut out = format!(
        "restore drill: {} of {} bundles verified (seed {}): {}\n",
        sampled,
        v["bundles_total"],
        v["seed"],
        if v["passed"] == true {
            "every one would restore"
        } else {
            "FAILED"
        }
    );
    for id in v["sampled"].as_array().into_iter().flatten() {
        let id = id.as_str().unwrap_or("?");
        match v["failed"][id].as_str() {
            Some(why) => out.push_str(&format!(
                "  {}  would NOT restore: {}\n",
                crate::report::esc(id),
                crate::report::esc(why)
            )),
            None => out.push_str(&format!("  {}  ok\n", crate::report::esc(id))),
        }
    }
    out.push_str(&format!("recorded in {}\n", d.ledger_uri));
    out
}
