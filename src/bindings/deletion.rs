//! The `deletion` resource: a plan's deletes applied in batches, each
//! accepted by the core (see [`crate::deletion`]).

use std::cell::RefCell;

use super::convert::*;
use super::{cd, core, wp, wt};

/// A deletion session, held for the host.
pub(super) struct Deletion(pub(super) RefCell<cd::Deletion>);

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
            switches: f.switches.into_iter().map(switch_reading).collect(),
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
