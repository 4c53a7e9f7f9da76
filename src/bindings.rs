//! Exports of the WebAssembly component (`wit/lakesweep.wit`), a thin
//! one-to-one mapping onto the crate's public API: records in, records out,
//! stored documents as their text. No decision is made here.

wit_bindgen::generate!({
    path: "wit",
    world: "lakesweep",
});

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use exports::lakesweep::planner::planner as wp;
use lakesweep::planner::types as wt;

use crate as core;
use crate::deletion as cd;
use crate::ledger as cl;

struct Component;

fn err(e: core::Error) -> wt::Error {
    match e {
        core::Error::Malformed {
            reason,
            uri,
            detail,
        } => wt::Error::Malformed(wt::MalformedError {
            reason: match reason {
                core::error::MalformedReason::Encoding => wt::MalformedReason::Encoding,
                core::error::MalformedReason::Field => wt::MalformedReason::Field,
                core::error::MalformedReason::Inconsistent => wt::MalformedReason::Inconsistent,
                core::error::MalformedReason::Path => wt::MalformedReason::Path,
                core::error::MalformedReason::PartialWrite => wt::MalformedReason::PartialWrite,
            },
            uri,
            detail,
        }),
        core::Error::Unsupported { feature, uri } => {
            wt::Error::Unsupported(wt::UnsupportedError { feature, uri })
        }
        core::Error::Protocol { reason, detail } => wt::Error::Protocol(wt::ProtocolError {
            reason: match reason {
                core::error::ProtocolReason::UnexpectedAnswer => {
                    wt::ProtocolReason::UnexpectedAnswer
                }
                core::error::ProtocolReason::BadKey => wt::ProtocolReason::BadKey,
                core::error::ProtocolReason::OutOfOrder => wt::ProtocolReason::OutOfOrder,
                core::error::ProtocolReason::BadInput => wt::ProtocolReason::BadInput,
            },
            detail,
        }),
        core::Error::InvalidOptions { field, detail } => {
            wt::Error::InvalidOptions(wt::InvalidOptionsError { field, detail })
        }
        core::Error::Unsafe { reason, detail } => wt::Error::Unsafe(wt::UnsafeError {
            reason: match reason {
                core::UnsafeReason::MissingMetadata => wt::UnsafeReason::MissingMetadata,
                core::UnsafeReason::ForeignTable => wt::UnsafeReason::ForeignTable,
                core::UnsafeReason::LocationMismatch => wt::UnsafeReason::LocationMismatch,
                core::UnsafeReason::NoReferencedKeyListed => {
                    wt::UnsafeReason::NoReferencedKeyListed
                }
                core::UnsafeReason::TableChanging => wt::UnsafeReason::TableChanging,
                core::UnsafeReason::GcDisabled => wt::UnsafeReason::GcDisabled,
                core::UnsafeReason::ProtectedSnapshotMissing => {
                    wt::UnsafeReason::ProtectedSnapshotMissing
                }
                core::UnsafeReason::StalePointer => wt::UnsafeReason::StalePointer,
                core::UnsafeReason::SharedLocation => wt::UnsafeReason::SharedLocation,
                core::UnsafeReason::NestedTable => wt::UnsafeReason::NestedTable,
            },
            detail,
        }),
    }
}

fn maps(m: Vec<wt::PathMapping>) -> Vec<core::PathMapping> {
    m.into_iter()
        .map(|m| core::PathMapping {
            from: m.from,
            to: m.to,
        })
        .collect()
}

fn blobs(b: Vec<wt::Blob>) -> BTreeMap<String, Vec<u8>> {
    b.into_iter().map(|b| (b.key, b.bytes)).collect()
}

fn version_in(v: wt::ObjectVersion) -> cl::ObjectVersion {
    cl::ObjectVersion {
        size: v.size,
        last_modified_ms: v.last_modified_ms,
        etag: v.etag,
        version_id: v.version_id,
    }
}

fn version_out(v: cl::ObjectVersion) -> wt::ObjectVersion {
    wt::ObjectVersion {
        size: v.size,
        last_modified_ms: v.last_modified_ms,
        etag: v.etag,
        version_id: v.version_id,
    }
}

fn obj(o: wt::ListedObject) -> core::ListedObject {
    core::ListedObject {
        key: o.key,
        size: o.version.size,
        last_modified_ms: o.version.last_modified_ms,
        etag: o.version.etag,
        version_id: o.version.version_id,
    }
}

fn format_out(f: core::TableFormat) -> wt::TableFormat {
    match f {
        core::TableFormat::Iceberg => wt::TableFormat::Iceberg,
        core::TableFormat::Delta => wt::TableFormat::Delta,
    }
}

fn decision(d: core::Decision) -> wt::Decision {
    wt::Decision {
        key: d.key,
        relative_key: d.relative_key,
        verdict: verdict(d.verdict),
        detail: d.detail,
        version: wt::ObjectVersion {
            size: d.size,
            last_modified_ms: d.last_modified_ms,
            etag: d.etag,
            version_id: d.version_id,
        },
    }
}

fn verdict(v: core::Verdict) -> wt::Verdict {
    match v {
        core::Verdict::Referenced => wt::Verdict::Referenced,
        core::Verdict::NearMiss => wt::Verdict::NearMiss,
        core::Verdict::Young => wt::Verdict::Young,
        core::Verdict::Hidden => wt::Verdict::Hidden,
        core::Verdict::Unverified => wt::Verdict::Unverified,
        core::Verdict::OwnerCheck => wt::Verdict::OwnerCheck,
        core::Verdict::Protected => wt::Verdict::Protected,
        core::Verdict::Candidate => wt::Verdict::Candidate,
        core::Verdict::Demoted => wt::Verdict::Demoted,
        core::Verdict::ExpiredLog => wt::Verdict::ExpiredLog,
        core::Verdict::Unaddressable => wt::Verdict::Unaddressable,
        core::Verdict::FolderMarker => wt::Verdict::FolderMarker,
        core::Verdict::Foreign => wt::Verdict::Foreign,
    }
}

