//! The planning session: a sans-IO state machine the host feeds with
//! blobs, listing pages and pointer re-reads, and drains for requests and
//! decisions (see the crate's calling contract). This file is the host's
//! side of it: starting, the `handle_*` answers, the keep set's exports.
//! How an answer moves the session on is in `progress`, the refusals it
//! makes beyond the formats' in `checks`, sealing in `seal`, and each
//! format's part of the walk in `iceberg` and `delta` (the session's side;
//! the formats' own halves are `plan::iceberg` and `plan::delta`, which
//! never reach into the session).

use std::collections::{BTreeMap, BTreeSet};

use super::checkpoint_digest::CheckpointDigest;
use super::config::{
    canonical_pointer, window, SessionConfig, MIN_FILE_RETENTION_MS, MIN_MEMORY_BUDGET,
};
use super::delta::DeltaSweep;
use super::document::{PlannedDelete, Summary};
use super::iceberg::{read_manifest_digest, IcebergSweep};
use super::manifest_digest::ManifestDigest;
use super::refs::References;
use super::requests::{Purpose, Request, Requests};
use super::state::State;
use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::format::TableFormat;
use crate::path::{apply_mappings, CanonicalUri, TableLocation};
use crate::reach::{KeepSet, Source};
use crate::verdict::{object_kind, Classifier, Decision, Judged, ListedObject, Verdict};

mod checks;
mod delta;
mod iceberg;
mod progress;
mod seal;
mod split;

/// How many times the pointer may move during one session before it gives up.
pub const MAX_RECHECKS: u32 = 8;

/// The version a delete candidate was listed at (its key is the map's).
#[derive(Debug, Clone)]
struct Pinned {
    size: u64,
    last_modified_ms: i64,
    etag: Option<String>,
    version_id: Option<String>,
}

impl Pinned {
    /// The planned delete of `key` at this version.
    fn planned(self, key: String) -> PlannedDelete {
        PlannedDelete {
            key,
            size: self.size,
            last_modified_ms: self.last_modified_ms,
            etag: self.etag,
            version_id: self.version_id,
        }
    }
}

/// A planning session for one table, from its start to its sealed plan
/// (see the crate's calling contract).
#[derive(Debug)]
pub struct Session {
    /// The parsed retention policy, if any.
    policy: Option<crate::Policy>,
    config: SessionConfig,
    classifier: Classifier,
    /// Where the session stands; changed only by its transitions.
    state: State,
    /// Requests not yet polled, reads not yet answered.
    requests: Requests,
    decisions: Vec<Decision>,
    /// The delete candidates so far, by relative key.
    candidates: BTreeMap<String, Pinned>,
    summary: Summary,
    warnings: BTreeSet<String>,
    /// What the table can still read: Iceberg snapshot ids, or Delta
    /// versions (the checkpoint's up to the newest); leases, holds and DR
    /// checkpoints must name one of them.
    readable: BTreeSet<i64>,
    metadata_location: String,
    refs: BTreeMap<String, i64>,
    rechecks: u32,
    /// The format's own half of the session and its state.
    machine: Machine,
    /// Other write roots listed so far (after the table's own listing).
    roots_listed: usize,
    /// Per path-prefix legal hold: listed keys under it exactly, and keys
    /// under it only up to spelling (protected as near-misses).
    hold_hits: BTreeMap<String, (u64, u64)>,
    /// What reference resolution learned (ambiguous references, the
    /// metadata graph outside the table, the warnings' examples).
    references: References,
    /// Fingerprints of the keys a ledger deleted (see
    /// [`SessionConfig::deleted_index`]).
    deleted: crate::hashing::Set<u64>,
    /// Of those, the ones the listing held as referenced keys.
    deleted_listed: crate::hashing::Set<u64>,
    /// Prefixes other tables own (see [`SessionConfig::foreign_roots`]).
    foreign: Vec<(TableLocation, String)>,
    /// Pointer reads of the run so far, prior ones included.
    pointer_reads: u32,
    /// The prefix being listed (the table's, then each write root's).
    listing_prefix: Option<String>,
    /// Whether pages or names of that listing were handed over.
    listing_fed: bool,
    /// The splits that listing was cut into, while any is outstanding.
    splits: Option<Box<split::SplitLedger>>,
    /// The keep set as last exported (made once for the range reads of
    /// one export); dropped by any call that may change it.
    exported: std::cell::OnceCell<Exported>,
}

