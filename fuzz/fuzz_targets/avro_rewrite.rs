//! Any bytes as an Avro object container rewritten with its path fields
//! renamed (a restore into scratch): a rewritten file or a typed error,
//! never a panic; what is written opens again.
#![no_main]
use lakesweep::codec::avro::{rewrite, Container, Rename};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = |p: &str| Some(format!("s3://scratch/{p}"));
    let r = Rename {
        fields: &["manifest_path", "file_path", "referenced_data_file"],
        f: &f,
        length: None,
    };
    if let Ok((out, _)) = rewrite(data, &r) {
        assert!(Container::open(&out).is_ok());
    }
});
