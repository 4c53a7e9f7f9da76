//! The planning resources: the `session` (Iceberg and Delta), the
//! `pinot-session` and the stateless `page-classifier`.

use std::cell::RefCell;

use super::convert::*;
use super::ledger::Plan;
use super::{core, json_text, wp, wt};

/// A planning session, held for the host.
pub(super) struct Session(RefCell<core::Session>);
/// A Pinot planning session, held for the host.
pub(super) struct PinotSession(RefCell<core::PinotSession>);
/// A stateless page classifier over an exported keep set.
pub(super) struct PageClassifier(RefCell<core::PageClassifier>);

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

    fn handle_blob_hex(&self, uri: String, bytes: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_blob_hex(uri, &bytes)
            .map_err(err)
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

    fn manifest_resolution(&self) -> Option<String> {
        self.0.borrow().manifest_resolution()
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

    fn export_keep_set_hex(&self, offset: u64, length: u32) -> Result<String, wt::Error> {
        self.0
            .borrow()
            .export_keep_set_hex(offset, length)
            .map_err(err)
    }

    fn keep_set_complete(&self) -> bool {
        self.0.borrow().keep_set_complete()
    }

    fn split_listing(&self, boundaries: Vec<String>) -> Result<Vec<wt::ListingSplit>, wt::Error> {
        let splits = self.0.borrow_mut().split_listing(boundaries).map_err(err)?;
        Ok(splits.into_iter().map(listing_split_out).collect())
    }

    fn handle_split_result(&self, partial: String) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .handle_split_result(partial)
            .map_err(err)
    }

    fn splits_outstanding(&self) -> Vec<u32> {
        self.0.borrow().splits_outstanding()
    }

    fn referenced(&self, keys: Vec<String>) -> Result<Vec<(String, String)>, wt::Error> {
        self.0.borrow().referenced(keys).map_err(err)
    }
}

impl wp::GuestPageClassifier for PageClassifier {
    fn load(keep_set: Vec<u8>) -> Result<wp::PageClassifier, wt::Error> {
        let c = core::PageClassifier::load(keep_set).map_err(err)?;
        Ok(wp::PageClassifier::new(PageClassifier(RefCell::new(c))))
    }

    fn load_hex(keep_set: String) -> Result<wp::PageClassifier, wt::Error> {
        let c = core::PageClassifier::load_hex(&keep_set).map_err(err)?;
        Ok(wp::PageClassifier::new(PageClassifier(RefCell::new(c))))
    }

    fn metadata_location(&self) -> String {
        self.0.borrow().metadata_location()
    }

    fn check_pointer(&self, live: Option<String>) -> Result<(), wt::Error> {
        self.0.borrow().check_pointer(live.as_deref()).map_err(err)
    }

    fn classify(&self, objects: Vec<wt::ListedObject>) -> Result<Vec<wt::Decision>, wt::Error> {
        let ds = self
            .0
            .borrow()
            .classify(objects.into_iter().map(obj).collect())
            .map_err(err)?;
        Ok(ds.into_iter().map(decision).collect())
    }

    fn classify_json(&self, page: String) -> Result<String, wt::Error> {
        self.0
            .borrow()
            .classify_json(page.as_bytes())
            .map(json_text)
            .map_err(err)
    }

    fn classify_columns(&self, page: wt::PageColumns) -> Result<wt::PageVerdicts, wt::Error> {
        let v = self
            .0
            .borrow()
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
            .borrow_mut()
            .settle_metadata_file(obj(object), bytes)
            .map(decision)
            .map_err(err)
    }

    fn begin_split(&self, split: wt::ListingSplit) -> Result<(), wt::Error> {
        self.0
            .borrow_mut()
            .begin_split(listing_split_in(split))
            .map_err(err)
    }

    fn split_page_json(&self, page: String) -> Result<String, wt::Error> {
        self.0
            .borrow_mut()
            .split_page_json(page.as_bytes())
            .map(json_text)
            .map_err(err)
    }

    fn split_names_json(&self, names: String) -> Result<Vec<u32>, wt::Error> {
        self.0
            .borrow_mut()
            .split_names_json(names.as_bytes())
            .map_err(err)
    }

    fn end_split(&self) -> Result<String, wt::Error> {
        self.0.borrow_mut().end_split().map_err(err)
    }

    fn split_refusal(&self) -> Option<String> {
        self.0.borrow_mut().split_refusal()
    }
}