fn decision_in(d: wt::Decision) -> core::Decision {
    core::Decision {
        key: d.key,
        relative_key: d.relative_key,
        verdict: match d.verdict {
            wt::Verdict::Referenced => core::Verdict::Referenced,
            wt::Verdict::NearMiss => core::Verdict::NearMiss,
            wt::Verdict::Young => core::Verdict::Young,
            wt::Verdict::Hidden => core::Verdict::Hidden,
            wt::Verdict::Unverified => core::Verdict::Unverified,
            wt::Verdict::OwnerCheck => core::Verdict::OwnerCheck,
            wt::Verdict::Protected => core::Verdict::Protected,
            wt::Verdict::Candidate => core::Verdict::Candidate,
            wt::Verdict::Demoted => core::Verdict::Demoted,
            wt::Verdict::ExpiredLog => core::Verdict::ExpiredLog,
            wt::Verdict::Unaddressable => core::Verdict::Unaddressable,
            wt::Verdict::FolderMarker => core::Verdict::FolderMarker,
            wt::Verdict::Foreign => core::Verdict::Foreign,
        },
        detail: d.detail,
        size: d.version.size,
        last_modified_ms: d.version.last_modified_ms,
        etag: d.version.etag,
        version_id: d.version.version_id,
    }
}

fn tally(t: core::Tally) -> wt::Tally {
    wt::Tally {
        count: t.count,
        bytes: t.bytes,
    }
}

fn named(m: BTreeMap<String, core::Tally>) -> Vec<wt::NamedTally> {
    m.into_iter()
        .map(|(name, t)| wt::NamedTally {
            name,
            tally: tally(t),
        })
        .collect()
}

fn tokens_out(t: &core::PlanTokens) -> wt::PlanTokens {
    let t = t.clone();
    wt::PlanTokens {
        metadata_location: t.metadata_location,
        refs_digest: t.refs_digest,
        refs: t
            .refs
            .into_iter()
            .map(|(name, snapshot_id)| wt::TableRef { name, snapshot_id })
            .collect(),
        now_ms: t.now_ms,
        file_retention_ms: t.file_retention_ms,
        keep_deleted_entries: t.keep_deleted_entries,
        policy_digest: t.policy_digest,
        hold_generation: t.hold_generation,
        lease_watermark: t.lease_watermark,
        context_digest: t.context_digest,
        head: t.head.map(version_out),
        restore_drill: t.restore_drill.map(|g| wt::DrillGate {
            min_bundles: g.min_bundles,
            max_age_ms: g.max_age_ms,
        }),
    }
}

fn summary_out(s: &core::Summary) -> wt::Summary {
    let s = s.clone();
    wt::Summary {
        listed: tally(s.listed),
        verdicts: named(s.verdicts),
        reclaimable: named(s.reclaimable),
        snapshots: s.snapshots,
        snapshots_elsewhere: s.snapshots_elsewhere,
        manifests_read: s.manifests_read,
        referenced_keys: s.referenced_keys,
        external_references: s.external_references,
        keep_set_bytes: s.keep_set_bytes,
        referenced_not_listed: s.referenced_not_listed,
        listed_by_name: s.listed_by_name,
        rechecks: s.rechecks,
        memory_budget_bytes: s.memory_budget_bytes,
        swept_prefixes: s.swept_prefixes,
    }
}

fn damaged_out(d: &[core::DamagedReference]) -> Vec<wt::DamagedReference> {
    d.iter()
        .map(|d| wt::DamagedReference {
            fingerprint: d.fingerprint.clone(),
            reason: d.reason.clone(),
        })
        .collect()
}

fn planned_delete_out(d: &core::PlannedDelete) -> wt::PlannedDelete {
    wt::PlannedDelete {
        key: d.key.clone(),
        version: version_out(cl::version_of(d)),
    }
}

fn sealed_plan(p: core::SealedPlan) -> wt::SealedPlan {
    wt::SealedPlan {
        document: p.to_json(),
        format: format_out(p.format),
        tokens: tokens_out(&p.tokens),
        summary: summary_out(&p.summary),
        damaged: damaged_out(&p.damaged),
        delete: p.delete.iter().map(planned_delete_out).collect(),
        table_location: p.table_location,
        table_uuid: p.table_uuid,
        origin: p.origin,
        warnings: p.warnings,
        digest: p.digest,
    }
}

fn plan_header(p: &core::SealedPlan) -> wt::PlanHeader {
    wt::PlanHeader {
        format: format_out(p.format),
        table_location: p.table_location.clone(),
        table_uuid: p.table_uuid.clone(),
        tokens: tokens_out(&p.tokens),
        origin: p.origin.clone(),
        summary: summary_out(&p.summary),
        warnings: p.warnings.clone(),
        damaged: damaged_out(&p.damaged),
        digest: p.digest.clone(),
        delete_count: p.delete.len() as u64,
        delete_bytes: p.delete.iter().map(|d| d.size).sum(),
    }
}

fn plan_in(document: &str) -> Result<core::SealedPlan, wt::Error> {
    core::SealedPlan::from_json(document).map_err(err)
}

fn live_facts(l: wt::LiveFacts) -> core::LiveFacts {
    core::LiveFacts {
        metadata_location: l.metadata_location,
        head: l.head.map(version_in),
        context: l.context,
        clock_ms: l.clock_ms,
        allow_future_now: l.allow_future_now,
    }
}

fn acceptance(a: core::Acceptance) -> wt::Acceptance {
    wt::Acceptance {
        granted: a.granted,
        differences: a.differences,
        denied: a
            .denied
            .into_iter()
            .map(|(key, why)| wt::DeniedKey { key, why })
            .collect(),
        live_hold_generation: a.live_hold_generation,
        live_lease_watermark: a.live_lease_watermark,
    }
}

