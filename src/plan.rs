//! The planner session: a sans-IO state machine the host feeds with blobs,
//! listing pages and pointer re-reads, and drains for requests and decisions.
//!
//! ```text
//! start ──► read metadata ──► read manifest lists ──► read manifests
//!                (keep set complete: frozen) ──► list location/ ──► pages
//!   ──► owner checks of stray *.metadata.json ──► resolve pointer
//!   ──► (pointer moved: read new snapshots, demote candidates, resolve again)
//!   ──► done: finish() seals the plan
//! ```
//! Any error poisons the session: every later call returns the same error and
//! no plan can be sealed (fail closed).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::error::{Error, Result, UnsafeReason};
use crate::error::{MalformedReason, ProtocolReason};
use crate::path::{apply_mappings, CanonicalUri, PathMapping, TableLocation};
use crate::reach::{KeepSet, Source};
use crate::spec::iceberg::{self as ispec, ContentType, ManifestStatus, TableMetadata};
use crate::verdict::{object_kind, Classifier, Decision, Judged, ListedObject, Verdict};

mod checkpoint_digest;
mod delta;
mod iceberg;
mod manifest_digest;

pub use checkpoint_digest::digest_checkpoint;
pub use manifest_digest::digest_manifest;

pub use crate::duration::MIN_FILE_RETENTION_MS;
/// How many times the pointer may move during one session before it gives up.
pub const MAX_RECHECKS: u32 = 8;
/// Default memory budget of a session: 1 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 1 << 30;
/// Smallest memory budget accepted: 16 MiB.
pub const MIN_MEMORY_BUDGET: u64 = 16 << 20;

/// Schema name of sealed plan documents.
pub const PLAN_SCHEMA: &str = "lakesweep.plan.v3";

pub use crate::format::TableFormat;

/// What a session is started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfig {
    /// Table location (URI or absolute path); only keys strictly under
    /// `location + "/"` can ever be deleted.
    pub table_location: String,
    /// Table format.
    pub format: TableFormat,
    /// URI of the current metadata document (the catalog's pointer).
    pub metadata_location: String,
    /// Evaluation time, milliseconds since the Unix epoch. Never read from a clock.
    pub now_ms: i64,
    /// File-retention window, milliseconds: unreferenced objects younger than
    /// this are kept. `None`: the core's default, the same on every host:
    /// a policy's `orphanSafetyInterval`, else 3 days for Iceberg (as
    /// Iceberg's own orphan removal) and 7 days for Delta
    /// (`delta.deletedFileRetentionDuration`'s default). Given with a
    /// policy, the longer of the two applies.
    pub file_retention_ms: Option<i64>,
    /// Keep files that appear only in DELETED manifest entries of a retained
    /// snapshot (changelog and incremental readers need them). Default true.
    pub keep_deleted_entries: bool,
    /// Accept a window shorter than [`MIN_FILE_RETENTION_MS`] and, for Delta,
    /// shorter than the table's `delta.deletedFileRetentionDuration` (like
    /// disabling Delta's `retentionDurationCheck`; the plan warns).
    pub allow_short_retention: bool,
    /// Prefix rewrites applied to every path read from metadata.
    pub location_map: Vec<PathMapping>,
    /// A `lakehouseRetentionPolicy.v1` document (JSON). Its binding must
    /// match the table; its `orphanSafetyInterval` lengthens the window
    /// (the longer of the two applies).
    pub policy: Option<String>,
    /// The live context (JSON, see [`crate::Context`]): hold prefixes and
    /// writers' staging prefixes are never swept; a table hold keeps everything.
    pub context: Option<String>,
    /// Delta only: table versions whose files are all kept (besides the latest).
    pub keep_versions: Vec<i64>,
    /// Delta only: plan removing `_delta_log/` entries that log retention
    /// (`delta.logRetentionDuration`, 30 days by default) allows removing.
    pub log_cleanup: bool,
    /// Iceberg: the pointer comes from an authoritative catalog (SQL, REST)
    /// whose compare-and-set decides commits. Then a metadata document of
    /// this table that descends from the pointer is a failed commit's
    /// leftover (planned after the window); from a file-system pointer
    /// (`version-hint.text`, a fixed file) it means the pointer lags, and
    /// the plan is refused.
    #[serde(default)]
    pub pointer_authoritative: bool,
    /// Memory the session may use, in bytes (default 1 GiB). Before a blob
    /// is decoded its cost is estimated from its size (and, for Parquet, its
    /// footer) and added to the keep set's; a blob that would go over is
    /// refused with an `unsupported` error naming it and the budget, so a
    /// hostile or oversized file ends in a clear answer, never a trap.
    #[serde(default = "default_budget")]
    pub memory_budget_bytes: u64,
    /// How the plan was made, as the host records it (a document of the
    /// host's own: where its pointer comes from, its mappings, its context
    /// files), sealed into the plan so the host that applies it reads the
    /// same sources and an edited origin is refused. The core does not
    /// read it.
    #[serde(default)]
    pub origin: Option<String>,
    /// Prefixes other tables own inside this table's location or write
    /// roots, as the ownership map of a many-table run gives them
    /// ([`crate::estate::ownership_map`]): every key under one is kept
    /// (verdict `foreign`). One equal to or containing the table's
    /// location or a write root refuses the plan (`foreign-table`).
    #[serde(default)]
    pub foreign_roots: Vec<crate::estate::ForeignRoot>,
    /// The pointers earlier reads of this run named, oldest first (when a
    /// plan's deletes are checked: the plan's own). The session reads each
    /// and refuses (`stale-pointer`) when the current pointer names a
    /// document an earlier one descends from, or one older than the
    /// newest seen: a pointer never goes backwards within a run.
    #[serde(default)]
    pub prior_pointers: Vec<String>,
    /// The keys a ledger deleted, or may have (its
    /// [`crate::Ledger::deleted_index`]): one the final keep set references
    /// that the listing did not hold is damage, named in the plan
    /// ([`SealedPlan::damaged`]) for the ledger to record.
    #[serde(default)]
    pub deleted_index: Option<Vec<u8>>,
}

fn default_budget() -> u64 {
    DEFAULT_MEMORY_BUDGET
}

impl SessionConfig {
    /// A config with the defaults: keep DELETED entries, no short window, no mappings.
    pub fn new(
        table_location: &str,
        metadata_location: &str,
        now_ms: i64,
        file_retention_ms: i64,
    ) -> Self {
        SessionConfig {
            table_location: table_location.to_owned(),
            format: TableFormat::Iceberg,
            metadata_location: metadata_location.to_owned(),
            now_ms,
            file_retention_ms: Some(file_retention_ms),
            keep_deleted_entries: true,
            allow_short_retention: false,
            location_map: Vec::new(),
            policy: None,
            context: None,
            keep_versions: Vec::new(),
            log_cleanup: false,
            pointer_authoritative: false,
            memory_budget_bytes: DEFAULT_MEMORY_BUDGET,
            origin: None,
            foreign_roots: Vec::new(),
            prior_pointers: Vec::new(),
            deleted_index: None,
        }
    }
}

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

/// Count and bytes of a class of objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Number of objects.
    pub count: u64,
    /// Their total size in bytes.
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, size: u64) {
        self.count = self.count.saturating_add(1);
        self.bytes = self.bytes.saturating_add(size);
    }
    fn sub(&mut self, size: u64) {
        self.count = self.count.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(size);
    }
}

