//! Any bytes as an Avro object container: open, walk every block, then
//! read every record through a compiled projection of a manifest entry's
//! fields (whatever the writer schema holds).
#![no_main]
use lakesweep::codec::avro::{Container, Projection};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Container::open(data) {
        let _ = c.for_each_block(|_, _| Ok(()));
        let paths: &[&[&str]] = &[
            &["status"],
            &["snapshot_id"],
            &["data_file", "content"],
            &["data_file", "file_path"],
            &["data_file", "partition"],
        ];
        if let Ok(p) = Projection::compile(&c.schema, paths) {
            let _ = c.for_each_record(&p, |_| Ok(()));
        }
    }
});
