//! Any bytes as an Iceberg manifest.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lakesweep::spec::iceberg::for_each_manifest_entry("s3://b/t/metadata/m.avro", data, |_, _, _| {});
});
