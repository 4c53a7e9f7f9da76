//! Exports of the WebAssembly component (`wit/lakesweep.wit`), a thin
//! one-to-one mapping onto the crate's public API: records in, records out,
//! stored documents as their text. No decision is made here.

wit_bindgen::generate!({
    path: "wit",
    world: "lakesweep",
});

mod convert;
mod deletion;
mod ledger;
mod session;

use exports::lakesweep::planner::planner as wp;
// `self::`: the generated module, not the crate itself (a dev-dependency of
// its own tests under that name).
use self::lakesweep::planner::types as wt;

use crate as core;
use crate::deletion as cd;
use crate::ledger as cl;
use convert::*;
use deletion::Deletion;
use ledger::{Ledger, Plan};
use session::{PageClassifier, PinotSession, Session};

/// The component: the interface's free functions, and its resources'
/// types.
struct Component;

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
        core::current_metadata(&table_location, version_hint.as_deref(), &metadata_listing)
            .map_err(err)
    }

    fn same_version(pinned: wt::ObjectVersion, seen: wt::ObjectVersion) -> bool {
        version_in(pinned).matches(&version_in(seen))
    }

    fn digest_manifest(uri: String, bytes: Vec<u8>) -> Result<String, wt::Error> {
        core::digest_manifest(&uri, &bytes).map_err(err)
    }

    fn digest_manifest_resolved(
        resolution: String,
        uri: String,
        bytes: Vec<u8>,
    ) -> Result<String, wt::Error> {
        core::digest_manifest_resolved(&resolution, &uri, &bytes).map_err(err)
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
        core::overlapping_locations(&locations)
            .into_iter()
            .map(|(a, b)| (a as u32, b as u32))
            .collect()
    }

    fn their_keys(
        table_location: String,
        location_map: Vec<wt::PathMapping>,
        text: String,
    ) -> Result<wt::TheirList, wt::Error> {
        let l = core::comparison::their_keys(&table_location, &maps(location_map), &text)
            .map_err(err)?;
        Ok(wt::TheirList {
            keys: l.keys,
            outside: l.outside,
        })
    }

    fn fleet_tables(fleet: String, cohort: String) -> Result<Vec<String>, wt::Error> {
        let f = core::fleet::Fleet::parse(&fleet).map_err(err)?;
        Ok(f.cohort(&cohort).map_err(err)?.tables.clone())
    }

    fn fleet_with_mode(fleet: String, cohort: String, mode: wt::Mode) -> Result<String, wt::Error> {
        core::fleet::Fleet::with_mode(&fleet, &cohort, mode_in(mode)).map_err(err)
    }

    fn stop_switches(locations: Vec<String>, extra: Vec<String>) -> Result<Vec<String>, wt::Error> {
        crate::stop::switches_for(&locations, &extra).map_err(err)
    }

    fn check_stop_switches(
        asked: Vec<String>,
        readings: Vec<wt::SwitchReading>,
    ) -> Result<(), wt::Error> {
        let readings: Vec<_> = readings.into_iter().map(switch_reading).collect();
        crate::stop::ensure_running(&asked, &readings).map_err(err)
    }

    fn halt_document(
        previous: Option<String>,
        reason: String,
        by: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        crate::stop::halt_document(previous.as_deref(), &reason, &by, now_ms).map_err(err)
    }

    fn resume_document(
        previous: Option<String>,
        reason: String,
        by: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        crate::stop::resume_document(previous.as_deref(), &reason, &by, now_ms).map_err(err)
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

    fn bundles_newest_first(bundles: Vec<String>) -> Result<Vec<String>, wt::Error> {
        core::bundle::newest_first(&bundles).map_err(err)
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

    fn restore_into_scratch(
        bundle: String,
        location_map: Vec<wt::PathMapping>,
        copies: Vec<wt::Blob>,
        head_answers: Vec<wt::HeadAnswer>,
        scratch: String,
        snapshot: Option<i64>,
        now_ms: i64,
    ) -> Result<wt::ScratchRestore, wt::Error> {
        let r = core::scratch::scratch_restore(
            &bundle,
            &maps(location_map),
            &blobs(copies),
            &heads(head_answers),
            &scratch,
            snapshot,
            now_ms,
        )
        .map_err(err)?;
        Ok(wt::ScratchRestore {
            files: r
                .files
                .into_iter()
                .map(|f| wt::ScratchFile {
                    key: f.key,
                    bytes: f.bytes,
                    from: f.from,
                })
                .collect(),
            metadata_uri: r.metadata_uri,
            snapshot_id: r.snapshot_id,
            recovery_point_ms: r.recovery_point_ms,
            renamed: r.renamed,
            elsewhere: r.elsewhere,
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

export!(Component);

/// JSON the core wrote, as the text it is.
fn json_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}
