//! Names under `_delta_log/`: commits, checkpoints of every kind, checksum
//! and compaction files; and the identity of the newest commit a plan was
//! made on.

use serde::Deserialize;

/// What a name directly under `_delta_log/` is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogFile {
    /// `<v>.json`: a commit.
    Commit(u64),
    /// `<v>.checkpoint.parquet`: a classic single-file checkpoint.
    Checkpoint(u64),
    /// `<v>.checkpoint.<part>.<parts>.parquet`: one part of a multi-part checkpoint.
    CheckpointPart {
        /// Checkpoint version.
        version: u64,
        /// 1-based part number.
        part: u64,
        /// Number of parts.
        parts: u64,
    },
    /// `<v>.checkpoint.<uuid>.json|parquet`: a V2 checkpoint.
    CheckpointV2 {
        /// Checkpoint version.
        version: u64,
        /// True for `.json`, false for `.parquet`.
        json: bool,
    },
    /// `<v>.crc`: a checksum file.
    Crc(u64),
    /// `<a>.<b>.compacted.json`: a log compaction file.
    Compacted {
        /// First version covered.
        from: u64,
        /// Last version covered.
        to: u64,
    },
    /// `_last_checkpoint`.
    LastCheckpoint,
    /// Anything else (`_sidecars/...`, `_staged_commits/...`, temporary files).
    Other,
}

/// A 20-digit version number, as log file names spell it.
fn version(s: &str) -> Option<u64> {
    (s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Classifies a name relative to `_delta_log/`.
pub fn log_file(name: &str) -> LogFile {
    if name == "_last_checkpoint" {
        return LogFile::LastCheckpoint;
    }
    if name.contains('/') {
        return LogFile::Other;
    }
    let parts: Vec<&str> = name.split('.').collect();
    match parts.as_slice() {
        [v, "json"] => version(v).map(LogFile::Commit),
        [v, "crc"] => version(v).map(LogFile::Crc),
        [v, "checkpoint", "parquet"] => version(v).map(LogFile::Checkpoint),
        [v, "checkpoint", p, n, "parquet"] if p.len() == 10 && n.len() == 10 => {
            match (version(v), p.parse::<u64>(), n.parse::<u64>()) {
                (Some(version), Ok(part), Ok(parts)) if part >= 1 && part <= parts => {
                    Some(LogFile::CheckpointPart {
                        version,
                        part,
                        parts,
                    })
                }
                _ => None,
            }
        }
        [v, "checkpoint", id, ext @ ("json" | "parquet")] if id.len() == 36 => {
            version(v).map(|version| LogFile::CheckpointV2 {
                version,
                json: *ext == "json",
            })
        }
        [a, b, "compacted", "json"] => match (version(a), version(b)) {
            (Some(from), Some(to)) if from <= to => Some(LogFile::Compacted { from, to }),
            _ => None,
        },
        _ => None,
    }
    .unwrap_or(LogFile::Other)
}

/// The identity of the newest commit a plan was made on (or, for a log
/// holding only a checkpoint, of that checkpoint's first file): enough for a
/// host to tell, before deleting, that the commit it finds now is the same
/// object, not just one with the same version number (a commit rewritten in
/// place, or a table dropped and recreated).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CommitIdentity {
    /// The version it defines.
    pub version: u64,
    /// Its URI (`<location>/_delta_log/<name>`).
    pub uri: String,
    /// Its size in bytes.
    pub size: u64,
    /// Last-modified time as listed, milliseconds since the Unix epoch
    /// (`None` for a commit found by the re-check read, which is not listed).
    #[serde(default)]
    pub last_modified_ms: Option<i64>,
    /// Entity tag as listed, if the store gave one.
    #[serde(default)]
    pub etag: Option<String>,
}

/// The file name of commit `v`.
pub fn commit_name(v: u64) -> String {
    format!("{v:020}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_file_names() {
        let v = "00000000000000000010";
        assert_eq!(log_file(&format!("{v}.json")), LogFile::Commit(10));
        assert_eq!(log_file(&format!("{v}.crc")), LogFile::Crc(10));
        assert_eq!(
            log_file(&format!("{v}.checkpoint.parquet")),
            LogFile::Checkpoint(10)
        );
        assert_eq!(
            log_file(&format!("{v}.checkpoint.0000000002.0000000003.parquet")),
            LogFile::CheckpointPart {
                version: 10,
                part: 2,
                parts: 3
            }
        );
        assert_eq!(
            log_file(&format!(
                "{v}.checkpoint.f5ee283b-37c7-46af-b64c-8f77c6a5c43a.json"
            )),
            LogFile::CheckpointV2 {
                version: 10,
                json: true
            }
        );
        assert_eq!(
            log_file(&format!("{v}.00000000000000000012.compacted.json")),
            LogFile::Compacted { from: 10, to: 12 }
        );
        assert_eq!(log_file("_last_checkpoint"), LogFile::LastCheckpoint);
        assert_eq!(log_file("10.json"), LogFile::Other);
        assert_eq!(log_file("_sidecars/x.parquet"), LogFile::Other);
        assert_eq!(log_file(&format!(".{v}.json.tmp")), LogFile::Other);
        assert_eq!(commit_name(10), format!("{v}.json"));
    }
}
