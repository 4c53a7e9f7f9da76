//! Any text as a table location, a listed key and a location mapping.
#![no_main]
use lakesweep::path::{CanonicalUri, TableLocation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (a, b) = text.split_once('\n').unwrap_or((text, text));
    let _ = CanonicalUri::parse(a);
    if let (Ok(loc), Ok(key)) = (TableLocation::parse(a), CanonicalUri::parse(b)) {
        let _ = loc.relative(&key);
    }
});
