//! Loads the import-free `lakesweep.wasm` component in wasmtime (empty
//! linker: no WASI, no host functions) and names its errors.

use crate::error::HostError;
use std::path::{Path, PathBuf};

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Store};

use crate::wit;
pub use crate::wit::wt;

/// A loaded planner component and its store.
pub struct Planner {
    /// The wasmtime store (the component's whole state lives here).
    pub store: Store<()>,
    /// The instantiated exports.
    pub api: wit::Lakesweep,
}

/// The planner component built into this binary (empty when it was built
/// before `scripts/build-component.sh` ran; see `build.rs`).
const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/embedded.wasm"));

/// Where the planner component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wasm {
    /// A file (`--wasm`, `$LAKESWEEP_WASM`, or found on disk).
    File(PathBuf),
    /// The component built into this binary.
    Embedded,
}

/// The component: `--wasm`, else `$LAKESWEEP_WASM`, else the one built into
/// this binary, else the repository's `target/lakesweep.wasm`, else
/// `lakesweep.wasm` next to this executable.
pub fn wasm_path(arg: Option<&str>) -> Wasm {
    if let Some(p) = arg {
        return Wasm::File(p.into());
    }
    if let Some(p) = std::env::var_os("LAKESWEEP_WASM") {
        return Wasm::File(p.into());
    }
    if !EMBEDDED.is_empty() {
        return Wasm::Embedded;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lakesweep.wasm");
    if repo.exists() {
        return Wasm::File(repo);
    }
    Wasm::File(
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join("lakesweep.wasm")))
            .unwrap_or(repo),
    )
}

/// Where compiled components are cached: `$LAKESWEEP_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/lakesweep`, else `~/.cache/lakesweep`; `None` when
/// `LAKESWEEP_CACHE_DIR` is empty (caching off).
pub fn cache_dir() -> Option<PathBuf> {
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
fn compiled(engine: &Engine, wasm: &[u8]) -> Result<Component, HostError> {
    use std::hash::{Hash, Hasher};
    let Some(dir) = cache_dir() else {
        return Component::new(engine, wasm).map_err(|e| HostError::Component(e.to_string()));
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
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "compiling the planner for this machine (once; cached in {})...",
            dir.display()
        );
    }
    let bytes = engine
        .precompile_component(wasm)
        .map_err(|e| HostError::Component(e.to_string()))?;
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    // Best effort: a cache that cannot be written only costs time.
    if std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&tmp, &bytes).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
    // SAFETY: `bytes` was produced just now by this engine.
    unsafe { Component::deserialize(engine, &bytes) }
        .map_err(|e| HostError::Component(e.to_string()))
}

/// The component's bytes and a name for it in messages.
fn wasm_bytes(source: &Wasm) -> Result<(Vec<u8>, String), HostError> {
    Ok(match source {
        Wasm::File(path) => (
            std::fs::read(path).map_err(|e| {
                format!(
                    "load {}: {e} (build it with scripts/build-component.sh)",
                    path.display()
                )
            })?,
            path.display().to_string(),
        ),
        Wasm::Embedded => (EMBEDDED.to_vec(), "the built-in planner".to_owned()),
    })
}

