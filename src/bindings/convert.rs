//! Conversions between the interface's records (`wt`) and the core's
//! types: one function per record, each way it crosses. No decision is
//! made here.

use std::collections::BTreeMap;

use super::{cd, cl, core, wt};

pub(super) fn err(e: core::Error) -> wt::Error {
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
                core::UnsafeReason::Halted => wt::UnsafeReason::Halted,
            },
            detail,
        }),
    }
}

pub(super) fn maps(m: Vec<wt::PathMapping>) -> Vec<core::PathMapping> {
    m.into_iter()
        .map(|m| core::PathMapping {
            from: m.from,
            to: m.to,
        })
        .collect()
}

pub(super) fn blobs(b: Vec<wt::Blob>) -> BTreeMap<String, Vec<u8>> {
    b.into_iter().map(|b| (b.key, b.bytes)).collect()
}

pub(super) fn version_in(v: wt::ObjectVersion) -> cl::ObjectVersion {
    cl::ObjectVersion {
        size: v.size,
        last_modified_ms: v.last_modified_ms,
        etag: v.etag,
        version_id: v.version_id,
    }
}

pub(super) fn version_out(v: cl::ObjectVersion) -> wt::ObjectVersion {
    wt::ObjectVersion {
        size: v.size,
        last_modified_ms: v.last_modified_ms,
        etag: v.etag,
        version_id: v.version_id,
    }
}

pub(super) fn obj(o: wt::ListedObject) -> core::ListedObject {
    core::ListedObject {
        key: o.key,
        size: o.version.size,
        last_modified_ms: o.version.last_modified_ms,
        etag: o.version.etag,
        version_id: o.version.version_id,
    }
}

pub(super) fn format_out(f: core::TableFormat) -> wt::TableFormat {
    match f {
        core::TableFormat::Iceberg => wt::TableFormat::Iceberg,
        core::TableFormat::Delta => wt::TableFormat::Delta,
    }
}

