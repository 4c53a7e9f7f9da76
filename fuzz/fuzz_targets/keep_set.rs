//! Any bytes as an exported keep set (and, as text, as its hex); when one
//! loads, classify a page with it, as records and in columns.
#![no_main]
use lakesweep::{ListedObject, PageClassifier, PageColumns};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = PageClassifier::load_hex(text);
    }
    if let Ok(pc) = PageClassifier::load(data.to_vec()) {
        let object = ListedObject {
            key: format!("{}/data/x.parquet", pc.metadata_location()),
            size: 1,
            last_modified_ms: 0,
            etag: None,
            version_id: None,
        };
        let columns = PageColumns::of(std::slice::from_ref(&object));
        let _ = pc.classify(vec![object]);
        if let Ok(c) = columns {
            let _ = pc.classify_columns(c);
        }
    }
});