fn state(s: cl::ObjectState) -> wt::ObjectState {
    use cl::ObjectState as S;
    match s {
        S::Protected => wt::ObjectState::Protected,
        S::Discovered => wt::ObjectState::Discovered,
        S::UnreferencedEligible => wt::ObjectState::UnreferencedEligible,
        S::Quarantined => wt::ObjectState::Quarantined,
        S::RestoreVerified => wt::ObjectState::RestoreVerified,
        S::DeleteApproved => wt::ObjectState::DeleteApproved,
        S::Deleted => wt::ObjectState::Deleted,
        S::Verified => wt::ObjectState::Verified,
        S::DeleteUnknown => wt::ObjectState::DeleteUnknown,
    }
}

fn moves(m: &cl::Moves) -> Vec<wt::StateMove> {
    m.sample
        .iter()
        .map(|m| wt::StateMove {
            key: m.key.clone(),
            from: m.from.map(state),
            to: state(m.to),
            at_ms: m.at_ms,
            why: m.why.clone(),
        })
        .collect()
}

fn moved(m: &cl::Moves) -> Vec<wt::StateCount> {
    m.to_state
        .iter()
        .map(|(s, count)| wt::StateCount {
            state: state(*s),
            count: *count,
        })
        .collect()
}

fn probes(p: Vec<cl::Probe>) -> Vec<wt::Probe> {
    p.into_iter()
        .map(|p| wt::Probe {
            key: p.key,
            purpose: match p.purpose {
                cl::ProbePurpose::RestoreCheck => wt::ProbePurpose::RestoreCheck,
                cl::ProbePurpose::VerifyGone => wt::ProbePurpose::VerifyGone,
                cl::ProbePurpose::Reconcile => wt::ProbePurpose::Reconcile,
            },
            expect: version_out(p.expect),
        })
        .collect()
}

fn gates(g: cl::Gates) -> wt::Gates {
    wt::Gates {
        deleted_outside_approval: g.deleted_outside_approval,
        approved_not_deleted: g.approved_not_deleted,
        approvals_after_newer_hold: g.approvals_after_newer_hold,
        unknown_total: g.unknown_total,
        unknown_reconciled: g.unknown_reconciled,
        damaged: g.damaged,
        states: g
            .states
            .into_iter()
            .filter_map(|(name, count)| {
                cl::ObjectState::from_name(&name).map(|s| wt::StateCount {
                    state: state(s),
                    count,
                })
            })
            .collect(),
    }
}

fn delete_result_out(r: cl::DeleteResult) -> wt::DeleteResult {
    match r {
        cl::DeleteResult::Deleted => wt::DeleteResult::Deleted,
        cl::DeleteResult::AlreadyAbsent => wt::DeleteResult::AlreadyAbsent,
        cl::DeleteResult::SkippedChanged => wt::DeleteResult::SkippedChanged,
        cl::DeleteResult::SkippedStopped => wt::DeleteResult::SkippedStopped,
        cl::DeleteResult::SkippedProtected => wt::DeleteResult::SkippedProtected,
        cl::DeleteResult::Failed => wt::DeleteResult::Failed,
        cl::DeleteResult::Unknown => wt::DeleteResult::Unknown,
        cl::DeleteResult::Damaged => wt::DeleteResult::Damaged,
        cl::DeleteResult::WouldDelete => wt::DeleteResult::WouldDelete,
    }
}

fn receipt_out(r: cl::Receipt) -> wt::Receipt {
    wt::Receipt {
        key: r.key,
        result: delete_result_out(r.result),
        version: r.version.map(version_out),
        requested_ms: r.requested_ms,
        confirmed_ms: r.confirmed_ms,
        delete_marker: r.delete_marker,
        delete_marker_version_id: r.delete_marker_version_id,
        detail: r.detail,
    }
}

fn deletion_config(c: wt::DeletionConfig) -> cd::DeletionConfig {
    cd::DeletionConfig {
        plan: c.plan,
        options: cd::DeletionOptions {
            location_map: maps(c.location_map),
            batch_size: c.batch_size,
            dry_run: c.dry_run,
            allow_future_now: c.allow_future_now,
            store_gives_etags: c.store_gives_etags,
            keys: c.keys,
        },
    }
}

fn deletion_options(o: wt::DeletionOptions) -> cd::DeletionOptions {
    cd::DeletionOptions {
        location_map: maps(o.location_map),
        batch_size: o.batch_size,
        dry_run: false,
        allow_future_now: o.allow_future_now,
        store_gives_etags: o.store_gives_etags,
        keys: None,
    }
}

fn deletion_receipt_out(r: cd::DeletionReceipt) -> wt::DeletionReceipt {
    wt::DeletionReceipt {
        receipt: receipt_out(r.receipt),
        uri: r.uri,
        planned: version_out(r.planned),
        restore: r.restore,
    }
}

fn session_config_out(c: core::SessionConfig) -> wt::SessionConfig {
    wt::SessionConfig {
        table_location: c.table_location,
        format: format_out(c.format),
        metadata_location: c.metadata_location,
        now_ms: c.now_ms,
        file_retention_ms: c.file_retention_ms,
        keep_deleted_entries: c.keep_deleted_entries,
        allow_short_retention: c.allow_short_retention,
        location_map: c
            .location_map
            .into_iter()
            .map(|m| wt::PathMapping {
                from: m.from,
                to: m.to,
            })
            .collect(),
        policy: c.policy,
        context: c.context,
        keep_versions: c.keep_versions,
        log_cleanup: c.log_cleanup,
        pointer_authoritative: c.pointer_authoritative,
        memory_budget_bytes: Some(c.memory_budget_bytes),
        origin: c.origin,
        foreign_roots: c
            .foreign_roots
            .into_iter()
            .map(|f| wt::ForeignRoot {
                root: f.root,
                owner: f.owner,
            })
            .collect(),
        prior_pointers: c.prior_pointers,
        deleted_index: c.deleted_index,
    }
}

