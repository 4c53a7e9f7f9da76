//! Loads the import-free `lakesweep.wasm` component in wasmtime (empty
//! linker: no WASI, no host functions) and names its errors.

use std::path::{Path, PathBuf};

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

pub mod wit {
    wasmtime::component::bindgen!({ path: "../../wit", world: "lakesweep" });
}
pub use wit::lakesweep::planner::types as wt;

/// A loaded planner component and its store.
pub struct Planner {
    /// The wasmtime store (the component's whole state lives here).
    pub store: Store<()>,
    /// The instantiated exports.
    pub api: wit::Lakesweep,
}

/// The component path: `--wasm`, else `$LAKESWEEP_WASM`, else the repository's
/// `target/lakesweep.wasm`, else next to this executable.
pub fn wasm_path(arg: Option<&str>) -> PathBuf {
    if let Some(p) = arg {
        return p.into();
    }
    if let Some(p) = std::env::var_os("LAKESWEEP_WASM") {
        return p.into();
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lakesweep.wasm");
    if repo.exists() {
        return repo;
    }
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("lakesweep.wasm")))
        .unwrap_or(repo)
}

/// Where compiled components are cached: `$LAKESWEEP_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/lakesweep`, else `~/.cache/lakesweep`; `None` when
/// `LAKESWEEP_CACHE_DIR` is empty (caching off).
fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("LAKESWEEP_CACHE_DIR") {
        Some(d) if d.is_empty() => None,
        Some(d) => Some(d.into()),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|d| d.join("lakesweep")),
    }
}

/// Compiles `wasm`, or loads the machine code compiled for these exact bytes
/// by this exact engine on an earlier run (Cranelift takes most of a second
/// on a 1 MB component; every command pays it otherwise). The cache key
/// hashes the component bytes and the engine's compatibility hash; wasmtime
/// re-checks the artifact's version and settings when loading it and any
/// failure falls back to compiling. The cache is this user's own directory:
/// whoever can write there can already run code as this user.
fn compiled(engine: &Engine, wasm: &[u8]) -> Result<Component, String> {
    use std::hash::{Hash, Hasher};
    let Some(dir) = cache_dir() else {
        return Component::new(engine, wasm).map_err(|e| e.to_string());
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    wasm.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    let file = dir.join(format!("planner-{:016x}.cwasm", h.finish()));
    if file.exists() {
        // SAFETY: the file was written by `Engine::precompile_component` in
        // this user's cache directory (see above); wasmtime verifies its
        // header, version and engine settings before use.
        if let Ok(c) = unsafe { Component::deserialize_file(engine, &file) } {
            return Ok(c);
        }
    }
    let bytes = engine
        .precompile_component(wasm)
        .map_err(|e| e.to_string())?;
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    // Best effort: a cache that cannot be written only costs time.
    if std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&tmp, &bytes).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
    // SAFETY: `bytes` was produced just now by this engine.
    unsafe { Component::deserialize(engine, &bytes) }.map_err(|e| e.to_string())
}

impl Planner {
    /// Loads and instantiates the component at `path`.
    pub fn load(path: &Path) -> Result<Planner, String> {
        let engine = Engine::new(&Config::new()).map_err(|e| e.to_string())?;
        let wasm = std::fs::read(path).map_err(|e| {
            format!(
                "load {}: {e} (build it with scripts/build-component.sh)",
                path.display()
            )
        })?;
        let component =
            compiled(&engine, &wasm).map_err(|e| format!("load {}: {e}", path.display()))?;
        let mut store = Store::new(&engine, ());
        let linker: Linker<()> = Linker::new(&engine);
        let api = wit::Lakesweep::instantiate(&mut store, &component, &linker)
            .map_err(|e| e.to_string())?;
        Ok(Planner { store, api })
    }

    /// Validates a policy; returns the report (JSON).
    pub fn check_policy(&mut self, json: &str) -> Result<String, String> {
        self.api
            .lakesweep_planner_planner()
            .call_check_policy(&mut self.store, json)
            .map_err(trap)?
            .map_err(|e| describe(&e))
    }

    /// Checks a sealed plan document's schema and digest.
    pub fn verify_plan(&mut self, json: &str) -> Result<(), String> {
        self.api
            .lakesweep_planner_planner()
            .call_verify_plan(&mut self.store, json)
            .map_err(trap)?
            .map_err(|e| describe(&e))?;
        Ok(())
    }
}

impl Planner {
    /// The metadata URI the planner reads for `pointer` (mapped by
    /// `--location-map` and canonical), asked of the component itself so
    /// every command agrees with the planner byte for byte.
    pub fn canonical_pointer(
        &mut self,
        pointer: &str,
        map: &[(String, String)],
    ) -> Result<String, String> {
        self.api
            .lakesweep_planner_planner()
            .call_canonical_pointer(&mut self.store, pointer, &mappings(map))
            .map_err(trap)?
            .map_err(|e| describe(&e))
    }

