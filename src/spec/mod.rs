//! Parsers for the formats a sweeper must read. Each parser takes owned or
//! borrowed bytes and returns typed values or a [`crate::Error`]; none does I/O.

pub mod avro;
pub mod delta;
pub mod gzip;
pub mod iceberg;
pub mod parquet;