/// The format's own half of a session: Iceberg's snapshot walk or Delta's
/// log replay, each with the state only it needs. A half never reaches
/// into the session: its steps take what they need and return what to
/// keep, read and warn (`delta::KeepPath`, `delta::Cleanup`,
/// `iceberg::ManifestRead`, ...), and the session applies it.
#[derive(Debug)]
enum Machine {
    /// An Iceberg table: metadata, manifest lists, manifests.
    Iceberg(Box<IcebergSweep>),
    /// A Delta table: the log listing, checkpoint and commits.
    Delta(Box<DeltaSweep>),
}

/// Fails (protocol) when the digest answering the read of `uri` was made
/// from another URI's bytes.
fn made_from(uri: &str, digest_uri: &str) -> Result<()> {
    if digest_uri == uri {
        return Ok(());
    }
    Err(Error::protocol(
        ProtocolReason::UnexpectedAnswer,
        format!("the digest answering `{uri}` was made from `{digest_uri}`"),
    ))
}

/// A session's keep set export (see [`Session::export_keep_set_range`]).
#[derive(Debug)]
enum Exported {
    /// The frozen keep set's form, made a range at a time from its arrays.
    Frozen(crate::reach::Export),
    /// The whole form, written from a frozen copy (the keep set was still
    /// taking keys).
    Whole(Vec<u8>),
}

