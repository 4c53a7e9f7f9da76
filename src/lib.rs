//! # lakesweep
//!
//! A pure, sans-IO garbage-collection planner for lakehouse tables (Apache
//! Iceberg and Delta Lake). It decides which objects under a table's
//! location are referenced by some retained snapshot or version, which are
//! garbage old enough to delete, and why, for every object; its [`Ledger`]
//! walks deletions through quarantine, one approval and receipts. It performs no I/O, reads no clock,
//! spawns no threads and holds no global state: the host feeds it blobs,
//! listing pages and pointer re-reads, and drains requests and decisions
//! (see [`Session`]).
//!
//! Safety rules it enforces (DESIGN.md): the keep set is the union over every
//! snapshot in the metadata; nothing is deletable until it is complete; `now`
//! is an input and objects younger than the window are kept; candidates are
//! re-checked against the newest metadata; only keys strictly under
//! `location + "/"` are deletable; paths are compared exactly after one
//! canonical mapping and near-misses are kept; decisions do not depend on
//! page size or order; a plan is sealed with a digest and the tokens it was
//! judged on.

pub mod acceptance;
pub mod bundle;
pub mod context;
mod delta_log;
pub mod error;
pub mod expire;
pub mod ledger;
pub mod page;
pub mod path;
pub mod plan;
pub mod policy;
pub mod reach;
pub mod spec;
pub mod verdict;

#[cfg(feature = "component")]
mod bindings;

pub use acceptance::{accept, Acceptance, LiveFacts};
pub use context::Context;
pub use error::{Error, Result, UnsafeReason};
pub use expire::{plan_expiry, ExpiryPlan, ExpiryRequest};
pub use ledger::{Ledger, ObjectState};
pub use page::PageClassifier;
pub use path::PathMapping;
pub use plan::{
    PlanTokens, PlannedDelete, Request, SealedPlan, Session, SessionConfig, Summary, TableFormat,
    Tally,
};
pub use policy::Policy;
pub use verdict::{Decision, ListedObject, Verdict};
