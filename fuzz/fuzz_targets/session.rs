//! A whole session fed arbitrary bytes for every blob it asks for: the
//! metadata, then manifest lists and manifests. It must end in a plan or a
//! typed error, never a panic. Driven by the core's reference host loop.
#![no_main]
use lakesweep::host::{drive, Order, Store};
use lakesweep::{ListedObject, Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

/// Answers each read with the next chunk of the input (`0xff` separates
/// chunks) and "missing" once they run out; the table lists nothing and
/// its pointer is gone.
struct Chunks<'a>(std::slice::Split<'a, u8, fn(&u8) -> bool>);

impl Store for Chunks<'_> {
    fn read(&mut self, _uri: &str) -> Option<Vec<u8>> {
        self.0.next().map(<[u8]>::to_vec)
    }
    fn list(&mut self, _prefix: &str) -> Vec<Vec<ListedObject>> {
        Vec::new()
    }
    fn pointer(&mut self) -> Option<String> {
        None
    }
}

fuzz_target!(|data: &[u8]| {
    let loc = "s3://b/t";
    let cfg = SessionConfig::new(loc, "s3://b/t/metadata/00001-x.metadata.json", 1_800_000_000_000, 3 * 86_400_000);
    let Ok(mut s) = Session::start(cfg) else { return };
    let separator: fn(&u8) -> bool = |b| *b == 0xff;
    let order = if data.first().is_some_and(|b| b % 2 == 1) {
        Order::NewestFirst
    } else {
        Order::AsAsked
    };
    if drive(&mut s, &mut Chunks(data.split(separator)), order).is_ok() {
        let _ = s.finish();
    }
});
