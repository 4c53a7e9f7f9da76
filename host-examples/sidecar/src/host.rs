//! Drives the component: serves its reads and listings from the local file
//! system, re-resolves the pointer, and renders the sealed plan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

use crate::args::PlanArgs;

mod wit {
    wasmtime::component::bindgen!({ path: "../../wit", world: "lakesweep" });
}
use wit::lakesweep::planner::types as wt;

/// Objects per listing page fed to the planner.
const PAGE: usize = 1000;

fn describe(e: &wt::Error) -> String {
    match e {
        wt::Error::Malformed(m) => format!("malformed input {}: {}", m.uri, m.detail),
        wt::Error::Unsupported(u) => format!("unsupported: {} (in {})", u.feature, u.uri),
        wt::Error::Protocol(d) => format!("host protocol error: {d}"),
        wt::Error::InvalidOptions(i) => format!("invalid option {}: {}", i.field, i.detail),
        wt::Error::Unsafe(u) => format!("unsafe to proceed ({:?}): {}", u.reason, u.detail),
    }
}

/// `file:///x`, `file:/x` or `/x` -> a local path.
fn local(uri: &str) -> Result<PathBuf, String> {
    let p = uri
        .strip_prefix("file://")
        .or_else(|| uri.strip_prefix("file:"))
        .unwrap_or(uri);
    if p.starts_with('/') {
        Ok(PathBuf::from(p))
    } else {
        Err(format!(
            "`{uri}` is not a local path (this build serves the local file system only)"
        ))
    }
}

fn to_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// Resolves the current metadata: `--metadata`, else `metadata/version-hint.text`.
fn resolve_pointer(args: &PlanArgs, table: &Path) -> Result<String, String> {
    if let Some(m) = &args.metadata {
        let p = local(m).or_else(|_| Ok::<_, String>(PathBuf::from(m)))?;
        let p = if p.is_absolute() {
            p
        } else {
            std::env::current_dir().map_err(|e| e.to_string())?.join(p)
        };
        return Ok(to_uri(&p));
    }
    let hint = table.join("metadata/version-hint.text");
    let text = std::fs::read_to_string(&hint).map_err(|_| {
        format!(
            "no --metadata given and no {} (pass --metadata with the current metadata file)",
            hint.display()
        )
    })?;
    let v = text.trim();
    let name = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        format!("v{v}.metadata.json")
    } else {
        v.to_owned()
    };
    Ok(to_uri(&table.join("metadata").join(name)))
}

