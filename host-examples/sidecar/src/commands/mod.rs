//! The commands: each runs sessions (`crate::session`) over stores and
//! catalogs and renders what they decided (`report`). The dispatch from
//! the command line is `main.rs`.

pub mod apply;
pub mod bundle;
pub mod compare;
pub mod drill;
pub mod estate;
pub mod expire;
pub mod halt;
pub mod ledger;
pub mod pinot;
pub mod plan;
pub mod policy;
pub mod recovery;
pub mod report;
pub mod rollout;
pub mod status;
pub mod sweep;