/// The SHA-256 of the component's bytes, hex: what anything this host
/// caches from the component's answers is filed under (another build of
/// the planner may answer differently).
pub fn wasm_sha256(source: &Wasm) -> Result<String, HostError> {
    use sha2::{Digest, Sha256};
    Ok(hex(&Sha256::digest(wasm_bytes(source)?.0)))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl Planner {
    /// Loads and instantiates the component at `path`.
    pub fn load(source: &Wasm) -> Result<Planner, HostError> {
        let engine =
            Engine::new(&Config::new()).map_err(|e| HostError::Component(e.to_string()))?;
        let (wasm, name) = wasm_bytes(source)?;
        let component = compiled(&engine, &wasm).map_err(|e| refused!("load {name}: {e}"))?;
        let mut store = Store::new(&engine, ());
        let linker: Linker<()> = Linker::new(&engine);
        let api = wit::Lakesweep::instantiate(&mut store, &component, &linker)
            .map_err(|e| HostError::Component(e.to_string()))?;
        Ok(Planner { store, api })
    }
}

/// A ledger loaded in the component (a `ledger` resource handle).
#[derive(Clone, Copy)]
pub struct LedgerHandle(wasmtime::component::ResourceAny);

/// A deletion session in the component (a `deletion` resource handle).
#[derive(Clone, Copy)]
pub struct DeletionHandle(wasmtime::component::ResourceAny);

/// A sealed plan held in the component (a `plan` resource handle).
#[derive(Clone, Copy)]
pub struct PlanHandle(pub(crate) wasmtime::component::ResourceAny);

/// The `plan` resource's calls.
impl Planner {
    /// `plan.header`: everything but the delete list.
    pub fn plan_header(&mut self, p: PlanHandle) -> Result<wt::PlanHeader, HostError> {
        let api = self.api.lakesweep_planner_planner().plan();
        api.call_header(&mut self.store, p.0).map_err(trap)
    }

    /// `plan.add-report`: the report for people added to its document.
    pub fn plan_add_report(
        &mut self,
        p: PlanHandle,
        decisions: Vec<wt::Decision>,
        unrepresentable: &[String],
        store_notes: &[String],
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().plan();
        api.call_add_report(
            &mut self.store,
            p.0,
            &decisions,
            unrepresentable,
            store_notes,
        )
        .map_err(trap)
    }

    /// The whole plan, its delete list and stored document read in pieces
    /// (a plan of a million deletes is larger than one call may carry out
    /// of the component).
    pub fn plan_whole(&mut self, p: PlanHandle) -> Result<wt::SealedPlan, HostError> {
        self.plan_typed(p, None)
    }

    /// [`Planner::plan_whole`], with `document` as its document when given
    /// (not read back).
    fn plan_typed(
        &mut self,
        p: PlanHandle,
        document: Option<String>,
    ) -> Result<wt::SealedPlan, HostError> {
        const DELETES: u32 = 16_384;
        let h = self.plan_header(p)?;
        let api = self.api.lakesweep_planner_planner().plan();
        let mut delete = Vec::with_capacity(usize::try_from(h.delete_count).unwrap_or(0));
        while (delete.len() as u64) < h.delete_count {
            let piece = api
                .call_deletes(&mut self.store, p.0, delete.len() as u64, DELETES)
                .map_err(trap)?;
            if piece.is_empty() {
                return Err(refused!(
                    "the plan handed out {} of its {} deletes (a bug)",
                    delete.len(),
                    h.delete_count
                ));
            }
            delete.extend(piece);
        }
        let document = match document {
            Some(d) => d,
            None => self.plan_document(p)?,
        };
        Ok(wt::SealedPlan {
            document,
            format: h.format,
            table_location: h.table_location,
            table_uuid: h.table_uuid,
            tokens: h.tokens,
            origin: h.origin,
            delete,
            summary: h.summary,
            warnings: h.warnings,
            damaged: h.damaged,
            digest: h.digest,
        })
    }

    /// The plan's stored document, read in pieces.
    fn plan_document(&mut self, p: PlanHandle) -> Result<String, HostError> {
        const BYTES: u32 = 8 << 20;
        let api = self.api.lakesweep_planner_planner().plan();
        let length = api
            .call_document_length(&mut self.store, p.0)
            .map_err(trap)?;
        let mut document = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
        while (document.len() as u64) < length {
            let piece = api
                .call_document(&mut self.store, p.0, document.len() as u64, BYTES)
                .map_err(trap)?;
            if piece.is_empty() {
                return Err("the plan's document ended early (a bug)".into());
            }
            document.extend(piece);
        }
        String::from_utf8(document)
            .map_err(|e| refused!("the plan's document is not UTF-8 (a bug): {e}"))
    }
}

/// The `deletion` resource's calls.
impl Planner {
    /// `deletion.start`: applying a plan outside a ledger.
    pub fn deletion_start(&mut self, c: &wt::DeletionConfig) -> Result<DeletionHandle, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        done(api.call_start(&mut self.store, c)).map(DeletionHandle)
    }

    /// `ledger.start-deletion`: the deletion of the ledger's approval.
    pub fn ledger_start_deletion(
        &mut self,
        l: LedgerHandle,
        plan: PlanHandle,
        o: &wt::DeletionOptions,
    ) -> Result<DeletionHandle, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_start_deletion(&mut self.store, l.0, plan.0, o)).map(DeletionHandle)
    }

    /// `ledger.record-drained`: the deletion's receipts, recorded.
    pub fn ledger_record_drained(
        &mut self,
        l: LedgerHandle,
        d: DeletionHandle,
        now_ms: i64,
    ) -> Result<Vec<wt::DeletionReceipt>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_record_drained(&mut self.store, l.0, d.0, now_ms))
    }

    /// `ledger.finish-deletion`.
    pub fn ledger_finish_deletion(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
    ) -> Result<wt::LedgerStep, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_finish_deletion(&mut self.store, l.0, now_ms))
    }

    /// `deletion.poll-request`.
    pub fn deletion_poll(
        &mut self,
        d: DeletionHandle,
    ) -> Result<Option<wt::DeletionRequest>, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        api.call_poll_request(&mut self.store, d.0).map_err(trap)
    }

    /// `deletion.handle-facts`, or `handle-facts-failed` for an error.
    pub fn deletion_facts(
        &mut self,
        d: DeletionHandle,
        facts: Result<wt::Facts, HostError>,
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        match facts {
            Ok(f) => done(api.call_handle_facts(&mut self.store, d.0, &f)),
            Err(why) => done(api.call_handle_facts_failed(&mut self.store, d.0, &why.to_string())),
        }
    }

    /// `deletion.handle-head`.
    pub fn deletion_head(
        &mut self,
        d: DeletionHandle,
        key: &str,
        answer: &wt::HeadOutcome,
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        done(api.call_handle_head(&mut self.store, d.0, &key.to_owned(), answer))
    }

    /// `deletion.handle-delete`.
    pub fn deletion_delete(
        &mut self,
        d: DeletionHandle,
        key: &str,
        answer: &wt::StoreAnswer,
        requested_ms: i64,
        answered_ms: Option<i64>,
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        done(api.call_handle_delete(
            &mut self.store,
            d.0,
            &key.to_owned(),
            answer,
            requested_ms,
            answered_ms,
        ))
    }

    /// `deletion.handle-referenced`, or `handle-referenced-failed`.
    pub fn deletion_referenced(
        &mut self,
        d: DeletionHandle,
        found: Result<Vec<(String, String)>, HostError>,
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        match found {
            Ok(r) => done(api.call_handle_referenced(&mut self.store, d.0, &r)),
            Err(why) => {
                done(api.call_handle_referenced_failed(&mut self.store, d.0, &why.to_string()))
            }
        }
    }

    /// `deletion.damage-keys`: `count` deleted keys from the `start`th.
    pub fn deletion_damage_keys(
        &mut self,
        d: DeletionHandle,
        start: u64,
        count: u32,
    ) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        api.call_damage_keys(&mut self.store, d.0, start, count)
            .map_err(trap)
    }

    /// `deletion.drain-receipts`.
    pub fn deletion_receipts(
        &mut self,
        d: DeletionHandle,
    ) -> Result<Vec<wt::DeletionReceipt>, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        api.call_drain_receipts(&mut self.store, d.0).map_err(trap)
    }

    /// `deletion.is-done`.
    pub fn deletion_done(&mut self, d: DeletionHandle) -> Result<bool, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        api.call_is_done(&mut self.store, d.0).map_err(trap)
    }

    /// `deletion.outcome`.
    pub fn deletion_outcome(
        &mut self,
        d: DeletionHandle,
    ) -> Result<wt::DeletionOutcome, HostError> {
        let api = self.api.lakesweep_planner_planner().deletion();
        api.call_outcome(&mut self.store, d.0).map_err(trap)
    }
}

