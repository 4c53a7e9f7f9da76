//! Any bytes as a Delta Parquet checkpoint (or V2 sidecar).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lakesweep::spec::delta::parse_parquet_actions(
        "s3://b/t/_delta_log/00000000000000000010.checkpoint.parquet",
        data,
    );
});
