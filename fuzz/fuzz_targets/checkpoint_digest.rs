//! Any bytes as a Delta checkpoint file to digest, as Parquet and as a V2
//! checkpoint's JSON (what a worker does before a session reads the
//! digest): a digest or a typed error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lakesweep::digest_checkpoint("s3://b/t/_delta_log/00000000000000000001.checkpoint.parquet", data);
    let _ = lakesweep::digest_checkpoint(
        "s3://b/t/_delta_log/00000000000000000001.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        data,
    );
});
