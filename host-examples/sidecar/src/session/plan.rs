//! Runs one planner session: serves the component's reads (concurrently,
//! bounded), streams the listing into it page by page, re-reads the pointer
//! when asked, and collects the decisions and the sealed plan.

use crate::error::HostError;
use std::collections::BTreeMap;

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};

use crate::catalogs::pointer::{Pointer, Read};
use crate::component::{current_metadata_with, mappings, trap, wasm_path, wt, PlanHandle, Planner};
use crate::names::describe;
use crate::session::digests::{Answer, Digests, Kind};
use crate::stores::ahead::ListingAhead;
use crate::stores::{Object, Store};

/// The planner's default memory budget: 1 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 1 << 30;

/// Objects per listing page fed to the planner.
pub const PAGE: usize = 1000;
/// Reads in flight at once.
pub const READ_CONCURRENCY: usize = 16;

/// How a local table's files are listed for a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalListing {
    /// Names first; only the files the planner cannot settle by name are
    /// stat-ed (referenced files' sizes stay out of the byte tallies).
    Names,
    /// A stat of every file (every size in the tallies; on a tree whose
    /// metadata the kernel does not hold, a read of the disk per file).
    Stat,
}

/// `LAKESWEEP_LOCAL_LISTING`: `names` (the default) or `stat`; any other
/// value is an error (no plan), not a guess.
pub fn local_listing() -> Result<LocalListing, HostError> {
    local_listing_of(std::env::var("LAKESWEEP_LOCAL_LISTING").ok().as_deref())
}

fn local_listing_of(v: Option<&str>) -> Result<LocalListing, HostError> {
    match v.map(str::trim) {
        None | Some("names") => Ok(LocalListing::Names),
        Some("stat") => Ok(LocalListing::Stat),
        Some(other) => Err(refused!(
            "LAKESWEEP_LOCAL_LISTING={other} is neither `names` nor `stat`"
        )),
    }
}

/// Table formats `--format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache Iceberg.
    Iceberg,
    /// Delta Lake.
    Delta,
    /// Decide from the layout (`_delta_log/` means Delta).
    Auto,
}

/// What a plan is made from.
#[derive(Clone)]
pub struct PlanInput {
    /// Table location URI (`file:///...`, `s3://...`).
    pub table: String,
    /// Where the current metadata comes from.
    pub pointer: Pointer,
    /// Table format.
    pub format: Format,
    /// Evaluation time, milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// File-retention window in milliseconds (None: the format's default).
    pub retention_ms: Option<i64>,
    /// `--location-map FROM=TO` pairs.
    pub location_map: Vec<(String, String)>,
    /// `--wasm`.
    pub wasm: Option<String>,
    /// The retention policy document (JSON), if any.
    pub policy: Option<String>,
    /// The live context document (JSON), if any.
    pub context: Option<String>,
    /// Keep every decision (for `--json` and `explain`), not only the
    /// unreferenced ones (memory then grows with the listing).
    pub keep_all_decisions: bool,
    /// Delta: versions whose files are all kept.
    pub keep_versions: Vec<i64>,
    /// Delta: plan log cleanup too.
    pub log_cleanup: bool,
    /// Accept a short window (the plan warns).
    pub allow_short_retention: bool,
    /// The planner's memory budget, bytes (None: its default).
    pub memory_budget: Option<u64>,
    /// Keep manifest and Delta checkpoint digests in the cache folder and
    /// read them instead of unchanged files (see `digests`).
    pub manifest_cache: bool,
    /// How the plan is made (`lakesweep.origin.v1`), sealed into it.
    pub origin: Option<String>,
    /// Write the plan document with its report for people (`report-plan`).
    pub report: bool,
    /// Plan as if the table's pointer named this document instead (never
    /// written to the store): what a commit would leave behind.
    pub what_if: Option<WhatIf>,
    /// Prefixes other tables own inside this one, as the planner's
    /// ownership map of a many-table run gave them.
    pub foreign_roots: Vec<wt::ForeignRoot>,
    /// Pointers earlier reads of this run named (the plan's, when its
    /// deletes are checked): the planner refuses a pointer that went back.
    pub prior_pointers: Vec<String>,
    /// The keys a sweep's ledger deleted (its `deleted-index`): the plan
    /// names those the table references and the listing lacks.
    pub deleted_index: Option<Vec<u8>>,
    /// Keys whose last verdict a sealed plan keeps for the host (a shadow
    /// run's comparison asks for the existing job's keys), whatever it is.
    pub compare_keys: Option<std::collections::BTreeSet<String>>,
}

