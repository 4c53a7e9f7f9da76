//! Any bytes as each Pinot input a host passes: the table config, the
//! ideal state, the watermark, the active list, a plan to accept, and an
//! artifact's Parquet bytes. A value or a typed error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lakesweep::pinot::{accept_pinot_plan, artifact, documents, settings};

fuzz_target!(|data: &[u8]| {
    let _ = artifact::segments(data, artifact::DEFAULT_SEGMENT_COLUMN);
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = settings::RetentionSettings::from_table_config(text);
    let _ = documents::ideal_state_segments(text, "t_OFFLINE", "OFFLINE");
    let _ = documents::Watermark::parse(text, "t_OFFLINE");
    let _ = documents::active_snapshots(text, "t_OFFLINE");
    let _ = accept_pinot_plan(text, text);
});