fn targets(batch: u32, objects: Vec<cd::Target>) -> wt::BatchTargets {
    wt::BatchTargets {
        batch,
        objects: objects
            .into_iter()
            .map(|t| wt::Target {
                key: t.key,
                uri: t.uri,
                if_match: t.if_match,
                if_version: t.if_version,
            })
            .collect(),
    }
}

fn deletion_request(r: cd::DeletionRequest) -> wt::DeletionRequest {
    match r {
        cd::DeletionRequest::ReadFacts {
            purpose,
            log_prefix,
        } => wt::DeletionRequest::ReadFacts(wt::ReadFactsRequest {
            purpose: match purpose {
                cd::FactsPurpose::Batch(n) => wt::FactsPurpose::Batch(n),
                cd::FactsPurpose::Final => wt::FactsPurpose::Final,
            },
            log_prefix,
        }),
        cd::DeletionRequest::Head { batch, objects } => {
            wt::DeletionRequest::Head(targets(batch, objects))
        }
        cd::DeletionRequest::Delete { batch, objects } => {
            wt::DeletionRequest::Delete(targets(batch, objects))
        }
        cd::DeletionRequest::CheckDamage { config, keys } => {
            wt::DeletionRequest::CheckDamage(wt::DamageCheckRequest {
                config: session_config_out(*config),
                keys,
            })
        }
    }
}

fn outcome_out(o: cd::DeletionOutcome) -> wt::DeletionOutcome {
    wt::DeletionOutcome {
        exit: o.exit,
        results: o
            .results
            .into_iter()
            .filter_map(|(name, count)| {
                let r: cl::DeleteResult =
                    serde_json::from_value(serde_json::Value::String(name)).ok()?;
                Some(wt::ResultCount {
                    result: delete_result_out(r),
                    count,
                })
            })
            .collect(),
        deleted_bytes: o.deleted_bytes,
        stopped: o.stopped,
        damage_unchecked: o.damage_unchecked,
        refused: o.refused,
    }
}

struct Deletion(RefCell<cd::Deletion>);

impl wp::GuestDeletion for Deletion {
    fn start(config: wt::DeletionConfig) -> Result<wp::Deletion, wt::Error> {
        let d = cd::Deletion::start(deletion_config(config)).map_err(err)?;
        Ok(wp::Deletion::new(Deletion(RefCell::new(d))))
    }

    fn poll_request(&self) -> Option<wt::DeletionRequest> {
        self.0.borrow_mut().poll_request().map(deletion_request)
    }

    fn handle_facts(&self, f: wt::Facts) -> Result<(), wt::Error> {
        let facts = cd::Facts {
            pointer: f.pointer,
            log: f
                .log
                .into_iter()
                .map(|o| core::ListedObject {
                    key: o.key,
                    size: o.version.size,
                    last_modified_ms: o.version.last_modified_ms,
                    etag: o.version.etag,
                    version_id: o.version.version_id,
                })
                .collect(),
            context: f.context,
            clock_ms: f.clock_ms,
        };
        self.0.borrow_mut().handle_facts(facts).map_err(err)
    }

    fn handle_facts_failed(&self, why: String) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_facts_failed(why).map_err(err)
    }

    fn handle_head(&self, key: String, answer: wt::HeadOutcome) -> Result<(), wt::Error> {
        let a = match answer {
            wt::HeadOutcome::Found(v) => cd::HeadAnswer::Found(version_in(v)),
            wt::HeadOutcome::Absent => cd::HeadAnswer::Absent,
            wt::HeadOutcome::Failed(why) => cd::HeadAnswer::Failed(why),
        };
        self.0.borrow_mut().handle_head(key, a).map_err(err)
    }

    fn handle_delete(
        &self,
        key: String,
        answer: wt::StoreAnswer,
        requested_ms: i64,
        answered_ms: Option<i64>,
    ) -> Result<(), wt::Error> {
        let a = match answer {
            wt::StoreAnswer::Deleted(m) => cd::StoreAnswer::Deleted(m),
            wt::StoreAnswer::Absent => cd::StoreAnswer::Absent,
            wt::StoreAnswer::Changed => cd::StoreAnswer::Changed,
            wt::StoreAnswer::Failed(w) => cd::StoreAnswer::Failed(w),
            wt::StoreAnswer::Unknown(w) => cd::StoreAnswer::Unknown(w),
        };
        self.0
            .borrow_mut()
            .handle_delete(key, a, requested_ms, answered_ms)
            .map_err(err)
    }

    fn handle_referenced(&self, referenced: Vec<(String, String)>) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_referenced(referenced)
            .map_err(err)
    }

    fn handle_referenced_failed(&self, why: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_referenced_failed(why)
            .map_err(err)
    }

    fn drain_receipts(&self) -> Vec<wt::DeletionReceipt> {
        self.0
            .borrow_mut()
            .drain_receipts()
            .into_iter()
            .map(deletion_receipt_out)
            .collect()
    }

    fn damage_keys(&self, start: u64, count: u32) -> Vec<String> {
        self.0.borrow().damage_keys(start, count)
    }

    fn is_done(&self) -> bool {
        self.0.borrow().is_done()
    }

    fn outcome(&self) -> wt::DeletionOutcome {
        outcome_out(self.0.borrow().outcome())
    }

    fn poll_request_json(&self) -> Option<String> {
        self.0.borrow_mut().poll_request_json()
    }

    fn handle_answers_json(&self, answers: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_answers_json(answers.as_bytes())
            .map_err(err)
    }

    fn drain_receipts_json(&self) -> String {
        self.0.borrow_mut().drain_receipts_json()
    }

    fn outcome_json(&self) -> String {
        self.0.borrow().outcome_json()
    }
}

fn layer(l: core::bundle::Layer) -> wt::BundleLayer {
    use core::bundle::Layer as L;
    match l {
        L::Metadata => wt::BundleLayer::Metadata,
        L::ManifestList => wt::BundleLayer::ManifestList,
        L::Manifest => wt::BundleLayer::Manifest,
        L::Content => wt::BundleLayer::Content,
    }
}

