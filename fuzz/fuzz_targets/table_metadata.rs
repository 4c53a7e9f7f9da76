//! Any bytes as Iceberg table metadata JSON (plain or gzip).
#![no_main]
use lakesweep::spec::iceberg::TableMetadata;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let uri = "s3://b/t/metadata/00001-x.metadata.json";
    let _ = TableMetadata::parse(uri, data);
    let _ = TableMetadata::probe_owner(uri, data);
});
