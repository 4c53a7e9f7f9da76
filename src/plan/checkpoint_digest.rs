//! A Delta checkpoint file's digest: the actions a session takes from one
//! checkpoint part or sidecar (adds and removes with their deletion
//! vectors, change data, protocol, metadata, sidecars, commit info), made
//! where the file was read, so that a host can decode a multi-part
//! checkpoint's Parquet on every core, and file the digests across runs
//! (a checkpoint is written once), handing one session the actions instead
//! of the bytes.
//!
//! The digest carries no decision: the session that asked for the file
//! checks its length against the log listing and applies its actions by the
//! code that applies the bytes' ([`super::delta`]), so a plan made from
//! digests is byte for byte the plan made from the checkpoint.
//!
//! Wire form: UTF-8 text, one item per line:
//!
//! ```text
//! lakesweep-checkpoint-digest 2
//! uri "s3://b/t/_delta_log/00000000000000000010.checkpoint.parquet"
//! length 7021                               the file's bytes
//! actions 3
//! a "part=1/f.parquet"                      an add without deletion vector
//! r 1700000000000 "part=1/g.parquet"        a remove (time or -) without one
//! j {"Protocol":{"minReaderVersion":1,…}}   any other action, as JSON
//! xxh3-128 <hex of the XXH3-128 of every byte before this line>
//! ```

use crate::digest::{json_string, open_digest, parse_json_string, seal};
use crate::error::{Error, ProtocolReason, Result};
use crate::spec::delta::{parse_checkpoint_file, Action};

const HEADER: &str = "lakesweep-checkpoint-digest 2\n";

/// A decoded digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointDigest {
    /// The URI the file was read from, as the session asked for it.
    pub(crate) uri: String,
    /// The file's length in bytes (checked against the log listing).
    pub(crate) source_len: u64,
    /// Its actions, in the file's order.
    pub(crate) actions: Vec<Action>,
}

/// Digests the Delta checkpoint file (a part, a V2 checkpoint's JSON or
/// Parquet, or a sidecar) `bytes` read from `uri`, the URI exactly as the
/// session's read request named it, read as a session reads it
/// ([`parse_checkpoint_file`]). Fails (malformed) for bytes
/// that are not a readable checkpoint, exactly as the session would.
pub fn digest_checkpoint(uri: &str, bytes: &[u8]) -> Result<String> {
    let actions = parse_checkpoint_file(uri, bytes)?;
    Ok(encode(uri, bytes.len() as u64, &actions))
}

/// The sealed digest of `actions` read from `uri` (`len` bytes).
fn encode(uri: &str, len: u64, actions: &[Action]) -> String {
    let paths: usize = actions
        .iter()
        .map(|a| match a {
            Action::Add { path, .. } | Action::Remove { path, .. } | Action::Cdc { path } => {
                path.len() + 8
            }
            _ => 64,
        })
        .sum();
    let mut out = String::with_capacity(160 + paths + paths / 8);
    out.push_str(HEADER);
    out.push_str(&format!(
        "uri {}\nlength {len}\nactions {}\n",
        json_string(uri),
        actions.len()
    ));
    for a in actions {
        match a {
            Action::Add { path, dv: None } => {
                out.push_str("a ");
                out.push_str(&json_string(path));
            }
            Action::Remove {
                path,
                deletion_timestamp,
                dv: None,
            } => {
                out.push_str("r ");
                match deletion_timestamp {
                    Some(t) => out.push_str(&t.to_string()),
                    None => out.push('-'),
                }
                out.push(' ');
                out.push_str(&json_string(path));
            }
            other => {
                out.push_str("j ");
                out.push_str(&serde_json::to_string(other).expect("an action serializes"));
            }
        }
        out.push('\n');
    }
    seal(&mut out);
    out
}

