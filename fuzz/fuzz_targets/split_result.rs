//! Any text as a listing split's partial result (or refusal), handed to a session whose
//! table listing was cut into two splits (an empty table's): it must be
//! taken or refused with a typed error, never a panic. And any text as a
//! split, opened on the classifier of that session's keep set.
#![no_main]
use lakesweep::split::ListingSplit;
use lakesweep::{PageClassifier, Request, Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

const LOC: &str = "s3://b/t";
const POINTER: &str = "s3://b/t/metadata/00001-x.metadata.json";

/// An empty table's metadata document.
fn metadata() -> Vec<u8> {
    format!(
        r#"{{"format-version":2,"table-uuid":"0f0f0f0f-0000-0000-0000-000000000000","location":"{LOC}",
        "last-sequence-number":0,"last-updated-ms":1,"last-column-id":1,"current-schema-id":0,
        "schemas":[{{"type":"struct","schema-id":0,"fields":[]}}],"default-spec-id":0,
        "partition-specs":[{{"spec-id":0,"fields":[]}}],"last-partition-id":999,
        "default-sort-order-id":0,"sort-orders":[],"properties":{{}},"current-snapshot-id":-1,
        "snapshots":[],"metadata-log":[]}}"#
    )
    .into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let cfg = SessionConfig::new(LOC, POINTER, 1_800_000_000_000, 3 * 86_400_000);
    let Ok(mut s) = Session::start(cfg) else { return };
    while let Some(r) = s.poll_request() {
        match r {
            Request::ReadBlob { uri } => {
                if s.handle_blob(uri, metadata()).is_err() {
                    return;
                }
            }
            Request::List { prefix } => {
                let Ok(splits) = s.split_listing(vec![format!("{prefix}data/m")]) else { return };
                let Ok(keep_set) = s.export_keep_set() else { return };
                if let Ok(mut c) = PageClassifier::load(keep_set) {
                    if let Ok(split) = ListingSplit::from_json(text) {
                        if c.begin_split(split).is_ok() {
                            let _ = c.split_page_json(br#"[{"key":"s3://b/t/data/a","size":1,"lastModifiedMs":0}]"#);
                            let _ = c.end_split();
                            if let Some(refusal) = c.split_refusal() {
                                let _ = s.handle_split_result(refusal);
                            }
                        }
                    }
                    if c.begin_split(splits[0].clone()).is_ok() {
                        if let Ok(r) = c.end_split() {
                            let _ = s.handle_split_result(r);
                        }
                    }
                }
                let _ = s.handle_split_result(text.to_owned());
                let _ = s.splits_outstanding();
                let _ = s.finish();
                return;
            }
            Request::ResolvePointer => {
                if s.handle_pointer(Some(POINTER.into())).is_err() {
                    return;
                }
            }
        }
    }
});
