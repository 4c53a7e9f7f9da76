//! Delta Lake log parsing, one noun per file:
//!
//! ```text
//! action           log actions from JSON commits (and JSON checkpoints)
//! checkpoint       the actions of checkpoint files (Parquet or JSON), sidecars
//! protocol         reader/writer versions and features, and the protocol check
//! metadata         the metaData action and the table properties' durations
//! log_path         paths as the log writes them, decoded exactly once
//! deletion_vector  deletion-vector descriptors and the files they live in
//! log_file         names under _delta_log/, the newest commit's identity
//! ```
//!
//! Paths in `add`, `remove` and `cdc` actions are URI-encoded, relative to the
//! table root or absolute; [`decode_path`] decodes them exactly once, so
//! `cat=100%2525` in the log is the directory `cat=100%25` in the store.

mod action;
mod checkpoint;
mod deletion_vector;
mod log_file;
mod log_path;
mod metadata;
mod protocol;

pub use action::{parse_commit, parse_json_actions, Action};
pub use checkpoint::{parse_checkpoint_file, parse_parquet_actions};
pub use deletion_vector::{dv_file, z85_decode, DeletionVector};
pub use log_file::{commit_name, log_file, CommitIdentity, LogFile};
pub use log_path::{decode_path, is_absolute, LogPath};
pub use metadata::{
    parse_interval, Metadata, DEFAULT_DELETED_FILE_RETENTION_MS, DEFAULT_LOG_RETENTION_MS,
};
pub use protocol::{check_protocol, Protocol};