impl CheckpointDigest {
    /// Reads a digest. Fails (protocol: bad-input) for text that is not a
    /// whole digest of this version: a digest is made by the planner, so
    /// anything else is the host's mistake.
    pub(crate) fn decode(text: &str) -> Result<CheckpointDigest> {
        let crate::digest::Opened {
            uri,
            source_len,
            count,
            lines,
        } = open_digest(text, HEADER, "actions").map_err(|e| bad(&e))?;
        let mut actions = Vec::with_capacity(usize::try_from(count.min(1 << 20)).unwrap_or(0));
        for line in lines {
            actions.push(action(line)?);
        }
        if actions.len() as u64 != count {
            return Err(bad(&format!(
                "it says {count} actions and holds {}",
                actions.len()
            )));
        }
        Ok(CheckpointDigest {
            uri,
            source_len,
            actions,
        })
    }
}

/// One action line.
fn action(line: &str) -> Result<Action> {
    let what = || bad(&format!("action `{line}`"));
    let (tag, rest) = line.split_once(' ').ok_or_else(what)?;
    match tag {
        "a" => Ok(Action::Add {
            path: string(rest)?,
            dv: None,
        }),
        "r" => {
            let (t, path) = rest.split_once(' ').ok_or_else(what)?;
            let deletion_timestamp = match t {
                "-" => None,
                t => Some(t.parse::<i64>().map_err(|_| what())?),
            };
            Ok(Action::Remove {
                path: string(path)?,
                deletion_timestamp,
                dv: None,
            })
        }
        "j" => serde_json::from_str(rest).map_err(|e| bad(&format!("action `{rest}`: {e}"))),
        _ => Err(what()),
    }
}

fn string(s: &str) -> Result<String> {
    parse_json_string(s).ok_or_else(|| bad(&format!("`{s}` is not a JSON string")))
}