impl Session {
    /// Starts a session. The first request is to read the current metadata.
    pub fn start(config: SessionConfig) -> Result<Session> {
        if config.format == TableFormat::Iceberg {
            if !config.keep_versions.is_empty() {
                return Err(Error::invalid(
                    "keep_versions",
                    "versions are kept on Delta tables; keep Iceberg snapshots with a tag or a policy",
                ));
            }
            if config.log_cleanup {
                return Err(Error::invalid(
                    "log_cleanup",
                    "log cleanup applies to Delta tables (Iceberg metadata is expired with plan-expiry)",
                ));
            }
        } else if config.policy.is_some() {
            return Err(Error::invalid(
                "policy",
                "retention policies bind Iceberg tables in this version; plan Delta tables with options and a context",
            ));
        }
        let location = TableLocation::parse(&config.table_location)
            .map_err(|e| Error::invalid("table_location", e))?;
        if !location.has_plain_path() {
            // Readers resolve `.`, `..` and `//` differently: which keys
            // are inside the table would be a guess.
            return Err(Error::invalid(
                "table_location",
                format!(
                    "`{}` has a `.`, `..` or empty segment: give the location as the catalog resolves it",
                    config.table_location
                ),
            ));
        }
        let given = config.file_retention_ms;
        if given.is_some_and(|w| w < 0) {
            return Err(Error::invalid("file_retention_ms", "must not be negative"));
        }
        if config.memory_budget_bytes < MIN_MEMORY_BUDGET {
            return Err(Error::invalid(
                "memory_budget_bytes",
                format!(
                    "{} bytes is below the smallest budget, {MIN_MEMORY_BUDGET} bytes (16 MiB)",
                    config.memory_budget_bytes
                ),
            ));
        }
        if let Some(w) = given.filter(|&w| w < MIN_FILE_RETENTION_MS) {
            if !config.allow_short_retention {
                return Err(Error::invalid(
                    "file_retention_ms",
                    format!(
                        "{} is shorter than one hour: in-flight writers' files would be deleted (set allow_short_retention to override)",
                        crate::duration::human_ms(w)
                    ),
                ));
            }
        }
        // A pointer from a catalog names the table's original root: map it
        // like every path found in metadata. Delta's pointer is its log.
        let pointer = if config.format == TableFormat::Delta {
            format!("{}_delta_log/", location.prefix())
        } else {
            canonical_pointer(&config.metadata_location, &config.location_map)?
        };
        let policy = config
            .policy
            .as_deref()
            .map(crate::Policy::parse_checked)
            .transpose()?;
        let protections = config
            .context
            .as_deref()
            .map(crate::Context::parse)
            .transpose()?
            .unwrap_or_default();
        if let Some(p) = &policy {
            p.ensure_holds_current(&protections)?;
        }
        let window = window(given, policy.as_ref(), config.format);
        let mut foreign = Vec::with_capacity(config.foreign_roots.len());
        for f in &config.foreign_roots {
            let root = TableLocation::parse(&f.root)
                .map_err(|e| Error::invalid("foreign_roots", format!("`{}`: {e}", f.root)))?;
            foreign.push((root, f.owner.clone()));
        }
        let classifier = Classifier {
            location,
            keep: KeepSet::new(),
            now_ms: config.now_ms,
            file_retention_ms: window,
            partition_names: BTreeSet::new(),
            table_uuid: None,
            mappings: config.location_map.clone(),
            protections,
            format: config.format,
            expired_log: BTreeMap::new(),
            reserved: Vec::new(),
            roots: Vec::new(),
            owners: Vec::new(),
        };
        let config_priors = config.prior_pointers.len();
        let deleted = match &config.deleted_index {
            Some(b) => crate::reach::decode_key_index(b)?.into_iter().collect(),
            None => Default::default(),
        };
        let format = config.format;
        let mut s = Session {
            policy,
            config,
            classifier,
            state: State::new(format),
            requests: Requests::default(),
            decisions: Vec::new(),
            candidates: BTreeMap::new(),
            summary: Summary::default(),
            warnings: BTreeSet::new(),
            readable: BTreeSet::new(),
            metadata_location: pointer.clone(),
            refs: BTreeMap::new(),
            rechecks: 0,
            machine: Machine::Iceberg(Box::default()),
            roots_listed: 0,
            hold_hits: BTreeMap::new(),
            references: References::default(),
            deleted,
            deleted_listed: Default::default(),
            foreign,
            pointer_reads: u32::try_from(config_priors).unwrap_or(u32::MAX),
            listing_prefix: None,
            listing_fed: false,
            splits: None,
            exported: std::cell::OnceCell::new(),
        };
        s.check_foreign_roots()?;
        if s.config.format == TableFormat::Delta {
            s.start_delta(pointer)?;
        } else {
            // A prior read of the document the pointer names now needs no
            // comparison (and is read once, as the pointer's).
            let mut seen = BTreeSet::from([pointer.clone()]);
            for (read, prior) in s.config.prior_pointers.clone().into_iter().enumerate() {
                let prior = CanonicalUri::parse(&prior)
                    .map_err(|e| Error::invalid("prior_pointers", format!("`{prior}`: {e}")))?
                    .to_uri_string();
                if seen.insert(prior.clone()) {
                    let read = u32::try_from(read).unwrap_or(u32::MAX);
                    s.requests.read(prior, Purpose::PriorPointer { read });
                }
            }
            let read = s.next_pointer_read();
            s.requests.read(pointer, Purpose::Metadata { read });
        }
        Ok(s)
    }

    /// The next request for the host, if any. Requests may be served in any order.
    pub fn poll_request(&mut self) -> Option<Request> {
        if self.state.failed().is_some() {
            return None;
        }
        self.requests.poll()
    }

    /// Decisions made since the last call (per page; demotions after a re-check).
    pub fn drain_decisions(&mut self) -> Vec<Decision> {
        std::mem::take(&mut self.decisions)
    }

    /// True once the plan can be sealed with [`Session::finish`].
    pub fn is_done(&self) -> bool {
        self.state.is_done()
    }

    /// Answers a `ReadBlob` request with the object's bytes.
    pub fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<()> {
        self.guard(|s| {
            let purpose = s.requests.take(&uri)?;
            s.check_budget(&uri, &purpose, &bytes)?;
            s.process_blob(&uri, purpose, Some(&bytes))?;
            s.advance()
        })
    }

    /// [`Session::handle_blob`] with the bytes as lowercase hex text, two
    /// characters a byte (for hosts whose runtime moves text in one copy
    /// and a list of bytes value by value). Text that is not such hex
    /// fails (protocol: bad input) as any other wrong answer does.
    pub fn handle_blob_hex(&mut self, uri: String, text: &str) -> Result<()> {
        match crate::digest::unhex(text) {
            Ok(bytes) => self.handle_blob(uri, bytes),
            Err(at) => self.guard(|_| {
                Err(Error::protocol(
                    ProtocolReason::BadInput,
                    format!(
                        "the bytes of {uri} as text are not lowercase hex (at byte {at} of {})",
                        text.len()
                    ),
                ))
            }),
        }
    }

