//! The reference host loop: the [`Session`] calling contract written out
//! once, for Rust hosts that answer from memory or a local disk (the tests,
//! the fuzz targets, the benches), like delta-kernel's sync engine.
//!
//! It performs no I/O itself: a [`Store`] answers reads, listings and the
//! pointer; [`drive`] asks the planner for requests, hands each to the
//! store, feeds the answers back and collects the decisions. Any planner
//! with the session's surface ([`Planner`]) can be driven, so the native
//! session and the WASM component run through the same loop and their
//! plans can be compared byte for byte.
//!
//! A production host (the sidecar) keeps its own loop over the component:
//! it answers concurrently, streams pages as the store returns them, and
//! stops on a store error instead of answering "missing". Its rules are
//! the same, stated on [`Planner`].

use crate::error::Result;
use crate::plan::{Request, Session};
use crate::verdict::{Decision, ListedObject};

/// The session's surface, as a host drives it. Call order: take every
/// request [`Planner::poll_request`] offers; answer each exactly once
/// (`handle_blob` or `handle_missing` for a read, every page of a listing
/// with `is_last` on the last one, `handle_pointer` for the pointer), in
/// any order; [`Planner::drain_decisions`] whenever convenient; stop when
/// no request is left and none is unanswered. Any error ends the run: it
/// deletes nothing.
pub trait Planner {
    /// The next request, if any.
    fn poll_request(&mut self) -> Option<Request>;
    /// The bytes read for `uri`.
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<()>;
    /// `uri` does not exist (never an error of the store: that stops the host).
    fn handle_missing(&mut self, uri: String) -> Result<()>;
    /// One page of the listing; `is_last` on the final one.
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<()>;
    /// The catalog's pointer now (`None`: the table is gone).
    fn handle_pointer(&mut self, metadata_location: Option<String>) -> Result<()>;
    /// Verdicts decided so far (a later one for the same key replaces it).
    fn drain_decisions(&mut self) -> Vec<Decision>;
}

impl Planner for Session {
    fn poll_request(&mut self) -> Option<Request> {
        Session::poll_request(self)
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<()> {
        Session::handle_blob(self, uri, bytes)
    }
    fn handle_missing(&mut self, uri: String) -> Result<()> {
        Session::handle_missing(self, uri)
    }
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<()> {
        Session::handle_page(self, objects, is_last)
    }
    fn handle_pointer(&mut self, metadata_location: Option<String>) -> Result<()> {
        Session::handle_pointer(self, metadata_location)
    }
    fn drain_decisions(&mut self) -> Vec<Decision> {
        Session::drain_decisions(self)
    }
}

/// What the reference host reads from. Implementations may do I/O; the
/// loop does none.
pub trait Store {
    /// The whole object at `uri`, or `None` when there is no such object.
    fn read(&mut self, uri: &str) -> Option<Vec<u8>>;
    /// Every object under `prefix` (which ends in `/`), as the pages to
    /// hand over, in the order to hand them over; an empty listing is one
    /// empty page.
    fn list(&mut self, prefix: &str) -> Vec<Vec<ListedObject>>;
    /// The catalog's pointer now (`None`: the table is gone).
    fn pointer(&mut self) -> Option<String>;
}

/// In which order pending requests are answered. The planner must decide
/// the same whatever the order; tests drive both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Oldest request first.
    #[default]
    AsAsked,
    /// Newest request first ("answers in any order").
    NewestFirst,
}