fn bad(why: &str) -> Error {
    Error::protocol(
        ProtocolReason::BadInput,
        format!("not a checkpoint digest: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::delta::{parse_json_actions, DeletionVector, Metadata, Protocol};
    use proptest::prelude::*;

    /// Every kind of action a checkpoint yields, with awkward spellings.
    fn every_kind() -> Vec<Action> {
        let dv = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(1),
        };
        vec![
            Action::Add {
                path: "part=a%20b/f 1.parquet".into(),
                dv: None,
            },
            Action::Add {
                path: "x\n\"y\"\\z\u{e9}.parquet".into(),
                dv: Some(dv.clone()),
            },
            Action::Remove {
                path: "s3://b/t/g.parquet".into(),
                deletion_timestamp: Some(-5),
                dv: None,
            },
            Action::Remove {
                path: "h.parquet".into(),
                deletion_timestamp: None,
                dv: Some(DeletionVector {
                    storage_type: "p".into(),
                    path_or_inline_dv: "s3://b/t/dv 1.bin".into(),
                    offset: None,
                }),
            },
            Action::Cdc {
                path: "_change_data/c.parquet".into(),
            },
            Action::Protocol(Protocol {
                min_reader_version: 3,
                min_writer_version: 7,
                reader_features: Some(vec!["deletionVectors".into()]),
                writer_features: None,
            }),
            Action::Metadata(Metadata {
                id: "u-1".into(),
                partition_columns: vec!["p".into()],
                configuration: [
                    (
                        "delta.logRetentionDuration".to_owned(),
                        Some("interval 1 day".to_owned()),
                    ),
                    ("k".to_owned(), None),
                ]
                .into_iter()
                .collect(),
            }),
            Action::Sidecar {
                path: "s 1.parquet".into(),
            },
            Action::CommitInfo { timestamp: Some(7) },
            Action::CommitInfo { timestamp: None },
            Action::CheckpointMetadata,
            Action::LacksDeletionVectorColumns,
            Action::Add {
                path: String::new(),
                dv: None,
            },
        ]
    }

    const URI: &str = "s3://b/t/_delta_log/00000000000000000010.checkpoint.parquet";

    #[test]
    fn every_kind_of_action_reads_back_as_it_was() {
        let text = encode(URI, 4321, &every_kind());
        let d = CheckpointDigest::decode(&text).unwrap();
        assert_eq!(d.uri, URI);
        assert_eq!(d.source_len, 4321);
        assert_eq!(d.actions, every_kind());
    }

    #[test]
    fn every_cut_and_every_changed_byte_is_refused() {
        let full = encode(URI, 4321, &every_kind()[..5]);
        for cut in (0..full.len()).filter_map(|n| full.get(..n)) {
            let e = CheckpointDigest::decode(cut).unwrap_err();
            assert!(
                matches!(e, Error::Protocol { .. }),
                "cut at {}: {e}",
                cut.len()
            );
        }
        for i in 0..full.len() {
            let mut changed = full.clone().into_bytes();
            changed[i] = if changed[i] == b'x' { b'y' } else { b'x' };
            if let Ok(changed) = String::from_utf8(changed) {
                assert!(CheckpointDigest::decode(&changed).is_err(), "byte {i}");
            }
        }
        // Sealed but not well formed: each is named.
        let sealed = |body: String| {
            let mut t = body;
            seal(&mut t);
            t
        };
        let body =
            |lines: &str, n: usize| format!("{HEADER}uri \"u\"\nlength 1\nactions {n}\n{lines}");
        for (text, why) in [
            (body("a \"p\"\n", 2), "says 2 actions and holds 1"),
            (body("a p\n", 1), "not a JSON string"),
            (body("r x \"p\"\n", 1), "action `r x"),
            (body("q \"p\"\n", 1), "action `q"),
            (body("j {\"Add\":{}}\n", 1), "missing field"),
            (body("a\n", 1), "action `a`"),
        ] {
            let e = CheckpointDigest::decode(&sealed(text)).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn a_digest_holds_the_actions_the_session_parses_from_the_bytes() {
        let json = b"{\"add\":{\"path\":\"a%20b.parquet\",\"size\":1,\"modificationTime\":1,\"dataChange\":true}}\n\
{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n\
{\"sidecar\":{\"path\":\"s.parquet\",\"sizeInBytes\":1,\"modificationTime\":1}}\n";
        let uri = "s3://b/t/_delta_log/00000000000000000002.checkpoint.0d7bd8a4-6d1e-4a5c-8b3f-6c1c8f2f1c2a.json";
        let d = CheckpointDigest::decode(&digest_checkpoint(uri, json).unwrap()).unwrap();
        assert_eq!(d.actions, parse_json_actions(uri, json).unwrap());
        assert_eq!(d.source_len, json.len() as u64);
        // Bytes that are not a checkpoint fail as they would in a session.
        let e =
            digest_checkpoint("s3://b/t/_delta_log/1.checkpoint.parquet", b"PAR1 no").unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
    }

    fn arb_dv() -> impl Strategy<Value = Option<DeletionVector>> {
        proptest::option::of(("[upi]", any::<String>(), any::<Option<i64>>()).prop_map(
            |(storage_type, path_or_inline_dv, offset)| DeletionVector {
                storage_type,
                path_or_inline_dv,
                offset,
            },
        ))
    }

    fn arb_action() -> impl Strategy<Value = Action> {
        prop_oneof![
            (any::<String>(), arb_dv()).prop_map(|(path, dv)| Action::Add { path, dv }),
            (any::<String>(), any::<Option<i64>>(), arb_dv()).prop_map(
                |(path, deletion_timestamp, dv)| Action::Remove {
                    path,
                    deletion_timestamp,
                    dv
                }
            ),
            any::<String>().prop_map(|path| Action::Cdc { path }),
            any::<String>().prop_map(|path| Action::Sidecar { path }),
            any::<Option<i64>>().prop_map(|timestamp| Action::CommitInfo { timestamp }),
        ]
    }

    proptest! {
        /// A digest reads back exactly the actions it was made of: a kept
        /// path is never respelled on its way through a digest.
        #[test]
        fn any_actions_read_back_exactly(uri in any::<String>(), len in any::<u64>(),
                                         actions in proptest::collection::vec(arb_action(), 0..20)) {
            let d = CheckpointDigest::decode(&encode(&uri, len, &actions)).unwrap();
            prop_assert_eq!(d.uri, uri);
            prop_assert_eq!(d.source_len, len);
            prop_assert_eq!(d.actions, actions);
        }
    }
}
