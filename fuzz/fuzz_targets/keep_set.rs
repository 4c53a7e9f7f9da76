//! Any bytes as an exported keep set; when one loads, classify a page with it.
#![no_main]
use lakesweep::{ListedObject, PageClassifier};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(pc) = PageClassifier::load(data.to_vec()) {
        let key = format!("{}/data/x.parquet", pc.metadata_location());
        let _ = pc.classify(vec![ListedObject {
            key,
            size: 1,
            last_modified_ms: 0,
            etag: None,
            version_id: None,
        }]);
    }
});
