//! The table formats' own nouns, named as their specifications name them:
//! Iceberg metadata, manifest lists and manifests ([`iceberg`]); Delta
//! actions, log file names, the protocol and deletion-vector paths
//! ([`delta`]); the table features and what a sweeper does with each
//! ([`delta_feature`]); metadata files by name and the file-system catalog's
//! version hint ([`metadata_file`]). Parsers take bytes and return typed values or a
//! [`crate::Error`]; none does I/O. The containers they are stored in are
//! [`crate::codec`]'s.

pub mod delta;
pub mod delta_feature;
pub mod iceberg;
pub mod metadata_file;
