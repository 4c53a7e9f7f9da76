//! A whole session fed arbitrary bytes for every blob it asks for: the
//! metadata, then manifest lists and manifests. It must end in a plan or a
//! typed error, never a panic.
#![no_main]
use lakesweep::{Request, Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let loc = "s3://b/t";
    let cfg = SessionConfig::new(loc, "s3://b/t/metadata/00001-x.metadata.json", 1_800_000_000_000, 3 * 86_400_000);
    let Ok(mut s) = Session::start(cfg) else { return };
    let mut chunks = data.split(|&b| b == 0xff);
    for _ in 0..64 {
        let Some(req) = s.poll_request() else { break };
        let r = match req {
            Request::ReadBlob { uri } => match chunks.next() {
                Some(c) => s.handle_blob(uri, c.to_vec()),
                None => s.handle_missing(uri),
            },
            Request::List { .. } => s.handle_page(vec![], true),
            Request::ResolvePointer => s.handle_pointer(None),
        };
        if r.is_err() {
            break;
        }
    }
    let _ = s.finish();
});
