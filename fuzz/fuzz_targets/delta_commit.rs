//! Any bytes as a Delta JSON commit; every decoded path and deletion vector
//! goes through the path decoder and the DV file-name derivation too.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lakesweep::spec::delta::{decode_path, dv_file, parse_json_actions, Action};

fuzz_target!(|data: &[u8]| {
    let uri = "s3://b/t/_delta_log/00000000000000000001.json";
    if let Ok(actions) = parse_json_actions(uri, data) {
        for a in actions {
            match a {
                Action::Add { path, dv } | Action::Remove { path, dv, .. } => {
                    let _ = decode_path(uri, &path);
                    if let Some(dv) = dv {
                        let _ = dv_file(uri, &dv);
                    }
                }
                Action::Cdc { path } | Action::Sidecar { path } => {
                    let _ = decode_path(uri, &path);
                }
                _ => {}
            }
        }
    }
});
