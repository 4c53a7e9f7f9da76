//! Any bytes as an Iceberg manifest to digest (what a worker does before a
//! session reads the digest): a digest or a typed error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lakesweep::digest_manifest("s3://b/t/metadata/m.avro", data);
});
