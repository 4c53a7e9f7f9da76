//! `lakesweep sweep`: two-phase deletion, one ledger step per run (so it can
//! run on a schedule and the quarantine interval passes between runs);
//! `lakesweep ledger show` and `lakesweep reconcile`.
//!
//! One run: open the ledger (its head, then its files) -> plan (a fresh
//! plan sealed in the same component instance: nothing of it crosses) ->
//! fold it into the ledger -> HEAD every probe (restore checks,
//! verification of earlier deletes, reconciliation), a piece at a time ->
//! re-read the live state (pointer or Delta head, holds and leases from the
//! context files, read again now) -> approval -> save -> delete exactly the
//! approved keys, each only if HEAD still shows the pinned version, each
//! receipt recorded by the ledger as it is drained -> save. The component
//! decides every transition; this module only reads, lists, deletes and
//! stores.

use std::process::ExitCode;

use crate::cli::LedgerTarget;
use serde_json::{json, Value};

use crate::cli::SweepCmd;
use crate::clock::clock_ms as now_ms;
use crate::commands::report;
use crate::component::{wasm_path, wt, LedgerHandle, Planner};
use crate::error::HostError;
use crate::names::state_name;
use crate::session::ledger::{default_ledger, Lock};
use crate::session::plan::{self, PlanInput};
use crate::stores::{Object, Store};

/// The moves of a run: some of them (at most 100 per state reached, per
/// step) and how many reached each state.
#[derive(Default)]
pub struct Moved {
    /// Some of the moves, in order.
    pub sample: Vec<wt::StateMove>,
    /// How many moves reached each state.
    pub counts: std::collections::BTreeMap<&'static str, u64>,
}

/// Moves a run reports one by one, at most (the rest are counted).
const MOVES_SHOWN: usize = 1000;

impl Moved {
    /// Adds a step's moves (the sample kept to [`MOVES_SHOWN`]).
    pub fn add(&mut self, sample: Vec<wt::StateMove>, counts: &[wt::StateCount]) {
        let room = MOVES_SHOWN.saturating_sub(self.sample.len());
        self.sample.extend(sample.into_iter().take(room));
        for c in counts {
            *self.counts.entry(state_name(c.state)).or_default() += c.count;
        }
    }

    /// Adds another run part's moves.
    pub fn merge(&mut self, other: Moved) {
        let room = MOVES_SHOWN.saturating_sub(self.sample.len());
        self.sample.extend(other.sample.into_iter().take(room));
        for (k, n) in other.counts {
            *self.counts.entry(k).or_default() += n;
        }
    }

