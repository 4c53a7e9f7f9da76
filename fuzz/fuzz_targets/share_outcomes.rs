//! Any text as the outcomes of a plan's shares (one JSON outcome a line),
//! combined for a plan of a few deletes: taken or refused with a typed
//! error, never a panic; and when taken, every share of one cut answered
//! exactly once, with an exit status a run can have.
#![no_main]
use lakesweep::deletion::combine_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let outcomes: Vec<String> = text.lines().map(str::to_owned).collect();
    for deletes in [0, 1, 7] {
        if let Ok(whole) = combine_json("p", deletes, &outcomes) {
            assert!(!outcomes.is_empty());
            assert!(whole.contains(r#""exit":"#), "{whole}");
            assert!(!whole.contains(r#""share":"#), "a combined outcome carries no stamp: {whole}");
        }
    }
});