/// What the session saw and decided, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Every listed object.
    pub listed: Tally,
    /// Final tallies by verdict name (`referenced`, `young`, `candidate`, ...).
    pub verdicts: BTreeMap<String, Tally>,
    /// Candidates by object kind (`data`, `manifest`, `metadata-json`, ...).
    pub reclaimable: BTreeMap<String, Tally>,
    /// Snapshots of the metadata document the plan was judged on (Delta:
    /// the versions kept, the newest and every one kept on purpose).
    pub snapshots: u64,
    /// Snapshots whose files are kept besides those: of a document the
    /// pointer named earlier in the run, or of a disaster-recovery
    /// checkpoint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub snapshots_elsewhere: u64,
    /// Manifest lists and manifests read.
    pub manifests_read: u64,
    /// Distinct referenced keys inside the location.
    pub referenced_keys: u64,
    /// Referenced paths outside the location (never deletable, not listed).
    pub external_references: u64,
    /// Heap bytes of the frozen keep-set index (fingerprints and reasons), in
    /// bytes: what the planner's memory grows with.
    pub keep_set_bytes: u64,
    /// Referenced keys that the listing did not contain (missing files or a
    /// partial listing): worth investigating, never deleted by us.
    pub referenced_not_listed: u64,
    /// Listed objects settled by their names alone
    /// ([`Session::handle_names`]): every one referenced, counted in
    /// `listed` and the `referenced` tally without bytes (their sizes were
    /// never read), so those tallies' bytes are a lower bound when this is
    /// not zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub listed_by_name: u64,
    /// Times the pointer moved during the session and was re-checked.
    pub rechecks: u32,
    /// The session's memory budget, in bytes.
    #[serde(default)]
    pub memory_budget_bytes: u64,
    /// Every prefix listed and swept: the table location's, then the
    /// table's other write roots (`write.data.path`, ...) outside it.
    #[serde(default)]
    pub swept_prefixes: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The state a plan was judged on. A plan may only be applied while these still hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTokens {
    /// The metadata document the final keep set was built from.
    pub metadata_location: String,
    /// SHA-256 (hex) over the sorted `name=snapshot-id` lines of every ref.
    pub refs_digest: String,
    /// The refs themselves.
    pub refs: BTreeMap<String, i64>,
    /// Evaluation time, milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// File-retention window, milliseconds.
    pub file_retention_ms: i64,
    /// Whether files of DELETED entries were kept.
    pub keep_deleted_entries: bool,
    /// Digest of the retention policy the plan was made under, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_digest: Option<String>,
    /// Newest legal-hold generation in the context (0: none); a hold with a
    /// newer generation makes the plan stale.
    #[serde(default)]
    pub hold_generation: u64,
    /// Newest reader generation among the context's leases (0: none); a
    /// lease registered after the plan raises it and blocks approval.
    #[serde(default)]
    pub lease_watermark: u64,
    /// Digest of the whole context the plan was made under (see
    /// [`crate::Context::digest`]); approval compares it with the live one.
    #[serde(default)]
    pub context_digest: String,
    /// Delta: the newest commit's identity (size, time, ETag) as listed. A
    /// commit file rewritten under the same version (an empty file whose
    /// content arrived later) is a different table generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<crate::version::ObjectVersion>,
    /// The policy's restore-drill gate, if it has one: approval needs a
    /// recent passed drill in the ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_drill: Option<crate::policy::DrillGate>,
    /// SHA-256 (hex) of the deleted-keys index the plan was checked
    /// against (see [`SessionConfig::deleted_index`]); a ledger folds in
    /// only a plan checked against its own index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_index: Option<String>,
}

/// One object the plan deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedDelete {
    /// Key relative to the table location.
    pub key: String,
    /// Size in bytes, as listed.
    pub size: u64,
    /// Last-modified time as listed, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// Entity tag as listed, if any.
    pub etag: Option<String>,
    /// Version id as listed, if any.
    pub version_id: Option<String>,
}

/// The outcome of a session: the exact objects to delete, sealed with a
/// digest over them and the tokens they were judged on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedPlan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: String,
    /// Table format.
    pub format: TableFormat,
    /// Canonical table location (no trailing slash).
    pub table_location: String,
    /// The table's UUID, when the metadata has one.
    pub table_uuid: Option<String>,
    /// The state the plan was judged on.
    pub tokens: PlanTokens,
    /// How the plan was made (the host's document, see
    /// [`SessionConfig::origin`]); sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Objects to delete, sorted by key.
    pub delete: Vec<PlannedDelete>,
    /// Counts and bytes.
    pub summary: Summary,
    /// Things an operator should look at (sorted, deduplicated); sealed.
    pub warnings: Vec<String>,
    /// Keys a ledger deleted that the table references now and the
    /// listing did not hold (see [`SessionConfig::deleted_index`]); sealed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<DamagedReference>,
    /// SHA-256 (hex) over the canonical JSON of schema, format, location,
    /// uuid, tokens, origin, the delete list, the warnings and the damage.
    /// The summary is a report of what was seen (it differs with how the
    /// host listed: names first or not) and is not sealed.
    pub digest: String,
    /// What the plan keeps and why, for people (see [`SealedPlan::with_report`]):
    /// outside the seal, ignored when the plan is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<PlanReport>,
}

/// A key a ledger deleted (or may have) that the table references now and
/// the listing did not hold: damage. Named by its fingerprint; the ledger
/// that passed the index knows the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DamagedReference {
    /// The key's fingerprint, 16 hex digits.
    pub fingerprint: String,
    /// What references it now, in words.
    pub reason: String,
}

/// The version a delete candidate was listed at (its key is the map's).
#[derive(Debug, Clone)]
struct Pinned {
    size: u64,
    last_modified_ms: i64,
    etag: Option<String>,
    version_id: Option<String>,
}

impl Pinned {
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

/// An object a plan keeps, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptObject {
    /// Key relative to the table location.
    pub key: String,
    /// Its verdict.
    pub reason: Verdict,
    /// Why, in words.
    pub detail: String,
    /// Size in bytes, as listed.
    pub size: u64,
}

/// The part of a plan document written for people: every listed object
/// the plan neither deletes nor finds referenced, with its verdict and why
/// (young, protected, near-miss, hidden, ...), and what the host could not
/// hand to the planner. Referenced objects, the table's live data, are
/// counted in the summary (`explain` gives one's references): listing them
/// all would grow the document with the table. Not sealed: the seal covers
/// what is deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// Kept objects, sorted by key.
    pub keep: Vec<KeptObject>,
    /// Listed names the host cannot represent (never given to the planner,
    /// so never deleted), as the store spelled them.
    pub unrepresentable: Vec<String>,
    /// What the host's store client had to say (a fallback it took).
    pub store_notes: Vec<String>,
}

impl SealedPlan {
    /// The digest the plan should carry, recomputed from its content.
    pub fn compute_digest(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Sealed<'a> {
            schema: &'a str,
            format: TableFormat,
            table_location: &'a str,
            table_uuid: &'a Option<String>,
            tokens: &'a PlanTokens,
            #[serde(skip_serializing_if = "Option::is_none")]
            origin: &'a Option<String>,
            delete: &'a [PlannedDelete],
            warnings: &'a [String],
            #[serde(skip_serializing_if = "<[DamagedReference]>::is_empty")]
            damaged: &'a [DamagedReference],
        }
        // Hashed as it is written: a plan of a million deletes is never
        // held twice.
        let mut h = crate::digest::HashWriter::default();
        // Writing into a hash cannot fail, nor can these types fail to
        // serialise.
        let _ = serde_json::to_writer(
            &mut h,
            &Sealed {
                schema: &self.schema,
                format: self.format,
                table_location: &self.table_location,
                table_uuid: &self.table_uuid,
                tokens: &self.tokens,
                origin: &self.origin,
                delete: &self.delete,
                warnings: &self.warnings,
                damaged: &self.damaged,
            },
        );
        h.hex()
    }

    /// This plan with its report: of `decisions` (the session's, in the
    /// order drained: a later one for a key replaces an earlier one), every
    /// key the plan does not delete and whose last verdict is not
    /// `referenced`, with its verdict and why; and the host's
    /// `unrepresentable` names and `store_notes`. So the human report, the
    /// JSON and the sealed list are one document: kept and deleted never
    /// overlap. The digest is unchanged.
    pub fn with_report(
        mut self,
        decisions: Vec<Decision>,
        unrepresentable: Vec<String>,
        store_notes: Vec<String>,
    ) -> SealedPlan {
        let deleted: std::collections::BTreeSet<&str> =
            self.delete.iter().map(|d| d.key.as_str()).collect();
        let mut last: BTreeMap<String, Decision> = BTreeMap::new();
        for d in decisions {
            last.insert(d.relative_key.clone(), d);
        }
        let keep = last
            .into_values()
            .filter(|d| {
                d.verdict != Verdict::Referenced && !deleted.contains(d.relative_key.as_str())
            })
            .map(|d| KeptObject {
                key: d.relative_key,
                reason: d.verdict,
                detail: d.detail,
                size: d.size,
            })
            .collect();
        self.report = Some(PlanReport {
            keep,
            unrepresentable,
            store_notes,
        });
        self
    }

    /// Canonical JSON text of the plan (compact, fields in declaration order).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a plan document and checks its digest; an edited plan is refused.
    pub fn from_json(text: &str) -> Result<SealedPlan> {
        // The schema alone (the rest skipped, never built as a tree).
        #[derive(Deserialize)]
        struct SchemaOnly {
            schema: Option<String>,
        }
        let schema = serde_json::from_str::<SchemaOnly>(text)
            .ok()
            .and_then(|v| v.schema);
        if let Some(old @ ("lakesweep.plan.v1" | "lakesweep.plan.v2")) = schema.as_deref() {
            return Err(Error::invalid(
                "plan",
                format!("a plan made by an earlier lakesweep ({old}, which sealed less): plan again; a plan only holds while its table is unchanged anyway"),
            ));
        }

        let plan: SealedPlan = serde_json::from_str(text)
            .map_err(|e| Error::invalid("plan", format!("not a lakesweep plan: {e}")))?;
        if plan.schema != PLAN_SCHEMA {
            return Err(Error::invalid(
                "plan",
                format!("unknown plan schema `{}`", plan.schema),
            ));
        }
        if plan.compute_digest() != plan.digest {
            return Err(Error::invalid(
                "plan",
                "digest does not match the content (edited or damaged plan)",
            ));
        }
        Ok(plan)
    }
}

