//! Any bytes as a ledger's head (and then as every file it names), and as
//! an archive whose length and SHA-256 match them, so the gzip and the
//! JSON-lines decoding behind the checksum are reached.
#![no_main]
use lakesweep::ledger::files::{decode_archive, ArchiveRef, FileRef};
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(mut l) = lakesweep::Ledger::parse(text) {
            while let Some(name) = l.next_read() {
                if l.handle_read(&name, data).is_err() {
                    break;
                }
            }
        }
    }
    let sha256: String = Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let archive = ArchiveRef {
        file: FileRef {
            name: format!("archive-r000001-0000-{}.jsonl.gz", &sha256[..16]),
            count: 1,
            bytes: data.len() as u64,
            sha256,
        },
        revision: 1,
        object_bytes: 0,
    };
    let _ = decode_archive(&archive, data);
});