    /// How many moves in all.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// What a run did.
pub struct Swept {
    /// The run's moves.
    pub moves: Moved,
    /// The approval, if one was asked for.
    pub approval: Option<wt::Approval>,
    /// The gates after the run.
    pub gates: wt::Gates,
    /// Where the ledger was saved.
    pub ledger_uri: String,
    /// Why the deletes stopped before the last batch, if they did.
    pub stopped: Option<Vec<String>>,
    /// Damage: deleted keys the live table needs after the run.
    pub damage: Vec<wt::DeletionReceipt>,
    /// The damage check could not be made (why).
    pub damage_unchecked: Option<String>,
    /// What the store's client told (a listing fallback taken) and the
    /// names the listing could not represent (kept), as the plan reports them.
    pub notes: Vec<String>,
    /// What the ledger waits for after the run, and from when (the core's
    /// `outlook`, judged at the run's time).
    pub outlook: Vec<wt::Waiting>,
    /// The run's time, ms since the epoch.
    pub now_ms: i64,
    /// The plan's warnings (sealed into it).
    pub warnings: Vec<String>,
    /// The ledger's open damage after the run: keys it deleted that the
    /// table references now, with how to restore each.
    pub open_damage: Vec<wt::Damage>,
    /// The table's mode in its fleet, when the run was given one.
    pub mode: Option<wt::ModeDecision>,
    /// This run's comparison with the existing job (as recorded), if any.
    pub comparison: Option<Value>,
}

/// HEADs a probe the ledger wants at a time.
const PROBES_PIECE: u32 = 4096;

/// HEADs every probe the ledger wants, a piece at a time, `concurrency` in
/// flight, and hands each piece's answers to the ledger; returns the
/// moves they made. A restore check of an object in an incomplete
/// quarantine bundle is `blocked`.
async fn probe_all(
    planner: &mut Planner,
    ledger: LedgerHandle,
    store: &Store,
    table: &str,
    blocked: &std::collections::BTreeMap<String, String>,
    concurrency: usize,
    now: i64,
) -> Result<Moved, HostError> {
    use futures::StreamExt;
    let mut moves = Moved::default();
    loop {
        let probes = planner.ledger_next_probes(ledger, PROBES_PIECE)?;
        if probes.is_empty() {
            return Ok(moves);
        }
        // A run of HEADs per task (one on a bucket), `concurrency` tasks.
        let mut runs = Vec::new();
        let mut probes = probes.into_iter().peekable();
        while probes.peek().is_some() {
            runs.push(probes.by_ref().take(store.run_length()).collect::<Vec<_>>());
        }
        let heads: Vec<Vec<Result<wt::Observation, HostError>>> = futures::stream::iter(runs)
            .map(|run| async move {
                let uris = run
                    .iter()
                    .map(|p| crate::stores::object_uri(table, &p.key))
                    .collect();
                let seen = store.head_run(uris).await;
                run.into_iter()
                    .zip(seen)
                    .map(|(p, seen)| {
                        Ok(wt::Observation {
                            blocked: (p.purpose == wt::ProbePurpose::RestoreCheck)
                                .then(|| blocked.get(&p.key).cloned())
                                .flatten(),
                            key: p.key,
                            seen: seen?.as_ref().map(Object::version),
                        })
                    })
                    .collect()
            })
            .buffered(concurrency.max(1))
            .collect()
            .await;
        let obs = heads
            .into_iter()
            .flatten()
            .collect::<Result<Vec<_>, HostError>>()?;
        let step = planner.ledger_observe(ledger, &obs, now)?;
        moves.add(step.moves, &step.moved);
    }
}

/// One run of `sweep`, under the ledger's lock.
pub async fn run(a: &SweepCmd, plan: &PlanInput) -> Result<Swept, HostError> {
    if matches!(plan.pointer, crate::catalogs::pointer::Pointer::Explicit(_)) {
        return Err(
            "sweep needs a live pointer to see commits made before approval: pass --catalog, or let it read version-hint.text (a fixed --metadata proves nothing)"
                .into(),
        );
    }
    let ledger_uri = a
        .ledger
        .clone()
        .unwrap_or_else(|| default_ledger(&plan.table));
    let lock = Lock::take(&ledger_uri).await?;
    let r = run_locked(a, plan, &ledger_uri).await;
    lock.release().await;
    r
}

async fn run_locked(a: &SweepCmd, plan: &PlanInput, ledger_uri: &str) -> Result<Swept, HostError> {
    let table = plan.table.clone();
    let store = Store::for_uri(&table)?;
    let ledger_uri = ledger_uri.to_owned();
    let lstore = Store::for_uri(&ledger_uri)?;
    let now = plan.now_ms;

    // 1. The ledger (its head, then its files), then a fresh plan sealed
    // in the same instance, checked against the keys it deleted (one the
    // table references again and the listing lacks is damage: the ledger
    // refuses a plan made without its index).
    let mut planner = Planner::load(&wasm_path(plan.wasm.as_deref()))?;
    let loaded = crate::session::ledger::open(&mut planner, &lstore, &ledger_uri).await?;
    // The fleet document, and the existing job's list for this same run
    // (its keys, in the planner's terms: their verdicts are kept).
    let fleet = match &a.fleet {
        Some(u) => Some(crate::stores::read_document(u).await?),
        None => None,
    };
    let their = match &a.compare_with {
        Some(f) => {
            let text = crate::stores::read_document(f).await?;
            Some(planner.their_keys(&table, &plan.location_map, &text)?)
        }
        None => None,
    };
    let mut plan_input = plan.clone();
    plan_input.compare_keys = their.as_ref().map(|t| t.keys.iter().cloned().collect());
    if let Some(l) = loaded {
        plan_input.deleted_index = Some(planner.ledger_deleted_index(l)?);
    }
    let sealed = plan::seal(&plan_input, &mut planner).await?;
    let delta = sealed.header.format == wt::TableFormat::Delta;
    let prior_ledger = loaded.is_none()
        && lstore
            .head(&crate::session::ledger::mark(&ledger_uri))
            .await?
            .is_some();
    let ledger = match loaded {
        Some(l) => l,
        None => planner.ledger_create(sealed.plan, a.quarantine, prior_ledger, a.new_ledger)?,
    };
    if loaded.is_some() && a.quarantine.is_some() {
        let q = planner.ledger_quarantine_ms(ledger)?;
        eprintln!(
            "lakesweep: the ledger's quarantine is {} (fixed when it was created); --quarantine is not read again",
            report::duration(q)
        );
    }

    // The table's mode in its fleet (shadow deletes nothing), and this
    // run's comparison with the existing job.
    let mode = match &fleet {
        Some(text) => Some(planner.ledger_enter_fleet(ledger, text, now)?),
        None => None,
    };
    let comparison = match &their {
        Some(t) => {
            let c = planner.ledger_record_comparison(ledger, sealed.plan, t, &sealed.decisions)?;
            Some(serde_json::from_str::<Value>(&c).unwrap_or(Value::Null))
        }
        None => None,
    };
    let mut stop_switches = a.deletes.stop.stop_switches.clone();
    stop_switches.extend(mode.as_ref().and_then(|m| m.stop_switch.clone()));
    // A halt set (or cleared) since this ledger last looked lengthens the
    // quarantine of every waiting object first, once per halt.
    let switches = planner.stop_switches(
        std::slice::from_ref(&sealed.header.table_location),
        &stop_switches,
    )?;
    let readings = crate::session::switch::read_switches(&switches).await;
    let extension = mode.as_ref().and_then(|m| m.halt_extension_ms);
    for h in planner.ledger_observe_halts(ledger, &readings, extension, now)? {
        eprintln!(
            "lakesweep: halt {} of {} ({}: {}): the quarantine of {} waiting objects is {} longer",
            h.generation,
            h.switch,
            h.by,
            h.reason,
            h.objects,
            report::duration(h.extension_ms)
        );
    }

    // 2. Fold it into the ledger (the archives it asks for name damage);
    // 3. HEAD the probes.
    let step = planner.ledger_begin(ledger, sealed.plan, now)?;
    crate::session::ledger::serve_reads(&mut planner, ledger, &lstore, &ledger_uri).await?;
    let mut moves = Moved::default();
    moves.add(step.moves, &step.moved);
    // Every quarantine bundle is walked once per run: objects of an expired
    // snapshot pass their restore check, and are approved, only while its
    // bundle walks completely (one that broke since an earlier restore
    // check blocks the approval too).
    let blocked = crate::commands::bundle::blocked_keys(
        &mut planner,
        &store,
        &table,
        &plan.location_map,
        Some(ledger),
    )
    .await?;
    moves.merge(
        probe_all(
            &mut planner,
            ledger,
            &store,
            &table,
            &blocked,
            a.deletes.concurrency,
            now,
        )
        .await?,
    );

    // 4. The live state, read now, and the approval.
    let source = crate::session::deletion::LiveSource {
        store: store.clone(),
        table: table.clone(),
        pointer: plan.pointer.clone(),
        context: a.plan.context.files(Some(&a.plan.policy)),
    };
    let canonical = sealed.header.table_location.clone();
    let log_prefix = delta.then(|| format!("{canonical}/_delta_log/"));
    let facts = source
        .facts(&mut planner, log_prefix.as_deref(), &[])
        .await?;
    // The pointer in the planner's terms: mapped and canonical, or the
    // Delta log's head (the planner's, from the listing).
    let (metadata_location, head) = match &facts.pointer {
        Some(raw) => (planner.canonical_pointer(raw, &plan.location_map)?, None),
        None => {
            let h = planner
                .delta_head(&canonical, &facts.log)?
                .ok_or("the Delta log holds no version now: the table is gone")?;
            (h.uri, Some(h.version))
        }
    };
    let live = wt::LiveState {
        metadata_location,
        context: facts.context,
        blocked: blocked
            .into_iter()
            .map(|(key, why)| wt::BlockedKey { key, why })
            .collect(),
        head,
        clock_ms: Some(facts.clock_ms),
        allow_future_now: a.future.allow_future_now,
    };
    let step = planner.ledger_approve(ledger, sealed.plan, &live, now)?;
    moves.add(step.moves, &step.moved);
    let approval = step.approval;
    let mut gates = step.gates;
    let (mut stopped, mut damage, mut damage_unchecked) = (None, Vec::new(), None);
    if approval.granted {
        // Saved before deleting: a crash from here leaves DELETE_APPROVED,
        // which the next run turns into DELETE_UNKNOWN and reconciles.
        crate::session::ledger::save(&mut planner, ledger, &lstore, &ledger_uri).await?;
        // The planner's deletion of exactly what it approved; the ledger
        // records every receipt as it is drained.
        let d = planner.ledger_start_deletion(
            ledger,
            sealed.plan,
            &wt::DeletionOptions {
                location_map: crate::component::mappings(&plan.location_map),
                batch_size: a.deletes.batch,
                allow_future_now: a.future.allow_future_now,
                store_gives_etags: true,
                stop_switches: stop_switches.clone(),
            },
        )?;
        let out = crate::session::deletion::run(
            &mut planner,
            d,
            &source,
            a.deletes.concurrency,
            plan.wasm.as_deref(),
            crate::session::deletion::Drain::Ledger(ledger, now),
            &mut |_| Ok(()),
        )
        .await?;
        let o = out.outcome;
        stopped = o.stopped.or(o.refused);
        damage = out.damaged;
        damage_unchecked = o.damage_unchecked;
        // Deletes happened: a failure from here on is a stop, not a refusal.
        let step = planner
            .ledger_finish_deletion(ledger, now)
            .map_err(|e| HostError::Stopped(format!("the receipts could not be recorded: {e}")))?;
        moves.add(step.moves, &step.moved);
        gates = step.gates;
    }
    crate::session::ledger::save(&mut planner, ledger, &lstore, &ledger_uri).await?;
    crate::session::ledger::remove_strays(&mut planner, ledger, &lstore, &ledger_uri).await?;
    let outlook = planner.ledger_outlook(ledger, now)?;
    let open_damage = planner.ledger_open_damage(ledger)?;
    gates = planner.ledger_gates(ledger).unwrap_or(gates);
    Ok(Swept {
        mode,
        comparison,
        outlook,
        now_ms: now,
        warnings: sealed.header.warnings.clone(),
        open_damage,
        moves,
        approval: Some(approval),
        gates,
        ledger_uri,
        stopped,
        damage,
        damage_unchecked,
        notes: sealed
            .store_notes
            .iter()
            .cloned()
            .chain(
                sealed
                    .unrepresentable
                    .iter()
                    .map(|k| format!("kept, a name this host cannot represent: {k}")),
            )
            .collect(),
    })
}

/// HEADs in flight while reconciling.
const RECONCILE_CONCURRENCY: usize = 16;

/// `lakesweep reconcile`: HEADs every object whose delete is unconfirmed
/// (`DELETED` awaiting verification, `DELETE_UNKNOWN`) and records the answers.
pub async fn reconcile(
    table: &str,
    ledger: Option<&str>,
    wasm: Option<&str>,
) -> Result<Swept, HostError> {
    let store = Store::for_uri(table)?;
    let ledger_uri = ledger
        .map(str::to_owned)
        .unwrap_or_else(|| default_ledger(table));
    let lstore = Store::for_uri(&ledger_uri)?;
    let lock = Lock::take(&ledger_uri).await?;
    let r = reconcile_locked(table, &store, &lstore, &ledger_uri, wasm).await;
    lock.release().await;
    r
}

async fn reconcile_locked(
    table: &str,
    store: &Store,
    lstore: &Store,
    ledger_uri: &str,
    wasm: Option<&str>,
) -> Result<Swept, HostError> {
    let ledger_uri = ledger_uri.to_owned();
    let now = now_ms();
    let mut planner = Planner::load(&wasm_path(wasm))?;
    let ledger = crate::session::ledger::open(&mut planner, lstore, &ledger_uri)
        .await?
        .ok_or_else(|| refused!("no ledger at {ledger_uri}"))?;
    // The core says what to settle: approvals a dead run left without
    // receipts, unknown outcomes, deletes not yet verified.
    let begun = planner.ledger_reconcile(ledger, now)?;
    let mut moves = Moved::default();
    moves.add(begun.moves, &begun.moved);
    moves.merge(
        probe_all(
            &mut planner,
            ledger,
            store,
            table,
            &Default::default(),
            RECONCILE_CONCURRENCY,
            now,
        )
        .await?,
    );
    crate::session::ledger::save(&mut planner, ledger, lstore, &ledger_uri).await?;
    crate::session::ledger::remove_strays(&mut planner, ledger, lstore, &ledger_uri).await?;
    let outlook = planner.ledger_outlook(ledger, now)?;
    let open_damage = planner.ledger_open_damage(ledger)?;
    Ok(Swept {
        mode: None,
        comparison: None,
        outlook,
        now_ms: now,
        warnings: Vec::new(),
        open_damage,
        moves,
        approval: None,
        gates: planner.ledger_gates(ledger)?,
        ledger_uri,
        stopped: None,
        damage: Vec::new(),
        damage_unchecked: None,
        notes: Vec::new(),
    })
}

/// A state move as the run report's JSON writes it.
pub fn move_json(m: &wt::StateMove) -> Value {
    json!({"key": m.key, "from": m.from.map(state_name), "to": state_name(m.to),
           "atMs": m.at_ms, "why": m.why})
}

/// An approval as the run report's JSON writes it.
pub fn approval_json(a: &wt::Approval) -> Value {
    json!({"revision": a.revision, "atMs": a.at_ms, "granted": a.granted,
           "differences": a.differences, "planDigest": a.plan_digest,
           "metadataLocation": a.metadata_location, "holdGeneration": a.hold_generation,
           "leaseWatermark": a.lease_watermark,
           "liveHoldGeneration": a.live_hold_generation,
           "liveLeaseWatermark": a.live_lease_watermark,
           "quarantineRoot": a.quarantine_root, "approved": a.approved})
}

/// Objects per state, as a JSON object keyed by state name.
fn states_json(g: &wt::Gates) -> Value {
    Value::Object(
        g.states
            .iter()
            .map(|s| (state_name(s.state).to_owned(), json!(s.count)))
            .collect(),
    )
}

/// The gates as the run report's JSON writes them.
pub fn gates_json(g: &wt::Gates) -> Value {
    json!({"deletedOutsideApproval": g.deleted_outside_approval,
           "approvedNotDeleted": g.approved_not_deleted,
           "approvalsAfterNewerHold": g.approvals_after_newer_hold,
           "damaged": g.damaged,

           "unknownTotal": g.unknown_total, "unknownReconciled": g.unknown_reconciled,
           "states": states_json(g)})
}

/// A run's mode in its fleet as the run report's JSON writes it.
pub fn mode_json(m: &wt::ModeDecision) -> Value {
    json!({"cohort": m.cohort, "mode": crate::names::mode_name(m.mode),
           "wanted": crate::names::mode_name(m.wanted), "why": m.why,
           "stopSwitch": m.stop_switch, "haltExtensionMs": m.halt_extension_ms})
}

/// The human lines of a run's mode and comparison.
fn rollout_text(s: &Swept) -> String {
    let mut out = String::new();
    if let Some(m) = &s.mode {
        out.push_str(&format!(
            "mode: {} (cohort {}){}\n",
            crate::names::mode_name(m.mode),
            crate::commands::report::esc(&m.cohort),
            if m.mode == wt::Mode::Shadow {
                ": plans and compares, deletes nothing"
            } else {
                ""
            }
        ));
        for w in &m.why {
            out.push_str(&format!("  {}\n", crate::commands::report::esc(w)));
        }
    }
    if let Some(c) = &s.comparison {
        out.push_str(&format!(
            "compared with {}: we would delete {}, they {}, both {}; {} differences explained {}, {} unexplained\n",
            c["tool"].as_str().unwrap_or(""),
            c["ours"], c["theirs"], c["both"],
            c["explained"].as_object().map_or(0, |e| e.values().filter_map(Value::as_u64).sum::<u64>()),
            c["explained"],
            c["unexplained"]
        ));
        for d in c["differences"].as_array().into_iter().flatten().take(20) {
            out.push_str(&format!(
                "  {} {} [{}] {}\n",
                if d["side"] == "ours" {
                    "ours  "
                } else {
                    "theirs"
                },
                crate::commands::report::esc(d["key"].as_str().unwrap_or("")),
                d["rule"].as_str().unwrap_or("UNEXPLAINED"),
                crate::commands::report::esc(d["why"].as_str().unwrap_or(""))
            ));
        }
    }
    out
}

/// The human report of a run: moves grouped by the state they reached, the
/// approval, and the gates.
pub fn human(s: &Swept) -> String {
    let mut out = rollout_text(s);
    for n in &s.notes {
        out.push_str(&format!("store: {}\n", crate::commands::report::esc(n)));
    }
    for w in &s.warnings {
        out.push_str(&format!("warning: {}\n", crate::commands::report::esc(w)));
    }
    // In lifecycle order.
    const ORDER: [&str; 9] = [
        "PROTECTED",
        "DISCOVERED",
        "UNREFERENCED_ELIGIBLE",
        "QUARANTINED",
        "RESTORE_VERIFIED",
        "DELETE_APPROVED",
        "DELETED",
        "DELETE_UNKNOWN",
        "VERIFIED",
    ];
    let mut by_state: std::collections::BTreeMap<usize, (&str, Vec<&wt::StateMove>)> =
        Default::default();
    for to in s.moves.counts.keys() {
        let rank = ORDER.iter().position(|x| x == to).unwrap_or(ORDER.len());
        by_state.insert(rank, (to, Vec::new()));
    }
    for m in &s.moves.sample {
        let to = state_name(m.to);
        let rank = ORDER.iter().position(|x| *x == to).unwrap_or(ORDER.len());
        by_state.entry(rank).or_insert((to, Vec::new())).1.push(m);
    }
    if s.moves.total() == 0 {
        out.push_str(if s.outlook.is_empty() {
            "no object changed state this run, and nothing waits (no delete candidate in the ledger)\n"
        } else {
            "no object changed state this run (what waits, and when it can move: next steps below)\n"
        });
    }
    for (state, ms) in by_state.values() {
        let count = s
            .moves
            .counts
            .get(state)
            .copied()
            .unwrap_or(ms.len() as u64);
        out.push_str(&format!("-> {state} ({count})\n"));
        for m in ms.iter().take(50) {
            out.push_str(&format!(
                "  {}  [from {}] {}\n",
                crate::commands::report::esc(&m.key),
                m.from.map(state_name).unwrap_or("new"),
                crate::commands::report::esc(&m.why)
            ));
        }
        let shown = ms.len().min(50) as u64;
        if count > shown {
            out.push_str(&format!("  ... and {} more\n", count - shown));
        }
    }
    if let Some(a) = &s.approval {
        if a.granted {
            out.push_str(&format!(
                "approval granted for {} objects (quarantine root {})\n",
                a.approved, a.quarantine_root
            ));
        } else if s.mode.as_ref().is_some_and(|m| m.mode == wt::Mode::Shadow) {
            out.push_str("shadow mode: nothing approved, nothing deleted\n");
        } else if !a.differences.is_empty() {
            out.push_str("approval refused, the plan must be recomputed (next run):\n");
            for d in &a.differences {
                out.push_str(&format!("  {}\n", crate::commands::report::esc(d)));
            }
        }
    }
    if let Some(why) = &s.stopped {
        out.push_str(&format!(
            "deletes STOPPED before the last batch (the rest is kept and starts over): {}\n",
            why.join("; ")
        ));
    }
    if let Some(e) = &s.damage_unchecked {
        out.push_str(&format!(
            "DAMAGE CHECK FAILED: {e}: compare this run's deleted keys with the live table\n"
        ));
    }
    for d in &s.damage {
        out.push_str(&format!(
            "DAMAGE: {} {} ({})\n",
            crate::commands::report::esc(&d.receipt.key),
            d.receipt.detail.as_deref().unwrap_or(""),
            d.restore.as_deref().unwrap_or("")
        ));
    }
    for d in &s.open_damage {
        if s.damage.iter().any(|x| x.receipt.key == d.key) {
            continue;
        }
        out.push_str(&format!(
            "DAMAGE (open since {}): {} {} ({})\n",
            crate::commands::report::time(d.found_ms),
            crate::commands::report::esc(&d.key),
            crate::commands::report::esc(&d.why),
            d.restore
        ));
    }
    if !s.outlook.is_empty() {
        out.push_str("next steps:\n");
        out.push_str(&outlook_text(&s.outlook, s.now_ms, "  "));
    }
    out.push_str(&gates_text(&s.gates));
    out.push_str(&format!("ledger saved to {}\n", s.ledger_uri));
    out
}

/// What waits, one state a line: how many, from when (`next run`, or the
/// time and how long until it), and what the next step is.
pub fn outlook_text(outlook: &[wt::Waiting], now_ms: i64, indent: &str) -> String {
    let mut out = String::new();
    for w in outlook {
        let when = if w.earliest_ms > now_ms {
            format!(
                "from {} (in {})",
                crate::commands::report::time(w.earliest_ms),
                crate::commands::report::duration(w.earliest_ms - now_ms)
            )
        } else {
            "next run".to_owned()
        };
        out.push_str(&format!(
            "{indent}{:<22} {:>6}  {when}: {}\n",
            state_name(w.state),
            w.count,
            w.next
        ));
    }
    out
}

/// The outlook as JSON.
pub fn outlook_json(outlook: &[wt::Waiting]) -> Vec<serde_json::Value> {
    outlook
        .iter()
        .map(|w| {
            json!({"state": state_name(w.state), "count": w.count,
                   "earliestMs": w.earliest_ms, "next": w.next})
        })
        .collect()
}

/// The gates, one per line.
pub fn gates_text(g: &wt::Gates) -> String {
    let total = g.unknown_total;
    let done = g.unknown_reconciled;
    let pct = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    format!(
        "gates: deleted outside an approval = {}; approved but not deleted = {}; approvals after a newer hold generation = {}; deleted keys the table needs = {}; unknown outcomes reconciled = {pct:.0}% ({done}/{total})\nstates: {}\n",
        g.deleted_outside_approval,
        g.approved_not_deleted,
        g.approvals_after_newer_hold,
        g.damaged,
        states_json(g)
    )
}

/// `sweep TABLE`: one two-phase deletion step, printed; exit 3 on damage,
/// 1 while outcomes stay unknown or a gate is broken.
pub async fn command(a: &SweepCmd) -> Result<ExitCode, HostError> {
    let plan = crate::commands::plan::plan_input(&a.plan, false).await?;
    let s = run(a, &plan).await?;
    print_swept(&s, a.plan.json)
}

/// `reconcile TABLE`: HEADs every unconfirmed delete and records the
/// answers, printed like a sweep.
pub async fn reconcile_command(t: &LedgerTarget) -> Result<ExitCode, HostError> {
    let table = crate::stores::table_uri(&t.table)?;
    let s = reconcile(
        &table,
        t.ledger.ledger.as_deref(),
        t.planner.wasm.as_deref(),
    )
    .await?;
    print_swept(&s, t.json)
}

/// Prints a sweep or reconcile run; exit 1 while outcomes stay unknown.
fn print_swept(s: &Swept, json: bool) -> Result<ExitCode, HostError> {
    if json {
        let v = serde_json::json!({
            "moves": s.moves.sample.iter().map(move_json).collect::<Vec<_>>(),
            "moved": s.moves.counts,
            "approval": s.approval.as_ref().map(approval_json),
            "gates": gates_json(&s.gates), "ledger": s.ledger_uri,
            "stopped": s.stopped,
            "damage": s.damage.iter().map(crate::session::deletion::receipt_json).collect::<Vec<_>>(),
            "openDamage": s.open_damage.iter().map(|d| serde_json::json!({
                "key": d.key, "version": crate::names::version_json(&d.version),
                "foundMs": d.found_ms, "why": d.why, "restore": d.restore})).collect::<Vec<_>>(),
            "warnings": s.warnings,
            "damageUnchecked": s.damage_unchecked,
            "notes": s.notes, "outlook": outlook_json(&s.outlook),
            "mode": s.mode.as_ref().map(mode_json),
            "comparison": s.comparison});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        out!("{}", human(s));
    }
    let g = &s.gates;
    let pending = g.unknown_total > g.unknown_reconciled || g.approved_not_deleted > 0;
    let broken = g.deleted_outside_approval > 0 || g.approvals_after_newer_hold > 0;
    Ok(
        if !s.damage.is_empty() || s.damage_unchecked.is_some() || g.damaged > 0 {
            ExitCode::from(3)
        } else if pending || broken || s.stopped.is_some() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}