/// Drives `planner` until it asks for nothing more, answering from
/// `store` in `order`; returns every decision drained, in order. The
/// caller then finishes the session (its sealed plan or its error).
pub fn drive<P, S>(planner: &mut P, store: &mut S, order: Order) -> Result<Vec<Decision>>
where
    P: Planner + ?Sized,
    S: Store + ?Sized,
{
    let mut decisions = Vec::new();
    let mut pending: Vec<Request> = Vec::new();
    loop {
        while let Some(r) = planner.poll_request() {
            pending.push(r);
        }
        let next = match order {
            Order::NewestFirst => pending.pop(),
            Order::AsAsked if pending.is_empty() => None,
            Order::AsAsked => Some(pending.remove(0)),
        };
        let Some(request) = next else { break };
        match request {
            Request::ReadBlob { uri } => match store.read(&uri) {
                Some(bytes) => planner.handle_blob(uri, bytes)?,
                None => planner.handle_missing(uri)?,
            },
            Request::List { prefix } => {
                let mut pages = store.list(&prefix);
                if pages.is_empty() {
                    pages.push(Vec::new());
                }
                let n = pages.len();
                for (i, page) in pages.into_iter().enumerate() {
                    planner.handle_page(page, i + 1 == n)?;
                    decisions.extend(planner.drain_decisions());
                }
            }
            Request::ResolvePointer => planner.handle_pointer(store.pointer())?,
        }
        decisions.extend(planner.drain_decisions());
    }
    Ok(decisions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::SessionConfig;
    use std::collections::BTreeMap;

    /// A table held in memory: the metadata of one snapshot without files.
    struct Memory {
        blobs: BTreeMap<String, Vec<u8>>,
        listed: Vec<ListedObject>,
        asked: Vec<String>,
    }

    impl Store for Memory {
        fn read(&mut self, uri: &str) -> Option<Vec<u8>> {
            self.asked.push(format!("read {uri}"));
            self.blobs.get(uri).cloned()
        }
        fn list(&mut self, prefix: &str) -> Vec<Vec<ListedObject>> {
            self.asked.push(format!("list {prefix}"));
            self.listed.chunks(1).map(<[_]>::to_vec).collect()
        }
        fn pointer(&mut self) -> Option<String> {
            self.asked.push("pointer".into());
            Some("s3://b/t/metadata/v1.metadata.json".into())
        }
    }

    fn table() -> Memory {
        let md = serde_json::json!({
            "format-version": 2, "table-uuid": "00000000-0000-4000-8000-000000000001",
            "location": "s3://b/t", "last-sequence-number": 0, "last-updated-ms": 1,
            "last-column-id": 0, "current-schema-id": 0,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": [],
            "properties": {}, "snapshots": [], "refs": {}, "metadata-log": []
        });
        let uri = "s3://b/t/metadata/v1.metadata.json";
        let object = |key: &str| ListedObject {
            key: format!("s3://b/t/{key}"),
            size: 1,
            last_modified_ms: 1,
            etag: None,
            version_id: None,
        };
        Memory {
            blobs: BTreeMap::from([(uri.to_owned(), serde_json::to_vec(&md).unwrap())]),
            listed: vec![
                object("metadata/v1.metadata.json"),
                object("data/old.parquet"),
            ],
            asked: Vec::new(),
        }
    }

    /// A session over [`table`], judged ten days in with a one-day window.
    fn session() -> Session {
        Session::start(SessionConfig::new(
            "s3://b/t",
            "s3://b/t/metadata/v1.metadata.json",
            10 * 86_400_000,
            86_400_000,
        ))
        .unwrap()
    }

    #[test]
    fn drives_a_session_to_its_plan_in_either_order() {
        let mut plans = Vec::new();
        for order in [Order::AsAsked, Order::NewestFirst] {
            let mut s = session();
            let mut store = table();
            let decisions = drive(&mut s, &mut store, order).unwrap();
            assert!(store.asked.iter().any(|a| a.starts_with("read ")));
            assert!(store.asked.iter().any(|a| a == "list s3://b/t/"));
            let verdict = |key: &str| {
                decisions
                    .iter()
                    .rev()
                    .find(|d| d.relative_key == key)
                    .map(|d| d.verdict)
            };
            assert_eq!(
                verdict("data/old.parquet"),
                Some(crate::verdict::Verdict::Candidate)
            );
            assert_eq!(
                verdict("metadata/v1.metadata.json"),
                Some(crate::verdict::Verdict::Referenced)
            );
            plans.push(s.finish().unwrap());
        }
        assert_eq!(plans[0], plans[1]);
        assert_eq!(plans[0].delete.len(), 1);
    }

    #[test]
    fn a_planner_error_ends_the_drive() {
        let mut s = session();
        let mut store = table();
        store.blobs.clear();
        // The metadata is missing: the session refuses, the loop stops.
        assert!(drive(&mut s, &mut store, Order::AsAsked).is_err());
        assert!(s.finish().is_err());
    }
}