    /// Whether the read of `uri` asked for now is of an Iceberg manifest:
    /// such a read may be answered with [`Session::handle_manifest_digest`]
    /// (the manifest digested elsewhere by [`crate::digest_manifest`]) instead of
    /// its bytes.
    pub fn is_manifest_read(&self, uri: &str) -> bool {
        matches!(self.requests.pending(uri), Some(Purpose::Manifest { .. }))
    }

    /// What a manifest's reader may resolve its paths against
    /// ([`crate::digest_manifest_resolved`]): the rules of resolution of
    /// this build and the table location, when no
    /// location mapping is set and the location is its own only spelling
    /// (then a path spelled as its prefix plus a plain key names that key
    /// and nothing else); `None` otherwise (answer with
    /// [`crate::digest_manifest`]). Fixed for the session's life.
    pub fn manifest_resolution(&self) -> Option<String> {
        (self.config.location_map.is_empty() && self.classifier.location.has_plain_path())
            .then(|| super::manifest_digest::resolution_of(&self.classifier.location))
    }

    /// Answers the `ReadBlob` request of a manifest with its digest, made by
    /// [`crate::digest_manifest`] (or [`crate::digest_manifest_resolved`]
    /// with this session's [`Session::manifest_resolution`]) from the
    /// bytes read at `uri`: checked and counted
    /// by the code that checks and counts the bytes in
    /// [`Session::handle_blob`] (the length the manifest list names, the
    /// snapshot summaries), so the plan is the same. The memory budget is
    /// charged for the digest, which is what the session decodes. Fails (protocol) for a read that is not a manifest's, a
    /// digest of another URI, one resolved against another resolution, or
    /// one that does not decode.
    pub fn handle_manifest_digest(&mut self, uri: String, digest: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.requests.take(&uri)?;
            let Purpose::Manifest {
                expected_len,
                added_by,
            } = purpose
            else {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!("a manifest digest answers a manifest's read only; `{uri}` was asked for as something else"),
                ));
            };
            s.check_budget(&uri, &purpose, digest.as_bytes())?;
            let d = ManifestDigest::decode(&digest)?;
            made_from(&uri, &d.uri)?;
            if let Some(r) = &d.resolved {
                if s.manifest_resolution().as_ref() != Some(r) {
                    return Err(Error::protocol(
                        ProtocolReason::BadInput,
                        format!(
                            "the digest answering `{uri}` was resolved against `{r}`; this session resolves against {}",
                            s.manifest_resolution()
                                .map_or("nothing (answer with an unresolved digest)".to_owned(), |m| format!("`{m}`"))
                        ),
                    ));
                }
            }
            s.summary.manifests_read += 1;
            let read = read_manifest_digest(
                &uri,
                d,
                expected_len,
                added_by,
                s.config.keep_deleted_entries,
            )?;
            s.keep_manifest(&uri, read)?;
            s.advance()
        })
    }

    /// Whether the read of `uri` asked for now is of a Delta checkpoint
    /// file (a part, a V2 checkpoint, a sidecar): such a read may be
    /// answered with [`Session::handle_checkpoint_digest`] (the file
    /// digested elsewhere by [`crate::digest_checkpoint`]) instead of its bytes.
    pub fn is_checkpoint_read(&self, uri: &str) -> bool {
        match self.requests.pending(uri) {
            Some(Purpose::DeltaLog { order }) => self.delta_is_checkpoint_read(uri, *order),
            _ => false,
        }
    }

    /// Answers the `ReadBlob` request of a Delta checkpoint file with its
    /// digest, made by [`crate::digest_checkpoint`] from the bytes read at `uri`:
    /// its length is checked against the log listing and its actions
    /// applied by the code that applies the bytes' in
    /// [`Session::handle_blob`], so the plan is the same. The memory
    /// budget is charged for the digest. Fails (protocol) for a read that
    /// is not a checkpoint file's, a digest of another URI or one that
    /// does not decode; (malformed) like the bytes, e.g. a file shorter
    /// than the listing said.
    pub fn handle_checkpoint_digest(&mut self, uri: String, digest: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.requests.take(&uri)?;
            let order = match purpose {
                Purpose::DeltaLog { order } if s.delta_is_checkpoint_read(&uri, order) => order,
                _ => {
                    return Err(Error::protocol(
                        ProtocolReason::UnexpectedAnswer,
                        format!("a checkpoint digest answers a Delta checkpoint file's read only; `{uri}` was asked for as something else"),
                    ))
                }
            };
            // The text, and the actions it decodes into: each line's path
            // again and an action record (56 bytes in wasm32, 104
            // natively). A line of a path of ten bytes or more is 14 bytes
            // or more, so that is under eight times the text in wasm32.
            let n = digest.len() as u64;
            s.check_cost(&uri, "Delta checkpoint digest", n, n.saturating_mul(8))?;
            let d = CheckpointDigest::decode(&digest)?;
            made_from(&uri, &d.uri)?;
            s.delta_log_digest(&uri, order, d)?;
            s.advance()
        })
    }

    /// Answers a `ReadBlob` request: the object does not exist. For anything
    /// the keep set needs, this stops the plan ("not found" is never "no files").
    pub fn handle_missing(&mut self, uri: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.requests.take(&uri)?;
            s.process_blob(&uri, purpose, None)?;
            s.advance()
        })
    }

    /// [`Session::handle_page`] with the page in JSON
    /// ([`ListedObject::page_from_json`]); a page that does not parse fails
    /// the session (protocol: bad-input).
    pub fn handle_page_json(&mut self, page: Vec<u8>, is_last: bool) -> Result<()> {
        match ListedObject::page_from_json(&page) {
            Ok(objects) => self.handle_page(objects, is_last),
            Err(e) => self.guard(|_| Err(e)),
        }
    }

    /// [`Session::drain_decisions`] as one JSON array
    /// ([`Decision::list_to_json`]).
    pub fn drain_decisions_json(&mut self) -> Vec<u8> {
        Decision::list_to_json(&self.drain_decisions())
    }

    /// Answers the `List` request with one page; `is_last` marks the final page.
    pub fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<()> {
        self.guard(|s| {
            if s.state.is_log_listing() {
                s.delta_log_page(objects, is_last)?;
                return s.advance();
            }
            if !s.state.is_listing() {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "listing page sent when no listing was requested (or after the last page)",
                ));
            }
            s.feed_listing()?;
            for obj in objects {
                s.summary.listed.add(obj.size);
                match s.classifier.judge(obj)? {
                    Judged::Final(d) => s.record(d),
                    Judged::NeedsOwner { decision } => {
                        // The listed object, as the decision carries it.
                        let obj = ListedObject {
                            key: decision.key.clone(),
                            size: decision.size,
                            last_modified_ms: decision.last_modified_ms,
                            etag: decision.etag.clone(),
                            version_id: decision.version_id.clone(),
                        };
                        let uri = CanonicalUri::parse(&obj.key)
                            .map_err(|e| Error::protocol(ProtocolReason::BadKey, e))?
                            .to_uri_string();
                        if s.requests.pending(&uri).is_some() {
                            return Err(Error::protocol(
                                ProtocolReason::BadKey,
                                format!("key `{}` listed twice", obj.key),
                            ));
                        }
                        s.requests.read(
                            uri,
                            Purpose::OwnerCheck {
                                obj,
                                rel: decision.relative_key,
                            },
                        );
                    }
                }
            }
            if is_last {
                s.state.last_page_seen()?;
            }
            s.advance()
        })
    }

    /// Answers part of the `List` request with keys alone, for a host whose
    /// listing gives names cheaply and each object's version at a cost (a
    /// local walk: a stat per file, a read of the disk when the file
    /// system's metadata is not cached). Every key the keep set references
    /// is settled here, by name: kept whatever its size and time, counted
    /// in the summary (`listed_by_name`; no bytes), and no decision is
    /// drained for it. Answers the indices into `keys`, ascending, of every
    /// other key (whatever decides its verdict: only `referenced` is
    /// settled by name): the host sends those, with their versions, through
    /// [`Session::handle_page`] (one gone meanwhile is left out: what is
    /// not listed is never deleted), and ends the listing with
    /// `handle_page`'s last page as always. A key sent both ways is counted
    /// twice, never deleted by it.
    ///
    /// The Delta log's own listing needs every version: there, every index
    /// is answered, and the keys are checked by `handle_page`. Fails
    /// (protocol) like `handle_page`: when no listing was asked for (or
    /// after its last page), or for a key outside the table.
    pub fn handle_names(&mut self, keys: Vec<String>) -> Result<Vec<u32>> {
        let mut needed = Vec::new();
        self.guard(|s| {
            let count = u32::try_from(keys.len()).map_err(|_| {
                Error::protocol(ProtocolReason::BadInput, "more than 2^32 names in one call")
            })?;
            if s.state.is_log_listing() {
                needed = (0..count).collect();
                return Ok(());
            }
            if !s.state.is_listing() {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "listed names sent when no table listing was requested (or after its last page)",
                ));
            }
            s.feed_listing()?;
            for (i, key) in keys.iter().enumerate() {
                // Only `Referenced` is taken from this finding: no size or
                // time enters that verdict (a keep-set hit or the version
                // hint, by name). Every other verdict is judged again with
                // the object's version.
                let f = s.classifier.find(key, 0, i64::MAX)?;
                if f.verdict == Verdict::Referenced {
                    let rel = f.rel.into_owned();
                    s.summary.listed.add(0);
                    s.summary.listed_by_name += 1;
                    s.count(&rel, Verdict::Referenced, 0);
                } else {
                    // Within u32: `count` is.
                    needed.push(i as u32);
                }
            }
            Ok(())
        })?;
        Ok(needed)
    }

    /// Answers `ResolvePointer` with the catalog's current metadata location
    /// (`None`: the table no longer exists).
    pub fn handle_pointer(&mut self, metadata_location: Option<String>) -> Result<()> {
        self.guard(|s| {
            if !s.state.is_awaiting_pointer() {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "pointer answer sent when none was requested",
                ));
            }
            let Some(loc) = metadata_location else {
                return Err(Error::unsafe_(
                    UnsafeReason::MissingMetadata,
                    "the table's pointer vanished during the sweep (table dropped?)",
                ));
            };
            let loc = CanonicalUri::parse(&apply_mappings(&loc, &s.config.location_map))
                .map_err(|e| Error::protocol(ProtocolReason::BadInput, e))?
                .to_uri_string();
            if loc == s.metadata_location {
                s.check_stray_documents()?;
                return s.state.done();
            }
            s.rechecks += 1;
            if s.rechecks > MAX_RECHECKS {
                return Err(Error::unsafe_(
                    UnsafeReason::TableChanging,
                    format!("the pointer moved {} times during one sweep", s.rechecks),
                ));
            }
            s.metadata_location = loc.clone();
            s.state.recheck()?;
            let read = s.next_pointer_read();
            s.requests.read(loc, Purpose::Metadata { read });
            Ok(())
        })
    }

    /// The bytes of [`Session::export_keep_set`] from `offset`, at most
    /// `length` of them (none past the end), for hosts whose bindings
    /// cannot take a large list back in one call: each range is made from
    /// the frozen keep set itself, so the whole is not written out beside
    /// it (it is, from a frozen copy, while a re-check's keys are still
    /// building). Fails as `export_keep_set` does.
    pub fn export_keep_set_range(&self, offset: u64, length: u32) -> Result<Vec<u8>> {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        Ok(match self.exported()? {
            Exported::Frozen(e) => self
                .classifier
                .keep
                .export_range(e, offset, length as usize),
            Exported::Whole(all) => {
                let start = offset.min(all.len());
                all[start..start.saturating_add(length as usize).min(all.len())].to_vec()
            }
        })
    }

    /// [`Session::export_keep_set_range`]'s bytes as lowercase hex text, two
    /// characters a byte (at most `length` bytes, so `2 * length`
    /// characters), for hosts whose runtime moves text in one copy and a
    /// list of bytes value by value. Fails as `export_keep_set` does.
    pub fn export_keep_set_hex(&self, offset: u64, length: u32) -> Result<String> {
        self.export_keep_set_range(offset, length)
            .map(|b| crate::digest::hex(&b))
    }

    /// Exports the finished keep set (plus the options verdicts depend on) for
    /// the stateless page mode. Available once the listing was requested.
    pub fn export_keep_set(&self) -> Result<Vec<u8>> {
        Ok(match self.exported()? {
            Exported::Frozen(e) => self.classifier.keep.export_range(e, 0, e.len()),
            Exported::Whole(all) => all.clone(),
        })
    }

    /// The keep set's export, made once since it last changed.
    fn exported(&self) -> Result<&Exported> {
        self.check_exportable()?;
        if let Some(e) = self.exported.get() {
            return Ok(e);
        }
        let header = crate::page::export_header(
            &self.classifier,
            &self.metadata_location,
            self.references.ambiguous_keys(),
        );
        let keep = &self.classifier.keep;
        let made = match keep.export(&header) {
            Some(e) => Exported::Frozen(e),
            // Still building (a re-check's keys): written whole from a
            // frozen copy.
            None => {
                let mut all = Vec::new();
                keep.encode(&header, &mut all)?;
                Exported::Whole(all)
            }
        };
        Ok(self.exported.get_or_init(|| made))
    }

    /// XXH3-128 of the exported keep set's bytes, lowercase hex: what a
    /// [`crate::PageClassifier`] that loaded them names them by.
    pub(super) fn keep_set_digest(&self) -> Result<String> {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        match self.exported()? {
            Exported::Frozen(e) => self.classifier.keep.export_pieces(e, |p| h.update(p)),
            Exported::Whole(all) => h.update(all),
        }
        Ok(format!("{:032x}", h.digest128()))
    }

    /// Fails unless the keep set can be exported: the session failed, or
    /// its keep set is not complete (protocol).
    fn check_exportable(&self) -> Result<()> {
        if let Some(e) = self.state.failed() {
            return Err(e.clone());
        }
        if !self.state.listing_requested() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the keep set is not complete yet",
            ));
        }
        Ok(())
    }

    /// Runs `f` on the session unless it failed already; an error fails
    /// the session (fail closed): it asks nothing more and plans nothing.
    fn guard(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        if let Some(e) = self.state.failed() {
            return Err(e.clone());
        }
        // Any answer may change the keep set (a re-check reads new
        // snapshots): the next export is made again.
        self.exported = std::cell::OnceCell::new();
        let r = f(self);
        if let Err(e) = &r {
            self.state.fail(e.clone());
            self.requests.cancel();
            self.candidates.clear();
        }
        r
    }

    /// Delta's state, in a Delta session.
    fn delta(&self) -> Option<&DeltaSweep> {
        match &self.machine {
            Machine::Delta(d) => Some(d),
            Machine::Iceberg(_) => None,
        }
    }

    /// Delta's state, in a Delta session.
    fn delta_mut(&mut self) -> Option<&mut DeltaSweep> {
        match &mut self.machine {
            Machine::Delta(d) => Some(d),
            Machine::Iceberg(_) => None,
        }
    }

    /// Iceberg's state, in an Iceberg session.
    fn iceberg(&self) -> Option<&IcebergSweep> {
        match &self.machine {
            Machine::Iceberg(i) => Some(i),
            Machine::Delta(_) => None,
        }
    }

    /// Iceberg's state; a protocol error in a Delta session.
    fn ice(&mut self) -> Result<&mut IcebergSweep> {
        match &mut self.machine {
            Machine::Iceberg(i) => Ok(i),
            Machine::Delta(_) => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "Iceberg state used on a Delta session",
            )),
        }
    }

    /// Records a decision: its tallies, a candidate's pinned version, a
    /// near-miss's warning; the host drains it.
    fn record(&mut self, d: Decision) {
        self.count(&d.relative_key, d.verdict, d.size);
        match d.verdict {
            Verdict::Candidate | Verdict::ExpiredLog => {
                self.summary
                    .reclaimable
                    .entry(object_kind(&d.relative_key).into())
                    .or_default()
                    .add(d.size);
                self.candidates.insert(
                    d.relative_key.clone(),
                    Pinned {
                        size: d.size,
                        last_modified_ms: d.last_modified_ms,
                        etag: d.etag.clone(),
                        version_id: d.version_id.clone(),
                    },
                );
            }
            Verdict::NearMiss => {
                self.warnings
                    .insert(format!("near-miss kept: `{}` {}", d.relative_key, d.detail));
            }
            _ => {}
        }
        self.decisions.push(d);
    }

    /// Counts a listed key's verdict (`size` bytes): hold hits, the
    /// verdict's tally, and which referenced keys were listed.
    fn count(&mut self, rel: &str, verdict: Verdict, size: u64) {
        self.classifier
            .protections
            .count_hold_hits(rel, &mut self.hold_hits);
        match self.summary.verdicts.get_mut(verdict.as_str()) {
            Some(t) => t.add(size),
            None => self
                .summary
                .verdicts
                .entry(verdict.as_str().into())
                .or_default()
                .add(size),
        }
        // A key a ledger deleted that is listed again: not missing.
        if verdict == Verdict::Referenced && !self.deleted.is_empty() {
            let fp = crate::reach::fingerprint(rel);
            if self.deleted.contains(&fp) {
                self.deleted_listed.insert(fp);
            }
        }
        // The version hint is judged referenced by its name alone: it
        // proves nothing about whether the listing is the table's.
        if verdict == Verdict::Referenced && rel != crate::verdict::VERSION_HINT {
            self.references.listed(rel);
        }
    }

    /// Canonicalises a path from metadata (`raw`, named in `blob`) and
    /// records it in the keep set (see [`References::reference`]).
    fn reference(&mut self, blob: &str, raw: &str, source: Source) -> Result<()> {
        let maps = &self.config.location_map;
        self.references
            .reference(&mut self.classifier, maps, blob, raw, source)
    }

    /// Records a path that is already mapped (see
    /// [`References::reference_mapped`]).
    fn reference_mapped(
        &mut self,
        blob: &str,
        raw: &str,
        mapped: &str,
        source: Source,
    ) -> Result<()> {
        self.references
            .reference_mapped(&mut self.classifier, blob, raw, mapped, source)
    }

    /// Records a reference to a blob whose contents the keep set needs and
    /// returns the one canonical URI to read (see
    /// [`References::reference_blob`]).
    fn reference_blob(&mut self, blob: &str, raw: &str, source: Source) -> Result<String> {
        let maps = &self.config.location_map;
        self.references
            .reference_blob(&mut self.classifier, maps, blob, raw, source)
    }

    /// A short name for a blob in reasons: relative to the location when inside.
    fn short(&self, uri: &str) -> String {
        match CanonicalUri::parse(uri) {
            Ok(c) => self
                .classifier
                .location
                .relative(&c)
                .map(str::to_owned)
                .unwrap_or_else(|| uri.to_owned()),
            Err(_) => uri.to_owned(),
        }
    }

    /// Whether the keep set is complete (the table listing was requested):
    /// from then on [`Session::referenced`] answers.
    pub fn keep_set_complete(&self) -> bool {
        self.state.failed().is_none() && self.state.listing_requested()
    }

    /// Which of `keys` (relative to the table location) the keep set
    /// references, with the reason. Used after deleting, on a session started
    /// from the pointer read again: a deleted key the table references now
    /// is damage. Available once the keep set is complete.
    pub fn referenced(&self, keys: Vec<String>) -> Result<Vec<(String, String)>> {
        if let Some(e) = self.state.failed() {
            return Err(e.clone());
        }
        if !self.state.listing_requested() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the keep set is not complete yet",
            ));
        }
        Ok(keys
            .into_iter()
            .filter_map(|k| {
                let why = self
                    .classifier
                    .keep
                    .lookup(&k)
                    .map(|s| s.describe())
                    .or_else(|| {
                        let c = CanonicalUri::parse(&self.absolute(&k)).ok()?;
                        let l = self.classifier.loose_key_of(&c)?;
                        self.classifier
                            .keep
                            .contains_loose(&l)
                            .then(|| "a near-miss of a referenced path".to_owned())
                    })?;
                Some((k, why))
            })
            .collect())
    }

    /// The URI of a key: keys of other roots are absolute already.
    fn absolute(&self, key: &str) -> String {
        if key.contains("://") {
            key.to_owned()
        } else {
            format!("{}{key}", self.classifier.location.prefix())
        }
    }
}
