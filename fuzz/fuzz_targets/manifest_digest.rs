//! Any bytes as an Iceberg manifest to digest (what a worker does before a
//! session reads the digest), as written and resolved against a table
//! location: a digest or a typed error, never a panic; and a digest made
//! reads back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let uri = "s3://b/t/metadata/m.avro";
    let plain = lakesweep::digest_manifest(uri, data);
    let resolved = lakesweep::digest_manifest_resolved("plain-keys-xxh3-64/1 s3://b/t", uri, data);
    // The same bytes are a manifest or not, whichever digest is made.
    assert_eq!(plain.is_ok(), resolved.is_ok());
});
