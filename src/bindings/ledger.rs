//! The `ledger` and `plan` resources: a sealed plan held once and shared
//! by a ledger's step and a deletion, and the two-phase deletion ledger.

use std::cell::RefCell;
use std::rc::Rc;

use super::convert::*;
use super::deletion::Deletion;
use super::{cd, cl, core, wp, wt};

/// A ledger, held for the host.
pub(super) struct Ledger(pub(super) RefCell<core::Ledger>);

impl Ledger {
    /// The step's moves, counts, probes and gates, as the interface's record.
    pub(super) fn ledger_step(&self, m: &cl::Moves) -> wt::LedgerStep {
        let l = self.0.borrow();
        wt::LedgerStep {
            moves: moves(m),
            moved: moved(m),
            probes: l.probes_pending(),
            gates: gates(l.gates()),
        }
    }
}

/// A sealed plan held here; a ledger's step and a deletion share it.
pub(super) struct Plan {
    plan: Rc<core::SealedPlan>,
    /// Its stored document, made once when first asked for.
    document: RefCell<Option<String>>,
}

impl Plan {
    /// Its number of deletes (a plan of more than 2^32 is refused by every
    /// share, so saturating cannot make one match).
    fn deletes_u32(&self) -> u32 {
        u32::try_from(self.plan.delete.len()).unwrap_or(u32::MAX)
    }

    /// A new resource holding `plan`.
    pub(super) fn handle(plan: core::SealedPlan) -> wp::Plan {
        wp::Plan::new(Plan {
            plan: Rc::new(plan),
            document: RefCell::new(None),
        })
    }
}

impl wp::GuestPlan for Plan {
    fn load(document: String) -> Result<wp::Plan, wt::Error> {
        Ok(Plan::handle(plan_in(&document)?))
    }

    fn header(&self) -> wt::PlanHeader {
        plan_header(&self.plan)
    }

    fn deletes(&self, start: u64, count: u32) -> Vec<wt::PlannedDelete> {
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        self.plan
            .delete
            .iter()
            .skip(start)
            .take(count as usize)
            .map(planned_delete_out)
            .collect()
    }

    fn document_length(&self) -> u64 {
        self.document
            .borrow_mut()
            .get_or_insert_with(|| self.plan.to_json())
            .len() as u64
    }

    fn document_hex(&self, offset: u64, length: u32) -> String {
        crate::digest::hex(&self.document(offset, length))
    }

    fn document(&self, offset: u64, length: u32) -> Vec<u8> {
        let mut d = self.document.borrow_mut();
        let text = d.get_or_insert_with(|| self.plan.to_json()).as_bytes();
        let from = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(text.len());
        let to = from.saturating_add(length as usize).min(text.len());
        text[from..to].to_vec()
    }

    fn add_report(
        &self,
        decisions: Vec<wt::Decision>,
        unrepresentable: Vec<String>,
        store_notes: Vec<String>,
    ) {
        let decisions = decisions.into_iter().map(decision_in).collect();
        let reported = (*self.plan)
            .clone()
            .with_report(decisions, unrepresentable, store_notes);
        *self.document.borrow_mut() = Some(reported.to_json());
    }

    fn combine_shares(
        &self,
        outcomes: Vec<wt::DeletionOutcome>,
    ) -> Result<wt::DeletionOutcome, wt::Error> {
        let outcomes: Vec<cd::DeletionOutcome> = outcomes.into_iter().map(outcome_in).collect();
        cd::combine(&self.plan.digest, self.deletes_u32(), &outcomes)
            .map(outcome_out)
            .map_err(err)
    }

    fn combine_shares_json(&self, outcomes: Vec<String>) -> Result<String, wt::Error> {
        cd::combine_json(&self.plan.digest, self.deletes_u32(), &outcomes).map_err(err)
    }
}

impl wp::GuestLedger for Ledger {
    fn load(document: String) -> Result<wp::Ledger, wt::Error> {
        let l = core::Ledger::parse(&document).map_err(err)?;
        Ok(wp::Ledger::new(Ledger(RefCell::new(l))))
    }

    fn create(
        plan: wp::PlanBorrow<'_>,
        quarantine_ms: Option<i64>,
        prior_ledger: bool,
        start_new: bool,
    ) -> Result<wp::Ledger, wt::Error> {
        let plan = &plan.get::<Plan>().plan;
        let l = core::Ledger::create(plan, quarantine_ms, prior_ledger, start_new).map_err(err)?;
        Ok(wp::Ledger::new(Ledger(RefCell::new(l))))
    }

