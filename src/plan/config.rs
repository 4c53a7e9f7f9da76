//! What a session is started with: the table, its pointer, the evaluation
//! time and the options ([`SessionConfig`]), and the rules that turn those
//! inputs into what the session judges by (the canonical pointer, the
//! file-retention window, the memory budget's bounds).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::TableFormat;
use crate::path::{apply_mappings, CanonicalUri, PathMapping};

pub use crate::duration::MIN_FILE_RETENTION_MS;

/// Default memory budget of a session: 1 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 1 << 30;
/// Smallest memory budget accepted: 16 MiB.
pub const MIN_MEMORY_BUDGET: u64 = 16 << 20;

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
    /// ([`crate::SealedPlan::damaged`]) for the ledger to record.
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
