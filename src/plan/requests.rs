//! What a session asks of its host ([`Request`]) and, for every read it
//! asked for, what the answer is for ([`Purpose`]): the session's side of
//! the sans-IO exchange, held by [`Requests`].

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ProtocolReason, Result};
use crate::verdict::ListedObject;

/// Something the host must do and answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Request {
    /// Read the whole object at `uri`; answer with `handle_blob` or `handle_missing`.
    ReadBlob {
        /// Canonical URI to read.
        uri: String,
    },
    /// List every object under `prefix` (recursively); answer with
    /// `handle_page`, pages of any size in any order, the last one flagged.
    List {
        /// The table prefix, `location + "/"`.
        prefix: String,
    },
    /// Re-read the catalog's pointer to the current metadata; answer with `handle_pointer`.
    ResolvePointer,
}

/// What a requested read is for: how its answer is processed, what its
/// bytes may cost, and what a missing object means.
#[derive(Debug, Clone)]
pub(super) enum Purpose {
    /// A `_delta_log/` file; `order` sorts replay (0 checkpoint and its
    /// sidecars, 1 a commit before the checkpoint, 2 a commit after it).
    DeltaLog {
        /// Replay order and version.
        order: (u8, u64),
    },
    /// The commit after the newest one replayed (re-check; missing = none).
    DeltaNextCommit {
        /// Its version.
        version: u64,
    },
    /// The document a pointer read named; `read`: that read's order in
    /// the run (prior pointers first, then the session's own reads).
    Metadata {
        /// The pointer read's order in the run.
        read: u32,
    },
    /// A document an earlier read of the run named (see
    /// [`crate::SessionConfig::prior_pointers`]), read to compare.
    PriorPointer {
        /// The pointer read's order in the run.
        read: u32,
    },
    /// The metadata document a disaster-recovery checkpoint names.
    DrMetadata,
    /// A snapshot's manifest list.
    ManifestList {
        /// The snapshot it lists the manifests of.
        snapshot_id: i64,
    },
    /// A manifest (from a manifest list, or a v1 snapshot's own list).
    Manifest {
        /// The length its manifest list records, if any.
        expected_len: Option<u64>,
        /// The manifest's `added_snapshot_id` (entries with a null
        /// `snapshot_id` inherit it).
        added_by: Option<i64>,
    },
    /// A listed metadata document whose owner decides its verdict.
    OwnerCheck {
        /// The object as listed.
        obj: ListedObject,
        /// Its key relative to the table.
        rel: String,
    },
}

/// The session's outstanding requests: those not yet polled, the reads
/// not yet answered (with what each is for), and every URI ever asked for.
#[derive(Debug, Default)]
pub(super) struct Requests {
    outbox: VecDeque<Request>,
    pending: HashMap<String, Purpose>,
    requested: HashSet<String>,
}

impl Requests {
    /// The next request for the host, if any.
    pub(super) fn poll(&mut self) -> Option<Request> {
        self.outbox.pop_front()
    }

    /// Drops every request not yet polled (a failed session asks nothing).
    pub(super) fn cancel(&mut self) {
        self.outbox.clear();
    }

    /// Asks for the listing of `prefix`.
    pub(super) fn list(&mut self, prefix: String) {
        self.outbox.push_back(Request::List { prefix });
    }

    /// Asks for the catalog's pointer to be read again.
    pub(super) fn resolve_pointer(&mut self) {
        self.outbox.push_back(Request::ResolvePointer);
    }

    /// Asks for the object at `uri`, for `purpose`: once per URI, except
    /// metadata and owner checks, and never while a read of it is pending.
    pub(super) fn read(&mut self, uri: String, purpose: Purpose) {
        // Metadata is always (re-)read: a pointer may move back to a
        // document read earlier (A -> B -> A), which is refused as a
        // pointer going backwards once it is read again.
        let always = matches!(
            purpose,
            Purpose::OwnerCheck { .. } | Purpose::Metadata { .. } | Purpose::PriorPointer { .. }
        );
        if !self.requested.insert(uri.clone()) && !always {
            return;
        }
        if self.pending.contains_key(&uri) {
            return;
        }
        self.pending.insert(uri.clone(), purpose);
        self.outbox.push_back(Request::ReadBlob { uri });
    }

    /// The purpose of the pending read of `uri`, taken: the answer is
    /// being processed. Fails (protocol) for a read never asked for or
    /// answered already.
    pub(super) fn take(&mut self, uri: &str) -> Result<Purpose> {
        self.pending.remove(uri).ok_or_else(|| {
            Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("answer for `{uri}`, which was never requested or was answered already"),
            )
        })
    }

    /// What the pending read of `uri` is for, if one is pending.
    pub(super) fn pending(&self, uri: &str) -> Option<&Purpose> {
        self.pending.get(uri)
    }

    /// Whether every read asked for was answered.
    pub(super) fn all_answered(&self) -> bool {
        self.pending.is_empty()
    }
}
