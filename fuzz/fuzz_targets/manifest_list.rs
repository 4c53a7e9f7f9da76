//! Any bytes as an Iceberg manifest list.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lakesweep::spec::iceberg::read_manifest_list("s3://b/t/metadata/snap.avro", data);
});
