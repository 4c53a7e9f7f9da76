//! Any bytes as a Delta JSON commit (as the planner reads commits: empty or
//! action-less ones refused); every decoded path and deletion vector goes
//! through the path decoder and the DV file-name derivation too.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lakesweep::spec::delta::{decode_path, dv_file, parse_commit, parse_json_actions, Action};

fuzz_target!(|data: &[u8]| {
    let uri = "s3://b/t/_delta_log/00000000000000000001.json";
    let commit = parse_commit(uri, data);
    // A commit the planner accepts parses as JSON actions, the same ones.
    if let Ok(a) = &commit {
        assert_eq!(parse_json_actions(uri, data).ok().as_ref(), Some(a));
    }
    if let Ok(actions) = commit {
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
