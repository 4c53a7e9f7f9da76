//! Planning: a sans-IO session the host feeds with blobs, listing pages and
//! pointer re-reads, and drains for requests and decisions, ending in a
//! sealed plan.
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
//!
//! The nouns, one per file:
//!
//! ```text
//! config              what a session is started with (SessionConfig), the window rule
//! document            the sealed plan: deletes, tokens, summary, report, digest
//! requests            what the host is asked (Request) and what each read is for
//! state               the session's phase and its checked transitions
//! refs                reference resolution: paths in metadata -> keys of the keep set
//! session             the session itself: the host's calls, progress, checks, sealing,
//!   session/iceberg   and each format's side of the walk (applying what the
//!   session/delta     format halves return)
//! iceberg, delta      the format halves: pure steps over their own state
//! manifest_digest     a manifest's entries as a sealed text, made where it was read
//! checkpoint_digest   a Delta checkpoint file's actions as a sealed text
//! ```

mod checkpoint_digest;
mod config;
mod delta;
mod document;
mod iceberg;
mod manifest_digest;
mod refs;
mod requests;
mod session;
mod state;

pub use checkpoint_digest::digest_checkpoint;
pub use config::{canonical_pointer, SessionConfig, DEFAULT_MEMORY_BUDGET};
#[cfg(test)]
pub(crate) use document::plan_for_tests;
pub use document::{
    DamagedReference, KeptObject, PlanReport, PlanTokens, PlannedDelete, SealedPlan, Summary,
    Tally, PLAN_SCHEMA,
};
pub use manifest_digest::{digest_manifest, digest_manifest_resolved};
pub use requests::Request;
pub use session::Session;
