//! Exports of the WebAssembly component (`wit/lakesweep.wit`), a thin
//! one-to-one mapping onto the crate's public API.

wit_bindgen::generate!({
    path: "wit",
    world: "lakesweep",
});

use exports::lakesweep::planner::planner as wp;
use lakesweep::planner::types as wt;

use crate as core;
use std::cell::RefCell;

struct Component;

fn err(e: core::Error) -> wt::Error {
    match e {
        core::Error::Malformed { uri, detail } => {
            wt::Error::Malformed(wt::MalformedError { uri, detail })
        }
        core::Error::Unsupported { feature, uri } => {
            wt::Error::Unsupported(wt::UnsupportedError { feature, uri })
        }
        core::Error::Protocol { detail } => wt::Error::Protocol(detail),
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

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, wt::Error> {
    serde_json::to_string(v).map_err(|e| err(core::Error::protocol(e.to_string())))
}

fn obj(o: wt::ListedObject) -> core::ListedObject {
    core::ListedObject {
        key: o.key,
        size: o.size,
        last_modified_ms: o.last_modified_ms,
        etag: o.etag,
        version_id: o.version_id,
    }
}

fn decision(d: core::Decision) -> wt::Decision {
    wt::Decision {
        key: d.key,
        relative_key: d.relative_key,
        verdict: match d.verdict {
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
        },
        detail: d.detail,
        size: d.size,
        last_modified_ms: d.last_modified_ms,
        etag: d.etag,
        version_id: d.version_id,
    }
}

struct Session(RefCell<core::Session>);
struct PageClassifier(core::PageClassifier);

impl wp::Guest for Component {
    type Session = Session;
    type PageClassifier = PageClassifier;

    fn accept_plan(plan_json: String, live_json: String) -> Result<String, wt::Error> {
        let plan = core::SealedPlan::from_json(&plan_json).map_err(err)?;
        let live: core::LiveFacts = serde_json::from_str(&live_json)
            .map_err(|e| err(core::Error::protocol(format!("live facts: {e}"))))?;
        to_json(&core::accept(&plan, &live).map_err(err)?)
    }

    fn delta_head(
        table_location: String,
        log_listing: Vec<wt::ListedObject>,
    ) -> Result<Option<String>, wt::Error> {
        let head = core::acceptance::delta_head(
            &table_location,
            log_listing.into_iter().map(obj).collect(),
        )
        .map_err(err)?;
        head.map(|(uri, v)| to_json(&serde_json::json!({"uri": uri, "head": v})))
            .transpose()
    }

    fn check_clock(judged_at_ms: i64, clock_ms: i64, allow_future: bool) -> Result<(), wt::Error> {
        core::acceptance::check_clock(judged_at_ms, clock_ms, allow_future).map_err(err)
    }

    fn canonical_pointer(
        pointer: String,
        location_map: Vec<wt::PathMapping>,
    ) -> Result<String, wt::Error> {
        core::plan::canonical_pointer(&pointer, &maps(location_map)).map_err(err)
    }

    fn verify_plan(plan_json: String) -> Result<String, wt::Error> {
        core::SealedPlan::from_json(&plan_json).map_err(err)?;
        Ok(plan_json)
    }

    fn ledger_begin(
        ledger_json: Option<String>,
        plan_json: String,
        quarantine_ms: i64,
        now_ms: i64,
        prior_ledger: bool,
        start_new: bool,
    ) -> Result<String, wt::Error> {
        core::ledger::json::begin(
            ledger_json.as_deref(),
            &plan_json,
            quarantine_ms,
            now_ms,
            prior_ledger,
            start_new,
        )
        .map_err(err)
    }

    fn ledger_accept(
        ledger_json: String,
        plan_json: String,
        live_json: String,
    ) -> Result<String, wt::Error> {
        core::ledger::json::accept_batch(&ledger_json, &plan_json, &live_json).map_err(err)
    }

    fn drill_sample(bundle_ids: Vec<String>, n: u32, seed: u64) -> Vec<String> {
        core::ledger::drill_sample(&bundle_ids, n, seed)
    }

    fn ledger_drill(
        ledger_json: String,
        table_location: String,
        seed: u64,
        bundles_total: u64,
        results_json: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        core::ledger::json::drill(
            &ledger_json,
            &table_location,
            seed,
            bundles_total,
            &results_json,
            now_ms,
        )
        .map_err(err)
    }

    fn ledger_reconcile(ledger_json: String, now_ms: i64) -> Result<String, wt::Error> {
        core::ledger::json::reconcile(&ledger_json, now_ms).map_err(err)
    }

    fn ledger_observe(
        ledger_json: String,
        observations_json: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        core::ledger::json::observe(&ledger_json, &observations_json, now_ms).map_err(err)
    }

    fn ledger_approve(
        ledger_json: String,
        plan_json: String,
        live_json: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        core::ledger::json::approve(&ledger_json, &plan_json, &live_json, now_ms).map_err(err)
    }

    fn ledger_record(
        ledger_json: String,
        receipts_json: String,
        now_ms: i64,
    ) -> Result<String, wt::Error> {
        core::ledger::json::record(&ledger_json, &receipts_json, now_ms).map_err(err)
    }

    fn ledger_gates(ledger_json: String) -> Result<String, wt::Error> {
        core::ledger::json::gates(&ledger_json).map_err(err)
    }

    fn bundle_chain(
        table_location: String,
        location_map: Vec<wt::PathMapping>,
        metadata_uri: String,
        metadata: Vec<u8>,
        snapshot_ids: Vec<i64>,
        blobs: Vec<(String, Vec<u8>)>,
    ) -> Result<String, wt::Error> {
        let blobs = blobs.into_iter().collect();
        let c = core::bundle::chain(
            &table_location,
            &maps(location_map),
            &metadata_uri,
            &metadata,
            &snapshot_ids,
            &blobs,
        )
        .map_err(err)?;
        to_json(&c)
    }

    fn bundle_seal(
        request_json: String,
        metadata: Vec<u8>,
        blobs: Vec<(String, Vec<u8>)>,
    ) -> Result<String, wt::Error> {
        let req: core::bundle::SealRequest = serde_json::from_str(&request_json)
            .map_err(|e| err(core::Error::protocol(format!("seal request: {e}"))))?;
        let blobs = blobs.into_iter().collect();
        to_json(&core::bundle::seal(&req, &metadata, &blobs).map_err(err)?)
    }

    fn bundle_verify(
        bundle_json: String,
        location_map: Vec<wt::PathMapping>,
        copies: Vec<(String, Vec<u8>)>,
        heads_json: String,
    ) -> Result<String, wt::Error> {
        let b = core::bundle::Bundle::parse(&bundle_json).map_err(err)?;
        let heads = serde_json::from_str(&heads_json)
            .map_err(|e| err(core::Error::protocol(format!("heads: {e}"))))?;
        let copies = copies.into_iter().collect();
        to_json(&core::bundle::verify(
            &b,
            &maps(location_map),
            &copies,
            &heads,
        ))
    }

    fn bundle_restore(
        current_uri: String,
        current: Vec<u8>,
        bundle_json: String,
        bundle_metadata: Vec<u8>,
        now_ms: i64,
    ) -> Result<Vec<u8>, wt::Error> {
        let b = core::bundle::Bundle::parse(&bundle_json).map_err(err)?;
        core::bundle::restore_metadata(&current_uri, &current, &b, &bundle_metadata, now_ms)
            .map_err(err)
    }

    fn check_policy(policy_json: String) -> Result<String, wt::Error> {
        let p = core::Policy::parse(&policy_json).map_err(err)?;
        serde_json::to_string(&p.check()).map_err(|e| err(core::Error::protocol(e.to_string())))
    }

    fn plan_expiry(
        metadata_location: String,
        metadata: Vec<u8>,
        policy_json: Option<String>,
        context_json: Option<String>,
        now_ms: i64,
        expire_ids: Vec<i64>,
        dr_metadata: Vec<(String, Vec<u8>)>,
    ) -> Result<String, wt::Error> {
        let req = core::ExpiryRequest {
            metadata_location,
            now_ms,
            policy: policy_json
                .as_deref()
                .map(core::Policy::parse)
                .transpose()
                .map_err(err)?,
            context: context_json
                .as_deref()
                .map(core::Context::parse)
                .transpose()
                .map_err(err)?
                .unwrap_or_default(),
            expire_ids,
            dr_metadata,
        };
        let plan = core::plan_expiry(&req, &metadata).map_err(err)?;
        serde_json::to_string(&plan).map_err(|e| err(core::Error::protocol(e.to_string())))
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
            memory_budget_bytes: c.memory_budget_bytes,
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

    fn handle_missing(&self, uri: String) -> Result<(), wt::Error> {
        self.0.borrow_mut().handle_missing(uri).map_err(err)
    }

    fn handle_page(&self, objects: Vec<wt::ListedObject>, is_last: bool) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_page(objects.into_iter().map(obj).collect(), is_last)
            .map_err(err)
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

    fn finish(&self) -> Result<String, wt::Error> {
        self.0.borrow().finish().map(|p| p.to_json()).map_err(err)
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

    fn classify(&self, objects: Vec<wt::ListedObject>) -> Result<Vec<wt::Decision>, wt::Error> {
        let ds = self
            .0
            .classify(objects.into_iter().map(obj).collect())
            .map_err(err)?;
        Ok(ds.into_iter().map(decision).collect())
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