fn bundle_out(b: core::bundle::Bundle) -> wt::Bundle {
    wt::Bundle {
        document: b.to_json(),
        table_location: b.table_location,
        table_uuid: b.table_uuid,
        candidate_id: b.candidate_id,
        snapshot_ids: b.snapshot_ids,
        metadata_key: b.metadata_key,
        created_ms: b.created_ms,
        entries: b
            .entries
            .into_iter()
            .map(|e| wt::BundleEntry {
                key: e.key,
                layer: layer(e.layer),
                version: version_out(e.version),
                sha256: e.sha256,
            })
            .collect(),
    }
}

fn heads(h: Vec<wt::HeadAnswer>) -> BTreeMap<String, Option<cl::ObjectVersion>> {
    h.into_iter()
        .map(|h| (h.key, h.version.map(version_in)))
        .collect()
}

struct Session(RefCell<core::Session>);
struct PinotSession(RefCell<core::PinotSession>);
struct PageClassifier(core::PageClassifier);
struct Ledger(RefCell<core::Ledger>);

impl Ledger {
    fn ledger_step(&self, m: &cl::Moves) -> wt::LedgerStep {
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
struct Plan {
    plan: Rc<core::SealedPlan>,
    /// Its stored document, made once when first asked for.
    document: RefCell<Option<String>>,
}

impl Plan {
    fn handle(plan: core::SealedPlan) -> wp::Plan {
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
}

impl wp::Guest for Component {
    type Session = Session;
    type PinotSession = PinotSession;
    type PageClassifier = PageClassifier;
    type Ledger = Ledger;
    type Deletion = Deletion;
    type Plan = Plan;

    fn accept_pinot_plan(plan: String, fresh: String) -> Result<wt::PinotApproval, wt::Error> {
        let a = core::pinot::accept_pinot_plan(&plan, &fresh).map_err(err)?;
        Ok(wt::PinotApproval {
            granted: a.granted,
            segment_retention: a.segment_retention,
            segments: a.segments,
            objects: a.objects.into_iter().map(artifact_out).collect(),
            withheld: a.withheld,
        })
    }

    fn accept_plan(plan: String, live: wt::LiveFacts) -> Result<wt::Acceptance, wt::Error> {
        let plan = plan_in(&plan)?;
        core::accept(&plan, &live_facts(live))
            .map(acceptance)
            .map_err(err)
    }

    fn delta_head(
        table_location: String,
        log_listing: Vec<wt::ListedObject>,
    ) -> Result<Option<wt::LogHead>, wt::Error> {
        let head = core::delta_head(&table_location, log_listing.into_iter().map(obj).collect())
            .map_err(err)?;
        Ok(head.map(|(uri, v)| wt::LogHead {
            uri,
            version: version_out(v),
        }))
    }

    fn current_metadata(
        table_location: String,
        version_hint: Option<Vec<u8>>,
        metadata_listing: Vec<String>,
    ) -> Result<(String, String), wt::Error> {
        core::spec::metadata_file::current_metadata(
            &table_location,
            version_hint.as_deref(),
            &metadata_listing,
        )
        .map_err(err)
    }

    fn same_version(pinned: wt::ObjectVersion, seen: wt::ObjectVersion) -> bool {
        version_in(pinned).matches(&version_in(seen))
    }

    fn digest_manifest(uri: String, bytes: Vec<u8>) -> Result<String, wt::Error> {
        core::digest_manifest(&uri, &bytes).map_err(err)
    }

    fn digest_checkpoint(uri: String, bytes: Vec<u8>) -> Result<String, wt::Error> {
        core::digest_checkpoint(&uri, &bytes).map_err(err)
    }

    fn sweep_freshness(
        ledger: Option<wp::LedgerBorrow<'_>>,
        table_location: String,
        now_ms: i64,
        max_age_ms: Option<i64>,
    ) -> Result<wt::Freshness, wt::Error> {
        let f = match ledger {
            Some(l) => {
                let l: &Ledger = l.get();
                let inner = l.0.borrow();
                cl::freshness(Some(&inner), &table_location, now_ms, max_age_ms)
            }
            None => cl::freshness(None, &table_location, now_ms, max_age_ms),
        }
        .map_err(err)?;
        Ok(wt::Freshness {
            stale: f.stale,
            damaged: f.damaged,
            why: f.why,
        })
    }

    fn expiry_landed(
        plan: String,
        live_uri: String,
        live: Vec<u8>,
    ) -> Result<(wt::Landing, String), wt::Error> {
        let (l, why) = core::expiry_landed(&plan, &live_uri, &live).map_err(err)?;
        let l = match l {
            core::Landing::Landed => wt::Landing::Landed,
            core::Landing::NotLanded => wt::Landing::NotLanded,
            core::Landing::Unknown => wt::Landing::Unknown,
        };
        Ok((l, why))
    }

    fn judge_mutation(what: String, a: wt::MutationAnswer) -> (wt::MutationOutcome, String) {
        use core::mutation::MutationOutcome as O;
        let (o, why) = core::mutation::judge_mutation(
            &what,
            &core::mutation::MutationAnswer {
                status: a.status,
                location: a.location,
                error: a.error,
                not_sent: a.not_sent,
            },
        );
        let o = match o {
            O::Done => wt::MutationOutcome::Done,
            O::Absent => wt::MutationOutcome::Absent,
            O::Refused => wt::MutationOutcome::Refused,
            O::Unknown => wt::MutationOutcome::Unknown,
        };
        (o, why)
    }

    fn ownership_map(
        entries: Vec<wt::CatalogEntry>,
        location_map: Vec<wt::PathMapping>,
    ) -> Result<Vec<wt::EstateMember>, wt::Error> {
        let entries = entries
            .into_iter()
            .map(|e| core::estate::CatalogEntry {
                namespace: e.namespace,
                name: e.name,
                kind: e.kind,
                location: e.location,
                other_locations: e.other_locations,
                metadata_location: e.metadata_location,
                metadata: e.metadata,
            })
            .collect();
        let map = core::estate::ownership_map(entries, &maps(location_map)).map_err(err)?;
        Ok(map
            .into_iter()
            .map(|m| wt::EstateMember {
                namespace: m.namespace,
                name: m.name,
                kind: m.kind,
                location: m.location,
                roots: m
                    .roots
                    .into_iter()
                    .map(|r| wt::OwnedRoot {
                        root: r.root,
                        role: r.role,
                    })
                    .collect(),
                planned: m.planned,
                refusal: m.refusal.map(err),
                foreign_roots: m
                    .foreign_roots
                    .into_iter()
                    .map(|f| wt::ForeignRoot {
                        root: f.root,
                        owner: f.owner,
                    })
                    .collect(),
            })
            .collect())
    }

    fn overlapping_locations(locations: Vec<String>) -> Vec<(u32, u32)> {
        core::path::overlapping_locations(&locations)
            .into_iter()
            .map(|(a, b)| (a as u32, b as u32))
            .collect()
    }

    fn check_clock(judged_at_ms: i64, clock_ms: i64, allow_future: bool) -> Result<(), wt::Error> {
        core::check_clock(judged_at_ms, clock_ms, allow_future).map_err(err)
    }

    fn parse_duration(text: String) -> Result<i64, wt::Error> {
        core::parse_duration(&text).map_err(|e| {
            err(core::Error::InvalidOptions {
                field: "duration".into(),
                detail: e,
            })
        })
    }

    fn canonical_pointer(
        pointer: String,
        location_map: Vec<wt::PathMapping>,
    ) -> Result<String, wt::Error> {
        core::canonical_pointer(&pointer, &maps(location_map)).map_err(err)
    }

    fn verify_plan(plan: String) -> Result<wt::SealedPlan, wt::Error> {
        plan_in(&plan).map(sealed_plan)
    }

    fn report_plan(
        plan: String,
        decisions: Vec<wt::Decision>,
        unrepresentable: Vec<String>,
        store_notes: Vec<String>,
    ) -> Result<String, wt::Error> {
        let plan = plan_in(&plan)?;
        let decisions = decisions.into_iter().map(decision_in).collect();
        Ok(plan
            .with_report(decisions, unrepresentable, store_notes)
            .to_json())
    }

    fn check_policy(policy: String) -> Result<wt::PolicyReport, wt::Error> {
        let r = core::Policy::parse(&policy).map_err(err)?.check();
        let findings = |f: Vec<core::policy::Finding>| {
            f.into_iter()
                .map(|f| wt::Finding {
                    field: f.field,
                    message: f.message,
                })
                .collect()
        };
        Ok(wt::PolicyReport {
            errors: findings(r.errors),
            warnings: findings(r.warnings),
            digest: r.digest,
        })
    }

    fn merge_context(parts: wt::ContextParts) -> Result<Option<String>, wt::Error> {
        core::Context::merge(
            parts.context.as_deref(),
            parts.leases.as_deref(),
            parts.holds.as_deref(),
            parts.writers.as_deref(),
        )
        .map_err(err)
    }

    fn dr_metadata_files(context: String) -> Result<Vec<String>, wt::Error> {
        Ok(core::Context::parse(&context)
            .map_err(err)?
            .dr_metadata_files())
    }

    fn plan_expiry(
        metadata_location: String,
        metadata: Vec<u8>,
        policy: Option<String>,
        context: Option<String>,
        now_ms: i64,
        expire_ids: Vec<i64>,
        dr_metadata: Vec<wt::Blob>,
    ) -> Result<wt::ExpiryPlan, wt::Error> {
        let req = core::ExpiryRequest {
            metadata_location,
            now_ms,
            policy: policy
                .as_deref()
                .map(core::Policy::parse)
                .transpose()
                .map_err(err)?,
            context: context
                .as_deref()
                .map(core::Context::parse)
                .transpose()
                .map_err(err)?
                .unwrap_or_default(),
            expire_ids,
            dr_metadata: dr_metadata.into_iter().map(|b| (b.key, b.bytes)).collect(),
        };
        let p = core::plan_expiry(&req, &metadata).map_err(err)?;
        // Never an empty document in place of the next metadata: a failure
        // to write it is an error, and nothing is committed.
        let new_metadata = match p.new_metadata.is_null() {
            true => None,
            false => Some(serde_json::to_vec_pretty(&p.new_metadata).map_err(|e| {
                wt::Error::Unsupported(wt::UnsupportedError {
                    feature: format!("writing the next metadata document: {e}"),
                    uri: p.metadata_location.clone(),
                })
            })?),
        };
        Ok(wt::ExpiryPlan {
            document: p.to_json(),
            table_uuid: p.table_uuid,
            metadata_location: p.metadata_location,
            now_ms: p.now_ms,
            policy_digest: p.policy_digest,
            expire: p.expire,
            retain: p
                .retain
                .into_iter()
                .map(|r| wt::RetainedSnapshot {
                    snapshot_id: r.snapshot_id,
                    reasons: r.reasons,
                })
                .collect(),
            expired: p
                .expired
                .into_iter()
                .map(|x| wt::ExpiredSnapshot {
                    snapshot_id: x.snapshot_id,
                    why: x.why,
                })
                .collect(),
            remove_refs: p.remove_refs,
            warnings: p.warnings,
            rest_commit: (!p.commit.is_null()).then(|| p.commit.to_string()),
            new_metadata,
        })
    }

    fn drill_sample(bundle_ids: Vec<String>, n: u32, seed: u64) -> Vec<String> {
        cl::drill_sample(&bundle_ids, n, seed)
    }

    fn bundle_chain(
        table_location: String,
        location_map: Vec<wt::PathMapping>,
        metadata_uri: String,
        metadata: Vec<u8>,
        snapshot_ids: Vec<i64>,
        blobs_read: Vec<wt::Blob>,
    ) -> Result<wt::ChainWalk, wt::Error> {
        let c = core::bundle::chain(
            &table_location,
            &maps(location_map),
            &metadata_uri,
            &metadata,
            &snapshot_ids,
            &blobs(blobs_read),
        )
        .map_err(err)?;
        Ok(wt::ChainWalk {
            wanted: c.wanted,
            layers: c
                .layers
                .into_iter()
                .map(|(key, l)| wt::LayeredKey {
                    key,
                    layer: layer(l),
                })
                .collect(),
            done: c.done,
        })
    }

    fn bundle_seal(
        request: wt::SealRequest,
        metadata: Vec<u8>,
        blobs_read: Vec<wt::Blob>,
    ) -> Result<wt::Bundle, wt::Error> {
        let req = core::bundle::SealRequest {
            table_location: request.table_location,
            mappings: maps(request.location_map),
            metadata_uri: request.metadata_uri,
            snapshot_ids: request.snapshot_ids,
            candidate_id: request.candidate_id,
            now_ms: request.now_ms,
            heads: heads(request.heads),
        };
        core::bundle::seal(&req, &metadata, &blobs(blobs_read))
            .map(bundle_out)
            .map_err(err)
    }

    fn bundle_load(document: String) -> Result<wt::Bundle, wt::Error> {
        core::bundle::Bundle::parse(&document)
            .map(bundle_out)
            .map_err(err)
    }

    fn bundle_verify(
        bundle: String,
        location_map: Vec<wt::PathMapping>,
        copies: Vec<wt::Blob>,
        head_answers: Vec<wt::HeadAnswer>,
    ) -> Result<wt::Verification, wt::Error> {
        let b = core::bundle::Bundle::parse(&bundle).map_err(err)?;
        let v = core::bundle::verify(
            &b,
            &maps(location_map),
            &blobs(copies),
            &heads(head_answers),
        );
        Ok(wt::Verification {
            complete: v.complete,
            problems: v.problems,
            content: v.content,
            put_back: v.put_back,
        })
    }

    fn bundle_restore(
        current_uri: String,
        current: Vec<u8>,
        bundle: String,
        bundle_metadata: Vec<u8>,
        now_ms: i64,
    ) -> Result<Vec<u8>, wt::Error> {
        let b = core::bundle::Bundle::parse(&bundle).map_err(err)?;
        core::bundle::restore_metadata(&current_uri, &current, &b, &bundle_metadata, now_ms)
            .map_err(err)
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

fn artifact_out(a: core::pinot::plan::ArtifactDelete) -> wt::ListedObject {
    wt::ListedObject {
        key: a.key,
        version: version_out(a.version),
    }
}

impl wp::GuestPinotSession for PinotSession {
    fn start(c: wt::PinotConfig) -> Result<wp::PinotSession, wt::Error> {
        let s = core::PinotSession::start(core::PinotConfig {
            roots: c.roots,
            table_config: c.table_config,
            now_ms: c.now_ms,
            min_age_ms: c.min_age_ms,
            segment_column: c.segment_column,
            origin: c.origin,
        })
        .map_err(err)?;
        Ok(wp::PinotSession::new(PinotSession(RefCell::new(s))))
    }

    fn poll_request(&self) -> Option<wt::PinotRequest> {
        self.0.borrow_mut().poll_request().map(|r| match r {
            core::PinotRequest::ReadState => wt::PinotRequest::ReadState,
            core::PinotRequest::List(p) => wt::PinotRequest::List(p),
            core::PinotRequest::ReadBlob(u) => wt::PinotRequest::ReadBlob(u),
        })
    }

    fn handle_state(
        &self,
        ideal_state: String,
        watermark: String,
        active_list: String,
    ) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_state(ideal_state, watermark, active_list)
            .map_err(err)
    }

    fn handle_page(
        &self,
        prefix: String,
        objects: Vec<wt::ListedObject>,
        is_last: bool,
    ) -> Result<(), wt::Error> {
        let objects = objects.into_iter().map(obj).collect();
        self.0
            .borrow_mut()
            .handle_page(prefix, objects, is_last)
            .map_err(err)
    }

    fn handle_blob(&self, uri: String, bytes: Vec<u8>) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_blob(uri, bytes).map_err(err)
    }

    fn handle_missing(&self, uri: String) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_missing(uri).map_err(err)
    }

    fn is_done(&self) -> bool {
        self.0.borrow().is_done()
    }

    fn finish(&self) -> Result<wt::PinotPlan, wt::Error> {
        use core::pinot::plan::PlanStatus;
        let p = self.0.borrow().finish().map_err(err)?;
        Ok(wt::PinotPlan {
            document: p.to_json(),
            table_name_with_type: p.table_name_with_type,
            status: match p.status {
                PlanStatus::Complete => wt::PinotStatus::Complete,
                PlanStatus::Retry => wt::PinotStatus::Retry,
                PlanStatus::Disabled => wt::PinotStatus::Disabled,
            },
            status_detail: p.status_detail,
            segment_retention: p.settings.deleted_segment_retention,
            delete_segments: p.delete_segments.into_iter().map(|s| s.segment).collect(),
            delete_objects: p.delete_objects.into_iter().map(artifact_out).collect(),
            digest: p.digest,
        })
    }
}

impl wp::GuestSession for Session {
    fn start(c: wt::SessionConfig) -> Result<wp::Session, wt::Error> {
        let config = core::SessionConfig {
            table_location: c.table_location,
            format: match c.format {
                wt::TableFormat::Iceberg => core::TableFormat::Iceberg,
                wt::TableFormat::Delta => core::TableFormat::Delta,
            },
            metadata_location: c.metadata_location,
            now_ms: c.now_ms,
            file_retention_ms: c.file_retention_ms,
            keep_deleted_entries: c.keep_deleted_entries,
            allow_short_retention: c.allow_short_retention,
            location_map: maps(c.location_map),
            policy: c.policy,
            context: c.context,
            keep_versions: c.keep_versions,
            log_cleanup: c.log_cleanup,
            pointer_authoritative: c.pointer_authoritative,
            memory_budget_bytes: c.memory_budget_bytes.unwrap_or(core::DEFAULT_MEMORY_BUDGET),
            origin: c.origin,
            foreign_roots: c
                .foreign_roots
                .into_iter()
                .map(|f| core::estate::ForeignRoot {
                    root: f.root,
                    owner: f.owner,
                })
                .collect(),
            prior_pointers: c.prior_pointers,
            deleted_index: c.deleted_index,
        };

        let s = core::Session::start(config).map_err(err)?;
        Ok(wp::Session::new(Session(RefCell::new(s))))
    }

    fn poll_request(&self) -> Option<wt::Request> {
        self.0.borrow_mut().poll_request().map(|r| match r {
            core::Request::ReadBlob { uri } => wt::Request::ReadBlob(uri),
            core::Request::List { prefix } => wt::Request::List(prefix),
            core::Request::ResolvePointer => wt::Request::ResolvePointer,
        })
    }

    fn handle_blob(&self, uri: String, bytes: Vec<u8>) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_blob(uri, bytes).map_err(err)
    }

    fn handle_page_json(&self, page: String, is_last: bool) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_page_json(page.into_bytes(), is_last)
            .map_err(err)
    }