pub(super) fn decision(d: core::Decision) -> wt::Decision {
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

pub(super) fn verdict(v: core::Verdict) -> wt::Verdict {
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

pub(super) fn decision_in(d: wt::Decision) -> core::Decision {
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

pub(super) fn tally(t: core::Tally) -> wt::Tally {
    wt::Tally {
        count: t.count,
        bytes: t.bytes,
    }
}

pub(super) fn named(m: BTreeMap<String, core::Tally>) -> Vec<wt::NamedTally> {
    m.into_iter()
        .map(|(name, t)| wt::NamedTally {
            name,
            tally: tally(t),
        })
        .collect()
}

pub(super) fn tokens_out(t: &core::PlanTokens) -> wt::PlanTokens {
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

pub(super) fn summary_out(s: &core::Summary) -> wt::Summary {
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

pub(super) fn damaged_out(d: &[core::DamagedReference]) -> Vec<wt::DamagedReference> {
    d.iter()
        .map(|d| wt::DamagedReference {
            fingerprint: d.fingerprint.clone(),
            reason: d.reason.clone(),
        })
        .collect()
}

pub(super) fn planned_delete_out(d: &core::PlannedDelete) -> wt::PlannedDelete {
    wt::PlannedDelete {
        key: d.key.clone(),
        version: version_out(cl::version_of(d)),
    }
}

pub(super) fn sealed_plan(p: core::SealedPlan) -> wt::SealedPlan {
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

pub(super) fn plan_header(p: &core::SealedPlan) -> wt::PlanHeader {
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

pub(super) fn plan_in(document: &str) -> Result<core::SealedPlan, wt::Error> {
    core::SealedPlan::from_json(document).map_err(err)
}

pub(super) fn live_facts(l: wt::LiveFacts) -> core::LiveFacts {
    core::LiveFacts {
        metadata_location: l.metadata_location,
        head: l.head.map(version_in),
        context: l.context,
        clock_ms: l.clock_ms,
        allow_future_now: l.allow_future_now,
    }
}

pub(super) fn acceptance(a: core::Acceptance) -> wt::Acceptance {
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

pub(super) fn state(s: cl::ObjectState) -> wt::ObjectState {
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

pub(super) fn moves(m: &cl::Moves) -> Vec<wt::StateMove> {
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

pub(super) fn moved(m: &cl::Moves) -> Vec<wt::StateCount> {
    m.to_state
        .iter()
        .map(|(s, count)| wt::StateCount {
            state: state(*s),
            count: *count,
        })
        .collect()
}

pub(super) fn probes(p: Vec<cl::Probe>) -> Vec<wt::Probe> {
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

pub(super) fn gates(g: cl::Gates) -> wt::Gates {
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

pub(super) fn delete_result_out(r: cl::DeleteResult) -> wt::DeleteResult {
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

pub(super) fn receipt_out(r: cl::Receipt) -> wt::Receipt {
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

pub(super) fn deletion_config(c: wt::DeletionConfig) -> cd::DeletionConfig {
    cd::DeletionConfig {
        plan: c.plan,
        options: cd::DeletionOptions {
            location_map: maps(c.location_map),
            batch_size: c.batch_size,
            dry_run: c.dry_run,
            allow_future_now: c.allow_future_now,
            store_gives_etags: c.store_gives_etags,
            keys: c.keys,
            share: c.share.map(share_in),
            stop_switches: c.stop_switches,
        },
    }
}

pub(super) fn deletion_options(o: wt::DeletionOptions) -> cd::DeletionOptions {
    cd::DeletionOptions {
        location_map: maps(o.location_map),
        batch_size: o.batch_size,
        dry_run: false,
        allow_future_now: o.allow_future_now,
        store_gives_etags: o.store_gives_etags,
        keys: None,
        share: None,
        stop_switches: o.stop_switches,
    }
}

pub(super) fn deletion_receipt_out(r: cd::DeletionReceipt) -> wt::DeletionReceipt {
    wt::DeletionReceipt {
        receipt: receipt_out(r.receipt),
        uri: r.uri,
        planned: version_out(r.planned),
        restore: r.restore,
    }
}

pub(super) fn session_config_out(c: core::SessionConfig) -> wt::SessionConfig {
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

pub(super) fn targets(batch: u32, objects: Vec<cd::Target>) -> wt::BatchTargets {
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

pub(super) fn deletion_request(r: cd::DeletionRequest) -> wt::DeletionRequest {
    match r {
        cd::DeletionRequest::ReadFacts {
            purpose,
            log_prefix,
            switches,
        } => wt::DeletionRequest::ReadFacts(wt::ReadFactsRequest {
            purpose: match purpose {
                cd::FactsPurpose::Batch(n) => wt::FactsPurpose::Batch(n),
                cd::FactsPurpose::Final => wt::FactsPurpose::Final,
            },
            log_prefix,
            switches,
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

pub(super) fn outcome_out(o: cd::DeletionOutcome) -> wt::DeletionOutcome {
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
        share: o.share.map(|s| wt::ShareStamp {
            plan_digest: s.plan_digest,
            deletes: s.deletes,
            share: wt::DeletionShare {
                index: s.share.index,
                of: s.share.of,
                attempt: s.share.attempt,
            },
            first: s.first,
            keys: s.keys,
            dry_run: s.dry_run,
            finished: s.finished,
        }),
    }
}

pub(super) fn share_in(s: wt::DeletionShare) -> cd::DeletionShare {
    cd::DeletionShare {
        index: s.index,
        of: s.of,
        attempt: s.attempt,
    }
}

/// A deletion's outcome as a host hands it back (to combine shares).
pub(super) fn outcome_in(o: wt::DeletionOutcome) -> cd::DeletionOutcome {
    cd::DeletionOutcome {
        exit: o.exit,
        results: o
            .results
            .into_iter()
            .fold(std::collections::BTreeMap::new(), |mut m, c| {
                let n: &mut u64 = m
                    .entry(delete_result_in(c.result).as_str().to_owned())
                    .or_default();
                *n = n.saturating_add(c.count);
                m
            }),
        deleted_bytes: o.deleted_bytes,
        stopped: o.stopped,
        damage_unchecked: o.damage_unchecked,
        refused: o.refused,
        share: o.share.map(|s| cd::ShareStamp {
            plan_digest: s.plan_digest,
            deletes: s.deletes,
            share: share_in(s.share),
            first: s.first,
            keys: s.keys,
            dry_run: s.dry_run,
            finished: s.finished,
        }),
    }
}

fn delete_result_in(r: wt::DeleteResult) -> cl::DeleteResult {
    match r {
        wt::DeleteResult::Deleted => cl::DeleteResult::Deleted,
        wt::DeleteResult::AlreadyAbsent => cl::DeleteResult::AlreadyAbsent,
        wt::DeleteResult::SkippedChanged => cl::DeleteResult::SkippedChanged,
        wt::DeleteResult::SkippedStopped => cl::DeleteResult::SkippedStopped,
        wt::DeleteResult::SkippedProtected => cl::DeleteResult::SkippedProtected,
        wt::DeleteResult::Failed => cl::DeleteResult::Failed,
        wt::DeleteResult::Unknown => cl::DeleteResult::Unknown,
        wt::DeleteResult::Damaged => cl::DeleteResult::Damaged,
        wt::DeleteResult::WouldDelete => cl::DeleteResult::WouldDelete,
    }
}

pub(super) fn layer(l: core::bundle::Layer) -> wt::BundleLayer {
    use core::bundle::Layer as L;
    match l {
        L::Metadata => wt::BundleLayer::Metadata,
        L::ManifestList => wt::BundleLayer::ManifestList,
        L::Manifest => wt::BundleLayer::Manifest,
        L::Content => wt::BundleLayer::Content,
    }
}

pub(super) fn bundle_out(b: core::bundle::Bundle) -> wt::Bundle {
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

pub(super) fn heads(h: Vec<wt::HeadAnswer>) -> BTreeMap<String, Option<cl::ObjectVersion>> {
    h.into_iter()
        .map(|h| (h.key, h.version.map(version_in)))
        .collect()
}

pub(super) fn artifact_out(a: core::pinot::plan::ArtifactDelete) -> wt::ListedObject {
    wt::ListedObject {
        key: a.key,
        version: version_out(a.version),
    }
}

pub(super) fn switch_reading(r: wt::SwitchReading) -> crate::stop::SwitchReading {
    use crate::stop::SwitchAnswer as A;
    crate::stop::SwitchReading {
        uri: r.uri,
        answer: match r.answer {
            wt::SwitchAnswer::Absent => A::Absent,
            wt::SwitchAnswer::Present(t) => A::Present(t),
            wt::SwitchAnswer::Failed(w) => A::Failed(w),
        },
    }
}

pub(super) fn halt_seen_out(h: crate::ledger::HaltSeen) -> wt::HaltSeen {
    wt::HaltSeen {
        switch: h.switch,
        generation: h.generation,
        reason: h.reason,
        by: h.by,
        at_ms: h.at_ms,
        seen_ms: h.seen_ms,
        extension_ms: h.extension_ms,
        objects: h.objects,
        resumed_ms: h.resumed_ms,
    }
}

pub(super) fn mode_in(m: wt::Mode) -> crate::fleet::Mode {
    match m {
        wt::Mode::Shadow => crate::fleet::Mode::Shadow,
        wt::Mode::Enforce => crate::fleet::Mode::Enforce,
    }
}

pub(super) fn mode_out(m: crate::fleet::Mode) -> wt::Mode {
    match m {
        crate::fleet::Mode::Shadow => wt::Mode::Shadow,
        crate::fleet::Mode::Enforce => wt::Mode::Enforce,
    }
}

pub(super) fn mode_decision_out(d: crate::ledger::ModeDecision) -> wt::ModeDecision {
    wt::ModeDecision {
        cohort: d.cohort,
        mode: mode_out(d.mode),
        wanted: mode_out(d.wanted),
        why: d.why,
        stop_switch: d.stop_switch,
        halt_extension_ms: d.halt_extension_ms,
        existing_job: wt::ExistingJob {
            tool: d.existing_job.tool,
            older_than_ms: d.existing_job.older_than.map(|o| o.0),
            removes_log_files: d.existing_job.removes_log_files,
        },
    }
}

pub(super) fn restore_run_in(r: wt::RestoreRun) -> crate::ledger::RestoreRun {
    crate::ledger::RestoreRun {
        bundle_id: r.bundle_id,
        scratch: r.scratch,
        snapshot_id: r.snapshot_id,
        recovery_point_ms: r.recovery_point_ms,
        objects: r.objects,
        bytes: r.bytes,
        started_ms: r.started_ms,
        finished_ms: r.finished_ms,
    }
}

pub(super) fn full_drill_out(d: crate::ledger::FullDrill) -> wt::FullDrill {
    wt::FullDrill {
        run: wt::RestoreRun {
            bundle_id: d.bundle_id,
            scratch: d.scratch,
            snapshot_id: d.snapshot_id,
            recovery_point_ms: d.recovery_point_ms,
            objects: d.objects,
            bytes: d.bytes,
            started_ms: d.started_ms,
            finished_ms: d.finished_ms,
        },
        rto_target_ms: d.rto_target_ms,
        rpo_target_ms: d.rpo_target_ms,
        every_ms: d.every_ms,
        passed: d.passed,
        why: d.why,
    }
}

/// A listing split as the WIT record spells it.
pub(super) fn listing_split_out(s: crate::split::ListingSplit) -> wt::ListingSplit {
    wt::ListingSplit {
        index: s.index,
        of: s.of,
        prefix: s.prefix,
        after: s.after,
        through: s.through,
    }
}

/// A listing split from the WIT record.
pub(super) fn listing_split_in(s: wt::ListingSplit) -> crate::split::ListingSplit {
    crate::split::ListingSplit {
        index: s.index,
        of: s.of,
        prefix: s.prefix,
        after: s.after,
        through: s.through,
    }
}
