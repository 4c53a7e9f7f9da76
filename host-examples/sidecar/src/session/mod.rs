//! One planner session's host side: serving its reads (`plan`), the
//! manifests and checkpoints it digests (`digests`), the policy and
//! context files it is given (`context`), deleting a sealed plan
//! (`deletion`), the ledger's files (`ledger`) and how a plan was made
//! (`origin`), the stop switches every deleter reads (`switch`). The
//! commands are built from these.

pub mod context;
pub mod deletion;
pub mod digests;
pub mod ledger;
pub mod origin;
pub mod plan;
pub mod switch;