/// One method per WIT call: typed records in and out; every error is the
/// component's, described in one line.
impl Planner {
    /// `digest-manifest`.
    pub fn digest_manifest(&mut self, uri: &str, bytes: &[u8]) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_digest_manifest(&mut self.store, &uri.to_owned(), bytes))
    }

    /// `digest-checkpoint`.
    pub fn digest_checkpoint(&mut self, uri: &str, bytes: &[u8]) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_digest_checkpoint(&mut self.store, &uri.to_owned(), bytes))
    }

    /// `check-policy`.
    pub fn check_policy(&mut self, policy: &str) -> Result<wt::PolicyReport, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_check_policy(&mut self.store, &policy.to_owned()))
    }

    /// The stored plan `document`, checked (`plan.load`): everything of it
    /// but its delete list (which stays out of this host's memory).
    pub fn plan_checked(&mut self, document: &str) -> Result<wt::PlanHeader, HostError> {
        let api = self.api.lakesweep_planner_planner().plan();
        let h = PlanHandle(done(api.call_load(&mut self.store, &document.to_owned()))?);
        let header = self.plan_header(h);
        let _ = h.0.resource_drop(&mut self.store);
        header
    }

    /// The stored plan `document`, checked (`plan.load`) and typed, its
    /// delete list read in pieces; its `document` is the text given.
    pub fn verify_plan(&mut self, document: &str) -> Result<wt::SealedPlan, HostError> {
        let api = self.api.lakesweep_planner_planner().plan();
        let document = document.to_owned();
        let h = PlanHandle(done(api.call_load(&mut self.store, &document))?);
        let plan = self.plan_typed(h, Some(document));
        // The delete list is copied out: the component's copy goes.
        let _ = h.0.resource_drop(&mut self.store);
        plan
    }

    /// `canonical-pointer`: the metadata URI the planner reads for
    /// `pointer` (mapped by `--location-map` and canonical), so every
    /// command agrees with the planner byte for byte.
    pub fn canonical_pointer(
        &mut self,
        pointer: &str,
        map: &[(String, String)],
    ) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_canonical_pointer(&mut self.store, &pointer.to_owned(), &mappings(map)))
    }

    /// `delta-head`: the newest version of a Delta table from its log listing.
    pub fn delta_head(
        &mut self,
        table: &str,
        log: &[wt::ListedObject],
    ) -> Result<Option<wt::LogHead>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_delta_head(&mut self.store, &table.to_owned(), log))
    }

    /// `current-metadata`: a file-system catalog table's current metadata
    /// document (and why) from its version hint and its metadata listing.
    pub fn current_metadata(&mut self, table: &str, facts: HintFacts) -> Result<String, HostError> {
        current_metadata_with(&self.api, &mut self.store, table, facts)
    }

    /// `same-version`: whether a HEAD answer is the pinned version (the
    /// check before every delete).
    pub fn same_version(
        &mut self,
        pinned: &wt::ObjectVersion,
        seen: &wt::ObjectVersion,
    ) -> Result<bool, HostError> {
        let api = self.api.lakesweep_planner_planner();
        api.call_same_version(&mut self.store, pinned, seen)
            .map_err(trap)
    }

    /// `expiry-landed`: whether an expiry's commit landed, from the table's
    /// metadata read again.
    pub fn expiry_landed(
        &mut self,
        plan: &str,
        live_uri: &str,
        live: &[u8],
    ) -> Result<(wt::Landing, String), HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_expiry_landed(
            &mut self.store,
            &plan.to_owned(),
            &live_uri.to_owned(),
            live,
        ))
    }

    /// `judge-mutation`: what a request that changes something came to,
    /// from its answer, and why.
    pub fn judge_mutation(
        &mut self,
        what: &str,
        answer: &wt::MutationAnswer,
    ) -> Result<(wt::MutationOutcome, String), HostError> {
        let api = self.api.lakesweep_planner_planner();
        api.call_judge_mutation(&mut self.store, what, answer)
            .map_err(trap)
    }

    /// `ownership-map`: every entry's roots, whether it is planned, and
    /// the prefixes other tables own inside it.
    pub fn ownership_map(
        &mut self,
        entries: &[wt::CatalogEntry],
        map: &[(String, String)],
    ) -> Result<Vec<wt::EstateMember>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_ownership_map(&mut self.store, entries, &mappings(map)))
    }

    /// `check-clock` against this machine's clock: `judged_at_ms` may not
    /// lie ahead of it (what-if runs say `allow_future`).
    pub fn check_clock(&mut self, judged_at_ms: i64, allow_future: bool) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_check_clock(
            &mut self.store,
            judged_at_ms,
            crate::clock::clock_ms(),
            allow_future,
        ))
    }

    /// `their-keys`: the existing job's list as the table's keys.
    pub fn their_keys(
        &mut self,
        table: &str,
        location_map: &[(String, String)],
        text: &str,
    ) -> Result<wt::TheirList, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_their_keys(
            &mut self.store,
            &table.to_owned(),
            &mappings(location_map),
            text,
        ))
    }

    /// `fleet-tables`: a cohort's tables.
    pub fn fleet_tables(&mut self, fleet: &str, cohort: &str) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_fleet_tables(&mut self.store, fleet, cohort))
    }

    /// `fleet-with-mode`: the fleet document with a cohort in `mode`.
    pub fn fleet_with_mode(
        &mut self,
        fleet: &str,
        cohort: &str,
        mode: wt::Mode,
    ) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_fleet_with_mode(&mut self.store, fleet, cohort, mode))
    }

    /// `stop-switches`: the switches a deleter of the tables at
    /// `locations` reads before each batch (each table's own, then `extra`).
    pub fn stop_switches(
        &mut self,
        locations: &[String],
        extra: &[String],
    ) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_stop_switches(&mut self.store, locations, extra))
    }

    /// `check-stop-switches`: fails (halted) unless every switch of `asked`
    /// was read once and none is set.
    pub fn check_stop_switches(
        &mut self,
        asked: &[String],
        readings: &[wt::SwitchReading],
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_check_stop_switches(&mut self.store, asked, readings))
    }

    /// `halt-document` (`set`) or `resume-document`: what `halt` or
    /// `resume` writes over a switch's `previous` content.
    pub fn switch_document(
        &mut self,
        set: bool,
        previous: Option<&str>,
        reason: &str,
        by: &str,
        now_ms: i64,
    ) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner();
        let previous = previous.map(str::to_owned);
        done(if set {
            api.call_halt_document(&mut self.store, previous.as_deref(), reason, by, now_ms)
        } else {
            api.call_resume_document(&mut self.store, previous.as_deref(), reason, by, now_ms)
        })
    }

    /// `merge-context`: one validated context document from its parts.
    pub fn merge_context(&mut self, parts: &wt::ContextParts) -> Result<Option<String>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_merge_context(&mut self.store, parts))
    }

    /// `dr-metadata-files`: the metadata files a context's DR checkpoints name.
    pub fn dr_metadata_files(&mut self, context: &str) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_dr_metadata_files(&mut self.store, &context.to_owned()))
    }

    /// `plan-expiry`.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_expiry(
        &mut self,
        metadata_location: &str,
        metadata: &[u8],
        policy: Option<&str>,
        context: Option<&str>,
        now_ms: i64,
        expire_ids: &[i64],
        dr_metadata: &[wt::Blob],
    ) -> Result<wt::ExpiryPlan, HostError> {
        let api = self.api.lakesweep_planner_planner();
        let (policy, context) = (policy.map(str::to_owned), context.map(str::to_owned));
        done(api.call_plan_expiry(
            &mut self.store,
            &metadata_location.to_owned(),
            metadata,
            policy.as_ref(),
            context.as_ref(),
            now_ms,
            expire_ids,
            dr_metadata,
        ))
    }

    /// `drill-sample`.
    pub fn drill_sample(
        &mut self,
        ids: &[String],
        n: u32,
        seed: u64,
    ) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        api.call_drill_sample(&mut self.store, ids, n, seed)
            .map_err(trap)
    }

    /// `bundle-chain`.
    pub fn bundle_chain(
        &mut self,
        table: &str,
        map: &[(String, String)],
        metadata_uri: &str,
        metadata: &[u8],
        snapshot_ids: &[i64],
        blobs: &[wt::Blob],
    ) -> Result<wt::ChainWalk, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_bundle_chain(
            &mut self.store,
            &table.to_owned(),
            &mappings(map),
            &metadata_uri.to_owned(),
            metadata,
            snapshot_ids,
            blobs,
        ))
    }

    /// `bundle-seal`.
    pub fn bundle_seal(
        &mut self,
        request: &wt::SealRequest,
        metadata: &[u8],
        blobs: &[wt::Blob],
    ) -> Result<wt::Bundle, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_bundle_seal(&mut self.store, request, metadata, blobs))
    }

    /// `bundle-load`: a stored bundle, checked and typed.
    pub fn bundle_load(&mut self, document: &str) -> Result<wt::Bundle, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_bundle_load(&mut self.store, &document.to_owned()))
    }

    /// `bundle-verify`.
    pub fn bundle_verify(
        &mut self,
        document: &str,
        map: &[(String, String)],
        copies: &[wt::Blob],
        heads: &[wt::HeadAnswer],
    ) -> Result<wt::Verification, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_bundle_verify(
            &mut self.store,
            &document.to_owned(),
            &mappings(map),
            copies,
            heads,
        ))
    }

    /// `bundle-restore`: the metadata document that restores the bundle.
    pub fn bundle_restore(
        &mut self,
        current_uri: &str,
        current: &[u8],
        document: &str,
        bundle_metadata: &[u8],
        now_ms: i64,
    ) -> Result<Vec<u8>, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_bundle_restore(
            &mut self.store,
            &current_uri.to_owned(),
            current,
            &document.to_owned(),
            bundle_metadata,
            now_ms,
        ))
    }
}