    fn drain_decisions_json(&self) -> String {
        json_text(self.0.borrow_mut().drain_decisions_json())
    }

    fn is_manifest_read(&self, uri: String) -> bool {
        self.0.borrow().is_manifest_read(&uri)
    }

    fn handle_manifest_digest(&self, uri: String, digest: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_manifest_digest(uri, digest)
            .map_err(err)
    }

    fn is_checkpoint_read(&self, uri: String) -> bool {
        self.0.borrow().is_checkpoint_read(&uri)
    }

    fn handle_checkpoint_digest(&self, uri: String, digest: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_checkpoint_digest(uri, digest)
            .map_err(err)
    }

    fn handle_missing(&self, uri: String) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_missing(uri).map_err(err)
    }

    fn handle_page(&self, objects: Vec<wt::ListedObject>, is_last: bool) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_page(objects.into_iter().map(obj).collect(), is_last)
            .map_err(err)
    }

    fn handle_names(&self, keys: Vec<String>) -> Result<Vec<u32>, wt::Error> {
        self.0.borrow_mut().handle_names(keys).map_err(err)
    }

    fn handle_pointer(&self, metadata_location: Option<String>) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_pointer(metadata_location)
            .map_err(err)
    }

    fn drain_decisions(&self) -> Vec<wt::Decision> {
        self.0
            .borrow_mut()
            .drain_decisions()
            .into_iter()
            .map(decision)
            .collect()
    }

    fn is_done(&self) -> bool {
        self.0.borrow().is_done()
    }

    fn export_keep_set(&self) -> Result<Vec<u8>, wt::Error> {
        self.0.borrow().export_keep_set().map_err(err)
    }

    fn finish(&self) -> Result<wt::SealedPlan, wt::Error> {
        self.0.borrow().finish().map(sealed_plan).map_err(err)
    }

    fn seal(&self) -> Result<wp::Plan, wt::Error> {
        self.0.borrow_mut().seal().map(Plan::handle).map_err(err)
    }

    fn export_keep_set_range(&self, offset: u64, length: u32) -> Result<Vec<u8>, wt::Error> {
        self.0
            .borrow()
            .export_keep_set_range(offset, length)
            .map_err(err)
    }

    fn keep_set_complete(&self) -> bool {
        self.0.borrow().keep_set_complete()
    }

    fn referenced(&self, keys: Vec<String>) -> Result<Vec<(String, String)>, wt::Error> {
        self.0.borrow().referenced(keys).map_err(err)
    }
}