/// A metadata document a plan is made on without it being committed: its
/// URI (beside the current metadata, under a name no writer uses) and bytes.
#[derive(Clone)]
pub struct WhatIf {
    /// Where it would be.
    pub uri: String,
    /// The document.
    pub bytes: Vec<u8>,
}

impl WhatIf {
    /// Whether the planner's read of `uri` is a read of this document (the
    /// planner may ask through a location map's other spelling).
    fn answers(&self, uri: &str) -> bool {
        let name = self.uri.rsplit('/').next().unwrap_or(&self.uri);
        uri == self.uri || uri.ends_with(&format!("/{name}"))
    }
}

/// A finished plan.
pub struct Outcome {
    /// The same with its report for people (`report-plan`), when asked
    /// for (`PlanInput::report`); else the sealed document.
    pub document: String,
    /// The same, typed.
    pub plan: wt::SealedPlan,
    /// The final decision per relative key (all, or only unreferenced ones).
    pub decisions: BTreeMap<String, wt::Decision>,
    /// Blobs (metadata, manifest lists, manifests, log files) read.
    pub reads: usize,
    /// Of those, manifests and checkpoint files answered by their cached digest.
    pub cached_reads: usize,
    /// Objects the listing found whose keys this host cannot represent
    /// (names that are not UTF-8), as the store spelled them: not given to
    /// the planner, so never deleted; reported.
    pub unrepresentable: Vec<String>,
    /// What the store's client had to tell (a fallback it took).
    pub store_notes: Vec<String>,
}

async fn detect(store: &Store, table: &str) -> Result<Format, HostError> {
    let mut delta = store.list(&format!("{table}/_delta_log"));
    if let Some(o) = delta.next().await {
        o?;
        return Ok(Format::Delta);
    }
    Ok(Format::Iceberg)
}

fn progress(template: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style);
    }
    pb
}

/// Runs a planner session over the table.
pub async fn run(input: &PlanInput) -> Result<Outcome, HostError> {
    let mut planner = Planner::load(&wasm_path(input.wasm.as_deref()))?;
    match session(input, &mut planner, Finish::Document).await? {
        Run::Plan(o) => Ok(*o),
        _ => Err("the planner answered a question not asked".into()),
    }
}

/// A plan sealed into `planner` (its instance holds it; nothing of its
/// delete list crossed), with what the host saw while listing.
pub struct Sealed {
    /// The plan, in the component.
    pub plan: PlanHandle,
    /// Everything of it but its delete list.
    pub header: wt::PlanHeader,
    /// What the store's client had to tell (a fallback it took).
    pub store_notes: Vec<String>,
    /// Names the listing found that this host cannot represent (kept).
    pub unrepresentable: Vec<String>,
    /// The last verdict of each key of [`PlanInput::compare_keys`] the
    /// listing held.
    pub decisions: Vec<wt::Decision>,
}

/// Plans `input` in `planner` and seals the plan there: for a ledger in
/// the same instance, at any number of deletes (its decisions are not
/// kept: a sweep reports the ledger's moves).
pub async fn seal(input: &PlanInput, planner: &mut Planner) -> Result<Sealed, HostError> {
    match session(input, planner, Finish::Handle).await? {
        Run::Sealed(s) => Ok(*s),
        _ => Err("the planner answered a question not asked".into()),
    }
}

/// How a run ends: the plan's document and records handed over (a plan
/// to store or print), or the plan kept in the component.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Finish {
    Document,
    Handle,
}

enum Run {
    Plan(Box<Outcome>),
    Sealed(Box<Sealed>),
    Referenced(Vec<(String, String)>),
}

