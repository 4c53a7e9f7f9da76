//! Containers the table formats are stored in: Avro object container files,
//! Parquet (with its Thrift footer) and gzip. Each decoder takes bytes and
//! returns typed values or a [`crate::Error`]; none does I/O, and none knows
//! Iceberg or Delta (those nouns live in `spec`).

pub mod avro;
pub mod gzip;
pub mod inflate;
pub mod parquet;