fn list(dir: &Path) -> Result<Vec<wt::ListedObject>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("list {}: {e}", d.display()))?;
        for e in rd {
            let e = e.map_err(|e| format!("list {}: {e}", d.display()))?;
            let md = e.metadata().map_err(|e| format!("stat {}: {e}", e))?;
            if md.is_dir() {
                stack.push(e.path());
                continue;
            }
            let mtime = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
                // Unknown mtime: treat as brand new (kept), never as old.
                .unwrap_or(i64::MAX);
            out.push(wt::ListedObject {
                key: to_uri(&e.path()),
                size: md.len(),
                last_modified_ms: mtime,
                etag: None,
                version_id: None,
            });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

fn wasm_path(args: &PlanArgs) -> PathBuf {
    if let Some(p) = &args.wasm {
        return p.into();
    }
    if let Some(p) = std::env::var_os("LAKESWEEP_WASM") {
        return p.into();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lakesweep.wasm")
}

/// Runs `plan`: prints the report (or JSON) and writes the plan with `--out`.
pub fn plan(args: &PlanArgs) -> Result<(), String> {
    let table = local(&args.table).or_else(|_| Ok::<_, String>(PathBuf::from(&args.table)))?;
    let table =
        std::fs::canonicalize(&table).map_err(|e| format!("table {}: {e}", table.display()))?;
    let pointer = resolve_pointer(args, &table)?;

    let engine = Engine::new(&Config::new()).map_err(|e| e.to_string())?;
    let wasm = wasm_path(args);
    let component = Component::from_file(&engine, &wasm).map_err(|e| {
        format!(
            "load {}: {e} (build it with scripts/build-component.sh)",
            wasm.display()
        )
    })?;
    let mut store = Store::new(&engine, ());
    let linker: Linker<()> = Linker::new(&engine);
    let api =
        wit::Lakesweep::instantiate(&mut store, &component, &linker).map_err(|e| e.to_string())?;
    let p = api.lakesweep_planner_planner();
    let cfg = wt::SessionConfig {
        table_location: to_uri(&table),
        format: wt::TableFormat::Iceberg,
        metadata_location: pointer.clone(),
        now_ms: args.now_ms,
        file_retention_ms: args.retention_ms,
        keep_deleted_entries: true,
        allow_short_retention: false,
        location_map: args
            .location_map
            .iter()
            .map(|(f, t)| wt::PathMapping {
                from: f.clone(),
                to: t.clone(),
            })
            .collect(),
    };
    let trap = |e: wasmtime::Error| format!("component trapped: {e}");
    let session = p
        .session()
        .call_start(&mut store, &cfg)
        .map_err(trap)?
        .map_err(|e| describe(&e))?;
    let mut decisions: Vec<wt::Decision> = Vec::new();
    let mut reads = 0usize;
    loop {
        let Some(req) = p
            .session()
            .call_poll_request(&mut store, session)
            .map_err(trap)?
        else {
            break;
        };
        let r = match req {
            wt::Request::ReadBlob(uri) => {
                reads += 1;
                match std::fs::read(local(&uri)?) {
                    Ok(b) => p.session().call_handle_blob(&mut store, session, &uri, &b),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        p.session().call_handle_missing(&mut store, session, &uri)
                    }
                    Err(e) => return Err(format!("read {uri}: {e} (nothing deleted)")),
                }
            }
            wt::Request::List(prefix) => {
                let objs = list(&local(prefix.trim_end_matches('/'))?)?;
                let pages: Vec<&[wt::ListedObject]> = if objs.is_empty() {
                    vec![&[]]
                } else {
                    objs.chunks(PAGE).collect()
                };
                let n = pages.len();
                let mut r = Ok(Ok(()));
                for (i, page) in pages.into_iter().enumerate() {
                    r = p
                        .session()
                        .call_handle_page(&mut store, session, page, i + 1 == n);
                    if !matches!(r, Ok(Ok(()))) {
                        break;
                    }
                    decisions.extend(
                        p.session()
                            .call_drain_decisions(&mut store, session)
                            .map_err(trap)?,
                    );
                    if n > 1 {
                        eprint!(
                            "\rlisted {} of {} objects",
                            ((i + 1) * PAGE).min(objs.len()),
                            objs.len()
                        );
                    }
                }
                if n > 1 {
                    eprintln!();
                }
                r
            }
            wt::Request::ResolvePointer => {
                let now = resolve_pointer(args, &table)?;
                p.session()
                    .call_handle_pointer(&mut store, session, Some(&now))
            }
        };
        r.map_err(trap)?.map_err(|e| describe(&e))?;
        decisions.extend(
            p.session()
                .call_drain_decisions(&mut store, session)
                .map_err(trap)?,
        );
    }
    let plan_json = p
        .session()
        .call_finish(&mut store, session)
        .map_err(trap)?
        .map_err(|e| describe(&e))?;
    if let Some(out) = &args.out {
        std::fs::write(out, &plan_json).map_err(|e| format!("write {out}: {e}"))?;
    }
    let plan: Value = serde_json::from_str(&plan_json).map_err(|e| e.to_string())?;
    // Last decision per key wins (a demotion follows the candidate it replaces).
    let mut last: BTreeMap<String, wt::Decision> = BTreeMap::new();
    for d in decisions {
        last.insert(d.relative_key.clone(), d);
    }
    if args.json {
        let keep: Vec<Value> = last
            .values()
            .filter(|d| d.verdict != wt::Verdict::Candidate)
            .map(|d| json!({"key": d.relative_key, "reason": verdict_name(d.verdict), "detail": d.detail}))
            .collect();
        let delete: Vec<&Value> = plan["delete"]
            .as_array()
            .map(|a| a.iter().map(|d| &d["key"]).collect())
            .unwrap_or_default();
        let out = json!({
            "table": plan["table_location"], "delete": delete, "keep": keep,
            "summary": plan["summary"], "warnings": plan["warnings"],
            "digest": plan["digest"], "tokens": plan["tokens"],
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
    } else {
        print_report(&plan, &last, reads);
    }
    Ok(())
}

fn verdict_name(v: wt::Verdict) -> &'static str {
    match v {
        wt::Verdict::Referenced => "referenced",
        wt::Verdict::NearMiss => "near-miss",
        wt::Verdict::Young => "young",
        wt::Verdict::Hidden => "hidden",
        wt::Verdict::Unverified => "unverified",
        wt::Verdict::OwnerCheck => "owner-check",
        wt::Verdict::Candidate => "candidate",
        wt::Verdict::Demoted => "demoted",
    }
}

fn tally(v: &Value) -> (u64, u64) {
    (
        v["count"].as_u64().unwrap_or(0),
        v["bytes"].as_u64().unwrap_or(0),
    )
}

fn print_report(plan: &Value, last: &BTreeMap<String, wt::Decision>, reads: usize) {
    let s = &plan["summary"];
    println!(
        "lakesweep plan for {}",
        plan["table_location"].as_str().unwrap_or("?")
    );
    println!(
        "  metadata      {}",
        plan["tokens"]["metadata_location"].as_str().unwrap_or("?")
    );
    println!(
        "  snapshots     {} (all kept: expiry is planned separately)   blobs read: {reads}",
        s["snapshots"]
    );
    let (n, b) = tally(&s["listed"]);
    println!("  listed        {n} objects, {b} bytes");
    for name in [
        "referenced",
        "young",
        "hidden",
        "near-miss",
        "unverified",
        "demoted",
        "candidate",
    ] {
        let (n, b) = tally(&s["verdicts"][name]);
        if n > 0 {
            println!("  {name:<13} {n:>6}  {b:>12} bytes");
        }
    }
    if let Some(r) = s["reclaimable"].as_object() {
        for (kind, t) in r {
            let (n, b) = tally(t);
            if n > 0 {
                println!("    reclaimable {kind:<14} {n:>5}  {b:>10} bytes");
            }
        }
    }
    println!();
    let cands: Vec<&wt::Decision> = last
        .values()
        .filter(|d| d.verdict == wt::Verdict::Candidate)
        .collect();
    if cands.is_empty() {
        println!("nothing to delete");
    } else {
        println!("would delete ({}):", cands.len());
        for d in cands {
            println!("  {}  ({} bytes)", d.relative_key, d.size);
        }
    }
    let kept: Vec<&wt::Decision> = last
        .values()
        .filter(|d| !matches!(d.verdict, wt::Verdict::Candidate | wt::Verdict::Referenced))
        .collect();
    if !kept.is_empty() {
        println!("kept although unreferenced ({}):", kept.len());
        for d in kept {
            println!(
                "  {}  [{}] {}",
                d.relative_key,
                verdict_name(d.verdict),
                d.detail
            );
        }
    }
    if let Some(w) = plan["warnings"].as_array().filter(|w| !w.is_empty()) {
        println!("warnings:");
        for x in w {
            println!("  - {}", x.as_str().unwrap_or(""));
        }
    }
    println!(
        "plan digest {} (dry run: nothing was deleted)",
        plan["digest"].as_str().unwrap_or("?")
    );
}
