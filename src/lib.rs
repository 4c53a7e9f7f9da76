//! # lakesweep
//!
//! A pure, sans-IO garbage-collection planner for lakehouse tables (Apache
//! Iceberg and Delta Lake). It decides which objects under a table's
//! location are referenced by some retained snapshot or version, which are
//! garbage old enough to delete, and why, for every object; its [`Ledger`]
//! walks deletions through quarantine, one approval and receipts. It performs
//! no I/O, reads no clock, spawns no threads and holds no global state.
//!
//! ## Calling contract of a [`Session`]
//!
//! ```text
//! Session::start(config)                      now_ms is an input
//! loop {
//!     while let Some(r) = poll_request()      ReadBlob / List / ResolvePointer
//!     answer each: handle_blob | handle_missing, handle_page (is_last on the
//!                  last page), handle_pointer  (any order, any page size)
//!     drain_decisions()                        verdicts so far (a later one
//!                                              for the same key replaces it)
//! } until is_done()
//! finish()                                    the sealed plan, or the error
//! ```
//! Any error ends the session: it plans nothing. [`host::drive`] is this
//! loop written out once (the tests, fuzz targets and benches run through
//! it). The stateless page mode ([`PageClassifier`]) takes a session's
//! exported keep set.
//!
//! ## Layers (each uses only those below it; `tests/layout.rs` checks)
//!
//! ```text
//! bindings, web, host · deletion · ledger · acceptance, reclaim ·
//! plan, expire, bundle, pinot · policy, page, estate · verdict, context ·
//! reach, delta_log · spec · codec ·
//! error, path, digest, duration, version, format, hashing, mutation
//! ```
//!
//! The architecture and the safety rules are described in `docs/design.md`.
//! Safety rules it enforces (`docs/design.md`, "Safety rules"): the keep set is the union over every
//! snapshot in the metadata; nothing is deletable until it is complete; `now`
//! is an input and objects younger than the window are kept; candidates are
//! re-checked against the newest metadata; only keys strictly under
//! `location + "/"` are deletable; paths are compared exactly after one
//! canonical mapping and near-misses are kept; decisions do not depend on
//! page size or order; a plan is sealed with a digest and the tokens it was
//! judged on.

// The nouns a host names by path: the stored documents' types, the errors
// and the reference host loop.
pub mod bundle;
pub mod comparison;
pub mod context;
pub mod error;
pub mod estate;
pub mod fleet;
pub mod host;
pub mod ledger;
pub mod pinot;
pub mod policy;
pub mod reclaim;
pub mod scratch;
pub mod split;
pub mod stop;

// The core's own vocabulary: canonical paths, the containers and the
// formats' parsers. Public only with the `internal-api` feature, for the
// fuzz targets, integration tests and benches (not a stable interface);
// what a host needs of them is re-exported below. Without the feature,
// what only those callers use (a parser's entry point, a re-export kept
// for their paths) is unused here, and allowed to be.
#[cfg(feature = "internal-api")]
pub mod codec;
#[cfg(not(feature = "internal-api"))]
#[allow(dead_code, unused_imports)]
mod codec;
#[cfg(feature = "internal-api")]
pub mod path;
#[cfg(not(feature = "internal-api"))]
#[allow(dead_code, unused_imports)]
mod path;
#[cfg(feature = "internal-api")]
pub mod spec;
#[cfg(not(feature = "internal-api"))]
#[allow(dead_code, unused_imports)]
mod spec;

// The machinery: reached through the re-exports below.
mod acceptance;
pub mod deletion;
mod delta_log;
mod digest;
mod duration;
mod expire;
mod format;
mod hashing;
pub mod mutation;

mod page;
mod plan;
mod reach;
mod verdict;
mod version;

#[cfg(feature = "component")]
mod bindings;
#[cfg(feature = "web")]
mod web;

pub use acceptance::{accept, check_clock, delta_head, Acceptance, LiveFacts, MAX_CLOCK_SKEW_MS};
pub use context::Context;
pub use delta_log::rebuildable_versions;
pub use duration::{human_ms, parse_duration, DurationMs, MIN_FILE_RETENTION_MS};
pub use error::{Error, MalformedReason, ProtocolReason, Result, UnsafeReason};
pub use expire::{
    expiry_landed, plan_expiry, Expired, ExpiryPlan, ExpiryRequest, Landing, Retained,
    DEFAULT_MAX_SNAPSHOT_AGE_MS, EXPIRY_SCHEMA,
};
pub use format::TableFormat;
pub use ledger::{Ledger, ObjectState};
pub use page::{PageClassifier, PageColumns, PageVerdicts};
pub use path::{overlapping_locations, PathMapping};
pub use pinot::{PinotConfig, PinotRequest, PinotSession};
pub use plan::{
    canonical_pointer, digest_checkpoint, digest_manifest, digest_manifest_resolved,
    DamagedReference, KeptObject, PlanReport, PlanTokens, PlannedDelete, Request, SealedPlan,
    Session, SessionConfig, Summary, Tally, DEFAULT_MEMORY_BUDGET, PLAN_SCHEMA,
};
pub use policy::Policy;
pub use spec::metadata_file::current_metadata;
pub use verdict::{Decision, ListedObject, Verdict};
pub use version::ObjectVersion;