/// The pointer as every comparison sees it: `raw` rewritten by `mappings`
/// and made canonical (Iceberg), exactly as a session started with it would
/// read it. Delta pointers name the newest commit and are only made
/// canonical. Hosts use this instead of comparing spellings themselves.
pub fn canonical_pointer(raw: &str, mappings: &[PathMapping]) -> Result<String> {
    CanonicalUri::parse(&apply_mappings(raw, mappings))
        .map(|c| c.to_uri_string())
        .map_err(|e| Error::invalid("metadata_location", e))
}

/// The file-retention window a session judges by, in milliseconds: the
/// one given, lengthened to the policy's `orphanSafetyInterval`; without
/// one, the policy's interval, else the format's default (see
/// [`TableFormat::default_file_retention_ms`]). Every host gets this one
/// rule: hosts hold no durations.
pub fn window(given: Option<i64>, policy: Option<&crate::Policy>, format: TableFormat) -> i64 {
    let interval = policy.map(|p| p.file_retention.orphan_safety_interval.0);
    match (given, interval) {
        (Some(w), Some(i)) => w.max(i),
        (Some(w), None) => w,
        (None, Some(i)) => i,
        (None, None) => format.default_file_retention_ms(),
    }
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

#[derive(Debug, Clone)]
enum Purpose {
    /// A `_delta_log/` file; `order` sorts replay (0 checkpoint and its
    /// sidecars, 1 a commit before the checkpoint, 2 a commit after it).
    DeltaLog {
        order: (u8, u64),
    },
    /// The commit after the newest one replayed (re-check; missing = none).
    DeltaNextCommit {
        version: u64,
    },
    /// The document a pointer read named; `read`: that read's order in
    /// the run (prior pointers first, then the session's own reads).
    Metadata {
        read: u32,
    },
    /// A document an earlier read of the run named (see
    /// [`SessionConfig::prior_pointers`]), read to compare.
    PriorPointer {
        read: u32,
    },
    DrMetadata,
    ManifestList {
        snapshot_id: i64,
    },
    Manifest {
        expected_len: Option<u64>,
        /// The manifest's `added_snapshot_id` (entries with a null
        /// `snapshot_id` inherit it).
        added_by: Option<i64>,
    },
    OwnerCheck {
        obj: ListedObject,
        rel: String,
    },
}

/// Where a session stands; each phase carries what only it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Delta: listing `_delta_log/` before anything is read.
    LogListing,
    /// Reading blobs. `recheck`: the pointer moved; once the new snapshots
    /// are read, their files demote candidates and the pointer is read again.
    Reading { recheck: bool },
    /// Listing a prefix; `last_page_seen`: its last page was handled.
    Listing { last_page_seen: bool },
    /// Waiting for the pointer (Delta: the next commit) to be read again.
    AwaitPointer,
    /// The plan can be sealed.
    Done,
    /// The session failed: it plans nothing, and every later call says why.
    Failed(Error),
}

/// How many examples a warning names of a kind of reference.
const SAMPLES: usize = 5;

/// Examples of references the plan warns about: the smallest few, so the
/// warnings (which the plan's digest seals) do not depend on the order the
/// host answered reads in.
#[derive(Debug, Default)]
struct Samples {
    /// References that may name several keys, with how many.
    ambiguous: BTreeSet<(String, usize)>,
    /// References outside the table.
    external: BTreeSet<String>,
}

/// Adds `item` to `set`, keeping only the `n` smallest.
fn keep_smallest<T: Ord>(set: &mut BTreeSet<T>, item: T, n: usize) {
    set.insert(item);
    if set.len() > n {
        set.pop_last();
    }
}

/// Role name of content files in the metadata graph.
const CONTENT_FILE: &str = "content file";

/// The role a source gives a path in the metadata graph, if any.
fn graph_role(source: &Source) -> Option<&'static str> {
    match source {
        Source::CurrentMetadata | Source::MetadataLog | Source::DrCheckpoint => {
            Some("table metadata file")
        }
        Source::ManifestList { .. } => Some("manifest list"),
        Source::Manifest { .. } => Some("manifest"),
        Source::ContentFile { .. } => Some(CONTENT_FILE),
        _ => None,
    }
}

/// A planning session for one table. See the module docs for the flow.
#[derive(Debug)]
pub struct Session {
    /// The parsed retention policy, if any.
    policy: Option<crate::Policy>,
    config: SessionConfig,
    classifier: Classifier,
    phase: Phase,
    outbox: VecDeque<Request>,
    decisions: Vec<Decision>,
    pending: HashMap<String, Purpose>,
    requested: HashSet<String>,
    /// The delete candidates so far, by relative key.
    candidates: BTreeMap<String, Pinned>,
    /// Set once [`Session::seal`] took the candidates: the session can
    /// seal nothing more.
    sealed: bool,
    summary: Summary,
    warnings: BTreeSet<String>,
    /// What the table can still read: Iceberg snapshot ids, or Delta
    /// versions (the checkpoint's up to the newest); leases, holds and DR
    /// checkpoints must name one of them.
    readable: BTreeSet<i64>,
    metadata_location: String,
    refs: BTreeMap<String, i64>,
    matched: u64,
    rechecks: u32,
    /// The format's own half of the session and its state.
    machine: Machine,
    /// Other write roots listed so far (after the table's own listing).
    roots_listed: usize,
    /// Per path-prefix legal hold: listed keys under it exactly, and keys
    /// under it only up to spelling (protected as near-misses).
    hold_hits: BTreeMap<String, (u64, u64)>,
    /// Blobs of the metadata graph outside the table, by canonical URI, with
    /// their role (those inside are in the keep set with their reason).
    graph: HashMap<String, &'static str>,
    /// Keys kept only as one of several keys an ambiguous reference may name.
    alt_only: crate::hashing::Set<String>,
    /// Keys of ambiguous references that may all lie inside the table.
    groups: BTreeSet<Vec<String>>,
    /// Every key of an ambiguous reference.
    group_members: HashSet<String>,
    /// Keys of ambiguous references that the listing held.
    listed_members: crate::hashing::Set<String>,
    /// Listed keys that are only alternatives of ambiguous references.
    matched_alt: u64,
    /// References that may name more than one key.
    ambiguous_references: u64,
    /// The references the plan's warnings name as examples.
    samples: Samples,
    /// Fingerprints of the keys a ledger deleted (see
    /// [`SessionConfig::deleted_index`]).
    deleted: crate::hashing::Set<u64>,
    /// Of those, the ones the listing held as referenced keys.
    deleted_listed: crate::hashing::Set<u64>,
    /// Prefixes other tables own (see [`SessionConfig::foreign_roots`]).
    foreign: Vec<(TableLocation, String)>,
    /// Pointer reads of the run so far, prior ones included.
    pointer_reads: u32,
}

