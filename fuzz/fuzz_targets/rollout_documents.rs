//! Any text as each rollout input a host passes: a stop switch's content
//! (judged as a reading, and as the previous content of a halt and a
//! resume), a fleet document, and the existing job's candidate list. A
//! value or a typed error, never a panic; an unreadable switch stops.
#![no_main]
use lakesweep::stop::{halt_document, resume_document, stopped_by, SwitchAnswer, SwitchReading};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let asked = vec!["s3://b/t/_lakesweep/stop.json".to_owned()];
    let reading = SwitchReading {
        uri: asked[0].clone(),
        answer: SwitchAnswer::Present(text.to_owned()),
    };
    let stopped = stopped_by(&asked, &[reading]);
    if lakesweep::stop::StopDocument::parse(text).is_err() {
        assert!(stopped.is_some(), "an invalid switch must stop the run");
    }
    let _ = halt_document(Some(text), "r", "b", 1);
    let _ = resume_document(Some(text), "r", "b", 1);
    if let Ok(f) = lakesweep::fleet::Fleet::parse(text) {
        let _ = f.cohort_of("s3://b/t");
        let _ = lakesweep::fleet::Fleet::with_mode(text, "c", lakesweep::fleet::Mode::Enforce);
    }
    let _ = lakesweep::comparison::their_keys("s3://b/t", &[], text);
});
