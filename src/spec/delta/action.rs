//! Log actions: the `add`, `remove`, `cdc`, `protocol`, `metaData`,
//! `sidecar`, `commitInfo` and `checkpointMetadata` lines of a commit or a
//! JSON checkpoint, read as far as a sweeper needs them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{DeletionVector, Metadata, Protocol};
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// One log action the planner acts on. Other actions (txn, domainMetadata,
/// commitInfo details) are skipped. Its serde form is the one a checkpoint
/// digest carries (`{"Add":{"path":…}}`), not the log's own JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// A file added to the table.
    Add {
        /// Encoded path, as written in the log.
        path: String,
        /// Its deletion vector, if any.
        dv: Option<DeletionVector>,
    },
    /// A file removed from the table (a tombstone).
    Remove {
        /// Encoded path, as written in the log.
        path: String,
        /// When it was removed, milliseconds since the epoch (may be missing).
        deletion_timestamp: Option<i64>,
        /// The deletion vector the removed file had, if any.
        dv: Option<DeletionVector>,
    },
    /// A change-data file (`_change_data/...`).
    Cdc {
        /// Encoded path, as written in the log.
        path: String,
    },
    /// The protocol.
    Protocol(Protocol),
    /// The table metadata.
    Metadata(Metadata),
    /// A V2 checkpoint's sidecar file (name relative to `_delta_log/_sidecars/`).
    Sidecar {
        /// Encoded path of the sidecar file.
        path: String,
    },
    /// Commit information: its timestamp (or in-commit timestamp).
    CommitInfo {
        /// Milliseconds since the epoch.
        timestamp: Option<i64>,
    },
    /// A V2 checkpoint's `checkpointMetadata` action.
    CheckpointMetadata,
    /// Not an action: this Parquet checkpoint file has no
    /// `add.deletionVector` columns (fine unless the table uses deletion vectors).
    LacksDeletionVectorColumns,
}

#[derive(Deserialize)]
struct Line {
    add: Option<AddJ>,
    remove: Option<RemoveJ>,
    cdc: Option<PathJ>,
    protocol: Option<Protocol>,
    #[serde(rename = "metaData")]
    meta_data: Option<Metadata>,
    sidecar: Option<PathJ>,
    #[serde(rename = "commitInfo")]
    commit_info: Option<CommitInfoJ>,
    #[serde(rename = "checkpointMetadata")]
    checkpoint_metadata: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddJ {
    path: String,
    #[serde(default)]
    deletion_vector: Option<DeletionVector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoveJ {
    path: String,
    #[serde(default)]
    deletion_timestamp: Option<i64>,
    #[serde(default)]
    deletion_vector: Option<DeletionVector>,
}

#[derive(Deserialize)]
struct PathJ {
    path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommitInfoJ {
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    in_commit_timestamp: Option<i64>,
}

/// Parses newline-delimited JSON actions (a commit, a JSON V2 checkpoint or
/// a log compaction file). Any invalid line is an error: a half-read commit
/// would lose adds.
pub fn parse_json_actions(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    parse_json_lines(uri, bytes).map(|(actions, _)| actions)
}

/// Parses one commit file (`<v>.json`). Besides what
/// [`parse_json_actions`] refuses, a commit that is empty (0 bytes, or only
/// blank lines) or holds no action at all (only `{}` lines) is refused: it
/// is a partial or failed write, not a version without changes, and taking
/// it as one would lose the adds of the commit that should be there.
pub fn parse_commit(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    if bytes.is_empty() {
        return Err(Error::malformed(
            MalformedReason::PartialWrite,
            uri,
            "the commit file is empty (0 bytes): a partial or failed write, not a Delta version",
        ));
    }
    let (actions, action_lines) = parse_json_lines(uri, bytes)?;
    if action_lines == 0 {
        return Err(Error::malformed(
            MalformedReason::PartialWrite,
            uri,
            "the commit file holds no action: a partial or failed write, not a Delta version",
        ));
    }
    Ok(actions)
}

/// Parses JSON lines; also counts the lines that hold an action (a JSON
/// object with at least one key, known to this parser or not).
fn parse_json_lines(uri: &str, bytes: &[u8]) -> Result<(Vec<Action>, u64)> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::malformed(MalformedReason::Encoding, uri, format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    let mut action_lines = 0u64;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(line).map_err(|e| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("line {}: {e}", n + 1),
            )
        })?;
        let before = out.len();
        if let Some(a) = l.add {
            out.push(Action::Add {
                path: a.path,
                dv: a.deletion_vector,
            });
        }
        if let Some(r) = l.remove {
            out.push(Action::Remove {
                path: r.path,
                deletion_timestamp: r.deletion_timestamp,
                dv: r.deletion_vector,
            });
        }
        if let Some(c) = l.cdc {
            out.push(Action::Cdc { path: c.path });
        }
        if let Some(p) = l.protocol {
            out.push(Action::Protocol(p));
        }
        if let Some(m) = l.meta_data {
            out.push(Action::Metadata(m));
        }
        if let Some(s) = l.sidecar {
            out.push(Action::Sidecar { path: s.path });
        }
        if l.checkpoint_metadata.is_some() {
            out.push(Action::CheckpointMetadata);
        }
        if let Some(c) = l.commit_info {
            out.push(Action::CommitInfo {
                timestamp: c.in_commit_timestamp.or(c.timestamp),
            });
        }
        // Actions this parser skips (txn, domainMetadata, ...) still count;
        // only lines like `{}` hold none. Parsed again only in that rare case.
        if out.len() > before
            || serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(line)
                .is_ok_and(|m| !m.is_empty())
        {
            action_lines += 1;
        }
    }
    Ok((out, action_lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_actions_and_errors() {
        let text = br#"{"commitInfo":{"timestamp":5}}
{"add":{"path":"a%20b.parquet","size":1,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":3,"cardinality":1}}}
{"remove":{"path":"c.parquet","dataChange":true}}
{"cdc":{"path":"_change_data/x.parquet","size":3}}
{"txn":{"appId":"x","version":1}}
"#;
        let a = parse_json_actions("u", text).unwrap();
        assert_eq!(a.len(), 4);
        assert!(matches!(
            &a[2],
            Action::Remove {
                deletion_timestamp: None,
                ..
            }
        ));
        assert!(parse_json_actions("u", b"{\"add\":{\"path\":1}}").is_err());
        assert!(parse_json_actions("u", b"{\"add\":").is_err());
    }

    #[test]
    fn commits_that_are_empty_hold_nothing_or_do_not_parse_are_refused() {
        for bad in [
            &b""[..],
            b"\n\n",
            b"  \n",
            b"{}\n{}",
            b"{\"add\":",
            b"PAR1\x00\x01",
        ] {
            let e = parse_commit("s3://b/t/_delta_log/00000000000000000002.json", bad).unwrap_err();
            assert!(matches!(e, Error::Malformed { .. }), "{e}");
            assert!(e.to_string().contains("00000000000000000002.json"), "{e}");
        }
        // A commit holding only actions this parser skips is a commit.
        assert!(
            parse_commit("u", b"{\"txn\":{\"appId\":\"x\",\"version\":1}}\n")
                .unwrap()
                .is_empty()
        );
        assert_eq!(parse_commit("u", b"{\"commitInfo\":{}}").unwrap().len(), 1);
    }
}