    /// The newest version of a Delta table from its log listing: its URI
    /// and identity (JSON `{size, last_modified_ms, etag, version_id}`).
    pub fn delta_head(
        &mut self,
        table: &str,
        log: &[wt::ListedObject],
    ) -> Result<Option<(String, serde_json::Value)>, String> {
        let head = self
            .api
            .lakesweep_planner_planner()
            .call_delta_head(&mut self.store, table, log)
            .map_err(trap)?
            .map_err(|e| describe(&e))?;
        head.map(|t| {
            let v: serde_json::Value = serde_json::from_str(&t)
                .map_err(|e| format!("component answered bad JSON: {e}"))?;
            Ok((
                v["uri"].as_str().unwrap_or_default().to_owned(),
                v["head"].clone(),
            ))
        })
        .transpose()
    }

    /// The core's clock rule: `judged_at_ms` may not lie ahead of this
    /// machine's clock (what-if runs say `allow_future`).
    pub fn check_clock(&mut self, judged_at_ms: i64, allow_future: bool) -> Result<(), String> {
        self.api
            .lakesweep_planner_planner()
            .call_check_clock(
                &mut self.store,
                judged_at_ms,
                crate::store::clock_ms(),
                allow_future,
            )
            .map_err(trap)?
            .map_err(|e| describe(&e))
    }

    /// [`Planner::accept`] for a batch of a ledger's run (`ledger-accept`):
    /// the policy's restore-drill gate is checked against `ledger_json`.
    pub fn ledger_accept(
        &mut self,
        ledger_json: &str,
        plan_json: &str,
        facts_json: &str,
    ) -> Result<serde_json::Value, String> {
        let text = self
            .api
            .lakesweep_planner_planner()
            .call_ledger_accept(&mut self.store, ledger_json, plan_json, facts_json)
            .map_err(trap)?
            .map_err(|e| describe(&e))?;
        answer(&text)
    }

    /// The core's one acceptance path: may the plan's keys be deleted now,
    /// given the live facts (JSON)? Returns its answer (JSON).
    pub fn accept(
        &mut self,
        plan_json: &str,
        facts_json: &str,
    ) -> Result<serde_json::Value, String> {
        let text = self
            .api
            .lakesweep_planner_planner()
            .call_accept_plan(&mut self.store, plan_json, facts_json)
            .map_err(trap)?
            .map_err(|e| describe(&e))?;
        answer(&text)
    }
}

/// `--location-map` pairs in the component's terms.
pub fn mappings(map: &[(String, String)]) -> Vec<wt::PathMapping> {
    map.iter()
        .map(|(f, t)| wt::PathMapping {
            from: f.clone(),
            to: t.clone(),
        })
        .collect()
}

/// A trap stops the planner: in practice it ran out of memory (wasm32
/// has 4 GiB; an allocation that fails aborts) or hit a bug. Said in one
/// line, without wasm frames; nothing was deleted.
pub fn trap(e: wasmtime::Error) -> String {
    let first = e.to_string();
    let first = first.lines().next().unwrap_or("trap");
    let cause = e.chain().last().map(|c| c.to_string()).unwrap_or_default();
    let cause = cause.lines().next().unwrap_or("");
    format!(
        "the planner stopped: it ran out of memory or hit a bug ({first}{}); nothing was deleted. A smaller --memory-budget makes the planner refuse oversized files by name instead",
        if cause.is_empty() || cause == first { String::new() } else { format!(": {cause}") }
    )
}

/// One line for a planner error.
pub fn describe(e: &wt::Error) -> String {
    match e {
        wt::Error::Malformed(m) => format!("malformed input {}: {}", m.uri, m.detail),
        wt::Error::Unsupported(u) => format!("unsupported: {} (in {})", u.feature, u.uri),
        wt::Error::Protocol(d) => format!("host protocol error: {d}"),
        wt::Error::InvalidOptions(i) => format!("invalid option {}: {}", i.field, i.detail),
        wt::Error::Unsafe(u) => format!("unsafe to proceed ({:?}): {}", u.reason, u.detail),
    }
}

/// The verdict's name as the plan JSON spells it.
pub fn verdict_name(v: wt::Verdict) -> &'static str {
    match v {
        wt::Verdict::Referenced => "referenced",
        wt::Verdict::NearMiss => "near-miss",
        wt::Verdict::Young => "young",
        wt::Verdict::Hidden => "hidden",
        wt::Verdict::Unverified => "unverified",
        wt::Verdict::OwnerCheck => "owner-check",
        wt::Verdict::Protected => "protected",
        wt::Verdict::Candidate => "candidate",
        wt::Verdict::Demoted => "demoted",
        wt::Verdict::ExpiredLog => "expired-log",
        wt::Verdict::Unaddressable => "unaddressable",
        wt::Verdict::FolderMarker => "folder-marker",
    }
}

/// The component's JSON answer, parsed.
fn answer(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("component answered bad JSON: {e}"))
}