impl wp::GuestPageClassifier for PageClassifier {
    fn load(keep_set: Vec<u8>) -> Result<wp::PageClassifier, wt::Error> {
        let c = core::PageClassifier::load(keep_set).map_err(err)?;
        Ok(wp::PageClassifier::new(PageClassifier(c)))
    }

    fn metadata_location(&self) -> String {
        self.0.metadata_location()
    }

    fn check_pointer(&self, live: Option<String>) -> Result<(), wt::Error> {
        self.0.check_pointer(live.as_deref()).map_err(err)
    }

    fn classify(&self, objects: Vec<wt::ListedObject>) -> Result<Vec<wt::Decision>, wt::Error> {
        let ds = self
            .0
            .classify(objects.into_iter().map(obj).collect())
            .map_err(err)?;
        Ok(ds.into_iter().map(decision).collect())
    }

    fn classify_json(&self, page: String) -> Result<String, wt::Error> {
        self.0
            .classify_json(page.as_bytes())
            .map(json_text)
            .map_err(err)
    }

    fn classify_columns(&self, page: wt::PageColumns) -> Result<wt::PageVerdicts, wt::Error> {
        let v = self
            .0
            .classify_columns(core::PageColumns {
                keys: page.keys,
                key_ends: page.key_ends,
                sizes: page.sizes,
                last_modified_ms: page.last_modified_ms,
            })
            .map_err(err)?;
        Ok(wt::PageVerdicts {
            verdicts: v.verdicts.into_iter().map(verdict).collect(),
            detail_of: v.detail_of,
            details: v.details,
        })
    }

    fn settle_metadata_file(
        &self,
        object: wt::ListedObject,
        bytes: Option<Vec<u8>>,
    ) -> Result<wt::Decision, wt::Error> {
        self.0
            .settle_metadata_file(obj(object), bytes)
            .map(decision)
            .map_err(err)
    }
}

export!(Component);

/// JSON the core wrote, as the text it is.
fn json_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}