    fn next_read(&self) -> Option<String> {
        self.0.borrow().next_read()
    }

    fn handle_read(&self, name: String, bytes: Vec<u8>) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_read(&name, &bytes).map_err(err)
    }

    fn handle_missing(&self, name: String) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_missing(&name).map_err(err)
    }

    fn begin(&self, plan: wp::PlanBorrow<'_>, now_ms: i64) -> Result<wt::LedgerStep, wt::Error> {
        let plan = &plan.get::<Plan>().plan;
        let m = self.0.borrow_mut().begin_step(plan, now_ms).map_err(err)?;
        Ok(self.ledger_step(&m))
    }

    fn reconcile(&self, now_ms: i64) -> Result<wt::LedgerStep, wt::Error> {
        let m = self.0.borrow_mut().reconcile_step(now_ms).map_err(err)?;
        Ok(self.ledger_step(&m))
    }

    fn next_probes(&self, max: u32) -> Vec<wt::Probe> {
        probes(self.0.borrow_mut().next_probes(max as usize))
    }

    fn observe(
        &self,
        observations: Vec<wt::Observation>,
        now_ms: i64,
    ) -> Result<wt::LedgerStep, wt::Error> {
        let obs: Vec<cl::Observation> = observations
            .into_iter()
            .map(|o| cl::Observation {
                key: o.key,
                seen: o.seen.map(version_in),
                blocked: o.blocked,
            })
            .collect();
        let m = self.0.borrow_mut().observe(&obs, now_ms).map_err(err)?;
        Ok(self.ledger_step(&m))
    }

    fn approve(
        &self,
        plan: wp::PlanBorrow<'_>,
        live: wt::LiveState,
        now_ms: i64,
    ) -> Result<wt::ApprovalStep, wt::Error> {
        let plan = &plan.get::<Plan>().plan;
        let live = cl::LiveState {
            metadata_location: live.metadata_location,
            context: live.context,
            blocked: live.blocked.into_iter().map(|b| (b.key, b.why)).collect(),
            head: live.head.map(version_in),
            clock_ms: live.clock_ms,
            allow_future_now: live.allow_future_now,
        };
        let (a, m) = self
            .0
            .borrow_mut()
            .approve(plan, &live, now_ms)
            .map_err(err)?;
        Ok(wt::ApprovalStep {
            approval: wt::Approval {
                revision: a.revision,
                at_ms: a.at_ms,
                granted: a.granted,
                differences: a.differences,
                plan_digest: a.plan_digest,
                metadata_location: a.metadata_location,
                hold_generation: a.hold_generation,
                lease_watermark: a.lease_watermark,
                live_hold_generation: a.live_hold_generation,
                live_lease_watermark: a.live_lease_watermark,
                quarantine_root: a.quarantine_root,
                approved: a.approved,
            },
            moves: moves(&m),
            moved: moved(&m),
            gates: gates(self.0.borrow().gates()),
        })
    }

    fn start_deletion(
        &self,
        plan: wp::PlanBorrow<'_>,
        options: wt::DeletionOptions,
    ) -> Result<wp::Deletion, wt::Error> {
        let plan = plan.get::<Plan>().plan.clone();
        let d = cd::Deletion::for_ledger(&self.0.borrow(), plan, deletion_options(options))
            .map_err(err)?;
        Ok(wp::Deletion::new(Deletion(RefCell::new(d))))
    }

    fn record_drained(
        &self,
        deletion: wp::DeletionBorrow<'_>,
        now_ms: i64,
    ) -> Result<Vec<wt::DeletionReceipt>, wt::Error> {
        let drained = deletion.get::<Deletion>().0.borrow_mut().drain_receipts();
        let receipts: Vec<cl::Receipt> = drained.iter().map(|r| r.receipt.clone()).collect();
        self.0
            .borrow_mut()
            .record_receipts(&receipts, now_ms)
            .map_err(err)?;
        Ok(drained.into_iter().map(deletion_receipt_out).collect())
    }

    fn finish_deletion(&self, now_ms: i64) -> Result<wt::LedgerStep, wt::Error> {
        let m = self.0.borrow_mut().finish_recording(now_ms).map_err(err)?;
        Ok(self.ledger_step(&m))
    }

    fn observe_halts(
        &self,
        readings: Vec<wt::SwitchReading>,
        extension_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<Vec<wt::HaltSeen>, wt::Error> {
        let readings: Vec<_> = readings.into_iter().map(switch_reading).collect();
        let seen = self
            .0
            .borrow_mut()
            .observe_halts(&readings, extension_ms, now_ms)
            .map_err(err)?;
        Ok(seen.into_iter().map(halt_seen_out).collect())
    }

    fn enter_fleet(&self, fleet: String, now_ms: i64) -> Result<wt::ModeDecision, wt::Error> {
        let d = self
            .0
            .borrow_mut()
            .enter_fleet(&fleet, now_ms)
            .map_err(err)?;
        Ok(mode_decision_out(d))
    }

    fn record_comparison(
        &self,
        plan: wp::PlanBorrow<'_>,
        their: wt::TheirList,
        decisions: Vec<wt::Decision>,
        clock_ms: i64,
    ) -> Result<String, wt::Error> {
        let plan = &plan.get::<Plan>().plan;
        let their = core::comparison::TheirList {
            keys: their.keys,
            outside: their.outside,
        };
        let decisions: Vec<_> = decisions.into_iter().map(decision_in).collect();
        let c = self
            .0
            .borrow_mut()
            .record_comparison(plan, &their, &decisions, clock_ms)
            .map_err(err)?;
        Ok(serde_json::to_string(&c).unwrap_or_default())
    }

    fn rollout_gate(&self, now_ms: i64) -> wt::RolloutGate {
        let g = self.0.borrow().gate(now_ms);
        wt::RolloutGate {
            passed: g.passed,
            shadow_days: g.shadow_days,
            shadow_since_ms: g.shadow_since_ms,
            runs: g.runs,
            days_covered: g.days_covered,
            days_with_runs: g.days_with_runs,
            open_differences: g.open_differences,
            why: g.why,
        }
    }

    fn move_mode(
        &self,
        to: wt::Mode,
        by: String,
        why: String,
        now_ms: i64,
        clock_ms: i64,
        allow_future_now: bool,
    ) -> Result<wt::ModeMove, wt::Error> {
        let m = self
            .0
            .borrow_mut()
            .move_mode(mode_in(to), &by, &why, now_ms, clock_ms, allow_future_now)
            .map_err(err)?;
        Ok(wt::ModeMove {
            at_ms: m.at_ms,
            from: m.from.map(mode_out),
            to: mode_out(m.to),
            by: m.by,
            why: m.why,
        })
    }

    fn rollout_document(&self, now_ms: i64) -> Option<String> {
        self.0.borrow().rollout_document(now_ms)
    }

    fn record_full_drill(
        &self,
        run: wt::RestoreRun,
        policy: Option<String>,
    ) -> Result<wt::FullDrill, wt::Error> {
        let rule = match policy {
            Some(p) => core::Policy::parse_checked(&p).map_err(err)?.restore_drill,
            None => None,
        };
        let d = self
            .0
            .borrow_mut()
            .record_full_drill(&restore_run_in(run), rule.as_ref())
            .map_err(err)?;
        Ok(full_drill_out(d))
    }

    fn full_drills(&self) -> Vec<wt::FullDrill> {
        self.0
            .borrow()
            .full_drills()
            .iter()
            .cloned()
            .map(full_drill_out)
            .collect()
    }

    fn full_drill_missing(&self, now_ms: i64, required: bool) -> Option<String> {
        self.0.borrow().full_drill_missing(now_ms, required)
    }

    fn halts(&self) -> Vec<wt::HaltSeen> {
        self.0
            .borrow()
            .halts()
            .iter()
            .cloned()
            .map(halt_seen_out)
            .collect()
    }

    fn record_drill(
        &self,
        table_location: String,
        seed: u64,
        bundles_total: u64,
        results: Vec<wt::DrillResult>,
        now_ms: i64,
    ) -> Result<wt::Drill, wt::Error> {
        let results = results
            .into_iter()
            .map(|r| (r.bundle_id, r.failure))
            .collect();
        let d = self
            .0
            .borrow_mut()
            .record_drill(&table_location, seed, bundles_total, results, now_ms)
            .map_err(err)?;
        Ok(wt::Drill {
            at_ms: d.at_ms,
            seed: d.seed,
            bundles_total: d.bundles_total,
            sampled: d.sampled,
            failed: d
                .failed
                .into_iter()
                .map(|(bundle_id, why)| wt::DrillFailure { bundle_id, why })
                .collect(),
            passed: d.passed,
        })
    }

    fn gates(&self) -> wt::Gates {
        gates(self.0.borrow().gates())
    }

    fn outlook(&self, now_ms: i64) -> Vec<wt::Waiting> {
        self.0
            .borrow()
            .outlook(now_ms)
            .into_iter()
            .map(|w| wt::Waiting {
                state: state(w.state),
                count: w.count,
                earliest_ms: w.earliest_ms,
                next: w.next,
            })
            .collect()
    }

    fn objects(&self, start: u64, count: u32) -> Vec<wt::LedgerObject> {
        self.0
            .borrow()
            .objects(start, count)
            .into_iter()
            .map(|(key, o)| wt::LedgerObject {
                key,
                state: state(o.state),
                version: version_out(o.version),
                since_ms: o.since_ms,
                why: o.why,
                receipt: o.receipt.map(receipt_out),
            })
            .collect()
    }

    fn in_flight(&self) -> u64 {
        self.0.borrow().in_flight()
    }

    fn verified(&self) -> wt::VerifiedSummary {
        let l = self.0.borrow();
        let v = l.verified();
        wt::VerifiedSummary {
            objects: v.objects,
            bytes: v.bytes,
            archives: v.archives.len() as u64,
        }
    }

    fn consumed(&self, keys: Vec<String>) -> Vec<bool> {
        self.0.borrow().consumed(&keys)
    }

    fn deleted_index(&self) -> Vec<u8> {
        self.0.borrow().deleted_index()
    }

    fn open_damage(&self) -> Vec<wt::Damage> {
        let l = self.0.borrow();
        l.open_damage()
            .map(|d| {
                let uri = if d.key.contains("://") {
                    d.key.clone()
                } else {
                    format!("{}/{}", l.table_location(), d.key)
                };
                wt::Damage {
                    key: d.key.clone(),
                    version: version_out(d.version.clone()),
                    found_ms: d.found_ms,
                    why: d.why.clone(),
                    restore: cd::restore_hint(&uri, &d.version),
                }
            })
            .collect()
    }

    fn next_write(&self) -> Result<Option<wt::LedgerFile>, wt::Error> {
        Ok(self
            .0
            .borrow_mut()
            .next_write()
            .map_err(err)?
            .map(|f| wt::LedgerFile {
                name: f.name,
                bytes: f.bytes,
            }))
    }

    fn obsolete(&self) -> Vec<String> {
        self.0.borrow().obsolete()
    }

    fn strays(&self, names: Vec<String>) -> Vec<String> {
        self.0.borrow().strays(&names)
    }

    fn archives(&self) -> Vec<String> {
        self.0.borrow().archives()
    }

    fn check_archive(
        &self,
        name: String,
        bytes: Vec<u8>,
    ) -> Result<Vec<wt::LedgerObject>, wt::Error> {
        let objects = self
            .0
            .borrow_mut()
            .check_archive(&name, &bytes)
            .map_err(err)?;
        Ok(objects
            .into_iter()
            .map(|o| wt::LedgerObject {
                key: o.key,
                state: wt::ObjectState::Verified,
                version: version_out(o.version),
                since_ms: o.verified_ms,
                why: o.why,
                receipt: o.receipt.map(receipt_out),
            })
            .collect())
    }

    fn audit(&self) -> wt::LedgerAudit {
        let a = self.0.borrow().audit();
        wt::LedgerAudit {
            in_flight: a.in_flight,
            verified: wt::VerifiedSummary {
                objects: a.verified.objects,
                bytes: a.verified.bytes,
                archives: a.verified.archives.len() as u64,
            },
            archives_checked: a.archives_checked,
            problems: a.problems,
        }
    }

    fn last_step_ms(&self) -> Option<i64> {
        self.0.borrow().last_step_ms()
    }

    fn quarantine_ms(&self) -> i64 {
        self.0.borrow().quarantine_ms()
    }

    fn table_location(&self) -> String {
        self.0.borrow().table_location().to_owned()
    }

    fn revision(&self) -> u64 {
        self.0.borrow().revision()
    }
}