/// Which of `keys` a planner session started from `config` (the core's
/// own: a deletion's damage check) references once its keep set is
/// complete; the table's store is `table`'s.
pub async fn referenced_with(
    config: wt::SessionConfig,
    table: &str,
    wasm: Option<&str>,
    keys: Vec<String>,
) -> Result<Vec<(String, String)>, HostError> {
    let store = Store::for_uri(table)?;
    let input = PlanInput {
        table: table.to_owned(),
        pointer: Pointer::Explicit(config.metadata_location.clone()),
        format: match config.format {
            wt::TableFormat::Delta => Format::Delta,
            wt::TableFormat::Iceberg => Format::Iceberg,
        },
        now_ms: config.now_ms,
        retention_ms: config.file_retention_ms,
        location_map: Vec::new(),
        wasm: wasm.map(str::to_owned),
        policy: None,
        context: None,
        keep_all_decisions: false,
        keep_versions: Vec::new(),
        log_cleanup: false,
        allow_short_retention: true,
        memory_budget: config.memory_budget_bytes,
        manifest_cache: false,
        origin: None,
        report: false,
        what_if: None,
        foreign_roots: Vec::new(),
        prior_pointers: Vec::new(),
        deleted_index: None,
        compare_keys: None,
    };
    let mut planner = Planner::load(&wasm_path(input.wasm.as_deref()))?;
    match drive(
        &input,
        store,
        config,
        Some(keys),
        &mut planner,
        Finish::Document,
    )
    .await?
    {
        Run::Referenced(r) => Ok(r),
        _ => Err("the planner sealed a plan instead of answering".into()),
    }
}

async fn session(
    input: &PlanInput,
    planner: &mut Planner,
    finish: Finish,
) -> Result<Run, HostError> {
    let store = Store::for_uri(&input.table)?;
    let format = match input.format {
        Format::Auto => detect(&store, &input.table).await?,
        f => f,
    };
    // A Delta table's pointer is its log, which the planner lists itself.
    let pointer = if format == Format::Delta {
        if input.pointer != Pointer::VersionHint {
            return Err(
                "a Delta table's current version is its _delta_log: --metadata and --catalog do not apply"
                    .into(),
            );
        }
        String::new()
    } else {
        if !input.keep_versions.is_empty() || input.log_cleanup {
            return Err("--keep-version and --log-cleanup apply to Delta tables".into());
        }
        let resolved = match &input.what_if {
            Some(w) => Ok(w.uri.clone()),
            None => input.pointer.resolve(planner, &store, &input.table).await,
        };
        match resolved {
            Ok(p) => p,
            // Told it is Iceberg, but it has a Delta log: say so.
            Err(e) if input.pointer == Pointer::VersionHint
                && detect(&store, &input.table).await? == Format::Delta =>
            {
                return Err(refused!(
                    "{e}; `{}/_delta_log/` was found: this is a Delta table (drop --format iceberg)",
                    input.table
                ))
            }
            Err(e) => return Err(e),
        }
    };
    let cfg = wt::SessionConfig {
        table_location: input.table.clone(),
        format: if format == Format::Delta {
            wt::TableFormat::Delta
        } else {
            wt::TableFormat::Iceberg
        },
        metadata_location: pointer,
        now_ms: input.now_ms,
        // Without --older-than the planner chooses the window (the
        // policy's, else the format's default): no host holds durations.
        file_retention_ms: input.retention_ms,
        keep_deleted_entries: true,
        allow_short_retention: input.allow_short_retention,
        location_map: mappings(&input.location_map),
        policy: input.policy.clone(),
        context: input.context.clone(),
        keep_versions: input.keep_versions.clone(),
        log_cleanup: input.log_cleanup,
        // A catalog decides commits by compare-and-set: a newer document
        // beside its pointer is a failed commit's leftover, not a lag.
        pointer_authoritative: input.pointer.authoritative(),
        memory_budget_bytes: input.memory_budget,
        origin: input.origin.clone(),
        foreign_roots: input.foreign_roots.clone(),
        prior_pointers: input.prior_pointers.clone(),
        deleted_index: input.deleted_index.clone(),
    };
    drive(input, store, cfg, None, planner, finish).await
}