/// The `ledger` resource's methods.
impl Planner {
    /// `ledger.load`.
    pub fn ledger_load(&mut self, document: &str) -> Result<LedgerHandle, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_load(&mut self.store, &document.to_owned())).map(LedgerHandle)
    }

    /// `ledger.create`.
    pub fn ledger_create(
        &mut self,
        plan: PlanHandle,
        quarantine_ms: Option<i64>,
        prior_ledger: bool,
        start_new: bool,
    ) -> Result<LedgerHandle, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_create(
            &mut self.store,
            plan.0,
            quarantine_ms,
            prior_ledger,
            start_new,
        ))
        .map(LedgerHandle)
    }

    /// `ledger.next-read`: the next file of its folder to read.
    pub fn ledger_next_read(&mut self, l: LedgerHandle) -> Result<Option<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_next_read(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.handle-read`, or `handle-missing` for a file not there.
    pub fn ledger_handle_read(
        &mut self,
        l: LedgerHandle,
        name: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(), HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        let name = name.to_owned();
        match bytes {
            Some(b) => done(api.call_handle_read(&mut self.store, l.0, &name, b)),
            None => done(api.call_handle_missing(&mut self.store, l.0, &name)),
        }
    }

    /// `ledger.begin`.
    pub fn ledger_begin(
        &mut self,
        l: LedgerHandle,
        plan: PlanHandle,
        now_ms: i64,
    ) -> Result<wt::LedgerStep, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_begin(&mut self.store, l.0, plan.0, now_ms))
    }

    /// `ledger.reconcile`.
    pub fn ledger_reconcile(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
    ) -> Result<wt::LedgerStep, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_reconcile(&mut self.store, l.0, now_ms))
    }

    /// `ledger.next-probes`: the next HEADs the run wants.
    pub fn ledger_next_probes(
        &mut self,
        l: LedgerHandle,
        max: u32,
    ) -> Result<Vec<wt::Probe>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_next_probes(&mut self.store, l.0, max)
            .map_err(trap)
    }

    /// `ledger.observe`.
    pub fn ledger_observe(
        &mut self,
        l: LedgerHandle,
        observations: &[wt::Observation],
        now_ms: i64,
    ) -> Result<wt::LedgerStep, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_observe(&mut self.store, l.0, observations, now_ms))
    }

    /// `ledger.approve`.
    pub fn ledger_approve(
        &mut self,
        l: LedgerHandle,
        plan: PlanHandle,
        live: &wt::LiveState,
        now_ms: i64,
    ) -> Result<wt::ApprovalStep, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_approve(&mut self.store, l.0, plan.0, live, now_ms))
    }

    /// `ledger.record-drill`.
    pub fn ledger_record_drill(
        &mut self,
        l: LedgerHandle,
        table: &str,
        seed: u64,
        bundles_total: u64,
        results: &[wt::DrillResult],
        now_ms: i64,
    ) -> Result<wt::Drill, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_record_drill(
            &mut self.store,
            l.0,
            &table.to_owned(),
            seed,
            bundles_total,
            results,
            now_ms,
        ))
    }

    /// `ledger.gates`.
    pub fn ledger_gates(&mut self, l: LedgerHandle) -> Result<wt::Gates, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_gates(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.outlook`: per state, what waits and from when it can move.
    pub fn ledger_outlook(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
    ) -> Result<Vec<wt::Waiting>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_outlook(&mut self.store, l.0, now_ms).map_err(trap)
    }

    /// `ledger.objects`: `count` objects in flight from the `start`th.
    pub fn ledger_objects(
        &mut self,
        l: LedgerHandle,
        start: u64,
        count: u32,
    ) -> Result<Vec<wt::LedgerObject>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_objects(&mut self.store, l.0, start, count)
            .map_err(trap)
    }

    /// `ledger.verified`.
    pub fn ledger_verified(&mut self, l: LedgerHandle) -> Result<wt::VerifiedSummary, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_verified(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.consumed`: whether each key was deleted by the ledger (or
    /// may have been).
    pub fn ledger_consumed(
        &mut self,
        l: LedgerHandle,
        keys: &[String],
    ) -> Result<Vec<bool>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_consumed(&mut self.store, l.0, keys).map_err(trap)
    }

    /// `sweep-freshness`: whether `table`'s sweep still runs, from its
    /// ledger (`None`: it has none).
    pub fn sweep_freshness(
        &mut self,
        l: Option<LedgerHandle>,
        table: &str,
        now_ms: i64,
        max_age_ms: Option<i64>,
    ) -> Result<wt::Freshness, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_sweep_freshness(
            &mut self.store,
            l.map(|l| l.0),
            &table.to_owned(),
            now_ms,
            max_age_ms,
        ))
    }

    /// `ledger.open-damage`: keys it deleted that the table references now.
    pub fn ledger_open_damage(&mut self, l: LedgerHandle) -> Result<Vec<wt::Damage>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_open_damage(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.deleted-index`: the keys it deleted, for the next plan.
    pub fn ledger_deleted_index(&mut self, l: LedgerHandle) -> Result<Vec<u8>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_deleted_index(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.next-write`: the next file to store (the head last).
    pub fn ledger_next_write(
        &mut self,
        l: LedgerHandle,
    ) -> Result<Option<wt::LedgerFile>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_next_write(&mut self.store, l.0))
    }

    /// `ledger.obsolete`.
    pub fn ledger_obsolete(&mut self, l: LedgerHandle) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_obsolete(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.strays`.
    pub fn ledger_strays(
        &mut self,
        l: LedgerHandle,
        names: &[String],
    ) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_strays(&mut self.store, l.0, names).map_err(trap)
    }

    /// `ledger.archives`.
    pub fn ledger_archives(&mut self, l: LedgerHandle) -> Result<Vec<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_archives(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.check-archive`: the archive checked, and its objects.
    pub fn ledger_check_archive(
        &mut self,
        l: LedgerHandle,
        name: &str,
        bytes: &[u8],
    ) -> Result<Vec<wt::LedgerObject>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_check_archive(&mut self.store, l.0, name, bytes))
    }

    /// `ledger.audit`.
    pub fn ledger_audit(&mut self, l: LedgerHandle) -> Result<wt::LedgerAudit, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_audit(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.quarantine-ms`.
    pub fn ledger_quarantine_ms(&mut self, l: LedgerHandle) -> Result<i64, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_quarantine_ms(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.observe-halts`: lengthens the quarantine of every waiting
    /// object once per halt the switches' readings name that the ledger
    /// has not seen.
    pub fn ledger_observe_halts(
        &mut self,
        l: LedgerHandle,
        readings: &[wt::SwitchReading],
        extension_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<Vec<wt::HaltSeen>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_observe_halts(&mut self.store, l.0, readings, extension_ms, now_ms))
    }

    /// `ledger.enter-fleet`: the run's mode in the fleet `fleet` (its
    /// document).
    pub fn ledger_enter_fleet(
        &mut self,
        l: LedgerHandle,
        fleet: &str,
        now_ms: i64,
    ) -> Result<wt::ModeDecision, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_enter_fleet(&mut self.store, l.0, fleet, now_ms))
    }

    /// `ledger.record-comparison`: the comparison recorded (JSON).
    pub fn ledger_record_comparison(
        &mut self,
        l: LedgerHandle,
        p: PlanHandle,
        their: &wt::TheirList,
        decisions: &[wt::Decision],
    ) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_record_comparison(
            &mut self.store,
            l.0,
            p.0,
            their,
            decisions,
            crate::clock::clock_ms(),
        ))
    }

    /// `ledger.rollout-gate`.
    pub fn ledger_rollout_gate(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
    ) -> Result<wt::RolloutGate, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_rollout_gate(&mut self.store, l.0, now_ms)
            .map_err(trap)
    }

    /// `ledger.move-mode`, against this machine's clock.
    #[allow(clippy::too_many_arguments)]
    pub fn ledger_move_mode(
        &mut self,
        l: LedgerHandle,
        to: wt::Mode,
        by: &str,
        why: &str,
        now_ms: i64,
        allow_future_now: bool,
    ) -> Result<wt::ModeMove, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        done(api.call_move_mode(
            &mut self.store,
            l.0,
            to,
            by,
            why,
            now_ms,
            crate::clock::clock_ms(),
            allow_future_now,
        ))
    }

    /// `ledger.rollout-document` (JSON), none outside a fleet.
    pub fn ledger_rollout_document(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
    ) -> Result<Option<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_rollout_document(&mut self.store, l.0, now_ms)
            .map_err(trap)
    }

    /// `ledger.record-full-drill`.
    pub fn ledger_record_full_drill(
        &mut self,
        l: LedgerHandle,
        run: &wt::RestoreRun,
        policy: Option<&str>,
    ) -> Result<wt::FullDrill, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        let policy = policy.map(str::to_owned);
        done(api.call_record_full_drill(&mut self.store, l.0, run, policy.as_ref()))
    }

    /// `ledger.full-drills`.
    pub fn ledger_full_drills(&mut self, l: LedgerHandle) -> Result<Vec<wt::FullDrill>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_full_drills(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.full-drill-missing`.
    pub fn ledger_full_drill_missing(
        &mut self,
        l: LedgerHandle,
        now_ms: i64,
        required: bool,
    ) -> Result<Option<String>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_full_drill_missing(&mut self.store, l.0, now_ms, required)
            .map_err(trap)
    }

    /// `restore-into-scratch`: what a full restore of a bundle into
    /// `scratch` writes.
    #[allow(clippy::too_many_arguments)]
    pub fn restore_into_scratch(
        &mut self,
        bundle: &str,
        location_map: &[(String, String)],
        copies: &[wt::Blob],
        heads: &[wt::HeadAnswer],
        scratch: &str,
        snapshot: Option<i64>,
        now_ms: i64,
    ) -> Result<wt::ScratchRestore, HostError> {
        let api = self.api.lakesweep_planner_planner();
        done(api.call_restore_into_scratch(
            &mut self.store,
            &bundle.to_owned(),
            &mappings(location_map),
            copies,
            heads,
            &scratch.to_owned(),
            snapshot,
            now_ms,
        ))
    }

    /// `ledger.halts`.
    pub fn ledger_halts(&mut self, l: LedgerHandle) -> Result<Vec<wt::HaltSeen>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_halts(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.table-location`.
    pub fn ledger_table_location(&mut self, l: LedgerHandle) -> Result<String, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_table_location(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.last-step-ms`.
    pub fn ledger_last_step_ms(&mut self, l: LedgerHandle) -> Result<Option<i64>, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_last_step_ms(&mut self.store, l.0).map_err(trap)
    }

    /// `ledger.revision`.
    pub fn ledger_revision(&mut self, l: LedgerHandle) -> Result<u64, HostError> {
        let api = self.api.lakesweep_planner_planner().ledger();
        api.call_revision(&mut self.store, l.0).map_err(trap)
    }
}

/// A component call's answer: a trap or the component's error in one line.
pub fn done<T>(r: wasmtime::Result<Result<T, wt::Error>>) -> Result<T, HostError> {
    r.map_err(trap)?.map_err(HostError::Planner)
}

/// What a file-system catalog's pointer is read from: the bytes of
/// `metadata/version-hint.text` (`None`: it does not exist) and every key
/// listed under `metadata/`. The component chooses the document.
#[derive(Debug, Clone, Default)]
pub struct HintFacts {
    /// The hint's bytes, as read.
    pub hint: Option<Vec<u8>>,
    /// The keys listed under the table's `metadata/`.
    pub listing: Vec<String>,
}

/// [`Planner::current_metadata`] for a caller holding the planner's parts
/// apart (a session loop that borrows them separately).
pub fn current_metadata_with(
    api: &wit::Lakesweep,
    store: &mut Store<()>,
    table: &str,
    facts: HintFacts,
) -> Result<String, HostError> {
    let (uri, _why) = done(api.lakesweep_planner_planner().call_current_metadata(
        store,
        &table.to_owned(),
        facts.hint.as_deref(),
        &facts.listing,
    ))?;
    Ok(uri)
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
pub fn trap(e: wasmtime::Error) -> HostError {
    let first = e.to_string();
    let first = first.lines().next().unwrap_or("trap");
    let cause = e.chain().last().map(|c| c.to_string()).unwrap_or_default();
    let cause = cause.lines().next().unwrap_or("");
    let why = format!(
        "{first}{}",
        if cause.is_empty() || cause == first {
            String::new()
        } else {
            format!(": {cause}")
        }
    );
    // Each cause its own advice: only a memory shortfall is helped by
    // --memory-budget.
    if why.contains("hostcall") {
        HostError::Component(format!(
            "the planner stopped: one call between this host and the planner carried more than wasmtime lets one call carry ({why}); nothing was deleted. No option changes this: it is a lakesweep bug (a call that should go in pieces), report it with the table's and the ledger's sizes"
        ))
    } else if why.contains("unreachable") || why.contains("memory") {
        HostError::Component(format!(
            "the planner stopped: it ran out of memory or hit a bug ({why}); nothing was deleted. If the table holds metadata files larger than the planner's memory, a smaller --memory-budget makes it refuse them by name; otherwise report it"
        ))
    } else {
        HostError::Component(format!("the planner stopped ({why}); nothing was deleted"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::*;

    /// Built after `scripts/build-component.sh`, the binary carries the
    /// planner: with no `--wasm` and no `LAKESWEEP_WASM` it loads the
    /// built-in one, and that one plans.
    #[test]
    fn the_planner_is_built_in_once_the_component_was_built() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lakesweep.wasm");
        let Ok(file) = std::fs::read(&repo) else {
            assert!(EMBEDDED.is_empty(), "embedded without a component to embed");
            return;
        };
        assert_eq!(
            EMBEDDED,
            file.as_slice(),
            "the built-in planner is the built one"
        );
        if std::env::var_os("LAKESWEEP_WASM").is_none() {
            assert_eq!(wasm_path(None), Wasm::Embedded);
        }
        let mut p = Planner::load(&Wasm::Embedded).expect("the built-in planner loads");
        assert!(p.verify_plan("{}").is_err());
        assert_eq!(wasm_path(Some("x.wasm")), Wasm::File("x.wasm".into()));
    }

    #[test]
    fn errors_name_the_option_to_use() {
        let e = wt::Error::InvalidOptions(wt::InvalidOptionsError {
            field: "file_retention_ms".into(),
            detail: "1h is shorter than the table's delta.deletedFileRetentionDuration (7d): VACUUM refuses this too (override with allow_short_retention)".into(),
        });
        let text = describe(&e);
        assert!(text.starts_with("invalid option --older-than: "), "{text}");
        assert!(
            text.contains("override with --allow-short-retention"),
            "{text}"
        );
        assert!(
            !text.contains("_ms") && !text.contains("allow_short"),
            "{text}"
        );
        // A path that contains a field's name is not rewritten.
        assert_eq!(
            option_words("s3://b/table_location/x and table_location"),
            "s3://b/table_location/x and TABLE"
        );
    }
}