/// The format's own half of a session: Iceberg's snapshot walk or Delta's
/// log replay, each with the state only it needs. A half never reaches
/// into the session: its steps take what they need and return what to
/// keep, read and warn (`delta::KeepPath`, `delta::Cleanup`,
/// `iceberg::ManifestRead`, ...), and the session applies it.
#[derive(Debug)]
enum Machine {
    /// An Iceberg table: metadata, manifest lists, manifests.
    Iceberg(Box<iceberg::IcebergSweep>),
    /// A Delta table: the log listing, checkpoint and commits.
    Delta(Box<delta::DeltaSweep>),
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
            CanonicalUri::parse(&apply_mappings(
                &config.metadata_location,
                &config.location_map,
            ))
            .map_err(|e| Error::invalid("metadata_location", e))?
            .to_uri_string()
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
        let mut s = Session {
            policy,
            config,
            classifier,
            phase: Phase::Reading { recheck: false },
            outbox: VecDeque::new(),
            decisions: Vec::new(),
            pending: HashMap::new(),
            requested: HashSet::new(),
            candidates: BTreeMap::new(),
            sealed: false,
            summary: Summary::default(),
            warnings: BTreeSet::new(),
            readable: BTreeSet::new(),
            metadata_location: pointer.clone(),
            refs: BTreeMap::new(),
            matched: 0,
            rechecks: 0,
            machine: Machine::Iceberg(Box::default()),
            roots_listed: 0,
            hold_hits: BTreeMap::new(),
            graph: HashMap::new(),
            alt_only: Default::default(),
            groups: BTreeSet::new(),
            group_members: HashSet::new(),
            listed_members: Default::default(),
            matched_alt: 0,
            ambiguous_references: 0,
            samples: Samples::default(),
            deleted,
            deleted_listed: Default::default(),
            foreign,
            pointer_reads: u32::try_from(config_priors).unwrap_or(u32::MAX),
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
                    s.request_read(prior, Purpose::PriorPointer { read });
                }
            }
            let read = s.next_pointer_read();
            s.request_read(pointer, Purpose::Metadata { read });
        }
        Ok(s)
    }

    /// The next request for the host, if any. Requests may be served in any order.
    pub fn poll_request(&mut self) -> Option<Request> {
        if matches!(self.phase, Phase::Failed(_)) {
            return None;
        }
        self.outbox.pop_front()
    }

    /// Decisions made since the last call (per page; demotions after a re-check).
    pub fn drain_decisions(&mut self) -> Vec<Decision> {
        std::mem::take(&mut self.decisions)
    }

    /// True once the plan can be sealed with [`Session::finish`].
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Answers a `ReadBlob` request with the object's bytes.
    pub fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<()> {
        self.guard(|s| {
            let purpose = s.take_pending(&uri)?;
            s.check_budget(&uri, &purpose, &bytes)?;
            s.process_blob(&uri, purpose, Some(&bytes))?;
            s.advance()
        })
    }

    /// Whether the read of `uri` asked for now is of an Iceberg manifest:
    /// such a read may be answered with [`Session::handle_manifest_digest`]
    /// (the manifest digested elsewhere by [`digest_manifest`]) instead of
    /// its bytes.
    pub fn is_manifest_read(&self, uri: &str) -> bool {
        matches!(self.pending.get(uri), Some(Purpose::Manifest { .. }))
    }

    /// Answers the `ReadBlob` request of a manifest with its digest, made by
    /// [`digest_manifest`] from the bytes read at `uri`: checked and counted
    /// by the code that checks and counts the bytes in
    /// [`Session::handle_blob`] (the length the manifest list names, the
    /// snapshot summaries), so the plan is the same. The memory budget is
    /// charged for the digest, which is what the session decodes. Fails (protocol) for a read that is not a manifest's, a
    /// digest of another URI or one that does not decode.
    pub fn handle_manifest_digest(&mut self, uri: String, digest: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.take_pending(&uri)?;
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
            let d = manifest_digest::ManifestDigest::decode(&digest)?;
            made_from(&uri, &d.uri)?;
            s.summary.manifests_read += 1;
            let read = iceberg::read_manifest_digest(
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
    /// digested elsewhere by [`digest_checkpoint`]) instead of its bytes.
    pub fn is_checkpoint_read(&self, uri: &str) -> bool {
        match self.pending.get(uri) {
            Some(Purpose::DeltaLog { order }) => self.delta_is_checkpoint_read(uri, *order),
            _ => false,
        }
    }

    /// Answers the `ReadBlob` request of a Delta checkpoint file with its
    /// digest, made by [`digest_checkpoint`] from the bytes read at `uri`:
    /// its length is checked against the log listing and its actions
    /// applied by the code that applies the bytes' in
    /// [`Session::handle_blob`], so the plan is the same. The memory
    /// budget is charged for the digest. Fails (protocol) for a read that
    /// is not a checkpoint file's, a digest of another URI or one that
    /// does not decode; (malformed) like the bytes, e.g. a file shorter
    /// than the listing said.
    pub fn handle_checkpoint_digest(&mut self, uri: String, digest: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.take_pending(&uri)?;
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
            let d = checkpoint_digest::CheckpointDigest::decode(&digest)?;
            made_from(&uri, &d.uri)?;
            s.delta_log_digest(&uri, order, d)?;
            s.advance()
        })
    }

    /// Answers a `ReadBlob` request: the object does not exist. For anything
    /// the keep set needs, this stops the plan ("not found" is never "no files").
    pub fn handle_missing(&mut self, uri: String) -> Result<()> {
        self.guard(|s| {
            let purpose = s.take_pending(&uri)?;
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
            if s.phase == Phase::LogListing {
                s.delta_log_page(objects, is_last)?;
                return s.advance();
            }
            if s.phase
                != (Phase::Listing {
                    last_page_seen: false,
                })
            {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "listing page sent when no listing was requested (or after the last page)",
                ));
            }
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
                        if s.pending.contains_key(&uri) {
                            return Err(Error::protocol(
                                ProtocolReason::BadKey,
                                format!("key `{}` listed twice", obj.key),
                            ));
                        }
                        s.request_read(
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
                s.phase = Phase::Listing {
                    last_page_seen: true,
                };
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
            if s.phase == Phase::LogListing {
                needed = (0..count).collect();
                return Ok(());
            }
            if s.phase
                != (Phase::Listing {
                    last_page_seen: false,
                })
            {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "listed names sent when no table listing was requested (or after its last page)",
                ));
            }
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
            if s.phase != Phase::AwaitPointer {
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
                s.phase = Phase::Done;
                return Ok(());
            }
            s.rechecks += 1;
            if s.rechecks > MAX_RECHECKS {
                return Err(Error::unsafe_(
                    UnsafeReason::TableChanging,
                    format!("the pointer moved {} times during one sweep", s.rechecks),
                ));
            }
            s.metadata_location = loc.clone();
            s.phase = Phase::Reading { recheck: true };
            let read = s.next_pointer_read();
            s.request_read(loc, Purpose::Metadata { read });
            Ok(())
        })
    }

    /// The bytes of [`Session::export_keep_set`] from `offset`, at most
    /// `length` of them (none past the end), for hosts whose bindings
    /// cannot take a large list back in one call. Fails as
    /// `export_keep_set` does.
    pub fn export_keep_set_range(&self, offset: u64, length: u32) -> Result<Vec<u8>> {
        let all = self.export_keep_set()?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(all.len());
        let end = start.saturating_add(length as usize).min(all.len());
        Ok(all[start..end].to_vec())
    }

    /// Exports the finished keep set (plus the options verdicts depend on) for
    /// the stateless page mode. Available once the listing was requested.
    pub fn export_keep_set(&self) -> Result<Vec<u8>> {
        if let Phase::Failed(e) = &self.phase {
            return Err(e.clone());
        }
        if !self.listing_requested() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the keep set is not complete yet",
            ));
        }
        crate::page::export(&self.classifier, &self.metadata_location)
    }

    fn listing_requested(&self) -> bool {
        matches!(
            self.phase,
            Phase::Listing { .. }
                | Phase::AwaitPointer
                | Phase::Done
                | Phase::Reading { recheck: true }
        )
    }

    /// Seals the plan. Fails unless the session is done (or once
    /// [`Session::seal`] took its candidates).
    pub fn finish(&self) -> Result<SealedPlan> {
        self.ready_to_seal()?;
        let delete = self
            .candidates
            .iter()
            .map(|(k, p)| p.clone().planned(k.clone()))
            .collect();
        self.sealed_with(delete)
    }

    /// Seals the plan, moving the candidates into it rather than copying
    /// them (a plan of a million deletes is held once): the session seals
    /// nothing after this. Fails like [`Session::finish`].
    pub fn seal(&mut self) -> Result<SealedPlan> {
        self.ready_to_seal()?;
        let delete = std::mem::take(&mut self.candidates)
            .into_iter()
            .map(|(k, p)| p.planned(k))
            .collect();
        self.sealed = true;
        self.sealed_with(delete)
    }

    fn ready_to_seal(&self) -> Result<()> {
        if let Phase::Failed(e) = &self.phase {
            return Err(e.clone());
        }
        if self.phase != Phase::Done {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "finish called before the session was done",
            ));
        }
        if self.sealed {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the plan was sealed already (its candidates went into it)",
            ));
        }
        Ok(())
    }

    /// The sealed plan deleting `delete` (sorted by key).
    fn sealed_with(&self, delete: Vec<PlannedDelete>) -> Result<SealedPlan> {
        let mut summary = self.summary.clone();
        summary.snapshots = match self.delta() {
            // The latest version and every version kept on purpose.
            Some(d) => 1 + d.kept_versions(),
            None => self.iceberg().map_or(0, |i| i.pointer_snapshots),
        };
        if self.delta().is_none() {
            summary.snapshots_elsewhere =
                (self.readable.len() as u64).saturating_sub(summary.snapshots);
        }
        summary.referenced_keys = self.classifier.keep.len() as u64;
        summary.keep_set_bytes = self.classifier.keep.index_bytes() as u64;
        // A key kept only as one reading of an ambiguous reference is not
        // missing when another reading was listed: count references, not keys.
        let unlisted_groups = self
            .groups
            .iter()
            .filter(|g| !g.iter().any(|k| self.listed_members.contains(k)))
            .count() as u64;
        summary.referenced_not_listed = summary
            .referenced_keys
            .saturating_sub(self.alt_only.len() as u64)
            .saturating_sub(self.matched)
            + unlisted_groups;
        summary.rechecks = self.rechecks;
        summary.memory_budget_bytes = self.config.memory_budget_bytes;
        summary.swept_prefixes = std::iter::once(self.classifier.location.prefix())
            .chain(self.classifier.roots.iter().map(TableLocation::prefix))
            .collect();
        let mut warnings = self.warnings.clone();
        for (raw, n) in &self.samples.ambiguous {
            warnings.insert(format!(
                "reference `{raw}` may name {n} keys depending on the reader (dot segments, repeated slashes, a default file system): every one inside the table is kept"
            ));
        }
        for uri in &self.samples.external {
            warnings.insert(format!("external reference kept and never deleted: {uri}"));
        }
        let max_writer = self
            .policy
            .as_ref()
            .and_then(|p| p.file_retention.max_writer_duration)
            .map(|d| d.0);
        warnings.extend(
            self.classifier
                .protections
                .stale_writers(self.config.now_ms, max_writer),
        );
        for h in &self.classifier.protections.holds {
            if let crate::context::HoldScope::PathPrefix(p) = &h.scope {
                match self.hold_hits.get(p).copied().unwrap_or_default() {
                    (0, 0) => {
                        warnings.insert(format!(
                            "legal hold on `{p}` matches no listed key: check its spelling (letter case, slashes) and the table it was meant for"
                        ));
                    }
                    (0, near) => {
                        warnings.insert(format!(
                            "legal hold on `{p}` matches no listed key exactly; {near} keys equal to it up to letter case, encoding or doubled slashes are kept as near-misses: correct the hold"
                        ));
                    }
                    _ => {}
                }
            }
        }
        let unchecked = self.iceberg().map_or(0, |i| i.unchecked_summaries);
        if unchecked > 0 {
            warnings.insert(format!(
                "{unchecked} snapshots record no totals in their summary (total-data-files, total-delete-files): a manifest list of theirs cut at an Avro block boundary could not be told from a shorter one"
            ));
        }
        if summary.referenced_not_listed > 0 {
            warnings.insert(format!(
                "{} referenced objects were not in the listing: the table references files that do not exist (or the listing was incomplete)",
                summary.referenced_not_listed
            ));
        }
        let refs_text: String = self
            .refs
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        let mut plan = SealedPlan {
            schema: PLAN_SCHEMA.into(),
            format: self.config.format,
            table_location: self.classifier.location.as_uri(),
            table_uuid: self.classifier.table_uuid.clone(),
            tokens: PlanTokens {
                metadata_location: self.metadata_location.clone(),
                refs_digest: hex(&Sha256::digest(refs_text.as_bytes())),
                refs: self.refs.clone(),
                now_ms: self.config.now_ms,
                file_retention_ms: self.classifier.file_retention_ms,
                keep_deleted_entries: self.config.keep_deleted_entries,
                policy_digest: self.policy.as_ref().map(crate::Policy::digest),
                restore_drill: self
                    .policy
                    .as_ref()
                    .and_then(|p| p.restore_drill.as_ref().map(|d| d.gate())),
                hold_generation: self.classifier.protections.hold_generation(),
                lease_watermark: self.classifier.protections.lease_watermark(),
                context_digest: self.classifier.protections.digest(),
                head: self.delta().and_then(|d| d.head_identity()),
                deleted_index: self
                    .config
                    .deleted_index
                    .as_deref()
                    .map(|b| hex(&Sha256::digest(b))),
            },

            origin: self.config.origin.clone(),
            delete,
            summary,
            warnings: warnings.into_iter().collect(),
            damaged: self.damaged(),
            digest: String::new(),
            report: None,
        };
        plan.digest = plan.compute_digest();
        Ok(plan)
    }

    fn guard(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        if let Phase::Failed(e) = &self.phase {
            return Err(e.clone());
        }
        let r = f(self);
        if let Err(e) = &r {
            self.phase = Phase::Failed(e.clone());
            self.outbox.clear();
            self.candidates.clear();
        }
        r
    }

    /// Every snapshot or ref the context protects must be one the keep set
    /// covers; otherwise its files cannot be told apart from garbage.
    fn check_protections(&self) -> Result<()> {
        // Delta speaks of versions, Iceberg of snapshots.
        let noun = if self.delta().is_some() {
            "version"
        } else {
            "snapshot"
        };
        use crate::context::{DrCheckpoint, HoldScope};
        let ctx = &self.classifier.protections;
        let now = self.config.now_ms;
        let missing = |what: String| {
            Err(Error::unsafe_(
                UnsafeReason::ProtectedSnapshotMissing,
                format!("{what}, which the table no longer has: its files cannot be identified, nothing is deleted"),
            ))
        };
        for l in ctx.leases.iter().filter(|l| l.expires_at_ms > now) {
            if !self.readable.contains(&l.snapshot_id) {
                return missing(format!(
                    "a live lease of {} protects {noun} {}",
                    l.owner, l.snapshot_id
                ));
            }
        }
        for h in &ctx.holds {
            match &h.scope {
                HoldScope::Snapshot(id) if !self.readable.contains(id) => {
                    return missing(format!("a legal hold protects {noun} {id}"));
                }
                HoldScope::Ref(r) if !self.refs.contains_key(r) => {
                    return missing(format!("a legal hold protects ref `{r}`"));
                }
                _ => {}
            }
        }
        for d in &ctx.dr_checkpoints {
            if let DrCheckpoint::SnapshotId(id) = d {
                if !self.readable.contains(id) {
                    return missing(format!("a DR checkpoint names {noun} {id}"));
                }
            }
        }
        Ok(())
    }

    /// The keys a ledger deleted that the final keep set references and
    /// the listing did not hold, by fingerprint, ascending.
    fn damaged(&self) -> Vec<DamagedReference> {
        let mut out: Vec<DamagedReference> = self
            .deleted
            .iter()
            .filter(|fp| !self.deleted_listed.contains(*fp))
            .filter_map(|fp| {
                let why = self.classifier.keep.reason_of_fingerprint(*fp)?;
                Some(DamagedReference {
                    fingerprint: format!("{fp:016x}"),
                    reason: why.to_owned(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        out
    }

    /// Delta's state, in a Delta session.
    fn delta(&self) -> Option<&delta::DeltaSweep> {
        match &self.machine {
            Machine::Delta(d) => Some(d),
            Machine::Iceberg(_) => None,
        }
    }

    /// Delta's state, in a Delta session.
    fn delta_mut(&mut self) -> Option<&mut delta::DeltaSweep> {
        match &mut self.machine {
            Machine::Delta(d) => Some(d),
            Machine::Iceberg(_) => None,
        }
    }

    /// Iceberg's state, in an Iceberg session.
    fn iceberg(&self) -> Option<&iceberg::IcebergSweep> {
        match &self.machine {
            Machine::Iceberg(i) => Some(i),
            Machine::Delta(_) => None,
        }
    }

    /// Iceberg's state; a protocol error in a Delta session.
    fn ice(&mut self) -> Result<&mut iceberg::IcebergSweep> {
        match &mut self.machine {
            Machine::Iceberg(i) => Ok(i),
            Machine::Delta(_) => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "Iceberg state used on a Delta session",
            )),
        }
    }

    fn take_pending(&mut self, uri: &str) -> Result<Purpose> {
        self.pending.remove(uri).ok_or_else(|| {
            Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("answer for `{uri}`, which was never requested or was answered already"),
            )
        })
    }

    fn request_read(&mut self, uri: String, purpose: Purpose) {
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
        for h in &self.classifier.protections.holds {
            if let crate::context::HoldScope::PathPrefix(p) = &h.scope {
                let hits = self.hold_hits.entry(p.clone()).or_default();
                if rel.starts_with(p.as_str()) {
                    hits.0 += 1;
                } else if crate::context::loosely_under(rel, p) {
                    hits.1 += 1;
                }
            }
        }
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
            if self.alt_only.contains(rel) {
                self.matched_alt += 1;
            } else {
                self.matched += 1;
            }
            if self.group_members.contains(rel) {
                self.listed_members.insert(rel.to_owned());
            }
        }
    }

    /// Canonicalises a path from metadata and records it in the keep set.
    fn reference(&mut self, blob: &str, raw: &str, source: Source) -> Result<()> {
        if let Some(rel) = self.plain_key(raw) {
            return self.keep_plain(blob, raw, rel, source);
        }
        let (mapped, spelled) = self.map_reference(raw);
        self.reference_all(blob, raw, &mapped, &spelled, source)
            .map(|_| ())
    }

    /// Keeps `rel`, a key [`Session::is_plain`] accepts, named as `raw` in
    /// `blob`: the common case, with exactly the effects `reference_all`
    /// has on it (one spelling, inside the table, its own loose form).
    fn keep_plain(&mut self, blob: &str, raw: &str, rel: &str, source: Source) -> Result<()> {
        self.check_graph(blob, raw, &[rel], &[], &source)?;
        self.classifier.keep.insert(rel, source);
        if !self.alt_only.is_empty()
            && self.alt_only.remove(rel)
            && self.listed_members.contains(rel)
        {
            self.matched += 1;
            self.matched_alt = self.matched_alt.saturating_sub(1);
        }
        Ok(())
    }

    /// `raw`'s key when it needs none of [`Session::reference_all`]'s
    /// work: `raw` is spelled as the canonical location prefix plus a key
    /// [`Session::is_plain`] accepts.
    fn plain_key<'a>(&self, raw: &'a str) -> Option<&'a str> {
        let rel = self.classifier.location.relative_text(raw)?;
        self.is_plain(rel).then_some(rel)
    }

    /// True when the key `rel` (relative to the table) is the only object
    /// its reference can name: no location maps are set, and `rel` is a
    /// plain key ([`crate::path::is_plain_key`]), its own only spelling and
    /// its own loose form (so no loose fingerprint is added, as
    /// `reference_all` adds none).
    fn is_plain(&self, rel: &str) -> bool {
        // A location with dot or empty segments has other spellings itself
        // (refused at the start; checked again here, where it would matter).
        self.config.location_map.is_empty()
            && self.classifier.location.has_plain_path()
            && crate::path::is_plain_key(rel)
    }

    /// Maps a reference: the mapped text, and (when the reference has other
    /// spellings and mappings are set) every spelling mapped on its own, so
    /// a mapping matches the resolved form (`s3://old/x/../t/p` under a
    /// mapping of `s3://old/t`) and nothing is mapped twice.
    fn map_reference(&self, raw: &str) -> (String, Vec<String>) {
        let maps = &self.config.location_map;
        let mapped = apply_mappings(raw, maps);
        let spelled = match CanonicalUri::parse(raw) {
            Ok(c) if !maps.is_empty() && crate::path::needs_spellings(&c) => {
                crate::path::spellings(&c)
                    .iter()
                    .map(|s| apply_mappings(&s.to_uri_string(), maps))
                    .collect()
            }
            _ => Vec::new(),
        };
        (mapped, spelled)
    }

    /// Records a path that is already mapped (the pointer: mapping it twice
    /// would break mappings whose target lies under their source).
    fn reference_mapped(
        &mut self,
        blob: &str,
        raw: &str,
        mapped: &str,
        source: Source,
    ) -> Result<()> {
        self.reference_all(blob, raw, mapped, &[], source)
            .map(|_| ())
    }

    /// Records a reference to a blob the keep set needs the contents of
    /// (manifest list, manifest, checkpoint metadata) and returns the one
    /// canonical URI to read. A path readers may resolve to different
    /// objects is refused: which contents to walk would be a guess.
    fn reference_blob(&mut self, blob: &str, raw: &str, source: Source) -> Result<String> {
        let (mapped, spelled) = self.map_reference(raw);
        let all = self.reference_all(blob, raw, &mapped, &spelled, source)?;
        match all.as_slice() {
            [one] => Ok(one.to_uri_string()),
            many => Err(Error::malformed(MalformedReason::Path,
                blob,
                format!(
                    "path `{raw}` names {} different objects depending on the reader ({}): ambiguous, refused",
                    many.len(),
                    many.iter()
                        .map(CanonicalUri::to_uri_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Every URI a mapped reference may name (see [`crate::path::spellings`]);
    /// a reference without an authority on `hdfs`/`viewfs` may also mean the
    /// table's file system (its default), and the other way round.
    fn spellings_of(&self, canon: CanonicalUri) -> Vec<CanonicalUri> {
        let loc = self.classifier.location.canonical();
        let other_fs = canon.scheme == loc.scheme
            && canon.authority != loc.authority
            && (canon.authority.is_empty() || loc.authority.is_empty());
        if !other_fs && !crate::path::needs_spellings(&canon) {
            // The common case: one spelling, no copies.
            return vec![canon];
        }
        let mut all = crate::path::spellings(&canon);
        if other_fs {
            let more: Vec<CanonicalUri> = all
                .iter()
                .map(|c| CanonicalUri {
                    authority: loc.authority.clone(),
                    ..c.clone()
                })
                .collect();
            for c in more {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
        }
        all
    }

    /// Canonicalises a mapped path, refuses cycles in the metadata graph,
    /// and keeps every key inside the table the path may name. `spelled`,
    /// when not empty, holds the reference's spellings mapped one by one
    /// (see [`Session::map_reference`]) and replaces `mapped`. Returns every
    /// URI it may name.
    fn reference_all(
        &mut self,
        blob: &str,
        raw: &str,
        mapped: &str,
        spelled: &[String],
        source: Source,
    ) -> Result<Vec<CanonicalUri>> {
        let canon = CanonicalUri::parse(mapped).map_err(|e| {
            Error::malformed(MalformedReason::Path, blob, format!("path `{raw}`: {e}"))
        })?;
        let mut all: Vec<CanonicalUri> = Vec::new();
        for s in spelled {
            if let Ok(c) = CanonicalUri::parse(s) {
                for x in self.spellings_of(c) {
                    if !all.contains(&x) {
                        all.push(x);
                    }
                }
            }
        }
        if all.is_empty() {
            all = self.spellings_of(canon);
        }
        // Per spelling: its key inside the table, if any.
        let mut inside: Vec<String> = Vec::with_capacity(1);
        let mut outside: Vec<&CanonicalUri> = Vec::new();
        let mut loose: Vec<String> = Vec::with_capacity(1);
        for c in &all {
            match self.classifier.key_of(c) {
                Some(rel) => {
                    if !inside.contains(&rel) {
                        inside.push(rel);
                    }
                }
                None => outside.push(c),
            }
            if let Some(l) = self.classifier.loose_key_of(c) {
                loose.push(l);
            }
        }
        for l in &loose {
            // A loose form equal to a canonical key is in the keep set already.
            if !inside.contains(l) {
                self.classifier.keep.insert_loose(l);
            }
        }
        self.check_graph(blob, raw, &inside, &outside, &source)?;
        let external = !outside.is_empty();
        let plain = all.len() == 1;
        for rel in &inside {
            let new = self.classifier.keep.insert(rel, source.clone());
            if plain {
                // Referenced in its own right now: counted like any key.
                if self.alt_only.remove(rel) && self.listed_members.contains(rel) {
                    self.matched += 1;
                    self.matched_alt = self.matched_alt.saturating_sub(1);
                }
            } else {
                if new {
                    self.alt_only.insert(rel.clone());
                }
                self.group_members.insert(rel.clone());
            }
        }
        if !plain {
            if !external {
                let mut g = inside.clone();
                g.sort();
                self.groups.insert(g);
            }
            self.ambiguous_references += 1;
            keep_smallest(
                &mut self.samples.ambiguous,
                (raw.to_owned(), all.len()),
                SAMPLES,
            );
        }
        if inside.is_empty() {
            self.summary.external_references += 1;
            keep_smallest(&mut self.samples.external, all[0].to_uri_string(), SAMPLES);
        }
        Ok(all)
    }

    /// Refuses a cycle in the metadata graph: a path named in one role
    /// (metadata file, manifest list, manifest, content file) that is already
    /// known in another. Keys inside the table are checked against the keep
    /// set's reasons, blobs outside it against the blobs seen so far.
    fn check_graph(
        &mut self,
        blob: &str,
        raw: &str,
        inside: &[impl AsRef<str>],
        outside: &[&CanonicalUri],
        source: &Source,
    ) -> Result<()> {
        let Some(role) = graph_role(source) else {
            return Ok(());
        };
        let cycle = |other: &str| {
            Err(Error::malformed(MalformedReason::Inconsistent,
                blob,
                format!(
                    "cycle in the metadata graph: `{raw}` is named as a {role} but is also a {other} of this table"
                ),
            ))
        };
        for rel in inside {
            let rel = rel.as_ref();
            if let Some(other) = self.classifier.keep.lookup(rel).and_then(graph_role) {
                if other != role {
                    return cycle(other);
                }
            }
        }
        for c in outside {
            let uri = c.to_uri_string();
            match self.graph.get(&uri) {
                Some(other) if *other != role => return cycle(other),
                Some(_) => {}
                None if role != CONTENT_FILE => {
                    self.graph.insert(uri, role);
                }
                None => {}
            }
        }
        Ok(())
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

    fn process_blob(&mut self, uri: &str, purpose: Purpose, bytes: Option<&[u8]>) -> Result<()> {
        if let Purpose::OwnerCheck { obj, rel } = purpose {
            let d = self.classifier.settle_owner(&obj, &rel, bytes)?;
            if let Some(b) = bytes {
                self.note_stray_document(uri, &rel, b);
            }
            self.record(d);
            return Ok(());
        }
        if let Purpose::DeltaNextCommit { version } = purpose {
            return self.delta_next_commit(uri, version, bytes);
        }
        if let (Purpose::PriorPointer { read }, None) = (&purpose, bytes) {
            return self.process_prior_pointer(uri, None, *read);
        }
        if let (
            Purpose::DeltaLog {
                order: (delta::VALIDATE, _),
            },
            None,
        ) = (&purpose, bytes)
        {
            return self.delta_validation_missing(uri);
        }
        let Some(bytes) = bytes else {
            let what = match &purpose {
                Purpose::DeltaLog { .. } => "Delta log file".to_owned(),
                Purpose::DeltaNextCommit { .. } => "Delta commit".to_owned(),
                Purpose::Metadata { .. } => "table metadata".to_owned(),
                Purpose::PriorPointer { .. } => "table metadata".to_owned(),
                Purpose::DrMetadata => "disaster-recovery checkpoint metadata".to_owned(),
                Purpose::ManifestList { snapshot_id } => {
                    format!("manifest list of snapshot {snapshot_id}")
                }
                Purpose::Manifest { .. } => "manifest".to_owned(),
                Purpose::OwnerCheck { .. } => "metadata file".to_owned(),
            };
            return Err(Error::unsafe_(
                UnsafeReason::MissingMetadata,
                format!("{what} `{uri}` does not exist; the keep set cannot be completed, nothing is deleted"),
            ));
        };
        self.summary.manifests_read += u64::from(!matches!(
            purpose,
            Purpose::Metadata { .. }
                | Purpose::PriorPointer { .. }
                | Purpose::DrMetadata
                | Purpose::DeltaLog { .. }
        ));
        match purpose {
            Purpose::DeltaLog { order } => self.delta_log_blob(uri, order, bytes),
            Purpose::DeltaNextCommit { .. } => Ok(()),
            Purpose::Metadata { read } => self.process_metadata(uri, bytes, read),
            Purpose::PriorPointer { read } => self.process_prior_pointer(uri, Some(bytes), read),
            Purpose::DrMetadata => {
                let md = TableMetadata::parse(uri, bytes)?;
                if md.table_uuid != self.classifier.table_uuid {
                    return Err(Error::invalid(
                        "context.drCheckpoints",
                        format!(
                            "`{uri}` is table {}, not this table",
                            md.table_uuid.as_deref().unwrap_or("(no uuid)")
                        ),
                    ));
                }
                // Everything the checkpoint's snapshots read stays, so it can be restored.
                self.walk_snapshots(uri, &md)
            }
            Purpose::ManifestList { .. } => self.process_manifest_list(uri, bytes),
            Purpose::Manifest {
                expected_len,
                added_by,
            } => self.process_manifest(uri, bytes, expected_len, added_by),
            // Settled at the top of this function.
            Purpose::OwnerCheck { .. } => Ok(()),
        }
    }

    /// The order of the next pointer read of the run.
    fn next_pointer_read(&mut self) -> u32 {
        let n = self.pointer_reads;
        self.pointer_reads = n.saturating_add(1);
        n
    }

    /// Refuses (`foreign-table`) when another table owns the location or
    /// one of the write roots (the same prefix, or one containing it).
    fn check_foreign_roots(&self) -> Result<()> {
        let own = std::iter::once(&self.classifier.location).chain(&self.classifier.roots);
        for mine in own {
            for (root, owner) in &self.foreign {
                let pair = [mine.as_uri(), root.as_uri()];
                let overlaps = !crate::path::overlapping_locations(&pair).is_empty();
                let inside_mine = crate::path::loose(&root.canonical().path).len()
                    > crate::path::loose(&mine.canonical().path).len();
                if overlaps && !inside_mine {
                    return Err(Error::unsafe_(
                        UnsafeReason::ForeignTable,
                        format!(
                            "`{}` is inside `{}`, which {owner} owns: a prefix belongs to one table, nothing is deleted",
                            mine.as_uri(),
                            root.as_uri()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The prefixes other tables own inside the location or a write root,
    /// as keys of this sweep (see [`crate::verdict::OwnedPrefix`]).
    fn owned_prefixes(&self) -> Vec<crate::verdict::OwnedPrefix> {
        let mut out = Vec::new();
        for (root, owner) in &self.foreign {
            let Some(key) = self.classifier.key_of(root.canonical()) else {
                continue; // outside everything this table lists
            };
            let prefix = format!("{key}/");
            out.push(crate::verdict::OwnedPrefix {
                loose: format!("{}/", crate::path::loose(&key)),
                prefix,
                owner: format!("{owner} owns"),
            });
        }
        out
    }

    /// Starts the table listing once the keep set is complete: the
    /// context's protections are checked against it, and it is frozen.
    fn start_listing(&mut self) -> Result<()> {
        self.check_foreign_roots()?;
        self.classifier.owners = self.owned_prefixes();
        self.check_protections()?;
        self.classifier.keep.freeze()?;
        self.phase = Phase::Listing {
            last_page_seen: false,
        };
        self.outbox.push_back(Request::List {
            prefix: self.classifier.location.prefix(),
        });
        Ok(())
    }

    /// Moves the state machine forward once no reads are pending.
    fn advance(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            return Ok(());
        }
        // A Delta checkpoint is read after the commits that follow it.
        if matches!(self.phase, Phase::Reading { .. }) && self.delta_release_checkpoint()? {
            return Ok(());
        }
        match self.phase.clone() {
            Phase::Reading { .. } if self.delta().is_some_and(|d| !d.replayed) => {
                self.delta_replay()?;
                // Log cleanup may first read the checkpoint it stops at.
                if self.pending.is_empty() {
                    self.start_listing()?;
                }
            }
            Phase::Reading { .. } if self.delta().is_some_and(|d| d.validating.is_some()) => {
                self.delta_finish_validation()?;
                self.start_listing()?;
            }
            Phase::Reading { recheck: true } => {
                self.check_summaries()?;
                self.demote();
                self.phase = Phase::AwaitPointer;
                self.outbox.push_back(Request::ResolvePointer);
            }
            Phase::Reading { recheck: false } => {
                self.check_summaries()?;
                self.start_listing()?;
            }
            Phase::Listing {
                last_page_seen: true,
            } if self.roots_listed < self.classifier.roots.len() => {
                let prefix = self.classifier.roots[self.roots_listed].prefix();
                self.roots_listed += 1;
                self.phase = Phase::Listing {
                    last_page_seen: false,
                };
                self.outbox.push_back(Request::List { prefix });
            }
            Phase::Listing {
                last_page_seen: true,
            } => {
                let referenced = self.classifier.keep.len() as u64;
                if self.summary.listed.count > 0
                    && referenced > 0
                    && self.matched + self.matched_alt == 0
                {
                    return Err(Error::unsafe_(
                        UnsafeReason::NoReferencedKeyListed,
                        format!(
                            "{} objects listed under `{}` but none of the {referenced} referenced keys among them: wrong scheme, relocated table or mismatched encoding; refusing to call everything garbage",
                            self.summary.listed.count,
                            self.classifier.location.prefix()
                        ),
                    ));
                }
                self.phase = Phase::AwaitPointer;
                if self.delta().is_some() {
                    self.request_next_commit();
                } else {
                    self.outbox.push_back(Request::ResolvePointer);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Refuses a blob whose decoding would take the session over its memory
    /// budget: estimated from its size (JSON documents expand into trees;
    /// Parquet checkpoints into columns and, with many row groups, into a
    /// large footer) plus what the keep set holds already. Checked before
    /// anything is allocated in proportion to the blob's counts.
    fn check_budget(&self, uri: &str, purpose: &Purpose, bytes: &[u8]) -> Result<()> {
        let n = bytes.len() as u64;
        let (what, cost) = match purpose {
            Purpose::Metadata { .. }
            | Purpose::PriorPointer { .. }
            | Purpose::DrMetadata
            | Purpose::OwnerCheck { .. } => ("table metadata document", n.saturating_mul(8)),
            Purpose::DeltaLog { .. } | Purpose::DeltaNextCommit { .. } => {
                if bytes.starts_with(b"PAR1") {
                    // A footer longer than the file is the parser's to refuse
                    // (malformed), not a cost.
                    let footer = crate::codec::parquet::footer_len(bytes)
                        .filter(|&f| f <= bytes.len())
                        .unwrap_or(0) as u64;
                    (
                        "Delta checkpoint",
                        n.saturating_mul(16)
                            .saturating_add(footer.saturating_mul(64)),
                    )
                } else {
                    ("Delta log file", n.saturating_mul(8))
                }
            }
            Purpose::ManifestList { .. } | Purpose::Manifest { .. } => {
                ("manifest", n.saturating_mul(2))
            }
        };
        self.check_cost(uri, what, n, cost)
    }

    /// Refuses (unsupported) decoding `n` bytes of `what` at `uri` when its
    /// `cost` in planner memory and what is held already exceed the budget.
    fn check_cost(&self, uri: &str, what: &str, n: u64, cost: u64) -> Result<()> {
        // The keep set: about 64 bytes per key while it is being built.
        let held = (self.classifier.keep.slots_held() as u64)
            .saturating_mul(64)
            .max(self.classifier.keep.index_bytes() as u64);
        let budget = self.config.memory_budget_bytes;
        if cost.saturating_add(held) > budget {
            return Err(Error::unsupported(
                format!(
                    "{what} of {n} bytes: decoding it needs about {} MiB of planner memory ({} MiB held already), over the memory budget of {} MiB (raise memory_budget_bytes if the machine has it)",
                    cost >> 20,
                    held >> 20,
                    budget >> 20
                ),
                uri,
            ));
        }
        Ok(())
    }

    /// Whether the keep set is complete (the table listing was requested):
    /// from then on [`Session::referenced`] answers.
    pub fn keep_set_complete(&self) -> bool {
        !matches!(self.phase, Phase::Failed(_)) && self.listing_requested()
    }

    /// Which of `keys` (relative to the table location) the keep set
    /// references, with the reason. Used after deleting, on a session started
    /// from the pointer read again: a deleted key the table references now
    /// is damage. Available once the keep set is complete.
    pub fn referenced(&self, keys: Vec<String>) -> Result<Vec<(String, String)>> {
        if let Phase::Failed(e) = &self.phase {
            return Err(e.clone());
        }
        if !self.listing_requested() {
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

    /// Why candidate `rel` is kept after a re-check (a commit that landed
    /// during the sweep references it, or a near-miss of one), if it is.
    fn demotion(&self, rel: &str) -> Option<String> {
        if let Some(src) = self.classifier.keep.lookup(rel) {
            return Some(format!(
                "referenced by a commit that landed during the sweep: {}",
                src.describe()
            ));
        }
        let loose = CanonicalUri::parse(&self.absolute(rel))
            .ok()
            .and_then(|c| self.classifier.loose_key_of(&c));
        loose
            .filter(|l| self.classifier.keep.contains_loose(l))
            .map(|_| {
                "near-miss of a path referenced by a commit that landed during the sweep".to_owned()
            })
    }

    /// After a re-check, candidates that became referenced are kept.
    fn demote(&mut self) {
        // Judged over the candidates as they stand; only the demoted ones'
        // keys are copied.
        let demoted: Vec<(String, String)> = self
            .candidates
            .keys()
            .filter_map(|rel| Some((rel.clone(), self.demotion(rel)?)))
            .collect();
        for (rel, detail) in demoted {
            if let Some(c) = self.candidates.remove(&rel) {
                if let Some(t) = self.summary.verdicts.get_mut("candidate") {
                    t.sub(c.size);
                }
                if let Some(t) = self.summary.reclaimable.get_mut(object_kind(&rel)) {
                    t.sub(c.size);
                }
                let d = Decision {
                    key: self.absolute(&rel),
                    relative_key: rel,
                    verdict: Verdict::Demoted,
                    detail,
                    size: c.size,
                    last_modified_ms: c.last_modified_ms,
                    etag: c.etag.clone(),
                    version_id: c.version_id.clone(),
                };
                self.summary
                    .verdicts
                    .entry("demoted".into())
                    .or_default()
                    .add(d.size);
                self.decisions.push(d);
            }
        }
    }
}

/// A sealed plan over `s3://b/t`, judged at 1,000,000 ms, deleting `keys`
/// (key, size; listed at time 0, no ETag) under `context`: the one fixture
/// of the acceptance and ledger unit tests.
#[cfg(test)]
pub(crate) fn plan_for_tests(keys: &[(&str, u64)], context: Option<&str>) -> SealedPlan {
    let ctx = context
        .map(|c| crate::Context::parse(c).unwrap())
        .unwrap_or_default();
    let mut p = SealedPlan {
        schema: PLAN_SCHEMA.into(),
        format: TableFormat::Iceberg,
        table_location: "s3://b/t".into(),
        table_uuid: None,
        tokens: PlanTokens {
            metadata_location: "s3://b/t/metadata/v3.metadata.json".into(),
            refs_digest: String::new(),
            refs: BTreeMap::new(),
            now_ms: 1_000_000,
            file_retention_ms: 0,
            keep_deleted_entries: true,
            policy_digest: None,
            hold_generation: ctx.hold_generation(),
            lease_watermark: ctx.lease_watermark(),
            context_digest: ctx.digest(),
            head: None,
            restore_drill: None,
            deleted_index: None,
        },
        origin: None,
        delete: keys
            .iter()
            .map(|(k, size)| PlannedDelete {
                key: (*k).into(),
                size: *size,
                last_modified_ms: 0,
                etag: None,
                version_id: None,
            })
            .collect(),
        summary: Summary::default(),
        warnings: Vec::new(),
        damaged: Vec::new(),
        digest: String::new(),
        report: None,
    };
    p.digest = p.compute_digest();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(key: &str, verdict: Verdict) -> Decision {
        Decision {
            key: format!("s3://b/t/{key}"),
            relative_key: key.into(),
            verdict,
            detail: format!("{verdict:?}"),
            size: 7,
            last_modified_ms: 1,
            etag: None,
            version_id: None,
        }
    }

    /// The report keeps every decided key the plan does not delete, with
    /// its last verdict; the seal does not cover it.
    #[test]
    fn the_report_is_every_decided_key_the_plan_does_not_delete() {
        let plan = plan_for_tests(&[("data/a", 1)], None);
        let digest = plan.digest.clone();
        let plan = plan.with_report(
            vec![
                decided("data/a", Verdict::Candidate),
                decided("data/b", Verdict::Candidate),
                decided("data/b", Verdict::Demoted),
                decided("data/c", Verdict::Young),
                decided("data/d", Verdict::Candidate),
                decided("data/d", Verdict::Referenced),
            ],
            vec!["odd".into()],
            vec!["note".into()],
        );
        let report = plan.report.clone().unwrap();
        let kept: Vec<(&str, Verdict)> = report
            .keep
            .iter()
            .map(|k| (k.key.as_str(), k.reason))
            .collect();
        assert_eq!(
            kept,
            [("data/b", Verdict::Demoted), ("data/c", Verdict::Young)]
        );
        assert_eq!(report.unrepresentable, ["odd"]);
        assert_eq!(plan.compute_digest(), digest);
        let back = SealedPlan::from_json(&plan.to_json()).expect("a reported plan verifies");
        assert_eq!(back.report, plan.report);
    }

    /// The host's origin document is sealed: an edited origin is refused,
    /// and a plan without one keeps its digest.
    #[test]
    fn the_origin_is_sealed() {
        let bare = plan_for_tests(&[("data/a", 1)], None);
        let mut made = bare.clone();
        made.origin = Some(r#"{"pointer":"a"}"#.into());
        made.digest = made.compute_digest();
        assert_ne!(made.digest, bare.digest);
        let text = made.to_json();
        assert_eq!(SealedPlan::from_json(&text).unwrap().origin, made.origin);
        let edited = text.replace(r#"\"pointer\":\"a\""#, r#"\"pointer\":\"b\""#);
        assert_ne!(edited, text);
        assert!(SealedPlan::from_json(&edited).is_err());
        assert!(!bare.to_json().contains("origin"));
    }
}