/// Runs a planner session started from `cfg` over `store`: serves its
/// reads, streams the listing, answers its pointer re-reads from
/// `input.pointer`; with a `question`, stops once the keep set is
/// complete and answers which of those keys it references.
async fn drive(
    input: &PlanInput,
    store: Store,
    cfg: wt::SessionConfig,
    question: Option<Vec<String>>,
    planner: &mut Planner,
    finish: Finish,
) -> Result<Run, HostError> {
    let keep_decisions = finish == Finish::Document || input.compare_keys.is_some();
    let digests = Digests::new(
        wasm_path(input.wasm.as_deref()),
        input.manifest_cache,
        input.memory_budget.unwrap_or(DEFAULT_MEMORY_BUDGET),
    )?;

    let Planner { store: wstore, api } = planner;
    let p = api.lakesweep_planner_planner();
    let session = p
        .session()
        .call_start(&mut *wstore, &cfg)
        .map_err(trap)?
        .map_err(HostError::Planner)?;
    // The table's own listing starts now, while the session reads the
    // table's metadata; the session's request for it takes what was listed.
    // Local files are listed by their names: the planner settles every
    // referenced one by name, and only the others are stat-ed (a read of
    // the disk each, once the kernel no longer holds the tree's metadata).
    // A plan asked to keep every decision needs every object's version.
    let by_name = !input.keep_all_decisions && local_listing()? == LocalListing::Names;
    let mut ahead = match question {
        None => ListingAhead::start(
            &input.table,
            usize::try_from(input.memory_budget.unwrap_or(DEFAULT_MEMORY_BUDGET) / 16)
                .unwrap_or(usize::MAX),
            by_name,
        ),
        Some(_) => None,
    };
    let mut decisions: BTreeMap<String, wt::Decision> = BTreeMap::new();
    // Drains the planner's decisions into `decisions` (the last verdict
    // for a key wins: a demotion replaces the candidate before it).
    let drain = |wstore: &mut wasmtime::Store<()>,
                 decisions: &mut BTreeMap<String, wt::Decision>|
     -> Result<(), HostError> {
        let ds = p
            .session()
            .call_drain_decisions(wstore, session)
            .map_err(trap)?;
        for d in ds {
            if !keep_decisions {
                continue;
            }
            if finish == Finish::Handle {
                // Only the keys asked for, each with its last verdict.
                if input
                    .compare_keys
                    .as_ref()
                    .is_some_and(|k| k.contains(&d.relative_key))
                {
                    decisions.insert(d.relative_key.clone(), d);
                }
                continue;
            }
            if input.keep_all_decisions || d.verdict != wt::Verdict::Referenced {
                decisions.insert(d.relative_key.clone(), d);
            } else {
                decisions.remove(&d.relative_key);
            }
        }
        Ok(())
    };
    let reads_bar = progress("{spinner} read {pos} metadata blobs {msg}");
    let mut reads = 0usize;
    let mut unrepresentable = Vec::new();
    let mut store_notes = Vec::new();
    loop {
        let mut blobs = Vec::new();
        let mut lists = Vec::new();
        let mut pointer_asked = false;
        while let Some(r) = p
            .session()
            .call_poll_request(&mut *wstore, session)
            .map_err(trap)?
        {
            match r {
                wt::Request::ReadBlob(uri) => blobs.push(uri),
                wt::Request::List(prefix) => lists.push(prefix),
                wt::Request::ResolvePointer => pointer_asked = true,
            }
        }
        if blobs.is_empty() && lists.is_empty() && !pointer_asked {
            break;
        }
        // Manifests are digested on spare instances, every core at once,
        // and with the cache on, checkpoint files too (without it their
        // digests cost more memory than the session reading the bytes a row
        // group at a time, and no time); the session checks each digest as
        // it would the bytes.
        let mut asked = Vec::with_capacity(blobs.len());
        for uri in blobs {
            let s = p.session();
            let kind = if s
                .call_is_manifest_read(&mut *wstore, session, &uri)
                .map_err(trap)?
            {
                Some(Kind::Manifest)
            } else if digests.cache_folder().is_some()
                && s.call_is_checkpoint_read(&mut *wstore, session, &uri)
                    .map_err(trap)?
            {
                Some(Kind::Checkpoint)
            } else {
                None
            };
            asked.push((uri, kind));
        }
        let mut fetched = futures::stream::iter(asked)
            .map(|(uri, kind)| {
                let store = store.clone();
                let digests = digests.clone();
                let what_if = input.what_if.as_ref().filter(|w| w.answers(&uri));
                async move {
                    if let Some(w) = what_if {
                        return (uri, kind, Ok(Answer::Bytes(w.bytes.clone())));
                    }
                    // A table's other write roots may live in another bucket.
                    let r = match (store.holding(&uri), kind) {
                        (Ok(s), Some(kind)) => digests.answer(&s, &uri, kind).await,
                        (Ok(s), None) => s
                            .read(&uri)
                            .await
                            .map(|b| b.map_or(Answer::Missing, Answer::Bytes)),
                        (Err(e), _) => Err(e),
                    };
                    (uri, kind, r)
                }
            })
            .buffer_unordered(READ_CONCURRENCY);
        while let Some((uri, kind, r)) = fetched.next().await {
            reads += 1;
            reads_bar.inc(1);
            let s = p.session();
            match r.map_err(|e| refused!("{e} (nothing deleted)"))? {
                Answer::Bytes(b) => s.call_handle_blob(&mut *wstore, session, &uri, &b),
                Answer::Missing => s.call_handle_missing(&mut *wstore, session, &uri),
                Answer::Digest { text, cached } => {
                    let r = if kind == Some(Kind::Checkpoint) {
                        s.call_handle_checkpoint_digest(&mut *wstore, session, &uri, &text)
                    } else {
                        s.call_handle_manifest_digest(&mut *wstore, session, &uri, &text)
                    };
                    match (r, digests.cache_folder()) {
                        (Ok(Err(e)), Some(dir)) if cached => {
                            return Err(refused!(
                                "{} (the digest came from the digest cache: remove {} \
                                 to read the files again; nothing deleted)",
                                describe(&e),
                                dir.display()
                            ))
                        }
                        (r, _) => r,
                    }
                }
            }
            .map_err(trap)?
            .map_err(HostError::Planner)?;
            drain(wstore, &mut decisions)?;
        }
        drop(fetched);
        if let Some(keys) = &question {
            if !lists.is_empty()
                && p.session()
                    .call_keep_set_complete(&mut *wstore, session)
                    .map_err(trap)?
            {
                let r = p
                    .session()
                    .call_referenced(&mut *wstore, session, keys)
                    .map_err(trap)?
                    .map_err(HostError::Planner)?;
                return Ok(Run::Referenced(r));
            }
        }
        for prefix in lists {
            reads_bar.finish_and_clear();
            let bar = progress("{spinner} listed {pos} objects {msg}");
            let held = store.holding(&prefix)?;
            let (lstore, mut stream) = match ahead.as_mut().and_then(|a| a.take(&held, &prefix)) {
                Some(listing) => listing,
                None if by_name => {
                    let stream = held.list_names(&prefix);
                    (held, stream)
                }
                None => {
                    let stream = held.list(&prefix);
                    (held, stream)
                }
            };
            // The objects of a page the planner does not settle by name,
            // with their versions where the listing gave them, else to be
            // looked up.
            let unsettled = |objs: Vec<Object>,
                             wstore: &mut wasmtime::Store<()>|
             -> Result<Vec<Object>, HostError> {
                let (named, mut rest): (Vec<Object>, Vec<Object>) =
                    objs.into_iter().partition(|o| o.named_only);
                if named.is_empty() {
                    return Ok(rest);
                }
                let keys: Vec<String> = named.into_iter().map(|o| o.uri).collect();
                let needed = p
                    .session()
                    .call_handle_names(&mut *wstore, session, &keys)
                    .map_err(trap)?
                    .map_err(HostError::Planner)?;
                for i in needed {
                    let key = keys.get(i as usize).ok_or_else(|| {
                        format!("the planner asked back for name {i} of {}", keys.len())
                    })?;
                    rest.push(Object::named(key.clone()));
                }
                Ok(rest)
            };
            let feed = |objs: Vec<Object>,
                        last: bool,
                        wstore: &mut wasmtime::Store<()>,
                        decisions: &mut BTreeMap<String, wt::Decision>|
             -> Result<(), HostError> {
                let objs: Vec<wt::ListedObject> = objs.into_iter().map(listed).collect();
                p.session()
                    .call_handle_page(&mut *wstore, session, &objs, last)
                    .map_err(trap)?
                    .map_err(HostError::Planner)?;
                drain(wstore, decisions)
            };
            let mut page: Vec<Object> = Vec::with_capacity(PAGE);
            // A full page, held until it is known whether it is the last.
            let mut held: Option<Vec<Object>> = None;
            loop {
                let ended = match stream.next().await {
                    Some(o) => {
                        // A failed listing leaves the plan unfinished, never partial.
                        let o = o.map_err(|e| {
                            format!("{e} (listing failed: no plan, nothing deleted)")
                        })?;
                        page.push(o);
                        bar.inc(1);
                        if page.len() < PAGE {
                            continue;
                        }
                        false
                    }
                    None => true,
                };
                let full = std::mem::replace(&mut page, Vec::with_capacity(PAGE));
                // The held page is the last one unless a partial page
                // follows; an empty listing is one empty last page.
                let out = match (held.take(), ended) {
                    (None, false) => {
                        held = Some(full);
                        vec![]
                    }
                    (Some(prev), false) => {
                        held = Some(full);
                        vec![(prev, false)]
                    }
                    (Some(prev), true) if full.is_empty() => vec![(prev, true)],
                    (Some(prev), true) => vec![(prev, false), (full, true)],
                    (None, true) => vec![(full, true)],
                };
                for (objs, last) in out {
                    let objs = unsettled(objs, wstore)?;
                    let objs = lstore
                        .look_up(&prefix, objs)
                        .await
                        .map_err(|e| refused!("{e} (listing failed: no plan, nothing deleted)"))?;
                    feed(objs, last, wstore, &mut decisions)?;
                }
                if ended {
                    break;
                }
            }
            bar.finish_and_clear();
            unrepresentable.extend(lstore.take_unrepresentable());
            store_notes.extend(lstore.take_notes());
        }
        if pointer_asked {
            let now = match &input.what_if {
                Some(w) => w.uri.clone(),
                None => match input.pointer.read(&store, &input.table).await? {
                    Read::Location(uri) => uri,
                    Read::Hint(facts) => {
                        current_metadata_with(api, &mut *wstore, &input.table, facts)?
                    }
                },
            };
            p.session()
                .call_handle_pointer(&mut *wstore, session, Some(&now))
                .map_err(trap)?
                .map_err(HostError::Planner)?;
            drain(wstore, &mut decisions)?;
        }
    }
    reads_bar.finish_and_clear();
    if finish == Finish::Handle {
        let plan = p
            .session()
            .call_seal(&mut *wstore, session)
            .map_err(trap)?
            .map_err(HostError::Planner)?;
        let plan = PlanHandle(plan);
        let header = planner.plan_header(plan)?;
        return Ok(Run::Sealed(Box::new(Sealed {
            plan,
            header,
            store_notes,
            unrepresentable,
            decisions: decisions.into_values().collect(),
        })));
    }
    // Sealed in the component, then read out in pieces.
    let handle = p
        .session()
        .call_seal(&mut *wstore, session)
        .map_err(trap)?
        .map_err(HostError::Planner)?;
    let handle = PlanHandle(handle);
    if input.report {
        planner.plan_add_report(
            handle,
            decisions.values().cloned().collect(),
            &unrepresentable,
            &store_notes,
        )?;
    }
    let plan = planner.plan_whole(handle)?;
    let document = plan.document.clone();
    Ok(Run::Plan(Box::new(Outcome {
        document,
        plan,
        decisions,
        reads,
        cached_reads: digests.cache_hits(),
        unrepresentable,
        store_notes,
    })))
}

fn listed(o: Object) -> wt::ListedObject {
    wt::ListedObject {
        version: o.version(),
        key: o.uri,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_listing_is_read_strictly() {
        assert_eq!(local_listing_of(None), Ok(LocalListing::Names));
        assert_eq!(local_listing_of(Some("names")), Ok(LocalListing::Names));
        assert_eq!(local_listing_of(Some(" stat ")), Ok(LocalListing::Stat));
        for bad in ["", "STAT", "fast"] {
            let e = local_listing_of(Some(bad)).unwrap_err();
            assert!(e.contains("LAKESWEEP_LOCAL_LISTING"), "{e}");
        }
    }
}
